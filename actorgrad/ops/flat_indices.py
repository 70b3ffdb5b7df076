"""unravel_index: flat indices into a shape as one index tensor per dim, as PyTorch's (a negative index counts from
the end, and, as in PyTorch, an index past the shape's size wraps around it)."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.tensor import Tensor

__all__ = ["unravel_index"]


def unravel_index(indices: Tensor, shape: int | tuple[int, ...] | list[int]) -> tuple[Tensor, ...]:
    """The coordinates, in a tensor of `shape`, of each flat (row-major) index in `indices`."""
    if indices.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got actorgrad.{indices.dtype}")
    sizes = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    if any(isinstance(n, bool) or not isinstance(n, int | np.integer) for n in sizes):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {shape}")
    if any(n < 0 for n in sizes):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(sizes)}")
    if not sizes:
        return ()
    total = int(np.prod(sizes))
    if total == 0:
        raise RuntimeError("ZeroDivisionError")
    xp = indices._device.xp
    x = indices._data.astype(np.int64) % total
    out = []
    for n in reversed(sizes):
        out.append(Tensor(xp.asarray(x % n), device=indices._device))  # a 0-d array's remainder is a scalar
        x = x // n
    return tuple(reversed(out))


METHODS: dict[str, Any] = {}
