"""dropout and its channel-wise (dropout1d/2d/3d) and self-normalising (alpha_dropout, feature_alpha_dropout)
forms: products with a random mask, drawn from actorgrad's generator so `manual_seed` repeats them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.ops.arithmetic import mul
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.inplace import mul_
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.random import numpy_generator
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

__all__: list[str] = []  # nn.functional's: torch.dropout (aten_forms's) and torch.alpha_dropout take `train`

SELU_NEGATIVE_LIMIT = 1.7580993408473766  # selu's scale * alpha: where alpha_dropout sets dropped elements


def _check_p(p: float) -> None:
    """PyTorch's Python check, which a NaN passes (its kernel refuses that, see `_masked`)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _masked(input: Tensor, p: float, training: bool, inplace: bool,
            shape: tuple[int, ...] | Callable[[Tensor], tuple[int, ...]], alpha: bool = False) -> Tensor:
    """PyTorch's dropout kernel: the input times a mask of `shape` (the input's, or one value per channel; a
    function of the input is called only where a mask is drawn, so its rank check runs where PyTorch's does), each
    entry kept with probability 1 - p; a kept one is scaled by 1/(1-p), or for alpha dropout by `a` and a dropped
    one set to -SELU_NEGATIVE_LIMIT * a, then shifted, so that mean and variance stay those of the input.
    Recorded as MulBackward0 (then AddBackward0), as in PyTorch."""
    _check_p(p)
    if p != p:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    p = float(p)  # a 0-d tensor too, as PyTorch's kernel reads its double
    x = input._data
    if not training or p == 0.0 or x.size == 0:
        return input
    shift = None
    if p == 1.0:  # all zeros, which any dtype holds, as PyTorch's
        mask = np.zeros((), x.dtype)
    elif x.dtype.kind == "c":  # PyTorch draws the mask in the input's dtype, and has no complex Bernoulli draw
        raise NotImplementedError(
            f"\"bernoulli_scalar_{input._device.type}_\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
    elif x.dtype.kind != "f":  # the 1 / (1 - p) scale is a float, as in PyTorch
        raise RuntimeError(f"result type Float can't be cast to the desired output type {SCALAR_NAMES[x.dtype]}")
    else:
        dtype = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float64)  # random() draws only these
        shape = shape if isinstance(shape, tuple) else shape(input)
        keep = (numpy_generator(None).random(shape, dtype=dtype) >= p).astype(np.float64)
        if alpha:
            a = 1.0 / math.sqrt((SELU_NEGATIVE_LIMIT ** 2 * p + 1) * (1 - p))
            mask = keep * a
            shift = ((keep - 1) * (SELU_NEGATIVE_LIMIT * a) + SELU_NEGATIVE_LIMIT * a * p).astype(x.dtype)
        else:
            mask = keep / (1.0 - p)
        mask = mask.astype(x.dtype)
    where = input._device
    if where.type == "cuda":
        mask = where.asarray(mask)
        shift = None if shift is None else where.asarray(shift)
    out = mul_(input, Tensor(mask, device=where)) if inplace else mul(input, Tensor(mask, device=where))
    if shift is None:
        return out
    shift = Tensor(shift, device=where)
    return out.add_(shift) if inplace else out + shift


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes each element with probability p and scales the rest by 1/(1-p); `inplace` multiplies `input`
    itself by the mask and returns it, as PyTorch does."""
    if training.__class__ is not bool:
        raise not_bool("dropout", "train", training, 3)
    return _masked(input, p, training, inplace, input.shape)


def _channel_shape(input: Tensor) -> tuple[int, ...]:
    """One mask value per (sample, channel): dims 0 and 1 kept, the rest 1."""
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return (*input.shape[:2], *(1,) * (input.ndim - 2))


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an (N, C, L) or (C, L) input with probability p, scaling the rest by 1/(1-p)."""
    if training.__class__ is not bool:
        raise not_bool("feature_dropout", "train", training, 3)
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that dropout1d exists to "
            "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional "
            "batch dimension (i.e. 2D or 3D inputs)."
        )
    shape = _channel_shape(input) if input.ndim == 3 else (input.shape[0], 1)  # unbatched: one value per channel
    return _masked(input, p, training, inplace, shape)


def _deprecated_rank(name: str, ndim: int, spatial: int) -> None:
    warn(
        f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in an error in a future "
        f"release. To retain the behavior and silence this warning, please use dropout instead. Note that {name} "
        f"exists to provide channel-wise dropout on inputs with {spatial} spatial dimensions, a channel dimension, "
        f"and an optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs)."
    )


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes whole channels (dim 1) with probability p, scaling the rest by 1/(1-p). As in PyTorch a 3D input is
    taken as (N, C, L), with a warning, not as an unbatched (C, H, W)."""
    if training.__class__ is not bool:
        raise not_bool("feature_dropout", "train", training, 3)
    _check_p(p)
    if input.ndim not in (3, 4):
        _deprecated_rank("dropout2d", input.ndim, 2)
    if input.ndim == 3:
        warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
             "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
             "change in a future release to interpret the input as one without a batch dimension, i.e. shape (C, "
             "H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d instead.")
    return _masked(input, p, training, inplace, _channel_shape)


def _unbatched_channel_shape(input: Tensor) -> tuple[int, ...]:
    """dropout3d's mask of an input without a batch dim, seen as a batch of one: one value per dim-0 entry."""
    if input.ndim < 1:  # the batch of one has one dim, too few for channels
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return (input.shape[0], *(1,) * (input.ndim - 1))


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an (N, C, D, H, W) or (C, D, H, W) input with probability p, scaling the rest by
    1/(1-p)."""
    if training.__class__ is not bool:
        raise not_bool("feature_dropout", "train", training, 3)
    _check_p(p)
    if input.ndim not in (4, 5):
        _deprecated_rank("dropout3d", input.ndim, 3)
    return _masked(input, p, training, inplace, _channel_shape if input.ndim == 5 else _unbatched_channel_shape)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout for selu networks: dropped elements take selu's negative limit and the result is scaled and
    shifted back to the input's mean and variance."""
    if training.__class__ is not bool:
        raise not_bool("alpha_dropout", "train", training, 3)
    return _masked(input, p, training, inplace, input.shape, alpha=True)



def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """alpha_dropout of whole channels (dim 1): each (sample, channel) kept or set to selu's negative limit
    together, then scaled and shifted back to the input's mean and variance."""
    if training.__class__ is not bool:
        raise not_bool("feature_alpha_dropout", "train", training, 3)
    return _masked(input, p, training, inplace, _channel_shape, alpha=True)


METHODS: dict[str, Any] = {}
