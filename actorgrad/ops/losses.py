"""The losses computed per element and then reduced: mse, l1, smooth_l1, huber and kl_div of input against target.
The binary cross-entropies (with and without logits) live in binary_cross_entropies, the class losses (nll_loss,
cross_entropy, the multi-class and multi-label margins) in class_losses, the margin, embedding and likelihood
losses PyTorch composes from tensor ops in composite_losses.

Where PyTorch composes a loss from tensor ops in Python (a weighted mse/l1/huber), so does this module, and the
weights get gradients.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.devices import Device
from actorgrad.ops.class_losses import cross_entropy as cross_entropy
from actorgrad.ops.class_losses import nll_loss as nll_loss
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.loss_arguments import REDUCTIONS, kernel_reduction, size_mismatch
from actorgrad.ops.loss_arguments import legacy_reduction as legacy_reduction
from actorgrad.ops.operand_checks import check_subtraction
from actorgrad.ops.operands import SCALAR_NAMES, promote_types, result_type
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

# The rest live in nn.functional only, as in PyTorch.
__all__: list[str] = []  # its name at the top level is aten_forms's


def _data_on(device: Device, t: Tensor) -> Any:
    """t's array on `device`: a zero-dim cpu tensor beside tensors of another device is copied there for the
    kernels (its gradient still goes back to the cpu, through record)."""
    return t._data if t._device is device else device.asarray(t._data)


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


# -- losses of input - target, and kl_div ------------------------------------------------------------------------
def _per_element(ops: Any, g: Any, kept: tuple, count: int) -> Any:
    return ops.reshape(g, kept) / count


def _summed_back(ops: Any, grad: Any, shape: tuple, own: tuple) -> Any:
    """An input's gradient over the broadcast `shape`, summed back to the input's `own` shape. Done here, not by
    the Rule: it sums back only an input whose shape differs from the output's, and a reduced loss's 0-d output
    has the shape of a 0-d input."""
    return ops.sum_to(ops.broadcast_to(grad, shape), own)


def _smooth_l1_slope(ops: Any, d: Any, beta: float) -> Any:
    return ops.where(d * d < beta * beta, d / beta, ops.sign(d))


def _huber_slope(ops: Any, d: Any, delta: float) -> Any:
    return ops.where(d * d < delta * delta, d, ops.sign(d) * delta)


def _difference_grads(slope: Any, *names: str) -> tuple:
    """The gradient rows of a loss of d = input - target: slope(d) for the input, slope(-d) for the target."""
    keys = ("self", "other", "count", "kept_shape", "shape", *names)

    def input_grad(ops: Any, g: Any, x: Any, t: Any, count: int, kept: tuple, shape: tuple, *p: Any) -> Any:
        return _summed_back(ops, _per_element(ops, g, kept, count) * slope(ops, x - t, *p), shape, x.shape)

    def target_grad(ops: Any, g: Any, x: Any, t: Any, count: int, kept: tuple, shape: tuple, *p: Any) -> Any:
        return _summed_back(ops, _per_element(ops, g, kept, count) * slope(ops, t - x, *p), shape, t.shape)

    return (keys, input_grad), (keys, target_grad)


MSE_LOSS = Rule("MseLossBackward0", *_difference_grads(lambda ops, d: d * 2), broadcasts=True)
L1_LOSS = Rule("L1LossBackward0", *_difference_grads(lambda ops, d: ops.sign(d)), broadcasts=True)
SMOOTH_L1_LOSS = Rule("SmoothL1LossBackward0", *_difference_grads(_smooth_l1_slope, "beta"), broadcasts=True)
HUBER_LOSS = Rule("HuberLossBackward0", *_difference_grads(_huber_slope, "delta"), broadcasts=True)
KERNEL_NAMES = {MSE_LOSS: "mse_cpu", SMOOTH_L1_LOSS: "smooth_l1_cpu", HUBER_LOSS: "huber_cpu"}


def _warn_size(input: Tensor, target: Tensor) -> None:
    if input.shape != target.shape:
        warn(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). This will "
            f"likely lead to incorrect results due to broadcasting. Please ensure they have the same size.")


def _pointwise(rule: Rule, kernel: Any, input: Tensor, target: Tensor, reduction: str, **params: Any) -> Tensor:
    """`kernel(xp, input - target)` per element, over the broadcast shape, in the dtype PyTorch promotes to; huber's
    result has the input's dtype, as PyTorch's kernel writes it into a tensor like the input."""
    device = common_device((input, target))
    dtype = promote_types(input.dtype, target.dtype)  # of the two broadcast first, as PyTorch's Python does
    x, t = (_data_on(device, a).astype(dtype, copy=False) for a in (input, target))
    try:
        shape = np.broadcast_shapes(x.shape, t.shape)
    except ValueError:
        raise size_mismatch(x.shape, t.shape) from None
    with np.errstate(invalid="ignore", divide="ignore"):
        data = _reduced(kernel(device.xp, x - t), reduction)
    kept_shape = shape if reduction == "none" else ()
    losses = record(rule, data, (input, target), count=_count(shape, reduction), kept_shape=kept_shape, shape=shape,
                    **params)
    return losses.to(input.dtype) if rule is HUBER_LOSS and dtype != input.dtype else losses


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


def _check_dtype(rule: Rule, dtype: Any, reduction: str) -> None:
    """PyTorch's kernels refuse integer and bool operands; its l1 (composed in Python) refuses only their mean,
    and takes complex operands (a real loss: the magnitudes of the differences)."""
    if dtype.kind == "f" or (dtype.kind == "c" and rule is L1_LOSS):
        return
    name = SCALAR_NAMES.get(dtype, dtype)
    if rule is not L1_LOSS:
        raise NotImplementedError(f'"{KERNEL_NAMES[rule]}" not implemented for \'{name}\'')
    if reduction == "mean":
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {name}")


def _pointwise_loss(rule: Rule, kernel: Any, input: Tensor, target: Tensor, size_average: bool | None,
                    reduce: bool | None, reduction: str, weight: Tensor | None, **params: Any) -> Tensor:
    _warn_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    if rule is L1_LOSS or weight is not None:  # PyTorch's Python subtracts the two
        check_subtraction(input, target)
    if weight is None:
        reduction = kernel_reduction(reduction)
        _check_dtype(rule, promote_types(input.dtype, target.dtype), reduction)
        return _pointwise(rule, kernel, input, target, reduction, **params)
    losses = _pointwise(rule, kernel, input, target, "none", **params)
    return _weighted(losses, input, weight, reduction, rule is not HUBER_LOSS)


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(mse_loss, "mse_loss", input, target, size_average, reduce, reduction, weight)
    return _pointwise_loss(MSE_LOSS, lambda xp, d: d * d, input, target, size_average, reduce, reduction, weight)


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(l1_loss, "l1_loss", input, target, size_average, reduce, reduction, weight)
    return _pointwise_loss(L1_LOSS, lambda xp, d: xp.abs(d), input, target, size_average, reduce, reduction, weight)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """Quadratic (d² / 2 beta) where |d| < beta, linear (|d| - beta / 2) beyond; beta = 0 is l1_loss."""
    if autocast_state.get() is not None:
        return autocast_call(smooth_l1_loss, "smooth_l1_loss", input, target, size_average, reduce, reduction, beta)
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
    if autocast_state.get() is not None:
        return autocast_call(huber_loss, "huber_loss", input, target, reduction, delta, weight)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")

    def kernel(xp: Any, d: Any) -> Any:
        magnitude = xp.abs(d)
        return xp.where(magnitude < delta, 0.5 * d * d, delta * (magnitude - 0.5 * delta))

    dtype = promote_types(input.dtype, target.dtype)
    if input.dtype.kind != "f" and dtype.kind == "f":  # PyTorch's kernel writes into a tensor of the input's dtype
        raise RuntimeError(f"result type {SCALAR_NAMES[dtype]} can't be cast to the desired output type "
                           f"{SCALAR_NAMES.get(input.dtype, input.dtype)}")
    return _pointwise_loss(HUBER_LOSS, kernel, input, target, None, None, reduction, weight, delta=delta)


def _kl_input_grad(ops: Any, g: Any, x: Any, t: Any, log_target: bool, count: int, kept: tuple,
                   shape: tuple) -> Any:
    grad = -_per_element(ops, g, kept, count) * (ops.exp(t) if log_target else t)
    return _summed_back(ops, grad, shape, x.shape)


def _kl_target_grad(ops: Any, g: Any, x: Any, t: Any, log_target: bool, count: int, kept: tuple,
                    shape: tuple) -> Any:
    if log_target:  # d/dt of exp(t) (t - x)
        grad = _per_element(ops, g, kept, count) * ops.exp(t) * (t - x + 1)
    else:  # d/dt of t log t - t x, with t / t for 1: nan at t = 0, as PyTorch's gradient of xlogy(t, t)
        grad = _per_element(ops, g, kept, count) * (ops.log(t) + t / t - x)
    return _summed_back(ops, grad, shape, t.shape)


_KL = ("self", "other", "log_target", "count", "kept_shape", "shape")
KL_DIV = Rule("KlDivBackward0", (_KL, _kl_input_grad), (_KL, _kl_target_grad), broadcasts=True)
KL_MEAN = (
    "reduction: 'mean' divides the total loss by both the batch size and the support size.'batchmean' divides only "
    "by the batch size, and aligns with the KL div math definition.'mean' will be changed to behave the same as "
    "'batchmean' in the next major release."
)


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """target (log target) times (log target - input) per element; 'batchmean' divides the sum by the batch
    size (input's dim 0)."""
    if autocast_state.get() is not None:
        return autocast_call(kl_div, "kl_div", input, target, size_average, reduce, reduction, log_target)
    check_flags("kl_div", log_target=log_target)
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warn(KL_MEAN)
    reduction = kernel_reduction(reduction, (*REDUCTIONS, "batchmean"))
    if input.dtype.kind == "c" or target.dtype.kind == "c":
        raise RuntimeError("kl_div: Complex inputs not supported.")
    if input.dtype.kind in "biu" or target.dtype.kind in "biu":
        raise RuntimeError("kl_div: Integral inputs not supported.")
    device = common_device((input, target))
    dtype = result_type(input, target)
    x, t = (_data_on(device, a).astype(dtype, copy=False) for a in (input, target))
    xp = device.xp
    with np.errstate(invalid="ignore", divide="ignore"):  # 0 log 0 is 0; nan below 0 and for a mean of nothing
        try:
            if log_target:
                elementwise = xp.exp(t) * (t - x)
            else:
                elementwise = xp.where(t == 0, 0, t * xp.log(t)) - t * x
        except ValueError:  # shapes that do not broadcast
            raise size_mismatch(t.shape, x.shape) from None
        batch = x.shape[0] if reduction == "batchmean" and x.ndim else 1
        data = _reduced(elementwise, "sum" if reduction == "batchmean" else reduction) / batch
    count = _count(elementwise.shape, reduction) if reduction != "batchmean" else max(batch, 1)
    kept_shape = elementwise.shape if reduction == "none" else ()
    return record(KL_DIV, data.astype(dtype, copy=False), (input, target), log_target=log_target, count=count,
                  kept_shape=kept_shape, shape=elementwise.shape)


METHODS: dict[str, Any] = {}
