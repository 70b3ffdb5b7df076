"""Leaks: a graph that has been backpropagated and dropped is freed by reference counting alone.

Each test runs with the garbage collector off, so a weak reference that is still alive after `del` means a
reference cycle through nodes or tensors (or a plain leak). The training loops check with tracemalloc that
memory stays flat over thousands of steps.
"""

import gc
import tracemalloc
import weakref

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad import nn
from actorgrad.autograd.graph import saved_tensors_hooks
from actorgrad.ops.record import Rule, record


@pytest.fixture(autouse=True)
def no_gc():
    """Only reference counting frees objects during a test."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def graph_refs(*outputs: ag.Tensor, held: tuple = ()) -> list[weakref.ref]:
    """Weak references to every node reachable from `outputs` (leaf accumulators included) and to the arrays
    the nodes saved, except the arrays of leaves and of the tensors `held` (which the test keeps)."""
    nodes, seen = [], set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            nodes.append(node)
            stack.extend(next_node for next_node, _ in node.next_functions if next_node is not None)
    kept = {id(n.variable._data) for n in nodes if hasattr(n, "variable")} | {id(t._data) for t in held}
    saved = [v for n in nodes for call in getattr(n, "saved", None) or () for v in call[2]]
    return [weakref.ref(n) for n in nodes] + [
        weakref.ref(v) for v in saved if isinstance(v, np.ndarray) and id(v) not in kept
    ]


def alive(refs: list[weakref.ref]) -> list:
    return [r() for r in refs if r() is not None]


def leaf(*shape: int) -> ag.Tensor:
    return ag.tensor(np.random.default_rng(0).uniform(0.5, 1.5, shape), requires_grad=True)


def test_plain_ops_free_nodes_saved_arrays_and_intermediates_on_del():
    x, w = leaf(3, 4), leaf(4, 2)
    h = (x @ w).tanh()
    loss = (h * h.exp()).sum() / x.sum()
    refs = graph_refs(loss) + [weakref.ref(h)]
    assert len(refs) > 8
    loss.backward()
    del h, loss
    assert alive(refs) == []
    assert x.grad is not None and w.grad is not None


def test_retained_graph_is_freed_when_its_outputs_are_dropped():
    x = leaf(5)
    loss = (x.sigmoid() * x).sum()
    refs = graph_refs(loss)
    loss.backward(retain_graph=True)
    loss.backward(retain_graph=True)
    assert len(alive(refs)) == len(refs)
    del loss
    assert alive(refs) == []


def test_create_graph_graphs_and_their_gradients_are_freed():
    x = leaf(4)
    y = (x ** 3 * x.sin()).sum()
    (g,) = ag.autograd.grad(y, x, create_graph=True)
    gg = (g * g).sum()
    refs = graph_refs(y, g, gg) + [weakref.ref(g)]
    gg.backward()
    del y, g, gg
    assert alive(refs) == []


def test_backward_with_create_graph_into_grad_is_freed_once_grad_is_cleared():
    x = leaf(3)
    loss = (x.exp() * x).sum()
    refs = graph_refs(loss)
    loss.backward(create_graph=True)
    refs += graph_refs(x.grad)
    del loss
    assert alive(refs) != []  # x.grad's history holds the first graph
    x.grad = None
    assert alive(refs) == []


class SquareSavingOutput(ag.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        out = a * a
        ctx.save_for_backward(a, out)
        ctx.scale = ag.tensor(2.0)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        return ctx.scale * a * g + 0 * out


def test_custom_function_saving_its_input_and_output_is_freed():
    x = leaf(4)
    y = SquareSavingOutput.apply(x * 1.0)
    ctx_ref = weakref.ref(y.grad_fn)
    refs = graph_refs(y) + [weakref.ref(y)]
    y.sum().backward()
    del y
    assert alive(refs) == [] and ctx_ref() is None
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_hooked_graphs_are_freed_with_their_hooks():
    x = leaf(4)
    calls = []
    x.register_hook(lambda g: g * 2)
    x.register_post_accumulate_grad_hook(lambda t: calls.append("post"))
    y = x * 3.0
    y.retain_grad()
    y.register_hook(lambda g: g + 1)
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: None)
    y.grad_fn.register_prehook(lambda grad_outputs: None)
    loss = y.sum()
    refs = graph_refs(loss) + [weakref.ref(y)]
    loss.backward()
    y_grad = weakref.ref(y.grad)
    del y, loss
    assert alive(refs) == [] and y_grad() is None
    assert calls == ["post"]
    np.testing.assert_allclose(x.grad.numpy(), 12.0)


def test_in_place_ops_on_views_free_the_views_and_their_version_counter():
    x = leaf(3, 4)
    y = x * 1.0
    row = y[0]
    row.mul_(2.0)
    y.add_(1.0)
    column = y[:, 1]
    column.clamp_(min=1.5)
    y[2, 3] = 0.0
    vc = y._vc
    loss = (y * y).sum()
    refs = graph_refs(loss) + [weakref.ref(y), weakref.ref(row), weakref.ref(column)]
    assert len(vc.views) == 2
    loss.backward()
    del y, row, column, loss
    assert alive(refs) == []
    assert len(vc.views) == 0


def test_saved_tensors_hooks_graph_is_freed():
    x = leaf(4)
    packed = []

    def pack(t):
        copy = t.detach() * 1.0
        packed.append(weakref.ref(copy))
        return copy

    with saved_tensors_hooks(pack, lambda t: t):
        loss = (x.exp() * x).sum()
    refs = graph_refs(loss)
    loss.backward()
    del loss
    assert alive(refs) == [] and alive(packed) == []


def test_a_failed_backward_frees_the_graph():
    """The error's traceback holds the frames that hold the pass; the pass must not hold the error back."""

    def fail(ops, g):
        raise ValueError("injected")

    x = leaf(4)
    y = record(Rule("FailBackward0", ((), fail)), x._data * 1.0, (x,))
    loss = (y.exp() * 2.0).sum()
    refs = graph_refs(loss) + [weakref.ref(y)]
    with pytest.raises(ValueError, match="injected"):
        loss.backward()
    del y, loss
    assert alive(refs) == []
    assert x.grad is None


def test_a_second_backward_through_a_freed_graph_leaves_no_cycle():
    x = leaf(4)
    loss = (x.exp() * x).sum()
    refs = graph_refs(loss)
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()
    del loss
    assert alive(refs) == []


async def test_async_backward_and_grad_free_their_graphs():
    x = leaf(4)
    loss = (x.tanh() * x).sum()
    other = (x.exp() ** 2).sum()
    refs = graph_refs(loss, other)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ag.backward, loss)
        nursery.start_soon(ag.grad, other, x)
    del loss, other
    assert alive(refs) == []


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))


def test_a_model_and_its_optimizer_are_freed_after_training_steps():
    ag.manual_seed(0)
    model = mlp()
    optimizer = ag.optim.Adam(model.parameters(), lr=1e-2)
    x = ag.randn(4, 8)
    for _ in range(3):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        refs = graph_refs(loss, held=(x,))
        loss.backward()
        optimizer.step()
        del loss
        assert alive(refs) == []
    params = [weakref.ref(p) for p in model.parameters()]
    grads = [weakref.ref(p.grad) for p in model.parameters()]
    del model, optimizer
    assert alive(params) == [] and alive(grads) == []


def training_memory(steps: int, window: int, leak_per_step: int = 0) -> list[tuple[int, int]]:
    """(current, peak) bytes traced over each `window` steps of training a small MLP with Adam."""
    ag.manual_seed(0)
    model = mlp()
    optimizer = ag.optim.Adam(model.parameters(), lr=1e-3)
    x, target = ag.randn(16, 8), ag.randn(16, 1)
    kept = []
    windows = []
    tracemalloc.start()
    try:
        for _ in range(steps // window):
            tracemalloc.reset_peak()
            for _ in range(window):
                optimizer.zero_grad()
                loss = (model(x) - target).pow(2).mean()
                loss.backward()
                optimizer.step()
                if leak_per_step:
                    kept.append(bytearray(leak_per_step))
            windows.append(tracemalloc.get_traced_memory())
    finally:
        tracemalloc.stop()
    return windows


# A leak of even 16 bytes a step grows memory by 16 KB over a window of 1,000 steps: well over this bound.
FLAT_BOUND_BYTES = 8 * 1024


def assert_flat(windows: list[tuple[int, int]]) -> None:
    (first_current, first_peak), (last_current, last_peak) = windows[0], windows[-1]
    assert last_current - first_current < FLAT_BOUND_BYTES, windows
    assert last_peak - first_peak < FLAT_BOUND_BYTES, windows


def test_the_memory_check_catches_a_small_leak():
    with pytest.raises(AssertionError):
        assert_flat(training_memory(400, 200, leak_per_step=64))


def test_memory_stays_flat_over_2000_training_steps():
    assert_flat(training_memory(2000, 1000))


@pytest.mark.heavy
def test_memory_stays_flat_over_10000_training_steps():
    assert_flat(training_memory(10_000, 1000))
