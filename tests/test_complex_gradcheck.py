"""gradcheck and gradgradcheck with complex inputs and outputs: PyTorch's checks of the conjugate-Wirtinger
gradient, through the real and imaginary parts of complex outputs (and, in forward mode, of complex inputs)."""

import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import GradcheckError, gradcheck, gradgradcheck

RNG = np.random.default_rng(11)


def _complex(*shape, device="cpu", dtype=np.complex128):
    values = (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    return ag.tensor(values, requires_grad=True, device=device)


class _WrongMul(ag.autograd.Function):
    """x * w whose backward forgets the conjugates PyTorch's convention needs (g * w instead of g * conj(w))."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w, g * x.conj()


class _RightMul(_WrongMul):
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w.conj(), g * x.conj()


@pytest.mark.parametrize("fn", [
    lambda z, w: z * w,
    lambda z, w: (z / w).exp(),
    lambda z, w: z.abs() + w.angle(),  # complex inputs, real outputs
    lambda z, w: (z @ w.mT).sum(),
    lambda z, w: (z.conj() * w, (z * z).real),  # several outputs, one complex and one real
])
def test_right_complex_gradients_pass(fn):
    assert gradcheck(fn, (_complex(2, 2), _complex(2, 2)))
    assert gradgradcheck(fn, (_complex(2, 2), _complex(2, 2)))


def test_real_inputs_with_complex_outputs_pass():
    x = ag.tensor(RNG.standard_normal(3), requires_grad=True)
    assert gradcheck(lambda a: ag.polar(a * a + 1, a), (x,))
    assert gradcheck(lambda a: a * (2 - 3j), (x,))
    assert gradgradcheck(lambda a: (a * (2 - 3j)).exp(), (x,))


def test_a_custom_function_that_forgets_the_conjugate_fails():
    z, w = _complex(3), _complex(3)
    assert gradcheck(_RightMul.apply, (z, w))
    with pytest.raises(GradcheckError, match="^While considering the imaginary part of complex outputs only, "
                                             "Jacobian mismatch for output 0 with respect to input 0,"):
        gradcheck(_WrongMul.apply, (z, w))
    assert gradcheck(_WrongMul.apply, (z, w), raise_exception=False) is False


def test_a_wrong_gradient_of_a_real_output_fails_without_the_complex_prefix():
    class WrongAbs(ag.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z.abs()

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return g * z.conj() / z.abs()  # the conjugate of the right sgn(z)

    with pytest.raises(GradcheckError, match="^Jacobian mismatch for output 0 with respect to input 0,"):
        gradcheck(WrongAbs.apply, (_complex(3),))


def test_the_numerical_jacobian_of_a_complex_input_is_the_conjugate_wirtinger_gradient():
    # s = |z|^2 = x^2 + y^2: ds/dx + i ds/dy = 2x + 2iy = 2z, the gradient PyTorch's backward gives.
    z = _complex(2)
    (z.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * z.detach().numpy(), rtol=1e-12)
    assert gradcheck(lambda a: a.abs() ** 2, (z,))

    class HalfGradient(ag.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.abs() ** 2

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * a  # the Wirtinger derivative d/dz* (half of PyTorch's convention)

    assert not gradcheck(HalfGradient.apply, (z,), raise_exception=False)


def test_forward_mode_checks_the_real_and_imaginary_parts_of_complex_inputs():
    assert gradcheck(lambda a, b: (a * b).exp(), (_complex(2), _complex(2)), check_forward_ad=True)


def test_complex128_inputs_are_double_precision_and_complex64_are_not():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradcheck(lambda a: a * a, (_complex(2),))
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision"):
        gradcheck(lambda a: a * a, (_complex(2, dtype=np.complex64),), atol=1e-2, rtol=1e-2, eps=1e-3)


def test_gradgradcheck_catches_a_wrong_double_backward_of_a_complex_function():
    class WrongSecond(ag.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return 2 * g * z.conj().detach()  # right values, but the graph through z is dropped

    z = _complex(2)
    assert gradcheck(WrongSecond.apply, (z,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(WrongSecond.apply, (z,))


@pytest.mark.gpu
def test_on_cuda_complex_inputs_are_checked_in_place(cupy):
    z, w = _complex(2, device="cuda"), _complex(2, device="cuda")
    assert gradcheck(lambda a, b: (a * b.conj()).exp(), (z, w))
    assert gradgradcheck(lambda a, b: a * b, (z, w))
    with pytest.raises(GradcheckError, match="imaginary part of complex outputs"):
        gradcheck(_WrongMul.apply, (z, w))
