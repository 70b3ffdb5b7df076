"""channel_shuffle: dim 1's channels, split into `groups` groups, interleaved (ShuffleNet's mixing between grouped
convolutions). A reshape, a transpose and a reshape back, so its gradient is the inverse shuffle."""

from __future__ import annotations

from typing import Any

from actorgrad.ops.conv import integer_value
from actorgrad.ops.operands import type_name
from actorgrad.tensor import Tensor

__all__ = ["channel_shuffle", "native_channel_shuffle"]
METHODS: dict[str, Any] = {}


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, C, *) with C split into `groups` groups of C / groups, read group by group in turn."""
    return _shuffle("channel_shuffle", input, groups)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """ATen's name for channel_shuffle (`torch.native_channel_shuffle`), with the same checks."""
    return _shuffle("native_channel_shuffle", input, groups)


def _shuffle(op: str, input: Tensor, groups: int) -> Tensor:
    value = integer_value(groups)  # numpy integers and integer tensors too, as PyTorch's int arguments
    if value is None:
        raise TypeError(f"{op}(): argument 'groups' (position 2) must be int, not {type_name(groups)}")
    groups = value
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    batch, channels, *rest = input.shape
    if channels % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {channels} channels and {groups} "
                           "groups.")
    grouped = input.reshape(batch, groups, channels // groups, *rest)
    return grouped.transpose(1, 2).reshape(input.shape)
