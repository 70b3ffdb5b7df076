"""Non-reentrant and selective activation checkpointing, checkpoint_sequential and the helpers of
torch.utils.checkpoint: gradients equal those of the plain graph, and the segment reruns only as far as backward
needs (counted by marks the segment leaves each time it runs)."""

import contextlib
import functools
import gc
import weakref

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
from actorgrad.autograd import gradcheck
from actorgrad.utils.checkpoint import (
    CheckpointError,
    CheckpointPolicy,
    SelectiveCheckpointContext,
    checkpoint,
    checkpoint_sequential,
    create_selective_checkpoint_contexts,
    detach_variable,
    noop_context_fn,
    set_checkpoint_debug_enabled,
    set_checkpoint_early_stop,
)


def leaves(seed=0):
    rng = np.random.default_rng(seed)
    x = ag.tensor(rng.uniform(-1, 1, (3, 4)), requires_grad=True)
    w = ag.tensor(rng.uniform(-1, 1, (4, 5)), requires_grad=True)
    return x, w


def block(marks):
    """A segment that notes each time it runs, and when it gets past its first op (SinBackward0, which saves x)."""

    def run(x, w):
        marks.append("start")
        a = x.sin()
        marks.append("after sin")
        return (a @ w).exp().sum()  # MmBackward0 saves a and w, ExpBackward0 its result

    return run


def plain_grads(x, w):
    return ag.autograd.grad(block([])(x, w), (x, w))


def assert_same_grads(got, expected):
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-13, atol=0)


def test_non_reentrant_checkpoint_recomputes_in_backward_and_gives_the_plain_gradients():
    x, w = leaves()
    marks = []
    out = checkpoint(block(marks), x, w, use_reentrant=False)
    assert marks == ["start", "after sin"]
    got = ag.autograd.grad(out, (x, w))  # grad() with inputs works: nothing nests a pass
    assert marks.count("start") == 2
    assert_same_grads(got, plain_grads(x, w))


def test_non_reentrant_checkpoint_passes_gradcheck_and_keyword_arguments():
    x, w = leaves(1)

    def scaled(x, w, *, scale):
        return (x @ w).tanh() * scale

    assert gradcheck(lambda x, w: checkpoint(scaled, x, w, use_reentrant=False, scale=3.0), (x, w))


def test_each_backward_pass_reruns_the_segment_and_keeps_no_recomputed_value_after_it():
    """As PyTorch's: a graph retained for a second pass holds no activations between passes (that is what
    checkpointing is for), so the second pass reruns the segment too."""
    x, w = leaves(2)
    runs = []

    def segment(x, w):
        a = x.sin()
        runs.append(weakref.ref(a._data))  # SinBackward0 saves x; MmBackward0 saves this one
        return (a @ w).exp().sum()

    out = checkpoint(segment, x, w, use_reentrant=False)
    first = ag.autograd.grad(out, (x, w), retain_graph=True)
    assert len(runs) == 2
    gc.collect()
    assert runs[1]() is None, "the first pass's recomputed activation outlived the pass"
    second = ag.autograd.grad(out, (x, w))
    assert len(runs) == 3
    assert_same_grads(second, first)
    assert_same_grads(first, plain_grads(x, w))


def test_the_rerun_stops_once_it_has_every_dropped_value_unless_early_stop_is_off():
    x, w = leaves(3)
    marks = []

    def sin_then_add(x):
        a = x.sin()  # the one value saved: x
        marks.append("after sin")
        return (a + 1.0).sum()

    checkpoint(sin_then_add, x, use_reentrant=False).backward()
    assert marks == ["after sin"]  # the rerun stopped at sin's saved value
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-14)
    marks.clear()
    with set_checkpoint_early_stop(False):
        out = checkpoint(sin_then_add, x, use_reentrant=False)
    out.backward()  # the setting counts where the checkpoint was made
    assert marks == ["after sin", "after sin"]


def policy_saving(*names):
    return lambda: create_selective_checkpoint_contexts(list(names))


def test_selective_checkpointing_that_saves_every_op_never_reruns_the_segment():
    x, w = leaves(4)
    marks = []
    out = checkpoint(block(marks), x, w, use_reentrant=False,
                     context_fn=policy_saving("SinBackward0", "MmBackward0", "ExpBackward0"))
    got = ag.autograd.grad(out, (x, w))
    assert marks == ["start", "after sin"]
    assert_same_grads(got, plain_grads(x, w))


def test_selective_checkpointing_reruns_only_up_to_the_last_op_it_recomputes():
    x, w = leaves(5)
    marks = []
    out = checkpoint(block(marks), x, w, use_reentrant=False, context_fn=policy_saving("MmBackward0", "ExpBackward0"))
    got = ag.autograd.grad(out, (x, w))
    assert marks == ["start", "after sin", "start"]  # sin reran for its saved x; mm and exp did not
    assert_same_grads(got, plain_grads(x, w))
    marks.clear()
    out = checkpoint(block(marks), x, w, use_reentrant=False, context_fn=policy_saving("SinBackward0"))
    ag.autograd.grad(out, (x, w))
    assert marks == ["start", "after sin", "start", "after sin"]  # exp's result is recomputed past sin


def test_a_policy_function_is_asked_once_per_op_with_its_output_and_may_offload_to_the_cpu():
    x, w = leaves(6)
    asked = []

    def policy(ctx, op):
        assert isinstance(ctx, SelectiveCheckpointContext) and not ctx.is_recompute
        asked.append((op, ctx.op_output.shape))
        return CheckpointPolicy.PREFER_CPU_OFFLOAD

    marks = []
    xd, wd = x.to("async_cpu:0"), w.to("async_cpu:0")
    out = checkpoint(block(marks), xd, wd, use_reentrant=False,
                     context_fn=lambda: create_selective_checkpoint_contexts(policy))
    got = ag.autograd.grad(out, (x, w))
    assert asked == [("SinBackward0", (3, 4)), ("MmBackward0", (3, 5)), ("ExpBackward0", (3, 5))]
    assert marks.count("start") == 1
    assert_same_grads(got, plain_grads(x, w))


def test_a_bool_policy_means_save_or_recompute_as_in_pytorch():
    x, w = leaves(7)
    marks = []
    out = checkpoint(block(marks), x, w, use_reentrant=False,
                     context_fn=lambda: create_selective_checkpoint_contexts(lambda ctx, op: op != "SinBackward0"))
    ag.autograd.grad(out, (x, w))
    assert marks == ["start", "after sin", "start"]


def test_a_saved_value_changed_in_place_is_refused_unless_mutation_is_allowed():
    def double_then_sin(x):
        a = x * 2.0
        return a.sin(), a

    x, _ = leaves(8)
    for allow in (False, True):
        contexts = functools.partial(create_selective_checkpoint_contexts, ["SinBackward0"], allow)
        out, a = checkpoint(double_then_sin, x, use_reentrant=False, context_fn=contexts)
        with ag.no_grad():
            a.add_(1.0)
        if allow:
            (g,) = ag.autograd.grad(out.sum(), x)  # as in PyTorch: backward sees the changed value
            np.testing.assert_allclose(g.numpy(), 2 * np.cos(2 * x.detach().numpy() + 1), rtol=1e-13)
        else:
            with pytest.raises(RuntimeError, match="^Tensor cached during selective activation checkpoint has been"):
                ag.autograd.grad(out.sum(), x)


def test_a_rerun_that_saves_other_values_raises_checkpoint_error():
    x, _ = leaves(9)
    state = {"extra": False}

    def depends_on_state(x):
        y = x.sin()
        return y.exp() if state["extra"] else y

    out = checkpoint(depends_on_state, x, use_reentrant=False, early_stop=False)
    state["extra"] = True
    with pytest.raises(CheckpointError, match="A different number of tensors was saved during the original forward"):
        out.sum().backward()

    state["rows"] = 3

    def depends_on_shape(x):
        return x[: state["rows"]].sin()

    out = checkpoint(depends_on_shape, x, use_reentrant=False)
    state["rows"] = 2
    with pytest.raises(CheckpointError, match="Recomputed values for the following tensors have different metadata"):
        out.sum().backward()
    out = checkpoint(depends_on_shape, x, use_reentrant=False, determinism_check="none")
    out.sum().backward()  # no check: the gradient is the rerun's business
    with pytest.raises(ValueError, match=r"^determinism_check should be one of \['default', 'none'\], but got x$"):
        checkpoint(depends_on_shape, x, use_reentrant=False, determinism_check="x")


def test_debug_mode_lists_the_ops_of_the_forward_and_of_the_rerun():
    x, _ = leaves(10)
    state = {"extra": False}

    def depends_on_state(x):
        y = x.sin()
        return y.exp() if state["extra"] else y

    with set_checkpoint_debug_enabled(True):
        out = checkpoint(depends_on_state, x, use_reentrant=False, early_stop=False)
    state["extra"] = True
    with pytest.raises(CheckpointError, match=r"recomputation: \['SinBackward0', 'ExpBackward0'\]"):
        out.sum().backward()


def test_checkpoint_sequential_runs_segments_and_gives_the_plain_gradients():
    x, _ = leaves(11)
    runs = []

    def layer(k):
        def f(h):
            runs.append(k)
            return (h * (k + 1.0)).tanh()

        return f

    functions = [layer(k) for k in range(5)]
    h = x
    for f in functions:
        h = f(h)
    (expected,) = ag.autograd.grad(h.sum(), x)
    for use_reentrant in (True, False):
        runs.clear()
        x.grad = None
        out = checkpoint_sequential(functions, 2, x, use_reentrant=use_reentrant)
        assert runs == [0, 1, 2, 3, 4]  # segments of 5 // 2: layers 0-1 checkpointed, 2-4 the plain rest
        out.sum().backward()
        assert sorted(runs) == [0, 0, 1, 1, 2, 3, 4]
        np.testing.assert_allclose(x.grad.numpy(), expected.numpy(), rtol=1e-13)


def test_checkpoint_sequential_takes_a_sequential_and_refuses_unknown_keywords():
    ag.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2))
    x, _ = leaves(12)
    x = x.float()
    out = checkpoint_sequential(model, 2, x, use_reentrant=False, preserve_rng_state=False)
    np.testing.assert_allclose(out.detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: foo$"):
        checkpoint_sequential(model, 2, x, use_reentrant=False, foo=1)
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant parameter should be passed"):
        checkpoint_sequential(model, 2, x)


def test_detach_variable_keeps_data_and_requires_grad_and_drops_history():
    x, _ = leaves(13)
    y = x * 2.0
    dx, dy, n = detach_variable((x, y.detach(), 3))
    assert dx.requires_grad and dx.grad_fn is None and not dy.requires_grad and n == 3
    assert np.shares_memory(dx.detach().numpy(), x.detach().numpy())
    with pytest.raises(RuntimeError, match="^Only tuple of tensors is supported. Got Unsupported input type: list$"):
        detach_variable([x])


def test_context_fn_is_refused_by_the_reentrant_variant_and_contexts_are_checked():
    x, w = leaves(14)
    forward, recompute = noop_context_fn()
    assert isinstance(forward, contextlib.nullcontext) and isinstance(recompute, contextlib.nullcontext)
    checkpoint(block([]), x, w, use_reentrant=True, context_fn=noop_context_fn)
    with pytest.raises(ValueError, match="^Passing `context_fn` or `debug` is only supported when use_reentrant"):
        checkpoint(block([]), x, w, use_reentrant=True, context_fn=policy_saving("MmBackward0"))
    with pytest.raises(TypeError, match="^policy_fn_or_list must be either a function or a list of ops.$"):
        create_selective_checkpoint_contexts(3)
    with pytest.raises(ValueError, match="^Expected op in `op_list` to be a node name"):
        create_selective_checkpoint_contexts([ag.mm])


@pytest.mark.gpu
def test_non_reentrant_and_selective_checkpointing_on_cuda():
    pytest.importorskip("cupy")
    x, w = leaves(15)
    marks = []
    xc, wc = x.cuda(), w.cuda()
    out = checkpoint(block(marks), xc, wc, use_reentrant=False, context_fn=policy_saving("ExpBackward0"))
    got = ag.autograd.grad(out, (x, w))
    assert marks == ["start", "after sin", "start", "after sin"]
    assert_same_grads(got, plain_grads(x, w))
