"""The LU factorization with partial pivoting and what is built on it: `linalg.lu_factor`, `lu_factor_ex`,
`linalg.lu`, `linalg.lu_solve` and `lu_unpack`, with PyTorch's gradient rules (the kernel is
`actorgrad.devices.triangular.lu_factor`; pivots and permutations are not differentiable, as in PyTorch).

The rules rebuild L and U from the saved LU matrix with `ops.tril` and solve through `ops.solve_triangular`; the
permutation matrix is saved as a constant tensor. So a backward with `create_graph=True` differentiates again.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.devices.triangular import lu_factor as lu_kernel
from actorgrad.devices.triangular import permutation
from actorgrad.grad_mode import _grad_enabled
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.linalg_decompositions import _mH, _mT, batch_prefix, first_failure
from actorgrad.ops.linalg_outputs import record_outputs
from actorgrad.ops.linalg_triangular import triangle
from actorgrad.ops.operands import SCALAR_NAMES, broadcast_error, require_tensors
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.tensor import Tensor

__all__ = ["lu_unpack"]

LuFactorResult = namedtuple("linalg_lu_factor", ["LU", "pivots"])
LuFactorExResult = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
LuResult = namedtuple("linalg_lu", ["P", "L", "U"])
LuUnpackResult = namedtuple("lu_unpack", ["P", "L", "U"])


def _narrow(ops: Any, x: Any, rows: int | None, columns: int | None) -> Any:
    """x's first `rows` rows and first `columns` columns (None: all of them)."""
    if (rows is None or rows == x.shape[-2]) and (columns is None or columns == x.shape[-1]):
        return x
    return ops.index(x, (slice(None),) * (x.ndim - 2) + (slice(0, rows), slice(0, columns)), None)


def _rest(ops: Any, x: Any, start: int, dim: int) -> Any:
    """x from index `start` on along `dim` (-2 or -1)."""
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, None)
    return ops.index(x, tuple(index), None)


def _unpacked(ops: Any, lu: Any) -> tuple[Any, Any]:
    """L (m x k, unit lower-triangular) and U (k x n, upper-triangular) of a packed LU matrix."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    lower = _narrow(ops, lu, None, k)
    identity = ops.eye(m, lu) if k == m else _narrow(ops, ops.eye(m, lu), None, k)
    return ops.tril(lower, -1) + identity, triangle(ops, _narrow(ops, lu, k, None), True, False)


def lu_backward(ops: Any, gL: Any, gU: Any, p: Any, L: Any, U: Any) -> Any:
    """PyTorch's linalg_lu_backward: A's gradient from L's and U's (either may be None), A = P L U of (m, n)."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if m == n:
        inner = None if gL is None else ops.tril(_mH(ops, L) @ gL, -1)
        if gU is not None:
            upper = triangle(ops, gU @ _mH(ops, U), True, False)
            inner = upper if inner is None else inner + upper
        inner = ops.solve_triangular(_mH(ops, U), inner, False, False, False)
        return p @ ops.solve_triangular(_mH(ops, L), inner, True, True, True)
    if m < n:  # wide: U = [U1 | U2] with U1 square
        U1 = _narrow(ops, U, None, k)
        inner = None if gL is None else _mH(ops, L) @ gL
        if gU is not None:
            upper = triangle(ops, gU, True, False) @ _mH(ops, U)
            inner = -upper if inner is None else inner - upper
        inner = ops.solve_triangular(_mH(ops, U1), ops.tril(inner, -1), False, False, False)
        if gU is not None:
            inner = ops.concatenate((inner + triangle(ops, _narrow(ops, gU, None, k), True, False),
                                     _rest(ops, gU, k, -1)), -1)
        grad = ops.solve_triangular(_mH(ops, L), inner, True, True, True)
        if gU is None:
            grad = ops.concatenate((grad, ops.zeros_like(_rest(ops, U, k, -1))), -1)
        return p @ grad
    # tall: L = [L1; L2] with L1 square
    L1 = _narrow(ops, L, k, None)
    inner = None if gU is None else gU @ _mH(ops, U)
    if gL is not None:
        lower = _mH(ops, L) @ ops.tril(gL, -1)
        inner = -lower if inner is None else inner - lower
    inner = ops.solve_triangular(_mH(ops, L1), triangle(ops, inner, True, False), True, True, True)
    if gL is not None:
        inner = ops.concatenate((inner + ops.tril(_narrow(ops, gL, k, None), -1), _rest(ops, gL, k, -2)), -2)
    grad = ops.solve_triangular(_mH(ops, U), inner, False, False, False)
    if gL is None:
        grad = ops.concatenate((grad, ops.zeros_like(_rest(ops, L, k, -2))), -2)
    return p @ grad


def _lu_factor_grad(ops: Any, g: Any, result: Any, permutation: Any) -> Any:
    """PyTorch's lu_factor_ex_backward: LU's gradient read as L's (its first k columns) and U's (first k rows)."""
    k = min(result.shape[-2:])
    L, U = _unpacked(ops, result)
    return lu_backward(ops, _narrow(ops, g, None, k), _narrow(ops, g, k, None), permutation, L, U)


LU_FACTOR = Rule("LinalgLuFactorExBackward0", (("result", "permutation"), _lu_factor_grad))


def _lu_grad(ops: Any, g: tuple, packed: Any, permutation: Any) -> Any:
    _, gL, gU = g
    if gL is None and gU is None:
        return None
    L, U = _unpacked(ops, packed)
    return lu_backward(ops, gL, gU, permutation, L, U)


# `packed` is lu_factor_ex's output, saved with its own node: a recorded backward differentiates through it.
LU = Rule("LinalgLuBackward0", (("packed", "permutation"), _lu_grad))


def _check_factorable(op: str, A: Tensor, pivot: bool) -> Any:
    x = A._data
    if x.ndim < 2:
        raise RuntimeError(f"{op}: Expected tensor with 2 or more dimensions. Got size: {list(x.shape)} instead")
    if x.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    return x


def _permutation_tensor(A: Tensor, pivots: Any) -> Tensor:
    return Tensor(permutation(A._device.xp, pivots, A._data.shape[-2], A._data.dtype), device=A._device)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> LuFactorExResult:
    """The LU factorization of each (m, n) matrix with partial pivoting, as LAPACK's getrf: L and U packed in one
    matrix, the 1-based int32 pivots and info (the first zero pivot's 1-based index, or 0), without an error for
    a singular matrix unless `check_errors`."""
    check_flags("linalg_lu_factor_ex", pivot=pivot, check_errors=check_errors)
    require_tensors("linalg_lu_factor_ex", A=A)
    x = _check_factorable("torch.lu_factor", A, pivot)
    xp = A._device.xp
    lu, pivots, info = lu_kernel(xp, x)
    if check_errors:
        _raise_for_zero_pivot("torch.linalg.lu_factor_ex", x, info)
    needs_grad = A.requires_grad and _grad_enabled.get()  # the permutation only matters to the backward
    out = record(LU_FACTOR, lu, (A,), permutation=_permutation_tensor(A, pivots) if needs_grad else None)
    return LuFactorExResult(out, Tensor(pivots, device=A._device), Tensor(xp.asarray(info), device=A._device))


def _raise_for_zero_pivot(op: str, x: Any, info: Any) -> None:
    index, k = first_failure(info)
    if index >= 0:
        raise RuntimeError(f"{op}: {batch_prefix(x, index)}U[{k},{k}] is zero and using it on lu_solve would result "
                           "in a division by zero. If you still want to perform the factorization, consider calling "
                           "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor(A: Tensor, *, pivot: bool = True) -> LuFactorResult:
    """lu_factor_ex's LU and pivots, with PyTorch's error for a singular matrix (a zero pivot)."""
    check_flags("linalg_lu_factor", pivot=pivot)
    require_tensors("linalg_lu_factor", A=A)
    x = _check_factorable("torch.lu_factor", A, pivot)
    LU, pivots, info = lu_factor_ex(A)
    _raise_for_zero_pivot("torch.linalg.lu_factor", x, info._data)
    return LuFactorResult(LU, pivots)


def lu(A: Tensor, *, pivot: bool = True) -> LuResult:
    """P, L, U with A = P L U: a permutation matrix, a unit lower-triangular (m, k) and an upper-triangular (k, n)
    matrix, k = min(m, n); L and U are outputs 1 and 2 of one node, P (output 0) takes no gradient."""
    check_flags("linalg_lu", pivot=pivot)
    require_tensors("linalg_lu", A=A)
    _check_factorable("linalg.lu", A, pivot)
    packed, pivots, _ = lu_factor_ex(A)
    p = _permutation_tensor(A, pivots._data)
    L, U = _unpacked(A._device.ops, packed._data)
    outputs = record_outputs(LU, (p._data, L, U), (A,), packed=packed, permutation=p)
    return LuResult(Tensor(outputs[0]._data, device=A._device), *outputs[1:])


def _lu_unpack_grad(ops: Any, g: tuple, self_shape: tuple) -> Any:
    """PyTorch's lu_unpack_backward: L's gradient below the diagonal, U's on and above it, in LU's shape."""
    gL, gU = g
    m, n = self_shape[-2:]
    k = min(m, n)
    grad = None
    if gL is not None:
        grad = ops.tril(gL, -1)
        if n > k:
            grad = ops.pad(grad, (0, n - k))
    if gU is not None:
        upper = triangle(ops, gU, True, False)
        if m > k:
            upper = ops.pad(upper, (0, 0, 0, m - k))
        grad = upper if grad is None else grad + upper
    return grad


LU_UNPACK = Rule("LuUnpackBackward0", (("self_shape",), _lu_unpack_grad))


def lu_unpack(
    LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True
) -> LuUnpackResult:
    """P, L, U from lu_factor's packed LU matrix and pivots (empty tensors for the parts not asked for); L and U
    are outputs 0 and 1 of one node."""
    require_tensors("lu_unpack", LU_data=LU_data, LU_pivots=LU_pivots)
    check_flags("lu_unpack", unpack_data=unpack_data, unpack_pivots=unpack_pivots)
    x, pivots = LU_data._data, LU_pivots._data
    if x.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: {list(x.shape)} "
                           "instead")
    if pivots.dtype != np.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.")
    same_device(LU_data, LU_pivots)
    device = LU_data._device
    xp = device.xp
    empty = xp.empty((0,), dtype=x.dtype)
    p = empty
    if unpack_pivots:
        m = x.shape[-2]
        if pivots.size and bool(((pivots < 1) | (pivots > m)).any()):
            raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you "
                               "properly pass the result of lu_factor?")
        p = permutation(xp, pivots, m, x.dtype)
    P = Tensor(p, device=device)
    if not unpack_data:
        return LuUnpackResult(P, Tensor(empty, device=device), Tensor(empty.copy(), device=device))
    L, U = _unpacked(device.ops, x)
    return LuUnpackResult(P, *record_outputs(LU_UNPACK, (L, U), (LU_data,), self_shape=x.shape))


def lu_solved(ops: Any, lu: Any, p: Any, b: Any, left: bool, adjoint: bool) -> Any:
    """x with op(A) x = b (x op(A) = b when not `left`), A = p L U packed in `lu`, op(A) = A^H when `adjoint`."""
    if left and not adjoint:
        y = ops.solve_triangular(lu, _mT(ops, p) @ b, False, True, True)
        return ops.solve_triangular(lu, y, True, True, False)
    if left:
        y = ops.solve_triangular(_mH(ops, lu), b, False, True, False)
        return p @ ops.solve_triangular(_mH(ops, lu), y, True, True, True)
    if not adjoint:
        y = ops.solve_triangular(lu, b, True, False, False)
        return ops.solve_triangular(lu, y, False, False, True) @ _mT(ops, p)
    y = ops.solve_triangular(_mH(ops, lu), b @ p, True, False, True)
    return ops.solve_triangular(_mH(ops, lu), y, False, False, False)


def _lu_solve_lu_grad(ops: Any, g: Any, self: Any, result: Any, permutation: Any, left: bool, adjoint: bool,
                      self_shape: tuple) -> Any:
    """A = P L U: op(A)'s gradient G as a solve's (-gB X^H, or -X^H gB), then L's and U's parts of A's gradient
    (P^T gA U^H below the diagonal, L^H P^T gA on and above it) packed as LU is."""
    gB = lu_solved(ops, self, permutation, g, left, not adjoint)
    grad = -(gB @ _mH(ops, result)) if left else -(_mH(ops, result) @ gB)
    if adjoint:
        grad = _mH(ops, grad)
    L, U = _unpacked(ops, self)
    moved = _mT(ops, permutation) @ grad
    packed = ops.tril(moved @ _mH(ops, U), -1) + triangle(ops, _mH(ops, L) @ moved, True, False)
    return ops.sum_to(packed, self_shape)


def _lu_solve_b_grad(ops: Any, g: Any, self: Any, permutation: Any, left: bool, adjoint: bool,
                     B_shape: tuple) -> Any:
    return ops.sum_to(lu_solved(ops, self, permutation, g, left, not adjoint), B_shape)


_LU_SOLVE_NAMES = ("self", "permutation", "left", "adjoint")
LU_SOLVE = Rule(
    "LinalgLuSolveBackward0",
    (("self", "result", "permutation", "left", "adjoint", "self_shape"), _lu_solve_lu_grad),
    ((), None),  # the pivots: integers, never differentiable
    ((*_LU_SOLVE_NAMES, "B_shape"), _lu_solve_b_grad),
)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """X with A X = B (X A = B when not `left`; A^H in A's place when `adjoint`) from lu_factor's LU and pivots
    of A; batch dims broadcast."""
    check_flags("linalg_lu_solve", left=left, adjoint=adjoint)
    require_tensors("linalg_lu_solve", LU=LU, pivots=pivots, B=B)
    lu_, piv, b = LU._data, pivots._data, B._data
    if b.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    if lu_.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor LU must have at least 2 dimensions.")
    if lu_.shape[-1] != lu_.shape[-2]:
        raise RuntimeError(f"torch.linalg.lu_solve: A must be batches of square matrices, but they are "
                           f"{lu_.shape[-2]} by {lu_.shape[-1]} matrices")
    n = lu_.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {equation} "
                           f"({n}x{n} and {b.shape[-2]}x{b.shape[-1]})")
    if piv.dtype != np.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    if piv.shape[-1:] != (n,) or piv.shape[:-1] != lu_.shape[:-2]:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the dimension of the matrix")
    if b.dtype != lu_.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{SCALAR_NAMES[lu_.dtype]} and B of type {SCALAR_NAMES[b.dtype]} instead")
    same_device(LU, pivots, B)
    try:
        np.broadcast_shapes(lu_.shape[:-2], b.shape[:-2])
    except ValueError:
        raise broadcast_error("linalg.lu_solve", b.shape[:-2], lu_.shape[:-2]) from None
    p = _permutation_tensor(LU, piv)
    data = lu_solved(LU._device.ops, lu_, p._data, b, left, adjoint)
    return record(LU_SOLVE, data, (LU, pivots, B), permutation=p, left=left, adjoint=adjoint, self_shape=lu_.shape,
                  B_shape=b.shape)


METHODS: dict[str, Any] = {"lu_unpack": lu_unpack}
