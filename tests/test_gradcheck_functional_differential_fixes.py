"""gradcheck refuses results it could not check instead of passing them, and says how to allow nondeterminism.

Found by comparing with PyTorch: a function returning a nested tuple, or None, passed gradcheck without a single
Jacobian being compared (PyTorch fails on both)."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import GradcheckError, gradcheck
from actorgrad.ops.record import Rule, record

# d(x*x)/dx is 2x; this rule says 2.5x, so any check that compares it must fail.
WRONG_SQUARE = Rule("SquareBackward", (("self",), lambda ops, g, self: g * 2.5 * self))


def _wrong_square(x):
    return record(WRONG_SQUARE, x._data * x._data, (x,))


def _leaf(device="cpu"):
    values = np.random.default_rng(0).uniform(0.5, 1.5, (2, 3))
    return ag.tensor(values, dtype=ag.float64, requires_grad=True, device=device)


@pytest.mark.parametrize("nest", [lambda y: ((y,),), lambda y: (y * 1, [y]), lambda y: ({"out": y},)])
def test_a_nested_output_is_refused_rather_than_left_unchecked(nest):
    with pytest.raises(TypeError, match="flat tuple of Tensors"):
        gradcheck(lambda x: nest(_wrong_square(x)), (_leaf(),), raise_exception=False)


def test_a_function_returning_none_is_refused():
    with pytest.raises(TypeError, match="returned a NoneType; it must return a Tensor or a tuple of Tensors"):
        gradcheck(lambda x: None, (_leaf(),))


def test_a_flat_tuple_with_the_wrong_gradient_is_still_caught():
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 1 with respect to input 0"):
        gradcheck(lambda x: (x.sin(), _wrong_square(x)), (_leaf(),))


def test_a_nondeterministic_backward_is_told_about_nondet_tol():
    calls = iter(range(1, 1000))

    def drifting(ops, g, self):  # off by a relative 1e-12 * call number: the two analytical Jacobians differ
        return g * (2 + next(calls) * 1e-12) * self

    def square(x):
        return record(Rule("DriftingSquareBackward", (("self",), drifting)), x._data * x._data, (x,))

    with pytest.raises(GradcheckError, match=r"(?s)not reentrant.*nondet_tol=<tol>"):
        gradcheck(square, (_leaf(),))
    assert gradcheck(square, (_leaf(),), nondet_tol=1e-6)


@pytest.mark.gpu
def test_a_nested_output_of_a_cuda_function_is_refused(cupy):
    with pytest.raises(TypeError, match="flat tuple of Tensors"):
        gradcheck(lambda x: ((x * x,),), (_leaf("cuda"),))
