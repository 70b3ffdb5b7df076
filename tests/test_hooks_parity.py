"""Hooks against PyTorch 2.13 where gradient arrays are shared and views are written in place: a hook that changes
its gradient in place changes it for the consumers that run after it, never for a `.grad` or retained gradient
taken before it; a hook registered on a view before an in-place write through it does not run for that write.
The expected numbers are PyTorch's, on the same programs."""

import numpy as np

import actorgrad as ag


def vec(*values, requires_grad=False):
    return ag.tensor(np.array(values), requires_grad=requires_grad)


def assert_grads(*pairs):
    for t, expected in pairs:
        np.testing.assert_array_equal(t.grad.numpy(), expected)


# -- a hook that changes a shared gradient in place ------------------------------------------------------------
# In `c = x + b` AddBackward0 hands one array to both inputs. x's accumulator runs first; b's hook then doubles the
# array in place.
def test_a_hook_changing_a_shared_gradient_in_place_leaves_a_leaf_that_accumulated_it_before_alone():
    x, w = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0, requires_grad=True)
    b = w * 3
    c = x + b
    b.register_hook(lambda g: g.mul_(2))
    c.backward(ag.ones(2))
    assert_grads((x, [1, 1]), (w, [6, 6]))


def test_a_hook_changing_a_shared_gradient_in_place_leaves_a_held_grad_it_was_added_to_alone():
    x, w = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0, requires_grad=True)
    x.grad = vec(10.0, 10.0)
    b = w * 3
    c = x + b
    b.register_hook(lambda g: g.mul_(2))
    c.backward(ag.ones(2))
    assert_grads((x, [11, 11]), (w, [6, 6]))


def test_a_hook_on_a_leaf_changing_a_shared_gradient_in_place_leaves_the_other_leaf_alone():
    x, w = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0, requires_grad=True)
    c = x + w
    w.register_hook(lambda g: g.mul_(2))
    c.backward(ag.ones(2))
    assert_grads((x, [1, 1]), (w, [2, 2]))


def test_a_gradient_retained_before_a_hook_changes_it_in_place_keeps_its_value():
    x, w = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0, requires_grad=True)
    b = w * 3
    a = x * 2  # made after b: its node runs first and retains the shared array
    a.retain_grad()
    c = a + b
    b.register_hook(lambda g: g.mul_(2))
    c.backward(ag.ones(2))
    assert_grads((a, [1, 1]), (x, [2, 2]), (w, [6, 6]))


def test_consumers_that_run_after_a_hook_see_its_in_place_change():
    x, w = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0, requires_grad=True)
    a = x * 2
    b = w * 3  # made after a: its hook runs first, and a's node, and a's retained gradient, get the doubled array
    a.retain_grad()
    c = a + b
    b.register_hook(lambda g: g.mul_(2))
    c.backward(ag.ones(2))
    assert_grads((a, [2, 2]), (x, [4, 4]), (w, [6, 6]))


def test_a_node_prehook_changing_a_shared_gradient_in_place_leaves_an_accumulated_leaf_alone():
    x, w = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0, requires_grad=True)
    b = w * 3
    c = x + b

    def double_first(grads):
        grads[0].mul_(2)

    b.grad_fn.register_prehook(double_first)
    c.backward(ag.ones(2))
    assert_grads((x, [1, 1]), (w, [6, 6]))


def test_a_hook_changing_a_shared_gradient_in_place_leaves_an_accumulated_leaf_alone_with_create_graph():
    x, w = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0, requires_grad=True)
    b = w * 3
    c = x + b
    b.register_hook(lambda g: g.mul_(2))
    c.backward(ag.ones(2), create_graph=True)
    assert_grads((x, [1, 1]), (w, [6, 6]))


async def test_an_async_hook_changing_a_shared_gradient_in_place_leaves_an_accumulated_leaf_alone():
    x, w = vec(1.0, 2.0, requires_grad=True), vec(3.0, 4.0, requires_grad=True)
    b = w * 3
    c = x + b

    async def double(g):
        g.mul_(2)

    b.register_hook(double)
    await ag.backward(c, ag.ones(2))
    assert_grads((x, [1, 1]), (w, [6, 6]))


def test_a_hook_changing_the_callers_output_gradient_in_place_changes_it_for_later_consumers():
    x = vec(1.0, 2.0, requires_grad=True)
    y, z = x * 2, x * 3
    y.register_hook(lambda g: g.mul_(2))  # y's node runs after z's, which took the seed as given
    seed = vec(1.0, 1.0)
    ag.autograd.backward([y, z], [seed, seed])
    assert_grads((x, [7, 7]))
    np.testing.assert_array_equal(seed.numpy(), [2, 2])  # PyTorch hands the caller's tensor on as it is


# -- a hook on a view written in place -------------------------------------------------------------------------
def weights4():
    return vec(1.0, 10.0, 100.0, 1000.0)


def test_a_hook_on_a_view_does_not_run_for_an_in_place_write_through_it():
    x = vec(1.0, 2.0, 3.0, 4.0, requires_grad=True)
    y = x * 1
    v = y[:2]
    seen = []
    v.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 0)
    v.mul_(3)
    (y * weights4()).sum().backward()
    assert seen == []
    assert_grads((x, [3, 30, 100, 1000]))


def test_a_hook_on_a_view_sees_only_what_uses_made_before_the_write_send_it():
    x = vec(1.0, 2.0, 3.0, 4.0, requires_grad=True)
    y = x * 1
    v = y[:2]
    seen = []
    v.register_hook(lambda g: seen.append(g.numpy().copy()))
    earlier = v * 5
    v.mul_(3)
    ((y * weights4()).sum() + earlier.sum()).backward()
    np.testing.assert_array_equal(seen, [[5, 5]])
    assert_grads((x, [8, 35, 100, 1000]))


def test_a_hook_on_a_view_of_a_view_does_not_run_for_a_write_through_it():
    x = ag.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
    y = x * 1
    v = y.t()[0]
    seen = []
    v.register_hook(seen.append)
    v.mul_(3)
    (y * ag.tensor(np.array([[1.0, 10.0], [100.0, 1000.0]]))).sum().backward()
    assert seen == []
    assert_grads((x, [[3, 10], [300, 1000]]))


def test_a_hook_on_a_view_does_not_run_for_a_setitem_through_it():
    x = vec(1.0, 2.0, 3.0, 4.0, requires_grad=True)
    y = x * 1
    v = y[:2]
    seen = []
    v.register_hook(seen.append)
    v[0] = 7.0
    (y * weights4()).sum().backward()
    assert seen == []
    assert_grads((x, [0, 10, 100, 1000]))


def test_a_hook_registered_between_two_writes_through_a_view_runs_for_neither():
    x = vec(1.0, 2.0, 3.0, 4.0, requires_grad=True)
    y = x * 1
    v = y[:2]
    seen = []
    v.register_hook(seen.append)
    v.mul_(3)
    v.register_hook(seen.append)
    v.mul_(2)
    (v * vec(1.0, 10.0)).sum().backward()
    assert seen == []
    assert_grads((x, [6, 60, 0, 0]))


def test_a_zeroing_hook_on_a_view_leaves_the_gradient_of_a_tensor_added_into_it():
    x, z = vec(1.0, 2.0, 3.0, 4.0, requires_grad=True), vec(5.0, 6.0, requires_grad=True)
    y = x * 1
    v = y[:2]
    v.register_hook(lambda g: g * 0)
    v.add_(z)
    (y * weights4()).sum().backward()
    assert_grads((x, [1, 10, 100, 1000]), (z, [1, 10]))


def test_a_hook_on_a_tensor_that_is_no_view_runs_for_its_in_place_change_with_the_gradient_before_it():
    x = vec(1.0, 2.0, requires_grad=True)
    y = x * 1
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    y.mul_(3)
    (y * vec(1.0, 10.0)).sum().backward()
    np.testing.assert_array_equal(seen, [[3, 30]])
    assert_grads((x, [3, 30]))


def test_retain_grad_on_a_view_written_in_place_follows_the_view():
    x = vec(1.0, 2.0, 3.0, 4.0, requires_grad=True)
    y = x * 1
    v = y[:2]
    v.retain_grad()
    v.mul_(3)
    (y * weights4()).sum().backward(retain_graph=True)  # the view's new history is not on this path
    assert v.grad is None
    (v * vec(1.0, 10.0)).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [1, 10])


def test_a_post_accumulate_grad_hook_on_a_leaf_changed_in_place_without_grad_runs():
    x = vec(1.0, 2.0, requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    with ag.no_grad():
        x[:1].mul_(5)
    (x * vec(1.0, 10.0)).sum().backward()
    np.testing.assert_array_equal(seen, [[1, 10]])
    assert_grads((x, [1, 10]))


def test_a_custom_backward_changing_its_gradient_in_place_leaves_staged_leaf_grads_alone():
    class Doubled(ag.autograd.Function):
        @staticmethod
        def forward(ctx, w):
            return w * 1

        @staticmethod
        def backward(ctx, g):
            g.mul_(2)
            return g

    x = ag.tensor([1.0, 2.0], requires_grad=True)
    w = ag.tensor([3.0, 4.0], requires_grad=True)
    (x + Doubled.apply(w)).backward(ag.ones(2))
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])  # torch 2.13: [1., 1.]
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0])
