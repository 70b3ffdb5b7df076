"""The `_ex` forms of linalg's inverse, solve and Cholesky factor (an `info` tensor in place of an error, unless
`check_errors`) and the least-squares solve `linalg.lstsq`, with PyTorch's gradient rules.

The `_ex` forms record the nodes of `inv`, `solve` and `cholesky` (PyTorch's are LinalgInvExBackward0,
LinalgSolveExBackward0 and LinalgCholeskyExBackward0 for both). What a singular matrix gives (infinities from the
LU factors) and what a matrix that is not positive-definite gives (the partial Cholesky factor) are LAPACK's, from
the kernels of `actorgrad.devices.triangular`; solve_ex of a singular matrix takes its gradients from those LU
factors too, so they hold infinities and NaNs where PyTorch's do, and are the solve's elsewhere in the batch.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.devices.triangular import cholesky as cholesky_kernel
from actorgrad.devices.triangular import lu_factor as lu_kernel
from actorgrad.devices.triangular import permutation
from actorgrad.grad_mode import _grad_enabled
from actorgrad.ops import linalg_decompositions as decompositions
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.linalg_cholesky import CHOLESKY, cholesky_or_raise, read_by_cholesky
from actorgrad.ops.linalg_decompositions import (
    INV,
    LinAlgError,
    _mH,
    batch_prefix,
    check_square,
    first_failure,
)
from actorgrad.ops.linalg_lu import lu_solved
from actorgrad.ops.linalg_spectral import _pinv_grad, converged, pinv
from actorgrad.ops.operands import SCALAR_NAMES, broadcast_error, require_tensors
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.ops.shape import broadcast_to
from actorgrad.tensor import Tensor

__all__: list[str] = []

InvExResult = namedtuple("linalg_inv_ex", ["inverse", "info"])
SolveExResult = namedtuple("linalg_solve_ex", ["result", "info"])
CholeskyExResult = namedtuple("linalg_cholesky_ex", ["L", "info"])
LstsqResult = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _info_tensor(info: Any, like: Tensor) -> Tensor:
    return Tensor(like._device.xp.asarray(info), device=like._device)


def _solved_from_lu(A: Tensor, lu: Any, pivots: Any, b: Any) -> Any:
    """a^-1 b from a's LU factors: infinities and NaNs where a is singular, as LAPACK's getrs gives them."""
    p = permutation(A._device.xp, pivots, lu.shape[-1], lu.dtype)
    return lu_solved(A._device.ops, lu, p, b, True, False)


def _adjoint_solved(ops: Any, g: Any, lu: Any, permutation: Any, vector: bool) -> Any:
    """A^-H g from A's LU factors (infinities where A is singular), g a column when B was a vector."""
    column = ops.reshape(g, g.shape + (1,)) if vector else g
    return lu_solved(ops, lu, permutation, column, True, True)


def _singular_self_grad(ops: Any, g: Any, lu: Any, permutation: Any, result: Any, vector: bool,
                        self_shape: tuple) -> Any:
    x = ops.reshape(result, result.shape + (1,)) if vector else result
    return ops.sum_to(-(_adjoint_solved(ops, g, lu, permutation, vector) @ _mH(ops, x)), self_shape)


def _singular_other_grad(ops: Any, g: Any, lu: Any, permutation: Any, vector: bool, other_shape: tuple) -> Any:
    grad = _adjoint_solved(ops, g, lu, permutation, vector)
    return ops.sum_to(ops.reshape(grad, grad.shape[:-1]) if vector else grad, other_shape)


# solve_ex of a singular matrix: the solve's gradients from the LU factors, as PyTorch's (a solve of A^H would
# refuse the matrix).
SINGULAR_SOLVE = Rule(
    "LinalgSolveExBackward0",
    (("lu", "permutation", "result", "vector", "self_shape"), _singular_self_grad),
    (("lu", "permutation", "vector", "other_shape"), _singular_other_grad),
)


def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvExResult:
    """The inverse of each square matrix and info, the 1-based index of the first zero pivot of its LU factors (0
    for an invertible matrix); a singular matrix gives infinities, or LinAlgError with `check_errors`."""
    check_flags("linalg_inv_ex", check_errors=check_errors)
    require_tensors("linalg_inv_ex", A=A)
    x = check_square("linalg.inv", A, complex_ok=True)
    xp = A._device.xp
    lu, pivots, info = lu_kernel(xp, x)
    index, order = first_failure(info)
    if index < 0:
        data = xp.linalg.inv(x)
    elif check_errors:
        raise LinAlgError(f"linalg.inv_ex: {batch_prefix(x, index)}The diagonal element {order} is zero, the "
                          "inversion could not be completed because the input matrix is singular.")
    else:
        data = _solved_from_lu(A, lu, pivots, xp.broadcast_to(xp.eye(x.shape[-1], dtype=x.dtype), x.shape))
    return InvExResult(record(INV, data, (A,)), _info_tensor(info, A))


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> SolveExResult:
    """linalg.solve's X and info (as inv_ex's): a singular matrix gives infinities, or LinAlgError with
    `check_errors`."""
    check_flags("linalg_solve_ex", left=left, check_errors=check_errors)
    require_tensors("linalg_solve_ex", A=A, B=B)
    if not left:
        decompositions.check_right_solve(A, B)
        result, info = solve_ex(A.mT, B.mT, check_errors=check_errors)
        return SolveExResult(result.mT, info)
    x = decompositions.check_solve_operands(A, B)
    xp = A._device.xp
    lu, pivots, info = lu_kernel(xp, x)
    index, _ = first_failure(info)
    if index < 0:
        return SolveExResult(decompositions.solve(A, B), _info_tensor(info, A))
    if check_errors:
        raise LinAlgError(f"torch.linalg.solve_ex: {batch_prefix(x, index)}The solver failed because the input "
                          "matrix is singular.")
    b = B._data
    vector = decompositions.is_vector(A, B)
    _, matrix = decompositions.solve_operands(A, B, vector)
    p = permutation(xp, pivots, lu.shape[-1], lu.dtype)
    data = lu_solved(A._device.ops, lu, p, matrix, True, False)
    data = data[..., 0] if vector else data
    out = record(SINGULAR_SOLVE, data, (A, B), vector=vector, self_shape=x.shape, other_shape=b.shape,
                 lu=Tensor(lu, device=A._device), permutation=Tensor(p, device=A._device))
    return SolveExResult(out, _info_tensor(info, A))


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:
    """linalg.cholesky's factor (of A's lower triangle, or with `upper` of its upper one, real or complex) and info,
    the order of the first leading minor that is not positive-definite (0 when there is none); such a matrix gives
    LAPACK's partial factor, or LinAlgError with `check_errors`."""
    check_flags("linalg_cholesky_ex", upper=upper, check_errors=check_errors)
    require_tensors("linalg_cholesky_ex", A=A)
    xp = A._device.xp
    x = read_by_cholesky(xp, check_square("linalg.cholesky", A, complex_ok=True), upper)
    lower = xp.tril(x)
    try:
        factor = cholesky_or_raise(xp, lower + xp.swapaxes(xp.tril(x, -1), -1, -2).conj())
        info = xp.zeros(x.shape[:-2], dtype=np.int32)
    except np.linalg.LinAlgError:
        factor, info = (_hermitian_cholesky_kernel if x.dtype.kind == "c" else cholesky_kernel)(xp, x)
        index, order = first_failure(info)
        if check_errors:
            raise LinAlgError(f"linalg.cholesky_ex: {batch_prefix(x, index)}The factorization could not be completed "
                              f"because the input is not positive-definite (the leading minor of order {order} is "
                              "not positive-definite).") from None
    out = record(CHOLESKY, factor, (A,))
    return CholeskyExResult(out.mH if upper else out, _info_tensor(info, A))


def _hermitian_cholesky_kernel(xp: Any, x: Any) -> tuple[Any, Any]:
    """LAPACK potf2's results for complex Hermitian matrices (their lower triangle read, the diagonal's imaginary
    part ignored), from the real kernel: the real matrix that holds each entry a + ib as the block [[a, -b], [b, a]]
    is symmetric, its factor holds L's entries in the same blocks, and it fails at step 2k - 1 where x's
    factorization fails at order k (each Schur complement is a real number times the 2x2 identity). The diagonal
    after a failure is x's own, imaginary part included, as potf2 leaves it."""
    n = x.shape[-1]
    imaginary = xp.diagonal(x, 0, -2, -1).imag
    lower = xp.tril(x, -1) + xp.tril(xp.triu(x.real))
    blocks = xp.zeros(x.shape[:-2] + (n, 2, n, 2), dtype=x.real.dtype)
    blocks[..., :, 0, :, 0] = blocks[..., :, 1, :, 1] = lower.real
    blocks[..., :, 1, :, 0] = lower.imag
    blocks[..., :, 0, :, 1] = -lower.imag
    factor, info = cholesky_kernel(xp, blocks.reshape(x.shape[:-2] + (2 * n, 2 * n)))
    factor = factor.reshape(blocks.shape)
    info = ((info + 1) // 2).astype(np.int32, copy=False)
    untouched = (info[..., None] > 0) & (xp.arange(n) >= info[..., None])
    complex_factor = factor[..., :, 0, :, 0] + 1j * (factor[..., :, 1, :, 0] + xp.eye(n) * xp.where(
        untouched, imaginary, 0)[..., None, :])
    return complex_factor.astype(x.dtype, copy=False), info


def _lstsq_a_grad(ops: Any, g: Any, self: Any, other: Any, pinv: Any, vector: bool, self_shape: tuple) -> Any:
    """PyTorch's linalg_lstsq_backward: pinv's gradient rule at g B^H (X = pinv(A) B)."""
    if vector:
        g, other = ops.reshape(g, g.shape + (1,)), ops.reshape(other, other.shape + (1,))
    return ops.sum_to(_pinv_grad(ops, g @ _mH(ops, other), self, pinv), self_shape)


def _lstsq_b_grad(ops: Any, g: Any, pinv: Any, vector: bool, other_shape: tuple) -> Any:
    if vector:
        return ops.sum_to(ops.reshape(_mH(ops, pinv) @ ops.reshape(g, g.shape + (1,)), g.shape[:-1] + (
            pinv.shape[-1],)), other_shape)
    return ops.sum_to(_mH(ops, pinv) @ g, other_shape)


# `pinv` is linalg.pinv(A) recorded with its own node: a recorded backward differentiates through it.
LSTSQ = Rule(
    "LinalgLstsqBackward0",
    (("self", "other", "pinv", "vector", "self_shape"), _lstsq_a_grad),
    (("pinv", "vector", "other_shape"), _lstsq_b_grad),
)
DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _check_lstsq(a: Any, b: Any, driver: str | None) -> None:
    if driver is not None and driver not in DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if a.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if b.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if a.dtype != b.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {SCALAR_NAMES[a.dtype]} and other's dtype {SCALAR_NAMES[b.dtype]}")
    if a.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if not (a.ndim >= b.ndim and a.ndim - b.ndim <= 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")


def _residuals(A: Tensor, B: Tensor, solution: Tensor, vector: bool) -> Tensor:
    """The residuals' squared norms, recorded from the recorded solution, so they carry their true gradient."""
    error = (B.unsqueeze(-1) - A @ solution.unsqueeze(-1)) if vector else B - A @ solution
    return error.abs().square().sum(-2)


def _lstsq_batches(a: Any, b: Any, matrix: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The batch dims of A with B's (of the rank and singular values), and those of the solution, which PyTorch
    takes from B's first A.ndim - 2 dims: the same, but for a B of A.ndim - 1 dims that is no batch of vectors
    (read as one matrix), whose dims but the last broadcast with A's batch dims there."""
    batches = []
    for b_batch in (b.shape[:a.ndim - 2], matrix.shape[:-2]):  # the solution's first, as PyTorch checks them
        try:
            batches.append(np.broadcast_shapes(a.shape[:-2], b_batch))
        except ValueError:
            raise broadcast_error("linalg.lstsq", a.shape[:-2], b_batch) from None
    return batches[1], batches[0]


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> LstsqResult:
    """The least-squares solution X of A X = B of least norm, singular values of A at or below rcond times the
    largest counting as zero (rcond defaults to eps * max(m, n)). The other fields are PyTorch's for `driver`
    (default 'gelsy'): the residuals' squared norms (not for 'gelsy'; only for tall full-rank A), the rank (not for
    'gels') and the singular values ('gelsd', 'gelss'), empty tensors otherwise. The solution is differentiable
    through the pseudo-inverse's gradient, the residuals through their formula, as in PyTorch."""
    require_tensors("linalg_lstsq", input=A, b=B)
    a, b = A._data, B._data
    _check_lstsq(a, b, driver)
    driver = driver or "gelsy"
    vector = decompositions.is_vector(A, B)
    matrix = b[..., None] if vector else b
    if matrix.shape[-2] != a.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size({-1 if vector else -2})")
    batch, solution_batch = _lstsq_batches(a, b, matrix)
    same_device(A, B)
    device = A._device
    xp = device.xp
    m, n = a.shape[-2:]
    u, s, vh = converged("linalg.svd", xp.linalg.svd, a, full_matrices=False)
    cutoff = (np.finfo(a.dtype).eps * max(m, n) if rcond is None else rcond) * (
        s[..., :1] if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,), s.dtype))
    kept = s > cutoff
    inverse = xp.where(kept, 1 / xp.where(kept, s, 1), 0).astype(s.dtype, copy=False)
    solution = (xp.swapaxes(vh, -1, -2).conj() * inverse[..., None, :]) @ (xp.swapaxes(u, -1, -2).conj() @ matrix)
    rank = xp.broadcast_to(kept.sum(-1).astype(np.int64), batch)
    empty = xp.empty((0,), s.dtype)  # the residuals and singular values are real, as PyTorch's
    residuals = empty
    if driver != "gelsy" and m > n and (driver == "gels" or bool((rank == n).all())):
        residuals = (xp.abs(matrix - a @ solution) ** 2).sum(-2)
    needs_grad = (A.requires_grad or B.requires_grad) and _grad_enabled.get()
    out = record(LSTSQ, solution[..., 0] if vector else solution, (A, B), vector=vector, self_shape=a.shape,
                 other_shape=b.shape, pinv=pinv(A) if needs_grad else None)
    if solution_batch != batch:
        out = broadcast_to(out, solution_batch + out.shape[-2:])
        residuals = xp.broadcast_to(residuals, solution_batch + residuals.shape[-1:]) if residuals.size else residuals
    singular_values = xp.broadcast_to(s, batch + s.shape[-1:]).copy() if driver in ("gelsd", "gelss") else empty
    return LstsqResult(
        out, _residuals(A, B, out, vector) if needs_grad and residuals.size else Tensor(residuals, device=device),
        Tensor(xp.empty((0,), np.int64) if driver == "gels" else rank.copy(), device=device),
        Tensor(singular_values, device=device),
    )


METHODS: dict[str, Any] = {}
