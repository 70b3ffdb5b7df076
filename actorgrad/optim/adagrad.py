"""Adagrad: PyTorch's rule, each coordinate's step scaled by the root of its summed squared gradients."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from actorgrad.devices import Device
from actorgrad.optim.adaptive import CountingOptimizer, counter, next_step
from actorgrad.optim.options import check_fused_foreach, check_non_negative, check_tensor_lr, followed_gradient, number
from actorgrad.tensor import Tensor


class Adagrad(CountingOptimizer):
    """s += g^2, then p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps). As in PyTorch, every parameter of
    the constructor's groups gets its state (s = initial_accumulator_value) at once, and a parameter added later
    starts from the constructor's initial_accumulator_value whatever its group says."""

    _loaded_group_defaults = dict(foreach=None, maximize=False, differentiable=False, fused=None)

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_tensor_lr(lr)
        check_non_negative("learning rate", lr)
        check_non_negative("lr_decay value", lr_decay)
        check_non_negative("weight_decay value", weight_decay)
        check_non_negative("initial_accumulator_value value", initial_accumulator_value)
        check_non_negative("epsilon value", eps)
        defaults = dict(
            lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
            differentiable=differentiable, fused=fused,
        )
        super().__init__(params, defaults)
        check_fused_foreach(fused, foreach)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = self._fresh_state(p._data, p._device)

    def _fresh_state(self, param: Any, device: Device) -> dict:
        value = self.defaults["initial_accumulator_value"]
        if param.dtype.kind == "c":  # PyTorch starts both parts of a complex parameter's sum at the value
            value = complex(value, value)
        initial = device.xp.full_like(param, value)
        return {"step": counter(), "sum": Tensor(initial, device=device)}

    def _update(self, group: dict, param: Any, grad: Any, state: dict, device: Device) -> None:
        if not state:
            state.update(self._fresh_state(param, device))
        step = next_step(state)
        grad = followed_gradient(group, param, grad)
        decayed_lr = number(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
        state_sum = state["sum"]._data
        state_sum += grad * grad
        std = device.xp.sqrt(state_sum)
        std += group["eps"]
        param -= decayed_lr * grad / std
