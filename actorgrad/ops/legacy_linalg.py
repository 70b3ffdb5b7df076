"""PyTorch's top-level linear algebra names from before torch.linalg (torch.qr, svd, pinverse, cholesky, lu,
lu_solve, ger, adjoint, nuclear_norm, frobenius_norm, geqrf, orgqr, ormqr): each is spelled in terms of the
`actorgrad.linalg` op it became, so it records that op's nodes, and warns as PyTorch's deprecated forms do. The
names PyTorch has removed but still exposes (solve, lstsq, eig, symeig, matrix_rank) raise its error, which says
what to use instead."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.ops import linalg_lu, linalg_spectral
from actorgrad.ops.aliases import _adjoint
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.joining import cat
from actorgrad.ops.linalg import outer
from actorgrad.ops.linalg_cholesky import cholesky_factor
from actorgrad.ops.linalg_composites import householder_product
from actorgrad.ops.linalg_decompositions import square_matrices
from actorgrad.ops.linalg_triangular import _check_solvable
from actorgrad.ops.operands import SCALAR_NAMES, require_tensors
from actorgrad.ops.reductions import normalize_dims
from actorgrad.ops.statistics import norm
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

__all__ = [
    "adjoint", "cholesky", "eig", "frobenius_norm", "geqrf", "ger", "lstsq", "lu", "lu_solve", "matrix_rank",
    "nuclear_norm", "orgqr", "ormqr", "pinverse", "qr", "solve", "svd", "symeig",
]

SvdResult = namedtuple("svd", ["U", "S", "V"])
QrResult = namedtuple("qr", ["Q", "R"])
GeqrfResult = namedtuple("geqrf", ["a", "tau"])
LuWithInfoResult = namedtuple("_lu_with_info", ["LU", "pivots", "info"])

_REMOVED = "This function was deprecated since version 1.9 and is now removed. "
REMOVED = {
    "solve": _REMOVED + (
        "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its arguments "
        "reversed and does not return the LU factorization.\n\nTo get the LU factorization see `torch.lu`, which "
        "can be used with `torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution should be replaced "
        "with:\nX = torch.linalg.solve(A, B)"),
    "lstsq": _REMOVED + (
        "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed arguments "
        "and does not return the QR decomposition in the returned tuple (although it returns other information "
        "about the problem).\n\nTo get the QR decomposition consider using `torch.linalg.qr`.\n\nThe returned "
        "solution in `torch.lstsq` stored the residuals of the solution in the last m - n columns of the returned "
        "value whenever m > n. In torch.linalg.lstsq, the residuals are in the field 'residuals' of the returned "
        "named tuple.\n\nThe unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\nshould "
        "be replaced with:\nX = torch.linalg.lstsq(A, B).solution"),
    "eig": _REMOVED + (
        "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
        "mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = "
        "torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
        "L_complex, V_complex = torch.linalg.eig(A)"),
    "symeig": _REMOVED + (
        "The default behavior has changed from using the upper triangular portion of the matrix by default to using "
        "the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced with:\nL = "
        "torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) "
        "should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')"),
    "matrix_rank": _REMOVED + (
        "\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter 'symmetric' was renamed in "
        "`torch.linalg.matrix_rank()` to 'hermitian'."),
}


def _removed(name: str) -> Any:
    def function(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(REMOVED[name])

    function.__name__ = function.__qualname__ = name
    function.__doc__ = "Removed from PyTorch: raises its error, which names the torch.linalg function to use."
    return function


solve, lstsq, eig, symeig, matrix_rank = (_removed(name) for name in ("solve", "lstsq", "eig", "symeig",
                                                                       "matrix_rank"))


def _deprecated(old: str, new: str) -> None:
    warn(f"torch.{old} is deprecated in favor of {new} and will be removed in a future PyTorch release.\n"
         + DEPRECATIONS[old])


DEPRECATIONS = {
    "qr": ("The boolean parameter 'some' has been replaced with a string parameter 'mode'.\nQ, R = torch.qr(A, some)"
           "\nshould be replaced with\nQ, R = torch.linalg.qr(A, 'reduced' if some else 'complete')"),
    "cholesky": ("L = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\nand\nU = "
                 "torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\nThis "
                 "transform will produce equivalent results for all valid (symmetric positive definite) inputs."),
    "lu": ("LU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with\nLU, pivots = "
           "torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = torch.lu(A, compute_pivots, "
           "get_infos=True)\nshould be replaced with\nLU, pivots, info = torch.linalg.lu_factor_ex(A, "
           "compute_pivots)"),
    "lu_solve": ("Note that torch.linalg.lu_solve has its arguments reversed.\nX = torch.lu_solve(B, LU, pivots)\n"
                 "should be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)"),
}


def qr(input: Tensor, some: bool = True) -> QrResult:
    """linalg.qr in mode 'reduced' (some) or 'complete'."""
    check_flags("qr", some=some)
    _deprecated("qr", "torch.linalg.qr")
    return QrResult(*linalg_spectral.qr(input, "reduced" if some else "complete"))


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> SvdResult:
    """U, S and V (not Vh) with input = U diag(S) V^T; without compute_uv, S alone and zero U and V of the full
    sizes, as PyTorch's."""
    check_flags("svd", some=some, compute_uv=compute_uv)
    require_tensors("svd", input=input)
    if input.ndim < 2:  # PyTorch's words here, before linalg.svd's checks
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has {input.ndim} dimensions "
                           "instead")
    if compute_uv:
        U, S, Vh = linalg_spectral.svd(input, full_matrices=not some)
        return SvdResult(U, S, Vh.mH)
    S = linalg_spectral.svdvals(input)
    m, n = input.shape[-2:]
    batch = input.shape[:-2]
    return SvdResult(input.new_zeros(batch + (m, m)), S, input.new_zeros(batch + (n, n)))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """linalg.pinv with relative tolerance rcond and no absolute one."""
    return linalg_spectral.pinv(input, atol=0.0, rtol=rcond)


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """linalg.cholesky (deprecated in PyTorch for it)."""
    check_flags("cholesky", upper=upper)
    _deprecated("cholesky", "torch.linalg.cholesky")
    require_tensors("cholesky", input=input)
    x = square_matrices("cholesky", input)
    if x.dtype.kind not in "fc" or x.dtype == np.float16:  # PyTorch's kernel refuses them, after the shape checks
        raise NotImplementedError(f"\"cholesky_cpu\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
    return cholesky_factor(input, x, upper, "cholesky")


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple:
    """(LU, pivots), with the info tensor too when get_infos: linalg.lu_factor_ex, which never raises for a
    singular matrix (PyTorch's torch.lu does not check either)."""
    check_flags("_lu_with_info", pivot=pivot)
    _deprecated("lu", "torch.linalg.lu_factor / torch.linalg.lu_factor_ex")
    LU, pivots, info = linalg_lu.lu_factor_ex(A, pivot=pivot)
    return LuWithInfoResult(LU, pivots, info) if get_infos else (LU, pivots)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """linalg.lu_solve with its arguments in the old order."""
    _deprecated("lu_solve", "torch.linalg.lu_solveand")
    return linalg_lu.lu_solve(LU_data, LU_pivots, b)


def ger(input: Tensor, vec2: Tensor) -> Tensor:
    """Alias of outer."""
    return outer(input, vec2)


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (a view; a 0-d tensor is itself, deprecated as in PyTorch)."""
    if input.ndim == 1:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return _adjoint(input, "adjoint()", batched=True)


def _warn_jit_only(name: str, instead: str) -> None:
    warn(f"at::{name} is deprecated and it is just left for JIT compatibility. It will be removed in a future "
         f"PyTorch release. Please use `{instead}` instead", UserWarning)


def nuclear_norm(input: Tensor, dim: Any = (-2, -1), keepdim: bool = False) -> Tensor:
    """The sum of the singular values over the two dims `dim`."""
    from actorgrad.linalg import matrix_norm

    _warn_jit_only("nuclear_norm", "linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    if isinstance(dim, bool):  # torch.nuclear_norm(input, keepdim)
        dim, keepdim = (-2, -1), dim
    return matrix_norm(input, "nuc", dim, keepdim)


def frobenius_norm(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """The 2-norm over one or two dims."""
    require_tensors("frobenius_norm", input=input)
    _warn_jit_only("frobenius_norm", "linalg.vector_norm(A, 2., dim, keepdim)")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    normalized = normalize_dims(dims, input.ndim, "frobenius_norm")
    if len(set(d % max(input.ndim, 1) for d in normalized)) != len(normalized):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return norm(input, 2, dims, keepdim)


def geqrf(input: Tensor) -> GeqrfResult:
    """LAPACK's geqrf: R on and above the diagonal, the Householder vectors below it, and their scales tau (real or
    complex). Not differentiable, as in PyTorch."""
    require_tensors("geqrf", input=input)
    x = input._data
    if x.ndim < 2:
        raise RuntimeError("geqrf: The input tensor A must have at least 2 dimensions.")
    _check_solvable("geqrf_cpu", x.dtype, complex_ok=True)
    xp = input._device.xp
    h, tau = xp.linalg.qr(x, mode="raw")
    packed = xp.ascontiguousarray(xp.swapaxes(h, -1, -2))
    return GeqrfResult(Tensor(packed, device=input._device), Tensor(xp.ascontiguousarray(tau), device=input._device))


def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """Alias of linalg.householder_product."""
    require_tensors("orgqr", input=input, input2=tau)
    return householder_product(input, tau)


def _check_ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool) -> None:
    """PyTorch's checks of ormqr's operands, in its order."""
    for name, t in (("input", input), ("other", other)):
        if t.ndim < 2:
            raise RuntimeError(f"torch.ormqr: {name} must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.ndim == 0 or tau.shape[-1] != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])")
    if tau.ndim != input.ndim - 1:
        raise RuntimeError(f"torch.ormqr: Expected tau to have one dimension less than input, but got tau.ndim equal "
                           f"to {tau.ndim} and input.ndim is equal to {input.ndim}")
    if other.ndim != input.ndim:
        raise RuntimeError(f"torch.ormqr: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {other.ndim} and input.ndim is equal to {input.ndim}")
    for name, batch in (("tau", tau.shape[:-1]), ("other", other.shape[:-2])):
        if batch != input.shape[:-2]:
            raise RuntimeError(f"torch.ormqr: Expected batch dimensions of {name} to be equal to input.shape[:-2], but "
                               f"got {list(batch)}")
    for name, t in (("tau", tau), ("other", other)):
        if t.dtype != input.dtype:
            raise RuntimeError(f"torch.ormqr: Expected input and {name} to have the same dtype, but input has dtype"
                               f"{SCALAR_NAMES[input.dtype]} and {name} has dtype {SCALAR_NAMES[t.dtype]}")


def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True, transpose: bool = False) -> Tensor:
    """other multiplied by the full Q that geqrf's reflectors (input, tau) define: Q other, Q^H other (transpose;
    Q^T for real Q), or from the right (left=False)."""
    require_tensors("ormqr", input=input, input2=tau, input3=other)
    check_flags("ormqr", left=left, transpose=transpose)
    _check_ormqr(input, tau, other, left)
    m = input.shape[-2]
    k = tau.shape[-1]
    reflectors, scales = input[..., :k], tau
    if k < m:  # the full Q: the reflectors past k are the identity (tau 0)
        reflectors = cat([reflectors, input.new_zeros(input.shape[:-2] + (m, m - k))], -1)
        scales = cat([tau, tau.new_zeros(tau.shape[:-1] + (m - k,))], -1)
    q = householder_product(reflectors, scales)
    if transpose:
        q = q.mH
    return q @ other if left else other @ q


METHODS: dict[str, Any] = {
    "qr": qr, "svd": svd, "pinverse": pinverse, "cholesky": cholesky, "lu": lu,
    "lu_solve": lu_solve, "ger": ger, "adjoint": adjoint, "geqrf": geqrf, "orgqr": orgqr, "ormqr": ormqr,
}
