"""Diagonals and triangles: diagonal, diag (a matrix's diagonal, or a matrix from a vector), trace, tril and triu.
Each diagonal's gradient writes g back onto the diagonal through an advanced index, so a recorded backward
differentiates again; a triangle's gradient is g masked as its forward was."""

from __future__ import annotations

from typing import Any

from actorgrad.devices import is_writeable
from actorgrad.ops.operands import dim_in_range
from actorgrad.ops.record import Rule, record
from actorgrad.ops.shape import MASKED_GRAD, single_dim
from actorgrad.tensor import Tensor, int64

__all__ = ["diag", "diagonal", "trace", "tril", "triu"]


def _put_diagonal(ops: Any, g: Any, self_shape: tuple, advanced: tuple, back: tuple) -> Any:
    """g written onto the diagonal of zeros of the input's shape: the diagonal dim moves back to where the
    advanced index puts it, then the index writes it."""
    return ops.index_put_zeros(ops.permute(g, back), self_shape, (), advanced)


_PUT_DIAGONAL = (("self_shape", "advanced", "back"), _put_diagonal)
_PLACES = ("advanced",)  # a diagonal's places: PyTorch's nodes keep offsets and dims, no tensor for hooks
DIAGONAL = Rule("DiagonalBackward0", _PUT_DIAGONAL, unhooked=_PLACES)
DIAG_MATRIX = Rule("DiagonalBackward0_copy", _PUT_DIAGONAL, unhooked=_PLACES)  # diag of a matrix, as PyTorch 2.13's
DIAG_EMBED = Rule("DiagEmbedBackward0", (("advanced",), lambda ops, g, advanced: ops.index(g, (), advanced)),
                  unhooked=_PLACES)
TRIL = Rule("TrilBackward0", MASKED_GRAD, unhooked=("mask",))
TRIU = Rule("TriuBackward0", MASKED_GRAD, unhooked=("mask",))
TRACE = Rule(
    "TraceBackward0",
    (("self_shape", "advanced", "length"),
     lambda ops, g, self_shape, advanced, length: ops.index_put_zeros(
         ops.broadcast_to(ops.reshape(g, (1,)), (length,)), self_shape, (), advanced)),
    unhooked=_PLACES,
)


def _diagonal_index(xp: Any, shape: tuple, offset: int, d1: int, d2: int) -> tuple[tuple, int]:
    """The advanced index of the diagonal `offset` of dims d1 and d2, and its length."""
    length = max(0, min(shape[d1] - max(-offset, 0), shape[d2] - max(offset, 0)))
    index: list[Any] = [slice(None)] * len(shape)
    index[d1] = xp.arange(length) + max(-offset, 0)
    index[d2] = xp.arange(length) + max(offset, 0)
    return tuple(index), length


def _diagonal(rule: Rule, input: Tensor, offset: int, dim1: int, dim2: int) -> Tensor:
    x = input._data
    d1, d2 = (dim_in_range(d, max(x.ndim, 1)) if isinstance(d, int) else single_dim(d, x.ndim, "diagonal")
              for d in (dim1, dim2))  # PyTorch's error for a dim out of range names no op
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    advanced, _ = _diagonal_index(input._device.xp, x.shape, offset, d1, d2)
    # A view of the input, the diagonal dim last, as PyTorch's; numpy makes it read-only only to warn of its
    # aliasing, which a view is meant to have, so it is as writeable as the input.
    picked = x.diagonal(offset, d1, d2)
    if rule is DIAG_MATRIX:  # diag of a matrix copies, as in PyTorch
        picked = picked.copy()
    elif is_writeable(x) and not is_writeable(picked):
        picked.flags.writeable = True
    # The gradient's diagonal dim moves back to where numpy's advanced index puts it: where d1 was when d1 and d2
    # are neighbours, else first.
    where = min(d1, d2) if abs(d1 - d2) == 1 else 0
    order = [d for d in range(picked.ndim) if d != where] + [where]
    back = tuple(order.index(d) for d in range(picked.ndim))
    return record(rule, picked, (input,), self_shape=x.shape, advanced=advanced, back=back)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal `offset` (above the main one when positive) of the planes of dims dim1 and dim2, as the last
    dim: a view of the input, as in PyTorch."""
    return _diagonal(DIAGONAL, input, offset, dim1, dim2)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A vector's square matrix with it on the diagonal `diagonal`, or a matrix's diagonal `diagonal`."""
    if input.ndim == 2:
        return _diagonal(DIAG_MATRIX, input, diagonal, 0, 1)
    if input.ndim != 1:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    x = input._data
    xp = input._device.xp
    n = x.shape[0] + abs(diagonal)
    advanced, _ = _diagonal_index(xp, (n, n), diagonal, 0, 1)
    data = xp.zeros((n, n), x.dtype)
    data[advanced] = x
    return record(DIAG_EMBED, data, (input,), advanced=advanced)


def trace(input: Tensor) -> Tensor:
    """The sum of a matrix's main diagonal; integer matrices give int64, as sum does."""
    x = input._data
    if x.dtype.kind == "b":  # before the dim check, as PyTorch's dispatch on the dtype
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    xp = input._device.xp
    advanced, length = _diagonal_index(xp, x.shape, 0, 0, 1)
    data = xp.asarray(x[advanced].sum(dtype=int64 if x.dtype.kind in "iu" else x.dtype))
    return record(TRACE, data, (input,), self_shape=x.shape, advanced=advanced, length=length)


def _triangle(rule: Rule, input: Tensor, diagonal: int, op: str, lower: bool) -> Tensor:
    x = input._data
    if x.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    rows, cols = x.shape[-2:]
    xp = input._device.xp
    mask = xp.tri(rows, cols, diagonal, dtype=bool) if lower else ~xp.tri(rows, cols, diagonal - 1, dtype=bool)
    return record(rule, xp.where(mask, x, 0).astype(x.dtype, copy=False), (input,), mask=mask)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle(TRIL, input, diagonal, "tril", lower=True)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle(TRIU, input, diagonal, "triu", lower=False)


METHODS: dict[str, Any] = {"diagonal": diagonal, "diag": diag, "trace": trace, "tril": tril, "triu": triu}
