"""Custom Functions in PyTorch 2's style: `forward(*args)` without ctx, and `setup_context(ctx, inputs, output)`."""

from __future__ import annotations

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.autograd import Function, gradcheck, gradgradcheck, once_differentiable

TOLERANCES = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}


def leaf(shape, seed=0):
    return ag.tensor(np.random.default_rng(seed).uniform(0.5, 1.5, shape), dtype=ag.float64, requires_grad=True)


class Cube(Function):
    """x**3, whose backward reads x and the output saved by setup_context and records, so it differentiates again."""

    @staticmethod
    def forward(x):
        return x * x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x, output)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * 3 * y / x


class Affine(Function):
    """a * x + b with a Python number a (given a default) and a tensor b that may be passed by keyword."""

    @staticmethod
    def forward(x, b, a=2.0):
        return x * a + b

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.inputs = inputs
        ctx.needs = ctx.needs_input_grad
        ctx.grad_mode = ag.is_grad_enabled()
        ctx.a = inputs[2]

    @staticmethod
    def backward(ctx, g):
        return g * ctx.a, g, None


def test_gradients_and_second_derivatives_match_finite_differences():
    x = leaf((3, 2))
    assert gradcheck(Cube.apply, (x,), **TOLERANCES)
    assert gradgradcheck(Cube.apply, (x,), **TOLERANCES)
    b = leaf((2,), 1)
    assert gradcheck(lambda x, b: Affine.apply(x, b, 0.5), (x, b), **TOLERANCES)


def test_create_graph_differentiates_a_backward_made_of_recorded_ops():
    x = leaf((3,))
    (g,) = ag.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    assert g.grad_fn is not None
    np.testing.assert_allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2)
    (gg,) = ag.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * x.detach().numpy())


def test_setup_context_gets_the_positional_inputs_with_defaults_filled_in_under_no_grad():
    x, b = leaf((2,)), ag.tensor([1.0, 1.0], dtype=ag.float64)
    y = Affine.apply(x, b=b)
    ctx = y.grad_fn
    assert isinstance(ctx.inputs, tuple) and len(ctx.inputs) == 3
    assert ctx.inputs[0] is x and ctx.inputs[1] is b and ctx.inputs[2] == 2.0
    assert ctx.needs == (True, False, False) and ctx.grad_mode is False
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_a_tensor_passed_by_keyword_is_an_input_and_gets_its_gradient():
    x, b = leaf((2,)), leaf((2,), 1)
    Affine.apply(x, a=3.0, b=b).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0] and b.grad.tolist() == [1.0, 1.0]


def test_setup_context_runs_when_no_input_requires_grad():
    y = Affine.apply(ag.tensor([1.0]), ag.tensor([0.0]))
    assert y.grad_fn is None and y.tolist() == [2.0]
    with ag.no_grad():
        assert Affine.apply(leaf((1,)), ag.tensor([0.0])).grad_fn is None


def test_backward_must_return_a_gradient_for_each_input_defaults_included():
    class Scale(Function):
        @staticmethod
        def forward(x, scale=2.0):
            return x * scale

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.scale = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.scale

    with pytest.raises(RuntimeError, match=r"function ScaleBackward returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)"):
        Scale.apply(leaf((2,))).sum().backward()


class SumAndDifference(Function):
    @staticmethod
    def forward(a, b):
        return a + b, a - b

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.output_type = type(output)
        ctx.set_materialize_grads(False)

    @staticmethod
    def backward(ctx, g_sum, g_diff):
        ctx.seen = (g_sum, g_diff)
        g_sum, g_diff = (0.0 if g is None else g for g in (g_sum, g_diff))
        return g_sum + g_diff, g_sum - g_diff


def test_multiple_outputs_come_as_a_tuple_and_set_materialize_grads_works_from_setup_context():
    a, b = leaf((2,)), leaf((2,), 1)
    s, d = SumAndDifference.apply(a, b)
    assert s.grad_fn is d.grad_fn and s.grad_fn.output_type is tuple
    (s * 2).sum().backward()
    assert s.grad_fn.seen[1] is None
    assert a.grad.tolist() == [2.0, 2.0] and b.grad.tolist() == [2.0, 2.0]
    assert gradcheck(SumAndDifference.apply, (a, b), **TOLERANCES)


def test_mark_dirty_from_setup_context_rebases_the_input_and_refuses_a_leaf():
    class DoubleInPlace(Function):
        @staticmethod
        def forward(x):
            x.mul_(2)
            return x

        @staticmethod
        def setup_context(ctx, inputs, output):
            assert output is inputs[0]
            ctx.mark_dirty(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = leaf((2,))
    b = a * 1
    c = DoubleInPlace.apply(b)
    assert c is b and c.grad_fn.name() == "DoubleInPlaceBackward"
    c.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place "
                                           "operation."):
        DoubleInPlace.apply(leaf((2,)))


def test_mark_non_differentiable_from_setup_context():
    class SortedWithIndex(Function):
        @staticmethod
        def forward(x):
            return x * 1, x * 0

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_non_differentiable(output[1])

        @staticmethod
        def backward(ctx, g, g_flag):
            ctx.g_flag = g_flag
            return g

    x = leaf((2,))
    y, flag = SortedWithIndex.apply(x)
    assert y.requires_grad and not flag.requires_grad and flag.grad_fn is None
    y.sum().backward()
    assert y.grad_fn.g_flag.tolist() == [0.0, 0.0]


def test_save_for_backward_from_setup_context_refuses_non_tensors_and_is_freed_after_backward():
    class SaveNumber(Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(3)

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="save_for_backward can only save variables, but argument 0 is of type int"):
        SaveNumber.apply(leaf((2,)))
    y = Cube.apply(leaf((2,)))
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        _ = y.grad_fn.saved_tensors


def test_save_for_forward_keeps_tensors_and_refuses_other_values():
    class Saver(Function):
        @staticmethod
        def forward(x, extra):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(inputs[0], None, *([] if inputs[1] is None else [inputs[1]]))

        @staticmethod
        def backward(ctx, g):
            return g * 2, None

    x = leaf((2,))
    assert Saver.apply(x, None).grad_fn.saved_for_forward == (x, None)
    with pytest.raises(AssertionError, match="save_for_forward expects all arguments to be tensors; you should "
                                             "save non-tensors as attributes on ctx."):
        Saver.apply(x, 3)


def test_a_forward_that_still_takes_ctx_misses_an_argument():
    class OldForward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="missing a required argument: 'x'"):
        OldForward.apply(leaf((2,)))


def test_missing_forward_or_backward_raise_pytorchs_errors():
    class NoForward(Function):
        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

    class NoBackward(Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

    with pytest.raises(NotImplementedError, match="You must implement the forward function for custom "
                                                  "autograd.Function."):
        NoForward.apply(leaf((2,)))
    with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method for your "
                                                  "custom autograd.Function to use it with backward mode AD."):
        NoBackward.apply(leaf((2,))).sum().backward()
    with pytest.raises(NotImplementedError, match="setup_context is not implemented."):
        Function.setup_context(None, (), None)


def test_once_differentiable_backward_with_setup_context_refuses_a_second_derivative():
    class Once(Function):
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x

    x = leaf((2,))
    seed = ag.tensor(np.ones(2), dtype=ag.float64, requires_grad=True)
    (g,) = ag.autograd.grad(Once.apply(x), x, seed, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 2 * x.detach().numpy())
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                           "@once_differentiable"):
        g.sum().backward()


class SlowScale(Function):
    @staticmethod
    def forward(x, delay):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.delay = inputs[1]

    @staticmethod
    async def backward(ctx, g):
        await trio.sleep(ctx.delay)
        return g * 2, None


def test_async_backward_with_setup_context_runs_in_a_sync_backward():
    x = leaf((2,))
    (SlowScale.apply(x, 0.001) * 3).sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]


async def test_async_backward_with_setup_context_runs_in_a_trio_pass():
    x = leaf((2,))
    (g,) = await ag.grad(SlowScale.apply(x, 0.001).sum(), x)
    assert g.tolist() == [2.0, 2.0]
