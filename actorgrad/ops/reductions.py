"""Reductions (sum, mean, amax, log_softmax) and their gradient rules."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor

__all__ = ["amax", "log_softmax", "mean", "sum"]


def _input_size(data: Any, params: dict) -> int:
    return math.prod(params["self_shape"])


def _spread(ops: Any, g: Any, kept_shape: tuple[int, ...], self_shape: tuple[int, ...]) -> Any:
    """Send a reduced gradient back over the reduced dims."""
    return ops.broadcast_to(ops.reshape(g, kept_shape), self_shape)


SUM = Rule(
    "SumBackward0", (("kept_shape", "self_shape"), _spread), cost=_input_size
)
SUM_DIM = Rule("SumBackward1", (("kept_shape", "self_shape"), _spread), cost=_input_size)
MEAN = Rule(
    "MeanBackward0",
    (("kept_shape", "self_shape", "count"), lambda ops, g, k, s, count: _spread(ops, g, k, s) / count),
    cost=_input_size,
)
MEAN_DIM = Rule("MeanBackward1", *MEAN.grads, cost=_input_size)


def _amax_grad(ops: Any, g: Any, self: Any, result: Any, dim: tuple[int, ...], kept_shape: tuple) -> Any:
    # Ties share the gradient evenly, as PyTorch's amax does.
    mask = ops.equal_mask(self, ops.reshape(result, kept_shape))
    return ops.reshape(g, kept_shape) * mask / ops.sum(mask, dim, keepdim=True)


AMAX = Rule("AmaxBackward0", (("self", "result", "dim", "kept_shape"), _amax_grad), cost=_input_size)
LOG_SOFTMAX = Rule(
    "LogSoftmaxBackward0",
    (("result", "dim"), lambda ops, g, result, dim: g - ops.exp(result) * ops.sum(g, dim, keepdim=True)),
)


def normalize_dims(dim: int | tuple[int, ...] | list[int], ndim: int, op: str) -> tuple[int, ...]:
    """Dims as sorted non-negative ints, with PyTorch's error for one out of range."""
    if dim.__class__ is int and -ndim <= dim < ndim:
        return (dim % ndim,)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    low, high = (-ndim, ndim - 1) if ndim else (-1, 0)
    out = []
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"{op}(): dim must be an int or a tuple of ints, got {d!r}")
        if not low <= d <= high:
            raise IndexError(
                f"{op}(): Dimension out of range (expected to be in range of [{low}, {high}], but got {d})"
            )
        out.append(d % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise RuntimeError(f"{op}(): dim {dims} appears multiple times in the list of dims")
    return tuple(sorted(out))


def _reduce(rule_all: Rule, rule_dim: Rule, input: Tensor, dim: Any, keepdim: bool, op: str):
    x = input._data
    if dim is not None and not isinstance(dim, int) and len(dim) == 0:
        dim = None  # an empty dim list reduces every dim, as in PyTorch
    if dim is None:
        data = getattr(x, op)(keepdims=keepdim)  # the ndarray method of the same name
        return record(rule_all, data, (input,), kept_shape=(1,) * x.ndim, self_shape=x.shape, count=x.size)
    dims = normalize_dims(dim, x.ndim, op)
    kept_shape = tuple(1 if i in dims else n for i, n in enumerate(x.shape))
    data = getattr(x, op)(axis=dims, keepdims=keepdim)
    count = math.prod(x.shape[d] for d in dims)
    return record(rule_dim, data, (input,), kept_shape=kept_shape, self_shape=x.shape, count=count)


def sum(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return _reduce(SUM, SUM_DIM, input, dim, keepdim, "sum")


def mean(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return _reduce(MEAN, MEAN_DIM, input, dim, keepdim, "mean")


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    x = input._data
    dims = tuple(range(x.ndim)) if dim in ((), []) else normalize_dims(dim, x.ndim, "amax")
    if x.size == 0:
        raise IndexError("amax(): Expected reduction dim to be specified for input.numel() == 0.")
    kept_shape = tuple(1 if i in dims else n for i, n in enumerate(x.shape))
    data = np.amax(x, axis=dims, keepdims=keepdim)
    return record(AMAX, data, (input,), dim=dims, kept_shape=kept_shape, self_shape=x.shape)


def log_softmax(input: Tensor, dim: int) -> Tensor:
    x = input._data
    (d,) = normalize_dims(dim, x.ndim, "log_softmax")
    shifted = x - x.max(axis=d, keepdims=True)
    data = shifted - np.log(np.exp(shifted).sum(axis=d, keepdims=True))
    return record(LOG_SOFTMAX, data, (input,), dim=(d,))


METHODS = {"sum": sum, "mean": mean, "amax": amax, "log_softmax": log_softmax}
