"""Graph-API behaviour that differed from PyTorch's, found by running the same scenarios in both: which error an
output that does not require grad gets, grad_outputs whose complexness differs from their output's, the legacy
`Variable(..., volatile=True)`, and nested `allow_mutation_on_saved_tensors` blocks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import Variable
from actorgrad.autograd.graph import allow_mutation_on_saved_tensors

NO_GRAD_FN = "element {} of tensors does not require grad and does not have a grad_fn"
COMPLEX_MISMATCH = (
    r"For complex Tensors, both grad_output and output are required to have the same dtype. Mismatch in dtype: "
    r"grad_output\[0\] has a dtype of actorgrad.{} and output\[0\] has a dtype of actorgrad.{}."
)


# -- outputs that do not require grad: the missing grad_fn is the error, whatever their shape or dtype ---------
@pytest.mark.parametrize("output", [
    lambda: ag.tensor([1.0, 2.0]) * 2,  # not a scalar: no implicit gradient either, but that is not the problem
    lambda: ag.tensor([1, 2]).sum(),  # an integer scalar
    lambda: ag.tensor([1, 2]),
])
def test_backward_of_an_output_without_grad_fn_says_so(output):
    with pytest.raises(RuntimeError, match=NO_GRAD_FN.format(0)):
        output().backward()
    with pytest.raises(RuntimeError, match=NO_GRAD_FN.format(0)):
        ag.autograd.grad(output(), ag.tensor([1.0], requires_grad=True))


def test_the_error_names_the_output_without_grad_fn():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=NO_GRAD_FN.format(1)):
        ag.autograd.backward([(x * 2).sum(), ag.tensor([3.0, 4.0]) * 2])
    assert x.grad is None


def test_a_non_scalar_output_that_requires_grad_still_needs_its_gradient():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()


# -- grad_outputs: real for a complex output or complex for a real one is refused, not cast -------------------
def test_a_real_gradient_for_a_complex_output_is_refused():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * (1 + 1j)
    with pytest.raises(RuntimeError, match=COMPLEX_MISMATCH.format("float32", "complex64")):
        ag.autograd.grad(y, x, ag.ones(2))
    with pytest.raises(RuntimeError, match=COMPLEX_MISMATCH.format("float32", "complex64")):
        y.backward(ag.ones(2))
    assert x.grad is None


def test_a_complex_gradient_for_a_real_output_is_refused_rather_than_dropping_its_imaginary_part():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # it used to be cast, with numpy's ComplexWarning
        with pytest.raises(RuntimeError, match=COMPLEX_MISMATCH.format("complex64", "float32")):
            ag.autograd.grad(x * 2, x, ag.tensor([1 + 5j, 2 - 1j]))


def test_gradients_of_the_same_kind_are_still_cast_to_the_output_dtype():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    c = 2 - 3j
    g = np.array([1 + 2j, -1 + 0.5j])
    y = x * c  # complex64
    (got,) = ag.autograd.grad(y, x, ag.tensor(g, dtype=ag.complex128))
    # x is real: its gradient is the real part of grad_output * conj(dy/dx)
    assert got.dtype == ag.float32
    np.testing.assert_allclose(got.numpy(), (g * np.conj(c)).real, rtol=1e-6)
    (got,) = ag.autograd.grad(x * 3, x, ag.tensor([1.0, 2.0], dtype=ag.float64))
    assert got.dtype == ag.float32 and got.tolist() == [3.0, 6.0]


# -- Variable(data, requires_grad, volatile) -----------------------------------------------------------------
VOLATILE = "volatile was removed and now has no effect"


@pytest.mark.parametrize("make", [
    lambda t: Variable(t, volatile=True),
    lambda t: Variable(t, False, True),
])
def test_a_volatile_variable_is_a_detached_leaf_with_a_warning(make):
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=VOLATILE):
        v = make(x * 3)
    assert v.is_leaf and not v.requires_grad and v.grad_fn is None
    assert v.tolist() == [3.0, 6.0]


def test_a_variable_is_not_volatile_by_default():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = Variable(ag.tensor([1.0]), requires_grad=True, volatile=False)
    assert v.requires_grad


def test_a_variable_cannot_be_volatile_and_require_grad():
    with pytest.warns(UserWarning, match=VOLATILE):
        with pytest.raises(ValueError, match="Variable can't be volatile and require_grad at the same time!"):
            Variable(ag.tensor([1.0]), requires_grad=True, volatile=True)


# -- allow_mutation_on_saved_tensors blocks cannot nest ------------------------------------------------------
def test_allow_mutation_blocks_cannot_be_nested():
    with allow_mutation_on_saved_tensors():
        with pytest.raises(RuntimeError, match="allow_mutation_on_saved_tensors contexts cannot be nested"):
            with allow_mutation_on_saved_tensors():
                pass
        x = ag.tensor([0.5, -1.5], dtype=ag.float64, requires_grad=True)
        y = x.clone()
        z = (y * y).sum()  # saves y
        y.mul_(4)
        z.backward()  # the refused inner block left the outer one working: backward uses y as saved
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([0.5, -1.5]))
    with allow_mutation_on_saved_tensors():  # and one may open again after it has closed
        pass


# -- the same on cuda:0 (through the CuPy stand-in where there is no device) ---------------------------------
@pytest.mark.gpu
def test_output_and_grad_output_checks_on_cuda(cupy):
    cuda = ag.device("cuda:0")
    with pytest.raises(RuntimeError, match=NO_GRAD_FN.format(0)):
        (ag.tensor([1.0, 2.0], device=cuda) * 2).backward()
    x = ag.tensor([1.0, 2.0], device=cuda, requires_grad=True)
    with pytest.raises(RuntimeError, match=COMPLEX_MISMATCH.format("float32", "complex64")):
        ag.autograd.grad(x * (1 + 1j), x, ag.ones(2, device=cuda))
    (got,) = ag.autograd.grad(x * 3, x, ag.tensor([1.0, 2.0], dtype=ag.float64, device=cuda))
    assert got.device is cuda and got.tolist() == [3.0, 6.0]
