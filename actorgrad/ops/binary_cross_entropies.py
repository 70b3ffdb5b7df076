"""The binary cross-entropies: binary_cross_entropy on probabilities and binary_cross_entropy_with_logits, with
their weights and pos_weight (constants, as PyTorch requires) and their gradient rules for the input and the
target. Their reduction and device helpers are the pointwise losses' (`losses.py`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.loss_arguments import broadcast_into, refuse_grad, resolve_reduction
from actorgrad.ops.losses import _count, _data_on, _per_element, _reduced
from actorgrad.ops.operands import SCALAR_NAMES, result_type
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.tensor import Tensor

EPSILON = 1e-12  # PyTorch's floor on x (1 - x) in binary_cross_entropy's slope


def _bce_input_grad(ops: Any, g: Any, x: Any, t: Any, weight: Any, count: int, kept: tuple) -> Any:
    spread = (1 - x) * x
    return _per_element(ops, g, kept, count) * weight * (x - t) / ops.where(spread < EPSILON, EPSILON, spread)


def _bce_target_grad(ops: Any, g: Any, x: Any, weight: Any, count: int, kept: tuple) -> Any:
    return _per_element(ops, g, kept, count) * weight * (ops.log(1 - x) - ops.log(x))


BCE = Rule(
    "BinaryCrossEntropyBackward0",
    (("self", "other", "weight", "count", "kept_shape"), _bce_input_grad),
    (("self", "weight", "count", "kept_shape"), _bce_target_grad),
)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """-weight (t log x + (1 - t) log(1 - x)) on probabilities x, each log kept above -100, as PyTorch."""
    if autocast_state.get() is not None:
        return autocast_call(
            binary_cross_entropy, "binary_cross_entropy", input, target, weight, size_average, reduce, reduction
        )
    reduction = resolve_reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) "
                         "is deprecated. Please ensure they have the same size.")
    device = common_device(tuple(a for a in (input, target, weight) if a is not None))
    x, t = _data_on(device, input), _data_on(device, target)
    if weight is not None:
        try:
            np.broadcast_shapes(t.shape, weight.shape)
        except ValueError:
            raise RuntimeError(
                f"Attempting to broadcast a dimension of length {weight.shape[-1]} at -1! Mismatching argument at "
                f"index 1 had {list(weight.shape)}; but expected shape should be broadcastable to {list(t.shape)}"
            ) from None
        broadcast_into(x.shape, weight.shape)
    refuse_grad("binary_cross_entropy", "weight", weight)
    if t.dtype != x.dtype:
        raise RuntimeError(f"Found dtype {SCALAR_NAMES.get(t.dtype, t.dtype)} but expected {SCALAR_NAMES[x.dtype]}")
    if x.dtype.kind != "f":
        raise NotImplementedError(f'"binary_cross_entropy" not implemented for \'{SCALAR_NAMES[x.dtype]}\'')
    xp = device.xp
    if not bool(((x >= 0) & (x <= 1)).all()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if not bool(((t >= 0) & (t <= 1)).all()):
        raise RuntimeError("all elements of target should be between 0 and 1")
    w = xp.ones((), x.dtype) if weight is None else _data_on(device, weight).astype(x.dtype, copy=False)
    with np.errstate(divide="ignore"):
        log_x, log_rest = xp.maximum(xp.log(x), -100), xp.maximum(xp.log(1 - x), -100)
    data = _reduced(-w * (t * log_x + (1 - t) * log_rest), reduction)
    kept_shape = x.shape if reduction == "none" else ()
    return record(BCE, data.astype(x.dtype, copy=False), (input, target), weight=w, count=_count(x.shape, reduction),
                  kept_shape=kept_shape)


def _bce_logits_input_grad(ops: Any, g: Any, x: Any, t: Any, weight: Any, pos_weight: Any, count: int,
                           kept: tuple) -> Any:
    # d/dx of (1 - t) x + L softplus(-x), with L = 1 + (pos_weight - 1) t: (1 - t) - L (1 - sigmoid(x)).
    log_weight = t * (pos_weight - 1) + 1
    return _per_element(ops, g, kept, count) * weight * ((1 - t) - log_weight * (1 - ops.sigmoid(x)))


def _bce_logits_target_grad(ops: Any, g: Any, x: Any, weight: Any, pos_weight: Any, count: int, kept: tuple) -> Any:
    # d/dt: pos_weight softplus(-x) - softplus(x) (-x for a pos_weight of 1), each softplus as max(., 0) +
    # log(1 + exp(-|x|)): log(sigmoid(x)) would underflow to -inf for very negative x, and the form
    # -x + (pos_weight - 1) softplus(-x) gives inf * 0 (nan, not PyTorch's inf) at x = -inf.
    tail = ops.log(1 + ops.exp(-ops.where(x < 0, -x, x)))
    softplus, softplus_neg = ops.where(x > 0, x, 0.0) + tail, ops.where(x < 0, -x, 0.0) + tail
    return _per_element(ops, g, kept, count) * weight * (pos_weight * softplus_neg - softplus)


BCE_WITH_LOGITS = Rule(
    "BinaryCrossEntropyWithLogitsBackward0",
    (("self", "other", "weight", "pos_weight", "count", "kept_shape"), _bce_logits_input_grad),
    (("self", "weight", "pos_weight", "count", "kept_shape"), _bce_logits_target_grad),
)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: bool | None = None, reduce: bool | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """weight and pos_weight are constants (PyTorch refuses ones that require grad). The result has the target's
    dtype, as PyTorch's, which computes it in a tensor made from the target."""
    if autocast_state.get() is not None:
        return autocast_call(
            binary_cross_entropy_with_logits, "binary_cross_entropy_with_logits", input, target, weight, size_average,
            reduce, reduction, pos_weight
        )
    reduction = resolve_reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({list(target.shape)}) must be the same as input size ({list(input.shape)})")
    refuse_grad("binary_cross_entropy_with_logits", "weight", weight)
    refuse_grad("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    device = common_device(tuple(a for a in (input, target, weight, pos_weight) if a is not None))
    out_dtype = target.dtype
    dtype = result_type(input, target)
    if input.dtype.kind != "f":  # PyTorch's log_sigmoid of the input comes first
        raise NotImplementedError(f'"log_sigmoid_cpu" not implemented for \'{SCALAR_NAMES[input.dtype]}\'')
    if out_dtype.kind != "f":
        raise RuntimeError(f"result type {SCALAR_NAMES[dtype]} can't be cast to the desired output type "
                           f"{SCALAR_NAMES.get(out_dtype, out_dtype)}")
    x, t = (_data_on(device, a).astype(dtype, copy=False) for a in (input, target))
    if pos_weight is not None:
        broadcast_into(t.shape, pos_weight.shape, a_is_out=False)
    if weight is not None:
        broadcast_into(x.shape, weight.shape)
    xp = device.xp
    w = xp.ones((), dtype) if weight is None else _data_on(device, weight).astype(dtype, copy=False)
    pw = xp.ones((), dtype) if pos_weight is None else _data_on(device, pos_weight).astype(dtype, copy=False)
    log_weight = 1 + (pw - 1) * t
    with np.errstate(invalid="ignore"):  # infinite logits: 0 * inf is nan, silently, as in PyTorch
        elementwise = w * ((1 - t) * x + log_weight * xp.logaddexp(0, -x))
    elementwise = xp.broadcast_to(elementwise, x.shape)
    data = _reduced(elementwise, reduction)
    kept_shape = x.shape if reduction == "none" else ()
    return record(BCE_WITH_LOGITS, data.astype(out_dtype, copy=False), (input, target), weight=w, pos_weight=pw,
                  count=_count(x.shape, reduction), kept_shape=kept_shape)
