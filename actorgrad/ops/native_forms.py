"""PyTorch's `native_*` kernels at the top level: the normalisations that also return the statistics they
computed (layer_norm's and batch_norm's for a backward of one's own, group_norm's differentiable as PyTorch's),
dropout that also returns its mask, and `norm_except_dim`, weight_norm's norm over all dims but one.

The outputs are those of nn.functional's ops (`normalization`'s rule, NativeLayerNormBackward0 ...); the
statistics are computed beside them. As PyTorch's kernels, a float16 input's statistics are computed in float32
and given in float16, or in float32 when its parameters are float32. (`torch.native_norm` is left out: PyTorch
2.13 runs it on sparse tensors only, and refuses a dense CPU one.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops import normalization
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.operands import SCALAR_NAMES, dim_in_range, int_tuple
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import accumulation_dtype
from actorgrad.ops.statistics import norm
from actorgrad.random import numpy_generator
from actorgrad.tensor import Tensor, bool_, float32

__all__ = ["native_batch_norm", "native_dropout", "native_group_norm", "native_layer_norm", "norm_except_dim"]
METHODS: dict[str, Any] = {}

NATIVE_DROPOUT = Rule("NativeDropoutBackward0", (("scaled_mask",), lambda ops, g, scaled_mask: g * scaled_mask))
NUMEL_CHECK = ("Expected X.numel() == N * C * HxW to be true, but got false.  (Could this error message be improved?  "
               "If so, please report an enhancement request to PyTorch.)")


def _stats_dtype(input: Tensor, params: tuple[Tensor | None, ...]) -> np.dtype:
    """The statistics' dtype: the parameters' where they are float32 beside a float16 input, else the input's."""
    given = [t.dtype for t in params if t is not None]
    return given[0] if given and input.dtype == np.float16 else input.dtype


def _statistics(input: Tensor, dims: tuple[int, ...], eps: float, dtype: np.dtype,
                keepdims: bool) -> tuple[Tensor, Tensor]:
    """(mean, 1/sqrt(biased variance + eps)) of `input` over `dims`, unrecorded; NaN over no elements."""
    x = input._data
    x = x.astype(accumulation_dtype(x.dtype) or x.dtype, copy=False)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = x.mean(axis=dims, keepdims=True)
        rstd = (((x - mean) ** 2).mean(axis=dims, keepdims=keepdims) + eps) ** -0.5
    if not keepdims:
        mean = mean.reshape(rstd.shape)
    return (Tensor(mean.astype(dtype), device=input._device), Tensor(rstd.astype(dtype), device=input._device))


def native_layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None, bias: Tensor | None,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(layer_norm's output, the mean, 1/std), the statistics of shape input.shape[:-k] + (1,) * k; they carry
    no gradient, as PyTorch's."""
    count = len(int_tuple(normalized_shape, "native_layer_norm", "normalized_shape", 2))
    out = normalization.layer_norm(input, normalized_shape, weight, bias, eps)
    dims = tuple(range(input.ndim - count, input.ndim))
    return (out, *_statistics(input, dims, eps, _stats_dtype(input, (weight, bias)), keepdims=True))


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                      running_var: Tensor | None, training: bool, momentum: float,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(batch_norm's output, the batch's mean per channel, 1/std per channel); in evaluation the two statistics
    are empty, as PyTorch's (the running ones were used)."""
    if training.__class__ is not bool:
        raise not_bool("native_batch_norm", "training", training, 6)
    out = normalization.batch_norm_kernel(input, running_mean, running_var, weight, bias, training, momentum, eps)
    dtype = _stats_dtype(input, (weight, bias, running_mean, running_var))
    if not training:
        empty = input._device.xp.empty(0, dtype)
        return out, Tensor(empty, device=input._device), Tensor(empty.copy(), device=input._device)
    return (out, *_statistics(input, (0, *range(2, input.ndim)), eps, dtype, keepdims=False))


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int, C: int, HxW: int,
                      group: int, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(group_norm's output over the input seen as (N, C, HxW), the mean and 1/std of each (sample, group) of
    shape (N, group)). As in PyTorch, the statistics are differentiable: they are composed of recorded ops."""
    if input.numel() != N * C * HxW:
        raise RuntimeError(NUMEL_CHECK)
    out = normalization.group_norm(input.reshape(N, C, HxW), group, weight, bias, eps).reshape(input.shape)
    dtype = _stats_dtype(input, (weight, bias))
    grouped = input.reshape(N, group, -1)
    if accumulation_dtype(input.dtype) is not None:
        grouped = grouped.to(float32)
    mean = grouped.mean(-1)
    rstd = (grouped.var(-1, correction=0) + eps).rsqrt()
    return out, mean.to(dtype), rstd.to(dtype)


def _checked_dropout_input(input: Tensor, p: float) -> None:
    """The checks of PyTorch's training kernel: it draws Bernoulli(1 - p) into a float mask."""
    if not 0.0 <= 1.0 - p <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1.0 - p}")
    if input.dtype.kind != "f":
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{SCALAR_NAMES.get(input.dtype, input.dtype)}")


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:
    """(output, bool mask of the kept elements). Training (train True or None): each element kept with
    probability 1 - p and scaled by 1/(1-p) (0 when p is 1); else a copy and a mask of ones. The gradient is
    the output's factor, mask * scale."""
    if train is not None and train.__class__ is not bool:
        raise not_bool("native_dropout", "train", train, 3)
    x = input._data
    xp = input._device.xp
    if x.size == 0:  # PyTorch's kernel returns the input and an empty mask of its dtype
        return input, Tensor(xp.empty_like(x), device=input._device)
    if train is False:
        mask = xp.ones(x.shape, bool_)
        scaled = xp.ones((), x.dtype)
    else:
        p = float(p)
        _checked_dropout_input(input, p)
        mask = xp.asarray(numpy_generator(None).random(x.shape) >= p)
        scaled = (mask * (0.0 if p == 1.0 else 1.0 / (1.0 - p))).astype(x.dtype)
    out = record(NATIVE_DROPOUT, x * scaled, (input,), scaled_mask=scaled)
    return out, Tensor(mask, device=input._device)


def norm_except_dim(v: Tensor, pow: int = 2, dim: int = 0) -> Tensor:
    """The `pow`-norm of `v` over all its dims but `dim`, of shape 1 everywhere but there (weight_norm's); dim -1
    takes the norm of all of `v`, a 0-d tensor, as PyTorch's."""
    for position, (name, value) in enumerate((("pow", pow), ("dim", dim)), 2):
        if value.__class__ is bool or not isinstance(value, int | np.integer):
            raise TypeError(f"norm_except_dim(): argument '{name}' (position {position}) must be int, not "
                            f"{type(value).__name__}")
    if v.dtype.kind not in "fc":
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{SCALAR_NAMES.get(v.dtype, v.dtype)} instead.")
    if dim == -1:
        return norm(v, pow)
    dim_in_range(dim, v.ndim)
    if dim != 0 and dim != v.ndim - 1:
        return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)
    ones = [1] * v.ndim
    ones[dim] = v.shape[dim]
    if dim == 0:
        return norm(v.reshape(v.shape[0], -1), pow, 1).reshape(ones)
    return norm(v.reshape(-1, v.shape[-1]), pow, 0).reshape(ones)
