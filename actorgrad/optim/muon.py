"""Muon (Jordan et al., 2024): momentum SGD for matrices whose step is the momentum orthogonalized by a few
Newton-Schulz iterations, so every direction of the update gets about the same size (PyTorch's torch.optim.Muon).

PyTorch runs the iterations in bfloat16, which actorgrad has no dtype for; they run here in float32 with every
intermediate rounded to bfloat16 where PyTorch's kernels round it (products accumulated in float32, then one
rounding), so the updates match PyTorch's to within a bfloat16 rounding of its summation order."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from actorgrad.devices import Device
from actorgrad.optim.adaptive import lerp_
from actorgrad.optim.optimizer import Optimizer
from actorgrad.optim.options import check_tensor_lr, number
from actorgrad.tensor import Tensor

# Keller Jordan's quintic coefficients (chosen for the steepest slope at zero), eps and step count: PyTorch's.
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
EPS = 1e-7
NS_STEPS = 5
ADJUST_LR_FNS = ("original", "match_rms_adamw")


class Muon(Optimizer):
    """For a 2-D parameter p with gradient g: buf = lerp(buf, g, 1 - momentum) (buf starts at 0), u = lerp(g, buf,
    momentum) with nesterov, else buf; O = NS(u); p *= 1 - lr * weight_decay; p -= lr * ratio * O, with ratio
    sqrt(max(1, rows / cols)) ("original", the default) or 0.2 * sqrt(max(rows, cols)) ("match_rms_adamw").
    NS(u) scales u to Frobenius norm 1 (at least eps) and repeats ns_steps times X = a X + (b A + c A A) X with
    A = X X^T, on the wide orientation of u (transposed when it has more rows than columns)."""

    _complex_error = "Muon does not support complex parameters"

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | Tensor = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = NS_COEFFICIENTS,
        eps: float = EPS,
        ns_steps: int = NS_STEPS,
        adjust_lr_fn: str | None = None,
    ) -> None:
        check_tensor_lr(lr)
        for what, value in (("Learning rate", number(lr)), ("momentum", momentum), ("weight decay", weight_decay)):
            if not 0.0 <= value:
                raise ValueError(f"{what} should be >= 0 but is: {value}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ADJUST_LR_FNS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(
            lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov, ns_coefficients=ns_coefficients,
            eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:  # as PyTorch, at construction only; a later group's are refused at its step
            for param in group["params"]:
                if param.ndim != 2:
                    raise ValueError(
                        f"Muon only supports 2D parameters whereas we found a parameter with size: {param.size()}"
                    )

    def _update(self, group: dict, param: Any, grad: Any, state: dict, device: Device) -> None:
        if grad.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        xp = device.xp
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = Tensor(xp.zeros_like(grad), device=device)
        buffer = state["momentum_buffer"]._data
        momentum = group["momentum"]
        lerp_(buffer, grad, 1 - momentum)
        if group["nesterov"]:
            update = grad.copy()
            lerp_(update, buffer, momentum)
        else:
            update = buffer
        update = orthogonalized(xp, update, group["ns_coefficients"], group["ns_steps"], group["eps"])
        lr = number(group["lr"])
        param *= 1 - lr * group["weight_decay"]
        param += -adjusted_lr(lr, group["adjust_lr_fn"], param.shape) * update.astype(param.dtype)


def adjusted_lr(lr: float, adjust_lr_fn: str | None, shape: tuple[int, ...]) -> float:
    """The learning rate scaled so orthogonalized updates of matrices of any shape have comparable RMS: Keller
    Jordan's sqrt(max(1, rows / cols)), or Moonshot's 0.2 * sqrt(max(rows, cols)), which matches AdamW's RMS."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


def orthogonalized(xp: Any, matrix: Any, coefficients: tuple[float, float, float], steps: int, eps: float) -> Any:
    """`ns_steps` quintic Newton-Schulz iterations towards U V^T of matrix = U S V^T, as PyTorch computes them in
    bfloat16 (values kept in float32, rounded to bfloat16 after each kernel); the result has bfloat16 values."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    x = bfloat16_rounded(xp, matrix)
    tall = x.shape[0] > x.shape[1]
    if tall:  # X X^T is the smaller Gram matrix
        x = x.T
    norm = bfloat16_rounded(xp, xp.sqrt(xp.sum(x * x)))
    x = bfloat16_rounded(xp, x / bfloat16_rounded(xp, xp.maximum(norm, xp.float32(eps))))
    for _ in range(steps):
        gram = bfloat16_rounded(xp, x @ x.T)
        gram_update = bfloat16_rounded(xp, b * gram + c * (gram @ gram))
        x = bfloat16_rounded(xp, a * x + gram_update @ x)
    return x.T if tall else x


def bfloat16_rounded(xp: Any, values: Any) -> Any:
    """`values` rounded to the nearest bfloat16 (ties to even; NaN stays NaN), as float32: bfloat16 is float32
    with the low 16 bits of the mantissa dropped. A float64 value is rounded to float32 first."""
    single = xp.ascontiguousarray(values, dtype=xp.float32).reshape(xp.shape(values))
    bits = single.view(xp.uint32)
    halfway = xp.bitwise_and(xp.right_shift(bits, 16), 1) + 0x7FFF  # 0x8000 rounds up to an odd low bit only
    rounded = xp.bitwise_and(bits + halfway, 0xFFFF0000).astype(xp.uint32).view(xp.float32)
    return xp.where(xp.isnan(single), single, rounded)
