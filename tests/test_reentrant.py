"""Reentrant backward: a pass started inside a node's backward runs one depth deeper, takes priority over
shallower passes on the device, stages its leaf gradients into the outermost pass's commit, and nests only so
deep."""

from __future__ import annotations

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.autograd import Function
from actorgrad.ops.record import Rule, record
from actorgrad.scheduler.workers import HEAVY_NODE_NS


def leaf(shape, seed=0):
    return ag.tensor(np.random.default_rng(seed).uniform(0.5, 1.5, shape), dtype=ag.float64, requires_grad=True)


def chain(x, n):
    for _ in range(n):
        x = x * 1.0
    return x.sum()


HEAVY = Rule("HeavyIdentityBackward", ((), None), cost=lambda data, params: 2 * HEAVY_NODE_NS)


class NestedSquare(Function):
    """Passes the gradient through doubled; its backward first runs a sync backward of sum(w * w) (a heavy
    node on the way, which outside a node's backward would go to a worker thread) and records what it sees."""

    seen: list = []

    @staticmethod
    def forward(ctx, x, w):
        ctx.w = w
        return x * 2

    @staticmethod
    def backward(ctx, g):
        w = ctx.w
        with ag.enable_grad():  # backward runs without recording, as in PyTorch
            loss = record(HEAVY, w._data, (w * w,)).sum()
        loss.backward()
        NestedSquare.seen.append(w.grad)
        return g * 2, None


class Explode(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        raise ValueError("outer node failed")


def test_sync_nested_backward_runs_one_depth_deeper_and_commits_with_the_outer_pass():
    x, w = leaf((3,), 1), leaf((3,), 2)
    NestedSquare.seen.clear()
    with ag.profile() as prof:
        (NestedSquare.apply(x, w) * 3).sum().backward()
    assert NestedSquare.seen == [None]  # staged into the outer pass, not committed on its own
    np.testing.assert_allclose(w.grad.numpy(), 2 * w.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 6.0))
    depths = {(e.name, e.depth) for e in prof.events}
    assert ("NestedSquareBackward", 0) in depths and ("HeavyIdentityBackward", 1) in depths
    assert ("MulBackward0", 1) in depths and ("torch::autograd::AccumulateGrad", 1) in depths


async def test_sync_nested_backward_on_the_event_loop_runs_inline_without_deadlock():
    x, w = leaf((3,), 1), leaf((3,), 2)
    NestedSquare.seen.clear()
    with trio.fail_after(10):
        await ag.backward((NestedSquare.apply(x, w) * 3).sum())
    assert NestedSquare.seen == [None]
    np.testing.assert_allclose(w.grad.numpy(), 2 * w.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 6.0))


def test_nested_leaf_updates_are_lost_with_the_outer_pass_when_it_fails_afterwards():
    x, w = leaf((3,), 1), leaf((3,), 2)
    NestedSquare.seen.clear()
    failing = Explode.apply(x)  # recorded first, so it runs after the nesting node
    loss = (failing + NestedSquare.apply(x, w)).sum()
    with pytest.raises(ValueError, match="outer node failed"):
        loss.backward()
    assert NestedSquare.seen == [None]  # the nested pass did finish
    assert w.grad is None and x.grad is None


class Nest(Function):
    """Each backward nests one more pass through a new Nest node, down to `levels`, each level adding into w."""

    @staticmethod
    def forward(ctx, x, w, levels):
        ctx.w, ctx.levels = w, levels
        return x * 1

    @staticmethod
    def backward(ctx, g):
        w, levels = ctx.w, ctx.levels
        if levels:
            with ag.enable_grad():
                loss = Nest.apply(w * 1, w, levels - 1).sum()
            loss.backward()
            assert w.grad is None
        return g, None, None


def test_all_or_nothing_covers_a_nest_of_several_levels():
    x, w = leaf((2,), 1), leaf((2,), 2)
    with ag.profile() as prof:
        Nest.apply(x, w, 3).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full(2, 3.0))  # one from each nested pass
    assert {e.depth for e in prof.events if e.name == "NestBackward"} == {0, 1, 2, 3}


def test_nesting_deeper_than_the_limit_is_refused():
    x, w = leaf((2,), 1), leaf((2,), 2)
    with pytest.raises(RuntimeError, match="reentrant backward depth 61 exceeds the limit of 60"):
        Nest.apply(x, w, 100).sum().backward()
    assert w.grad is None and x.grad is None
    Nest.apply(x, w, 59).sum().backward()  # 60 deep is allowed
    np.testing.assert_allclose(w.grad.numpy(), np.full(2, 59.0))


class AsyncNested(Function):
    """An async backward that waits, then awaits a nested pass over the loss in `inner` (a list, so that the
    loss is not an input of this node)."""

    @staticmethod
    def forward(ctx, x, inner):
        (ctx.inner_loss,) = inner
        return x * 1

    @staticmethod
    async def backward(ctx, g):
        await trio.sleep(0.002)
        await ag.backward(ctx.inner_loss)
        return g, None


def test_async_backward_awaits_a_nested_pass_under_a_sync_backward():
    x, w = leaf((2,), 1), leaf((2,), 2)
    (AsyncNested.apply(x, [chain(w, 5)]) * 2).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.ones(2))
    np.testing.assert_allclose(x.grad.numpy(), np.full(2, 2.0))


class SyncOverAsync(Function):
    """A sync backward that runs a sync nested pass through an async Function."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.w = w
        return x * 1

    @staticmethod
    def backward(ctx, g):
        with ag.enable_grad():
            loss = AsyncNested.apply(ctx.w, [chain(ctx.w, 2)]).sum()
        loss.backward()
        return g, None


async def test_async_backward_in_a_sync_nested_pass_on_the_event_loop_is_refused():
    x, w = leaf((2,), 1), leaf((2,), 2)
    with pytest.raises(RuntimeError, match="AsyncNestedBackward has an async backward, which cannot run in a sync "
                                           "backward called on a running trio event loop"):
        await ag.backward(SyncOverAsync.apply(x, w).sum())
    assert w.grad is None and x.grad is None
    loss = SyncOverAsync.apply(x, w).sum()
    await trio.to_thread.run_sync(loss.backward)  # on a thread with no event loop running, it can run
    np.testing.assert_allclose(w.grad.numpy(), np.full(2, 2.0))


async def test_nested_pass_actors_take_priority_over_a_shallower_pass_on_the_device():
    x, w, other = leaf((2,), 1), leaf((2,), 2), leaf((2,), 3)
    # Recorded in this order, the nested graph's nodes have lower sequence numbers than the other pass's, so
    # only their depth can put them first; the nesting node's are higher, so it starts before the other pass.
    inner_loss = chain(w, 300)
    long_loss = chain(other, 4000)
    nesting_loss = AsyncNested.apply(x, [inner_loss]).sum()
    with ag.profile() as prof:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ag.backward, nesting_loss)
            nursery.start_soon(ag.backward, long_loss)
    np.testing.assert_allclose(w.grad.numpy(), np.ones(2))
    np.testing.assert_allclose(other.grad.numpy(), np.ones(2))
    events = sorted(prof.events, key=lambda e: e.start_ns)
    nested = [i for i, e in enumerate(events) if e.depth == 1]
    assert len(nested) == 300 + 3  # the chain, its sum, root and accumulator
    first, last = nested[0], nested[-1]
    long_pass = max({e.graph_task for e in events}, key=lambda task: sum(e.graph_task == task for e in events))
    # The shallow pass was under way when the nested one started and went on after it ...
    assert any(e.graph_task == long_pass for e in events[:first])
    assert any(e.graph_task == long_pass for e in events[last + 1:])
    # ... yet none of its actors ran while the nested pass had any ready.
    assert all(e.depth == 1 for e in events[first:last + 1])


def test_a_pass_nested_in_grad_commits_its_own_leaf_updates():
    x, w = leaf((3,), 1), leaf((3,), 2)
    NestedSquare.seen.clear()
    (gx,) = ag.autograd.grad((NestedSquare.apply(x, w) * 3).sum(), x)  # grad() commits nothing to stage into
    np.testing.assert_allclose(gx.numpy(), np.full(3, 6.0))
    np.testing.assert_allclose(NestedSquare.seen[0].numpy(), 2 * w.detach().numpy())
    assert x.grad is None
