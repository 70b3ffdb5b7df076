"""actorgrad.linalg's decompositions (svd, svdvals, eigh, eigvalsh, qr), pinv, matrix_rank, matrix_power, the
spectral and nuclear matrix norms, and det's gradient at singular matrices: values against their defining
properties and numpy references (cofactors by the permutation sum, a Householder QR with LAPACK's signs, numpy's
decompositions with signs matched), gradients against those references' central differences and by gradcheck."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.linalg import LinAlgError

L = ag.linalg
SYM = np.array([[2.0, 1, 0], [1, 3, 1], [0, 1, 4.5]])
W = np.array([[1.0, -2, 0.5], [0.3, 1, -1], [2, 0.1, -0.7]])
TALL = np.array([[1.0, 2, 0.5], [-1, 0.5, 2], [0.3, -2, 1], [1, 1, -1]])


def t(x: np.ndarray, **kw) -> ag.Tensor:
    return ag.tensor(x, dtype=ag.float64, **kw)


def value_and_grad(f: Callable, x: np.ndarray) -> tuple[float, np.ndarray]:
    leaf = t(x, requires_grad=True)
    out = f(leaf)
    (grad,) = ag.autograd.grad(out, leaf)
    return out.item(), grad.numpy()


# -- numpy references ------------------------------------------------------------------------------------------------
def leibniz_det(m: np.ndarray) -> float:
    """det as the signed sum over permutations: no elimination, no LAPACK."""
    n = len(m)
    total = 0.0
    for perm in itertools.permutations(range(n)):
        inversions = sum(perm[i] > perm[j] for i in range(n) for j in range(i + 1, n))
        total += (-1) ** inversions * math.prod(m[i, perm[i]] for i in range(n))
    return total


def cofactors(a: np.ndarray) -> np.ndarray:
    """C[i, j] = (-1)^(i + j) det(A without row i and column j): d det(A) / d A, a polynomial in A."""
    n = len(a)
    return np.array([[(-1) ** (i + j) * leibniz_det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(n)]
                     for i in range(n)])


def householder_qr(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reduced QR by Householder reflections with LAPACK's (so PyTorch's) signs: each reflection sends its column to
    -sign(pivot) * norm on the diagonal, and a column with nothing below the diagonal is left as it is."""
    m, n = a.shape
    q, r = np.eye(m), a.copy()
    for j in range(min(m, n)):
        x = r[j:, j]
        if not x[1:].any():
            continue
        v = x.copy()
        v[0] += math.copysign(np.linalg.norm(x), x[0])
        v /= np.linalg.norm(v)
        r[j:] -= 2 * np.outer(v, v @ r[j:])
        q[:, j:] -= 2 * np.outer(q[:, j:] @ v, v)
    k = min(m, n)
    return q[:, :k], np.triu(r[:k])


def svd_signed_like(a: np.ndarray, like: tuple) -> tuple:
    """numpy's SVD with each singular pair's signs turned to agree with the factors `like`: the factors' signs are
    LAPACK's choice, so a loss that reads them is compared at the same choice."""
    u, s, vh = np.linalg.svd(a)
    signs = np.sign((u * like[0]).sum(0))
    return u * signs, s, vh * signs[:, None]


def eigh_signed_like(a: np.ndarray, like: tuple) -> tuple:
    values, vectors = np.linalg.eigh(a)
    return values, vectors * np.sign((vectors * like[1]).sum(0))


def read_triangle(x: np.ndarray, uplo: str) -> np.ndarray:
    """The symmetric matrix eigh sees: one triangle of x, mirrored."""
    part = np.tril(x) if uplo == "L" else np.triu(x)
    return part + part.T - np.diag(np.diag(x))


SINGULAR = np.array([
    [[1.0, 2, 3], [2, 4, 6], [1, 0, 1]],  # rank 2
    [[1.0, 2, 0], [0, 1, 0], [3, 0, 1]],  # invertible, beside singular ones in the batch
    [[1.0, 2, 3], [2, 4, 6], [3, 6, 9]],  # rank 1: zero
])


# det's gradient is the cofactor matrix, a polynomial in A: at a singular matrix too (PyTorch's SVD form gives it).
@pytest.mark.parametrize("create_graph", [False, True])
def test_det_gradient_of_singular_matrices_is_the_cofactor_matrix(create_graph: bool) -> None:
    a = t(SINGULAR, requires_grad=True)
    (grad,) = ag.autograd.grad(L.det(a).sum(), a, create_graph=create_graph)
    np.testing.assert_allclose(grad.detach().numpy(), [cofactors(m) for m in SINGULAR], atol=1e-12)
    two = np.array([[1.0, 2], [2, 4]])
    leaf = t(two, requires_grad=True)
    L.det(leaf).backward()
    np.testing.assert_allclose(leaf.grad.numpy(), cofactors(two), atol=1e-14)


def test_det_gradient_near_singular_is_the_cofactor_matrix() -> None:
    a = np.array([[1.0, 2], [2, 4 + 1e-12]])
    _, grad = value_and_grad(L.det, a)
    np.testing.assert_allclose(grad, cofactors(a), atol=1e-11)


def test_det_double_backward_at_a_singular_matrix() -> None:
    assert gradgradcheck(L.det, [t([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]], requires_grad=True)])


def test_inv_of_a_singular_matrix_names_the_zero_pivot() -> None:
    with pytest.raises(LinAlgError, match=r"^linalg.inv: The diagonal element 2 is zero, the inversion could not be "
                       r"completed because the input matrix is singular.$"):
        L.inv(t([[1.0, 2], [2, 4]]))


def _svd_loss(o: tuple) -> object:
    return (o[0] * W).sum() + (o[1] * W[0]).sum() + (o[2] * W.T).sum()


def _norms(s: np.ndarray) -> float:
    return s[0] + 2 * s[-1] + 3 * s.sum()


def _svd_factors(x: np.ndarray) -> tuple:
    return tuple(f.numpy() for f in L.svd(t(x)))


def _eigh_factors(uplo: str) -> Callable:
    return lambda x: tuple(f.numpy() for f in L.eigh(t(x), UPLO=uplo))


def _no_factors(x: np.ndarray) -> None:
    return None


# (name, loss of A in actorgrad, the same loss in numpy of (A, `like`), A, the triangle an eigh reads or None, what
# gives `like`: actorgrad's factors at the case's A, whose signs the numpy factors are turned to). Losses that read
# SVD or eigh factors' signs are compared at actorgrad's signs; the QR losses at LAPACK's, which the Householder
# reference reproduces.
def _eigh_loss(o: tuple) -> object:
    return (o[1] * W).sum() + (o[0] * W[1]).sum()


def _qr_tall_loss(q, r) -> object:
    return (q * TALL).sum() + (r * W).sum()


def _qr_wide_loss(q, r) -> object:
    return (q * W).sum() + (r * TALL.T).sum()


REFERENCES = [
    ("svd", lambda x: _svd_loss(L.svd(x)), lambda a, like: _svd_loss(svd_signed_like(a, like)), W + SYM, None,
     _svd_factors),
    ("svd U only", lambda x: (L.svd(x)[0] * W).sum(), lambda a, like: (svd_signed_like(a, like)[0] * W).sum(),
     W + SYM, None, _svd_factors),
    ("eigh", lambda x: _eigh_loss(L.eigh(x)), lambda a, like: _eigh_loss(eigh_signed_like(a, like)), SYM, "L",
     _eigh_factors("L")),
    ("eigh upper", lambda x: (L.eigh(x, UPLO="U")[1] * W).sum(),
     lambda a, like: (eigh_signed_like(a, like)[1] * W).sum(), SYM + np.triu(W, 1), "U", _eigh_factors("U")),
    ("qr tall", lambda x: _qr_tall_loss(*L.qr(x)), lambda a, like: _qr_tall_loss(*householder_qr(a)), TALL, None,
     _no_factors),
    ("qr wide", lambda x: _qr_wide_loss(*L.qr(x)), lambda a, like: _qr_wide_loss(*householder_qr(a)),
     TALL.T.copy(), None, _no_factors),
    # the value is trace(pinv(A) A) = rank A = 3
    ("pinv", lambda x: (L.pinv(x) * TALL.T).sum(), lambda a, like: (np.linalg.pinv(a) * TALL.T).sum(), TALL, None,
     _no_factors),
    ("matrix norms 2 -2 nuc",
     lambda x: L.matrix_norm(x, 2) + 2 * L.matrix_norm(x, -2) + 3 * L.matrix_norm(x, "nuc"),
     lambda a, like: _norms(np.linalg.svd(a, compute_uv=False)), TALL, None, _no_factors),
    ("matrix_power 5 and -2",
     lambda x: (L.matrix_power(x, 5) * W).sum() + (L.matrix_power(x, -2) * W).sum(),
     lambda a, like: (np.linalg.matrix_power(a, 5) * W).sum() + (np.linalg.matrix_power(a, -2) * W).sum(),
     SYM, None, _no_factors),
]


@pytest.mark.parametrize(("name", "f", "reference", "x", "uplo", "factors"), REFERENCES,
                         ids=[c[0] for c in REFERENCES])
def test_values_and_gradients_match_numpy_references(name: str, f: Callable, reference: Callable, x: np.ndarray,
                                                     uplo: str | None, factors: Callable, numpy_gradient) -> None:
    like = factors(x)
    out, got = value_and_grad(f, x)
    if uplo is None:
        at, loss = x, (lambda a: reference(a, like))
    else:  # eigh's gradient is PyTorch's symmetric one, at the matrix read from the triangle
        at, loss = read_triangle(x, uplo), (lambda a: reference((a + a.T) / 2, like))
    assert out == pytest.approx(loss(at), rel=1e-12)
    np.testing.assert_allclose(got, numpy_gradient(loss, at), rtol=1e-6, atol=1e-6)


def test_svd_factors_rebuild_the_matrix_and_share_one_node() -> None:
    a = W + SYM
    u, s, vh = L.svd(t(a, requires_grad=True))
    assert {x.grad_fn.name() for x in (u, s, vh)} == {"LinalgSvdBackward0"}
    u, s, vh = (x.detach().numpy() for x in (u, s, vh))
    np.testing.assert_allclose(s, np.sqrt(np.linalg.eigvalsh(a.T @ a))[::-1], rtol=1e-12)  # descending
    np.testing.assert_allclose((u * s) @ vh, a, atol=1e-14)
    np.testing.assert_allclose(u.T @ u, np.eye(3), atol=1e-14)
    np.testing.assert_allclose(vh @ vh.T, np.eye(3), atol=1e-14)
    assert L.svdvals(t(W, requires_grad=True)).grad_fn.name() == "LinalgSvdBackward0"
    assert L.eigh(t(SYM, requires_grad=True)).eigenvectors.grad_fn.name() == "LinalgEighBackward0"
    assert L.qr(t(TALL, requires_grad=True)).R.grad_fn.name() == "LinalgQrBackward0"
    assert L.pinv(t(TALL, requires_grad=True)).grad_fn.name() == "LinalgPinvBackward0"
    assert L.matrix_power(t(W, requires_grad=True), 0).grad_fn.name() == "CopyBackwards"
    assert L.matrix_power(t(W, requires_grad=True), 1).grad_fn.name() == "CloneBackward0"


@pytest.mark.parametrize("x", [TALL, TALL.T.copy(), W], ids=["tall", "wide", "square"])
def test_qr_gives_the_householder_factors_with_lapacks_signs(x: np.ndarray) -> None:
    q, r = (f.numpy() for f in L.qr(t(x)))
    expected_q, expected_r = householder_qr(x)
    np.testing.assert_allclose(q, expected_q, atol=1e-14)
    np.testing.assert_allclose(r, expected_r, atol=1e-14)
    np.testing.assert_allclose(q.T @ q, np.eye(q.shape[1]), atol=1e-14)


def test_eigh_gives_the_eigen_equation_in_ascending_order() -> None:
    a = read_triangle(SYM + np.triu(W, 1), "U")
    values, vectors = (f.numpy() for f in L.eigh(t(SYM + np.triu(W, 1)), UPLO="U"))
    np.testing.assert_allclose(a @ vectors, vectors * values, atol=1e-14)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(3), atol=1e-14)
    assert (np.diff(values) > 0).all()


def _svd_invariants(full_matrices: bool) -> Callable:
    """Functions of the SVD that do not depend on the factors' signs (gradcheck perturbs A, and the signs with it)."""
    def f(x: ag.Tensor) -> ag.Tensor:
        u, s, vh = L.svd(x, full_matrices=full_matrices)
        k = s.shape[-1]
        uk, vk = u[..., :k], vh[..., :k, :]
        return (uk @ vk).sum() + (uk * uk * 1.5).sum() + (vk * vk * 0.5).sum() + (s * s).sum()
    return f


GRADCHECKS = [
    ("svd full tall", _svd_invariants(True), (2, 4, 3)),
    ("svd full wide", _svd_invariants(True), (3, 5)),
    ("svd reduced tall", _svd_invariants(False), (4, 3)),
    ("svd reduced wide", _svd_invariants(False), (2, 3, 4)),
    ("svdvals", L.svdvals, (2, 3, 4)),
    # eigh reads one triangle but its gradient is PyTorch's symmetric one: differentiate through x + x^T
    ("eigh", lambda x: (L.eigh(x + x.mT)[1] ** 2 * 2).sum() + L.eigh(x + x.mT)[0].sum(), (2, 3, 3)),
    ("eigvalsh upper", lambda x: L.eigvalsh(x + x.mT, "U") * 1.0, (3, 3)),
    ("qr tall", lambda x: (L.qr(x)[0], L.qr(x)[1]), (2, 4, 3)),
    ("qr wide", lambda x: (L.qr(x)[0], L.qr(x)[1]), (3, 5)),
    ("qr complete wide", lambda x: L.qr(x, mode="complete")[1], (3, 4)),
    ("pinv tall", L.pinv, (2, 4, 3)),
    ("pinv wide", L.pinv, (3, 4)),
    ("matrix norm 2", lambda x: L.matrix_norm(x, 2, dim=(0, -1)), (3, 2, 4)),
    ("matrix norm -2", lambda x: L.matrix_norm(x, -2, keepdim=True), (2, 4, 3)),
    ("matrix norm nuc", lambda x: L.norm(x, "nuc"), (3, 4)),
    ("matrix_power", lambda x: (L.matrix_power(x, 6), L.matrix_power(x, -3), L.matrix_power(x, -1)), (2, 3, 3)),
    ("det", L.det, (2, 3, 3)),
]


@pytest.mark.parametrize(("name", "f", "shape"), GRADCHECKS, ids=[c[0] for c in GRADCHECKS])
def test_gradients_and_second_gradients_match_finite_differences(name: str, f: Callable, shape: tuple) -> None:
    x = np.random.default_rng(7).standard_normal(shape) + np.eye(shape[-2], shape[-1]) * 2
    leaf = t(x, requires_grad=True)
    assert gradcheck(f, [leaf])
    assert gradgradcheck(f, [leaf])


def test_qr_raises_torchs_errors_when_not_differentiable() -> None:
    a = t(TALL, requires_grad=True)
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed when mode='r'"):
        L.qr(a, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match="^The QR decomposition is not differentiable when mode='complete' and "
                       "nrows > ncols."):
        L.qr(a, mode="complete").R.sum().backward()
    assert L.qr(a, mode="r").Q.shape == (0,)
    assert L.qr(a, mode="complete").Q.shape == (4, 4)


def documented_rank(values: np.ndarray, shape: tuple, atol: float = 0.0, rtol: float | None = None) -> int:
    """The singular values (or eigenvalue magnitudes) above max(atol, rtol * the largest); rtol is eps * max(m, n)
    when neither is given, and 0 when only atol is (PyTorch's documented rule)."""
    if rtol is None:
        rtol = np.finfo(np.float64).eps * max(shape) if atol == 0 else 0.0
    return int((values > max(atol, rtol * values.max())).sum())


def test_matrix_rank_and_pinv_tolerances_follow_the_documented_rule() -> None:
    a = t(SINGULAR)
    singular = [np.linalg.svd(m, compute_uv=False) for m in SINGULAR]
    eigen = [np.abs(np.linalg.eigvalsh(read_triangle(m, "L"))) for m in SINGULAR]
    assert L.matrix_rank(a).tolist() == [2, 3, 1]  # row 2 = 2 row 1; det 1; every row a multiple of (1, 2, 3)
    assert L.matrix_rank(a).tolist() == [documented_rank(s, (3, 3)) for s in singular]
    assert L.matrix_rank(a, hermitian=True).tolist() == [documented_rank(e, (3, 3)) for e in eigen]
    assert L.matrix_rank(a, atol=1.0).tolist() == [documented_rank(s, (3, 3), atol=1.0) for s in singular]
    assert L.matrix_rank(a, rtol=0.3).tolist() == [documented_rank(s, (3, 3), rtol=0.3) for s in singular]
    assert L.matrix_rank(a).dtype == ag.int64
    # rank 1: v v^T with v = (1, 2, 3), whose pseudo-inverse is v v^T / |v|^4 = A / 196
    np.testing.assert_allclose(L.pinv(a[2]).numpy(), SINGULAR[2] / 196, atol=1e-15)
    u, s, vh = np.linalg.svd(SINGULAR[0])
    kept = s > 1.0  # atol=1.0 drops the smaller nonzero singular value
    assert kept.tolist() == [True, False, False]
    np.testing.assert_allclose(L.pinv(a[0], atol=1.0).numpy(), (vh[kept].T / s[kept]) @ u[:, kept].T, atol=1e-14)


@pytest.mark.parametrize(("f", "message"), [
    (lambda: L.svd(ag.ones(3)), "linalg.svd: The input tensor A must have at least 2 dimensions."),
    (lambda: L.svdvals(ag.ones(3, 3, dtype=ag.int64)),
     "linalg.svd: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: L.qr(ag.ones(3, 2), mode="x"),
     "qr received unrecognized mode 'x' but expected one of 'reduced' (default), 'r', or 'complete'"),
    (lambda: L.eigh(ag.ones(3, 2)), "linalg.eigh: A must be batches of square matrices, but they are 3 by 2 matrices"),
    (lambda: L.eigvalsh(ag.ones(2, 2), UPLO="X"), "Expected UPLO argument to be 'L' or 'U', but got X"),
    (lambda: L.matrix_power(ag.ones(2, 3), 2),
     "linalg.matrix_power: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda: L.matrix_rank(ag.ones(2, 2, dtype=ag.int64)),
     "This function doesn't handle types other than float and double"),
    (lambda: L.pinv(ag.ones(3)),
     "linalg.pinv(Float{[3]}): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types"),
])
def test_errors_match_torch(f: Callable, message: str) -> None:
    with pytest.raises(RuntimeError) as info:
        f()
    assert str(info.value) == message


def test_lowercase_uplo_is_accepted_as_torch_does() -> None:
    a = t(SYM + np.triu(W, 1))
    np.testing.assert_array_equal(L.eigvalsh(a, UPLO="u").numpy(), L.eigvalsh(a, UPLO="U").numpy())


CUDA_CASES: list[tuple[str, Callable]] = [
    ("svd eigh qr", lambda a, s: (_svd_invariants(True)(a) + L.eigh(s)[1].abs().sum() + L.eigvalsh(s, "U").sum()
                                  + L.qr(a)[0].sum() + L.qr(a)[1].sum())),
    ("pinv norms powers det", lambda a, s: (L.pinv(a).sum() + L.matrix_norm(a, "nuc").sum()
                                            + L.matrix_norm(a, -2).sum() + L.matrix_power(s, -2).sum()
                                            + L.det(s[0] * t(SINGULAR[0], device=s.device)))),
]


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "f"), CUDA_CASES, ids=[c[0] for c in CUDA_CASES])
def test_on_cuda_give_the_cpus_values_and_gradients(name: str, f: Callable, cupy) -> None:
    rng = np.random.default_rng(3)
    a, s = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 3, 3))
    s = s + np.swapaxes(s, -1, -2)
    results = []
    for d in ("cpu", "cuda:0"):
        leaves = [ag.tensor(x, device=d, requires_grad=True) for x in (a, s)]
        out = f(*leaves)
        first = ag.autograd.grad(out, leaves, create_graph=True)
        second = ag.autograd.grad(sum(g.sum() for g in first), leaves)
        results.append([x.detach().cpu().numpy() for x in (out, *first, *second)])
    for cpu, cuda in zip(*results):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-10, atol=1e-12)


def test_vecdot_conjugates_its_first_argument_and_matrix_rank_of_one_matrix_is_writable():
    x = np.array([[1 + 2j, -0.5j, 3.0], [2 - 1j, 1 + 1j, -1j]])
    y = np.array([0.5 - 1j, 2 + 0.25j, -1 + 1j])
    want = [sum(a.conjugate() * b for a, b in zip(row, y)) for row in x.tolist()]
    np.testing.assert_allclose(ag.linalg.vecdot(ag.tensor(x), ag.tensor(y)).numpy(), want, rtol=1e-15)
    rank = ag.linalg.matrix_rank(ag.eye(3, dtype=ag.float64))
    assert rank.add_(1).item() == 4  # a 0-d array, not numpy's scalar
