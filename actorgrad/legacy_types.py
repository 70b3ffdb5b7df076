"""PyTorch's legacy tensor types (FloatTensor, LongTensor, ...): each a constructor with `Tensor.new`'s overloads
(`FloatTensor(2, 3)` uninitialized, `LongTensor([1, 2])` from data, `FloatTensor()` empty), a class that
`isinstance` matches against a cpu tensor of its dtype, and a target of `tensor.type(...)`, as in PyTorch. The
tensors they make are plain Tensors. Also the deprecated `set_default_tensor_type`, which sets the default dtype."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from actorgrad.default_dtype import set_default_dtype
from actorgrad.ops.casts import TYPE_NAMES
from actorgrad.tensor import Tensor

__all__ = ["set_default_tensor_type"]


class LegacyTensorType(type):
    """The class of the legacy types: an instance check asks for a cpu tensor of the type's dtype."""

    dtype: np.dtype

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj._device.type == "cpu" and obj._data.dtype == cls.dtype

    def __repr__(cls) -> str:
        return f"<class 'actorgrad.{cls.__name__}'>"


def _construct(cls: LegacyTensorType, *args: Any, device: Any = None) -> Tensor:
    return Tensor(np.empty(0, cls.dtype)).new(*args, device=device)


LEGACY_TYPES = {
    name: LegacyTensorType(name, (), {"__new__": _construct, "dtype": dtype, "is_cuda": False,
                                      "__module__": "actorgrad", "__doc__": f"A {dtype} tensor (legacy)."})
    for dtype, name in TYPE_NAMES.items()
}


def set_default_tensor_type(t: Any) -> None:
    """`set_default_dtype` of a floating legacy type (or its name, 'actorgrad.DoubleTensor'), deprecated as in
    PyTorch."""
    warnings.warn("actorgrad.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "actorgrad.set_default_dtype() and actorgrad.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        name = t.removeprefix("actorgrad.")
        if name not in LEGACY_TYPES:
            raise AttributeError(f"module 'actorgrad' has no attribute '{name}'")
        t = LEGACY_TYPES[name]
    if not isinstance(t, LegacyTensorType):
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    if t.dtype.kind != "f":
        raise TypeError("only floating-point types are supported as the default type")
    set_default_dtype(t.dtype)
