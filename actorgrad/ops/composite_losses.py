"""The losses PyTorch composes from tensor ops in Python, composed here the same way (their gradients and nodes
come from those ops): the margin and embedding losses (margin_ranking, hinge_embedding, soft_margin,
cosine_embedding, triplet_margin with a p-norm or any distance) and the likelihood losses (poisson_nll,
gaussian_nll)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.grad_mode import no_grad
from actorgrad.ops.distances import pairwise_distance
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.loss_arguments import (
    REDUCTIONS,
    broadcast_into,
    check_reduction,
    legacy_reduction,
    reduce_losses,
    refuse_grad,
    resolve_reduction,
)
from actorgrad.ops.operands import SCALAR_NAMES, require_tensors, result_type, type_name
from actorgrad.ops.selection import minimum, where
from actorgrad.tensor import Tensor


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, -target (input1 - input2) + margin) per element."""
    if autocast_state.get() is not None:
        return autocast_call(
            margin_ranking_loss, "margin_ranking_loss", input1, input2, target, margin, size_average, reduce, reduction
        )
    reduction = resolve_reduction(size_average, reduce, reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    # margin is a float, as in PyTorch's signature: integer inputs give a loss of the default float dtype
    return reduce_losses((-target * (input1 - input2) + float(margin)).clamp_min(0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """input where target is 1, max(0, margin - input) where it is -1 (and their sum for any other target)."""
    if autocast_state.get() is not None:
        return autocast_call(
            hinge_embedding_loss, "hinge_embedding_loss", input, target, margin, size_average, reduce, reduction
        )
    reduction = resolve_reduction(size_average, reduce, reduction)
    # PyTorch fills the margin into a tensor like the input: an integer input truncates it and keeps its dtype
    margins = Tensor(input._device.xp.full(input.shape, margin, input.dtype), device=input._device)
    below_margin = where(target != 1, (margins - input).clamp_min(0), 0)
    return reduce_losses(below_margin + where(target != -1, input, 0), reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """log(1 + exp(-target input)) per element, in the input's shape and dtype; the target is a constant."""
    if autocast_state.get() is not None:
        return autocast_call(soft_margin_loss, "soft_margin_loss", input, target, size_average, reduce, reduction)
    reduction = resolve_reduction(size_average, reduce, reduction)
    refuse_grad("soft_margin_loss", "target", target)
    dtype = result_type(input, target)
    if input.dtype.kind != "f" or dtype.kind == "c":  # a complex target too: its loss cannot be cast into the input's
        raise RuntimeError(f"result type {SCALAR_NAMES[dtype] if dtype.kind in 'fc' else 'Float'} can't be cast to "
                           f"the desired output type {SCALAR_NAMES.get(input.dtype, input.dtype)}")
    broadcast_into(input.shape, target.shape)
    return reduce_losses((-input * target.to(input.dtype)).exp().log1p(), reduction)


EPSILON_COSINE = 1e-12  # PyTorch's cosine_embedding_loss adds it to each squared magnitude


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1, 0 elsewhere; rows of
    (N, D) inputs with an (N,) target, or (D,) vectors with a 0-d one."""
    if autocast_state.get() is not None:
        return autocast_call(
            cosine_embedding_loss, "cosine_embedding_loss", input1, input2, target, margin, size_average, reduce,
            reduction
        )
    reduction = resolve_reduction(size_average, reduce, reduction)
    dim = target.ndim
    if dim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.ndim != dim + 1 or input2.ndim != dim + 1:
        raise RuntimeError(f"{dim}D target tensor expects {dim + 1}D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    products = (input1 * input2).sum(dim)
    magnitudes = ((input1 * input1).sum(dim) + EPSILON_COSINE) * ((input2 * input2).sum(dim) + EPSILON_COSINE)
    cos = products / magnitudes.sqrt()
    target = target.detach()
    losses = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return reduce_losses(losses, reduction)


def _check_triplet(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float) -> None:
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")


def _triplet(distance: Any, anchor: Tensor, positive: Tensor, negative: Tensor, margin: float, swap: bool,
             reduction: str) -> Tensor:
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), the latter d's minimum with
    d(positive, negative) when swap."""
    to_negative = distance(anchor, negative)
    if swap:
        to_negative = minimum(to_negative, distance(positive, negative))
    return reduce_losses((margin + distance(anchor, positive) - to_negative).clamp_min(0), reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    if swap.__class__ is not bool:
        raise not_bool("triplet_margin_loss", "swap", swap, 7)
    if autocast_state.get() is not None:
        return autocast_call(
            triplet_margin_loss, "triplet_margin_loss", anchor, positive, negative, margin, p, eps, swap, size_average,
            reduce, reduction
        )
    reduction = resolve_reduction(size_average, reduce, reduction)
    _check_triplet(anchor, positive, negative, margin)
    return _triplet(lambda a, b: pairwise_distance(a, b, p, eps), anchor, positive, negative, margin, swap,
                    reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """triplet_margin_loss with any distance (pairwise_distance by default)."""
    check_reduction(reduction)
    _check_triplet(anchor, positive, negative, margin)
    return _triplet(distance_function or pairwise_distance, anchor, positive, negative, margin, swap, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """exp(input) - target input on log rates, input - target log(input + eps) on rates; `full` adds Stirling's
    approximation of log(target!) where target > 1."""
    if log_input.__class__ is not bool:
        raise not_bool("poisson_nll_loss", "log_input", log_input, 3)
    if full.__class__ is not bool:
        raise not_bool("poisson_nll_loss", "full", full, 4)
    if autocast_state.get() is not None:
        return autocast_call(
            poisson_nll_loss, "poisson_nll_loss", input, target, log_input, full, size_average, eps, reduce, reduction
        )
    require_tensors("poisson_nll_loss", input=input, target=target)  # PyTorch's is an op: no numbers
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    check_reduction(reduction)  # in Python, before PyTorch's kernel: no 'elementwise_mean'
    losses = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        with np.errstate(invalid="ignore", divide="ignore"):  # targets <= 1 are masked out below
            stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        losses = losses + where(target <= 1, 0.0, stirling)
    return reduce_losses(losses, reduction)


def _homoscedastic_var(input: Tensor, var: Tensor) -> Tensor:
    """var laid against the input: its own shape, the input's without the last dim (one variance per row), or
    the input's with one dim of size 1."""
    if var.shape == input.shape:
        return var
    if var.shape == input.shape[:-1]:
        return var.unsqueeze(-1)
    if var.ndim == input.ndim and sum(v for x, v in zip(input.shape, var.shape) if x != v) == 1:
        return var
    raise ValueError("var is of incorrect size")


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """(log var + (input - target)² / var) / 2, plus log(2 pi) / 2 when `full`. var is kept at eps or above
    without stopping its gradient (PyTorch clamps a clone of it without recording)."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * input.detach().new_ones(input.shape)
    elif not isinstance(var, Tensor):  # PyTorch fails in torch.any, with a TypeError that names no argument
        raise TypeError(f"gaussian_nll_loss(): argument 'var' (position 3) must be Tensor or float, not "
                        f"{type_name(var)}")
    elif bool((var._data < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = _homoscedastic_var(input, var)
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    losses = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        losses = losses + 0.5 * math.log(2 * math.pi)
    return reduce_losses(losses, reduction)

