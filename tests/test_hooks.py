"""Backward hooks: on tensors (leaf and non-leaf), after accumulation, on nodes, on saved tensors, on several
tensors at once; sync or async; removable; and a hook that raises changes no `.grad`."""

import pickle

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.autograd import graph
from actorgrad.ops.record import Rule, record


def leaf(values=(1.0, 2.0, 3.0)):
    return ag.tensor(np.array(values), requires_grad=True)


def grad_of(t):
    return t.grad.numpy()


# -- tensor hooks ---------------------------------------------------------------------------------------------
def test_a_hook_that_doubles_a_leaf_gradient_runs_before_accumulation():
    x = leaf()
    x.grad = ag.tensor(np.ones(3))
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
    (x * 3).sum().backward()
    np.testing.assert_array_equal(seen[0], [3, 3, 3])  # the new gradient alone, not yet added to .grad
    np.testing.assert_array_equal(grad_of(x), [7, 7, 7])


def test_a_hook_on_a_non_leaf_replaces_the_gradient_that_flows_on_and_is_retained():
    x = leaf()
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 10)
    (y * 3).sum().backward()
    np.testing.assert_array_equal(grad_of(y), [30, 30, 30])
    np.testing.assert_array_equal(grad_of(x), [60, 60, 60])


def test_hooks_chain_in_registration_order_and_none_keeps_the_gradient():
    x = leaf()
    y = x * 1
    seen = []
    y.register_hook(lambda g: g + 1)
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    y.register_hook(lambda g: g * 2)
    y.sum().backward()
    np.testing.assert_array_equal(seen[0], [2, 2, 2])
    np.testing.assert_array_equal(grad_of(x), [4, 4, 4])


def test_a_removed_hook_no_longer_runs():
    x = leaf()
    handle = x.register_hook(lambda g: g * 2)
    handle.remove()
    handle.remove()  # twice is harmless
    (x * 3).sum().backward()
    np.testing.assert_array_equal(grad_of(x), [3, 3, 3])
    y = x * 1
    with y.register_hook(lambda g: g * 100):
        pass
    x.grad = None
    y.sum().backward()
    np.testing.assert_array_equal(grad_of(x), [1, 1, 1])


def test_a_leaf_hook_outlives_the_graphs_and_applies_to_grad_inputs():
    x = leaf()
    x.register_hook(lambda g: g * 2)
    for _ in range(2):  # each pass builds a new accumulator for x; the hook stays with x
        (x * 3).sum().backward()
    np.testing.assert_array_equal(grad_of(x), [12, 12, 12])
    (g,) = ag.autograd.grad((x * 3).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [6, 6, 6])


def test_hooks_see_tensors_with_a_graph_under_create_graph():
    x = leaf()
    y = x * x
    y.register_hook(lambda g: g * x)  # the replacement depends on x: it shows in the second derivative
    (g,) = ag.autograd.grad(y.sum(), x, create_graph=True)  # d/dx sum(x * x) * x = 2 x^2
    np.testing.assert_allclose(g.detach().numpy(), 2 * x.detach().numpy() ** 2)
    (gg,) = ag.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 4 * x.detach().numpy())


def test_registering_on_a_tensor_without_grad_is_refused():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        ag.tensor([1.0]).register_hook(lambda g: g)


@pytest.mark.parametrize(
    "hook, error, message",
    [
        (lambda g: ag.tensor(np.ones(2)), RuntimeError, r"hook '<lambda>' has changed the size of value"),
        (lambda g: g.to(ag.float32), RuntimeError, r"has changed the type of value \(was float64 got float32\)"),
        (lambda g: 3, TypeError, r"expected Tensor, but hook '<lambda>' returned 'int'"),
    ],
)
def test_a_bad_replacement_is_refused_naming_the_hook(hook, error, message):
    x = leaf()
    y = x * 1
    y.register_hook(hook)
    with pytest.raises(error, match=message):
        y.sum().backward()


# -- post-accumulate-grad hooks --------------------------------------------------------------------------------
def test_post_accumulate_hooks_run_at_the_commit_and_see_every_new_grad():
    a, b = leaf(), leaf()
    seen = []
    a.register_post_accumulate_grad_hook(lambda t: seen.append((grad_of(t).copy(), grad_of(b).copy())))
    (a * 2 + b * 5).sum().backward()
    ((own, other),) = seen
    np.testing.assert_array_equal(own, [2, 2, 2])
    np.testing.assert_array_equal(other, [5, 5, 5])  # b was committed too: all leaves commit before the hooks
    (a * 2).sum().backward()
    np.testing.assert_array_equal(seen[1][0], [4, 4, 4])


def test_post_accumulate_hooks_skip_grad_and_refuse_non_leaves():
    x = leaf()
    seen = []
    x.register_post_accumulate_grad_hook(seen.append)
    ag.autograd.grad((x * 2).sum(), x)
    assert seen == []
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (x * 2).register_post_accumulate_grad_hook(seen.append)


# -- node hooks -------------------------------------------------------------------------------------------------
def test_a_node_prehook_replaces_the_gradients_the_node_receives():
    x = leaf()
    y = x * 2
    y.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 5,))
    y.sum().backward()
    np.testing.assert_array_equal(grad_of(x), [10, 10, 10])


def test_a_node_hook_sees_both_sides_and_may_replace_the_gradients_it_sends():
    x, w = leaf(), leaf((4.0, 5.0, 6.0))
    y = x * w.detach()  # the second input needs no gradient: its slot is None
    seen = []

    def hook(grad_inputs, grad_outputs):
        seen.append((grad_inputs, grad_outputs))
        return (grad_inputs[0] + 1, None)

    y.grad_fn.register_hook(hook)
    y.sum().backward()
    ((grad_inputs, grad_outputs),) = seen
    np.testing.assert_array_equal(grad_inputs[0].numpy(), [4, 5, 6])
    assert grad_inputs[1] is None
    np.testing.assert_array_equal(grad_outputs[0].numpy(), [1, 1, 1])
    np.testing.assert_array_equal(grad_of(x), [5, 6, 7])


def test_a_node_hook_returning_the_wrong_count_or_filling_a_none_slot_is_refused():
    x = leaf()
    y = x * leaf().detach()
    handle = y.grad_fn.register_hook(lambda gi, go: (gi[0],))
    with pytest.raises(RuntimeError, match=r"hook '<lambda>' has returned an incorrect number of values \(got 1, "
                                           r"but expected 2\)"):
        y.sum().backward(retain_graph=True)
    handle.remove()
    y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
        y.sum().backward()


# -- saved-tensor hooks -----------------------------------------------------------------------------------------
def _to_bytes(t):
    data = t.detach().numpy()
    return pickle.dumps((data.tobytes(), data.dtype.str, data.shape))


def _from_bytes(packed):
    raw, dtype, shape = pickle.loads(packed)
    return ag.tensor(np.frombuffer(raw, dtype=dtype).reshape(shape))


def _model(x, w):
    return ((x @ w).tanh() * x.exp().sum(1, keepdim=True)).sum()


def test_saved_tensors_packed_to_bytes_give_the_same_gradients():
    rng = np.random.default_rng(0)
    x = ag.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    w = ag.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    expected = ag.autograd.grad(_model(x, w), (x, w))
    packed, unpacked = [], []

    def pack(t):
        packed.append(t.shape)
        return _to_bytes(t)

    def unpack(b):
        unpacked.append(b)
        assert isinstance(b, bytes)
        return _from_bytes(b)

    with graph.saved_tensors_hooks(pack, unpack):
        loss = _model(x, w)
    assert packed and not unpacked
    got = ag.autograd.grad(loss, (x, w))
    assert unpacked
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g.numpy(), e.numpy())


def test_saved_tensors_packed_to_bytes_keep_second_derivatives():
    x = ag.tensor(np.array([0.5, 1.0, 2.0]), requires_grad=True)
    with graph.saved_tensors_hooks(_to_bytes, _from_bytes):
        y = (x * x.exp()).sum()
    (g,) = ag.autograd.grad(y, x, create_graph=True)
    (gg,) = ag.autograd.grad(g.sum(), x)
    v = x.detach().numpy()
    np.testing.assert_allclose(g.detach().numpy(), np.exp(v) * (1 + v))
    np.testing.assert_allclose(gg.numpy(), np.exp(v) * (2 + v))


def test_saved_tensor_hooks_apply_only_inside_and_unpack_on_every_use():
    x = leaf()
    unpacks = []
    with graph.saved_tensors_hooks(lambda t: t, lambda t: unpacks.append(1) or t):
        inside = (x * x).sum()
    outside = (x * x).sum()
    outside.backward()
    assert unpacks == []
    inside.backward(retain_graph=True)
    count = len(unpacks)
    inside.backward()
    assert count and len(unpacks) == 2 * count


def test_an_unpack_hook_must_return_a_tensor():
    x = leaf()
    with graph.saved_tensors_hooks(lambda t: t, lambda t: 5):
        y = x.exp().sum()
    with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a Tensor but got "
                                        "result of type int"):
        y.backward()


# -- multi-grad hooks ---------------------------------------------------------------------------------------------
def test_a_multi_grad_hook_in_all_mode_runs_once_with_every_gradient_reached():
    a, b, c = leaf(), leaf(), leaf()
    calls = []
    handle = graph.register_multi_grad_hook((a, b, c), calls.append)
    (a * 2 + b).sum().backward()
    ((ga, gb, gc),) = calls
    np.testing.assert_array_equal(ga.numpy(), [2, 2, 2])
    np.testing.assert_array_equal(gb.numpy(), [1, 1, 1])
    assert gc is None  # c is not in this graph
    handle.remove()
    (a * 2 + b).sum().backward()
    assert len(calls) == 1


def test_a_multi_grad_hook_in_any_mode_runs_once_on_the_first_gradient():
    a, b = leaf(), leaf()
    calls = []
    graph.register_multi_grad_hook((a, b), calls.append, mode="any")
    (a * 2 + b * 3).sum().backward()
    (a * 2 + b * 3).sum().backward()
    assert len(calls) == 2
    assert {float(g.numpy()[0]) for g in calls} <= {2.0, 3.0}
    with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but got some"):
        graph.register_multi_grad_hook((a,), calls.append, mode="some")


# -- async hooks ------------------------------------------------------------------------------------------------
async def _doubled_later(g):
    await trio.sleep(0)
    return g * 2


async def test_async_hooks_are_awaited_by_an_async_backward():
    x = leaf()
    y = x * 3
    y.register_hook(_doubled_later)
    y.grad_fn.register_prehook(_doubled_later_all)
    committed = []

    async def after(t):
        await trio.sleep(0)
        committed.append(grad_of(t).copy())

    x.register_post_accumulate_grad_hook(after)
    await ag.backward(y.sum())
    np.testing.assert_array_equal(grad_of(x), [12, 12, 12])
    np.testing.assert_array_equal(committed[0], [12, 12, 12])


async def _doubled_later_all(grads):
    await trio.sleep(0)
    return tuple(g * 2 for g in grads)


def test_async_hooks_run_under_a_sync_backward_too():
    x = leaf()
    x.register_hook(_doubled_later)
    (x * 3).sum().backward()
    np.testing.assert_array_equal(grad_of(x), [6, 6, 6])


async def test_an_async_hook_lets_other_tasks_run_while_it_waits():
    x = leaf()
    order = []
    release = trio.Event()

    async def waiting(g):
        order.append("hook waits")
        await release.wait()
        return g

    async def other():
        order.append("other runs")
        release.set()

    (y := x * 2).register_hook(waiting)
    with trio.fail_after(5):  # a hook that blocked the event loop would never see `other` run
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ag.backward, y.sum())
            await trio.sleep(0.01)
            nursery.start_soon(other)
    assert order == ["hook waits", "other runs"]
    np.testing.assert_array_equal(grad_of(x), [2, 2, 2])


async def test_an_async_multi_grad_hook_is_awaited():
    a, b = leaf(), leaf()
    calls = []

    async def record(grads):
        await trio.sleep(0)
        calls.append(grads)

    graph.register_multi_grad_hook((a, b), record)
    await ag.backward((a + b).sum())
    assert len(calls) == 1 and all(g is not None for g in calls[0])


async def test_a_heavy_node_whose_hooks_await_stays_on_the_event_loop(num_workers):
    with num_workers(2):
        heavy = Rule("HeavyBackward0", ((), lambda ops, g: g), cost=lambda data, params: 1e12)
        x = leaf()
        awaiting, plain = (record(heavy, (x * c)._data, (x * c,)) for c in (1.0, 2.0))
        awaiting.grad_fn.register_prehook(_doubled_later_all)
        plain.grad_fn.register_prehook(lambda grads: tuple(g * 2 for g in grads))
        with ag.profile() as prof:
            await ag.backward((awaiting + plain).sum())
        (event,) = [e for e in prof.events if e.sequence_nr == awaiting.grad_fn.sequence_nr]
        assert event.worker == 0
        np.testing.assert_array_equal(grad_of(x), [6, 6, 6])


# -- a hook that raises -----------------------------------------------------------------------------------------
class HookFailed(Exception):
    pass


def _raise(*args):
    raise HookFailed("no")


@pytest.mark.parametrize("where", ["leaf", "non-leaf", "prehook", "node hook"])
def test_a_raising_hook_fails_the_pass_and_changes_no_grad(where):
    a, b = leaf(), leaf()
    a.grad = ag.tensor(np.full(3, 7.0))
    y = a * b
    z = (y * 2).sum() + b.sum()
    if where == "leaf":
        b.register_hook(_raise)
    elif where == "non-leaf":
        y.register_hook(_raise)
    elif where == "prehook":
        y.grad_fn.register_prehook(_raise)
    else:
        y.grad_fn.register_hook(_raise)
    with pytest.raises(HookFailed) as caught:
        z.backward()
    assert any("during backward" in note for note in caught.value.__notes__)
    np.testing.assert_array_equal(grad_of(a), [7, 7, 7])
    assert b.grad is None


async def test_a_raising_async_hook_fails_an_async_pass_and_changes_no_grad():
    a = leaf()

    async def fail(g):
        await trio.sleep(0)
        raise HookFailed("later")

    (y := a * 2).register_hook(fail)
    with pytest.raises(HookFailed):
        await ag.backward(y.sum())
    assert a.grad is None
