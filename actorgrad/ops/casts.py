"""Dtype and device conversions as Tensor methods (to, double, float, half, type, cpu, cuda, ...), all through
the differentiable `to_dtype` and `to_device` (both ToCopyBackward0). As in PyTorch, a conversion that changes
nothing returns the tensor itself, and one to a non-floating dtype gives a tensor outside the graph."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.devices import Device
from actorgrad.devices import device as as_device
from actorgrad.devices.device import DEVICE_TYPES
from actorgrad.memory_formats import checked_format, preserve_format, preserved
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import Rule, record
from actorgrad.ops.shape import contiguous, to_dtype
from actorgrad.tensor import Tensor, bool_, float16, float32, float64, int32, int64

__all__: list[str] = []

# PyTorch's legacy type names, for `.type()`.
TYPE_NAMES = {dtype: f"{name}Tensor" for dtype, name in SCALAR_NAMES.items()}
TYPE_BY_NAME = {name: dtype for dtype, name in TYPE_NAMES.items()}


DEVICE_NAMES = (*DEVICE_TYPES, "mps")  # mps parses as a device here, so that device() names what it lacks


def is_device(value: Any) -> bool:
    """Whether a positional argument of `to()` names a device (rather than a dtype): a Device, a device name or,
    as in PyTorch, a bare CUDA device index."""
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        return True
    return isinstance(value, Device) or (isinstance(value, str) and value.split(":")[0] in DEVICE_NAMES)


def device_from_index(device: Any) -> Any:
    """A bare index names a CUDA device (`x.to(rank)`), as in PyTorch; any other device as it is."""
    if not isinstance(device, int | np.integer) or isinstance(device, bool):
        return device
    if device < 0:
        raise RuntimeError("Device index must not be negative")
    return f"cuda:{device}"


TO_DEVICE = Rule(
    "ToCopyBackward0", (("self_device",), lambda ops, g, self_device: ops.to_device(g, self_device))
)


def to_device(input: Tensor, device: Device) -> Tensor:
    """A differentiable copy to another device: its backward copies the gradient back to the input's device."""
    return record(
        TO_DEVICE, device.asarray(input._data), (input,), on_device=device, self_device=input._device
    )


def _convert(input: Tensor, dtype: Any, copy: bool, device: Any = None) -> Tensor:
    dtype = input._data.dtype if dtype is None else np.dtype(dtype)
    target = input._device if device is None else as_device(device)
    moves = target is not input._device
    if dtype == input._data.dtype and not copy and not moves:
        return input
    if dtype.kind not in "fc" or (dtype == input._data.dtype and not input.requires_grad):
        x = input._data  # integers and bools carry no gradient
        data = x.astype(dtype) if x.flags.c_contiguous else preserved(input._device.xp, x, x, dtype)
        return Tensor(target.asarray(data) if moves else data, device=target)
    out = input if dtype == input._data.dtype and moves else to_dtype(input, dtype)
    return to_device(out, target) if moves else out


def to(self: Tensor, *args: Any, dtype: Any = None, device: Any = None, non_blocking: bool = False,
       copy: bool = False, memory_format: Any = None) -> Tensor:
    """`to(dtype)`, `to(device, dtype=None)`, `to(other)` (its dtype and device) or keywords, as PyTorch's."""
    if non_blocking is not False or copy is not False:
        check_flags("to", non_blocking=non_blocking, copy=copy)
    if len(args) > 2:
        raise TypeError(f"to() takes at most 2 positional arguments, got {len(args)}")
    if args and isinstance(args[0], Tensor):
        other, *rest = args
        if rest:
            raise TypeError("to(other): no further positional arguments")
        dtype, device = other.dtype, other.device
    elif args and is_device(args[0]):
        device = args[0]
        if len(args) == 2:
            dtype = args[1]
    elif args:
        if len(args) == 2:
            raise TypeError(f"to(): expected a device before the dtype, got {args[0]!r}")
        dtype = args[0]
    out = _convert(self, dtype, copy, device_from_index(device))
    if memory_format is None or checked_format("to", memory_format) is preserve_format:
        return out
    return contiguous(out, memory_format)  # a copy in that layout unless it has it


def legacy_type(self: Tensor, dtype: Any = None, non_blocking: bool = False) -> Any:
    """Without a dtype, PyTorch's legacy type name ('actorgrad.FloatTensor', 'actorgrad.cuda.FloatTensor');
    with one, `to(dtype)`, where a name or a legacy type (`actorgrad.FloatTensor`, a cpu type) also picks the
    device, as in PyTorch."""
    if non_blocking is not False:
        check_flags("type", non_blocking=non_blocking)
    on_cuda = self._device.type == "cuda"
    if isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), np.dtype):  # FloatTensor ...
        dtype = f"actorgrad.{dtype.__name__}"
    if dtype is None:
        return f"actorgrad.{'cuda.' if on_cuda else ''}{TYPE_NAMES.get(self._data.dtype, str(self._data.dtype))}"
    device = None
    if isinstance(dtype, str):  # only a legacy type name, as in PyTorch
        name = dtype.removeprefix("actorgrad.")
        if not dtype.startswith("actorgrad.") or name.removeprefix("cuda.") not in TYPE_BY_NAME:
            raise ValueError(f"invalid type: '{dtype}'")
        if name.startswith("cuda.") != on_cuda:
            device = "cpu" if on_cuda else "cuda"
        dtype = TYPE_BY_NAME[name.removeprefix("cuda.")]
    return _convert(self, dtype, False, device)


def _to_fixed(dtype: np.dtype) -> Any:
    return lambda self: _convert(self, dtype, False)


def cpu(self: Tensor) -> Tensor:
    return _convert(self, None, False, "cpu")


def cuda(self: Tensor, device: Any = None, non_blocking: bool = False) -> Tensor:
    """A copy on `cuda:device` (an index, a name or a Device; default cuda:0)."""
    if device is None:
        device = 0
    return _convert(self, None, False, f"cuda:{device}" if isinstance(device, int) else device)


METHODS: dict[str, Any] = {
    "to": to, "type": legacy_type, "cpu": cpu, "cuda": cuda,
    "double": _to_fixed(float64), "float": _to_fixed(float32), "half": _to_fixed(float16),
    "long": _to_fixed(int64), "int": _to_fixed(int32), "short": _to_fixed(np.dtype(np.int16)),
    "char": _to_fixed(np.dtype(np.int8)), "byte": _to_fixed(np.dtype(np.uint8)), "bool": _to_fixed(bool_),
}
