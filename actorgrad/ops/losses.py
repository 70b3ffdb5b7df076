"""Losses: nll_loss, cross_entropy, mse_loss, l1_loss, binary_cross_entropy_with_logits.

nll_loss is linear in its input, so its gradient is the upstream gradient times one constant array (each row's
-weight[target] / denominator at the target's class), built once in the forward; that product is a recorded op in
a recorded backward, so the loss differentiates again. cross_entropy is log_softmax followed by nll_loss, plus
the smoothing term when label_smoothing > 0, as PyTorch composes it.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from actorgrad.devices import Device
from actorgrad.ops.arithmetic import mul
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import Rule, common_device, record, same_device
from actorgrad.ops.reductions import log_softmax
from actorgrad.ops.selection import where
from actorgrad.tensor import Tensor

# The rest live in nn.functional only, as in PyTorch.
__all__ = ["binary_cross_entropy_with_logits"]

REDUCTIONS = ("none", "mean", "sum")


def _scaled(ops: Any, g: Any, coef: Any, kept_shape: tuple) -> Any:
    return ops.reshape(g, kept_shape) * coef


NLL_LOSS = Rule("NllLossBackward0", (("coef", "kept_shape"), _scaled))
NLL_LOSS_2D = Rule("NllLoss2DBackward0", *NLL_LOSS.grads)


def _check_reduction(reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _data_on(device: Device, t: Tensor) -> Any:
    """t's array on `device`: a zero-dim cpu tensor beside tensors of another device is copied there for the
    kernels (its gradient still goes back to the cpu, through record)."""
    return t._data if t._device is device else device.asarray(t._data)


def _class_targets(x: np.ndarray, target: Tensor, weight: Tensor | None, ignore_index: int) -> tuple:
    """Checked targets: (target with ignored entries at class 0, the not-ignored mask, each target's weight)."""
    t = target._data
    if t.dtype not in (np.int64, np.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {SCALAR_NAMES.get(t.dtype, t.dtype)}")
    if x.ndim == 1:
        if t.ndim != 0:
            raise RuntimeError(f"0D target tensor expected for a 1D input, got a target of shape {t.shape}")
    elif t.shape[:1] != x.shape[:1]:
        raise ValueError(f"Expected input batch_size ({x.shape[0]}) to match target batch_size ({t.shape[0]}).")
    elif t.shape != x.shape[:1] + x.shape[2:]:
        raise RuntimeError(f"expected target of shape {x.shape[:1] + x.shape[2:]} for input of shape {x.shape}, "
                           f"got {t.shape}")
    classes = x.shape[0 if x.ndim == 1 else 1]
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= classes))
    if bad.any():
        raise IndexError(f"Target {int(t[bad][0])} is out of bounds.")
    safe = np.where(valid, t, 0)
    if weight is None:
        picked = valid.astype(x.dtype)
    else:
        if weight.shape != (classes,):
            raise RuntimeError(f"weight tensor should be defined either for all {classes} classes or no classes "
                               f"but got weight tensor of shape: {list(weight.shape)}")
        picked = weight._data.astype(x.dtype)[safe] * valid
    return safe, valid, picked


def _reduced(elementwise: np.ndarray, reduction: str) -> np.ndarray:
    """Unweighted losses reduced as `reduction` says."""
    return elementwise if reduction == "none" else elementwise.sum() if reduction == "sum" else elementwise.mean()


def _class_shape(ndim: int, axis: int, classes: int) -> list[int]:
    """The shape that lays a per-class vector along the class axis of an ndim-dim input."""
    shape = [1] * ndim
    shape[axis] = classes
    return shape


def _reduce_weighted(losses: np.ndarray, picked: np.ndarray, reduction: str) -> tuple[np.ndarray, Any]:
    """The reduced losses and the number each element is divided by (PyTorch's mean divides by the weights)."""
    if reduction == "none":
        return losses, 1
    if reduction == "sum":
        return losses.sum(), 1
    denominator = picked.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return losses.sum() / denominator, denominator


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: int = -100,
             reduction: str = "mean") -> Tensor:
    _check_reduction(reduction)
    same_device(input, target, weight)
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("nll_loss: input tensor should be 1D or more, got a 0-d tensor")
    safe, valid, picked = _class_targets(x, target, weight, ignore_index)
    axis = 0 if x.ndim == 1 else 1
    xp = input._device.xp
    index = xp.expand_dims(safe, axis)
    losses = -xp.take_along_axis(x, index, axis).squeeze(axis) * picked
    data, denominator = _reduce_weighted(losses, picked, reduction)
    coef = xp.zeros_like(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        # An ignored target gets no gradient, even where the mean divides by a zero total weight (PyTorch's
        # backward never writes it); a kept one with zero total weight gets -weight / 0 (inf or nan), as there.
        share = xp.where(valid, -picked / denominator, 0)
    xp.put_along_axis(coef, index, xp.expand_dims(share, axis), axis)
    kept_shape = xp.expand_dims(losses, axis).shape if reduction == "none" else ()
    rule = NLL_LOSS_2D if x.ndim > 2 else NLL_LOSS
    return record(rule, data.astype(x.dtype, copy=False), (input,), coef=coef, kept_shape=kept_shape)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Class-index targets (integers) or class probabilities (floats, the input's shape) on (C,), (N, C) or
    (N, C, d1, ...) inputs."""
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    same_device(input, target, weight)
    axis = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, axis)
    if target._data.dtype.kind == "f":
        return _cross_entropy_probabilities(logp, target, weight, reduction, label_smoothing, axis)
    loss = nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0.0:
        return loss
    x = input._data
    _, valid, picked = _class_targets(x, target, weight, ignore_index)
    classes = x.shape[axis]
    # Each kept row's smoothing term: -sum over classes of weight[c] * logp[c], ignored rows zero; zeroed by where,
    # not by a product with the mask, so they get no gradient even where the mean divides by a zero total weight.
    class_weight = input._device.xp.ones(classes, x.dtype) if weight is None else weight._data.astype(x.dtype)
    rows = mul(logp, -class_weight.reshape(_class_shape(x.ndim, axis, classes))).sum(axis)
    smooth = where(Tensor(valid, device=input._device), rows, 0.0)
    if reduction == "sum":
        smooth = smooth.sum()
    elif reduction == "mean":
        smooth = smooth.sum() / picked.sum().astype(x.dtype)
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / classes)


def _cross_entropy_probabilities(logp: Tensor, target: Tensor, weight: Tensor | None, reduction: str,
                                 label_smoothing: float, axis: int) -> Tensor:
    """-sum over classes of weight[c] * target[c] * logp[c]; the mean divides by the number of samples."""
    if target.shape != logp.shape:
        raise RuntimeError(f"cross_entropy: expected class probabilities of the input's shape {logp.shape}, got a "
                           f"target of shape {target.shape}")
    classes = logp.shape[axis]
    if label_smoothing:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    products = logp * target
    if weight is not None:
        products = products * weight.reshape(_class_shape(logp.ndim, axis, classes))
    if reduction == "mean":
        return -products.sum() / (logp.numel() // classes)
    return -(products.sum() if reduction == "sum" else products.sum(axis))


# -- pointwise regression losses --------------------------------------------------------------------------------
def _count(shape: tuple, reduction: str) -> int:
    """What a mean divides by; an empty input (whose gradient is empty too) takes 1, not a division by zero."""
    return max(int(np.prod(shape)), 1) if reduction == "mean" else 1


MSE_LOSS = Rule(
    "MseLossBackward0",
    (("self", "other", "count", "kept_shape"),
     lambda ops, g, x, t, count, kept: ops.reshape(g, kept) * (x - t) * (2 / count)),
    (("self", "other", "count", "kept_shape"),
     lambda ops, g, x, t, count, kept: ops.reshape(g, kept) * (t - x) * (2 / count)),
    broadcasts=True,
)
L1_LOSS = Rule(
    "L1LossBackward0",
    (("self", "other", "count", "kept_shape"),
     lambda ops, g, x, t, count, kept: ops.reshape(g, kept) * ops.sign(x - t) / count),
    (("self", "other", "count", "kept_shape"),
     lambda ops, g, x, t, count, kept: ops.reshape(g, kept) * ops.sign(t - x) / count),
    broadcasts=True,
)


def _size_mismatch(a: tuple, b: tuple) -> RuntimeError:
    ndim = max(len(a), len(b))
    a, b = (1,) * (ndim - len(a)) + a, (1,) * (ndim - len(b)) + b
    d = next(d for d in reversed(range(ndim)) if a[d] != b[d] and 1 not in (a[d], b[d]))
    return RuntimeError(f"The size of tensor a ({a[d]}) must match the size of tensor b ({b[d]}) at non-singleton "
                        f"dimension {d}")


def _pointwise(rule: Rule, kernel: Any, input: Tensor, target: Tensor, reduction: str, op: str) -> Tensor:
    _check_reduction(reduction)
    device = common_device((input, target))
    x, t = _data_on(device, input), _data_on(device, target)
    try:
        shape = np.broadcast_shapes(x.shape, t.shape)
    except ValueError:
        raise _size_mismatch(x.shape, t.shape) from None
    if shape != x.shape or shape != t.shape:
        warnings.warn(
            f"Using a target size ({t.shape}) that is different to the input size ({x.shape}). This will likely "
            f"lead to incorrect results due to broadcasting. Please ensure they have the same size.", stacklevel=3)
    elementwise = kernel(x - t)
    data = _reduced(elementwise, reduction)
    kept_shape = shape if reduction == "none" else ()
    return record(rule, data, (input, target), count=_count(shape, reduction), kept_shape=kept_shape)


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    return _pointwise(MSE_LOSS, np.square, input, target, reduction, "mse_loss")


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    return _pointwise(L1_LOSS, np.abs, input, target, reduction, "l1_loss")


# -- logistic loss ----------------------------------------------------------------------------------------------
def _bce_input_grad(ops: Any, g: Any, x: Any, t: Any, weight: Any, pos_weight: Any, count: int, kept: tuple) -> Any:
    # d/dx of (1 - t) x + L softplus(-x), with L = 1 + (pos_weight - 1) t: (1 - t) - L (1 - sigmoid(x)).
    log_weight = t * (pos_weight - 1) + 1
    return ops.reshape(g, kept) * weight * ((1 - t) - log_weight * (1 - ops.sigmoid(x))) / count


def _bce_target_grad(ops: Any, g: Any, x: Any, weight: Any, pos_weight: Any, count: int, kept: tuple) -> Any:
    # d/dt: -x + (pos_weight - 1) softplus(-x), softplus(-x) as max(-x, 0) + log(1 + exp(-|x|)): log(sigmoid(x))
    # would underflow to -inf for very negative x (and 0 * -inf is nan).
    magnitude = ops.where(x < 0, -x, x)
    softplus_neg = ops.where(x < 0, -x, 0.0) + ops.log(1 + ops.exp(-magnitude))
    return ops.reshape(g, kept) * weight * (-x + softplus_neg * (pos_weight - 1)) / count


BCE_WITH_LOGITS = Rule(
    "BinaryCrossEntropyWithLogitsBackward0",
    (("self", "other", "weight", "pos_weight", "count", "kept_shape"), _bce_input_grad),
    (("self", "weight", "pos_weight", "count", "kept_shape"), _bce_target_grad),
)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """weight and pos_weight are constants here (no gradient flows to them)."""
    _check_reduction(reduction)
    device = common_device(tuple(t for t in (input, target, weight, pos_weight) if t is not None))
    x, t = _data_on(device, input), _data_on(device, target)
    if x.shape != t.shape:
        raise ValueError(f"Target size ({list(t.shape)}) must be the same as input size ({list(x.shape)})")
    xp = device.xp
    w = xp.ones((), x.dtype) if weight is None else _data_on(device, weight).astype(x.dtype, copy=False)
    pw = xp.ones((), x.dtype) if pos_weight is None else _data_on(device, pos_weight).astype(x.dtype, copy=False)
    log_weight = 1 + (pw - 1) * t
    softplus_neg = np.logaddexp(0, -x)
    elementwise = w * ((1 - t) * x + log_weight * softplus_neg)
    elementwise = np.broadcast_to(elementwise, x.shape)
    data = _reduced(elementwise, reduction)
    kept_shape = x.shape if reduction == "none" else ()
    return record(BCE_WITH_LOGITS, data.astype(x.dtype, copy=False), (input, target), weight=w, pos_weight=pw,
                  count=_count(x.shape, reduction), kept_shape=kept_shape)


METHODS: dict[str, Any] = {}
