"""What PyTorch lets you ask a tensor about its dtype and size, and `type_as`, the cast to another's type."""

from __future__ import annotations

from typing import Any

from actorgrad.tensor import Tensor

__all__ = ["is_complex", "is_floating_point"]


def is_floating_point(input: Tensor) -> bool:
    return input._data.dtype.kind == "f"


def is_complex(input: Tensor) -> bool:
    return input._data.dtype.kind == "c"


def element_size(self: Tensor) -> int:
    """Bytes per element."""
    return self._data.itemsize


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """`self.type(other.type())`, as PyTorch defines it: a recorded cast to `other`'s dtype (and device type)."""
    return self.type(other.type())


METHODS: dict[str, Any] = {
    "is_floating_point": is_floating_point, "is_complex": is_complex, "element_size": element_size,
    "nelement": Tensor.numel, "type_as": type_as,
}
