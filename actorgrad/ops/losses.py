"""Losses: nll_loss and cross_entropy over classes, the pointwise ones (mse, l1, smooth_l1, huber, kl_div) and the
binary cross-entropies.

nll_loss is linear in its input, so its gradient is the upstream gradient times one constant array (each row's
-weight[target] / denominator at the target's class), built once in the forward; that product is a recorded op in
a recorded backward, so the loss differentiates again. cross_entropy is log_softmax followed by nll_loss, plus
the smoothing term when label_smoothing > 0, as PyTorch composes it. Where PyTorch composes a loss from tensor ops
in Python (a weighted mse/l1/huber, class probabilities), so does this module, and the weights get gradients.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from actorgrad.devices import Device
from actorgrad.grad_mode import is_grad_enabled
from actorgrad.ops.arithmetic import mul
from actorgrad.ops.operands import SCALAR_NAMES, result_type
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


def legacy_reduction(size_average: bool | None, reduce: bool | None, stacklevel: int = 3) -> str:
    """The reduction the deprecated size_average / reduce pick, with PyTorch's warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  stacklevel=stacklevel)
    return reduction


def _check_reduction(reduction: str, allowed: tuple = REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, stacklevel=4)
    _check_reduction(reduction)
    return reduction


def _refuse_grad(function: str, name: str, t: Tensor | None) -> None:
    """PyTorch's kernel has no derivative for this argument, so it refuses one that requires grad (in grad mode)
    rather than leave it silently without a gradient."""
    if t is not None and t.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{function}' is not differentiable with respect to argument '{name}'. "
                           "This input cannot have requires_grad True.")


def _data_on(device: Device, t: Tensor) -> Any:
    """t's array on `device`: a zero-dim cpu tensor beside tensors of another device is copied there for the
    kernels (its gradient still goes back to the cpu, through record)."""
    return t._data if t._device is device else device.asarray(t._data)


def _size_mismatch(a: tuple, b: tuple) -> RuntimeError:
    ndim = max(len(a), len(b))
    a, b = (1,) * (ndim - len(a)) + a, (1,) * (ndim - len(b)) + b
    d = next(d for d in reversed(range(ndim)) if a[d] != b[d] and 1 not in (a[d], b[d]))
    return RuntimeError(f"The size of tensor a ({a[d]}) must match the size of tensor b ({b[d]}) at non-singleton "
                        f"dimension {d}")


def _broadcast_into(out: tuple, operand: tuple, a_is_out: bool = True) -> None:
    """PyTorch's errors for an operand combined in place into an array of shape `out`: it must broadcast to it
    and not grow it."""
    try:
        shape = np.broadcast_shapes(out, operand)
    except ValueError:
        raise (_size_mismatch(out, operand) if a_is_out else _size_mismatch(operand, out)) from None
    if shape != out:
        raise RuntimeError(f"output with shape {list(out)} doesn't match the broadcast shape {list(shape)}")


def _reduced(elementwise: Any, reduction: str) -> Any:
    """Losses reduced as `reduction` says; the mean of no elements is nan, without numpy's warning (as PyTorch)."""
    if reduction == "none":
        return elementwise
    if reduction == "sum" or elementwise.size == 0:
        return elementwise.sum() * (1 if reduction == "sum" else math.nan)
    return elementwise.mean()


def _count(shape: tuple, reduction: str) -> int:
    """What a mean divides by; an empty input (whose gradient is empty too) takes 1, not a division by zero."""
    return max(math.prod(shape), 1) if reduction == "mean" else 1


# -- class losses -------------------------------------------------------------------------------------------------
def _check_class_target(x_shape: tuple, t_shape: tuple) -> None:
    """nll_loss's checks of the target's shape against the input's (C,) or (N, C, d1, ...), before its kernel's."""
    if not x_shape:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    batch = t_shape[0] if t_shape else 0
    if len(x_shape) != 1 and x_shape[0] != batch:
        raise ValueError(f"Expected input batch_size ({x_shape[0]}) to match target batch_size ({batch}).")
    expected = x_shape[:1] + x_shape[2:]
    if len(x_shape) == 3 or len(x_shape) > 4:
        if t_shape != expected:
            raise RuntimeError(f"Expected target size {list(expected)}, got {list(t_shape)}")


def _check_class_kernel(x_shape: tuple, t_shape: tuple) -> None:
    """The kernel's own checks: nll_loss's on (C,) and (N, C), nll_loss2d's on (N, C, H, W)."""
    if len(x_shape) <= 2:
        if len(t_shape) > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if len(x_shape) == 1 and t_shape and t_shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {t_shape[0]}")
    elif len(x_shape) == 4:
        if len(t_shape) != 3:
            raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of "
                               f"dimension: {len(t_shape)}")
        if t_shape != x_shape[:1] + x_shape[2:]:
            raise RuntimeError(f"size mismatch (got input: {list(x_shape)} , target: {list(t_shape)}")


def _class_targets(x: Any, target: Tensor, weight: Tensor | None, ignore_index: int) -> tuple:
    """Checked targets, in PyTorch's order: (target with ignored entries at class 0, the not-ignored mask, each
    target's weight)."""
    t = target._data
    _check_class_target(x.shape, t.shape)
    _refuse_grad("nll_loss2d_forward" if x.ndim > 2 else "nll_loss_forward", "weight", weight)
    _check_class_kernel(x.shape, t.shape)
    classes = x.shape[0 if x.ndim == 1 else 1]
    if weight is not None and weight.shape != (classes,):
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes or no classes "
                           f"but got weight tensor of shape: {list(weight.shape)}")
    if t.dtype not in (np.int64, np.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {SCALAR_NAMES.get(t.dtype, t.dtype)}")
    if weight is not None and weight.dtype != x.dtype:
        raise RuntimeError(f"expected scalar type {SCALAR_NAMES[x.dtype]} but found "
                           f"{SCALAR_NAMES.get(weight.dtype, weight.dtype)}")
    if x.ndim == 1:
        t = t.reshape(())  # a (1,) target for a (C,) input is its one class
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= classes))
    if bad.any():
        raise IndexError(f"Target {int(t[bad][0])} is out of bounds.")
    safe = np.where(valid, t, 0)
    picked = valid.astype(x.dtype) if weight is None else weight._data[safe] * valid
    return safe, valid, picked


def _class_shape(ndim: int, axis: int, classes: int) -> list[int]:
    """The shape that lays a per-class vector along the class axis of an ndim-dim input."""
    shape = [1] * ndim
    shape[axis] = classes
    return shape


def _reduce_weighted(losses: Any, picked: Any, reduction: str) -> tuple[Any, Any]:
    """The reduced losses and the number each element is divided by (PyTorch's mean divides by the weights)."""
    if reduction == "none":
        return losses, 1
    if reduction == "sum":
        return losses.sum(), 1
    denominator = picked.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return losses.sum() / denominator, denominator


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
             ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    reduction = _reduction(size_average, reduce, reduction)
    same_device(input, target, weight)
    x = input._data
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


def _check_smoothing(label_smoothing: float) -> None:
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}")


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
                  ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Class-index targets (integers) or class probabilities (a target of the input's shape) on (C,), (N, C) or
    (N, C, d1, ...) inputs. A label_smoothing of 0 or less smooths nothing, as in PyTorch."""
    reduction = _reduction(size_average, reduce, reduction)
    same_device(input, target, weight)
    axis = 0 if input.ndim == 1 else 1
    if input.shape == target.shape:  # PyTorch tells probabilities from class indices by the shape alone
        return _cross_entropy_probabilities(input, target, weight, ignore_index, reduction, label_smoothing, axis)
    _check_smoothing(label_smoothing)
    logp = log_softmax(input, axis)
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0.0:
        return loss
    x = input._data
    _, valid, picked = _class_targets(x, target, weight, ignore_index)
    classes = x.shape[axis]
    # Each kept row's smoothing term: -sum over classes of weight[c] * logp[c], ignored rows zero; zeroed by where,
    # not by a product with the mask, so they get no gradient even where the mean divides by a zero total weight.
    class_weight = input._device.xp.ones(classes, x.dtype) if weight is None else weight._data
    rows = mul(logp, -class_weight.reshape(_class_shape(x.ndim, axis, classes))).sum(axis)
    smooth = where(Tensor(valid, device=input._device), rows, 0.0)
    if reduction != "none":
        smooth = smooth.sum()
    if reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):  # all ignored: nan, silently, as in PyTorch
            smooth = smooth * (1 / picked.sum().astype(x.dtype))
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / classes)


def _cross_entropy_probabilities(input: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int,
                                 reduction: str, label_smoothing: float, axis: int) -> Tensor:
    """-sum over classes of weight[c] * target[c] * logp[c]; the mean divides by the number of samples."""
    if target.dtype.kind != "f":
        raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                           f"{SCALAR_NAMES.get(target.dtype, target.dtype)}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    classes = input.shape[axis] if input.ndim else 1
    if weight is not None and weight.shape != (classes,):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {classes} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    _check_smoothing(label_smoothing)
    logp = log_softmax(input, axis)
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    products = logp * target
    if weight is not None:
        products = products * weight.reshape(_class_shape(logp.ndim, axis, classes))
    if reduction == "mean":
        samples = logp.numel() // classes
        return products.sum() * (-1 / samples if samples else math.nan)  # no samples: nan, silently
    return -(products.sum() if reduction == "sum" else products.sum(axis))


# -- pointwise losses ---------------------------------------------------------------------------------------------
def _per_element(ops: Any, g: Any, kept: tuple, count: int) -> Any:
    return ops.reshape(g, kept) / count


def _smooth_l1_slope(ops: Any, d: Any, beta: float) -> Any:
    return ops.where(d * d < beta * beta, d / beta, ops.sign(d))


def _huber_slope(ops: Any, d: Any, delta: float) -> Any:
    return ops.where(d * d < delta * delta, d, ops.sign(d) * delta)


def _difference_grads(slope: Any, *names: str) -> tuple:
    """The gradient rows of a loss of d = input - target: slope(d) for the input, slope(-d) for the target."""
    keys = ("self", "other", "count", "kept_shape", *names)
    return (
        (keys, lambda ops, g, x, t, count, kept, *p: _per_element(ops, g, kept, count) * slope(ops, x - t, *p)),
        (keys, lambda ops, g, x, t, count, kept, *p: _per_element(ops, g, kept, count) * slope(ops, t - x, *p)),
    )


MSE_LOSS = Rule("MseLossBackward0", *_difference_grads(lambda ops, d: d * 2), broadcasts=True)
L1_LOSS = Rule("L1LossBackward0", *_difference_grads(lambda ops, d: ops.sign(d)), broadcasts=True)
SMOOTH_L1_LOSS = Rule("SmoothL1LossBackward0", *_difference_grads(_smooth_l1_slope, "beta"), broadcasts=True)
HUBER_LOSS = Rule("HuberLossBackward0", *_difference_grads(_huber_slope, "delta"), broadcasts=True)


def _warn_size(input: Tensor, target: Tensor) -> None:
    if input.shape != target.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). This will "
            f"likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
            stacklevel=4)


def _pointwise(rule: Rule, kernel: Any, input: Tensor, target: Tensor, reduction: str, **params: Any) -> Tensor:
    """`kernel(xp, input - target)` per element, over the broadcast shape, in the dtype PyTorch promotes to."""
    device = common_device((input, target))
    dtype = result_type(input, target)
    x, t = (_data_on(device, a).astype(dtype, copy=False) for a in (input, target))
    try:
        shape = np.broadcast_shapes(x.shape, t.shape)
    except ValueError:
        raise _size_mismatch(x.shape, t.shape) from None
    with np.errstate(invalid="ignore", divide="ignore"):
        data = _reduced(kernel(device.xp, x - t), reduction)
    kept_shape = shape if reduction == "none" else ()
    return record(rule, data, (input, target), count=_count(shape, reduction), kept_shape=kept_shape, **params)


def _weighted(losses: Tensor, input: Tensor, weight: Tensor, reduction: str, mean_over_weights: bool) -> Tensor:
    """PyTorch's weighted mse/l1/huber, composed of tensor ops as there (so the weight gets a gradient)."""
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    losses = losses * weight
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if reduction != "mean":
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    with np.errstate(invalid="ignore", divide="ignore"):  # no elements: nan, silently
        return losses.sum() / (weight.sum() if mean_over_weights else losses.numel())


def _pointwise_loss(rule: Rule, kernel: Any, input: Tensor, target: Tensor, size_average: bool | None,
                    reduce: bool | None, reduction: str, weight: Tensor | None, **params: Any) -> Tensor:
    _warn_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, stacklevel=4)
    if weight is None:
        _check_reduction(reduction)
        return _pointwise(rule, kernel, input, target, reduction, **params)
    losses = _pointwise(rule, kernel, input, target, "none", **params)
    return _weighted(losses, input, weight, reduction, rule is not HUBER_LOSS)


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    return _pointwise_loss(MSE_LOSS, lambda xp, d: d * d, input, target, size_average, reduce, reduction, weight)


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    return _pointwise_loss(L1_LOSS, lambda xp, d: xp.abs(d), input, target, size_average, reduce, reduction, weight)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """Quadratic (d² / 2 beta) where |d| < beta, linear (|d| - beta / 2) beyond; beta = 0 is l1_loss."""
    if beta == 0.0:
        return l1_loss(input, target, size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")

    def kernel(xp: Any, d: Any) -> Any:
        magnitude = xp.abs(d)
        return xp.where(magnitude < beta, 0.5 * d * d / beta, magnitude - 0.5 * beta)

    return _pointwise_loss(SMOOTH_L1_LOSS, kernel, input, target, size_average, reduce, reduction, None, beta=beta)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """Quadratic (d² / 2) where |d| < delta, linear (delta (|d| - delta / 2)) beyond."""
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")

    def kernel(xp: Any, d: Any) -> Any:
        magnitude = xp.abs(d)
        return xp.where(magnitude < delta, 0.5 * d * d, delta * (magnitude - 0.5 * delta))

    return _pointwise_loss(HUBER_LOSS, kernel, input, target, None, None, reduction, weight, delta=delta)


def _kl_input_grad(ops: Any, g: Any, t: Any, log_target: bool, count: int, kept: tuple) -> Any:
    return -_per_element(ops, g, kept, count) * (ops.exp(t) if log_target else t)


def _kl_target_grad(ops: Any, g: Any, x: Any, t: Any, log_target: bool, count: int, kept: tuple) -> Any:
    if log_target:  # d/dt of exp(t) (t - x)
        return _per_element(ops, g, kept, count) * ops.exp(t) * (t - x + 1)
    return _per_element(ops, g, kept, count) * (ops.log(t) + 1 - x)  # d/dt of t log t - t x


_KL = ("log_target", "count", "kept_shape")
KL_DIV = Rule("KlDivBackward0", (("other", *_KL), _kl_input_grad), (("self", "other", *_KL), _kl_target_grad),
              broadcasts=True)
KL_MEAN = (
    "reduction: 'mean' divides the total loss by both the batch size and the support size.'batchmean' divides only "
    "by the batch size, and aligns with the KL div math definition.'mean' will be changed to behave the same as "
    "'batchmean' in the next major release."
)


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """target (log target) times (log target - input) per element; 'batchmean' divides the sum by the batch
    size (input's dim 0)."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn(KL_MEAN, stacklevel=2)
    _check_reduction(reduction, (*REDUCTIONS, "batchmean"))
    if input.dtype.kind in "biu" or target.dtype.kind in "biu":
        raise RuntimeError("kl_div: Integral inputs not supported.")
    device = common_device((input, target))
    dtype = result_type(input, target)
    x, t = (_data_on(device, a).astype(dtype, copy=False) for a in (input, target))
    xp = device.xp
    with np.errstate(invalid="ignore", divide="ignore"):  # 0 log 0 is 0; nan below 0 and for a mean of nothing
        if log_target:
            elementwise = xp.exp(t) * (t - x)
        else:
            elementwise = xp.where(t == 0, 0, t * xp.log(t)) - t * x
        batch = x.shape[0] if reduction == "batchmean" and x.ndim else 1
        data = _reduced(elementwise, "sum" if reduction == "batchmean" else reduction) / batch
    count = _count(elementwise.shape, reduction) if reduction != "batchmean" else max(batch, 1)
    kept_shape = elementwise.shape if reduction == "none" else ()
    return record(KL_DIV, data.astype(dtype, copy=False), (input, target), log_target=log_target, count=count,
                  kept_shape=kept_shape)


# -- binary cross-entropy -----------------------------------------------------------------------------------------
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
    reduction = _reduction(size_average, reduce, reduction)
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
        _broadcast_into(x.shape, weight.shape)
    _refuse_grad("binary_cross_entropy", "weight", weight)
    if t.dtype != x.dtype:
        raise RuntimeError(f"Found dtype {SCALAR_NAMES.get(t.dtype, t.dtype)} but expected {SCALAR_NAMES[x.dtype]}")
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
    # d/dt: -x + (pos_weight - 1) softplus(-x), softplus(-x) as max(-x, 0) + log(1 + exp(-|x|)): log(sigmoid(x))
    # would underflow to -inf for very negative x (and 0 * -inf is nan).
    magnitude = ops.where(x < 0, -x, x)
    softplus_neg = ops.where(x < 0, -x, 0.0) + ops.log(1 + ops.exp(-magnitude))
    return _per_element(ops, g, kept, count) * weight * (-x + softplus_neg * (pos_weight - 1))


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
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({list(target.shape)}) must be the same as input size ({list(input.shape)})")
    _refuse_grad("binary_cross_entropy_with_logits", "weight", weight)
    _refuse_grad("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    device = common_device(tuple(a for a in (input, target, weight, pos_weight) if a is not None))
    out_dtype = target.dtype
    dtype = result_type(input, target)
    if out_dtype.kind != "f":
        raise RuntimeError(f"result type {SCALAR_NAMES[dtype]} can't be cast to the desired output type "
                           f"{SCALAR_NAMES.get(out_dtype, out_dtype)}")
    x, t = (_data_on(device, a).astype(dtype, copy=False) for a in (input, target))
    if pos_weight is not None:
        _broadcast_into(t.shape, pos_weight.shape, a_is_out=False)
    if weight is not None:
        _broadcast_into(x.shape, weight.shape)
    xp = device.xp
    w = xp.ones((), dtype) if weight is None else _data_on(device, weight).astype(dtype, copy=False)
    pw = xp.ones((), dtype) if pos_weight is None else _data_on(device, pos_weight).astype(dtype, copy=False)
    log_weight = 1 + (pw - 1) * t
    softplus_neg = np.logaddexp(0, -x)
    elementwise = w * ((1 - t) * x + log_weight * softplus_neg)
    elementwise = np.broadcast_to(elementwise, x.shape)
    data = _reduced(elementwise, reduction)
    kept_shape = x.shape if reduction == "none" else ()
    return record(BCE_WITH_LOGITS, data.astype(out_dtype, copy=False), (input, target), weight=w, pos_weight=pw,
                  count=_count(x.shape, reduction), kept_shape=kept_shape)


METHODS: dict[str, Any] = {}
