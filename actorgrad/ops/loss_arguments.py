"""The arguments every loss checks alike: the reduction (or PyTorch's deprecated size_average and reduce, which
pick one), the weights PyTorch's kernels refuse to differentiate and the shapes that must broadcast; and the
reduction of losses composed of tensor ops."""

from __future__ import annotations

import math

import numpy as np

from actorgrad.grad_mode import is_grad_enabled
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

REDUCTIONS = ("none", "mean", "sum")


def legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    """The reduction the deprecated size_average / reduce pick, with PyTorch's warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.")
    return reduction


def check_reduction(reduction: str, allowed: tuple = REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def kernel_reduction(reduction: str, allowed: tuple = REDUCTIONS) -> str:
    """The reduction of a loss PyTorch runs as one kernel: its _Reduction.get_enum also takes the deprecated
    'elementwise_mean' (old scripts' name for 'mean'), with a warning; the losses PyTorch composes in Python
    check the name themselves and refuse it."""
    if reduction == "elementwise_mean":
        warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.")
        return "mean"
    check_reduction(reduction, allowed)
    return reduction


def resolve_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """The reduction a kernel loss runs with: the deprecated size_average / reduce, when given, override
    `reduction`."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    return kernel_reduction(reduction)


def refuse_grad(function: str, name: str, t: Tensor | None) -> None:
    """PyTorch's kernel has no derivative for this argument, so it refuses one that requires grad (in grad mode)
    rather than leave it silently without a gradient."""
    if t is not None and t.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{function}' is not differentiable with respect to argument '{name}'. "
                           "This input cannot have requires_grad True.")


def reduce_losses(losses: Tensor, reduction: str) -> Tensor:
    """PyTorch's apply_loss_reduction on a tensor of losses; the mean of no elements is nan, silently."""
    if reduction == "sum":
        return losses.sum()
    if reduction == "mean":
        return losses.mean() if losses.numel() else losses.sum() * math.nan
    return losses


def size_mismatch(a: tuple, b: tuple) -> RuntimeError:
    """PyTorch's error for shapes that do not broadcast, naming the last dim where they differ."""
    ndim = max(len(a), len(b))
    a, b = (1,) * (ndim - len(a)) + a, (1,) * (ndim - len(b)) + b
    d = next(d for d in reversed(range(ndim)) if a[d] != b[d] and 1 not in (a[d], b[d]))
    return RuntimeError(f"The size of tensor a ({a[d]}) must match the size of tensor b ({b[d]}) at non-singleton "
                        f"dimension {d}")


def broadcast_into(out: tuple, operand: tuple, a_is_out: bool = True) -> None:
    """PyTorch's errors for an operand combined in place into an array of shape `out`: it must broadcast to it
    and not grow it."""
    try:
        shape = np.broadcast_shapes(out, operand)
    except ValueError:
        raise (size_mismatch(out, operand) if a_is_out else size_mismatch(operand, out)) from None
    if shape != out:
        raise RuntimeError(f"output with shape {list(out)} doesn't match the broadcast shape {list(shape)}")
