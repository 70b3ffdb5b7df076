"""The class losses: nll_loss, cross_entropy over class indices or class probabilities, and the multi-class and
multi-label margin losses (multi_margin, multilabel_margin, multilabel_soft_margin).

nll_loss is linear in its input, so its gradient is the upstream gradient times one constant array (each row's
-weight[target] / denominator at the target's class), built once in the forward; that product is a recorded op in
a recorded backward, so the loss differentiates again. cross_entropy is log_softmax followed by nll_loss, plus
the smoothing term when label_smoothing > 0, as PyTorch composes it; with class probabilities it is composed of
tensor ops, as there, so a weight gets a gradient. The margin losses are composed of tensor ops too, their
targets and PyTorch's non-differentiable weights turned into constant masks and factors in the forward.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.activations import logsigmoid
from actorgrad.ops.arithmetic import mul
from actorgrad.ops.loss_arguments import REDUCTIONS, legacy_reduction, refuse_grad, resolve_reduction
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.pool_gradients import input_dependent
from actorgrad.ops.record import record, same_device
from actorgrad.ops.reductions import log_softmax
from actorgrad.ops.selection import where
from actorgrad.tensor import Tensor


def _scaled(ops: Any, g: Any, coef: Any, kept_shape: tuple) -> Any:
    return ops.reshape(g, kept_shape) * coef


def _picked(ops: Any, gg: Any, coef: Any, kept_shape: tuple, grad_shape: tuple) -> Any:
    """_scaled's adjoint: nll_loss of `gg`, the sum of gg * coef over each loss's classes."""
    return ops.reshape(ops.sum_to(gg * coef, kept_shape), grad_shape)


# As PyTorch's nll_loss_backward, the gradient is an op on the input too, with a zero derivative for it: under
# create_graph the input's gradient requires grad, and a double backward gives zeros instead of failing.
NLL_LOSS = input_dependent("NllLoss", ("coef", "kept_shape"), _scaled, _picked)
NLL_LOSS_2D = input_dependent("NllLoss2D", ("coef", "kept_shape"), _scaled, _picked)


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
    refuse_grad("nll_loss2d_forward" if x.ndim > 2 else "nll_loss_forward", "weight", weight)
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
    if x.dtype.kind != "f":  # the kernel's own dispatch, before it reads a target
        kernel = "nll_loss2d_forward_out_frame" if x.ndim > 2 else "nll_loss_out_frame"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{SCALAR_NAMES.get(x.dtype, x.dtype)}\'')
    if t.dtype == np.uint8 and x.ndim > 2:  # nll_loss2d's kernel, which spatial inputs reach, takes Long only
        raise RuntimeError("expected scalar type Long but found Byte")
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
    if autocast_state.get() is not None:
        return autocast_call(nll_loss, "nll_loss", input, target, weight, size_average, ignore_index, reduce, reduction)
    reduction = resolve_reduction(size_average, reduce, reduction)
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
    if autocast_state.get() is not None:
        return autocast_call(
            cross_entropy, "cross_entropy", input, target, weight, size_average, ignore_index, reduce, reduction,
            label_smoothing
        )
    reduction = resolve_reduction(size_average, reduce, reduction)
    same_device(input, target, weight)
    axis = 0 if input.ndim == 1 else 1
    if input.shape == target.shape:  # PyTorch tells probabilities from class indices by the shape alone
        return _cross_entropy_probabilities(input, target, weight, ignore_index, reduction, label_smoothing, axis)
    _check_smoothing(label_smoothing)
    logp = log_softmax(input, axis)
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0.0:
        return loss
    if weight is not None and target.dtype == np.uint8:  # PyTorch gathers the smoothing's weights by the target
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
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



def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """The mean over classes (the last dim) of -(target log sigmoid(x) + (1 - target) log sigmoid(-x)), each
    class's term times its weight."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    if not input.ndim:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    losses = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        losses = losses * weight
    losses = losses.sum(input.ndim - 1) / input.shape[-1]  # the input's last dim, counted from the front as there
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not valid")
    return losses if reduction == "none" else losses.mean() if reduction == "mean" else losses.sum()


def _margin_rows(name: str, input: Tensor) -> tuple[int, int]:
    """The (samples, classes) of a margin loss's (N, C), (C,) or 0-d input (float16 only on CUDA: PyTorch's CPU
    kernels of the two margin losses have none)."""
    if input.dtype.kind != "f" or (input.dtype == np.float16 and input._device.type != "cuda"):
        raise NotImplementedError(f'"{name}" not implemented for \'{SCALAR_NAMES.get(input.dtype, input.dtype)}\'')
    if input.ndim > 2 or (input.ndim and input.shape[-1] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    return (input.shape[0] if input.ndim == 2 else 1), (input.shape[-1] if input.ndim else 1)


def _long_target(target: Tensor) -> Any:
    if target.dtype != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {SCALAR_NAMES.get(target.dtype, target.dtype)}")
    return target._data


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average: bool | None = None, reduce: bool | None = None,
                      reduction: str = "mean") -> Tensor:
    """Per sample, the mean over classes i other than the target y of weight[y] max(0, margin - x[y] + x[i])^p;
    the weight is a constant (PyTorch refuses one that requires grad)."""
    if autocast_state.get() is not None:
        return autocast_call(
            multi_margin_loss, "multi_margin_loss", input, target, p, margin, weight, size_average, reduce, reduction
        )
    reduction = resolve_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    same_device(input, target, weight)
    refuse_grad("multi_margin_loss", "weight", weight)
    rows, classes = _margin_rows("multi_margin_loss_cpu_kernel", input)
    if target.ndim > 1 or target.numel() != rows:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{rows}], but got {list(target.shape)}. "
                           f"Input has shape {list(input.shape)}.")
    if weight is not None and weight.shape != (classes,):
        raise RuntimeError(f"inconsistent weight size, expected {classes} but got {list(weight.shape)}")
    t = _long_target(target).reshape(rows, 1)
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {SCALAR_NAMES[input.dtype]} but found "
                           f"{SCALAR_NAMES.get(weight.dtype, weight.dtype)}")
    if ((t < 0) | (t >= classes)).any():
        raise RuntimeError("target out of range")
    xp, device = input._device.xp, input._device
    x = input.reshape(rows, classes)
    gaps = (margin - x.gather(1, Tensor(t, device=device)) + x).clamp_min(0)
    others = Tensor(xp.arange(classes) != t, device=device)
    gaps = where(others, gaps if p == 1 else gaps * gaps, 0.0)
    if weight is not None:
        gaps = gaps * weight._data[t]
    losses = gaps.sum(1) / classes
    if reduction == "none":
        return losses if input.ndim == 2 else losses.reshape(target.shape)
    return losses.sum() / (rows if reduction == "mean" and rows else 1)  # PyTorch's mean of no samples is 0


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Per sample, the sum over its target classes j (the target's entries up to the first -1) and its other
    classes i of max(0, 1 - (x[j] - x[i])), over the number of classes."""
    if autocast_state.get() is not None:
        return autocast_call(
            multilabel_margin_loss, "multilabel_margin_loss", input, target, size_average, reduce, reduction
        )
    reduction = resolve_reduction(size_average, reduce, reduction)
    same_device(input, target)
    rows, classes = _margin_rows("multilabel_margin_loss_forward_out_frame", input)
    if input.ndim == 2:
        fits = target.shape == (rows, classes)
    else:
        fits = target.ndim <= 1 and target.numel() == classes
    if not fits:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    t = _long_target(target).reshape(rows, classes)
    if ((t < -1) | (t >= classes)).any():
        raise RuntimeError("argument #2 'target' is out of range")
    xp, device = input._device.xp, input._device
    listed = xp.cumprod(t != -1, axis=1).astype(bool)  # the entries before each row's first -1
    safe = xp.where(listed, t, 0)
    is_target = ((safe[:, :, None] == xp.arange(classes)) & listed[:, :, None]).any(1)
    x = input.reshape(rows, classes)
    gaps = (1 - x.gather(1, Tensor(safe, device=device)).unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)
    pairs = Tensor(listed[:, :, None] & ~is_target[:, None, :], device=device)
    losses = where(pairs, gaps, 0.0).sum((1, 2)) / classes
    if reduction == "none":
        return losses if input.ndim == 2 else losses.reshape(())
    with np.errstate(invalid="ignore", divide="ignore"):  # a mean of no samples: nan (PyTorch's is undefined)
        return losses.sum() / (rows if reduction == "mean" else 1)
