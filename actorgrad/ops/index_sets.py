"""Index sets and assembled blocks: tril_indices and triu_indices, combinations (gathered by index, so
differentiable), broadcast_shapes and broadcast_tensors, and block_diag (zero-padded blocks joined by cat)."""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np

from actorgrad.default_dtype import default_float
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.indexing import getitem
from actorgrad.ops.joining import cat
from actorgrad.ops.operands import SCALAR_NAMES, broadcast_error, promote_types
from actorgrad.ops.shape import broadcast_to, reshape, to_dtype
from actorgrad.tensor import Tensor, int64
from actorgrad.tensor_construction import tensor

__all__ = ["block_diag", "broadcast_shapes", "broadcast_tensors", "combinations", "tril_indices", "triu_indices"]


def _triangle_indices(op: str, row: int, col: int, offset: int, dtype: Any, device: Any) -> Tensor:
    for name, size in (("row", row), ("col", col)):
        if size < 0:
            raise RuntimeError(f"{name} must be non-negative, got{size}")
    dtype = np.dtype(dtype)
    if dtype.kind != "i" or dtype.itemsize < 4:  # PyTorch's kernel has int32 and int64 only
        raise NotImplementedError(f"\"{op}\" not implemented for '{SCALAR_NAMES.get(dtype, dtype)}'")
    rows, cols = (np.tril_indices if op == "tril_indices" else np.triu_indices)(row, offset, col)
    return tensor(np.stack([rows, cols]).astype(dtype), device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = int64, device: Any = None) -> Tensor:
    """The (row, col) indices of a row x col matrix's lower triangle, `offset` diagonals above the main one
    included, in row-major order as a 2 x N tensor."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = int64, device: Any = None) -> Tensor:
    """The (row, col) indices of a row x col matrix's upper triangle from diagonal `offset` on, as a 2 x N tensor."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, device)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-r combinations of a 1-D tensor's elements, one per row, in itertools' order."""
    check_flags("combinations", with_replacement=with_replacement)
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return getitem(input, slice(0, 0))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    index = np.array(list(pick(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    return getitem(input, tensor(index, device=input.device))


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    """The shape that tensors of the given shapes (ints or sequences of ints) broadcast to."""
    lists = [[shape] if isinstance(shape, int) else shape for shape in shapes]
    result = [1] * max((len(shape) for shape in lists), default=0)
    for k, (shape, given) in enumerate(zip(lists, shapes)):
        for i in range(-1, -1 - len(shape), -1):
            size = shape[i]
            if isinstance(size, int) and size < 0:
                raise ValueError("Attempting to broadcast a dimension with negative length!")
            if size == 1 or size == result[i]:
                continue
            if result[i] != 1 or not isinstance(size, int):
                raise RuntimeError(f"Attempting to broadcast a dimension of length {size} at {i}! Mismatching "
                                   f"argument at index {k} had {given}; but expected shape should be broadcastable "
                                   f"to {result}")
            result[i] = size
    return tuple(result)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """The tensors expanded to their common broadcast shape (views)."""
    try:
        shape = broadcast_shapes(*(t.shape for t in tensors))
    except RuntimeError:
        raise broadcast_error("broadcast_tensors", *(t.shape for t in tensors)) from None
    return tuple(broadcast_to(t, shape) for t in tensors)


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-, 1- or 2-D, taken as matrices) along a block diagonal, zeros elsewhere; dtypes promote."""
    for k, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {k} has "
                               f"{t.ndim} dimensions")
    if not tensors:
        return Tensor(np.zeros((1, 0), default_float()))
    dtype = functools.reduce(promote_types, (t._data.dtype for t in tensors))
    blocks = [t if t.dtype == dtype else to_dtype(t, dtype) for t in tensors]
    blocks = [b if b.ndim == 2 else reshape(b, (1, -1)) for b in blocks]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        right = width - left - b.shape[1]
        rows.append(cat([b.new_zeros((b.shape[0], left)), b, b.new_zeros((b.shape[0], right))], 1))
        left += b.shape[1]
    return cat(rows, 0)


METHODS: dict[str, Any] = {}
