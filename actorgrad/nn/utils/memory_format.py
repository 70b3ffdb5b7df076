"""torch.nn.utils.memory_format's conversions of convolution weights to another memory format (channels-last,
for NHWC kernels). actorgrad's tensors have one memory format, so there is nothing to convert: both return the
module unchanged, and code written for PyTorch runs as it is."""

from __future__ import annotations

from typing import Any, TypeVar

from actorgrad.nn.module import Module

M = TypeVar("M", bound=Module)

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def convert_conv2d_weight_memory_format(module: M, memory_format: Any) -> M:
    """`module` as it is (see the module's docstring)."""
    return module


def convert_conv3d_weight_memory_format(module: M, memory_format: Any) -> M:
    """`module` as it is (see the module's docstring)."""
    return module
