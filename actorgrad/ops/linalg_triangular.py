"""Solves with triangular matrices and with Cholesky factors: `linalg.solve_triangular`, the older
`triangular_solve` (which also returns a copy of A), `cholesky_solve` and `cholesky_inverse`, with PyTorch's
gradient rules (the kernel, a substitution over any array module, is `actorgrad.devices.triangular`).

Only the triangle an op reads gets a gradient from solve_triangular and triangular_solve, as in PyTorch; the
Cholesky ops' gradients are PyTorch's full matrices (its formulas do not restrict them to the factor's triangle).
Each formula solves through `ops.solve_triangular`, a recorded op under `create_graph=True`, so the backward
differentiates again.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.linalg_decompositions import _mH, _mT
from actorgrad.ops.linalg_outputs import record_outputs
from actorgrad.ops.operands import SCALAR_NAMES, broadcast_error, require_tensors
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn_once

__all__ = ["cholesky_inverse", "cholesky_solve", "triangular_solve"]

TriangularSolveResult = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])

TRIANGULAR_SOLVE_DEPRECATED = (
    "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular and will be removed in a future "
    "PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed and does not return a copy of one "
    "of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be replaced with\n"
    "X = torch.linalg.solve_triangular(A, B)."
)


def triangle(ops: Any, x: Any, upper: bool, unitriangular: bool) -> Any:
    """The triangle of x a triangular solve reads: upper or lower, without the diagonal when `unitriangular`."""
    if not upper:
        return ops.tril(x, -int(unitriangular))
    return x - ops.tril(x, int(unitriangular) - 1)


def _solve_triangular_grads(ops: Any, g: Any, a: Any, x: Any, upper: bool, left: bool, unit: bool) -> tuple:
    """PyTorch's linalg_solve_triangular_backward: gB = A^-H g (g A^-H when not left), gA = -gB X^H (-X^H gB),
    restricted to the triangle A's solve read."""
    gB = ops.solve_triangular(_mH(ops, a), g, not upper, left, unit)
    gA = -(gB @ _mH(ops, x)) if left else -(_mH(ops, x) @ gB)
    return triangle(ops, gA, upper, unit), gB


def _solve_triangular_a_grad(ops: Any, g: Any, self: Any, result: Any, upper: bool, left: bool, unitriangular: bool,
                             self_shape: tuple) -> Any:
    return ops.sum_to(_solve_triangular_grads(ops, g, self, result, upper, left, unitriangular)[0], self_shape)


def _solve_triangular_b_grad(ops: Any, g: Any, self: Any, upper: bool, left: bool, unitriangular: bool,
                             other_shape: tuple) -> Any:
    return ops.sum_to(ops.solve_triangular(_mH(ops, self), g, not upper, left, unitriangular), other_shape)


_FLAGS = ("upper", "left", "unitriangular")
SOLVE_TRIANGULAR = Rule(
    "LinalgSolveTriangularBackward0",
    (("self", "result", *_FLAGS, "self_shape"), _solve_triangular_a_grad),
    (("self", *_FLAGS, "other_shape"), _solve_triangular_b_grad),
)


def _check_solvable(op: str, dtype: Any, *, complex_ok: bool = False) -> None:
    """PyTorch's CPU kernels take float32 and float64 (and, where actorgrad's gradient takes them, complex)."""
    if dtype not in (np.float32, np.float64) and not (complex_ok and dtype in (np.complex64, np.complex128)):
        raise NotImplementedError(f'"{op}" not implemented for \'{SCALAR_NAMES[dtype]}\'')


def _batch(op: str, b: Any, a: Any) -> tuple[int, ...]:
    """The broadcast batch shape of b and a, with PyTorch's error (which names b's size first)."""
    try:
        return np.broadcast_shapes(b.shape[:-2], a.shape[:-2])
    except ValueError:
        raise broadcast_error(op, b.shape[:-2], a.shape[:-2]) from None


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """X with A X = B (X A = B when not `left`) for triangular A: only its upper or lower triangle is read (its
    diagonal taken as ones with `unitriangular`), and batch dims broadcast. A zero on the diagonal gives infinities,
    not an error, as in PyTorch."""
    check_flags("linalg_solve_triangular", upper=upper, left=left, unitriangular=unitriangular)
    require_tensors("linalg_solve_triangular", input=A, B=B)
    a, b = A._data, B._data
    for name, x in (("A", a), ("B", b)):
        if x.ndim < 2:
            raise RuntimeError(f"linalg.solve_triangular: The input tensor {name} must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.solve_triangular: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    _check_solvable("triangular_solve_cpu", a.dtype, complex_ok=True)
    if (b.shape[-2] if left else b.shape[-1]) != a.shape[-1]:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation {equation} "
                           f"({a.shape[-2]}x{a.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    _batch("linalg.solve_triangular", b, a)
    same_device(A, B)
    data = A._device.ops.solve_triangular(a, b.astype(a.dtype, copy=False), upper, left, unitriangular)
    return record(SOLVE_TRIANGULAR, data, (A, B), upper=upper, left=left, unitriangular=unitriangular,
                  self_shape=a.shape, other_shape=b.shape)


def _triangular_solve_grad(ops: Any, g: tuple, self: Any, other: Any, result: Any, upper: bool, transpose: bool,
                           unitriangular: bool, self_shape: tuple, other_shape: tuple, index: int) -> Any:
    """PyTorch's triangular_solve_backward: the solution's gradients as solve_triangular's with op(A) = A^T when
    `transpose`, and the copy's gradient added to A's whole."""
    gX, gM = g
    gA = gB = None
    if gX is not None:
        a = _mT(ops, other) if transpose else other
        gA, gB = _solve_triangular_grads(ops, gX, a, result, upper != transpose, True, unitriangular)
        gA = _mT(ops, gA) if transpose else gA
    if index == 0:
        return ops.sum_to(gB, self_shape) if gB is not None else ops.zeros_like(self)
    if gM is not None:
        gA = gM if gA is None else gA + gM
    return ops.sum_to(gA, other_shape) if gA is not None else ops.zeros_like(other)


_TRIANGULAR_SOLVE_NAMES = (
    "self", "other", "result", "upper", "transpose", "unitriangular", "self_shape", "other_shape",
)
TRIANGULAR_SOLVE = Rule(
    "TriangularSolveBackward0",
    (_TRIANGULAR_SOLVE_NAMES, lambda ops, g, *saved: _triangular_solve_grad(ops, g, *saved, index=0)),
    (_TRIANGULAR_SOLVE_NAMES, lambda ops, g, *saved: _triangular_solve_grad(ops, g, *saved, index=1)),
)


def triangular_solve(input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> TriangularSolveResult:
    """torch.triangular_solve (deprecated for linalg.solve_triangular, and warned so): X with A X = input (A^T X
    = input when `transpose`, not conjugated for complex A, as PyTorch's), and a copy of A broadcast to the batch
    shape, both outputs of one node."""
    check_flags("triangular_solve", upper=upper, transpose=transpose, unitriangular=unitriangular)
    require_tensors("triangular_solve", input=input, A=A)
    warn_once(TRIANGULAR_SOLVE_DEPRECATED)
    b, a = input._data, A._data
    for name, x in (("b", b), ("A", a)):
        if x.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it has "
                               f"{x.ndim} dimensions instead")
    _check_same_dtype(b, a)
    _check_square(a)
    _check_rows("triangular_solve", a, b)
    _check_solvable("triangular_solve_cpu", a.dtype, complex_ok=True)
    same_device(input, A)
    xp = A._device.xp
    batch = _batch("triangular_solve", b, a)
    op_a = xp.swapaxes(a, -1, -2) if transpose else a
    solution = A._device.ops.solve_triangular(op_a, b, upper != transpose, True, unitriangular)
    copy = xp.broadcast_to(a, batch + a.shape[-2:]).copy()
    return TriangularSolveResult(*record_outputs(
        TRIANGULAR_SOLVE, (solution, copy), (input, A), upper=upper, transpose=transpose, unitriangular=unitriangular,
        self_shape=b.shape, other_shape=a.shape))


def _check_same_dtype(b: Any, a: Any) -> None:
    if b.dtype != a.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {SCALAR_NAMES[b.dtype]} and "
                           f"A of type {SCALAR_NAMES[a.dtype]} instead.")


def _check_square(a: Any) -> None:
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {a.shape[-2]} by {a.shape[-1]} "
                           "matrices")


def _check_rows(op: str, a: Any, b: Any) -> None:
    if b.shape[-2] != a.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for {op}: each A matrix is {a.shape[-1]} by {a.shape[-1]} but "
                           f"each b matrix is {b.shape[-2]} by {b.shape[-1]}")


def _cholesky_solve_b_grad(ops: Any, g: Any, other: Any, upper: bool, self_shape: tuple) -> Any:
    return ops.sum_to(ops.cholesky_solve(g, other, upper), self_shape)


def _cholesky_solve_factor_grad(ops: Any, g: Any, other: Any, result: Any, upper: bool, other_shape: tuple) -> Any:
    """PyTorch's cholesky_solve_backward: with C = gB X^H + X gB^H, -L C (-C L for a lower factor)."""
    common = ops.cholesky_solve(g, other, upper) @ _mH(ops, result)
    common = common + _mH(ops, common)
    return ops.sum_to(-(other @ common) if upper else -(common @ other), other_shape)


CHOLESKY_SOLVE = Rule(
    "CholeskySolveBackward0",
    (("other", "upper", "self_shape"), _cholesky_solve_b_grad),
    (("other", "result", "upper", "other_shape"), _cholesky_solve_factor_grad),
)


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """X with A X = input, given A's Cholesky factor input2 (lower, A = L L^H; upper, A = U^H U), of which only
    that triangle is read; batch dims broadcast."""
    check_flags("cholesky_solve", upper=upper)
    require_tensors("cholesky_solve", input=input, input2=input2)
    b, a = input._data, input2._data
    for name, x in (("b", b), ("u", a)):
        if x.ndim < 2:
            raise RuntimeError(f"{name} should have at least 2 dimensions, but has {x.ndim} dimensions instead")
    _check_same_dtype(b, a)
    _check_square(a)
    _check_rows("cholesky_solve", a, b)
    _check_solvable("cholesky_solve_cpu", a.dtype, complex_ok=True)
    same_device(input, input2)
    _batch("cholesky_solve", b, a)
    data = input._device.ops.cholesky_solve(b, a, upper)
    return record(CHOLESKY_SOLVE, data, (input, input2), upper=upper, self_shape=b.shape, other_shape=a.shape)


def _cholesky_inverse_grad(ops: Any, g: Any, self: Any, result: Any, upper: bool) -> Any:
    """PyTorch's cholesky_inverse_backward: with C = A^-1 (g + g^H) A^-1, -L C (-C L for a lower factor)."""
    common = result @ (g + _mH(ops, g)) @ result
    return -(self @ common) if upper else -(common @ self)


CHOLESKY_INVERSE = Rule("CholeskyInverseBackward0", (("self", "result", "upper"), _cholesky_inverse_grad))


def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """The inverse of A from its Cholesky factor (lower, A = L L^H; upper, A = U^H U), of which only that triangle
    is read."""
    check_flags("cholesky_inverse", upper=upper)
    require_tensors("cholesky_inverse", input=input)
    x = input._data
    if x.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    if x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they are {x.shape[-2]} by "
                           f"{x.shape[-1]} matrices")
    _check_solvable("cholesky_inverse_out_cpu", x.dtype, complex_ok=True)
    xp = input._device.xp
    identity = xp.broadcast_to(xp.eye(x.shape[-1], dtype=x.dtype), x.shape)
    return record(CHOLESKY_INVERSE, input._device.ops.cholesky_solve(identity, x, upper), (input,), upper=upper)


METHODS: dict[str, Any] = {
    "cholesky_inverse": cholesky_inverse, "cholesky_solve": cholesky_solve, "triangular_solve": triangular_solve,
}
