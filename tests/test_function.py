"""Custom autograd Functions: ctx, gradients checked against the inputs, async backward, once_differentiable."""

from __future__ import annotations

import numpy as np
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import actorgrad as ag
from actorgrad.autograd import Function, GradcheckError, gradcheck, gradgradcheck, once_differentiable

TOLERANCES = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}


def leaf(shape, seed=0):
    return ag.tensor(np.random.default_rng(seed).uniform(0.5, 1.5, shape), dtype=ag.float64, requires_grad=True)


class ScaledCube(Function):
    """x**3 * k for a Python number k; backward made of recorded ops, so it differentiates again."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * x * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x * ctx.k, None


class WrongCube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x * x


class SumAndDifference(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b, a - b

    @staticmethod
    def backward(ctx, g_sum, g_diff):
        return g_sum + g_diff, g_sum - g_diff


values = hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=4),
                    elements=st.floats(0.5, 2.0))


@settings(max_examples=10, deadline=None, database=None)
@given(values)
def test_gradcheck_and_gradgradcheck_pass_on_a_good_function(x):
    t = ag.tensor(x, requires_grad=True)
    assert gradcheck(lambda a: ScaledCube.apply(a, 2.5), (t,), **TOLERANCES)
    assert gradgradcheck(lambda a: ScaledCube.apply(a, 2.5), (t,), **TOLERANCES)
    np.testing.assert_allclose(ScaledCube.apply(t, 2.5).detach().numpy(), x**3 * 2.5)


def test_gradcheck_fails_on_a_wrong_function():
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(WrongCube.apply, (leaf((3,)),), **TOLERANCES)
    assert not gradcheck(WrongCube.apply, (leaf((3,)),), raise_exception=False, **TOLERANCES)


def test_node_is_named_after_the_function_and_is_the_ctx():
    x = leaf((2,))
    y = ScaledCube.apply(x, 2.0)
    assert y.grad_fn.name() == "ScaledCubeBackward"
    assert y.grad_fn.k == 2.0 and y.grad_fn.saved_tensors[0] is x
    assert y.grad_fn.next_functions[0][0].variable is x and len(y.grad_fn.next_functions) == 1  # tensor inputs only


def test_multiple_outputs_each_get_their_slot_and_missing_ones_are_zeros():
    a, b = leaf((3,), 1), leaf((3,), 2)
    s, d = SumAndDifference.apply(a, b)
    assert s.grad_fn is d.grad_fn and (s._output_nr, d._output_nr) == (0, 1)
    (s * 2 + d * 5).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full(3, 7.0))
    np.testing.assert_allclose(b.grad.numpy(), np.full(3, -3.0))
    seen = []

    class Record(Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g0, g1):
            seen.append(g1 if g1 is None else g1.numpy().copy())
            return g0 * 2, None

    for materialize in (True, False):
        out, _ = Record.apply(leaf((2,)), materialize)
        out.sum().backward()
    np.testing.assert_array_equal(seen[0], np.zeros(2))
    assert seen[1] is None


def test_non_tensor_args_get_none_and_needs_input_grad_says_which_inputs_need_one():
    seen = {}

    class Mixed(Function):
        @staticmethod
        def forward(ctx, x, k, y, *, offset=0.0):
            seen["needs"] = ctx.needs_input_grad
            return x * k + y + offset

        @staticmethod
        def backward(ctx, g):
            return g * 4, None, g

    x = leaf((2,))
    y = ag.tensor(np.ones(2))  # does not require grad: its gradient is dropped
    Mixed.apply(x, 4, y, offset=1.0).sum().backward()
    assert seen["needs"] == (True, False, False)
    np.testing.assert_allclose(x.grad.numpy(), np.full(2, 4.0))
    assert y.grad is None
    with ag.no_grad():
        out = Mixed.apply(x, 4, y)
    assert out.grad_fn is None and seen["needs"] == (True, False, False)  # as PyTorch: requires_grad, not the mode


def test_saved_tensors_are_freed_by_a_non_retained_backward():
    x = leaf((2,))
    y = ScaledCube.apply(x, 1.0)
    y.sum().backward(retain_graph=True)
    assert y.grad_fn.saved_tensors[0] is x
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        _ = y.grad_fn.saved_tensors


def test_wrong_number_of_gradients_names_the_function():
    class TooFew(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return (g,)

    with pytest.raises(RuntimeError, match=r"function TooFewBackward returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)"):
        TooFew.apply(leaf((2,)), leaf((2,))).sum().backward()


def test_extra_trailing_none_gradients_are_accepted():
    class Extra(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    x = leaf((2,))
    Extra.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(2, 2.0))


def test_wrong_gradient_shape_names_the_function_and_the_input():
    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return ag.tensor(np.ones(3))

    x = leaf((2, 3))
    with pytest.raises(RuntimeError, match=r"Function BadShapeBackward returned an invalid gradient at index 0 - "
                                           r"got \[3\] but expected shape compatible with \[2, 3\]"):
        BadShape.apply(x).sum().backward()
    assert x.grad is None


def test_a_broadcast_gradient_is_summed_to_the_input_shape_and_cast_to_its_dtype():
    class Wide(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return ag.tensor(np.ones((4, 2, 3)), dtype=ag.float32)

    x = leaf((2, 3))
    Wide.apply(x).sum().backward()
    assert x.grad.dtype == ag.float64
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 4.0))


def test_a_non_tensor_gradient_is_refused():
    class Number(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 3

    with pytest.raises(RuntimeError, match="NumberBackward returned a gradient of type int at index 0"):
        Number.apply(leaf((2,))).sum().backward()


def test_mark_dirty_rebases_the_modified_tensor_and_refuses_a_leaf():
    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            x._data *= 2
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf((2,))
    h = x * 1
    out = Double.apply(h)
    assert out is h and h.grad_fn.name() == "DoubleBackward"
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(2, 2.0))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place"):
        Double.apply(leaf((2,)))


def test_an_input_returned_as_is_becomes_a_new_tensor_with_the_node():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = leaf((2,))
    y = Identity.apply(x)
    assert y is not x and y.grad_fn.name() == "IdentityBackward" and x.grad_fn is None
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(2, 3.0))


def test_non_differentiable_outputs_do_not_require_grad():
    class WithIndex(Function):
        @staticmethod
        def forward(ctx, x):
            index = ag.tensor(np.float64(np.argmax(x.detach().numpy())))
            ctx.mark_non_differentiable(index)
            return x * 2, index

        @staticmethod
        def backward(ctx, g, g_index):
            assert not g_index.numpy().any()
            return g * 2

    x = leaf((3,))
    out, index = WithIndex.apply(x)
    assert out.requires_grad and not index.requires_grad and index.grad_fn is None
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.0))


def test_integer_outputs_get_no_history():
    class Argmax(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1, ag.tensor(np.argmax(x.detach().numpy()))

        @staticmethod
        def backward(ctx, g, g_index):
            return g

    values, index = Argmax.apply(leaf((3,)))
    assert values.grad_fn.name() == "ArgmaxBackward" and index.grad_fn is None and not index.requires_grad


def test_backward_records_only_with_create_graph():
    modes = []

    class Watch(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            modes.append(ag.is_grad_enabled())
            return g * 2

    x = leaf((2,))
    Watch.apply(x).sum().backward()
    (g,) = ag.autograd.grad(Watch.apply(x).sum(), x, create_graph=True)
    assert modes == [False, True]


def test_once_differentiable_raises_when_differentiated_twice():
    class Once(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not ag.is_grad_enabled()
            return g * 2 * x

    x = leaf((2,))
    (g,) = ag.autograd.grad(Once.apply(x).sum(), x)
    np.testing.assert_allclose(g.numpy(), 2 * x.detach().numpy())
    seed = ag.tensor(np.ones(2), dtype=ag.float64, requires_grad=True)
    (g,) = ag.autograd.grad(Once.apply(x), x, seed, create_graph=True)
    assert g.grad_fn.name() == "DelayedError"
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                           "@once_differentiable"):
        g.sum().backward()


class SlowDouble(Function):
    """An async backward that waits before answering (another device, I/O)."""

    @staticmethod
    def forward(ctx, x, delay):
        ctx.delay = delay
        return x * 2

    @staticmethod
    async def backward(ctx, g):
        await trio.sleep(ctx.delay)
        return g * 2, None


def test_async_backward_runs_in_a_sync_backward():
    x = leaf((2,))
    (SlowDouble.apply(x, 0.001) * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(2, 6.0))


async def test_async_backward_does_not_hold_up_a_concurrent_pass():
    slow_leaf, fast_leaf = leaf((2,), 1), leaf((2,), 2)
    slow_loss = (SlowDouble.apply(slow_leaf, 0.05) * 3).sum()
    fast_loss = fast_leaf
    for _ in range(200):
        fast_loss = fast_loss * 1.0
    fast_loss = fast_loss.sum()
    finished = []

    async def run(name, loss):
        await ag.backward(loss)
        finished.append(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run, "slow", slow_loss)
        nursery.start_soon(run, "fast", fast_loss)
    assert finished == ["fast", "slow"]
    np.testing.assert_allclose(slow_leaf.grad.numpy(), np.full(2, 6.0))
    np.testing.assert_allclose(fast_leaf.grad.numpy(), np.ones(2))


async def test_async_backward_error_propagates_and_commits_nothing():
    class Broken(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        async def backward(ctx, g):
            await trio.sleep(0)
            raise ValueError("device went away")

    x = leaf((2,))
    with pytest.raises(ValueError, match="device went away") as info:
        await ag.backward((Broken.apply(x) + x).sum())
    assert any("BrokenBackward" in note for note in info.value.__notes__)
    assert x.grad is None


async def test_async_backward_is_cancelled_with_its_pass():
    started, stopped = trio.Event(), []

    class Hang(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        async def backward(ctx, g):
            started.set()
            try:
                await trio.sleep_forever()
            finally:
                stopped.append(True)

    x = leaf((2,))
    with trio.move_on_after(5) as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ag.backward, Hang.apply(x).sum())
            await started.wait()
            nursery.cancel_scope.cancel()
    assert not scope.cancelled_caught
    await trio.sleep(0.01)
    assert stopped == [True] and x.grad is None


def test_function_instances_warn_and_apply_on_the_base_class_is_refused():
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        fn = ScaledCube()
    with pytest.raises(RuntimeError, match="^Legacy autograd function with non-static forward method"):
        fn(leaf((1,)))
    with pytest.raises(NotImplementedError, match="You must implement the forward function"):
        Function.apply(leaf((1,)))


class _Product(ag.autograd.Function):
    @staticmethod
    def forward(ctx, x, y=None):
        return x * y

    @staticmethod
    def backward(ctx, g):
        return g * 2, g * 3


def test_a_tensor_passed_to_apply_by_keyword_is_an_input_too():
    x = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    z = ag.tensor([3.0, 4.0], dtype=ag.float64, requires_grad=True)
    _Product.apply(x, y=z).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0] and z.grad.tolist() == [3.0, 3.0]


class _Scaled(ag.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g, g


def test_a_gradient_for_an_input_that_is_not_a_tensor_is_refused():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2, but the "
                                           "corresponding forward input was not a Variable"):
        _Scaled.apply(x, 3.0).sum().backward()


class _Passthrough(ag.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.seen = ctx.needs_input_grad
        ctx.mark_non_differentiable(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def test_needs_input_grad_follows_requires_grad_and_a_returned_input_may_be_non_differentiable():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with ag.no_grad():
        _Passthrough.apply(x)
    y = _Passthrough.apply(x)
    assert not y.requires_grad and y.grad_fn is None


def test_vjp_is_backward_by_another_name_and_defining_both_is_refused_at_backward():
    class Tripled(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def vjp(ctx, g):
            return g * 3

    x = leaf((2,))
    Tripled.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])

    class Both(Tripled):
        @staticmethod
        def backward(ctx, g):
            return g * 3

    y = Both.apply(x).sum()
    with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp' for a custom Function is not"):
        y.backward()
