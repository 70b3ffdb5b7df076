"""NAdam: PyTorch's rule, Adam with Nesterov momentum and a momentum schedule (Dozat, 2016)."""

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
from actorgrad.optim.options import check_adam_arguments, check_non_negative, followed_gradient, number
from actorgrad.tensor import Tensor


class NAdam(CountingOptimizer):
    """mu_t = b1 (1 - 0.96^(t momentum_decay) / 2); m and v as in Adam; then
    p -= lr (1 - mu_t) / (1 - prod mu) g / d + lr mu_{t+1} / (1 - prod mu * mu_{t+1}) m / d, d = sqrt(v / (1 - b2^t))
    + eps. The running product of mu is a 0-d CPU tensor of the default float dtype (`mu_product`), as PyTorch
    keeps it."""

    _counters = ("step", "mu_product")
    _loaded_group_defaults = dict(
        maximize=False, foreach=None, capturable=False, differentiable=False, decoupled_weight_decay=False,
    )

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_adam_arguments(lr, eps, betas, weight_decay)
        check_non_negative("momentum_decay value", momentum_decay)
        defaults = dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach, capturable=capturable,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _update(self, group: dict, param: Any, grad: Any, state: dict, device: Device) -> None:
        lr, momentum_decay = number(group["lr"]), group["momentum_decay"]
        beta1, beta2 = map(number, group["betas"])
        if not state:
            state["step"] = counter()
            state["mu_product"] = counter(1.0)
            state["exp_avg"] = zeros_state(param, device)
            state["exp_avg_sq"] = zeros_state(param, device)
        step = next_step(state)
        bias_correction2 = 1 - beta2**step
        grad = followed_gradient(group, param, grad)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        state["mu_product"]._data *= mu
        mu_product = state["mu_product"].item()
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
        lerp_(exp_avg, grad, 1 - beta1)
        decay_square_(exp_avg_sq, grad, beta2)
        denom = device.xp.sqrt(exp_avg_sq / bias_correction2)
        denom += group["eps"]
        param += (-lr * (1.0 - mu) / (1.0 - mu_product)) * grad / denom
        param += ((-lr * mu_next) / (1.0 - mu_product * mu_next)) * exp_avg / denom
