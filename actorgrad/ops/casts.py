"""Dtype conversions as Tensor methods (to, double, float, half, type, ...), all through the differentiable
`to_dtype` (ToCopyBackward0). As in PyTorch, a conversion that changes nothing returns the tensor itself, and one
to a non-floating dtype gives a tensor outside the graph."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.devices import Device
from actorgrad.ops.shape import to_dtype
from actorgrad.tensor import Tensor, bool_, float16, float32, float64, int32, int64

__all__: list[str] = []

# PyTorch's legacy type names, for `.type()`.
TYPE_NAMES = {
    float64: "DoubleTensor", float32: "FloatTensor", float16: "HalfTensor", int64: "LongTensor", int32: "IntTensor",
    np.dtype(np.int16): "ShortTensor", np.dtype(np.int8): "CharTensor", np.dtype(np.uint8): "ByteTensor",
    bool_: "BoolTensor",
}


def _is_device(value: Any) -> bool:
    return isinstance(value, Device) or (isinstance(value, str) and value.split(":")[0] in ("cpu", "cuda", "mps"))


def _check_device(device: Any) -> None:
    if device is None:
        return
    name = str(device)
    if name not in ("cpu", "cpu:0"):
        raise RuntimeError(f"to(): device {name!r} is not available; actorgrad computes on the cpu only for now")


def _convert(input: Tensor, dtype: Any, copy: bool) -> Tensor:
    dtype = input._data.dtype if dtype is None else np.dtype(dtype)
    if dtype == input._data.dtype and not copy:
        return input
    if dtype.kind != "f":
        return Tensor(input._data.astype(dtype))  # integers and bools carry no gradient
    return to_dtype(input, dtype)


def to(self: Tensor, *args: Any, dtype: Any = None, device: Any = None, non_blocking: bool = False,
       copy: bool = False, memory_format: Any = None) -> Tensor:
    """`to(dtype)`, `to(device, dtype=None)`, `to(other)` (its dtype and device) or keywords, as PyTorch's."""
    if len(args) > 2:
        raise TypeError(f"to() takes at most 2 positional arguments, got {len(args)}")
    if args and isinstance(args[0], Tensor):
        other, *rest = args
        if rest:
            raise TypeError("to(other): no further positional arguments")
        dtype, device = other.dtype, other.device
    elif args and _is_device(args[0]):
        device = args[0]
        if len(args) == 2:
            dtype = args[1]
    elif args:
        if len(args) == 2:
            raise TypeError(f"to(): expected a device before the dtype, got {args[0]!r}")
        dtype = args[0]
    _check_device(device)
    return _convert(self, dtype, copy)


def legacy_type(self: Tensor, dtype: Any = None, non_blocking: bool = False) -> Any:
    """Without a dtype, the legacy type name ('actorgrad.FloatTensor'); with one, `to(dtype)`."""
    if dtype is None:
        return f"actorgrad.{TYPE_NAMES.get(self._data.dtype, str(self._data.dtype))}"
    if isinstance(dtype, str) and dtype.startswith("actorgrad."):
        names = {name: d for d, name in TYPE_NAMES.items()}
        dtype = names[dtype.removeprefix("actorgrad.")]
    return _convert(self, dtype, False)


def _to_fixed(dtype: np.dtype) -> Any:
    return lambda self: _convert(self, dtype, False)


METHODS: dict[str, Any] = {
    "to": to, "type": legacy_type,
    "double": _to_fixed(float64), "float": _to_fixed(float32), "half": _to_fixed(float16),
    "long": _to_fixed(int64), "int": _to_fixed(int32), "bool": _to_fixed(bool_),
}
