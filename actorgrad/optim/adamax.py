"""Adamax: PyTorch's rule, Adam with the second moment replaced by an exponentially weighted infinity norm."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from actorgrad.devices import Device
from actorgrad.optim.adaptive import CountingOptimizer, counter, lerp_, next_step, zeros_state
from actorgrad.optim.options import check_adam_arguments, followed_gradient, number
from actorgrad.tensor import Tensor


class Adamax(CountingOptimizer):
    """m = b1 m + (1 - b1) g, u = max(b2 u, |g| + eps), then p -= lr / (1 - b1^t) * m / u."""

    _loaded_group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_adam_arguments(lr, eps, betas, weight_decay)
        defaults = dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
            differentiable=differentiable, capturable=capturable,
        )
        super().__init__(params, defaults)

    def _update(self, group: dict, param: Any, grad: Any, state: dict, device: Device) -> None:
        beta1, beta2 = map(number, group["betas"])
        if not state:
            state["step"] = counter()
            state["exp_avg"] = zeros_state(param, device)
            state["exp_inf"] = zeros_state(param, device)
        step = next_step(state)
        grad = followed_gradient(group, param, grad)
        exp_avg, exp_inf = state["exp_avg"]._data, state["exp_inf"]._data
        lerp_(exp_avg, grad, 1 - beta1)
        exp_inf *= beta2
        device.xp.maximum(exp_inf, device.xp.abs(grad) + group["eps"], out=exp_inf)
        step_size = number(group["lr"]) / (1 - beta1**step)
        param -= step_size * exp_avg / exp_inf
