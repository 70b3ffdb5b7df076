"""Top-level utilities PyTorch users reach for that are not ops: typename, can_cast, empty_strided, frombuffer,
from_dlpack / to_dlpack (numpy's and CuPy's DLPack support underneath) and the deprecated inclusive `range`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.creation_args import check_device, check_layout, dtype_or, leaf_on
from actorgrad.default_dtype import default_float
from actorgrad.devices import cpu
from actorgrad.devices import device as as_device
from actorgrad.ops.operands import int_tuple, not_implemented
from actorgrad.tensor import Tensor, bool_
from actorgrad.tensor_construction import new_leaf
from actorgrad.user_warnings import warn

# `range` is left out, so that `from actorgrad import *` keeps the builtin (as bool, float ...).
__all__ = ["can_cast", "empty_permuted", "empty_strided", "from_dlpack", "frombuffer", "to_dlpack", "typename"]

_DLPACK_CUDA = 2


def typename(obj: Any) -> str:
    """A tensor's type name ('actorgrad.FloatTensor'), else the object's (or its class's) dotted name."""
    if isinstance(obj, Tensor):
        return obj.type()
    named = obj if hasattr(obj, "__qualname__") or hasattr(obj, "__name__") else type(obj)
    module = getattr(named, "__module__", "") or ""
    name = getattr(named, "__qualname__", None) or named.__name__
    return name if module in ("", "builtins") else f"{module}.{name}"


def _kind_rank(dtype: np.dtype) -> int:
    return {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}[dtype.kind]


def can_cast(from_: Any, to: Any) -> bool:
    """Whether PyTorch's type promotion allows a result of `from_` to be written to `to`: never to a lower
    category (complex > floating > integral > bool), any size within one."""
    return _kind_rank(np.dtype(to)) >= _kind_rank(np.dtype(from_))


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:
    """An uninitialized tensor of `size` whose elements sit `stride` elements apart (overlaps allowed)."""
    check_device(device)
    size, stride = tuple(size), tuple(stride)
    negative = [n for n in size if n < 0]
    if negative:
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative[0]}: {list(size)}")
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    if 0 not in size and any(s < 0 and n > 1 for n, s in zip(size, stride)):  # would reach before the storage
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    resolved = dtype_or(dtype, default_float())
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    where = as_device(device) if device is not None else None
    xp = np if where is None or where is cpu else where.xp
    storage = xp.empty(extent, resolved)
    strides = tuple(s * resolved.itemsize for s in stride)
    data = xp.lib.stride_tricks.as_strided(storage, size, strides)
    if where is not None:
        return new_leaf(data, requires_grad, where)
    return leaf_on(data, requires_grad)


def _checked_layout(size: tuple[int, ...], order: tuple[int, ...]) -> None:
    """PyTorch's checks of `physical_layout`: a permutation of size's dims, written without negative dims."""
    if len(size) != len(order):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    for i, d in enumerate(order):
        if not 0 <= d < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and {len(size) - 1}, but got {d} "
                               f"at index {i}).  NB: negative dims not currently supported; file an issue if you "
                               f"want it.")
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")


def empty_permuted(size: Any, physical_layout: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialized tensor of `size` laid out in memory as a contiguous tensor of its dims taken in
    `physical_layout`'s order (`(0, 2, 3, 1)` of NCHW: channels last), as PyTorch's."""
    size = int_tuple(size, "empty_permuted", "size", 1)
    order = int_tuple(physical_layout, "empty_permuted", "physical_layout", 2)
    check_layout("empty_permuted", layout, pin_memory)
    _checked_layout(size, order)
    physical = [size[d] for d in order]
    negative = [n for n in physical if n < 0]
    if negative:
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative[0]}: {physical}")
    stride = [0] * len(size)
    step = 1
    for d in reversed(order):  # PyTorch's contiguous strides of the physical shape, a dim of 0 counted as 1
        stride[d] = step
        step *= max(size[d], 1)
    return empty_strided(size, stride, dtype=dtype, device=device, requires_grad=requires_grad, pin_memory=pin_memory)


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-d tensor sharing the memory of an object with the buffer protocol (bytes, bytearray, memoryview)."""
    resolved = np.dtype(dtype)
    length = memoryview(buffer).nbytes
    if offset < 0 or offset > length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0 and (length - offset) % resolved.itemsize:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a multiple "
                         f"of element size ({resolved.itemsize})")
    if count == 0 or (count < 0 and length == offset):
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if count > 0 and offset + count * resolved.itemsize > length:
        raise ValueError(f"requested buffer length ({count} * {resolved.itemsize} bytes) after offset ({offset} "
                         f"bytes) must not be greater than actual buffer length ({length} bytes)")
    data = np.frombuffer(buffer, resolved, count, offset)
    if not data.flags.writeable:
        warn("The given buffer is not writable, and actorgrad does not support non-writable tensors: writing to "
             "this tensor will fail. You may want to copy the buffer to protect its data or make it writable before "
             "converting it to a tensor.")
    return new_leaf(data, requires_grad)


class _Capsule:
    """A bare DLPack capsule (as `to_dlpack` returns) given the protocol methods, for numpy's from_dlpack."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A tensor sharing the memory of any object with the DLPack protocol (a numpy or CuPy array, another
    library's tensor), or of a cpu capsule from `to_dlpack`; a CUDA one lands on its CUDA device. An actorgrad
    tensor gives a new leaf on its memory (no history, no shared version counter), as PyTorch's; one that requires
    grad is refused, as PyTorch's DLPack export refuses it."""
    if isinstance(ext_tensor, Tensor):
        if ext_tensor.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        return ext_tensor.data
    if not hasattr(ext_tensor, "__dlpack__"):
        ext_tensor = _Capsule(ext_tensor)
    kind, index = ext_tensor.__dlpack_device__()
    if kind == _DLPACK_CUDA:
        where = as_device(f"cuda:{index}")
        return new_leaf(where.xp.from_dlpack(ext_tensor), False, where)
    return new_leaf(np.from_dlpack(ext_tensor))


def to_dlpack(tensor: Tensor) -> Any:
    """A DLPack capsule of the tensor's memory (shared, not copied)."""
    return tensor._data.__dlpack__()


def range(start: Any, end: Any, step: Any = 1, *, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """start, start + step, ... up to and including end (deprecated in PyTorch for arange, which excludes end)."""
    warn("torch.range is deprecated and will be removed in a future release because its behavior is inconsistent "
         "with Python's range builtin. Instead, use torch.arange, which produces values in [start, end).")
    check_device(device)
    resolved = dtype_or(dtype, default_float())
    if resolved == bool_ or resolved.kind == "c":
        raise not_implemented("range_cpu", resolved)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = math.floor((end - start) / step) + 1
    values = start + step * np.arange(count, dtype=np.float64 if resolved.kind in "fc" else np.int64)
    return leaf_on(values.astype(resolved), requires_grad, device)


