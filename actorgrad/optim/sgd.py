"""SGD with optional momentum, dampening, Nesterov momentum, L2 weight decay and maximisation (PyTorch's rule)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from actorgrad.devices import Device
from actorgrad.optim.optimizer import Optimizer
from actorgrad.optim.options import check_fused_foreach, check_tensor_lr, number
from actorgrad.tensor import Tensor


class SGD(Optimizer):
    """g = grad (+ weight_decay * p); with momentum, buf = momentum * buf + (1 - dampening) * g (buf = g on the
    first step) and g = buf, or g + momentum * buf with Nesterov; then p -= lr * g."""

    _loaded_group_defaults = dict(nesterov=False, maximize=False, foreach=None, differentiable=False, fused=False)

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float | Tensor = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_tensor_lr(lr)
        # PyTorch's SGD checks `value < 0`, so (unlike the other optimizers) it takes a NaN.
        for name, value in (("learning rate", lr), ("momentum value", momentum), ("weight_decay value", weight_decay)):
            if number(value) < 0.0:
                raise ValueError(f"Invalid {name}: {number(value)}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(
            lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
            maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused,
        )
        super().__init__(params, defaults)
        check_fused_foreach(fused, foreach)

    def _update(self, group: dict, param: Any, grad: Any, state: dict, device: Device) -> None:
        step = -grad if group["maximize"] else grad
        decay = number(group["weight_decay"])  # a Tensor in PyTorch's signature too
        if decay:
            step = step + decay * param
        momentum = group["momentum"]
        if momentum:
            buffer = state.get("momentum_buffer")
            if buffer is None:
                buffer = state["momentum_buffer"] = Tensor(step.astype(param.dtype), device=device)
            else:
                buffer._data *= momentum
                buffer._data += (1 - group["dampening"]) * step
            step = step + momentum * buffer._data if group["nesterov"] else buffer._data
        param -= number(group["lr"]) * step
