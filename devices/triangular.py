"""Triangular solves and the LU factorization with partial pivoting, on any array module (numpy or CuPy): numpy
has neither, and CuPy keeps its own in cupyx.scipy, outside the array API the rest of actorgrad uses.

Both loop over the n rows (columns) in Python, one batched kernel per step over every matrix of the batch at once:
O(n) steps of O(n^2) work (O(n k) for a solve with k right-hand sides), as LAPACK's unblocked trtrs and getf2.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np


def solve_triangular(
    xp: ModuleType, a: Any, b: Any, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Any:
    """x with a x = b (x a = b when not `left`) for batches whose batch dims broadcast, reading only a's triangle
    named by `upper` (and not its diagonal, taken as ones, with `unitriangular`). A zero on the diagonal gives
    infinities and NaNs, as LAPACK's trtrs does, not an error."""
    if not left:  # x a = b is a^T x^T = b^T, whose triangle is the other one
        return xp.swapaxes(solve_triangular(xp, xp.swapaxes(a, -1, -2), xp.swapaxes(b, -1, -2), upper=not upper,
                                            unitriangular=unitriangular), -1, -2)
    n = a.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    x = xp.empty(batch + b.shape[-2:], dtype=np.result_type(a.dtype, b.dtype))
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(n - 1, -1, -1) if upper else range(n):
            known = slice(i + 1, n) if upper else slice(0, i)
            rest = b[..., i, :]
            if known.start < known.stop:  # no product with an empty inner dim: not every array module takes one
                rest = rest - (a[..., i : i + 1, known] @ x[..., known, :])[..., 0, :]
            x[..., i, :] = rest if unitriangular else rest / a[..., i, i, None]
    return x


def cholesky_solve(xp: ModuleType, b: Any, factor: Any, upper: bool) -> Any:
    """x with A x = b for A = L L^H (L: factor's lower triangle), or A = U^H U (U: its upper one) with `upper`,
    by two triangular solves; batch dims broadcast."""
    factor_h = xp.swapaxes(factor, -1, -2).conj()
    y = solve_triangular(xp, factor_h if upper else factor, b, upper=False)
    return solve_triangular(xp, factor if upper else factor_h, y, upper=True)


def inverse_by_lu(xp: ModuleType, a: Any) -> Any:
    """The inverse of each square matrix of a batch from its LU factors, a = P L U, in PyTorch's order
    (a^-H = P L^-H U^-H, the rows of P taken by index, not multiplied): a singular matrix gives the infinities
    and NaNs of LAPACK's solves, not an error."""
    lu, pivots, _ = lu_factor(xp, a)
    n = a.shape[-1]
    lu_h = xp.swapaxes(lu, -1, -2).conj()
    y = solve_triangular(xp, lu_h, xp.eye(n, dtype=a.dtype), upper=False)
    z = solve_triangular(xp, lu_h, y, upper=True, unitriangular=True)
    rows = xp.argmax(permutation(xp, pivots, n, a.dtype), axis=-1)[..., None]
    return xp.swapaxes(xp.take_along_axis(z, rows, axis=-2), -1, -2).conj()


def lu_factor(xp: ModuleType, a: Any) -> tuple[Any, Any, Any]:
    """LAPACK getrf's results for each (m, n) matrix of a batch: the LU factors in one matrix (L's unit diagonal
    left out), the 1-based pivots (row i was swapped with row pivots[i] - 1, in order) as int32, and info, the
    1-based index of the first zero pivot (0 when there is none). A zero pivot's column is left unscaled, as
    getf2 leaves it, and the factorization goes on."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    count = math.prod(batch)  # not -1: an empty matrix leaves the batch size unknowable from the element count
    lu = a.reshape((count, m, n)).astype(a.dtype, copy=True)
    pivots = xp.empty((count, k), dtype=np.int32)
    info = xp.zeros((count,), dtype=np.int32)
    rows = xp.arange(count)
    complex_input = a.dtype.kind == "c"
    for j in range(k):
        column = lu[:, j:, j]
        # LAPACK's izamax picks a complex pivot by |Re| + |Im|, not by its modulus
        size = xp.abs(column.real) + xp.abs(column.imag) if complex_input else xp.abs(column)
        p = xp.argmax(size, axis=-1) + j
        pivots[:, j] = p + 1
        swapped = lu[rows, p]  # advanced indexing copies: both rows are read before either is written
        lu[rows, p] = lu[:, j]
        lu[:, j] = swapped
        pivot = lu[:, j, j]
        zero = pivot == 0
        info = xp.where((info == 0) & zero, j + 1, info).astype(np.int32, copy=False)
        lu[:, j + 1 :, j] /= xp.where(zero, 1, pivot)[:, None]
        lu[:, j + 1 :, j + 1 :] -= lu[:, j + 1 :, j, None] * lu[:, j, None, j + 1 :]
    return lu.reshape(a.shape), pivots.reshape(batch + (k,)), info.reshape(batch)


def permutation(xp: ModuleType, pivots: Any, m: int, dtype: Any) -> Any:
    """The (m, m) permutation matrices P with A = P L U for LAPACK's 1-based `pivots` (a batch of k each)."""
    batch, k = pivots.shape[:-1], pivots.shape[-1]
    count = math.prod(batch)
    flat = pivots.reshape((count, k)).astype(np.int64) - 1
    order = xp.broadcast_to(xp.arange(m), (count, m)).copy()
    rows = xp.arange(count)
    for i in range(k):
        target = flat[:, i]
        swapped = order[rows, target]
        order[rows, target] = order[:, i]
        order[:, i] = swapped
    # P's column j has its one in row order[j]: (P^T A)[j] = A[order[j]] is the row the factorization put at j
    p = xp.zeros((count, m, m), dtype=dtype)
    p[rows[:, None], order, xp.arange(m)] = 1
    return p.reshape(batch + (m, m))


def cholesky(xp: ModuleType, a: Any) -> tuple[Any, Any]:
    """LAPACK potf2's results for each symmetric matrix of a batch (its lower triangle read): the lower factor L
    with A = L L^T, and info, the order of the first leading minor that is not positive-definite (0 when there is
    none). A failing matrix keeps the factor's columns before that order, the failed diagonal value (before its
    square root) and A's lower triangle after it, as potf2 leaves them."""
    n = a.shape[-1]
    factor = xp.tril(a.reshape((-1, n, n))).astype(a.dtype, copy=True)
    info = xp.zeros((factor.shape[0],), dtype=np.int32)
    for j in range(n):
        done = info == 0
        diagonal = factor[:, j, j] - (factor[:, j, :j] * factor[:, j, :j]).sum(-1)
        failed = done & ~(diagonal > 0)
        info = xp.where(failed, j + 1, info).astype(np.int32, copy=False)
        going = done & ~failed
        root = xp.sqrt(xp.where(going, diagonal, 1))
        factor[:, j, j] = xp.where(going, root, xp.where(failed, diagonal, factor[:, j, j]))
        below = factor[:, j + 1 :, j]
        if j:
            below = below - (factor[:, j + 1 :, :j] @ factor[:, j, :j, None])[..., 0]
        below = below / root[:, None]
        factor[:, j + 1 :, j] = xp.where(going[:, None], below, factor[:, j + 1 :, j])
    return factor.reshape(a.shape), info.reshape(a.shape[:-2])
