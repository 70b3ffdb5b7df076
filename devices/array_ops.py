"""Raw-array helpers that gradient rules use beside Python's operators (the fast path of a backward).

`TensorOps` in actorgrad mirrors this interface on Tensors, so the same rule also runs when a backward is
recorded (`create_graph=True`).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from actorgrad.devices.erf import erf as erf_kernel

# Measured here: np.broadcast_to costs about 2.5 µs (more when cold), filling a fresh array of 1280 elements
# about 0.5 µs; up to this many elements the copy wins.
SMALL_BROADCAST = 4096


def reduced_axes(shape: tuple[int, ...], target: tuple[int, ...]) -> tuple[int, ...]:
    """Axes of `shape` to sum so that it broadcasts back to `target` (the inverse of broadcasting)."""
    lead = len(shape) - len(target)
    return tuple(range(lead)) + tuple(lead + i for i, n in enumerate(target) if n == 1 and shape[lead + i] != 1)


class ArrayOps:
    """Gradient-rule helpers on raw arrays of one array module (numpy; cupy for CUDA devices)."""

    def __init__(self, xp: ModuleType) -> None:
        self.xp = xp

    @staticmethod
    def unpack(values: tuple, node: Any) -> list:
        """Saved values as raw arrays: tensors and saved outputs give their data, other values pass through."""
        return [getattr(v, "_data", v) for v in values]

    @staticmethod
    def sum_to(g: Any, shape: tuple[int, ...]) -> Any:
        if g.shape == shape:
            return g
        return g.sum(axis=reduced_axes(g.shape, shape), keepdims=True).reshape(shape)

    def broadcast_to(self, g: Any, shape: tuple[int, ...]) -> Any:
        if g.shape == shape:
            return g
        if math.prod(shape) > SMALL_BROADCAST:
            return self.xp.broadcast_to(g, shape)  # a view: no memory for large shapes
        out = self.xp.empty(shape, g.dtype)  # small: a filled copy is several times cheaper than the view
        out[...] = g
        return out

    @staticmethod
    def reshape(g: Any, shape: tuple[int, ...]) -> Any:
        return g if g.shape == shape else g.reshape(shape)

    @staticmethod
    def swapaxes(g: Any, dim0: int, dim1: int) -> Any:
        return g.swapaxes(dim0, dim1)

    @staticmethod
    def permute(g: Any, dims: tuple[int, ...]) -> Any:
        return g.transpose(dims)

    @staticmethod
    def sum(g: Any, dim: tuple[int, ...] | None, keepdim: bool = False) -> Any:
        return g.sum(axis=dim, keepdims=keepdim)

    def exp(self, x: Any) -> Any:
        return self.xp.exp(x)

    def log(self, x: Any) -> Any:
        return self.xp.log(x)

    @staticmethod
    def positive_mask(x: Any) -> Any:
        """Where x > 0, as booleans: multiplying a gradient by them keeps the gradient's dtype."""
        return x > 0

    @staticmethod
    def equal_mask(x: Any, y: Any) -> Any:
        return (x == y).astype(x.dtype)

    @staticmethod
    def cast(g: Any, dtype: Any) -> Any:
        return g.astype(dtype, copy=False)

    def zeros_like(self, x: Any) -> Any:
        return self.xp.zeros_like(x)

    def where(self, condition: Any, x: Any, y: Any) -> Any:
        """x where condition holds, else y (either may be a Python number, which keeps the other's dtype)."""
        return self.xp.where(condition, x, y)

    def sign(self, x: Any) -> Any:
        return self.xp.sign(x)

    def sin(self, x: Any) -> Any:
        return self.xp.sin(x)

    def cos(self, x: Any) -> Any:
        return self.xp.cos(x)

    def tanh(self, x: Any) -> Any:
        return self.xp.tanh(x)

    def sigmoid(self, x: Any) -> Any:
        return 0.5 + 0.5 * self.xp.tanh(0.5 * x)

    def erf(self, x: Any) -> Any:
        return erf_kernel(self.xp, x).astype(x.dtype, copy=False)
