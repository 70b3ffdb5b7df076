"""Adafactor: PyTorch's rule (Shazeer and Stern, 2018), Adam-like steps whose second moment of a matrix is kept
factored, as one running average per row and one per column, so its state grows with rows + columns."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from actorgrad.devices import Device
from actorgrad.optim.adaptive import CountingOptimizer, counter, lerp_, next_step, zeros_state
from actorgrad.optim.options import check_tensor_lr, number
from actorgrad.tensor import Tensor


def _check_at_least(what: str, value: float, bound: float) -> None:
    """Adafactor's own checks read `... should be >= 0 but is: -1` rather than the other optimizers' `Invalid ...`."""
    if not bound <= value:
        raise ValueError(f"{what} should be >= {bound:g} but is: {value}")


class Adafactor(CountingOptimizer):
    """With t the step, beta2 term b = t^beta2_decay, rho = min(lr, 1/sqrt(t)) and alpha = max(eps2, rms(p)) * rho:
    p *= 1 - lr * weight_decay; a matrix (over its last two dims) keeps row and column means of g^2, each
    lerped towards the new ones by b, and estimates v = row @ col / max(mean(row), eps1); a vector keeps v itself.
    u = g / sqrt(max(v, eps1^2)); p -= alpha / max(1, rms(u) / d) * u. eps1 None is the dtype's epsilon."""

    _loaded_group_defaults = dict(foreach=None)
    _complex_error = "Adafactor does not support complex parameters"

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        _check_at_least("Learning rate", number(lr), 0)
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None:
            _check_at_least("epsilon1", eps[0], 0)
        _check_at_least("epsilon2", eps[1], 0)
        _check_at_least("Clipping threshold d", d, 1)
        _check_at_least("weight_decay", weight_decay, 0)
        defaults = dict(
            lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _update(self, group: dict, param: Any, grad: Any, state: dict, device: Device) -> None:
        xp = device.xp
        lr = number(group["lr"])
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = float(np.finfo(param.dtype).eps)
        if not state:
            state["step"] = counter()
            if grad.ndim > 1:
                state["row_var"] = Tensor(xp.zeros((*grad.shape[:-1], 1), grad.dtype), device=device)
                state["col_var"] = Tensor(xp.zeros((*grad.shape[:-2], 1, grad.shape[-1]), grad.dtype), device=device)
            else:
                state["variance"] = zeros_state(grad, device)
        if group["maximize"]:
            grad = -grad
        step = next_step(state)
        beta2_term = step ** group["beta2_decay"]
        rho = min(lr, 1 / step**0.5)
        alpha = max(eps2, float(xp.sqrt(xp.sum(param * param))) / param.size**0.5) * rho
        decay = number(group["weight_decay"])
        if decay:
            param *= 1 - lr * decay
        if grad.ndim > 1:
            row_var, col_var = state["row_var"]._data, state["col_var"]._data
            lerp_(row_var, _mean_square(xp, grad, -1), beta2_term)
            lerp_(col_var, _mean_square(xp, grad, -2), beta2_term)
            variance = xp.matmul(row_var, col_var)
            variance /= xp.maximum(xp.mean(row_var, axis=-2, keepdims=True), eps1)
        else:
            variance = state["variance"]._data
            lerp_(variance, grad * grad, beta2_term)
            variance = variance.copy()
        update = 1 / xp.sqrt(xp.maximum(variance, eps1 * eps1))
        update *= grad
        denom = max(1.0, float(xp.sqrt(xp.sum(update * update))) / (update.size**0.5 * group["d"]))
        param -= (alpha / denom) * update


def _mean_square(xp: Any, grad: Any, axis: int) -> Any:
    """The mean of g^2 along `axis` (kept), as PyTorch computes it: the squared norm over the length."""
    norm = xp.sqrt(xp.sum(grad * grad, axis=axis, keepdims=True))
    return norm * norm / grad.shape[axis]

