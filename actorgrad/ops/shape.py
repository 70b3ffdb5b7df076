"""Shape ops (reshape, transpose, permute, broadcast_to) and their gradient rules."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import normalize_dims
from actorgrad.tensor import Tensor

__all__ = ["broadcast_to", "permute", "reshape", "transpose"]

VIEW = Rule("ViewBackward0", (("self_shape",), lambda ops, g, self_shape: ops.reshape(g, self_shape)))
TRANSPOSE = Rule(
    "TransposeBackward0", (("dim0", "dim1"), lambda ops, g, dim0, dim1: ops.swapaxes(g, dim0, dim1))
)
PERMUTE = Rule(
    "PermuteBackward0", (("inverse",), lambda ops, g, inverse: ops.permute(g, inverse))
)
TO_COPY = Rule("ToCopyBackward0", (("self_dtype",), lambda ops, g, self_dtype: ops.cast(g, self_dtype)))
EXPAND = Rule(
    "ExpandBackward0",
    (("self_shape",), lambda ops, g, self_shape: ops.sum_to(g, self_shape)),
    cost=lambda data, params: data.size,
)


def _shape_arg(shape: tuple) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        return tuple(shape[0])
    return tuple(shape)


def reshape(input: Tensor, *shape: Any) -> Tensor:
    x = input._data
    target = _shape_arg(shape)
    try:
        data = x.reshape(target)
    except ValueError:
        raise RuntimeError(f"shape '{list(target)}' is invalid for input of size {x.size}") from None
    return record(VIEW, data, (input,), self_shape=x.shape)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    x = input._data
    if x.ndim == 0:
        d0 = d1 = 0
    else:
        d0, d1 = (normalize_dims(d, x.ndim, "transpose")[0] for d in (dim0, dim1))
    return record(TRANSPOSE, np.swapaxes(x, d0, d1) if x.ndim else x, (input,), dim0=d0, dim1=d1)


def permute(input: Tensor, *dims: Any) -> Tensor:
    x = input._data
    order = _shape_arg(dims)
    if len(order) != x.ndim:
        raise RuntimeError(
            f"permute(): number of dims in the ordering ({len(order)}) does not match the tensor's {x.ndim} dims"
        )
    normalize_dims(order, x.ndim, "permute")
    order = tuple(d % x.ndim for d in order)
    return record(PERMUTE, np.transpose(x, order), (input,), inverse=tuple(np.argsort(order).tolist()))


def numpy_T(input: Tensor) -> Tensor:
    """`.T`: all dims reversed."""
    return permute(input, tuple(reversed(range(input.ndim))))


def broadcast_to(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    x = input._data
    shape = tuple(shape)
    try:
        data = np.broadcast_to(x, shape)
    except ValueError:
        raise RuntimeError(
            f"The expanded size of the tensor must match the existing size: cannot broadcast {x.shape} to "
            f"{shape}"
        ) from None
    return record(EXPAND, data, (input,), self_shape=x.shape)


def to_dtype(input: Tensor, dtype: Any) -> Tensor:
    """A differentiable cast; the gradient is cast back to the input's dtype."""
    x = input._data
    return record(TO_COPY, x.astype(dtype), (input,), self_dtype=x.dtype)


METHODS = {
    "reshape": reshape, "view": reshape, "transpose": transpose, "permute": permute,
    "broadcast_to": broadcast_to, "expand": lambda self, *shape: broadcast_to(self, _shape_arg(shape)),
    "T": property(numpy_T),
}
