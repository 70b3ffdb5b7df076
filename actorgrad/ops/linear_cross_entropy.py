"""linear_cross_entropy: cross_entropy(linear(input, linear_weight, linear_bias), target), as PyTorch's.

With `options=None` it is that composition (the reference path), so every option of cross_entropy and a
K-dimensional loss (a linear_weight of shape (C, d1, ..., dK, in_features)) work as there. With a
`LinearCrossEntropyOptions` and class-index targets without label smoothing, it runs chunked: the batch is
processed `batch_chunk_size` rows at a time, in the forward and again in the backward, so no more than one chunk
of logits ever exists. The chunked gradient rules are written against the array interface, so, unlike PyTorch's
chunked op, they also differentiate again under create_graph.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_state
from actorgrad.ops.class_losses import _class_targets, _reduce_weighted, cross_entropy
from actorgrad.ops.linalg import TYPE_META_NAMES, linear
from actorgrad.ops.loss_arguments import REDUCTIONS
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.tensor import Tensor

_ACC_POLICIES = ("auto", "accurate", "balanced", "compact")
_ACC_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """How linear_cross_entropy chunks its batch, with PyTorch's fields and checks. `batch_chunk_size` rows per
    chunk (None: one chunk), or `chunking_method` "aspect_ratio[:N]": chunks whose logits take about the memory
    of the input (divided by N); "auto" is "aspect_ratio:2" (unless a batch_chunk_size is given). `acc_dtype`
    is the dtype each chunk computes in (None: float32 for float16 input, else the input's). `acc_policy` and
    `allow_retain_graph` are checked and kept for PyTorch's sake: here each backward recomputes its chunks, so
    retain_graph always works and there is no scratch buffer to trade."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: Any = None

    def __post_init__(self) -> None:
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not (name == "aspect_ratio" and (not sep or (factor.isdigit() and int(factor) > 0))):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (size is None or (isinstance(size, int) and not isinstance(size, bool) and size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")
        if self.acc_dtype is not None and not _is_acc_dtype(self.acc_dtype):
            raise ValueError(
                f"acc_dtype must be one of {{None, float16, float32, float64}}, got {self.acc_dtype!r}. Pass "
                "acc_dtype=None to let the op pick automatically."
            )

    def chunk_size(self, num_batches: int, in_features: int, num_classes: int) -> int:
        """The rows per chunk for these sizes; PyTorch's ValueError where batch_chunk_size and an explicit
        chunking_method disagree."""
        method = self.chunking_method
        if method == "auto":
            method = None if self.batch_chunk_size is not None else "aspect_ratio:2"
        size = num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size, num_batches)
        if method is not None:
            _, sep, factor = method.partition(":")
            # Chunks of logits (rows x classes) as large as the input (batch x features), a power of two, / factor.
            target = -(-num_batches // -(-num_classes // in_features))
            derived = min((1 << (target - 1).bit_length()) // (int(factor) if sep else 1), num_batches)
            if self.batch_chunk_size is not None and self.batch_chunk_size != derived:
                raise ValueError(
                    f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method ('{method}') give different "
                    f"chunk sizes ({self.batch_chunk_size} vs {derived}); pass only one."
                )
            size = derived
        return max(1, size)

    def computing_dtype(self, dtype: Any) -> Any:
        if self.acc_dtype is not None:
            return np.dtype(self.acc_dtype)
        return np.dtype(np.float32) if dtype == np.float16 else dtype


def _is_acc_dtype(dtype: Any) -> bool:
    try:
        return np.dtype(dtype) in _ACC_DTYPES
    except TypeError:
        return False


def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options: LinearCrossEntropyOptions | None = None,
) -> Tensor:
    """The cross entropy of `target` against the logits linear(input, linear_weight, linear_bias), without
    materializing more than a chunk of logits when `options` is given. `ignore_index=None` means -100 for class
    indices and is the only value class probabilities take."""
    if not 1 <= input.ndim <= 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.ndim}")
    batch, in_features = input.shape[:-1], input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), "
            f"got {in_features} and {linear_weight.shape[-1]}, respectively"
        )
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires batched "
            f"input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}"
        )
    logits_shape = (*batch, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:  # cross_entropy's test for probabilities
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if options is not None:
        if not out_features and reduction in REDUCTIONS and label_smoothing == 0.0 and target.dtype == np.int64:
            if autocast_state.get() is None:  # under autocast the composed ops cast as their own rows say
                same_device(input, linear_weight, target, linear_bias, weight)
                return _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, options)
        else:
            bias_shape = None if linear_bias is None else tuple(linear_bias.shape)
            warnings.warn(
                "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum','none'}, "
                "label_smoothing == 0, target.dtype == int64, out_features == (). Got "
                f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                f"out_features={out_features}, linear_bias.shape={bias_shape}.",
                stacklevel=2,
            )
    if out_features:  # one matrix of C * d1 * ... * dK rows, its logits then laid out as (N, C, d1, ..., dK)
        rows = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape((rows, in_features))
        linear_bias = None if linear_bias is None else linear_bias.reshape((rows,))
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(
        logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index, label_smoothing=label_smoothing
    )


def _chunked(input: Tensor, linear_weight: Tensor, target: Tensor, linear_bias: Tensor | None,
             weight: Tensor | None, reduction: str, ignore_index: int, options: LinearCrossEntropyOptions) -> Tensor:
    """The chunked forward: per chunk, the logits, their logsumexp and the target's logit, weighted as nll_loss
    weighs them; the backward (`_logit_grads`) recomputes each chunk's softmax."""
    x, w = input._data, linear_weight._data
    rows = x.reshape((-1, x.shape[-1]))
    for operand in (w, None if linear_bias is None else linear_bias._data):  # PyTorch's chunked matmul's check
        if operand is not None and operand.dtype != x.dtype:
            names = TYPE_META_NAMES.get(x.dtype, x.dtype), TYPE_META_NAMES.get(operand.dtype, operand.dtype)
            raise RuntimeError("expected m1 and m2 to have the same dtype, but got: {} != {}".format(*names))
    xp = input._device.xp
    classes = w.shape[0]
    # The class-target checks of nll_loss on a stand-in for the logits that takes no memory.
    logits_like = xp.broadcast_to(xp.zeros((), x.dtype), (*x.shape[:-1], classes))
    safe, valid, picked = _class_targets(logits_like, target, weight, ignore_index)
    safe, valid, picked = safe.reshape(-1), valid.reshape(-1), picked.reshape(-1)
    size = options.chunk_size(rows.shape[0], rows.shape[1], classes)
    acc = options.computing_dtype(x.dtype)
    b = None if linear_bias is None else linear_bias._data.astype(acc, copy=False)
    w_acc = w.astype(acc, copy=False)
    losses = xp.empty(rows.shape[0], acc)
    for start in range(0, rows.shape[0], size):
        logits = rows[start:start + size].astype(acc, copy=False) @ w_acc.T
        if b is not None:
            logits += b
        peak = logits.max(axis=1, keepdims=True)
        logsumexp = xp.log(xp.exp(logits - peak).sum(axis=1)) + peak[:, 0]
        chosen = xp.take_along_axis(logits, safe[start:start + size, None], axis=1)[:, 0]
        losses[start:start + size] = logsumexp - chosen
    losses = (losses * picked).reshape(target.shape if x.ndim == 2 else ())
    data, denominator = _reduce_weighted(losses, picked, reduction)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = xp.where(valid, picked / denominator, 0).astype(x.dtype)  # ignored rows get no gradient, as nll's
    inputs = (input, linear_weight) if linear_bias is None else (input, linear_weight, linear_bias)
    return record(
        LINEAR_CROSS_ENTROPY, xp.asarray(data).astype(x.dtype, copy=False), inputs, bias=linear_bias,
        safe=safe, share=share, size=size, flops=6 * x.size * classes,
    )


def _logit_grads(ops: Any, g: Any, x: Any, w: Any, bias: Any, safe: Any, share: Any, size: int):
    """Each chunk's (start, stop, d loss / d logits) = (softmax(logits) - one_hot(target)) * share * g."""
    rows = _rows(ops, x)
    scale = ops.reshape(g * share, share.shape)  # g first: under create_graph a Tensor, whose product records
    classes = w.shape[0]
    w_t = ops.swapaxes(w, 0, 1)
    for start in range(0, rows.shape[0], size):
        stop = min(start + size, rows.shape[0])
        logits = rows[start:stop] @ w_t
        if bias is not None:
            logits = logits + bias
        row_scale = ops.reshape(scale[start:stop], (stop - start, 1))
        picked = ops.put_along(row_scale, safe[start:stop, None], 1, (stop - start, classes))
        yield start, stop, ops.exp(ops.log_softmax(logits, (1,))) * row_scale - picked


def _rows(ops: Any, x: Any) -> Any:
    """The input as a (batch, features) matrix (one row for an unbatched input)."""
    return ops.reshape(x, (math.prod(x.shape[:-1]), x.shape[-1]))


def _input_grad(ops: Any, g: Any, x: Any, w: Any, bias: Any, safe: Any, share: Any, size: int) -> Any:
    pieces = tuple(grad @ w for _, _, grad in _logit_grads(ops, g, x, w, bias, safe, share, size))
    return ops.reshape(ops.concatenate(pieces, 0), x.shape)


def _weight_grad(ops: Any, g: Any, x: Any, w: Any, bias: Any, safe: Any, share: Any, size: int) -> Any:
    rows = _rows(ops, x)
    total = ops.zeros(w.shape, w)
    for start, stop, grad in _logit_grads(ops, g, x, w, bias, safe, share, size):
        total = total + ops.swapaxes(grad, 0, 1) @ rows[start:stop]
    return total


def _bias_grad(ops: Any, g: Any, x: Any, w: Any, bias: Any, safe: Any, share: Any, size: int) -> Any:
    total = ops.zeros(bias.shape, bias)
    for _, _, grad in _logit_grads(ops, g, x, w, bias, safe, share, size):
        total = total + ops.sum(grad, (0,))
    return total


_SAVED = ("self", "other", "bias", "safe", "share", "size")
LINEAR_CROSS_ENTROPY = Rule(
    "LinearCrossEntropyBackward0",
    (_SAVED, _input_grad),
    (_SAVED, _weight_grad),
    (_SAVED, _bias_grad),
    cost=lambda data, params: params["flops"],  # three products of (batch, features) by (features, classes)
    multithreaded=True,
)
