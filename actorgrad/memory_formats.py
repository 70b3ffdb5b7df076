"""PyTorch's memory formats (`actorgrad.contiguous_format`, `preserve_format`, `channels_last`,
`channels_last_3d`), taken where PyTorch takes a `memory_format=` (clone, contiguous, the `*_like` functions,
`to`, `is_contiguous`), so code written for PyTorch (`zeros_like(p, memory_format=torch.preserve_format)` in an
optimizer) runs as it is.

A channels-last tensor holds its elements in NHWC (NDHWC) order behind the same NCHW shape: numpy and CuPy arrays
take any strides, so it is a transposed row-major copy. preserve_format copies keep row-major memory, which is
what actorgrad's copies always give (PyTorch's keep the input's strides when they are dense)."""

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


def formatted(op: str, leaf: Any, fmt: Any) -> Any:
    """A new leaf (no history yet) with its memory in `fmt`'s order: what a creation function's `memory_format=`
    asks for."""
    if checked_format(op, fmt) in _CHANNELS_LAST:
        leaf._data = laid_out(leaf._device.xp, leaf._data, fmt)
    return leaf
