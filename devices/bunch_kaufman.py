"""The LDL^T (LDL^H) factorization of symmetric or Hermitian, possibly indefinite matrices with Bunch-Kaufman
diagonal pivoting, and the solve built on it, on any array module (numpy or CuPy): neither has them.

The factorization follows the steps LAPACK documents for its unblocked ?sytf2 / ?hetf2 with UPLO = 'L' (the
lower triangle is read), so its compact result and pivots are the ones LAPACK's sytrf / hetrf give, which PyTorch
returns: each step picks a 1x1 pivot (the diagonal element, kept or swapped in) or a 2x2 pivot block by the growth
bound alpha = (1 + sqrt(17)) / 8, swaps rows and columns of the trailing matrix only, and stores D's blocks on the
diagonal (a 2x2 block's off-diagonal element below it) and L's columns under them. Pivots are 1-based: k means row
and column k were swapped in; a pair of equal negative entries -p marks a 2x2 block whose second row was swapped
with row p. A pivot decision depends on each matrix's values, so a batch is factored matrix by matrix, in O(n)
steps of O(n^2) array work each.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

ALPHA = (1.0 + math.sqrt(17.0)) / 8.0  # bounds the growth of the entries over a 1x1 and a 2x2 step alike


def _sizes(xp: ModuleType, values: Any) -> Any:
    """LAPACK's measure for choosing pivots: |Re| + |Im| for complex values (its i?amax), |x| for real ones."""
    if values.dtype.kind == "c":
        return xp.abs(values.real) + xp.abs(values.imag)
    return xp.abs(values)


def _first_largest(xp: ModuleType, sizes: Any) -> tuple[int, float]:
    """The index of the first largest size and that size, as i?amax picks it."""
    i = int(xp.argmax(sizes))
    return i, float(sizes[i])


def _full(xp: ModuleType, lower: Any, hermitian: bool) -> Any:
    """The whole symmetric (Hermitian) matrix whose lower triangle `lower` holds; a Hermitian diagonal is real."""
    below = xp.swapaxes(xp.tril(lower, -1), -1, -2)
    full = xp.tril(lower) + (below.conj() if hermitian else below)
    if hermitian:
        index = xp.arange(full.shape[-1])
        full[index, index] = full[index, index].real
    return full


def _factor_one(xp: ModuleType, a: Any, hermitian: bool, ld: Any, pivots: np.ndarray) -> int:
    """Factor one matrix `a` into `ld` (zeros above the diagonal) and `pivots`; return LAPACK's info."""
    n = a.shape[-1]
    real = np.dtype(a.dtype.char.lower()).type  # the comparisons run in the matrix's own precision, as LAPACK's
    alpha = real(ALPHA)
    m = _full(xp, a, hermitian)  # the trailing block m[k:, k:] is kept whole, so a swap is plain indexing
    info = 0
    k = 0
    while k < n:
        diagonal = m[k, k]
        absakk = real(abs(float(diagonal.real))) if hermitian else real(float(_sizes(xp, diagonal)))
        imax, colmax = k, real(0)
        if k + 1 < n:
            i, largest = _first_largest(xp, _sizes(xp, m[k + 1 :, k]))
            imax, colmax = k + 1 + i, real(largest)
        if max(absakk, colmax) == 0 or math.isnan(absakk):  # a zero (or NaN) column: no step, as LAPACK's
            info = info or k + 1
            ld[k:, k] = m[k:, k]
            pivots[k] = k + 1
            k += 1
            continue
        step, swap = 1, k
        if absakk < alpha * colmax:
            # the largest off-diagonal size in row and column imax of the trailing block
            rowmax = real(max(float(_sizes(xp, m[imax, k:imax]).max()),
                              float(_sizes(xp, m[imax + 1 :, imax]).max()) if imax + 1 < n else 0.0))
            if absakk >= alpha * colmax * (colmax / rowmax):
                pass
            elif (abs(float(m[imax, imax].real)) if hermitian else float(_sizes(xp, m[imax, imax]))) >= alpha * rowmax:
                swap = imax
            else:
                step, swap = 2, imax
        last = k + step - 1
        if swap != last:  # a symmetric interchange of rows and columns `last` and `swap` of the trailing block
            pair, swapped = [last, swap], [swap, last]
            m[pair, k:] = m[swapped, k:]
            m[k:, pair] = m[k:, swapped]
        if step == 1:
            _one_by_one(xp, m, ld, k, hermitian)
            pivots[k] = swap + 1
        else:
            _two_by_two(xp, m, ld, k, hermitian)
            pivots[k] = pivots[k + 1] = -(swap + 1)
        k += step
    return info


def _one_by_one(xp: ModuleType, m: Any, ld: Any, k: int, hermitian: bool) -> None:
    """A 1x1 pivot m[k, k]: the trailing block loses x d^-1 x^T (x^H), L's column is x / d."""
    d = m[k, k].real if hermitian else m[k, k]
    scale = 1 / d
    ld[k, k] = d
    x = m[k + 1 :, k]
    if x.size:
        m[k + 1 :, k + 1 :] -= x[:, None] * (scale * (x.conj() if hermitian else x))[None, :]
        m[k + 1 :, k + 1 :] = _full(xp, m[k + 1 :, k + 1 :], hermitian)
        ld[k + 1 :, k] = scale * x


def _two_by_two(xp: ModuleType, m: Any, ld: Any, k: int, hermitian: bool) -> None:
    """A 2x2 pivot block E = m[k:k+2, k:k+2]: with C its columns below it, the trailing block loses C E^-1 C^T
    (C^H), and L's two columns are W = C E^-1, computed as LAPACK does, scaled by E's off-diagonal element."""
    a, b, c = m[k, k], m[k + 1, k], m[k + 1, k + 1]
    ld[k, k], ld[k + 1, k], ld[k + 1, k + 1] = a, b, c
    c0, c1 = m[k + 2 :, k], m[k + 2 :, k + 1]
    if not c0.size:
        return
    if hermitian:
        size = xp.abs(b)
        d11, d22, d21 = c.real / size, a.real / size, b / size
        factor = (1 / (d11 * d22 - 1)) / size
        wk = factor * (d11 * c0 - d21 * c1)
        wkp1 = factor * (d22 * c1 - d21.conj() * c0)
        update = c0[:, None] * wk.conj()[None, :] + c1[:, None] * wkp1.conj()[None, :]
    else:
        d11, d22 = c / b, a / b
        factor = (1 / (d11 * d22 - 1)) / b
        wk = factor * (d11 * c0 - c1)
        wkp1 = factor * (d22 * c1 - c0)
        update = c0[:, None] * wk[None, :] + c1[:, None] * wkp1[None, :]
    m[k + 2 :, k + 2 :] = _full(xp, m[k + 2 :, k + 2 :] - update, hermitian)
    ld[k + 2 :, k] = wk
    ld[k + 2 :, k + 1] = wkp1


def ldl_factor(xp: ModuleType, a: Any, hermitian: bool) -> tuple[Any, Any, Any]:
    """LAPACK sytrf's (hetrf's, for a complex `hermitian` input) results for each matrix of a batch, its lower
    triangle read: the compact LD (zeros above the diagonal), the int32 pivots and info (the 1-based index of the
    first zero column met, whose step is skipped, or 0)."""
    n = a.shape[-1]
    batch = a.shape[:-2]
    count = math.prod(batch)
    matrices = a.reshape((count, n, n))
    ld = xp.zeros((count, n, n), dtype=a.dtype)
    pivots = np.zeros((count, n), dtype=np.int32)
    info = np.zeros((count,), dtype=np.int32)
    hermitian = hermitian and a.dtype.kind == "c"
    with np.errstate(all="ignore"):
        for i in range(count):
            info[i] = _factor_one(xp, matrices[i], hermitian, ld[i], pivots[i])
    return ld.reshape(a.shape), xp.asarray(pivots).reshape(batch + (n,)), xp.asarray(info).reshape(batch)


def pivot_blocks(pivots: np.ndarray) -> list[tuple[int, int, int]]:
    """(start, size, 0-based row swapped with the block's last row) for each diagonal block of D, in order; a
    negative pivot opens a 2x2 block, which needs a row after it. Raises ValueError where it has none."""
    blocks = []
    k, n = 0, len(pivots)
    while k < n:
        p = int(pivots[k])
        if p > 0:
            blocks.append((k, 1, p - 1))
            k += 1
        elif k + 1 < n:
            blocks.append((k, 2, -p - 1))
            k += 2
        else:
            raise ValueError(k)
    return blocks


def _swap_rows(x: Any, i: int, j: int) -> None:
    if i != j:
        x[[i, j]] = x[[j, i]]


def _solve_one(ld: Any, blocks: list, x: Any, hermitian: bool) -> None:
    """Overwrite x with A^-1 x, A = L D L^T (L^H) in LAPACK's compact form, as sytrs / hetrs solve it: L D y = x
    block by block forwards, then L^T (L^H) x = y backwards, applying each block's interchange on the way."""
    n = ld.shape[-1]
    for k, size, swap in blocks:
        last = k + size - 1
        _swap_rows(x, last, swap)
        if size == 1:
            x[k + 1 :] -= ld[k + 1 :, k, None] * x[k][None, :]
            x[k] *= 1 / (ld[k, k].real if hermitian else ld[k, k])
            continue
        if k + 2 < n:
            x[k + 2 :] -= ld[k + 2 :, k, None] * x[k][None, :]
            x[k + 2 :] -= ld[k + 2 :, k + 1, None] * x[k + 1][None, :]
        below = ld[k + 1, k]
        below_t = below.conj() if hermitian else below
        akm1, ak = ld[k, k] / below_t, ld[k + 1, k + 1] / below
        denominator = akm1 * ak - 1
        bkm1, bk = x[k] / below_t, x[k + 1] / below
        x[k] = (ak * bkm1 - bk) / denominator
        x[k + 1] = (akm1 * bk - bkm1) / denominator
    for k, size, swap in reversed(blocks):
        last = k + size - 1
        if last + 1 < n:
            rest = x[last + 1 :]
            for j in range(k, last + 1):
                column = ld[last + 1 :, j]
                x[j] -= (column.conj() if hermitian else column) @ rest
        _swap_rows(x, last, swap)


def ldl_solve(xp: ModuleType, ld: Any, blocks: list[list], b: Any, hermitian: bool) -> Any:
    """X with A X = B for each matrix of a batch whose batch dims broadcast with B's; `blocks` holds each
    factorization's pivot_blocks, in the order of ld's flattened batch."""
    n = ld.shape[-1]
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    x = xp.empty(batch + b.shape[-2:], dtype=b.dtype)  # row-major, so that flat_x below is a view of it
    x[...] = b
    count = math.prod(batch)
    flat_x = x.reshape((count,) + b.shape[-2:])
    which = np.broadcast_to(np.arange(math.prod(ld.shape[:-2])).reshape(ld.shape[:-2]), batch).reshape(-1)
    matrices = ld.reshape((-1, n, n))
    hermitian = hermitian and ld.dtype.kind == "c"
    with np.errstate(all="ignore"):
        for i in range(count):
            _solve_one(matrices[which[i]], blocks[which[i]], flat_x[i], hermitian)
    return x
