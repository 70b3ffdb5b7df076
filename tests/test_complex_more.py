"""Complex inputs to sinc, logsumexp, logcumsumexp, the matrix norms (linalg.matrix_norm, and linalg.norm with a
matrix ord), linalg.matrix_rank and linalg.lstsq: values against numpy's own complex arithmetic, PyTorch's
conjugate-Wirtinger gradients by the complex gradcheck in complex128, and PyTorch's checks on the dtype argument of
a complex norm."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(11)
LA = ag.linalg
MATRIX_ORDS = ["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


def _c(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _t(values, device="cpu"):
    return ag.tensor(values, requires_grad=True, device=device)


def _np(t):
    return t.detach().cpu().numpy()


def test_sinc_of_complex_values_and_its_gradients():
    z = _c(3, 4)
    z[0, 0] = 0
    out = ag.sinc(_t(z))
    assert out.dtype == ag.complex128
    with np.errstate(invalid="ignore"):
        expected = np.sin(np.pi * z) / (np.pi * z)
    expected[0, 0] = 1
    np.testing.assert_allclose(_np(out), expected, rtol=1e-12)
    assert gradcheck(ag.sinc, (_t(_c(3, 4)),))
    assert gradgradcheck(ag.sinc, (_t(_c(3, 4)),))


def test_sinc_gradient_at_zero_is_zero_for_complex_input():
    z = _t(np.array([0j, 0.5 + 0.25j]))
    ag.sinc(z).real.sum().backward()
    assert _np(z.grad)[0] == 0


@pytest.mark.parametrize("dim, keepdim", [(1, False), ((0, 2), True), (-1, True)])
def test_logsumexp_of_complex_values_and_its_gradients(dim, keepdim):
    z = _c(2, 3, 4)
    out = ag.logsumexp(_t(z), dim, keepdim)
    axis = dim if isinstance(dim, tuple) else (dim,)
    expected = np.log(np.exp(z).sum(axis=axis, keepdims=keepdim))
    assert out.dtype == ag.complex128
    np.testing.assert_allclose(_np(out), expected, rtol=1e-12)
    assert gradcheck(lambda x: ag.logsumexp(x, dim, keepdim), (_t(z),))
    assert gradgradcheck(lambda x: ag.logsumexp(x, dim, keepdim), (_t(z),))


def test_complex_logsumexp_shifts_by_the_largest_real_part():
    """A real part of 1000 would overflow exp unshifted; the imaginary part stays the principal angle."""
    z = np.array([1000 + 1j, 2 - 3j, 999 + 2.5j])
    out = _np(ag.logsumexp(ag.tensor(z), 0))
    expected = 1000 + np.log(np.exp(z - 1000).sum())
    np.testing.assert_allclose(out, expected, rtol=1e-14)
    assert -np.pi < out.imag <= np.pi
    empty = _np(ag.logsumexp(ag.tensor(np.array([[-np.inf + 0j]])), 1))
    assert empty[0] == -np.inf


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp_of_complex_values_and_its_gradients(dim):
    z = _c(3, 4)
    out = _np(ag.logcumsumexp(_t(z), dim))
    np.testing.assert_allclose(np.exp(out), np.cumsum(np.exp(z), axis=dim), rtol=1e-12)
    assert gradcheck(lambda x: ag.logcumsumexp(x, dim), (_t(z),))
    assert gradgradcheck(lambda x: ag.logcumsumexp(x, dim), (_t(z),))


def test_complex_logcumsumexp_lets_the_angle_run_past_pi():
    """As PyTorch's does: each step adds log1p(exp(smaller - larger)) to the running value, so
    log(e^{3i} + e^{3.2i}) = log(2 cos 0.1) + 3.1i, not the principal angle 3.1 - 2 pi."""
    out = _np(ag.logcumsumexp(ag.tensor(np.array([3j, 3.2j])), 0))
    np.testing.assert_allclose(out[1], np.log(2 * np.cos(0.1)) + 3.1j, rtol=1e-14)
    masked = _np(ag.logcumsumexp(ag.tensor(np.array([-np.inf + 0j, 2 - 1j, 1000 + 0.5j])), 0))
    assert masked[0] == -np.inf and masked[1] == 2 - 1j
    np.testing.assert_allclose(masked[2], 1000 + 0.5j, rtol=1e-15)


@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norm_of_complex_matrices(ord):
    a = _c(2, 3, 4)
    out = LA.matrix_norm(_t(a), ord)
    assert out.dtype == ag.float64
    np.testing.assert_allclose(_np(out), [np.linalg.norm(m, ord) for m in a], rtol=1e-12)
    np.testing.assert_allclose(_np(LA.norm(_t(a[0]), ord)), np.linalg.norm(a[0], ord), rtol=1e-12)
    assert gradcheck(lambda x: LA.matrix_norm(x, ord), (_t(a),))


@pytest.mark.parametrize("ord", ["fro", 1, np.inf])
def test_matrix_norm_second_derivatives(ord):
    assert gradgradcheck(lambda x: LA.matrix_norm(x, ord), (_t(_c(3, 3)),))


def test_matrix_norm_over_other_dims_with_keepdim():
    a = _c(3, 2, 4)
    out = LA.matrix_norm(_t(a), "nuc", dim=(0, 2), keepdim=True)
    assert out.shape == (1, 2, 1)
    np.testing.assert_allclose(_np(out).ravel(), [np.linalg.norm(a[:, i, :], "nuc") for i in range(2)], rtol=1e-12)


def test_complex_norm_dtype_argument_follows_pytorch():
    z64 = ag.tensor(_c(3, 3).astype(np.complex64))
    out = LA.matrix_norm(z64, dtype=ag.complex128)
    assert out.dtype == ag.float64
    np.testing.assert_allclose(_np(out), np.linalg.norm(_np(z64).astype(np.complex128)), rtol=1e-12)
    with pytest.raises(RuntimeError, match="^linalg.matrix_norm: dtype should be complex for complex inputs, but got "
                                           "Double$"):
        LA.matrix_norm(z64, dtype=ag.float64)
    with pytest.raises(RuntimeError, match="^linalg.vector_norm: dtype should be real for real inputs, but got "
                                           "ComplexDouble$"):
        LA.vector_norm(ag.ones(3), dtype=ag.complex128)
    with pytest.raises(RuntimeError, match="should be convertible without narrowing"):
        LA.matrix_norm(ag.tensor(_c(2, 2)), dtype=ag.complex64)


def test_matrix_rank_of_complex_matrices():
    a = _c(3, 4, 3)
    a[0] = np.outer(_c(4), _c(3))  # rank one
    a[1, :, 2] = a[1, :, 0] * (0.5 - 2j)  # rank two
    assert LA.matrix_rank(ag.tensor(a)).tolist() == [1, 2, 3]
    assert LA.matrix_rank(ag.tensor(a.astype(np.complex64))).tolist() == [1, 2, 3]
    hermitian = a[1].conj().T @ a[1]
    assert LA.matrix_rank(ag.tensor(hermitian), hermitian=True).item() == 2
    s = np.linalg.svd(a[2], compute_uv=False)
    between = float((s[1] + s[2]) / 2)
    assert LA.matrix_rank(ag.tensor(a[2]), atol=between).item() == 2


@pytest.mark.parametrize("a_shape, b_shape", [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((2, 5, 3), (2, 5))])
def test_lstsq_of_complex_systems(a_shape, b_shape):
    a, b = _c(*a_shape), _c(*b_shape)
    result = LA.lstsq(ag.tensor(a), ag.tensor(b), driver="gelsd")
    matrix = b[..., None] if len(b_shape) < len(a_shape) else b
    expected = (np.linalg.pinv(a) @ matrix)
    expected = expected[..., 0] if len(b_shape) < len(a_shape) else expected
    np.testing.assert_allclose(_np(result.solution), expected, rtol=1e-10, atol=1e-12)
    assert result.singular_values.dtype == ag.float64
    np.testing.assert_allclose(_np(result.singular_values), np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    if a_shape[-2] > a_shape[-1]:
        residual = matrix - a @ (np.linalg.pinv(a) @ matrix)
        np.testing.assert_allclose(_np(result.residuals), (np.abs(residual) ** 2).sum(-2).reshape(
            result.residuals.shape), rtol=1e-10)
    else:
        assert result.residuals.shape == (0,) and result.residuals.dtype == ag.float64
    assert gradcheck(lambda x, y: LA.lstsq(x, y).solution, (_t(a), _t(b)))


def test_a_bool_tensor_to_a_bool_power_stays_bool():
    """x ** True is x and x ** False is all True, in bool as PyTorch gives them; bools to a bool tensor's power have
    no kernel in PyTorch (numpy's power of bools would give int8)."""
    b = ag.tensor([True, False])
    for exponent, expected in ((True, [True, False]), (False, [True, True])):
        out = ag.pow(b, exponent)
        assert out.dtype == ag.bool and out.tolist() == expected
        assert (b ** exponent).tolist() == expected
    assert ag.pow(b, 1).dtype == ag.int64
    for fn in (lambda: ag.pow(b, b), lambda: True ** b):
        with pytest.raises(NotImplementedError, match="^\"pow\" not implemented for 'Bool'$"):
            fn()


@pytest.mark.gpu
def test_on_cuda_the_complex_forms_match_the_cpu(cupy):
    z0, a0 = _c(3, 4), _c(2, 3, 3)
    results = []
    for device in ("cpu", "cuda"):
        z, a = _t(z0, device), _t(a0, device)
        outs = [ag.sinc(z).abs().sum(), ag.logsumexp(z, 1).abs().sum(), ag.logcumsumexp(z, 1).abs().sum()]
        outs += [LA.matrix_norm(a, ord).sum() for ord in MATRIX_ORDS]
        outs += [LA.lstsq(a[0], z[:, :2]).solution.abs().sum(), LA.matrix_rank(a).sum()]
        assert ag.pow(ag.tensor([True, False], device=device), False).tolist() == [True, True]
        sum(outs).backward()
        assert z.grad.device == z.device and a.grad.device == a.device
        results.append([_np(z.grad), _np(a.grad), np.array([_np(o) for o in outs])])
    for cpu_value, cuda_value in zip(*results):
        np.testing.assert_allclose(cuda_value, cpu_value, rtol=1e-9)
    assert gradcheck(lambda x: ag.logsumexp(x, 0), (_t(z0, "cuda"),))
