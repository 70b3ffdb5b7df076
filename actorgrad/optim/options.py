"""The option checks and readings the optimizers share: PyTorch's constructor checks (with its messages), the
refusal of options actorgrad cannot honour, the gradient an update follows, and a Tensor option read as a number."""

from __future__ import annotations

from typing import Any

from actorgrad.tensor import Tensor


def check_honoured_options(group: dict) -> None:
    """Refuse PyTorch options whose promise actorgrad cannot keep, rather than silently ignore them. `foreach` and
    `fused` only pick an implementation, so they are taken (the same update runs), with PyTorch's checks of
    `fused`."""
    if group.get("fused") and group.get("differentiable"):
        raise RuntimeError("`fused` does not support `differentiable`")
    for name in ("capturable", "differentiable"):
        if group.get(name):
            raise ValueError(
                f"actorgrad's optimizers do not support {name}={group[name]!r}; leave {name} at its default (False)"
            )


def check_fused_foreach(fused: bool | None, foreach: bool | None) -> None:
    """PyTorch's constructor check of its `fused` and `foreach` arguments (a group's own options are not checked:
    there `fused` wins)."""
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def check_fused_params(group: dict) -> None:
    """PyTorch's check, at the step, that a `fused` group updates only real floating-point parameters."""
    if group.get("fused"):
        for param in group["params"]:
            if param.grad is not None and not param.is_floating_point():
                raise RuntimeError(
                    "`fused=True` requires all the params to be floating point Tensors of supported devices: "
                    f"['cpu', 'cuda'] but {param.dtype} and {param.device.type}"
                )


def check_non_negative(name: str, value: float | Tensor) -> None:
    """PyTorch's option checks: `Invalid learning rate: -0.1`."""
    if not number(value) >= 0.0:
        raise ValueError(f"Invalid {name}: {number(value)}")


def check_tensor_lr(lr: float | Tensor) -> None:
    """A learning rate may be a Tensor of one element, as in PyTorch (a scheduler can then change it in place)."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")


def check_betas(betas: tuple[float | Tensor, float | Tensor]) -> None:
    """PyTorch's check, `Invalid beta parameter at index 1: 1.0` (a betas of another length fails here too, at
    index 1 or on indexing, as in PyTorch)."""
    for i in (0, 1):
        if not 0.0 <= number(betas[i]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {number(betas[i])}")


def followed_gradient(group: dict, param: Any, grad: Any) -> Any:
    """The gradient an update follows, as PyTorch's optimizers take it: negated for `maximize`, with the weight
    decay added to it (L2), or, for `decoupled_weight_decay`, applied to the parameter now (p *= 1 - lr * decay)."""
    if group["maximize"]:
        grad = -grad
    decay = number(group["weight_decay"])
    if decay and group.get("decoupled_weight_decay"):
        param *= 1 - number(group["lr"]) * decay
    elif decay:
        grad = grad + decay * param
    return grad


def check_adam_arguments(lr: float | Tensor, eps: float, betas: tuple, weight_decay: float) -> None:
    """The checks Adam and its variants (Adamax, NAdam, RAdam) make first, in PyTorch's order."""
    check_tensor_lr(lr)
    check_non_negative("learning rate", lr)
    check_non_negative("epsilon value", eps)
    check_betas(betas)
    check_non_negative("weight_decay value", weight_decay)


def number(value: float | Tensor) -> float:
    """An option's value as a Python number: a one-element Tensor option is read at each step."""
    return value.item() if isinstance(value, Tensor) else value
