"""as_strided_scatter: a copy of a tensor with `src` written where `input.as_strided(size, stride, offset)` reads.

As in PyTorch, the places are those of `input`'s storage: each element of the result is `input`'s element unless
the view covers that element's place in memory, and then it is `src`'s element there (several elements of an
expanded input can share a place, and all take it). Where the view reads one place twice, the later element of
`src` (in row-major order) is the one written, and the only one given a gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.grad_mode import no_grad
from actorgrad.ops.indexing import on_device
from actorgrad.ops.record import Rule, record
from actorgrad.ops.strided import AS_STRIDED, _places, _strided
from actorgrad.tensor import Tensor

__all__ = ["as_strided_scatter"]


def _src_grad(ops: Any, g: Any, positions: Any, input_positions: Any, winners: Any, storage_size: int) -> Any:
    """The gradient at each place summed over the input elements there, read at each written element of src."""
    storage = ops.index_put_zeros(g, (storage_size,), (), (input_positions,))
    grad = ops.index(storage, (), (positions,))
    return grad if winners is None else grad * winners


AS_STRIDED_SCATTER = Rule(
    "AsStridedScatterBackward0",
    (("keep",), lambda ops, g, keep: g * keep),
    (("positions", "input_positions", "winners", "storage_size"), _src_grad),
)


def _element_strides(array: Any) -> tuple[int, ...]:
    return tuple(s // array.itemsize for s in array.strides)


def as_strided_scatter(input: Tensor, src: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """A new tensor: `input` with the elements `input.as_strided(size, stride, storage_offset)` would view set to
    `src` (of that view's shape, cast to input's dtype)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"as_strided_scatter(): argument 'src' (position 2) must be Tensor, not {type(src).__name__}")
    with no_grad():
        view = _strided("as_strided_scatter", input.detach(), size, stride, storage_offset, False, AS_STRIDED)
    if src.shape != view.shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(view.shape)}")
    x = input._data
    if src.dtype != x.dtype:
        src = src.to(x.dtype)
    positions = _places(view.storage_offset(), view.shape, _element_strides(view._data)).ravel()
    input_positions = _places(input.storage_offset(), x.shape, _element_strides(x))
    both = np.concatenate([positions, input_positions.ravel()])
    low, high = (int(both.min()), int(both.max()) + 1) if both.size else (0, 0)
    positions -= low
    input_positions -= low
    writer = np.full(high - low, -1, np.int64)  # the last element of src written at each place
    np.maximum.at(writer, positions, np.arange(positions.size))
    won = writer[positions] == np.arange(positions.size)
    written = writer[input_positions] >= 0
    xp = input._device.xp
    storage = xp.zeros(high - low, x.dtype)
    storage[on_device(input, positions[won])] = src._data.reshape(-1)[on_device(input, np.flatnonzero(won))]
    data = xp.where(on_device(input, written), storage[on_device(input, input_positions)], x)
    keep = on_device(input, (~written).astype(x.real.dtype))
    winners = None if won.all() else on_device(input, won.reshape(view.shape).astype(x.real.dtype))
    return record(
        AS_STRIDED_SCATTER, data, (input, src), keep=keep, positions=on_device(input, positions.reshape(view.shape)),
        input_positions=on_device(input, input_positions), winners=winners, storage_size=high - low,
    )


METHODS = {
    "as_strided_scatter": lambda self, src, size, stride, storage_offset=None: as_strided_scatter(
        self, src, size, stride, storage_offset
    ),
}
