"""as_strided and as_strided_: a view of a tensor's storage at any sizes, strides and storage offset.

As in PyTorch, strides and offset count elements of the input's storage: the memory its base owns (in actorgrad,
the array at the end of its numpy `base` chain), not the input's own elements, so `Tensor.stride()` and
`storage_offset()` describe where an as_strided view reads. Windows may overlap; the gradient of an element read
several times is the sum of the gradients of its reads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.grad_mode import _grad_enabled
from actorgrad.ops.indexing import on_device
from actorgrad.ops.inplace_recording import _check_grad_mode_view, _check_rebase, _move_history
from actorgrad.ops.memory_overlap import has_internal_overlap
from actorgrad.ops.operands import int_tuple
from actorgrad.ops.record import Rule, make_view, record
from actorgrad.tensor import Tensor, memory_owner
from actorgrad.version_counter import bump_version, refuse_inference_change

__all__ = ["as_strided", "as_strided_"]


def _strided_grad(ops: Any, g: Any, positions: Any, input_positions: Any, shares: Any, storage_size: int) -> Any:
    """`g` added into zeros of the storage's size at each output element's place (the reads of one place sum),
    read back at the input's places; input elements sharing a place (an expanded input) split its gradient
    evenly, as PyTorch's as_strided_backward divides by their count."""
    storage = ops.index_put_zeros(g, (storage_size,), (), (positions,))
    grad = ops.index(storage, (), (input_positions,))
    return grad if shares is None else grad / shares


_GRAD = (("positions", "input_positions", "shares", "storage_size"), _strided_grad)
AS_STRIDED = Rule("AsStridedBackward0", _GRAD)
AS_STRIDED_INPLACE = Rule("AsStridedBackward1", _GRAD)


def _places(offset: int, size: tuple[int, ...], stride: tuple[int, ...]) -> np.ndarray:
    """The storage index of each element of the geometry (size, stride, offset), as an int64 array of `size`."""
    out = np.full(size, offset, np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        out += (np.arange(n, dtype=np.int64) * s).reshape((-1,) + (1,) * (len(size) - d - 1))
    return out


def _storage_of(input: Tensor) -> Any:
    """The array owning `input`'s memory, refused when it is no single block of `input`'s dtype, where element
    counts in it would not be the storage's."""
    root = memory_owner(input)
    x = input._data
    if not (root.flags.c_contiguous or root.flags.f_contiguous) or root.dtype != x.dtype:
        raise RuntimeError(
            f"as_strided: the memory this tensor views (an array of dtype {root.dtype}, shape {list(root.shape)}, "
            f"strides {list(root.strides)} in bytes) is not one contiguous block of {x.dtype} elements, so strides "
            f"and offsets in elements cannot address it; clone() the tensor first"
        )
    return root


def _strided(op: str, input: Tensor, size: Any, stride: Any, storage_offset: Any, method: bool, rule: Rule) -> Tensor:
    first = 1 if method else 2  # the argument positions PyTorch's errors name
    size = int_tuple(size, op, "size", first)
    stride = int_tuple(stride, op, "stride", first + 1)
    if storage_offset is not None and (not isinstance(storage_offset, int | np.integer) or
                                       isinstance(storage_offset, bool)):
        raise TypeError(
            f"{op}(): argument 'storage_offset' (position {first + 2}) must be int, not {type(storage_offset).__name__}"
        )
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    x = input._data
    root = _storage_of(input)
    itemsize = x.itemsize
    own_offset = input.storage_offset()
    offset = own_offset if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    needed = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0
    if needed > root.size:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and itemsize "
            f"{itemsize} requiring a storage size of {needed * itemsize} are out of bounds for storage of size "
            f"{root.nbytes}"
        )
    start = offset if needed else 0  # an empty view reads nothing, wherever its offset points
    byte_strides = tuple(s * itemsize for s in stride)
    if isinstance(root, np.ndarray):  # built on the root, so the view's numpy base chain ends at its storage
        data = np.ndarray(size, x.dtype, buffer=root, offset=start * itemsize, strides=byte_strides)
        if has_internal_overlap(data):  # read-only, as an expand's: PyTorch refuses most writes to repeated elements
            data.flags.writeable = False
    else:
        flat = root.reshape(-1, order="A")  # the memory in its own order
        data = input._device.xp.lib.stride_tricks.as_strided(flat[start:], size, byte_strides)
    params = {}
    if _grad_enabled.get() and input.requires_grad:
        params = _geometry(input, size, stride, offset, own_offset)
    out = record(rule, data, (input,), **params)
    if out._base is None:  # a CuPy strided array names no base, so record could not tell it is a view
        make_view(out, input)
    return out


def _geometry(input: Tensor, size: tuple, stride: tuple, offset: int, own_offset: int) -> dict:
    """The saved values of `_strided_grad`: storage places of the output's and the input's elements, counted from
    the lowest either reaches, so the backward's storage-sized gradient spans only what they cover."""
    x = input._data
    positions = _places(offset, size, stride)
    input_positions = _places(own_offset, x.shape, tuple(s // x.itemsize for s in x.strides))
    both = np.concatenate([positions.ravel(), input_positions.ravel()])
    low, high = (int(both.min()), int(both.max()) + 1) if both.size else (0, 0)
    positions -= low
    input_positions -= low
    counts = np.bincount(input_positions.ravel(), minlength=high - low)
    shares = counts[input_positions].astype(x.dtype) if input_positions.size and counts.max() > 1 else None
    return dict(
        positions=on_device(input, positions), input_positions=on_device(input, input_positions),
        shares=None if shares is None else on_device(input, shares), storage_size=high - low,
    )


def as_strided(input: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """A view of `input`'s storage with `size`, `stride` and `storage_offset` (default: input's own), all in
    elements of the storage."""
    return _strided("as_strided", input, size, stride, storage_offset, False, AS_STRIDED)


def as_strided_(input: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """`as_strided` in place: `input` itself takes the new geometry (and, recorded, an AsStridedBackward1 history),
    refused where PyTorch refuses an in-place op on it."""
    return _in_place(input, size, stride, storage_offset, False)


def _in_place(self: Tensor, size: Any, stride: Any, storage_offset: Any, method: bool) -> Tensor:
    refuse_inference_change(self)
    if _grad_enabled.get() and self.requires_grad:
        _check_grad_mode_view(self)
        _check_rebase(self)
    out = _strided("as_strided_", self, size, stride, storage_offset, method, AS_STRIDED_INPLACE)
    self._data = out._data
    bump_version(self)
    if out._grad_fn is not None:
        _move_history(self, out._grad_fn)
    return self


METHODS = {
    "as_strided": lambda self, size, stride, storage_offset=None: _strided(
        "as_strided", self, size, stride, storage_offset, True, AS_STRIDED
    ),
    "as_strided_": lambda self, size, stride, storage_offset=None: _in_place(self, size, stride, storage_offset, True),
}
