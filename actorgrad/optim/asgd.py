"""ASGD: PyTorch's averaged stochastic gradient descent (Polyak and Juditsky, 1992), SGD whose step size decays
and which keeps a running average `ax` of the parameter from step `t0` on."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from actorgrad.default_dtype import default_float
from actorgrad.devices import Device
from actorgrad.optim.adaptive import CountingOptimizer, next_step, zeros_state
from actorgrad.optim.options import check_non_negative, check_tensor_lr, number
from actorgrad.tensor import Tensor


def _scalar(value: float, device: Device) -> Tensor:
    """A 0-d tensor of the default float dtype on the parameter's device: ASGD keeps `step`, `eta` and `mu` there,
    as PyTorch does."""
    return Tensor(device.asarray(np.array(value, default_float())), device=device)


class ASGD(CountingOptimizer):
    """g (+ weight_decay * p); p *= 1 - lambd * eta; p -= eta * g; ax = p while mu is 1, else ax += mu (p - ax);
    then eta = lr / (1 + lambd * lr * t)^alpha and mu = 1 / max(1, t - t0). `eta` and `mu` have the default float
    dtype, as in PyTorch, so the step uses eta rounded to it."""

    _counters = ("step", "eta", "mu")
    _loaded_group_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_tensor_lr(lr)
        check_non_negative("learning rate", lr)
        check_non_negative("weight_decay value", weight_decay)
        defaults = dict(
            lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
            differentiable=differentiable, capturable=capturable,
        )
        super().__init__(params, defaults)

    def _update(self, group: dict, param: Any, grad: Any, state: dict, device: Device) -> None:
        lr, lambd = number(group["lr"]), group["lambd"]
        if not state:
            state["step"] = _scalar(0.0, device)
            state["eta"] = _scalar(lr, device)
            state["mu"] = _scalar(1.0, device)
            state["ax"] = zeros_state(param, device)
        step = next_step(state)
        if group["maximize"]:
            grad = -grad
        decay = number(group["weight_decay"])
        if decay:
            grad = grad + decay * param
        eta = state["eta"].item()
        param *= 1 - lambd * eta
        param -= eta * grad
        ax, mu = state["ax"]._data, state["mu"].item()
        if mu != 1:
            ax += (param - ax) * mu
        else:
            ax[...] = param
        # Rounded as PyTorch's `torch.as_tensor` of the Python number rounds them, also where a state dict loaded
        # for a float64 parameter made `eta` and `mu` float64; a floating-point Tensor lr makes `eta` a Tensor of its
        # dtype (an integer one divides to the default float dtype, not truncated).
        rounded = default_float().type
        lr_option = group["lr"]
        tensor_lr = isinstance(lr_option, Tensor) and lr_option.is_floating_point()
        eta_dtype = lr_option._data.dtype.type if tensor_lr else rounded
        state["eta"]._data[...] = eta_dtype(lr / ((1 + lambd * lr * step) ** group["alpha"]))
        state["mu"]._data[...] = rounded(1 / max(1, step - group["t0"]))
