"""What PyTorch lets you ask a tensor about its dtype and size, and `type_as`, the cast to another's type."""

from __future__ import annotations

from typing import Any

from actorgrad.tensor import Tensor

__all__ = [
    "is_complex", "is_floating_point", "is_nonzero", "is_same_size", "is_signed", "is_tensor", "numel",
]


def is_floating_point(input: Tensor) -> bool:
    return input._data.dtype.kind == "f"


def is_complex(input: Tensor) -> bool:
    return input._data.dtype.kind == "c"


def is_signed(input: Tensor) -> bool:
    """Whether the dtype holds negative values (bool and uint8 do not)."""
    return input._data.dtype.kind in "ifc"


def is_tensor(obj: Any) -> bool:
    """Whether `obj` is a Tensor (a Parameter is one)."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    return input._data.size


def is_nonzero(input: Tensor) -> bool:
    """The one element's truth, with `bool(tensor)`'s errors for any other number of elements."""
    return bool(input)


def is_same_size(input: Tensor, other: Tensor) -> bool:
    if not isinstance(other, Tensor):
        raise TypeError(f"is_same_size(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    return input._data.shape == other._data.shape


def get_device(self: Tensor) -> int:
    """The device's index; -1 on the cpu, as PyTorch's."""
    return -1 if self._device.type == "cpu" else self._device.index


def element_size(self: Tensor) -> int:
    """Bytes per element."""
    return self._data.itemsize


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """`self.type(other.type())`, as PyTorch defines it: a recorded cast to `other`'s dtype (and device type)."""
    return self.type(other.type())


METHODS: dict[str, Any] = {
    "is_floating_point": is_floating_point, "is_complex": is_complex, "element_size": element_size,
    "nelement": Tensor.numel, "type_as": type_as, "is_signed": is_signed, "is_nonzero": is_nonzero,
    "is_same_size": is_same_size, "get_device": get_device, "ndimension": Tensor.dim,
    "itemsize": property(element_size), "nbytes": property(lambda self: self._data.size * self._data.itemsize),
    "is_cpu": property(lambda self: self._device.type == "cpu"),
}
