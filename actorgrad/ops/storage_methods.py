"""PyTorch's Tensor methods about storage and legacy construction: resize_ / resize_as_, the elementwise Python
callbacks apply_ / map_ / map2_ (cpu only, never recorded, as PyTorch's), the legacy constructor `Tensor.new`,
data_ptr, the trivial cpu answers about shared and pinned memory (is_shared, share_memory_, is_pinned, pin_memory,
layout, name), the DLPack protocol methods, pickling (and `copy.copy`) as PyTorch's, and the top-level fill,
unsafe_chunk, unsafe_split, unsafe_split_with_sizes and is_inference."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from actorgrad.devices import cpu
from actorgrad.devices import device as as_device
from actorgrad.ops.joining import chunk, split
from actorgrad.ops.memory_overlap import is_dense
from actorgrad.ops.operands import SCALAR_NAMES, type_name
from actorgrad.tensor import Tensor, array_address, memory_owner
from actorgrad.tensor_construction import copied_leaf
from actorgrad.version_counter import bump_version

__all__ = ["fill", "is_inference", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes"]


class Layout:
    """A tensor's memory layout; actorgrad has one, `strided`, as PyTorch's dense tensors."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"actorgrad.{self.name}"


strided = Layout("strided")


def fill(input: Tensor, value: Any) -> Tensor:
    """A copy of `input` with every element `value` (a number or a 0-d tensor, which gets the gradient's sum)."""
    out = input.clone()
    out.fill_(value)
    return out


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """chunk (PyTorch's unsafe form skips its view checks, which actorgrad's views do not need)."""
    return chunk(input, chunks, dim)


def unsafe_split(input: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """split (see unsafe_chunk)."""
    return split(input, split_size_or_sections, dim)


def unsafe_split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """split_with_sizes (see unsafe_chunk)."""
    return input.split_with_sizes(split_sizes, dim)


def is_inference(input: Tensor) -> bool:
    return input.is_inference()


def _shape_of(sizes: tuple) -> tuple[int, ...]:
    return tuple(int(s) for s in (sizes[0] if len(sizes) == 1 and isinstance(sizes[0], Sequence) else sizes))


def _leading_memory(xp: Any, data: Any, shape: tuple[int, ...], size: int) -> Any:
    """A contiguous view, of `shape`, of the first `size` elements of data's memory from its first element on
    (PyTorch's resize_ keeps the storage and resets the strides); None where they reach past data's own elements."""
    if any(s < 0 for s in data.strides) or data.size == 0:
        return None
    extent = 1 + sum((n - 1) * s for n, s in zip(data.shape, data.strides)) // data.itemsize
    if size > extent:
        return None
    strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) * data.itemsize for i in range(len(shape)))
    return xp.lib.stride_tricks.as_strided(data, shape, strides)


def resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """Give the tensor the shape `sizes` and contiguous strides over its memory: it stays a view of that memory
    (the leading elements in memory order) where the new size fits, and gets new memory, its old elements first
    and the rest uninitialized, where it grows. Refused for a tensor that requires grad, as in PyTorch."""
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = _shape_of(sizes)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    data = self._data
    xp = self._device.xp
    size = int(np.prod(shape, dtype=np.int64))
    resized = _leading_memory(xp, data, shape, size)
    if resized is None:
        resized = xp.empty(shape, data.dtype)
        kept = min(size, data.size)
        resized.reshape(-1)[:kept] = data.reshape(-1)[:kept]
    self._data = resized
    bump_version(self)
    return self


def resize_as_(self: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    return resize_(self, the_template.shape)


def resize(self: Tensor, *sizes: Any) -> Tensor:
    """PyTorch's deprecated out-of-place resize: a reshape (differentiable) that keeps the number of elements."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resized(self, _shape_of(sizes))


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resized(self, tensor.shape)


def _resized(self: Tensor, shape: tuple[int, ...]) -> Tensor:
    numel = int(np.prod(shape, dtype=np.int64))
    if numel != self.numel():
        raise RuntimeError(
            f"requested resize to {'x'.join(map(str, shape))} ({numel} elements in total), but the given tensor has a "
            f"size of {'x'.join(map(str, self.shape))} ({self.numel()} elements). autograd's resize can only change "
            f"the shape of a given tensor, while preserving the number of elements. "
        )
    return self.reshape(shape)


def _host_callback(self: Tensor, op: str, fn: Callable, others: tuple[Tensor, ...]) -> Tensor:
    """self[i] = fn(self[i], *(other[i] for other in others)), element by element on the cpu."""
    if self._device.xp is not np:
        raise TypeError(f"{op} is only implemented on CPU tensors")
    if self.requires_grad:
        raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead.")
    arrays = [np.broadcast_to(o._data, self.shape) for o in others]
    values = np.frompyfunc(fn, 1 + len(others), 1)(self._data, *arrays)
    self._data[...] = np.asarray(values, dtype=object).astype(self._data.dtype)
    bump_version(self)
    return self


def apply_(self: Tensor, callable: Callable) -> Tensor:
    """Replace each element x by callable(x) (slow: a Python call per element; cpu only)."""
    return _host_callback(self, "apply_", callable, ())


def map_(self: Tensor, tensor: Tensor, callable: Callable) -> Tensor:
    """Replace each element x by callable(x, y), y the element of `tensor` (broadcast to self) at its place."""
    return _host_callback(self, "map_", callable, (tensor,))


def map2_(self: Tensor, x: Tensor, y: Tensor, callable: Callable) -> Tensor:
    return _host_callback(self, "map2_", callable, (x, y))


def new(self: Tensor, *args: Any, device: Any = None) -> Tensor:
    """PyTorch's legacy constructor: new() is empty, new(2, 3) or new(size) uninitialized of that shape,
    new(sequence) a copy of the data, new(tensor) that tensor (which must have self's dtype); all with self's
    dtype and device."""
    where = self.device if device is None else device
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype != self.dtype:
            raise TypeError(f"expected {SCALAR_NAMES[self.dtype]} (got {SCALAR_NAMES[other.dtype]})")
        return other.detach()
    if not args:
        return self.new_empty((0,), device=where)
    if all(isinstance(a, int | np.integer) and not isinstance(a, bool) for a in args):
        return self.new_empty(tuple(int(a) for a in args), device=where)
    if len(args) == 1 and type(args[0]).__name__ == "Size":
        return self.new_empty(tuple(args[0]), device=where)
    if len(args) == 1:
        data = args[0]
        if data is None or isinstance(data, bool | float | complex | np.bool_ | np.inexact):
            raise TypeError(f"new(): data must be a sequence (got {type_name(data)})")
        return copied_leaf(data, self.dtype, where)
    raise TypeError(f"new() received an invalid combination of arguments: {args!r}")


def data_ptr(self: Tensor) -> int:
    """The address of the tensor's first element."""
    return array_address(self._data)


def _reduce_ex(self: Tensor, protocol: int) -> tuple:
    """Pickling and `copy.copy`, as PyTorch's: a leaf with the same values and requires_grad, without history or
    `.grad`. The memory goes whole, once per pickle, so tensors pickled together that shared memory (a base and its
    views) share it again, each at its offset and strides, as after PyTorch's torch.save (its plain pickle gives
    each its own copy); `copy.copy` shares this tensor's memory, as PyTorch's."""
    memory, place = memory_place(self)
    state = {slot: getattr(self, slot) for cls in type(self).__mro__ if cls not in (Tensor, object)
             for slot in cls.__dict__.get("__slots__", ()) if hasattr(self, slot)}  # a subclass's own fields
    state.update(getattr(self, "__dict__", {}))
    return rebuild_tensor, (type(self), memory, place, self.requires_grad, str(self._device), state)


def memory_place(t: Tensor) -> tuple[Any, tuple | None]:
    """The array whose memory `t` views, whole (as one row where not row-major), and where `t` lies in it (byte
    offset, shape, strides), so that tensors pickled or saved together that shared memory share it again; `t`'s
    own array and None for one that cannot be placed so (a device array, a view of the memory as another dtype,
    an empty tensor, memory with overlaps or gaps)."""
    x, root = t._data, memory_owner(t)
    if isinstance(x, np.ndarray) and root.dtype == x.dtype and x.size:
        memory = _flat_memory(root)
        if memory is not None:
            return memory, (t.storage_offset() * x.itemsize, x.shape, x.strides)
    return x, None


def _flat_memory(root: np.ndarray) -> np.ndarray | None:
    """`root`'s memory as a 1-d array from its first element, when its elements fill it once each in some order
    of its dims (row-major, or a permuted, channels_last or Fortran-ordered copy: laid out so it keeps its strides
    through a save), else None."""
    if root.flags.c_contiguous:
        return root
    if not is_dense(root):
        return None
    return np.lib.stride_tricks.as_strided(root, (root.size,), (root.itemsize,))


def placed(memory: Any, place: tuple | None) -> Any:
    """The array at `place` (byte offset, shape, strides) in `memory`, or `memory` itself for no place."""
    if place is None:
        return memory
    offset, shape, strides = place
    return np.ndarray(shape, memory.dtype, buffer=memory, offset=offset, strides=strides)


def rebuild_tensor(cls: type, memory: Any, place: tuple | None, requires_grad: bool, device: str,
                   state: dict) -> Tensor:
    """A pickled tensor back: the array at its byte offset and strides in `memory` (or `memory` itself)."""
    data = placed(memory, place)
    target = as_device(device)
    out = cls.__new__(cls)
    Tensor.__init__(out, data if target is cpu else target.asarray(data), device=target)
    out._requires_grad = requires_grad
    for name, value in state.items():
        setattr(out, name, value)
    return out


def _same(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    return self


def _to_dlpack(self: Tensor, **kwargs: Any) -> Any:
    return self._data.__dlpack__(**kwargs)


METHODS: dict[str, Any] = {
    "resize_": resize_, "resize_as_": resize_as_, "resize": resize, "resize_as": resize_as,
    "apply_": apply_, "map_": map_, "map2_": map2_, "new": new,
    "data_ptr": data_ptr, "unsafe_chunk": unsafe_chunk, "unsafe_split": unsafe_split,
    "unsafe_split_with_sizes": unsafe_split_with_sizes, "__reduce_ex__": _reduce_ex,
    "is_shared": lambda self: False, "is_pinned": lambda self, device=None: False,
    # On the cpu every tensor is already usable by other processes' copies and by the host: nothing to move.
    "share_memory_": _same, "pin_memory": _same,
    "layout": property(lambda self: strided), "name": property(lambda self: None),
    "__dlpack__": _to_dlpack, "__dlpack_device__": lambda self: self._data.__dlpack_device__(),
}
