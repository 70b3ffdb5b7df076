"""Storages, as PyTorch's `UntypedStorage` and its deprecated `TypedStorage`: the memory a tensor shares with its
views, as bytes or as elements of a dtype. actorgrad's memory is the numpy (or CuPy) array that owns it, so
tensors that share memory give storages with one `data_ptr`, and `Tensor.set_` takes a storage's memory."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.devices import cpu
from actorgrad.tensor import array_address
from actorgrad.user_warnings import warn_once

TYPED_STORAGE_DEPRECATED = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage "
    "class. This should only matter to you if you are using storages directly.  To access UntypedStorage directly, "
    "use tensor.untyped_storage() instead of tensor.storage()"
)


class UntypedStorage:
    """The bytes of the array that owns a tensor's memory (`memory_owner`)."""

    __slots__ = ("_array", "_device")

    def __init__(self, array: Any, device: Any) -> None:
        self._array = array
        self._device = device

    @property
    def device(self) -> Any:
        return self._device

    def data_ptr(self) -> int:
        return array_address(self._array)

    def nbytes(self) -> int:
        return int(self._array.nbytes)

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    def is_shared(self) -> bool:
        return False

    def is_pinned(self, device: Any = None) -> bool:
        return False

    def elements(self, dtype: np.dtype) -> Any:
        """The memory as a 1-d array of `dtype` on it (no copy), in address order."""
        array = self._array
        if not array.flags.c_contiguous:  # an owner in another order (a Fortran-ordered array): its memory is dense
            array = self._device.xp.lib.stride_tricks.as_strided(array, (array.size,), (array.itemsize,))
        return array.reshape(-1).view(np.uint8).view(dtype)

    def tolist(self) -> list[int]:
        return _host(self.elements(np.dtype(np.uint8))).tolist()

    def __getitem__(self, index: int) -> int:
        return int(self.elements(np.dtype(np.uint8))[index])

    def cpu(self) -> UntypedStorage:
        if isinstance(self._array, np.ndarray):
            return self
        return UntypedStorage(self._array.get(), cpu)

    def untyped(self) -> UntypedStorage:
        return self

    def __repr__(self) -> str:
        return _listing(self.tolist(), f"actorgrad.storage.UntypedStorage(device={self._device}) of size {len(self)}")


class TypedStorage:
    """A storage seen as elements of a dtype (PyTorch's `Tensor.storage()`, deprecated there with a warning)."""

    __slots__ = ("_untyped", "dtype")

    def __init__(self, untyped: UntypedStorage, dtype: np.dtype) -> None:
        warn_once(TYPED_STORAGE_DEPRECATED)
        self._untyped = untyped
        self.dtype = dtype

    @property
    def device(self) -> Any:
        return self._untyped.device

    def untyped(self) -> UntypedStorage:
        return self._untyped

    def data_ptr(self) -> int:
        return self._untyped.data_ptr()

    def nbytes(self) -> int:
        return self._untyped.nbytes()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def size(self) -> int:
        return self.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def is_shared(self) -> bool:
        return False

    def is_pinned(self, device: Any = None) -> bool:
        return False

    def tolist(self) -> list:
        return _host(self._untyped.elements(self.dtype)).tolist()

    def __getitem__(self, index: int) -> Any:
        return _host(self._untyped.elements(self.dtype)[index]).item()

    def __repr__(self) -> str:
        head = f"actorgrad.storage.TypedStorage(dtype=actorgrad.{self.dtype}, device={self.device}) of size {len(self)}"
        return _listing(self.tolist(), head)


def _host(array: Any) -> np.ndarray:
    return array if isinstance(array, np.ndarray | np.generic) else array.get()


def _listing(values: list, head: str) -> str:
    """PyTorch's repr of a storage: one value per line, then what it is."""
    return "".join(f" {v}\n" for v in values) + f"[{head}]"


def is_storage(obj: Any) -> bool:
    """Whether `obj` is a storage, untyped or typed (`torch.is_storage`)."""
    return isinstance(obj, UntypedStorage | TypedStorage)
