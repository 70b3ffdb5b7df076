"""Gradient clipping: scale every gradient by one factor so their joint norm is at most `max_norm`, or clamp
each gradient's elements. Gradients change in place, as in PyTorch, and no graph is recorded."""

from __future__ import annotations

import types
import warnings
from collections.abc import Iterable

from actorgrad.grad_mode import no_grad
from actorgrad.ops import clamp, norm, stack
from actorgrad.tensor import Tensor
from actorgrad.tensor_construction import tensor


def _as_list(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


@no_grad()
def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The `norm_type`-norm of all `tensors` taken as one vector: the norm of their norms (`foreach` only
    picks an implementation in PyTorch, so it is ignored)."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    first_device = tensors[0].device
    total = norm(stack([norm(t, norm_type).to(first_device) for t in tensors]), norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`"
        )
    return total


@no_grad()
def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Multiply each gradient by min(max_norm / (total_norm + 1e-6), 1); the factor is applied even when it is 1,
    as PyTorch does (no host sync on a device)."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    coef = clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
    for grad in grads:
        grad.mul_(coef.to(grad.device))


@no_grad()
def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Scale the gradients of `parameters` so their joint `norm_type`-norm (inf allowed) is at most `max_norm`;
    returns the norm they had before."""
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = _as_list(parameters)  # a generator is read once
    if is_generator and not parameters:
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Deprecated, as in PyTorch: `clip_grad_norm_` under its old name."""
    warnings.warn("`actorgrad.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`actorgrad.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@no_grad()
def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    for param in _as_list(parameters):
        if param.grad is not None:
            param.grad.clamp_(min=-clip_value, max=clip_value)
