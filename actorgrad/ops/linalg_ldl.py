"""The LDL factorization of symmetric or Hermitian (possibly indefinite) matrices: `linalg.ldl_factor`,
`ldl_factor_ex` and `ldl_solve`, in LAPACK sytrf's compact form with Bunch-Kaufman pivots, as PyTorch returns them
(the kernel is `actorgrad.devices.bunch_kaufman`).

PyTorch has no derivative for either: as there, the outputs of an input that requires grad record a node that
refuses a backward when one reaches it.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.devices import bunch_kaufman
from actorgrad.ops.arithmetic import _no_derivative
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.index_parsing import host_array
from actorgrad.ops.linalg_decompositions import batch_prefix, first_failure
from actorgrad.ops.operands import SCALAR_NAMES, broadcast_error, not_implemented, require_tensors
from actorgrad.ops.out_arguments import EXPECTED, Outputs
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.tensor import Tensor

__all__: list[str] = []

LdlFactorResult = namedtuple("linalg_ldl_factor", ["LD", "pivots"])
LdlFactorExResult = namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])

LDL_FACTOR = _no_derivative("linalg_ldl_factor_ex")
_REFUSAL = _no_derivative("linalg_ldl_solve").grads[0]
LDL_SOLVE = Rule("NotImplemented", _REFUSAL, _REFUSAL, _REFUSAL)
# `out=` (actorgrad.linalg gives it): each output in its result's dtype; as these have no derivative, PyTorch takes
# `out` beside arguments that require grad.
OUT_RULES = {"ldl_factor": Outputs((EXPECTED,) * 2), "ldl_factor_ex": Outputs((EXPECTED,) * 3), "ldl_solve": EXPECTED}


def _check_square(op: str, x: Any) -> None:
    if x.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {x.shape[-2]} by "
                           f"{x.shape[-1]} matrices")


def _check_floating(op: str, x: Any, kernel: str) -> None:
    """PyTorch's refusals: integers and bool by the op's input check, float16 by its kernel."""
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{SCALAR_NAMES.get(x.dtype, x.dtype)}")
    if x.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise not_implemented(kernel, x.dtype)


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> LdlFactorExResult:
    """The LDL^T (LDL^H when `hermitian` and complex) factorization of each matrix's lower triangle with
    Bunch-Kaufman pivoting, as LAPACK's sytrf (hetrf): D's 1x1 and 2x2 blocks and L's columns in one matrix (zeros
    above the diagonal), the 1-based int32 pivots (a 2x2 block's as a pair of negative entries) and info (the
    first zero column's 1-based index, or 0), without an error for a singular matrix unless `check_errors`."""
    require_tensors("linalg_ldl_factor_ex", input=A)
    check_flags("linalg_ldl_factor_ex", hermitian=hermitian, check_errors=check_errors)
    return _factor("torch.linalg.ldl_factor_ex", A, hermitian, check_errors)


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> LdlFactorResult:
    """ldl_factor_ex's LD and pivots, with an error for a singular matrix (a zero column of D)."""
    require_tensors("linalg_ldl_factor", input=A)
    check_flags("linalg_ldl_factor", hermitian=hermitian)
    LD, pivots, _ = _factor("torch.linalg.ldl_factor", A, hermitian, True)
    return LdlFactorResult(LD, pivots)


def _factor(op: str, A: Tensor, hermitian: bool, check_errors: bool) -> LdlFactorExResult:
    x = A._data
    _check_square("torch.linalg.ldl_factor_ex", x)
    _check_floating("torch.linalg.ldl_factor_ex", x, "ldl_factor_kernel_cpu")
    ld, pivots, info = bunch_kaufman.ldl_factor(A._device.xp, x, hermitian)
    if check_errors:
        index, k = first_failure(info)
        if index >= 0:  # PyTorch 2.13 reports this as an internal assert: "Unknown error code: k"
            raise RuntimeError(f"{op}: {batch_prefix(x, index)}D[{k},{k}] is zero: column {k} of the matrix is zero "
                               "where the factorization reached it, so the matrix is singular and ldl_solve would "
                               "divide by zero. Call linalg.ldl_factor_ex without check_errors to get the factors "
                               "and the info of each matrix.")
    return LdlFactorExResult(record(LDL_FACTOR, ld, (A,)), Tensor(pivots, device=A._device),
                             Tensor(info, device=A._device))


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """X with A X = B from ldl_factor's LD and pivots of A (`hermitian` as given to it); the batch dims of LD
    broadcast with B's, pivots have LD's."""
    require_tensors("linalg_ldl_solve", LD=LD, pivots=pivots, B=B)
    check_flags("linalg_ldl_solve", hermitian=hermitian)
    op = "torch.linalg.ldl_solve"
    ld, piv, b = LD._data, pivots._data, B._data
    _check_square(op, ld)
    _check_floating(op, ld, "ldl_solve_kernel_cpu")
    same_device(B, LD)
    if b.dtype != ld.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {SCALAR_NAMES[b.dtype]} "
                           f"and A of type {SCALAR_NAMES[ld.dtype]} instead.")
    if b.ndim < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -2)" if b.ndim else
                         "Dimension specified as -2 but tensor has no dimensions")
    n = ld.shape[-1]
    if b.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {op}: each A matrix is {n} by {n} but each b matrix is "
                           f"{b.shape[-2]} by {b.shape[-1]}")
    if piv.shape != ld.shape[:-1]:
        raise RuntimeError(f"{op}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with "
                           f"shape {list(piv.shape)} instead")
    if piv.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: Expected pivots to be integers. Got {SCALAR_NAMES.get(piv.dtype, piv.dtype)}")
    same_device(LD, pivots)
    try:
        np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    except ValueError:
        raise broadcast_error(op, b.shape[:-2], ld.shape[:-2]) from None
    return record(LDL_SOLVE, _solved(op, LD, piv, b, hermitian), (LD, pivots, B))


def _solved(op: str, LD: Tensor, piv: Any, b: Any, hermitian: bool) -> Any:
    """The solve's array, after PyTorch's checks of the pivots' range (and ours of their pairing)."""
    ld = LD._data
    n = ld.shape[-1]
    host = host_array(piv).reshape((math.prod(piv.shape[:-1]), n)).astype(np.int64)
    if host.size:
        if bool((np.abs(host) > n).any()):
            raise RuntimeError("Pivots given to ldl_solve must all satisfy |pivot| <= LD.size(-2). Did you properly "
                               "pass the result of ldl_factor?")
        if bool((host == 0).any()):
            raise RuntimeError("Pivots given to ldl_solve must all satisfy |pivot| >= 1. Did you properly pass the "
                               "result of ldl_factor?")
    blocks = []
    for i, row in enumerate(host):
        try:
            blocks.append(bunch_kaufman.pivot_blocks(row))
        except ValueError:
            raise RuntimeError(f"{op}: {batch_prefix(ld, i)}the last pivot is negative, which opens a 2x2 block of "
                               "D with no row after it: negative pivots come in pairs. Did you properly pass the "
                               "result of ldl_factor?") from None
    return bunch_kaufman.ldl_solve(LD._device.xp, ld, blocks, b, hermitian)
