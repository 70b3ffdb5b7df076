"""Custom Functions where actorgrad differed from PyTorch: the dtypes a backward's gradients may have (a complex
gradient for a real input is refused, not cast to its real part), instances of a Function (PyTorch's deprecation
warning, then its legacy-call error), and `apply` called on the base class."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import Function

X = np.array([0.5, -1.25, 2.0])


def _returning(gradient):
    """A Function doubling its input whose backward returns gradient(g) for it."""

    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return gradient(g)

    return Double


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("make", [
    lambda g: (2 * g).to(ag.complex128),  # complex for real: casting would drop the imaginary part
    lambda g: (2 * g + 1j),
])
def test_a_complex_gradient_for_a_real_input_is_refused(device, make):
    if device == "cuda":
        cupy = pytest.importorskip("cupy")
        if not cupy.cuda.is_available():
            pytest.skip("no CUDA device")
    x = ag.tensor(X, requires_grad=True, device=device)
    y = _returning(make).apply(x)
    with pytest.raises(RuntimeError, match=r"^Function DoubleBackward returned an invalid gradient at index 0 - "
                                           r"got a gradient of dtype complex128 for an input of dtype float64"):
        y.sum().backward()
    assert x.grad is None


def test_an_integer_gradient_for_a_complex_input_is_refused():
    z = ag.tensor(X + 1j * X[::-1], requires_grad=True)
    y = _returning(lambda g: ag.ones(3, dtype=ag.int64)).apply(z)
    with pytest.raises(RuntimeError, match="got a gradient of dtype int64 for an input of dtype complex128"):
        y.abs().sum().backward()


def test_gradients_of_other_dtypes_are_cast_to_the_input_dtype():
    x = ag.tensor(X, requires_grad=True)
    _returning(lambda g: ag.ones(3, dtype=ag.int64)).apply(x).sum().backward()
    assert x.grad.dtype == ag.float64
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))
    z = ag.tensor(X + 1j * X[::-1], requires_grad=True)
    w = ag.tensor([1.5, -0.5, 0.25], dtype=ag.complex128)
    _returning(lambda g: (2 * g).real).apply(z).mul(w).sum().abs().backward()
    assert z.grad.dtype == ag.complex128
    s = (2 * z.detach() * w).sum().numpy()  # d|s|/ds* = s/|s|; backward passes on 2*Re(conj(w)*s/|s|)
    np.testing.assert_allclose(z.grad.numpy(), 2 * (np.conj(w.numpy()) * s / abs(s)).real, rtol=1e-12)


class Scale(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


def test_an_instance_is_made_with_pytorchs_warning_and_its_apply_works():
    with pytest.warns(DeprecationWarning, match="^<class '.*Scale'> should not be instantiated"):
        fn = Scale()
    x = ag.tensor(X, requires_grad=True)
    y = fn.apply(x, 3.0)
    assert y.grad_fn.name() == "ScaleBackward"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 3.0))


def test_calling_an_instance_raises_pytorchs_legacy_error():
    class Legacy(Function):
        def forward(self, x):
            return x * 2

        def backward(self, g):
            return g * 2

    with pytest.warns(DeprecationWarning):
        fn = Legacy()
    with pytest.raises(RuntimeError, match="^Legacy autograd function with non-static forward method is deprecated"):
        fn(ag.tensor(X, requires_grad=True))


def test_apply_on_the_base_class_raises_not_implemented():
    with pytest.raises(NotImplementedError, match="^You must implement the forward function for custom "
                                                 "autograd.Function.$"):
        Function.apply(ag.tensor(X))
