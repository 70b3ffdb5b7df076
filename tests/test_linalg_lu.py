"""linalg.lu_factor, lu_factor_ex, lu, lu_solve and lu_unpack: factors checked by A = P L U and partial pivoting's
rules (square, wide and tall matrices, batches), LAPACK's pivots and info (against a getf2 written out here), solves
by their residuals, first and second derivatives against finite differences, the nodes' outputs as PyTorch's, and
PyTorch's errors."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(12)
L = ag.linalg
SHAPES = [(3, 3), (2, 3, 5), (2, 5, 3)]


def t(x: np.ndarray, **kw) -> ag.Tensor:
    return ag.tensor(x, dtype=kw.pop("dtype", ag.float64), **kw)


def getf2(a: np.ndarray) -> tuple[np.ndarray, list[int], int]:
    """LAPACK's unblocked LU of one matrix, element by element: packed factors, 1-based pivots, info."""
    lu = a.astype(np.float64).copy()
    m, n = lu.shape
    pivots, info = [], 0
    for j in range(min(m, n)):
        p = j + max(range(m - j), key=lambda i: (abs(lu[j + i, j]), -i))  # the first of the largest
        pivots.append(p + 1)
        lu[[j, p]] = lu[[p, j]]
        if lu[j, j] == 0:
            info = info or j + 1
            continue
        for i in range(j + 1, m):
            lu[i, j] /= lu[j, j]
            for k in range(j + 1, n):
                lu[i, k] -= lu[i, j] * lu[j, k]
    return lu, pivots, info


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factor_gives_lapacks_factors_and_pivots(shape: tuple) -> None:
    a = RNG.standard_normal(shape)
    LU, pivots, info = L.lu_factor_ex(t(a))
    assert pivots.dtype == ag.int32 and info.dtype == ag.int32 and info.shape == shape[:-2]
    for i, matrix in enumerate(a.reshape((-1,) + shape[-2:])):
        lu, piv, code = getf2(matrix)
        np.testing.assert_allclose(LU.numpy().reshape((-1,) + shape[-2:])[i], lu, atol=1e-13)
        assert pivots.numpy().reshape(-1, min(shape[-2:]))[i].tolist() == piv
        assert info.numpy().reshape(-1)[i] == code == 0


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factors_multiply_back_to_a(shape: tuple) -> None:
    a = RNG.standard_normal(shape)
    P, Lf, U = (x.numpy() for x in L.lu(t(a)))
    m, n = shape[-2:]
    k = min(m, n)
    assert P.shape == shape[:-2] + (m, m) and Lf.shape == shape[:-2] + (m, k) and U.shape == shape[:-2] + (k, n)
    np.testing.assert_allclose(P @ Lf @ U, a, atol=1e-13)
    np.testing.assert_array_equal(np.diagonal(Lf, 0, -2, -1), 1)
    assert not np.triu(Lf, 1).any() and not np.tril(U, -1).any() and np.abs(Lf).max() <= 1
    assert set(np.unique(P)) == {0, 1} and (P.sum(-1) == 1).all() and (P.sum(-2) == 1).all()
    LU, pivots = L.lu_factor(t(a))
    unpacked = ag.lu_unpack(LU, pivots)
    for mine, theirs in zip(unpacked, (P, Lf, U)):
        np.testing.assert_array_equal(mine.numpy(), theirs)


def test_singular_matrices_give_info_or_torchs_error() -> None:
    a = np.array([[[1.0, 2], [2, 4]], [[0, 0], [0, 0]], [[2, 1], [1, 3]]])
    LU, pivots, info = L.lu_factor_ex(t(a))
    assert info.tolist() == [2, 1, 0]
    for i in range(3):
        lu, piv, code = getf2(a[i])
        np.testing.assert_array_equal(LU.numpy()[i], lu)
        assert pivots.numpy()[i].tolist() == piv and code == info.tolist()[i]
    message = ("torch.linalg.lu_factor: (Batch element 0): U[2,2] is zero and using it on lu_solve would result in a "
               "division by zero. If you still want to perform the factorization, consider calling linalg.lu(A, "
               "pivot) or linalg.lu_factor_ex(A, pivot)")
    with pytest.raises(RuntimeError, match=re.escape(message)):
        L.lu_factor(t(a))
    with pytest.raises(RuntimeError, match=re.escape("torch.linalg.lu_factor_ex: U[1,1] is zero")):
        L.lu_factor_ex(t(a[1]), check_errors=True)
    P, Lf, U = L.lu(t(a[1]))  # lu itself takes singular matrices
    np.testing.assert_array_equal(Lf.numpy(), np.eye(2))


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3), (3, 0), (0, 2, 2)])
def test_empty_matrices_factor_to_empty_factors(shape: tuple) -> None:
    m, n = shape[-2:]
    batch, k = shape[:-2], min(m, n)
    lu, pivots, info = L.lu_factor_ex(t(np.zeros(shape)))
    assert (lu.shape, pivots.shape, info.shape) == (shape, batch + (k,), batch)
    P, Lf, U = L.lu(t(np.zeros(shape)))
    assert (P.shape, Lf.shape, U.shape) == (batch + (m, m), batch + (m, k), batch + (k, n))
    np.testing.assert_array_equal(P.numpy(), np.broadcast_to(np.eye(m), batch + (m, m)))


def test_the_nodes_outputs_are_pytorchs() -> None:
    a = t(RNG.standard_normal((3, 3)), requires_grad=True)
    P, Lf, U = L.lu(a)
    assert Lf.grad_fn is U.grad_fn and Lf.grad_fn.name() == "LinalgLuBackward0"
    assert (Lf.output_nr, U.output_nr) == (1, 2) and not P.requires_grad
    LU, pivots = L.lu_factor(a)
    assert LU.grad_fn.name() == "LinalgLuFactorExBackward0" and not pivots.requires_grad
    _, Lu, Uu = ag.lu_unpack(LU, pivots)
    assert Lu.grad_fn is Uu.grad_fn and Lu.grad_fn.name() == "LuUnpackBackward0" and (Lu.output_nr, Uu.output_nr) == (
        0, 1)
    assert L.lu_solve(LU, pivots, t(np.ones((3, 1)))).grad_fn.name() == "LinalgLuSolveBackward0"


@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (5, 3)])
def test_lu_gradients_match_finite_differences(shape: tuple) -> None:
    a = t(RNG.standard_normal(shape), requires_grad=True)
    for f in (lambda a: tuple(L.lu(a)[1:]), lambda a: L.lu_factor(a).LU):
        assert gradcheck(f, [a])
        assert gradgradcheck(f, [a])
    assert gradcheck(lambda a: L.lu(a).U, [a])  # one factor's gradient alone (the other's is None)
    assert gradcheck(lambda a: L.lu(a).L, [a])


def test_batched_lu_gradients_match_finite_differences() -> None:
    a = t(RNG.standard_normal((2, 3, 3)), requires_grad=True)
    assert gradcheck(lambda a: tuple(L.lu(a)[1:]), [a])


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_unpack_gradients_match_finite_differences(shape: tuple) -> None:
    LU, pivots = L.lu_factor(t(RNG.standard_normal(shape)))
    leaf = LU.requires_grad_()
    assert gradcheck(lambda x: tuple(ag.lu_unpack(x, pivots)[1:]), [leaf])
    assert gradgradcheck(lambda x: tuple(ag.lu_unpack(x, pivots)[1:]), [leaf])
    assert gradcheck(lambda x: ag.lu_unpack(x, pivots).U, [leaf])


SOLVES = [(left, adjoint) for left in (True, False) for adjoint in (False, True)]


@pytest.mark.parametrize(("left", "adjoint"), SOLVES)
def test_lu_solve_solves_and_differentiates(left: bool, adjoint: bool) -> None:
    a = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = RNG.standard_normal((4, 1, 3, 2) if left else (4, 1, 2, 3))
    LU, pivots = L.lu_factor(t(a))
    x = L.lu_solve(LU, pivots, t(b), left=left, adjoint=adjoint).numpy()
    op = np.swapaxes(a, -1, -2) if adjoint else a
    np.testing.assert_allclose(op @ x if left else x @ op, np.broadcast_to(b, x.shape), atol=1e-12)
    A, B = t(a, requires_grad=True), t(b[0], requires_grad=True)
    assert gradcheck(lambda A, B: L.lu_solve(*L.lu_factor(A), B, left=left, adjoint=adjoint), [A, B])
    assert gradgradcheck(lambda A, B: L.lu_solve(*L.lu_factor(A), B, left=left, adjoint=adjoint), [A, B])
    packed = LU.requires_grad_()  # LU's own gradient, not through the factorization
    assert gradcheck(lambda lu: L.lu_solve(lu, pivots, B, left=left, adjoint=adjoint), [packed])


def test_lu_unpack_leaves_out_what_it_is_not_asked_for() -> None:
    LU, pivots = L.lu_factor(t(RNG.standard_normal((3, 3))))
    assert [tuple(x.shape) for x in ag.lu_unpack(LU, pivots, unpack_data=False)] == [(3, 3), (0,), (0,)]
    assert [tuple(x.shape) for x in ag.lu_unpack(LU, pivots, unpack_pivots=False)] == [(0,), (3, 3), (3, 3)]


M33 = np.eye(3)
PIVOTS = ag.tensor([1, 2, 3], dtype=ag.int32)
ERRORS: list[tuple[Callable, type, str]] = [
    (lambda: L.lu_factor(t(np.ones(3))), RuntimeError,
     "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: [3] instead"),
    (lambda: L.lu_factor(t(M33, dtype=ag.int64)), NotImplementedError, "\"lu_cpu\" not implemented for 'Long'"),
    (lambda: L.lu_factor(t(M33), pivot=False), RuntimeError,
     "linalg.lu_factor: LU without pivoting is not implemented on the CPU"),
    (lambda: L.lu(t(np.ones(3))), RuntimeError,
     "linalg.lu: Expected tensor with 2 or more dimensions. Got size: [3] instead"),
    (lambda: L.lu_solve(t(M33), PIVOTS, t(np.ones(3))), RuntimeError,
     "linalg.lu_solve: The input tensor B must have at least 2 dimensions."),
    (lambda: L.lu_solve(t(M33), PIVOTS, t(np.ones((4, 2)))), RuntimeError,
     "linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x2)"),
    (lambda: L.lu_solve(t(M33), PIVOTS.long(), t(np.ones((3, 2)))), RuntimeError,
     "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32"),
    (lambda: L.lu_solve(t(M33), PIVOTS[:2], t(np.ones((3, 2)))), RuntimeError,
     "linalg.lu_solve: Number of pivots per batch should be same as the dimension of the matrix"),
    (lambda: L.lu_solve(t(M33), PIVOTS, t(np.ones((3, 2)), dtype=ag.float32)), RuntimeError,
     "linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type Double and B of type Float "
     "instead"),
    (lambda: L.lu_solve(t(np.ones((2, 3))), PIVOTS, t(np.ones((3, 2)))), RuntimeError,
     "torch.linalg.lu_solve: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda: ag.lu_unpack(t(M33), PIVOTS.long()), RuntimeError,
     "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype."),
    (lambda: ag.lu_unpack(t(np.ones(3)), PIVOTS), RuntimeError,
     "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: [3] instead"),
    (lambda: ag.lu_unpack(t(M33), ag.tensor([4, 2, 3], dtype=ag.int32)), RuntimeError,
     "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you properly pass the result of "
     "lu_factor?"),
]


@pytest.mark.parametrize(("f", "kind", "message"), ERRORS)
def test_errors_match_torch(f: Callable, kind: type, message: str) -> None:
    with pytest.raises(kind, match=re.escape(message)):
        f()


@pytest.mark.gpu
def test_on_cuda_values_and_gradients_are_the_cpus(cupy) -> None:
    a, w, b = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3), RNG.standard_normal((2, 4, 3)), RNG.standard_normal(
        (3, 2))

    def f(a: ag.Tensor, w: ag.Tensor, b: ag.Tensor) -> ag.Tensor:
        LU, pivots = L.lu_factor(a)
        _, lower, upper = ag.lu_unpack(LU, pivots)
        return (L.lu(w).L.sum() + L.lu(w.mT).U.sum() + lower.sum() + upper.sum()
                + L.lu_solve(LU, pivots, b).sum() + L.lu_solve(LU, pivots, b.mT, left=False, adjoint=True).sum())

    results = []
    for device in ("cpu", "cuda:0"):
        leaves = [ag.tensor(x, device=device, requires_grad=True) for x in (a, w, b)]
        out = f(*leaves)
        first = ag.autograd.grad(out, leaves, create_graph=True)
        second = ag.autograd.grad(sum(g.sum() for g in first), leaves)
        results.append([x.detach().cpu().numpy() for x in (out, *first, *second)])
    for cpu, cuda in zip(*results):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-10, atol=1e-12)
