"""Adam and AdamW: PyTorch's rules, with L2 weight decay folded into the gradient (Adam) or decoupled (AdamW)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from actorgrad.default_dtype import default_float
from actorgrad.devices import Device
from actorgrad.optim.optimizer import Optimizer
from actorgrad.optim.options import check_adam_arguments, check_fused_foreach, followed_gradient, number
from actorgrad.tensor import Tensor


class Adam(Optimizer):
    """m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2 (v_max = max(v_max, v) with amsgrad), then
    p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps); `decoupled_weight_decay` makes it AdamW.
    The step count t is a 0-d tensor of the default float dtype on the CPU, as PyTorch keeps it."""

    _loaded_group_defaults = dict(
        amsgrad=False, maximize=False, foreach=None, capturable=False, differentiable=False,
        decoupled_weight_decay=False, fused=None,
    )

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-3,
        betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        if isinstance(lr, Tensor) and foreach and not capturable:  # PyTorch's first check, for its foreach kernels
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        check_adam_arguments(lr, eps, betas, weight_decay)
        if not (all(isinstance(b, float) for b in betas[:2]) or all(isinstance(b, Tensor) for b in betas[:2])):
            raise ValueError("betas must be either both floats or both Tensors")
        for i in (0, 1):
            if isinstance(betas[i], Tensor) and foreach and not capturable:
                raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
            if isinstance(betas[i], Tensor) and betas[i].numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
        defaults = dict(
            lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
            foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        super().__init__(params, defaults)
        check_fused_foreach(fused, foreach)

    def _update(self, group: dict, param: Any, grad: Any, state: dict, device: Device) -> None:
        if group["foreach"] and not group["capturable"]:  # a group added later: PyTorch's foreach kernel's checks
            if isinstance(group["lr"], Tensor):
                raise RuntimeError("lr as a Tensor is not supported for capturable=False and foreach=True")
            for i in (0, 1):
                if isinstance(group["betas"][i], Tensor) and not group.get("fused"):  # else the fused kernel runs
                    raise ValueError(f"beta{i + 1} as a Tensor is not supported for capturable=False and foreach=True")
        lr = number(group["lr"])
        beta1, beta2 = map(number, group["betas"])
        if not state:
            state["step"] = Tensor(np.zeros((), default_float()))
            state["exp_avg"] = Tensor(device.xp.zeros_like(param), device=device)
            state["exp_avg_sq"] = Tensor(device.xp.zeros_like(param), device=device)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = Tensor(device.xp.zeros_like(param), device=device)
        state["step"]._data += 1
        step = state["step"].item()
        grad = followed_gradient(group, param, grad)
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
        exp_avg += (1 - beta1) * (grad - exp_avg)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad
        if group["amsgrad"]:
            second_moment = state["max_exp_avg_sq"]._data
            device.xp.maximum(second_moment, exp_avg_sq, out=second_moment)
        else:
            second_moment = exp_avg_sq
        step_size = lr / (1 - beta1**step)
        denom = device.xp.sqrt(second_moment) / math.sqrt(1 - beta2**step) + group["eps"]
        param -= step_size * exp_avg / denom


    def _fill_loaded(self) -> None:
        """A step saved as a number (by an older version) becomes a tensor."""
        super()._fill_loaded()
        for state in self.state.values():
            if "step" in state and not isinstance(state["step"], Tensor):
                state["step"] = Tensor(np.array(float(state["step"]), default_float()))


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr * weight_decay before the Adam step (Loshchilov and
    Hutter, 2019)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-3,
        betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
            capturable=capturable, differentiable=differentiable, fused=fused, decoupled_weight_decay=True,
        )

    def _fill_loaded(self) -> None:
        """Weight decay stays decoupled whatever the saved groups say (as PyTorch's)."""
        super()._fill_loaded()
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
