"""Folding an eval-mode BatchNorm into the convolution or linear layer before it, as torch.nn.utils.fusion: the
normalisation y = (x - mean) / sqrt(var + eps) * w + b is affine, so it becomes part of the layer's weight and
bias, and inference runs one layer instead of two."""

from __future__ import annotations

import copy
from typing import TypeVar

from actorgrad.creation import ones_like, zeros_like
from actorgrad.nn.layers import Linear
from actorgrad.nn.module import Module
from actorgrad.nn.normalization import _BatchNorm
from actorgrad.nn.parameter import Parameter
from actorgrad.ops import rsqrt
from actorgrad.tensor import Tensor

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]

ConvT = TypeVar("ConvT", bound=Module)
LinearT = TypeVar("LinearT", bound=Linear)


def _check_running_stats(bn: _BatchNorm) -> None:
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_eval(conv: ConvT, bn: _BatchNorm, transpose: bool = False) -> ConvT:
    """A copy of `conv` (a ConvNd, or a ConvTransposeNd with `transpose=True`) that computes bn(conv(x)); both
    must be in eval mode, and bn must track running statistics."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    _check_running_stats(bn)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose,
    )
    return fused


def fuse_conv_bn_weights(
    conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float, bn_w: Tensor | None,
    bn_b: Tensor | None, transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """The fused convolution's weight (each output channel scaled by w / sqrt(var + eps)) and bias
    ((b_conv - mean) * w / sqrt(var + eps) + b), in the convolution's dtypes; the output channels are dim 1 of a
    transposed convolution's weight. Both are new leaf Parameters."""
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    conv_b = zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = zeros_like(bn_rm) if bn_b is None else bn_b
    inv_std = rsqrt(bn_rv + bn_eps)
    shape = [1, -1] if transpose else [-1, 1]
    shape += [1] * (conv_w.ndim - 2)
    fused_w = (conv_w * (bn_w * inv_std).reshape(shape)).to(dtype=weight_dtype)
    fused_b = ((conv_b - bn_rm) * inv_std * bn_w + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear: LinearT, bn: _BatchNorm) -> LinearT:
    """A copy of `linear` that computes bn(linear(x)); bn's features must match the linear layer's outputs (or be
    one), both must be in eval mode, and bn must track running statistics."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}"
        )
    _check_running_stats(bn)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
    )
    return fused


def fuse_linear_bn_weights(
    linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float, bn_w: Tensor,
    bn_b: Tensor,
) -> tuple[Parameter, Parameter]:
    """The fused linear layer's weight (each output row scaled by w / sqrt(var + eps)) and bias
    ((b_linear - mean) * w / sqrt(var + eps) + b), in the layer's dtypes."""
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    linear_b = zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * scale.unsqueeze(-1).to(dtype=weight_dtype)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
