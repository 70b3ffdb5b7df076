"""autograd.function.InplaceFunction: PyTorch's legacy base for Functions with an `inplace` flag."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd.function import InplaceFunction


class Negate(InplaceFunction):
    @staticmethod
    def forward(ctx, x, inplace=False):
        if inplace:
            ctx.mark_dirty(x)
            return x.neg_()
        return x.neg()

    @staticmethod
    def backward(ctx, g):
        return -g, None


def test_an_instance_carries_the_flag_with_pytorchs_warning_and_refuses_to_be_called():
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        fn = Negate(inplace=True)
    assert fn.inplace is True
    assert ag.autograd.InplaceFunction is InplaceFunction
    with pytest.raises(RuntimeError, match="^Legacy autograd function with non-static forward method is deprecated"):
        fn(ag.ones(2))


@pytest.mark.parametrize("inplace", [False, True])
def test_apply_runs_in_place_or_not_with_the_right_gradient(inplace):
    x = ag.tensor([1.0, -2.0, 3.0], requires_grad=True)
    a = x * 2.0
    y = Negate.apply(a, inplace)
    assert (y is a) == inplace and y.grad_fn.name() == "NegateBackward"
    np.testing.assert_allclose(y.detach().numpy(), [-2.0, 4.0, -6.0])
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 8 * np.array([1.0, -2.0, 3.0]))
