"""Layers with parameters: Linear, Conv2d, Embedding and LayerNorm, initialised as PyTorch initialises them.

Each forward is the matching function of `actorgrad.nn.functional`.
"""

from __future__ import annotations

import math
from typing import Any

from actorgrad.creation import empty, ones, zeros
from actorgrad.nn import functional as F
from actorgrad.nn import init
from actorgrad.nn.module import Module
from actorgrad.nn.parameter import Parameter
from actorgrad.tensor import Tensor, bump_version

_KAIMING_A = math.sqrt(5)  # PyTorch's choice for Linear and Conv weights: U(-1/sqrt(fan_in), 1/sqrt(fan_in))


def _pair(value: Any) -> tuple[int, int]:
    return tuple(value) if isinstance(value, tuple | list) else (value, value)


def _init_weight_and_bias(layer: Module) -> None:
    """PyTorch's Linear and Conv init: weight and bias both ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    init.kaiming_uniform_(layer.weight, a=_KAIMING_A)
    if layer.bias is not None:
        bound = init.fan_in_bound(layer.weight)
        init.uniform_(layer.bias, -bound, bound)


class Linear(Module):
    """y = x @ weight.T + bias, with weight of shape (out_features, in_features)."""

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, dtype: Any = None, device: Any = None
    ) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in_features, **factory))
        self.bias = Parameter(empty(out_features, **factory)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init_weight_and_bias(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Conv2d(Module):
    """2-D cross-correlation over (N, C, H, W) inputs, weight of shape (out, in / groups, kH, kW)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int],
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] | str = 0,
        dilation: int | tuple[int, int] = 1,
        groups: int = 1,
        bias: bool = True,
        dtype: Any = None,
        device: Any = None,
    ) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        if not isinstance(groups, int) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of ['valid', 'same']")
        if padding == "same" and any(s != 1 for s in _pair(stride)):
            raise ValueError("padding='same' is not supported for strided convolutions")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _pair(kernel_size)
        self.stride = _pair(stride)
        self.padding = padding if isinstance(padding, str) else _pair(padding)
        self.dilation = _pair(dilation)
        self.groups = groups
        self.weight = Parameter(empty(out_channels, in_channels // groups, *self.kernel_size, **factory))
        self.bias = Parameter(empty(out_channels, **factory)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init_weight_and_bias(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


class Embedding(Module):
    """A lookup table of `num_embeddings` vectors; the row at `padding_idx` starts at zero and gets no gradient."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        dtype: Any = None,
        device: Any = None,
    ) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.weight = Parameter(empty(num_embeddings, embedding_dim, **factory))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0
            bump_version(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        return text if self.padding_idx is None else f"{text}, padding_idx={self.padding_idx}"


class LayerNorm(Module):
    """Normalises over the trailing `normalized_shape` dimensions, then scales by weight and shifts by bias."""

    def __init__(
        self,
        normalized_shape: int | tuple[int, ...],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        dtype: Any = None,
        device: Any = None,
    ) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.weight = Parameter(ones(self.normalized_shape, **factory)) if elementwise_affine else None
        self.bias = Parameter(zeros(self.normalized_shape, **factory)) if elementwise_affine and bias else None

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
            f"bias={self.bias is not None}"
        )
