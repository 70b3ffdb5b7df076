"""Adadelta: PyTorch's rule, each step's size the ratio of running roots of past updates and past gradients."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from actorgrad.devices import Device
from actorgrad.optim.adaptive import CountingOptimizer, counter, decay_square_, next_step, zeros_state
from actorgrad.optim.options import check_non_negative, check_tensor_lr, followed_gradient, number
from actorgrad.tensor import Tensor


class Adadelta(CountingOptimizer):
    """v = rho v + (1 - rho) g^2, d = sqrt(u + eps) / sqrt(v + eps) * g, u = rho u + (1 - rho) d^2, p -= lr d."""

    _loaded_group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        check_non_negative("learning rate", lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_non_negative("epsilon value", eps)
        check_non_negative("weight_decay value", weight_decay)
        defaults = dict(
            lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
            foreach=foreach, differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _update(self, group: dict, param: Any, grad: Any, state: dict, device: Device) -> None:
        rho, eps = group["rho"], group["eps"]
        if not state:
            state["step"] = counter()
            state["square_avg"] = zeros_state(param, device)
            state["acc_delta"] = zeros_state(param, device)
        next_step(state)
        grad = followed_gradient(group, param, grad)
        square_avg, acc_delta = state["square_avg"]._data, state["acc_delta"]._data
        decay_square_(square_avg, grad, rho)
        std = device.xp.sqrt(square_avg + eps)
        delta = device.xp.sqrt(acc_delta + eps)
        delta /= std
        delta *= grad
        decay_square_(acc_delta, delta, rho)
        param -= number(group["lr"]) * delta
