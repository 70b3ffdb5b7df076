"""A tensor's storage (`untyped_storage()`, the deprecated `storage()`) and `set_`, which points a tensor at other
memory: none, another tensor's, or a storage's at an offset with a size and strides."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.grad_mode import _grad_enabled
from actorgrad.ops.arithmetic import _no_derivative
from actorgrad.ops.inplace_messages import LEAF
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import record
from actorgrad.storage import TypedStorage, UntypedStorage
from actorgrad.tensor import Tensor, memory_owner
from actorgrad.version_counter import bump_version

__all__: list[str] = []

# The C++ type names PyTorch's set_ names dtypes by.
CPP_TYPES = {np.dtype(t): name for t, name in (
    (np.bool_, "bool"), (np.uint8, "unsigned char"), (np.uint16, "unsigned short"), (np.uint32, "unsigned int"),
    (np.uint64, "unsigned long"), (np.int8, "signed char"), (np.int16, "short int"),
    (np.int32, "int"), (np.int64, "long int"), (np.float16, "c10::Half"), (np.float32, "float"),
    (np.float64, "double"), (np.complex64, "c10::complex<float>"), (np.complex128, "c10::complex<double>"),
)}
SET = _no_derivative("set_")


def untyped_storage(self: Tensor) -> UntypedStorage:
    return UntypedStorage(memory_owner(self), self._device)


def storage(self: Tensor) -> TypedStorage:
    return TypedStorage(untyped_storage(self), self._data.dtype)


def set_(self: Tensor, source: Any = None, storage_offset: int = 0, size: Any = None, stride: Any = None) -> Tensor:
    """Point the tensor at other memory, as PyTorch's: `set_()` at none (an empty tensor), `set_(tensor)` at that
    tensor's (its shape and strides), `set_(storage)` at all of a storage's elements, and with `storage_offset`,
    `size` and `stride` at those (contiguous strides by default). PyTorch grows a storage too small for them; here
    other tensors may view that memory, so it is refused."""
    if _grad_enabled.get() and self._grad_fn is None and self._requires_grad:
        raise RuntimeError(LEAF)
    dtype = self._data.dtype
    if source is None:
        data = self._device.xp.empty((0,), dtype)
    elif isinstance(source, Tensor):
        _check_source(self, source._data.dtype, source._device)
        data = source._data if size is None else _view(self, untyped_storage(source), storage_offset, size, stride)
    elif isinstance(source, UntypedStorage | TypedStorage):
        if isinstance(source, TypedStorage) and source.dtype != dtype:
            raise RuntimeError(
                f"Expected a Storage of type {CPP_TYPES[dtype]} or an UntypedStorage, but got type "
                f"{SCALAR_NAMES[source.dtype]} for argument 1 'storage'"
            )
        _check_source(self, dtype, source.device)
        untyped = source.untyped()
        if size is None:
            size = (untyped.nbytes() // dtype.itemsize - storage_offset,)
        data = _view(self, untyped, storage_offset, size, stride)
    else:
        raise TypeError(
            f"set_() received an invalid combination of arguments - got ({type(source).__name__}), but expected "
            f"one of: (), (Storage source), (Storage source, int storage_offset, tuple of ints size, tuple of ints "
            f"stride = None), (Tensor source), (Tensor source, int storage_offset, tuple of ints size, tuple of ints "
            f"stride = None)"
        )
    if _grad_enabled.get() and self._grad_fn is not None:  # PyTorch records set_, which has no derivative
        self._grad_fn, self._output_nr = record(SET, data, (self,))._grad_fn, 0
    if data.shape != self._data.shape:  # a leaf's next graphs need an accumulator expecting its new shape
        self._accumulator = None
    self._data = data
    self._base = None  # it views the new memory, not its old base's (the base's view walks skip it)
    bump_version(self)
    return self


def _check_source(self: Tensor, dtype: np.dtype, device: Any) -> None:
    if dtype != self._data.dtype:
        raise RuntimeError(
            f"Could not set tensor of type {CPP_TYPES[dtype]} to a tensor of type {CPP_TYPES[self._data.dtype]}"
        )
    if device is not self._device:
        raise RuntimeError(
            f'Attempted to set the storage of a tensor on device "{self._device}" to a storage on different device '
            f'"{device}".  This is no longer allowed; the devices must match.'
        )


def _view(self: Tensor, untyped: UntypedStorage, offset: int, size: Any, stride: Any) -> Any:
    """The elements of `untyped`'s memory from `offset` on, of shape `size` and element strides `stride`."""
    shape = tuple(int(s) for s in size)
    if stride is None:
        stride = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape)))
    stride = tuple(int(s) for s in stride)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    dtype = self._data.dtype
    needed = 0 if 0 in shape else offset + 1 + sum((n - 1) * s for n, s in zip(shape, stride))
    if needed * dtype.itemsize > untyped.nbytes():
        raise RuntimeError(
            f"setStorage: sizes {list(shape)}, strides {list(stride)}, storage offset {offset}, and itemsize "
            f"{dtype.itemsize} requiring a storage size of {needed * dtype.itemsize} are out of bounds for storage of "
            f"size {untyped.nbytes()} (PyTorch would grow the storage; here other tensors may view it)"
        )
    elements = untyped.elements(dtype)
    strides = tuple(s * dtype.itemsize for s in stride)
    if isinstance(elements, np.ndarray):  # a view whose base chain reaches the memory's owner (its storage)
        return np.ndarray(shape, dtype, buffer=elements, offset=offset * dtype.itemsize, strides=strides)
    return self._device.xp.lib.stride_tricks.as_strided(elements[offset:], shape, strides)


METHODS: dict[str, Any] = {"untyped_storage": untyped_storage, "storage": storage, "set_": set_}
