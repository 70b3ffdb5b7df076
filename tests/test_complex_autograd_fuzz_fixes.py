"""Defects a fuzz-differential review of complex tensors and their gradients found: the in-place sgn_ and
conj_physical_ of a complex tensor, polar's gradient in a zero magnitude, complex logaddexp, abs' `out=` dtype
rule for a complex input, and jacobian's and hessian's refusal of complex rows without vectorize.

PyTorch's convention: a real loss L's gradient in a complex z is dL/d(re z) + i dL/d(im z); gradcheck checks it
through the real and imaginary parts by central differences.
"""

import cmath
import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(23)


def _complex(*shape: int) -> np.ndarray:
    """complex128 values whose parts have magnitudes in [0.3, 0.9] and random signs: away from 0 and the axes."""
    signs = RNG.choice([-1, 1], (2, *shape))
    return signs[0] * RNG.uniform(0.3, 0.9, shape) + 1j * signs[1] * RNG.uniform(0.3, 0.9, shape)


# -- in-place sgn_ and conj_physical_ ------------------------------------------------------------------------------
def test_in_place_sgn_of_a_complex_tensor_differentiates_the_input_it_overwrote():
    z = ag.tensor(_complex(2, 3), requires_grad=True)
    assert gradcheck(lambda t: (t * 1).sgn_(), (z,))
    assert gradcheck(lambda t: (t * 1)[:, 1:].sgn_(), (z,))  # through a view: CopySlices
    # sgn(z) = z / |z| is flat along |z|: scaling every element leaves the loss and so its gradient's radial part 0
    y = z * 1
    y.sgn_()
    (y.real * 2 + y.imag).sum().backward()
    radial = (z.grad.numpy() * np.conj(z.detach().numpy())).real
    np.testing.assert_allclose(radial, 0, atol=1e-12)


def test_in_place_sgn_of_a_real_tensor_stays_a_zero_gradient():
    x = ag.tensor([0.5, -2.0], dtype=ag.float64, requires_grad=True)
    y = x * 1
    y.sgn_()
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_in_place_conj_physical_records_the_conjugate():
    z = ag.tensor(_complex(3), requires_grad=True)
    assert gradcheck(lambda t: (t * 1).conj_physical_(), (z,))
    assert gradgradcheck(lambda t: (t * t).conj_physical_(), (z,))
    y = z * 1
    y[1:].conj_physical_()
    np.testing.assert_array_equal(y.detach().numpy(), np.concatenate([z.detach().numpy()[:1],
                                                                       np.conj(z.detach().numpy()[1:])]))
    w = _complex(3)
    y.backward(ag.tensor(w))
    np.testing.assert_array_equal(z.grad.numpy(), np.concatenate([w[:1], np.conj(w[1:])]))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        z.conj_physical_()


# -- polar in a zero magnitude ---------------------------------------------------------------------------------------
def test_polar_gives_a_zero_magnitude_a_zero_gradient_as_pytorch():
    magnitude = ag.tensor([0.0, 0.7, 0.0, 1.3], dtype=ag.float64, requires_grad=True)
    angle = ag.tensor([0.4, -1.1, 2.0, 0.3], dtype=ag.float64, requires_grad=True)
    w = _complex(4)
    ag.polar(magnitude, angle).backward(ag.tensor(w))
    theta = angle.detach().numpy()
    # d out / d abs = e^(i angle); PyTorch takes Re(conj(w) sgn(out)), which is 0 where abs is 0
    expected = np.where(magnitude.detach().numpy() == 0, 0.0, (np.conj(w) * np.exp(1j * theta)).real)
    np.testing.assert_allclose(magnitude.grad.numpy(), expected, rtol=1e-13, atol=0)
    # d out / d angle = i abs e^(i angle): 0 at a zero magnitude anyway
    np.testing.assert_allclose(angle.grad.numpy(), (np.conj(w) * 1j * magnitude.detach().numpy()
                                                    * np.exp(1j * theta)).real, rtol=1e-13, atol=1e-15)
    positive = ag.tensor(RNG.uniform(0.5, 2.0, (3,)), requires_grad=True)
    assert gradgradcheck(lambda r, t: ag.view_as_real(ag.polar(r, t)), (positive, angle[:3].detach()))


# -- complex logaddexp -----------------------------------------------------------------------------------------------
def _logaddexp_expected(a: complex, b: complex) -> complex:
    """log(e^a + e^b) with its imaginary part taken within pi of the larger-real operand's, as PyTorch's kernel
    (max + log1p(exp(min - max))) leaves it, rather than wrapped into (-pi, pi]."""
    value = cmath.log(cmath.exp(a) + cmath.exp(b))
    near = (a if a.real > b.real else b).imag
    return complex(value.real, value.imag + 2 * math.pi * round((near - value.imag) / (2 * math.pi)))


def test_logaddexp_takes_complex_tensors():
    a, b = _complex(2, 3), _complex(3)
    out = ag.logaddexp(ag.tensor(a), ag.tensor(b))
    assert out.dtype == ag.complex128
    expected = np.vectorize(_logaddexp_expected)(a, np.broadcast_to(b, a.shape))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-13)
    # the imaginary part runs past pi as PyTorch's does
    wide = ag.logaddexp(ag.tensor([1.0 + 3.0j]), ag.tensor([1.2 + 3.3j]))
    assert wide.dtype == ag.complex64 and wide.numpy()[0].imag > math.pi
    np.testing.assert_allclose(wide.numpy(), [_logaddexp_expected(1.0 + 3.0j, 1.2 + 3.3j)], rtol=1e-6)
    # promotion with real tensors, and a far larger operand that would overflow exp
    assert ag.logaddexp(ag.tensor([1j]), ag.tensor([2], dtype=ag.int64)).dtype == ag.complex64
    np.testing.assert_allclose(ag.logaddexp(ag.tensor([1e4 + 1j]), ag.tensor([0.5j])).numpy(), [1e4 + 1j])


def test_logaddexp_of_complex_infinities_and_nan():
    inf, nan = math.inf, math.nan
    out = ag.logaddexp(ag.tensor([complex(-inf, 1), complex(0.5, 2), complex(nan, 0)]),
                       ag.tensor([complex(0.25, 1), complex(-inf, 0), complex(1, 1)])).numpy()
    np.testing.assert_array_equal(out[:2], [0.25 + 1j, 0.5 + 2j])  # e^-inf adds nothing
    assert np.isnan(out[2].real) and np.isnan(out[2].imag)
    both = ag.logaddexp(ag.tensor([complex(-inf, 1)]), ag.tensor([complex(-inf, 2)])).numpy()
    assert both[0].real == -inf


def test_logaddexp_gradients_in_complex_and_real_inputs():
    a = ag.tensor(_complex(2, 3), requires_grad=True)
    b = ag.tensor(_complex(3), requires_grad=True)
    r = ag.tensor(RNG.uniform(-1.0, 1.0, (2, 3)), requires_grad=True)
    assert gradcheck(ag.logaddexp, (a, b))
    assert gradgradcheck(ag.logaddexp, (a, b))
    assert gradcheck(ag.logaddexp, (a, r))
    r.grad = None
    ag.logaddexp(a, r).abs().sum().backward()
    assert r.grad.dtype == ag.float64  # a real input's gradient is real


def test_logaddexp2_still_refuses_complex_tensors():
    with pytest.raises(NotImplementedError, match="\"logaddexp2_cpu\" not implemented for 'ComplexFloat'"):
        ag.logaddexp2(ag.tensor([1j]), ag.tensor([2.0]))


# -- abs(complex, out=) ----------------------------------------------------------------------------------------------
def test_abs_of_a_complex_tensor_takes_a_complex_out_only_of_its_own_dtype():
    z = ag.tensor([3 + 4j, -1j], dtype=ag.complex64)
    same = ag.empty(2, dtype=ag.complex64)
    ag.abs(z, out=same)
    np.testing.assert_array_equal(same.numpy(), [5, 1])
    wider = ag.empty(2, dtype=ag.float64)
    ag.abs(z, out=wider)  # a real out: any floating dtype the real result casts to
    np.testing.assert_array_equal(wider.numpy(), [5, 1])
    with pytest.raises(RuntimeError, match="Found dtype ComplexDouble but expected ComplexFloat"):
        ag.abs(z, out=ag.empty(2, dtype=ag.complex128))
    with pytest.raises(RuntimeError, match="Found dtype ComplexFloat but expected ComplexDouble"):
        ag.absolute(z.to(ag.complex128), out=ag.empty(2, dtype=ag.complex64))


# -- autograd.functional's row loop ----------------------------------------------------------------------------------
def test_jacobian_and_hessian_refuse_complex_rows_without_vectorize_as_pytorch():
    v = np.array([1 + 1j, 2j])
    z = ag.tensor(v, dtype=ag.complex64)
    refusal = "grad can be implicitly created only for real scalar outputs but got actorgrad.complex64"
    with pytest.raises(RuntimeError, match=refusal):
        ag.autograd.functional.jacobian(lambda a: a * a, z)
    with pytest.raises(RuntimeError, match=refusal):  # was a Jacobian of zeros: the real input's parts of 1j
        ag.autograd.functional.jacobian(lambda a: a * 1j, ag.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=refusal):  # its outer Jacobian's rows are the complex gradient's
        ag.autograd.functional.hessian(lambda a: (a * a).abs().sum(), z)
    # real outputs keep their rows: |z|'s gradient is z / |z|
    np.testing.assert_allclose(ag.autograd.functional.jacobian(lambda a: a.abs(), z).numpy(), np.diag(v / abs(v)),
                               rtol=1e-6)
    # vectorize=True seeds one-hot vectors, as PyTorch's batched path: the rows of conj(2 z)
    np.testing.assert_allclose(ag.autograd.functional.jacobian(lambda a: a * a, z, vectorize=True).numpy(),
                               np.diag(np.conj(2 * v)), rtol=1e-6)


@pytest.mark.gpu
def test_the_fixes_on_cuda_give_the_cpu_results(cupy):
    a, b = _complex(4), _complex(4)
    results = []
    for device in ("cpu", "cuda"):
        z = ag.tensor(a, device=device, requires_grad=True)
        y = z * 1
        y.sgn_()
        c = z * 2
        c.conj_physical_()
        out = ag.logaddexp(z, ag.tensor(b, device=device)) + y + c
        magnitude = ag.tensor([0.0, 1.0], dtype=ag.float64, device=device, requires_grad=True)
        p = ag.polar(magnitude, ag.tensor([0.3, 0.4], dtype=ag.float64, device=device))
        (out.real.sum() + out.imag.sum() + p.real.sum()).backward()
        results.append((out.detach().cpu().numpy(), z.grad.cpu().numpy(), magnitude.grad.cpu().numpy()))
    for cpu, cuda in zip(*results):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-12, atol=1e-14)
    assert results[0][2][0] == 0.0
