"""PyTorch's memory formats (`actorgrad.contiguous_format`, `preserve_format`, `channels_last`,
`channels_last_3d`), taken where PyTorch takes a `memory_format=` (clone, contiguous, the `*_like` functions,
`to`, `is_contiguous`), so code written for PyTorch (`zeros_like(p, memory_format=torch.preserve_format)` in an
optimizer) runs as it is.

A channels-last tensor holds its elements in NHWC (NDHWC) order behind the same NCHW shape: numpy and CuPy arrays
take any strides, so it is a transposed row-major copy. A preserve_format copy is laid out as PyTorch lays it out:
with the input's strides when those are dense and do not overlap (a transposed or permuted tensor), else densely
in the order of the input's strides (a slice of a channels-last tensor stays channels-last; an expanded dim
keeps its row-major place)."""

from __future__ import annotations

from typing import Any

__all__ = ["channels_last", "channels_last_3d", "contiguous_format", "memory_format", "preserve_format"]


class memory_format:  # noqa: N801 - PyTorch's name for the type of its formats
    """One of PyTorch's memory formats; compare them by identity."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"actorgrad.{self.name}"

    def __reduce__(self) -> str:
        return self.name  # a module-level singleton: pickling names it


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

# A channels-last format's rank and the order its memory holds the dims in (channels last).
_CHANNELS_LAST = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}


def checked_format(op: str, value: Any) -> memory_format:
    """`value` as a memory format, refused with PyTorch's TypeError when it is none."""
    if not isinstance(value, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be torch.memory_format, not {type(value).__name__}")
    return value


def _channels_last_order(array: Any, fmt: memory_format) -> tuple[int, ...]:
    rank, order = _CHANNELS_LAST[fmt]
    if array.ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")
    return order


def laid_out(xp: Any, array: Any, fmt: memory_format) -> Any:
    """A copy of `array` whose memory is in `fmt`'s order (row-major for contiguous and preserve formats)."""
    if fmt not in _CHANNELS_LAST:
        return xp.array(array, order="C", copy=True)
    order = _channels_last_order(array, fmt)
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    return xp.ascontiguousarray(array.transpose(order)).transpose(inverse)


def is_laid_out(array: Any, fmt: memory_format) -> bool:
    """Whether `array`'s memory is in `fmt`'s order with no gaps (PyTorch's is_contiguous(memory_format=))."""
    if fmt not in _CHANNELS_LAST:  # preserve_format asks about the default layout, as in PyTorch
        return bool(array.flags.c_contiguous)
    rank, order = _CHANNELS_LAST[fmt]
    return array.ndim == rank and bool(array.transpose(order).flags.c_contiguous)


def _dense_strides(shape: tuple[int, ...], order: Any) -> tuple[int, ...]:
    """Strides (in elements) of gapless memory holding the dims in `order`, innermost first."""
    dense, step = [0] * len(shape), 1
    for d in order:
        dense[d] = step
        step *= max(shape[d], 1)
    return tuple(dense)


def _preserved_strides(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...]:
    """PyTorch's preserve_format strides (in elements) for a copy of an array with `strides`: those strides when
    they are dense and do not overlap, else dense strides in their order (as its `infer_dense_strides` sorts:
    stably by stride, smaller size first on a tie, a broadcast (0) stride leaving its dim where it is)."""
    order = list(range(len(shape)))[::-1]  # innermost first

    def after(a: int, b: int) -> bool | None:  # whether dim a goes outside dim b; None: no preference
        if strides[a] == 0 or strides[b] == 0:
            return None
        if strides[a] != strides[b]:
            return strides[a] > strides[b]
        return True if shape[a] > shape[b] else None

    for i in range(1, len(order)):  # insertion sort, stopping at the first dim that must stay inside
        at = i
        for j in range(i - 1, -1, -1):
            swap = after(order[j], order[at])
            if swap:
                order[j], order[at] = order[at], order[j]
                at = j
            elif swap is False:
                break
    dense = _dense_strides(shape, order)
    sized = [d for d in order if shape[d] != 1]
    if all(strides[d] == dense[d] for d in sized):
        return strides  # already dense and non-overlapping: PyTorch keeps even a size-1 dim's stride
    return dense


def preserved(xp: Any, values: Any, like: Any, dtype: Any = None) -> Any:
    """A copy of `values` (cast to `dtype`) laid out as PyTorch's preserve_format lays out a copy of `like` (an
    array of the same shape, maybe `values` itself or on another device)."""
    if like.flags.c_contiguous or any(step < 0 for step in like.strides):  # negative: a flip, a copy in PyTorch
        return xp.array(values, dtype=dtype, order="C", copy=True)
    strides = _preserved_strides(like.shape, tuple(step // like.itemsize for step in like.strides))
    if strides == _dense_strides(like.shape, range(like.ndim - 1, -1, -1)):  # row-major (expanded, sliced): plain copy
        return xp.array(values, dtype=dtype, order="C", copy=True)
    flat = xp.empty(max(like.size, 1), values.dtype if dtype is None else dtype)
    out = xp.lib.stride_tricks.as_strided(flat, like.shape, tuple(step * flat.itemsize for step in strides))
    out[...] = values
    return out


def formatted(op: str, leaf: Any, fmt: Any, like: Any = None) -> Any:
    """A new leaf (no history yet) with its memory in `fmt`'s order: what a creation function's `memory_format=`
    asks for; for preserve_format, that of a copy of the tensor `like`."""
    if checked_format(op, fmt) in _CHANNELS_LAST:
        leaf._data = laid_out(leaf._device.xp, leaf._data, fmt)
    elif fmt is preserve_format and like is not None and not like._data.flags.c_contiguous:
        leaf._data = preserved(leaf._device.xp, leaf._data, like._data)
    return leaf
