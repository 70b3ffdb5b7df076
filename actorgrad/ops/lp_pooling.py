"""lp_pool1d/2d/3d: power-average pooling, each window's (sum of x^p)^(1/p), composed as PyTorch's Python composes
it (so its values, its NaNs for negative inputs at fractional p, and its zero gradient where a window's sum is zero
are PyTorch's): the average pool of x^p, times the kernel's size, through sign(f) * relu(|f|), to the power 1/p.
An infinite p is max pooling of |x| (of -|x|, negated, for -inf)."""

from __future__ import annotations

import math
from typing import Any

from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.pooling import avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d
from actorgrad.ops.unpooling import repeated
from actorgrad.tensor import Tensor

_POOLS = {1: (avg_pool1d, max_pool1d), 2: (avg_pool2d, max_pool2d), 3: (avg_pool3d, max_pool3d)}


def _lp_pool(dims: int, input: Tensor, norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool,
             kernel_count: int) -> Tensor:
    average, maximum = _POOLS[dims]
    if isinstance(norm_type, int | float) and math.isinf(norm_type):
        pooled = maximum(input.abs() if norm_type > 0 else -input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        return pooled if norm_type > 0 else -pooled
    out = average(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kernel_count).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    if ceil_mode.__class__ is not bool:
        raise not_bool("avg_pool1d", "ceil_mode", ceil_mode)
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode, kernel_size)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    if ceil_mode.__class__ is not bool:
        raise not_bool("avg_pool2d", "ceil_mode", ceil_mode)
    kh, kw = repeated(kernel_size, 2)
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode, kh * kw)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    if ceil_mode.__class__ is not bool:
        raise not_bool("avg_pool3d", "ceil_mode", ceil_mode)
    kd, kh, kw = repeated(kernel_size, 3)
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode, kd * kh * kw)
