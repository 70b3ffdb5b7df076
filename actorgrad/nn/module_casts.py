"""Module.to, type, cpu, cuda, double, float and half: a module's parameters and buffers (and their gradients) cast
and moved in place, so the Parameter objects an optimizer holds stay the same. Module inherits them from
CastMethods."""

from __future__ import annotations

import warnings
from typing import Any, Self

import numpy as np

from actorgrad.devices.device import Device
from actorgrad.devices.device import device as as_device
from actorgrad.ops.casts import TYPE_BY_NAME, device_from_index, is_device
from actorgrad.tensor import Tensor

# PyTorch's warning on `to(complex dtype)`: its layers are written for real tensors.
COMPLEX_MODULES = (
    "Complex modules are a new feature under active development whose design may change, and some modules might "
    "not work as expected when using complex tensors as parameters or buffers."
)


class CastMethods:
    """The casts and moves of a module's parameters and buffers, as PyTorch's."""

    def to(self, *args: Any, dtype: Any = None, device: Any = None, non_blocking: bool = False,
           memory_format: Any = None, **copy: Any) -> Self:
        """`to(device)`, `to(dtype)`, `to(device, dtype)`, `to(tensor)` (its device and dtype) or keywords, as
        PyTorch's: casts floating and complex parameters and buffers (and their gradients) and moves them. The
        Parameter objects stay the same, so cast or move a model before building its optimizer. Tensor.to's `copy`
        is refused (keyword or the second flag), as PyTorch refuses it."""
        if copy:
            if set(copy) != {"copy"}:
                raise TypeError(f"to() got an unexpected keyword argument '{next(k for k in copy if k != 'copy')}'")
            raise RuntimeError(".to() does not accept copy argument")
        rest = list(args)
        keywords = (device, dtype)
        if rest and isinstance(rest[0], Tensor):
            other = rest.pop(0)
            device, dtype = other._device, other.dtype
            refused = keywords  # PyTorch's to(tensor) takes no device or dtype keyword
        elif rest and is_device(rest[0]):
            device = rest.pop(0)
            refused = keywords[:1]
            if rest and not isinstance(rest[0], bool):
                dtype = rest.pop(0)
                refused = keywords
        elif rest and not isinstance(rest[0], bool):
            dtype = rest.pop(0)
            refused = keywords  # nor to(dtype)
        else:
            refused = ()
        bad_flags = len(rest) > 2 or not all(isinstance(flag, bool) for flag in rest)  # non_blocking, copy
        if bad_flags or any(keyword is not None for keyword in refused):
            named = "".join(f", {name}={value!r}" for name, value in zip(("device", "dtype"), keywords)
                            if value is not None)
            raise TypeError(f"to() received an invalid combination of arguments: {args!r}{named}")
        if len(rest) == 2:
            raise RuntimeError(".to() does not accept copy argument")
        if dtype is not None:
            dtype = np.dtype(dtype)
            if dtype.kind not in "fc":
                raise TypeError(
                    f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                    f"dtype=actorgrad.{dtype}"
                )
            if dtype.kind == "c":
                warnings.warn(COMPLEX_MODULES, stacklevel=2)
        if device is not None:
            self._move(as_device(device_from_index(device)))  # a bare index names a CUDA device
        if dtype is not None:
            self._cast(dtype, "fc")
        return self

    def _cast(self, dtype: np.dtype, kinds: str | None) -> Self:
        """Cast parameters and buffers (and gradients) in place: those of the numpy dtype `kinds` ("f" floating,
        "c" complex), or all of them where `kinds` is None."""
        tensors = [*self.parameters(), *self.buffers()]
        if dtype.kind not in "fc" and any(t.requires_grad for t in tensors):
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        for tensor in tensors:
            if kinds is None or tensor.dtype.kind in kinds:
                # A tensor already of `dtype` keeps its array, as PyTorch's no-op cast; a gradient stays the same
                # object, cast in place, as PyTorch's `param.grad.data = ...`.
                if tensor.dtype != dtype:
                    tensor._data = tensor._data.astype(dtype)
                if tensor.grad is not None and tensor.grad.dtype != dtype:
                    tensor.grad._data = tensor.grad._data.astype(dtype)
        return self

    def type(self, dst_type: Any) -> Self:
        """Cast every parameter and buffer, integer ones included, to `dst_type`: a dtype, or a legacy name, which
        also picks the device as Tensor.type's does ('actorgrad.DoubleTensor' the cpu, 'actorgrad.cuda.FloatTensor'
        a GPU)."""
        if isinstance(dst_type, str):
            name = dst_type.removeprefix("actorgrad.")
            on_cuda = name.startswith("cuda.")
            dtype = TYPE_BY_NAME.get(name.removeprefix("cuda.")) if name != dst_type else None
            if dtype is None:
                raise ValueError(f"invalid type: '{dst_type}'")
            for tensor in [*self.parameters(), *self.buffers()]:
                if (tensor._device.type == "cuda") != on_cuda:
                    self._move_tensor(tensor, as_device("cuda" if on_cuda else "cpu"))
            dst_type = dtype
        return self._cast(np.dtype(dst_type), None)

    def _move(self, where: Device) -> Self:
        for tensor in [*self.parameters(), *self.buffers()]:
            if tensor._device is not where:
                self._move_tensor(tensor, where)
        return self

    @staticmethod
    def _move_tensor(tensor: Tensor, where: Device) -> None:
        """Move a parameter or buffer (and its gradient) in place: it stays the same object."""
        for t in (tensor, tensor.grad):  # the gradient moves in place too, the same object, as in PyTorch
            if t is not None:
                t._data, t._device = where.asarray(t._data), where

    def cpu(self) -> Self:
        return self._move(as_device("cpu"))

    def cuda(self, index: int = 0) -> Self:
        return self._move(as_device("cuda", index))

    # double, float and half leave complex parameters and buffers as they are, as PyTorch's do; `to` casts them.
    def double(self) -> Self:
        return self._cast(np.dtype(np.float64), "f")

    def float(self) -> Self:
        return self._cast(np.dtype(np.float32), "f")

    def half(self) -> Self:
        return self._cast(np.dtype(np.float16), "f")
