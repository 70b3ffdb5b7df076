"""RMSprop: PyTorch's rule, plain or centered, with optional momentum, L2 weight decay and maximisation."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from actorgrad.devices import Device
from actorgrad.optim.adaptive import CountingOptimizer, counter, decay_square_, lerp_, next_step, zeros_state
from actorgrad.optim.options import check_non_negative, check_tensor_lr, followed_gradient, number
from actorgrad.tensor import Tensor


class RMSprop(CountingOptimizer):
    """v = alpha v + (1 - alpha) g^2, less the square of g's running mean when `centered`; then
    p -= lr g / (sqrt(v) + eps), or with momentum b = momentum b + g / (sqrt(v) + eps) and p -= lr b."""

    _loaded_group_defaults = dict(
        momentum=0, centered=False, foreach=None, maximize=False, differentiable=False, capturable=False,
    )

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        check_non_negative("learning rate", lr)
        check_non_negative("epsilon value", eps)
        check_non_negative("momentum value", momentum)
        check_non_negative("weight_decay value", weight_decay)
        check_non_negative("alpha value", alpha)
        defaults = dict(
            lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
            capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _update(self, group: dict, param: Any, grad: Any, state: dict, device: Device) -> None:
        alpha, momentum = group["alpha"], group["momentum"]
        if not state:
            state["step"] = counter()
            state["square_avg"] = zeros_state(param, device)
            if momentum > 0:
                state["momentum_buffer"] = zeros_state(param, device)
            if group["centered"]:
                state["grad_avg"] = zeros_state(param, device)
        next_step(state)
        grad = followed_gradient(group, param, grad)
        square_avg = state["square_avg"]._data
        decay_square_(square_avg, grad, alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]._data
            lerp_(grad_avg, grad, 1 - alpha)
            avg = device.xp.sqrt(square_avg - grad_avg * grad_avg)
        else:
            avg = device.xp.sqrt(square_avg)
        avg += group["eps"]
        lr = number(group["lr"])
        if momentum > 0:
            buffer = state["momentum_buffer"]._data
            buffer *= momentum
            buffer += grad / avg
            param -= lr * buffer
        else:
            param -= lr * grad / avg
