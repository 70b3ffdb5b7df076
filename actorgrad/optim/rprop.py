"""Rprop: PyTorch's resilient backpropagation, each element's step size grown or shrunk by the sign of its gradient
alone (Riedmiller and Braun, 1993)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from actorgrad.devices import Device
from actorgrad.optim.adaptive import CountingOptimizer, counter, next_step, zeros_state
from actorgrad.optim.options import check_non_negative, check_tensor_lr, number
from actorgrad.tensor import Tensor


class Rprop(CountingOptimizer):
    """s = sign(g * prev); step *= etaplus where s > 0, etaminus where s < 0, clamped into `step_sizes`; where the
    sign flipped the gradient counts as 0 (no move, and no flip seen next time); p -= sign(g) * step; prev = g.
    Each element's step starts at `lr`."""

    _loaded_group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        check_non_negative("learning rate", lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(
            lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
            differentiable=differentiable, capturable=capturable,
        )
        super().__init__(params, defaults)

    def _update(self, group: dict, param: Any, grad: Any, state: dict, device: Device) -> None:
        xp = device.xp
        etaminus, etaplus = group["etas"]
        if not state:
            state["step"] = counter()
            state["prev"] = zeros_state(param, device)
            state["step_size"] = Tensor(xp.full_like(grad, number(group["lr"])), device=device)
        next_step(state)
        if group["maximize"]:
            grad = -grad
        prev, step_size = state["prev"]._data, state["step_size"]._data
        sign = xp.sign(grad * prev)
        factor = xp.where(sign > 0, etaplus, xp.where(sign < 0, etaminus, xp.where(sign == 0, 1.0, sign)))
        factor = factor.astype(step_size.dtype, copy=False)
        step_size *= factor
        xp.clip(step_size, *group["step_sizes"], out=step_size)
        grad = xp.where(factor == etaminus, 0, grad).astype(grad.dtype, copy=False)
        param -= xp.sign(grad) * step_size
        prev[...] = grad
