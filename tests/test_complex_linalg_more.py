"""Complex matrices in linalg.cholesky_ex, logdet, linalg.cond, the older triangular_solve, cholesky_solve and
cholesky_inverse, and the Householder ops (geqrf, linalg.householder_product, orgqr, ormqr): forward values checked
against numpy (its solves, determinants, norms, SVDs and a product of reflectors I - tau v v^H built here), PyTorch's
conjugate-Wirtinger gradients checked by the complex gradcheck and gradgradcheck in complex128, LAPACK's partial
factor for a matrix that is not positive-definite, and PyTorch's errors for operands that do not fit."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(23)
LA = ag.linalg


def _c(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _t(values: np.ndarray, device: str = "cpu") -> ag.Tensor:
    return ag.tensor(values, requires_grad=True, device=device)


def _np(t: ag.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def _mH(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2).conj()


def _hermitian_pd(*shape: int) -> np.ndarray:
    x = _c(*shape)
    return x @ _mH(x) + np.eye(shape[-1])


def _hermitian(x: ag.Tensor) -> ag.Tensor:
    """A Hermitian positive-definite matrix made of x, so that gradcheck perturbs only such matrices."""
    return x @ x.mH + 3 * ag.eye(x.shape[-1], dtype=x.dtype, device=x.device)


def _factor(*shape: int) -> np.ndarray:
    """A lower Cholesky factor: complex below the diagonal, real and positive on it, as LAPACK's are."""
    return np.tril(_c(*shape), -1) + np.eye(shape[-1]) * (1 + RNG.random(shape[:-1]))[..., None]


def _both_checks(fn: Callable, *inputs: ag.Tensor) -> None:
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


# linalg.cholesky_ex


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_cholesky_ex_factors_hermitian_matrices(dtype: type) -> None:
    a = _hermitian_pd(2, 3, 3).astype(dtype)
    lower, info = LA.cholesky_ex(ag.tensor(a))
    upper, _ = LA.cholesky_ex(ag.tensor(a), upper=True)
    l_ = _np(lower)
    assert l_.dtype == dtype and info.dtype == ag.int32
    np.testing.assert_array_equal(info.numpy(), [0, 0])
    np.testing.assert_array_equal(l_, np.tril(l_))
    np.testing.assert_allclose(l_ @ _mH(l_), a, atol=1e-4 if dtype == np.complex64 else 1e-12)
    np.testing.assert_allclose(_np(upper), _mH(l_), atol=1e-5 if dtype == np.complex64 else 1e-12)


@pytest.mark.parametrize("factor", [lambda a, upper: LA.cholesky_ex(a, upper=upper).L,
                                    lambda a, upper: LA.cholesky(a, upper=upper)])
def test_cholesky_reads_one_triangle_without_the_imaginary_part_of_its_diagonal(factor: Callable) -> None:
    """The lower triangle, or with upper=True the upper one, as LAPACK's uplo 'U' (PyTorch's)."""
    a = _hermitian_pd(3, 3)
    lower_read = np.tril(a) + np.triu(_c(3, 3), 1) + 0.5j * np.eye(3)
    upper_read = np.triu(a) + np.tril(_c(3, 3), -1) - 0.5j * np.eye(3)
    l_ = np.linalg.cholesky(a)
    np.testing.assert_allclose(_np(factor(ag.tensor(lower_read), False)), l_, atol=1e-12)
    np.testing.assert_allclose(_np(factor(ag.tensor(upper_read), True)), _mH(l_), atol=1e-12)
    real = a.real + 3 * np.eye(3)
    np.testing.assert_allclose(_np(factor(ag.tensor(np.triu(real) - np.tril(real, -1)), True)),
                               np.linalg.cholesky(real).T, atol=1e-12)


def _first_failing_order(a: np.ndarray) -> int:
    for order in range(1, a.shape[-1] + 1):
        try:
            np.linalg.cholesky(a[:order, :order])
        except np.linalg.LinAlgError:
            return order
    return 0


def _partial_factor(a: np.ndarray, order: int) -> np.ndarray:
    """What LAPACK's potf2 leaves when the leading minor of `order` fails: the factor's columns before it, the
    failed (real) diagonal value, and A's lower triangle after it (its diagonal's imaginary parts too)."""
    k = order - 1
    out = np.tril(a).copy()
    l11 = np.linalg.cholesky(a[:k, :k])
    out[:k, :k] = l11
    out[k:, :k] = a[k:, :k] @ np.linalg.inv(_mH(l11))
    out[k, k] = a[k, k].real - np.sum(np.abs(out[k, :k]) ** 2)
    return out


def test_cholesky_ex_gives_lapacks_partial_factor_and_the_failing_order() -> None:
    a = _hermitian_pd(3, 4, 4) + 0.5j * np.eye(4)
    a[1, 2, 2] -= 20  # the leading minor of order 3 is not positive-definite
    a[2, 0, 0] = -1
    factor, info = LA.cholesky_ex(ag.tensor(a))
    upper, upper_info = LA.cholesky_ex(ag.tensor(_mH(a)), upper=True)
    np.testing.assert_array_equal(upper_info.numpy(), info.numpy())
    np.testing.assert_allclose(_np(upper), _mH(_np(factor)), atol=1e-12)
    orders = [_first_failing_order(m) for m in a]
    assert orders == [0, 3, 1]
    np.testing.assert_array_equal(info.numpy(), orders)
    np.testing.assert_allclose(_np(factor)[0], np.linalg.cholesky(a[0]), atol=1e-12)
    for i in (1, 2):
        np.testing.assert_allclose(_np(factor)[i], _partial_factor(a[i], orders[i]), atol=1e-12)
    message = ("linalg.cholesky_ex: (Batch element 1): The factorization could not be completed because the input is "
               "not positive-definite (the leading minor of order 3 is not positive-definite).")
    with pytest.raises(LA.LinAlgError, match=re.escape(message)):
        LA.cholesky_ex(ag.tensor(a), check_errors=True)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_ex_gradients_match_finite_differences(upper: bool) -> None:
    _both_checks(lambda x: LA.cholesky_ex(_hermitian(x), upper=upper).L, _t(_c(3, 3)))


def test_cholesky_gradient_is_pytorchs_lower_triangle_form() -> None:
    """PyTorch's gA = L^-H (tril(X) + tril(X, -1)^H) / 2 L^-1 with X = L^H gL: Hermitian but for the imaginary part
    of X's diagonal, which it keeps; cholesky_ex records the same node."""
    a, g = _hermitian_pd(3, 3), _c(3, 3)
    l_ = np.linalg.cholesky(a)
    x = _mH(l_) @ g
    inverse = np.linalg.inv(l_)
    expected = _mH(inverse) @ ((np.tril(x) + _mH(np.tril(x, -1))) / 2) @ inverse
    for factor in (lambda m: LA.cholesky_ex(m).L, LA.cholesky):
        A = _t(a)
        factor(A).backward(ag.tensor(g))
        np.testing.assert_allclose(_np(A.grad), expected, atol=1e-12)
    assert LA.cholesky_ex(_t(a)).L.grad_fn.name() == "LinalgCholeskyExBackward0"


# logdet


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_logdet_of_a_complex_matrix_is_the_complex_log_of_its_determinant(dtype: type) -> None:
    a = (_c(2, 3, 3) + 2 * np.eye(3)).astype(dtype)
    out = ag.logdet(ag.tensor(a))
    assert out.dtype == dtype
    # the imaginary part: the principal angle of det, in (-pi, pi], as numpy's log takes it
    np.testing.assert_allclose(_np(out), np.log(np.linalg.det(a.astype(np.complex128))),
                               rtol=1e-5 if dtype == np.complex64 else 1e-12)


def test_logdet_gradients_match_finite_differences() -> None:
    _both_checks(ag.logdet, _t(_c(2, 3, 3) + 3 * np.eye(3)))
    _both_checks(lambda a: a.logdet(), _t(_c(2, 2) + 2 * np.eye(2)))


# linalg.cond


def _numpy_cond(a: np.ndarray, p: object) -> np.ndarray:
    if p in (None, 2, -2):
        s = np.linalg.svd(a, compute_uv=False)
        return s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    return np.linalg.norm(a, p, axis=(-2, -1)) * np.linalg.norm(np.linalg.inv(a), p, axis=(-2, -1))


ORDERS = [None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf]


@pytest.mark.parametrize("p", ORDERS)
def test_cond_of_complex_matrices_is_real_and_numpys(p: object) -> None:
    a = _c(2, 3, 3) + np.eye(3)
    out = LA.cond(ag.tensor(a), p)
    assert out.dtype == ag.float64
    np.testing.assert_allclose(out.numpy(), _numpy_cond(a, p), rtol=1e-12)
    assert gradcheck(lambda x: LA.cond(x, p), (_t(a[0]),))


def test_cond_of_a_tall_complex_matrix_takes_its_singular_values() -> None:
    a = _c(4, 3)
    np.testing.assert_allclose(LA.cond(ag.tensor(a)).item(), _numpy_cond(a, None), rtol=1e-12)


@pytest.mark.parametrize("p", ["fro", "nuc", 1, -1, math.inf, -math.inf])
def test_cond_of_a_singular_matrix_is_infinite_in_each_norm(p: object) -> None:
    a = _c(2, 3, 3)
    a[1, 2] = 0
    out = LA.cond(ag.tensor(a), p).numpy()
    np.testing.assert_allclose(out[0], _numpy_cond(a[0], p), rtol=1e-12)
    assert out[1] == math.inf
    assert LA.cond(ag.tensor(a.real.copy()), p).numpy()[1] == math.inf


# triangular_solve, cholesky_solve, cholesky_inverse


def _read(a: np.ndarray, upper: bool, unitriangular: bool) -> np.ndarray:
    """The triangular matrix a triangular solve reads from a."""
    identity = np.eye(a.shape[-1])
    return (np.triu(a, 1) if upper else np.tril(a, -1)) + (identity if unitriangular else identity * a)


def _triangular_solve(b: ag.Tensor, a: ag.Tensor, *flags: bool) -> tuple:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(ag.triangular_solve(b, a, *flags))


@pytest.mark.parametrize(("upper", "transpose", "unit"), [(True, False, False), (False, True, False),
                                                          (True, True, True), (False, False, True)])
def test_triangular_solve_transposes_without_conjugating(upper: bool, transpose: bool, unit: bool) -> None:
    a, b = _c(2, 3, 3) + 4 * np.eye(3), _c(3, 2)
    x, copy = _triangular_solve(ag.tensor(b), ag.tensor(a), upper, transpose, unit)
    t = _read(a, upper, unit)
    op = np.swapaxes(t, -1, -2) if transpose else t
    np.testing.assert_allclose(op @ _np(x), np.broadcast_to(b, (2, 3, 2)), atol=1e-12)
    np.testing.assert_array_equal(_np(copy), a)
    _both_checks(lambda b, a: _triangular_solve(b, a, upper, transpose, unit), _t(b[:, :1]), _t(a[:1]))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_use_the_matrix_the_factor_gives(upper: bool) -> None:
    lower, b = _factor(2, 3, 3), _c(3, 2)
    a = lower @ _mH(lower)
    factor = ag.tensor(_mH(lower) if upper else lower)
    np.testing.assert_allclose(_np(ag.cholesky_solve(ag.tensor(b), factor, upper)), np.linalg.solve(a, b),
                               atol=1e-12)
    np.testing.assert_allclose(_np(ag.cholesky_inverse(factor, upper)), np.linalg.inv(a), atol=1e-12)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_gradients_match_finite_differences(upper: bool) -> None:
    """Through factors with a real diagonal (a separate real input), as a Cholesky factor's is."""
    strict, diagonal = _t(_c(3, 3)), _t(1 + RNG.random(3))
    b = _t(_c(2, 3, 1))  # its batch broadcasts the factor's

    def factor(strict: ag.Tensor, diagonal: ag.Tensor) -> ag.Tensor:
        lower = strict.tril(-1) + diagonal[..., None] * ag.eye(3, dtype=ag.float64)
        return lower.mH if upper else lower

    _both_checks(lambda b, s, d: ag.cholesky_solve(b, factor(s, d), upper), b, strict, diagonal)
    _both_checks(lambda s, d: ag.cholesky_inverse(factor(s, d), upper), strict, diagonal)


# geqrf, householder_product, orgqr, ormqr


def _numpy_product(a: np.ndarray, tau: np.ndarray, columns: int) -> np.ndarray:
    """The first `columns` columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H, v_i column i of a below the diagonal
    and 1 on it, for one matrix."""
    m = a.shape[0]
    q = np.eye(m, dtype=complex)
    for i, scale in enumerate(tau):
        v = np.concatenate([np.zeros(i), [1], a[i + 1 :, i]])
        q = q @ (np.eye(m) - scale * np.outer(v, v.conj()))
    return q[:, :columns]


def test_householder_product_multiplies_reflectors_i_minus_tau_v_vh() -> None:
    a, tau = _c(2, 5, 3), _c(2, 2)
    expected = np.stack([_numpy_product(a[i], tau[i], 3) for i in range(2)])
    np.testing.assert_allclose(_np(LA.householder_product(ag.tensor(a), ag.tensor(tau))), expected, atol=1e-12)
    np.testing.assert_allclose(_np(ag.orgqr(ag.tensor(a), ag.tensor(tau))), expected, atol=1e-12)
    _both_checks(LA.householder_product, _t(a[0, :4]), _t(tau[0]))


def test_geqrf_of_a_complex_matrix_gives_the_reflectors_of_its_qr() -> None:
    a = _c(5, 3)
    packed, tau = ag.geqrf(ag.tensor(a))
    assert packed.dtype == tau.dtype == ag.complex128
    q = _np(LA.householder_product(packed, tau))
    np.testing.assert_allclose(_mH(q) @ q, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(q @ np.triu(_np(packed)[:3]), a, atol=1e-12)
    assert ag.geqrf(ag.tensor(a.astype(np.complex64))).tau.dtype == ag.complex64


@pytest.mark.parametrize(("left", "transpose"), [(True, False), (True, True), (False, False), (False, True)])
def test_ormqr_applies_the_full_q_or_its_conjugate_transpose(left: bool, transpose: bool) -> None:
    a, tau = _c(3, 2), _c(2)
    other = _c(3, 2) if left else _c(2, 3)
    q = _numpy_product(a, tau, 3)
    q = _mH(q) if transpose else q
    out = ag.ormqr(ag.tensor(a), ag.tensor(tau), ag.tensor(other), left, transpose)
    np.testing.assert_allclose(_np(out), q @ other if left else other @ q, atol=1e-12)
    inputs = (_t(a), _t(tau), _t(other))
    assert gradcheck(lambda a, tau, other: ag.ormqr(a, tau, other, left, transpose), inputs)
    if left and transpose:  # the other cases differ only in a transpose and the side of a product
        assert gradgradcheck(lambda a, tau, other: ag.ormqr(a, tau, other, left, transpose), inputs)


# PyTorch's errors


def _ones(*shape: int, dtype: ag.dtype = ag.complex128) -> ag.Tensor:
    return ag.ones(*shape, dtype=dtype)


ERRORS = [
    (lambda: _triangular_solve(_ones(3, 2), _ones(3, 3, dtype=ag.float64)), RuntimeError,
     "Expected b and A to have the same dtype, but found b of type ComplexDouble and A of type Double instead."),
    (lambda: ag.cholesky_solve(_ones(3, 2), _ones(3, 3, dtype=ag.float64)), RuntimeError,
     "Expected b and A to have the same dtype, but found b of type ComplexDouble and A of type Double instead."),
    (lambda: LA.householder_product(_ones(3, 2, dtype=ag.complex64), _ones(2)), RuntimeError,
     "torch.linalg.householder_product: tau dtype ComplexDouble does not match input dtype ComplexFloat"),
    (lambda: ag.ormqr(_ones(3, 2), _ones(2), _ones(3, 2, dtype=ag.float64)), RuntimeError,
     "torch.ormqr: Expected input and other to have the same dtype, but input has dtypeComplexDouble and other has "
     "dtype Double"),
    (lambda: ag.ormqr(_ones(3, 2), _ones(2, dtype=ag.complex64), _ones(3, 2)), RuntimeError,
     "torch.ormqr: Expected input and tau to have the same dtype, but input has dtypeComplexDouble and tau has "
     "dtype ComplexFloat"),
    (lambda: ag.ormqr(_ones(3, 2), _ones(2), _ones(4, 2)), RuntimeError,
     "torch.ormqr: other.shape[-2] must be equal to input.shape[-2]"),
    (lambda: ag.ormqr(_ones(3, 2), _ones(1), _ones(5, 3), left=False), RuntimeError,
     "torch.ormqr: tau.shape[-1] must be equal to min(other.shape[-1], input.shape[-1])"),
    (lambda: ag.ormqr(_ones(3, 2), _ones(1, 2), _ones(3, 2)), RuntimeError,
     "torch.ormqr: Expected tau to have one dimension less than input, but got tau.ndim equal to 2 and input.ndim "
     "is equal to 2"),
    (lambda: ag.ormqr(_ones(2, 3, 2), _ones(2, 2), _ones(3, 2)), RuntimeError,
     "torch.ormqr: Expected other to have the same number of dimensions as input, but got other.ndim equal to 2 "
     "and input.ndim is equal to 3"),
    (lambda: ag.ormqr(_ones(2, 3, 2), _ones(2, 2), _ones(1, 3, 2)), RuntimeError,
     "torch.ormqr: Expected batch dimensions of other to be equal to input.shape[:-2], but got [1]"),
    (lambda: ag.ormqr(_ones(3, 2), _ones(2), 1.0), TypeError,
     "ormqr(): argument 'input3' (position 3) must be Tensor, not float"),
    (lambda: ag.geqrf(_ones(3, 3, dtype=ag.int32)), NotImplementedError, "\"geqrf_cpu\" not implemented for 'Int'"),
]


@pytest.mark.parametrize(("f", "kind", "message"), ERRORS)
def test_errors_match_torch(f: Callable, kind: type, message: str) -> None:
    with pytest.raises(kind, match=f"^{re.escape(message)}$"):
        f()


@pytest.mark.gpu
def test_on_cuda_values_and_gradients_are_the_cpus(cupy) -> None:
    a0, b0, x0, l0, tau0 = _c(3, 3) + 3 * np.eye(3), _c(3, 2), _c(3, 3), _factor(3, 3), _c(3)
    not_positive = _hermitian_pd(2, 3, 3)
    not_positive[1, 1, 1] = -1
    results = []
    for device in ("cpu", "cuda"):
        A, B, X, F, tau = (_t(v, device) for v in (a0, b0, x0, l0, tau0))
        outs = [LA.cholesky_ex(_hermitian(X), upper=True).L, ag.logdet(A), LA.cond(A, "nuc"), LA.cond(A),
                *_triangular_solve(B, A, False, True, False), ag.cholesky_solve(B, F.tril()),
                ag.cholesky_inverse(F.tril()), LA.householder_product(A, tau), ag.ormqr(A, tau, B, True, True)]
        sum(o.abs().sum() for o in outs).backward()
        assert A.grad.device == A.device
        factor, info = LA.cholesky_ex(ag.tensor(not_positive, device=device))
        packed, scales = ag.geqrf(ag.tensor(a0, device=device))
        C = _t(x0, device)
        first = ag.autograd.grad(LA.svd(C).U.abs().sum() + LA.eigh(_hermitian(C)).eigenvectors.abs().sum(), C,
                                 create_graph=True)[0]
        second = ag.autograd.grad(first.abs().sum(), C)[0]
        results.append([_np(A.grad), _np(B.grad), _np(X.grad), _np(F.grad), _np(tau.grad), _np(factor),
                        info.cpu().numpy(), _np(packed), _np(scales), _np(first), _np(second)])
    for cpu_value, cuda_value in zip(*results):
        np.testing.assert_allclose(cuda_value, cpu_value, rtol=1e-9, atol=1e-12)
