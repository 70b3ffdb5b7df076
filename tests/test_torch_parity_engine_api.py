"""The engine's entry points and hooks as PyTorch's: grad mode inside hooks, `grad()`'s and `backward()`'s
arguments, batched gradients, numpy's warnings and the errors. Each expected value or message was taken from
torch 2.13 (CPU) running the same code."""

import contextlib
import math
import warnings

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.autograd.graph import saved_tensors_hooks


def leaf(values, dtype=ag.float64):
    return ag.tensor(values, dtype=dtype, requires_grad=True)


@contextlib.contextmanager
def no_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    assert [str(w.message) for w in caught] == []


# -- grad mode inside hooks -----------------------------------------------------------------------------------
def hooked_graph(seen, kind="sync"):
    """x -> x * 3 with a tensor hook on x and a prehook and a post hook on the product's node, each noting
    whether grad mode is on and whether an op on its gradient and a leaf that requires grad records."""
    x, w = leaf([1.0]), leaf([2.0])
    y = x * 3

    def note(where, g):
        seen.append((where, ag.is_grad_enabled(), (g * w).requires_grad))

    if kind == "sync":
        x.register_hook(lambda g: note("tensor", g))
        y.grad_fn.register_prehook(lambda grads: note("pre", grads[0]))
        y.grad_fn.register_hook(lambda grads_in, grads_out: note("post", grads_out[0]))
    else:
        async def tensor_hook(g):
            note("tensor", g)

        async def prehook(grads):
            note("pre", grads[0])

        async def post_hook(grads_in, grads_out):
            note("post", grads_out[0])

        x.register_hook(tensor_hook)
        y.grad_fn.register_prehook(prehook)
        y.grad_fn.register_hook(post_hook)
    return x, y.sum()


OFF = [("pre", False, False), ("post", False, False), ("tensor", False, False)]
ON = [("pre", True, True), ("post", True, True), ("tensor", True, True)]


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_hooks_run_with_grad_mode_off_unless_the_pass_creates_a_graph(kind):
    for create_graph, expected in ((False, OFF), (True, ON)):
        seen = []
        x, loss = hooked_graph(seen, kind)
        await ag.backward(loss, create_graph=create_graph)
        assert seen == expected
        seen.clear()
        x, loss = hooked_graph(seen, kind)
        await ag.grad(loss, x, create_graph=create_graph)
        assert seen == expected


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_hooks_of_a_sync_pass_run_with_grad_mode_off_unless_it_creates_a_graph(kind):
    for create_graph, expected in ((False, OFF), (True, ON)):
        seen = []
        x, loss = hooked_graph(seen, kind)
        loss.backward(create_graph=create_graph)
        assert seen == expected
        seen.clear()
        x, loss = hooked_graph(seen, kind)
        ag.autograd.grad(loss, x, create_graph=create_graph)
        assert seen == expected


def test_a_post_accumulate_grad_hook_may_update_its_leaf_in_place():
    p = leaf([1.0, 2.0, 3.0])
    p.register_post_accumulate_grad_hook(lambda t: t.sub_(0.1 * t.grad))
    (p * p).sum().backward()
    np.testing.assert_allclose(p.tolist(), [0.8, 1.6, 2.4])
    assert p.grad_fn is None and p.requires_grad


async def test_a_post_accumulate_grad_hook_sees_grad_mode_as_the_pass_records():
    seen = []
    p = leaf([1.0, 2.0])
    p.register_post_accumulate_grad_hook(lambda t: seen.append(ag.is_grad_enabled()))
    await ag.backward((p * p).sum())
    await ag.backward((p * p).sum(), create_graph=True)
    assert seen == [False, True]

    async def step(t):
        t.sub_(0.5 * t.grad)

    q = leaf([1.0, 2.0])
    q.register_post_accumulate_grad_hook(step)
    await ag.backward((q * q).sum())
    assert q.tolist() == [0.0, 0.0]


# -- grad()'s and backward()'s arguments ------------------------------------------------------------------
def test_grad_accepts_the_deprecated_only_inputs_and_warns_only_when_it_is_false():
    x = leaf([1.0, 2.0])
    y = x * x
    with no_warnings():  # the WGAN-GP gradient penalty's call
        (g,) = ag.autograd.grad(outputs=y, inputs=x, grad_outputs=ag.ones_like(y), create_graph=True,
                                retain_graph=True, only_inputs=True)
    assert g.tolist() == [2.0, 4.0] and g.requires_grad
    with pytest.warns(FutureWarning, match=r"^only_inputs argument is deprecated and is ignored now \(defaults to "
                                           r"True\)\. To accumulate gradient for other parts of the graph, please "
                                           r"use torch\.autograd\.backward\.$"):
        (g,) = ag.autograd.grad(y, x, ag.ones_like(y), only_inputs=False)
    assert g.tolist() == [2.0, 4.0] and x.grad is None


def test_an_unknown_keyword_is_refused_naming_the_public_function():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    for call, name in ((lambda: ag.autograd.grad(y, x, foo=1), "grad"),
                       (lambda: ag.autograd.backward(y, foo=1), "backward"),
                       (lambda: y.backward(foo=1), "Tensor.backward")):
        with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'foo'$"):
            call()
    with pytest.raises(TypeError, match=r"^grad\(\) takes from 2 to 9 positional arguments but 10 were given$"):
        ag.autograd.grad(y, x, None, None, False, True, None, False, False, 1)


def test_grad_and_backward_take_their_arguments_by_position_as_pytorchs_do():
    x = leaf([1.0, 2.0])
    y = (x * x * x).sum()
    (g,) = ag.autograd.grad(y, x, None, True, True)  # retain_graph, create_graph
    assert g.tolist() == [3.0, 12.0] and g.requires_grad
    ag.autograd.backward([y], [ag.tensor(1.0, dtype=ag.float64)], True, False)  # retain_graph
    y.backward(None, False, False, [x])
    assert x.grad.tolist() == [6.0, 24.0]


async def test_the_awaitable_grad_and_backward_take_the_same_arguments_by_position():
    x = leaf([1.0, 2.0])
    y = (x * x * x).sum()
    (g,) = await ag.grad(y, x, None, True, False, True, None, False, False)
    assert g.tolist() == [3.0, 12.0] and not g.requires_grad
    await ag.backward([y], [ag.tensor(2.0, dtype=ag.float64)], True, False, None, [x])
    assert x.grad.tolist() == [6.0, 24.0]
    with pytest.warns(FutureWarning, match="`grad_variables` is deprecated"):
        await ag.backward([y], None, False, False, [ag.tensor(1.0, dtype=ag.float64)])
    assert x.grad.tolist() == [9.0, 36.0]


def test_backward_takes_the_deprecated_grad_variables_with_pytorchs_warning():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    with pytest.warns(FutureWarning, match=r"^`grad_variables` is deprecated\. Use `grad_tensors` instead\.$"):
        ag.autograd.backward([y], grad_variables=[ag.tensor(2.0, dtype=ag.float64)], retain_graph=True)
    assert x.grad.tolist() == [4.0, 8.0]
    with pytest.warns(FutureWarning), pytest.raises(
        RuntimeError,
        match=r"^`grad_tensors` and `grad_variables` \(deprecated\) arguments both passed to `backward\(\)`\. "
              r"Please only use `grad_tensors`\.$",
    ):
        ag.autograd.backward([y], [ag.tensor(1.0, dtype=ag.float64)], grad_variables=[ag.tensor(1.0)])
    assert x.grad.tolist() == [4.0, 8.0]


# -- is_grads_batched ---------------------------------------------------------------------------------------
def test_batched_grad_outputs_give_a_batch_of_gradients():
    x, z = leaf([1.0, 2.0, 3.0]), leaf([1.0, 2.0], ag.float32)
    y = x * x
    (jacobian,) = ag.autograd.grad(y, x, ag.eye(3, dtype=ag.float64), retain_graph=True, is_grads_batched=True)
    assert jacobian.tolist() == [[2.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 6.0]]
    jacobian, unused = ag.autograd.grad(y, [x, z], ag.eye(3), retain_graph=True, is_grads_batched=True,
                                        materialize_grads=True)
    assert jacobian.dtype == ag.float64 and jacobian.tolist()[2] == [0.0, 0.0, 6.0]
    assert unused.tolist() == [0.0, 0.0]  # materialized as the input: no batch dimension, as PyTorch's
    assert ag.autograd.grad(y, [x, z], ag.eye(3), retain_graph=True, is_grads_batched=True,
                            allow_unused=True)[1] is None
    (g,) = ag.autograd.grad(y, x, ag.ones(3), retain_graph=True, is_grads_batched=False)
    assert g.tolist() == [2.0, 4.0, 6.0]
    (rows,) = ag.autograd.grad([y, x.sum() * 2], x, [ag.ones((2, 3)), ag.tensor([1.0, 2.0])],
                               is_grads_batched=True)
    assert rows.tolist() == [[4.0, 6.0, 8.0], [6.0, 8.0, 10.0]]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        ag.autograd.grad(y, x, ag.eye(3), is_grads_batched=True)  # the last pass freed the graph


def test_batched_gradients_with_create_graph_are_differentiable():
    x = leaf([1.0, 2.0])
    (h,) = ag.autograd.grad(x ** 3, x, ag.eye(2, dtype=ag.float64), create_graph=True, is_grads_batched=True)
    assert h.tolist() == [[3.0, 0.0], [0.0, 12.0]] and h.requires_grad
    assert ag.autograd.grad(h.sum(), x)[0].tolist() == [6.0, 12.0]


def test_batched_grad_outputs_are_checked_against_the_outputs():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    with pytest.raises(RuntimeError, match=r"If `is_grads_batched=True`, we interpret the first dimension of each "
                                           r"grad_output as the batch dimension\. .*grad_output\[0\] has a shape of "
                                           r"\(4,\) and output\[0\] has a shape of \(3,\)"):
        ag.autograd.grad(y, x, ag.ones((2, 4), dtype=ag.float64), retain_graph=True, is_grads_batched=True)
    with pytest.raises(ValueError, match=r"got sizes \[2, 3\]"):
        ag.autograd.grad([y, x.sum()], x, [ag.ones((2, 3)), ag.ones(3)], retain_graph=True, is_grads_batched=True)
    with pytest.raises(RuntimeError, match="batch dimension"):
        ag.autograd.grad(y.sum(), x, None, retain_graph=True, is_grads_batched=True)


# -- hooks' results, numpy's warnings, anomaly mode, saved tensors --------------------------------------------
def test_a_node_hook_must_return_a_tuple():
    for register, hook, returned in (
        ("register_hook", lambda grads_in, grads_out: [grads_in[0]], "list"),
        ("register_prehook", lambda grads_out: [grads_out[0]], "list"),
        ("register_hook", lambda grads_in, grads_out: grads_in[0], "Tensor"),
    ):
        x = leaf([1.0, 2.0])
        y = x * 2
        getattr(y.grad_fn, register)(hook)
        with pytest.raises(TypeError, match=rf"^expected tuple, but hook returned '{returned}'"):
            y.sum().backward()
        assert x.grad is None


def test_backward_gives_no_floating_point_warnings_from_numpy():
    x = leaf([0.0, 1.0])
    with no_warnings():
        x.sqrt().sum().backward()
        (g,) = ag.autograd.grad(x.sqrt().sum(), x)
    assert x.grad.tolist() == [math.inf, 0.5] and g.tolist() == [math.inf, 0.5]
    assert np.geterr()["divide"] == "warn"  # the caller's setting is back


async def test_an_awaited_backward_gives_no_floating_point_warnings_from_numpy():
    x = leaf([0.0, 1.0])
    with no_warnings():
        await ag.backward(x.sqrt().sum())
        (g,) = await ag.grad(x.sqrt().sum(), x)
    assert x.grad.tolist() == [math.inf, 0.5] and g.tolist() == [math.inf, 0.5]
    assert np.geterr()["divide"] == "warn"  # the caller's setting is back
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        np.ones(1) / 0


def test_heavy_nodes_on_worker_threads_give_no_floating_point_warnings():
    workers = ag.get_num_workers()
    ag.set_num_workers(2)
    try:
        a, b = leaf(np.zeros(600_000)), leaf(np.zeros(600_000))  # heavy: sqrt's backward of each goes to a worker
        with no_warnings(), ag.profile() as prof:
            (a.sqrt().sum() + b.sqrt().sum()).backward()
    finally:
        ag.set_num_workers(workers)
    assert any(e.worker for e in prof.events if e.name == "SqrtBackward0")
    assert np.isinf(a.grad.numpy()).all() and np.isinf(b.grad.numpy()).all()


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled", "ignore:Error detected in")
def test_anomaly_mode_blames_the_node_a_nan_seed_reaches_not_the_root():
    with ag.autograd.detect_anomaly():
        x = leaf([1.0])
        for call, name in ((lambda: (x * 2).backward(ag.tensor([math.nan], dtype=ag.float64)), "MulBackward0"),
                           (lambda: ag.autograd.grad(x * 2, x, ag.tensor([math.nan], dtype=ag.float64)),
                            "MulBackward0"),
                           (lambda: (x * 2).sum().backward(ag.tensor(math.nan, dtype=ag.float64)), "SumBackward0")):
            with pytest.raises(RuntimeError, match=rf"^Function '{name}' returned nan values in its 0th output\."):
                call()
        x.backward(ag.tensor([math.nan], dtype=ag.float64))  # a leaf's seed reaches no node that checks
        assert math.isnan(x.grad.item())
        z = leaf([0.0, 1.0])
        with pytest.raises(RuntimeError, match=r"^Function 'SqrtBackward0' returned nan values in its 0th output"):
            (z.sqrt() * 0).sum().backward()  # 0 / (2 sqrt(0)): a NaN made inside the pass, found with warnings off


def test_saved_tensors_hooks_pack_each_saved_variable_once_even_when_they_are_one_tensor():
    calls = []

    def pack(t):
        calls.append("pack")
        return t

    def unpack(t):
        calls.append("unpack")
        return t

    x = leaf([1.0, 2.0])
    with saved_tensors_hooks(pack, unpack):
        y = (x * x).sum()  # mul saves self and other
        z = (x * x * x).sum()
    assert calls == ["pack"] * 6  # sum saves no tensor
    calls.clear()
    y.backward()
    assert calls == ["unpack", "unpack"] and x.grad.tolist() == [2.0, 4.0]
    calls.clear()
    z.backward()
    assert calls == ["unpack"] * 4 and x.grad.tolist() == [5.0, 16.0]
    calls.clear()
    with saved_tensors_hooks(pack, unpack):
        x.exp().sum()  # exp saves its result only
    assert calls == ["pack"]


# -- errors ------------------------------------------------------------------------------------------------
def test_empty_inputs_are_refused_in_pytorchs_words():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    with pytest.raises(RuntimeError, match=r"^`inputs` argument to `grad\(\)` cannot be empty\.$"):
        ag.autograd.grad(y, [], retain_graph=True)
    with pytest.raises(RuntimeError, match=r"^`inputs` argument to `backward\(\)` cannot be empty\.$"):
        y.backward(inputs=[])
    assert x.grad is None


async def test_inputs_that_are_not_tensors_are_refused_in_pytorchs_words():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    message = r"^all inputs have to be Tensors or GradientEdges, but got int$"
    with pytest.raises(RuntimeError, match=message):
        await ag.grad(y, [x, 3], retain_graph=True)
    with pytest.raises(RuntimeError, match=message.replace("int", "str")):
        await ag.backward(y, inputs=[x, "a"], retain_graph=True)
    with pytest.raises(RuntimeError, match=message):
        await trio.to_thread.run_sync(lambda: ag.autograd.grad(y, [x, 3], retain_graph=True))
    assert x.grad is None


def test_gradients_are_paired_with_outputs_and_extra_ones_ignored():
    x = leaf([1.0, 2.0])
    a, b = (x * 2).sum(), (x * 3).sum()
    with pytest.raises(RuntimeError, match=r"^got 2 tensors and 1 gradients"):
        ag.autograd.backward([a, b], grad_tensors=[ag.tensor(1.0, dtype=ag.float64)], retain_graph=True)
    with pytest.raises(RuntimeError, match=r"^got 2 tensors and 1 gradients"):
        ag.autograd.grad([a, b], x, grad_outputs=[ag.tensor(1.0, dtype=ag.float64)], retain_graph=True)
    assert x.grad is None
    ag.autograd.backward([a], [ag.tensor(1.0, dtype=ag.float64), ag.tensor(2.0, dtype=ag.float64)],
                         retain_graph=True)
    assert x.grad.tolist() == [2.0, 2.0]
    (g,) = ag.autograd.grad([a], x, [ag.tensor(1.0, dtype=ag.float64), "ignored"])
    assert g.tolist() == [2.0, 2.0]


def test_inputs_that_do_not_require_grad_are_refused_as_pytorch_refuses_them():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    for inputs in ([ag.ones(3)], [x, ag.ones(3)]):
        with pytest.raises(RuntimeError, match=r"^can't retain_grad on Tensor that has requires_grad=False$"):
            y.backward(inputs=inputs, retain_graph=True)
        with pytest.raises(RuntimeError, match=r"^One of the differentiated Tensors does not require grad"):
            ag.autograd.grad(y, inputs, retain_graph=True)
    assert x.grad is None


async def test_kernels_on_async_streams_give_no_floating_point_warnings():
    x = ag.tensor([0.0, 1.0], dtype=ag.float64, device=ag.device("async_cpu:0"), requires_grad=True)
    with no_warnings():
        await ag.backward(x.sqrt().sum())
    assert x.grad.tolist() == [math.inf, 0.5]


def test_a_batched_grad_that_fails_part_way_commits_no_retained_gradient():
    x = leaf([1.0, 2.0, 3.0])
    z = x * 1.0
    z.retain_grad()
    calls = [0]

    def fail_in_the_second_pass(g):
        calls[0] += 1
        if calls[0] == 2:
            raise ValueError("boom")

    x.register_hook(fail_in_the_second_pass)
    with pytest.raises(ValueError, match="boom"):
        ag.autograd.grad((z * z).exp(), x, ag.eye(3, dtype=ag.float64), is_grads_batched=True)
    assert z.grad is None


def test_a_view_made_under_no_grad_may_be_asked_for_its_gradient_and_gets_none():
    x, w = leaf([1.0, 2.0, 3.0]), leaf([1.0, 2.0])
    with ag.no_grad():
        v = x[:2]
    assert ag.autograd.grad((v * w).sum(), [v], allow_unused=True) == (None,)  # torch 2.13
    (v * w).sum().backward(inputs=[w, v])
    assert w.grad.tolist() == [1.0, 2.0] and v.grad is None and x.grad is None


def test_a_create_graph_backward_nested_in_a_plain_pass_commits_gradients_with_their_graph():
    x, q = leaf([1.0, 2.0]), leaf([1.0, 2.0])
    y = (x**3).sum()

    def nested_create_graph(g):
        y.backward(create_graph=True)
        return g

    qq = q * 1.0
    qq.register_hook(nested_create_graph)
    (qq.sum() + (x * 5.0).sum()).backward()  # the outer pass adds its own gradient for x too
    # 3 x^2 + 5, with its graph (torch 2.13's is an AddBackward0); that graph's derivative is 6 x
    assert x.grad.tolist() == [8.0, 17.0] and x.grad.grad_fn is not None
    assert ag.autograd.grad(x.grad.sum(), x)[0].tolist() == [6.0, 12.0]


def test_a_create_graph_backward_nested_in_a_failing_plain_pass_commits_nothing():
    x, q = leaf([1.0, 2.0]), leaf([1.0, 2.0])
    y = (x**3).sum()

    def nested_then_fail(g):
        y.backward(create_graph=True)
        raise ValueError("boom")

    qq = q * 1.0
    qq.register_hook(nested_then_fail)
    with pytest.raises(ValueError, match="boom"):
        qq.sum().backward()
    assert x.grad is None and q.grad is None


@pytest.mark.parametrize("retain_graph", [None, True])
def test_a_batched_grad_that_fails_part_way_frees_the_graph_unless_retained(retain_graph):
    x = leaf([1.0, 2.0, 3.0])
    calls = [0]

    def fail_in_the_second_pass(g):
        calls[0] += 1
        if calls[0] == 2:
            raise ValueError("boom")

    x.register_hook(fail_in_the_second_pass)
    out = (x * x).exp()
    with pytest.raises(ValueError, match="boom"):
        ag.autograd.grad(out, x, ag.eye(3, dtype=ag.float64), retain_graph=retain_graph, is_grads_batched=True)
    if retain_graph:
        assert ag.autograd.grad(out.sum(), x)[0] is not None
    else:
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            ag.autograd.grad(out.sum(), x)


async def test_a_cancelled_batched_grad_frees_the_graph():
    a = leaf([1.0, 1.0, 1.0])
    b = a.exp()
    calls = [0]

    async def sleep_in_the_second_pass(g):
        calls[0] += 1
        if calls[0] == 2:
            await trio.sleep(1)

    handle = b.register_hook(sleep_in_the_second_pass)
    out = (b * b).sum()
    with trio.move_on_after(0.05):
        await ag.grad(out, a, ag.ones(3, dtype=ag.float64), is_grads_batched=True)
    handle.remove()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        await ag.grad(out, a)


def test_a_custom_function_refuses_to_save_an_inference_tensor():
    with ag.inference_mode():
        i = ag.tensor([1.0, 2.0, 3.0])

    class Mul(ag.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    with pytest.raises(RuntimeError, match=r"^Inference tensors cannot be saved for backward\. Please do not use"):
        Mul.apply(leaf([1.0, 2.0, 3.0]), i)


def test_a_leaf_reached_only_by_a_nested_create_graph_pass_gets_its_post_accumulate_hook():
    x2 = leaf([1.0, 2.0])
    q = leaf([1.0])
    seen = []
    x2.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    y2 = (x2**3).sum()
    qq = q * 1.0
    qq.register_hook(lambda g: (y2.backward(create_graph=True), g)[1])
    qq.sum().backward()
    assert seen == [[3.0, 12.0]] and x2.grad.grad_fn is not None
