"""The Cholesky factor of (batches of) Hermitian positive-definite matrices (`linalg.cholesky`, and the factor
`torch.cholesky` and `linalg.cholesky_ex` share), with PyTorch's gradient rule and its error naming the first leading
minor that is not positive-definite."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.linalg_decompositions import LinAlgError, _mH, batch_prefix, check_square, host_matrices, reporting
from actorgrad.ops.operands import require_tensors
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor

__all__: list[str] = []


def _cholesky_grad(ops: Any, g: Any, result: Any) -> Any:
    """PyTorch's cholesky_backward: with X = L^H gL, gA = L^-H (tril(X) + tril(X, -1)^H) / 2 L^-1; symmetric for
    real matrices, and for complex ones Hermitian but for the imaginary parts of X's diagonal, which PyTorch keeps
    (no Hermitian change of A sees them)."""
    x = _mH(ops, result) @ g
    inverse = ops.inv(result)
    return _mH(ops, inverse) @ ((ops.tril(x, 0) + _mH(ops, ops.tril(x, -1))) * 0.5) @ inverse


CHOLESKY = Rule("LinalgCholeskyExBackward0", (("result",), _cholesky_grad))


def read_by_cholesky(xp: Any, x: Any, upper: bool) -> Any:
    """The matrices whose lower triangles a Cholesky factorization reads: x, or with `upper` x^H, whose lower
    triangle holds x's upper one (PyTorch's upper=True factors A's upper triangle, as LAPACK's uplo 'U')."""
    return xp.swapaxes(x, -1, -2).conj() if upper else x


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The lower-triangular L with A = L L^H (only A's lower triangle is read), or with upper=True the upper U with
    A = U^H U (only A's upper triangle read)."""
    check_flags("linalg_cholesky", upper=upper)
    require_tensors("linalg_cholesky", input=A)
    return cholesky_factor(A, check_square("linalg.cholesky", A, complex_ok=True), upper, "linalg.cholesky")


def cholesky_factor(A: Tensor, x: Any, upper: bool, op: str) -> Tensor:
    """cholesky of A, whose array x has passed the checks, with the error for a matrix that is not
    positive-definite naming `op` (torch.cholesky's says "cholesky")."""
    xp = A._device.xp
    x = read_by_cholesky(xp, x, upper)
    lower = xp.tril(x)
    symmetric = lower + xp.swapaxes(xp.tril(x, -1), -1, -2).conj()
    try:
        factor = cholesky_or_raise(xp, symmetric)
    except np.linalg.LinAlgError:
        raise _not_positive_definite(symmetric, op) from None
    out = record(CHOLESKY, factor, (A,))
    return out.mH if upper else out


def cholesky_or_raise(xp: Any, symmetric: Any) -> Any:
    """The Cholesky factors of a batch of Hermitian matrices, or numpy's LinAlgError where one is not
    positive-definite, also where the factorization meets a NaN (LAPACK's potrf fails there, as PyTorch's; numpy's
    leaves NaNs)."""
    with reporting(xp):
        factor = xp.linalg.cholesky(symmetric)
    if bool(xp.isnan(xp.diagonal(factor, 0, -2, -1)).any()):
        raise np.linalg.LinAlgError("a NaN on the factor's diagonal")
    return factor


def _not_positive_definite(x: Any, op: str) -> LinAlgError:
    """PyTorch's error: the batch element and the order of the first leading minor that is not positive-definite."""
    host = host_matrices(x)
    for i, matrix in enumerate(host):
        for order in range(1, matrix.shape[0] + 1):
            try:
                cholesky_or_raise(np, matrix[:order, :order])
            except np.linalg.LinAlgError:
                return LinAlgError(
                    f"{op}: {batch_prefix(x, i)}The factorization could not be completed because the "
                    f"input is not positive-definite (the leading minor of order {order} is not positive-definite)."
                )
    return LinAlgError(f"{op}: The factorization could not be completed because the input is not "
                       "positive-definite.")
