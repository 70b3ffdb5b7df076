"""Layers with parameters: Linear, Conv1d/2d/3d, ConvTranspose1d/2d/3d, Embedding and LayerNorm, initialised as PyTorch
initialises them.

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
from actorgrad.ops.conv import conv_transpose1d, conv_transpose2d, conv_transpose3d
from actorgrad.tensor import Tensor
from actorgrad.version_counter import bump_version

_KAIMING_A = math.sqrt(5)  # PyTorch's choice for Linear and Conv weights: U(-1/sqrt(fan_in), 1/sqrt(fan_in))


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
        self.register_parameter("bias", Parameter(empty(out_features, **factory)) if bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init_weight_and_bias(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class _ConvNd(Module):
    """The settings and parameters Conv1d/2d/3d and ConvTranspose1d/2d/3d share, with PyTorch's attribute names. A
    transposed conv's weight is (in, out / groups, k...), a conv's (out, in / groups, k...)."""

    dims = 2
    transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any, padding: Any,
                 dilation: Any, groups: int, bias: bool, padding_mode: str, output_padding: Any = 0,
                 dtype: Any = None, device: Any = None) -> None:
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
        if padding == "same" and any(s != 1 for s in self._tuple(stride)):
            raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError("padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got "
                             f"padding_mode='{padding_mode}'")
        if self.transposed and padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = self._tuple(kernel_size)
        self.stride = self._tuple(stride)
        self.padding = padding if isinstance(padding, str) else self._tuple(padding)
        self.dilation = self._tuple(dilation)
        self.output_padding = self._tuple(output_padding)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's widths for the other padding modes: each dim's (before, after), last dim first; 'same' puts the
        # odd one after. A list for a padding string, a tuple for numbers, as PyTorch keeps them
        if padding == "same":
            totals = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
        else:
            totals = [0] * self.dims if padding == "valid" else [2 * p for p in self.padding]
        widths = [n for t in reversed(totals) for n in (t // 2, t - t // 2)]
        self._reversed_padding_repeated_twice = widths if isinstance(padding, str) else tuple(widths)
        shape = (in_channels, out_channels // groups) if self.transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(empty(*shape, *self.kernel_size, **factory))
        self.register_parameter("bias", Parameter(empty(out_channels, **factory)) if bias else None)
        self.reset_parameters()

    def _tuple(self, value: Any) -> tuple[int, ...]:
        return tuple(value) if isinstance(value, tuple | list) else (value,) * self.dims

    def reset_parameters(self) -> None:
        _init_weight_and_bias(self)

    def _conv(self, input: Tensor) -> Tensor:
        conv = (F.conv1d, F.conv2d, F.conv3d)[self.dims - 1]
        if self.padding_mode == "zeros":
            return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
        return conv(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self.dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self.dims:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self.dims:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """1-D cross-correlation over (N, C, L) inputs, weight of shape (out, in / groups, kW)."""

    dims = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int], stride: int | tuple[int] = 1,
                 padding: int | tuple[int] | str = 0, dilation: int | tuple[int] = 1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, dtype=dtype, device=device)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv(input)


class Conv2d(_ConvNd):
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
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, dtype=dtype, device=device)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv(input)


class Conv3d(_ConvNd):
    """3-D cross-correlation over (N, C, D, H, W) inputs, weight of shape (out, in / groups, kD, kH, kW)."""

    dims = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, int, int],
                 stride: int | tuple[int, int, int] = 1, padding: int | tuple[int, int, int] | str = 0,
                 dilation: int | tuple[int, int, int] = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, dtype=dtype, device=device)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv(input)


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        """The output_padding that gives `output_size` (its spatial sizes, or all of them), as PyTorch finds it."""
        if output_size is None:
            return self.output_padding
        lead = 2 if input.ndim == self.dims + 2 else 1
        sizes = list(output_size)
        if len(sizes) == lead + self.dims:
            sizes = sizes[lead:]
        if len(sizes) != self.dims:
            raise ValueError(f"ConvTranspose{self.dims}D: for {input.ndim}D input, output_size must have {self.dims} "
                             f"or {lead + self.dims} elements (got {len(output_size)})")
        smallest = [(input.shape[lead + d] - 1) * self.stride[d] - 2 * self.padding[d]
                    + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(self.dims)]
        largest = [m + s - 1 for m, s in zip(smallest, self.stride)]
        if any(not lo <= n <= hi for n, lo, hi in zip(sizes, smallest, largest)):
            raise ValueError(f"requested an output size of {sizes}, but valid sizes range from {smallest} to "
                             f"{largest} (for an input of {list(input.shape[lead:])})")
        return tuple(n - m for n, m in zip(sizes, smallest))

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        conv = (conv_transpose1d, conv_transpose2d, conv_transpose3d)[self.dims - 1]
        return conv(input, self.weight, self.bias, self.stride, self.padding, self._output_padding(input, output_size),
                    self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """The adjoint of Conv1d in its input, over (N, C, L) inputs; weight of shape (in, out / groups, kW)."""

    dims = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int], stride: int | tuple[int] = 1,
                 padding: int | tuple[int] = 0, output_padding: int | tuple[int] = 0, groups: int = 1,
                 bias: bool = True, dilation: int | tuple[int] = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, dtype=dtype, device=device)


class ConvTranspose2d(_ConvTransposeNd):
    """The adjoint of Conv2d in its input, over (N, C, H, W) inputs; weight of shape (in, out / groups, kH, kW)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, int],
                 stride: int | tuple[int, int] = 1, padding: int | tuple[int, int] = 0,
                 output_padding: int | tuple[int, int] = 0, groups: int = 1, bias: bool = True,
                 dilation: int | tuple[int, int] = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, dtype=dtype, device=device)


class ConvTranspose3d(_ConvTransposeNd):
    """The adjoint of Conv3d in its input, over (N, C, D, H, W) inputs; weight of shape (in, out / groups, kD, kH,
    kW)."""

    dims = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, int, int],
                 stride: int | tuple[int, int, int] = 1, padding: int | tuple[int, int, int] = 0,
                 output_padding: int | tuple[int, int, int] = 0, groups: int = 1, bias: bool = True,
                 dilation: int | tuple[int, int, int] = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, dtype=dtype, device=device)


class Embedding(Module):
    """A lookup table of `num_embeddings` vectors; the row at `padding_idx` starts at zero and gets no gradient.
    With max_norm, each lookup first scales the rows it reads down to that norm, in place (as PyTorch's)."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, dtype=dtype, device=device),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0
            bump_version(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        for name, default in (("padding_idx", None), ("max_norm", None), ("norm_type", 2),
                              ("scale_grad_by_freq", False), ("sparse", False)):
            value = getattr(self, name)
            if value != default:
                text += f", {name}={value!r}"
        return text

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding over `embeddings` (2-D, shared, not copied), trained only when not `freeze`."""
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse, _weight=embeddings, _freeze=freeze)


class LayerNorm(Module):
    """Normalises over the trailing `normalized_shape` dimensions, then scales by weight and shifts by bias."""

    def __init__(
        self,
        normalized_shape: int | tuple[int, ...],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        weight = Parameter(ones(self.normalized_shape, **factory)) if elementwise_affine else None
        self.register_parameter("weight", weight)
        self.register_parameter(
            "bias", Parameter(zeros(self.normalized_shape, **factory)) if elementwise_affine and bias else None
        )

    def reset_parameters(self) -> None:
        """Scale 1 and shift 0 again, for code that re-initialises every layer that has this method."""
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
            f"bias={self.bias is not None}"
        )
