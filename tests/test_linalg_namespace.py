"""actorgrad.linalg's decompositions (svd, svdvals, eigh, eigvalsh, qr), pinv, matrix_rank, matrix_power, the
spectral and nuclear matrix norms, and det's gradient at singular matrices, against PyTorch 2.13's numbers."""

from __future__ import annotations

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


# det's gradient is the cofactor matrix, a polynomial in A: at a singular matrix too (PyTorch's SVD form; the
# numbers are torch's under create_graph=True, see the report on its plain backward).
SINGULAR = np.array([
    [[1.0, 2, 3], [2, 4, 6], [1, 0, 1]],  # rank 2
    [[1.0, 2, 0], [0, 1, 0], [3, 0, 1]],  # invertible, beside singular ones in the batch
    [[1.0, 2, 3], [2, 4, 6], [3, 6, 9]],  # rank 1: zero
])
COFACTORS = np.array([
    [[4.0, 4, -4], [-2, -2, 2], [0, 0, 0]],
    [[1.0, 0, -3], [-2, 1, 6], [0, 0, 1]],
    [[0.0, 0, 0], [0, 0, 0], [0, 0, 0]],
])


@pytest.mark.parametrize("create_graph", [False, True])
def test_det_gradient_of_singular_matrices_is_the_cofactor_matrix(create_graph: bool) -> None:
    a = t(SINGULAR, requires_grad=True)
    (grad,) = ag.autograd.grad(L.det(a).sum(), a, create_graph=create_graph)
    np.testing.assert_allclose(grad.detach().numpy(), COFACTORS, atol=1e-12)
    two = t([[1.0, 2], [2, 4]], requires_grad=True)
    L.det(two).backward()
    np.testing.assert_allclose(two.grad.numpy(), [[4.0, -2], [-2, 1]], atol=1e-14)


def test_det_gradient_near_singular_matches_torch() -> None:
    _, grad = value_and_grad(L.det, np.array([[1.0, 2], [2, 4 + 1e-12]]))
    np.testing.assert_allclose(grad, [[4.0, -2], [-2, 1]], atol=1e-11)


def test_det_double_backward_at_a_singular_matrix() -> None:
    assert gradgradcheck(L.det, [t([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]], requires_grad=True)])


def test_inv_of_a_singular_matrix_names_the_zero_pivot() -> None:
    with pytest.raises(LinAlgError, match=r"^linalg.inv: The diagonal element 2 is zero, the inversion could not be "
                       r"completed because the input matrix is singular.$"):
        L.inv(t([[1.0, 2], [2, 4]]))


TORCH_GRADS = [  # (name, loss of A, A, torch's loss, torch's gradient)
    ("svd", lambda x: (L.svd(x)[0] * t(W)).sum() + (L.svd(x)[1] * t(W[0])).sum() + (L.svd(x)[2] * t(W.T)).sum(),
     W + SYM, -0.5646544873, [[0.3102324329, 0.9238233331, -0.868835576], [1.2430365729, -0.2675031106, 1.2429211299],
                              [-0.2269915437, 1.4975228436, -0.6735517734]]),
    ("svd U only", lambda x: (L.svd(x)[0] * t(W)).sum(), W + SYM, 0.251612018,
     [[0.1031865449, -0.0716929599, -0.0444802835], [0.1830475634, 0.2897493112, 0.214910377],
      [-0.186644519, 0.1310497566, -0.4017992696]]),
    ("eigh", lambda x: (L.eigh(x)[1] * t(W)).sum() + (L.eigh(x)[0] * t(W[1])).sum(), SYM, -1.026549254,
     [[1.0565991762, 0.2650850726, -0.6403417209], [0.2650850726, -0.0615747094, -0.4383063769],
      [-0.6403417209, -0.4383063769, -0.6950244668]]),
    ("eigh upper", lambda x: (L.eigh(x, UPLO="U")[1] * t(W)).sum(), SYM + np.triu(W, 1), -2.1389401707,
     [[-0.2119323585, 0.2525486443, 0.2090567221], [0.2525486443, 0.1558602198, 0.4288184097],
      [0.2090567221, 0.4288184097, 0.0560721387]]),
    ("qr tall", lambda x: (L.qr(x)[0] * t(TALL)).sum() + (L.qr(x)[1] * t(W)).sum(), TALL, -6.9379386668,
     [[1.2411970081, 1.0625687346, 0.5758597345], [1.8372864438, -1.0864630342, 1.0781452864],
      [-4.9107078123, 1.5781063685, -0.4296703386], [0.3114621962, 0.8932154869, -0.247733138]]),
    ("qr wide", lambda x: (L.qr(x)[0] * t(W)).sum() + (L.qr(x)[1] * t(TALL.T)).sum(), TALL.T.copy(), -1.0696242687,
     [[-1.7067064096, 2.1522750822, -0.4618361071, -0.6347865316], [-0.8561301532, -0.121065405, -0.6410814936,
                                                                     -0.4407259233],
      [2.2553577368, 0.7622871508, 2.1132254799, -1.5500989387]]),
    ("pinv", lambda x: (L.pinv(x) * t(TALL.T)).sum(), TALL, 3.0,
     [[-0.400482509, -0.1606219005, -0.2466693473], [0.2123039807, -0.1263637582, -0.2654872001],
      [-0.4704463209, 0.2825358531, -0.2803913684], [-0.246079614, -0.0505026136, 0.0652995577]]),
    ("matrix norms 2 -2 nuc",
     lambda x: L.matrix_norm(x, 2) + 2 * L.matrix_norm(x, -2) + 3 * L.matrix_norm(x, "nuc"), TALL, 27.11857294,
     [[2.9770164968, 2.1143988309, 1.3374199769], [-1.632433609, 0.6462577259, 2.1898820593],
      [2.705479579, -2.9237500484, 2.287495564], [1.9738585832, 1.1096995239, -0.8785245606]]),
    ("matrix_power 5 and -2",
     lambda x: (L.matrix_power(x, 5) * t(W)).sum() + (L.matrix_power(x, -2) * t(W)).sum(), SYM, -1530.953571163,
     [[170.2894643868, -328.1242812423, -590.0061990359], [1100.6673532015, 135.9538643882, -1363.8193018093],
      [2091.0913582217, 642.2589663346, -1880.6528869104]]),
]


@pytest.mark.parametrize(("name", "f", "x", "value", "grad"), TORCH_GRADS, ids=[c[0] for c in TORCH_GRADS])
def test_values_and_gradients_match_torch(name: str, f: Callable, x: np.ndarray, value: float, grad: list) -> None:
    out, got = value_and_grad(f, x)
    assert out == pytest.approx(value, rel=1e-9)
    np.testing.assert_allclose(got, grad, rtol=1e-8, atol=1e-9)


def test_svd_factors_and_node_names_match_torch() -> None:
    u, s, vh = L.svd(t(W + SYM, requires_grad=True))
    np.testing.assert_allclose(s.detach().numpy(), [5.2308306726, 3.8291375058, 2.3592618414], rtol=1e-9)
    np.testing.assert_allclose(u.detach().numpy()[0], [-0.3040223833, -0.5417166655, 0.7836539062], rtol=1e-8)
    np.testing.assert_allclose(vh.detach().numpy()[2], [0.7166409657, -0.0468551589, -0.6958665966], rtol=1e-8)
    assert {x.grad_fn.name() for x in (u, s, vh)} == {"LinalgSvdBackward0"}
    assert L.svdvals(t(W, requires_grad=True)).grad_fn.name() == "LinalgSvdBackward0"
    assert L.eigh(t(SYM, requires_grad=True)).eigenvectors.grad_fn.name() == "LinalgEighBackward0"
    assert L.qr(t(TALL, requires_grad=True)).R.grad_fn.name() == "LinalgQrBackward0"
    assert L.pinv(t(TALL, requires_grad=True)).grad_fn.name() == "LinalgPinvBackward0"
    assert L.matrix_power(t(W, requires_grad=True), 0).grad_fn.name() == "CopyBackwards"
    assert L.matrix_power(t(W, requires_grad=True), 1).grad_fn.name() == "CloneBackward0"


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


def test_matrix_rank_and_pinv_tolerances_match_torch() -> None:
    a = t(SINGULAR)
    assert L.matrix_rank(a).tolist() == [2, 3, 1]
    assert L.matrix_rank(a, hermitian=True).tolist() == [3, 3, 1]
    assert L.matrix_rank(a, atol=1.0).tolist() == [1, 2, 1]
    assert L.matrix_rank(a, rtol=0.3).tolist() == [1, 2, 1]
    assert L.matrix_rank(a).dtype == ag.int64
    np.testing.assert_allclose(L.pinv(a[2]).numpy()[0], [0.005102, 0.010204, 0.015306], atol=1e-6)
    np.testing.assert_allclose(L.pinv(a[0], atol=1.0).numpy()[2], [0.042266, 0.084533, 0.012223], atol=1e-6)


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
def test_on_cuda_give_the_cpus_values_and_gradients(name: str, f: Callable) -> None:
    cupy = pytest.importorskip("cupy")
    if not cupy.cuda.is_available():
        pytest.skip("no CUDA device")
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
