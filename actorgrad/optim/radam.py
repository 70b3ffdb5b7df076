"""RAdam: PyTorch's rule, Adam whose adaptive step is rectified for the variance of its early estimates."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from actorgrad.devices import Device
from actorgrad.optim.adaptive import (
    CountingOptimizer,
    counter,
    decay_square_,
    lerp_,
    next_step,
    zeros_state,
)
from actorgrad.optim.options import check_adam_arguments, followed_gradient, number
from actorgrad.tensor import Tensor


class RAdam(CountingOptimizer):
    """m and v as in Adam; rho_t = rho_inf - 2 t b2^t / (1 - b2^t) with rho_inf = 2 / (1 - b2) - 1. While
    rho_t <= 5 the step is plain momentum, p -= lr m / (1 - b1^t); after, it is scaled by sqrt(1 - b2^t) /
    (sqrt(v) + eps) and the rectification sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))."""

    _loaded_group_defaults = dict(
        foreach=None, maximize=False, differentiable=False, decoupled_weight_decay=False, capturable=False,
    )

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_adam_arguments(lr, eps, betas, weight_decay)
        defaults = dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
            capturable=capturable, decoupled_weight_decay=decoupled_weight_decay, differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _update(self, group: dict, param: Any, grad: Any, state: dict, device: Device) -> None:
        lr = number(group["lr"])
        beta1, beta2 = map(number, group["betas"])
        if not state:
            state["step"] = counter()
            state["exp_avg"] = zeros_state(param, device)
            state["exp_avg_sq"] = zeros_state(param, device)
        step = next_step(state)
        grad = followed_gradient(group, param, grad)
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
        lerp_(exp_avg, grad, 1 - beta1)
        decay_square_(exp_avg_sq, grad, beta2)
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        corrected_exp_avg = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            # PyTorch divides a number by a tensor as the tensor's reciprocal times the number.
            adaptive_lr = 1 / (device.xp.sqrt(exp_avg_sq) + group["eps"]) * bias_correction2**0.5
            param -= corrected_exp_avg * lr * adaptive_lr * rect
        else:
            param -= corrected_exp_avg * lr
