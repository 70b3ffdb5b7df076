"""A decomposition (svd, eigh, qr, slogdet) records one node with an output per factor, as PyTorch's
LinalgSvdBackward0, LinalgEighBackward0, LinalgQrBackward0 and LinalgSlogdetBackward0 do; and
pinv(hermitian=True). Gradients through any subset of the outputs are checked against central differences of the
same loss over numpy's decompositions, pinv against the Penrose conditions and Golub and Pereyra's differential."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

L = ag.linalg
TALL = np.array([[1.0, 2, 0.5], [-1, 0.5, 2], [0.3, -2, 1], [1, 1, -1]])
WIDE = TALL.T.copy()
W = np.array([[1.0, -2, 0.5], [0.3, 1, -1], [2, 0.1, -0.7]])
SYM = np.array([[2.0, 1, 0], [1, 3, 1], [0, 1, 4.5]])


def t(x: np.ndarray, **kw) -> ag.Tensor:
    return ag.tensor(x, dtype=ag.float64, **kw)


DECOMPOSITIONS = [
    ("svd", lambda a: L.svd(a), TALL, "LinalgSvdBackward0"),
    ("svd reduced", lambda a: L.svd(a, full_matrices=False), WIDE, "LinalgSvdBackward0"),
    ("eigh", lambda a: L.eigh(a, UPLO="U"), SYM, "LinalgEighBackward0"),
    ("qr", lambda a: L.qr(a), TALL, "LinalgQrBackward0"),
    ("qr complete", lambda a: L.qr(a, mode="complete"), WIDE, "LinalgQrBackward0"),
    ("slogdet", lambda a: L.slogdet(a), W, "LinalgSlogdetBackward0"),
]


@pytest.mark.parametrize(("op", "f", "x", "name"), DECOMPOSITIONS, ids=[c[0] for c in DECOMPOSITIONS])
def test_factors_are_the_outputs_of_one_node(op: str, f: Callable, x: np.ndarray, name: str) -> None:
    a = t(x, requires_grad=True)
    outputs = f(a)
    node = outputs[0].grad_fn
    assert node.name() == name
    assert all(o.grad_fn is node for o in outputs)
    assert [o.output_nr for o in outputs] == list(range(len(outputs)))
    assert [meta.shape for meta in node.input_metadata] == [o.shape for o in outputs]
    ((accumulator, slot),) = node.next_functions
    assert accumulator.variable is a and slot == 0


def test_svdvals_and_eigvalsh_are_outputs_of_their_decompositions_node() -> None:
    def where(values: ag.Tensor) -> tuple:
        return values.grad_fn.name(), values.output_nr, len(values.grad_fn.input_metadata)

    assert where(L.svdvals(t(TALL, requires_grad=True))) == ("LinalgSvdBackward0", 1, 3)
    assert where(L.eigvalsh(t(SYM, requires_grad=True))) == ("LinalgEighBackward0", 0, 2)
    ((node, slot),) = L.matrix_norm(t(TALL, requires_grad=True), 2).grad_fn.next_functions
    assert (node.name(), slot) == ("LinalgSvdBackward0", 1)


def test_outputs_without_grad_mode_have_no_node() -> None:
    a = t(TALL, requires_grad=True)
    with ag.no_grad():
        assert [o.grad_fn for o in L.svd(a)] == [None, None, None]
    with ag.inference_mode():
        assert [o.is_inference() for o in L.qr(a)] == [True, True]


@pytest.mark.parametrize(("op", "f", "x", "name"), DECOMPOSITIONS[:4], ids=[c[0] for c in DECOMPOSITIONS[:4]])
def test_the_node_runs_once_for_all_its_outputs(op: str, f: Callable, x: np.ndarray, name: str) -> None:
    a = t(x, requires_grad=True)
    outputs = f(a)
    runs = []
    outputs[0].grad_fn.register_prehook(lambda grads: runs.append([g is not None for g in grads]))
    sum((o * o).sum() for o in outputs).backward()
    assert runs == [[True] * len(outputs)]


def _weights(shape: tuple, wave: Callable) -> np.ndarray:
    return wave(np.arange(math.prod(shape))).reshape(shape)


# Losses of the factors (actorgrad's or numpy's) that do not change when a factor's column (U, V, Q) or row (Vh, R)
# changes sign: LAPACKs choose signs differently, and the reference is numpy's decomposition.
def _u(o: tuple) -> object:
    return (o[0] ** 2 * _weights(o[0].shape, np.cos)).sum()


def _s(o: tuple) -> object:
    return (o[1] * np.array([1.0, -0.5, 2.0])).sum()


def _vh(o: tuple) -> object:
    return (o[2] ** 2 * _weights(o[2].shape, np.sin)).sum()


def _q(o: tuple) -> object:
    return (o[0] ** 2 * _weights(o[0].shape, np.cos)).sum()


def _r(o: tuple) -> object:
    return (o[1] ** 2 * _weights(o[1].shape, np.sin)).sum()


def _eigenvalues(o: tuple) -> object:
    return (o[0] * np.array([1.0, -0.5, 2.0])).sum()


def _eigenvectors(o: tuple) -> object:
    return (o[1] ** 2 * W).sum()


def _sign_times_logabsdet(o: tuple) -> object:
    return o[0] * o[1]


# op -> (actorgrad's decomposition, numpy's), which take the same keywords
DECOMPOSE = {"svd": (L.svd, np.linalg.svd), "eigh": (L.eigh, np.linalg.eigh), "qr": (L.qr, np.linalg.qr),
             "slogdet": (L.slogdet, np.linalg.slogdet)}
REDUCED, FULL = {"full_matrices": False}, {"full_matrices": True}
SUBSETS = [  # (case, op, keywords, the loss's parts, A)
    ("svd tall U", "svd", REDUCED, [_u], TALL),
    ("svd tall S", "svd", FULL, [_s], TALL),
    ("svd tall Vh", "svd", REDUCED, [_vh], TALL),
    ("svd tall full U Vh", "svd", FULL, [_u, _vh], TALL),
    ("svd tall all", "svd", REDUCED, [_u, _s, _vh], TALL),
    ("svd wide full U", "svd", FULL, [_u], WIDE),
    ("svd wide Vh", "svd", REDUCED, [_vh], WIDE),
    ("svd wide full all", "svd", FULL, [_u, _s, _vh], WIDE),
    ("eigh values", "eigh", {}, [_eigenvalues], SYM),
    ("eigh vectors", "eigh", {}, [_eigenvectors], SYM),
    ("eigh all", "eigh", {}, [_eigenvalues, _eigenvectors], SYM),
    ("qr tall Q", "qr", {}, [_q], TALL),
    ("qr tall all", "qr", {}, [_q, _r], TALL),
    ("qr wide R", "qr", {}, [_r], WIDE),
    ("qr wide all", "qr", {}, [_q, _r], WIDE),
    ("slogdet sign times logabsdet", "slogdet", {}, [_sign_times_logabsdet], W),
]


@pytest.mark.parametrize(("case", "op", "kwargs", "parts", "x"), SUBSETS, ids=[c[0] for c in SUBSETS])
def test_gradients_through_any_outputs_match_central_differences_of_numpys_factors(
        case: str, op: str, kwargs: dict, parts: list, x: np.ndarray, numpy_gradient) -> None:
    ours, numpys = DECOMPOSE[op]

    def loss(factors: tuple) -> object:
        return sum(part(factors) for part in parts)

    def reference(a: np.ndarray) -> float:
        if op == "eigh":  # eigh's gradient is PyTorch's symmetric one: perturb both triangles alike
            a = (a + a.T) / 2
        factors = numpys(a, **kwargs)
        if kwargs.get("full_matrices"):
            # PyTorch documents that gradients through U[..., k:] and Vh[..., k:, :] (k = min(m, n)) are ignored,
            # as any basis of those subspaces would do: they are held at their values at A
            k, (u, s, vh), (u0, _, vh0) = min(x.shape), factors, numpys(x, **kwargs)
            factors = (np.concatenate([u[:, :k], u0[:, k:]], 1), s, np.concatenate([vh[:k], vh0[k:]], 0))
        return loss(factors)

    a = t(x, requires_grad=True)
    out = loss(ours(a, **kwargs))
    assert out.item() == pytest.approx(reference(x), rel=1e-12)
    (grad,) = ag.autograd.grad(out, a)
    np.testing.assert_allclose(grad.numpy(), numpy_gradient(reference, x), rtol=1e-7, atol=1e-8)


def test_a_determinants_sign_alone_gives_no_gradient() -> None:
    a = t(W, requires_grad=True)
    L.slogdet(a).sign.sum().backward()  # piecewise constant: PyTorch records no gradient for it
    assert a.grad is None


SECOND = [
    ("svd U", lambda x: L.svd(x, full_matrices=False).U, (4, 3)),
    ("svd S Vh", lambda x: L.svd(x, full_matrices=False)[1:], (3, 5)),
    ("svd all", lambda x: tuple(L.svd(x, full_matrices=False)), (2, 4, 3)),
    ("eigh vectors", lambda x: L.eigh(x + x.mT).eigenvectors, (2, 3, 3)),
    ("eigh all", lambda x: tuple(L.eigh(x + x.mT)), (3, 3)),
    ("qr R", lambda x: L.qr(x).R, (4, 3)),
    ("qr all", lambda x: tuple(L.qr(x)), (3, 5)),
    ("slogdet", lambda x: tuple(L.slogdet(x)), (2, 3, 3)),
]


@pytest.mark.parametrize(("case", "f", "shape"), SECOND, ids=[c[0] for c in SECOND])
def test_second_gradients_match_finite_differences(case: str, f: Callable, shape: tuple) -> None:
    # distinct singular values (eigenvalues) well apart: the factors are smooth there
    spread = np.eye(*shape[-2:]) * np.array([6.0, 3.0, -5.0, 0.0, 0.0])[: shape[-1]]
    x = np.random.default_rng(5).standard_normal(shape) + spread
    leaf = t(x, requires_grad=True)
    assert gradcheck(f, [leaf])
    assert gradgradcheck(f, [leaf])


def assert_penrose(a: np.ndarray, x: np.ndarray) -> None:
    """X is A's pseudo-inverse: A X A = A, X A X = X, and A X and X A symmetric."""
    for got, want in ((a @ x @ a, a), (x @ a @ x, x), (a @ x, (a @ x).T), (x @ a, (x @ a).T)):
        np.testing.assert_allclose(got, want, atol=1e-12)


def pinv_differential(a: np.ndarray, pinv: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Golub and Pereyra's differential of the pseudo-inverse at A (with A+ = `pinv`) along `direction`:
    -A+ dA A+ + A+ A+^T dA^T (I - A A+) + (I - A+ A) dA^T A+^T A+."""
    m, n = a.shape
    return (-pinv @ direction @ pinv + pinv @ pinv.T @ direction.T @ (np.eye(m) - a @ pinv)
            + (np.eye(n) - pinv @ a) @ direction.T @ pinv.T @ pinv)


def test_pinv_of_a_hermitian_matrix_is_its_inverse_with_pinvs_gradient(numpy_gradient) -> None:
    x = SYM - 2.5 * np.eye(3)  # indefinite (eigenvalues of both signs), det -2: invertible
    a = t(x, requires_grad=True)
    out = L.pinv(a, hermitian=True)
    np.testing.assert_allclose(x @ out.detach().numpy(), np.eye(3), atol=1e-14)
    assert out.grad_fn.name() == "LinalgPinvBackward0"
    (out * t(W)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), numpy_gradient(lambda y: (np.linalg.pinv(y) * W).sum(), x),
                               rtol=1e-7, atol=1e-8)


def test_pinv_hermitian_reads_the_lower_triangle_and_differentiates_as_the_general_pinv() -> None:
    a = t(W, requires_grad=True)
    out = L.pinv(a, hermitian=True)
    lower = np.tril(W) + np.tril(W, -1).T
    assert_penrose(lower, out.detach().numpy())
    (out * t(W)).sum().backward()
    # PyTorch's gradient is the general pinv's, taken at the whole (not symmetric) input and the output: the
    # differential's pairing with the upstream gradient W along each unit direction
    units = np.eye(9).reshape(9, 3, 3)
    expected = [(pinv_differential(W, out.detach().numpy(), e) * W).sum() for e in units]
    np.testing.assert_allclose(a.grad.numpy().ravel(), expected, rtol=1e-12, atol=1e-14)


def test_pinv_hermitian_gradients_match_finite_differences_on_symmetric_inputs() -> None:
    x = np.random.default_rng(4).standard_normal((2, 3, 3))
    leaf = t(x, requires_grad=True)
    assert gradcheck(lambda x: L.pinv(x + x.mT, hermitian=True), [leaf])
    assert gradgradcheck(lambda x: L.pinv(x + x.mT, hermitian=True), [leaf])


def test_pinv_hermitian_drops_eigenvalues_below_the_tolerance_by_magnitude() -> None:
    a = t(np.diag([3.0, -0.4, 0.05]))
    np.testing.assert_allclose(L.pinv(a, hermitian=True).numpy().diagonal(), [1 / 3, -2.5, 20])
    np.testing.assert_allclose(L.pinv(a, hermitian=True, atol=0.1).numpy().diagonal(), [1 / 3, -2.5, 0])
    np.testing.assert_allclose(L.pinv(a, hermitian=True, rtol=0.2).numpy().diagonal(), [1 / 3, 0, 0])
    assert L.pinv(ag.zeros(2, 0, 0), hermitian=True).shape == (2, 0, 0)


HALF = ("linalg.pinv(Half{[3, 3]}): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble "
        "types")


@pytest.mark.parametrize(("f", "message"), [
    (lambda: L.pinv(ag.ones(2, 3), hermitian=True),
     "linalg.eigh: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda: L.pinv(ag.ones(3, 3, dtype=ag.float16), hermitian=True), HALF),
    (lambda: L.pinv(ag.ones(3, 3, dtype=ag.float16)), HALF),
])
def test_pinv_errors_match_torch(f: Callable, message: str) -> None:
    with pytest.raises(RuntimeError) as info:
        f()
    assert str(info.value) == message
