"""Unary math ops (sqrt, rsqrt, sin, cos, abs, sign, log1p, expm1, square) and their gradient rules."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops.arithmetic import pow
from actorgrad.ops.operands import floating
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor, bool_

__all__ = ["abs", "cos", "expm1", "log1p", "rsqrt", "sign", "sin", "sqrt", "square"]

# Ops whose result is floating: an integer input gives the default float dtype, as in PyTorch.
FLOATING = {
    "sqrt": (Rule("SqrtBackward0", (("result",), lambda ops, g, result: g / (2 * result))), np.sqrt),
    "rsqrt": (
        Rule("RsqrtBackward0", (("result",), lambda ops, g, result: -0.5 * g * (result * result * result))),
        lambda x: 1 / np.sqrt(x),
    ),
    "sin": (Rule("SinBackward0", (("self",), lambda ops, g, self: g * ops.cos(self))), np.sin),
    "cos": (Rule("CosBackward0", (("self",), lambda ops, g, self: -g * ops.sin(self))), np.cos),
    "log1p": (Rule("Log1PBackward0", (("self",), lambda ops, g, self: g / (self + 1))), np.log1p),
    "expm1": (Rule("Expm1Backward0", (("result",), lambda ops, g, result: g * (result + 1))), np.expm1),
}
# abs' kink: the gradient at 0 is 0 (sign(0)), as in PyTorch.
ABS = Rule("AbsBackward0", (("self",), lambda ops, g, self: g * ops.sign(self)))
# sign is flat wherever it is differentiable; PyTorch still records a node, whose gradient is zeros.
SIGN = Rule("SignBackward0", ((), lambda ops, g: ops.zeros_like(g)))


def _floating(name: str, input: Tensor) -> Tensor:
    rule, kernel = FLOATING[name]
    x = input._data
    return record(rule, kernel(x.astype(floating(x.dtype), copy=False)), (input,))


def sqrt(input: Tensor) -> Tensor:
    return _floating("sqrt", input)


def rsqrt(input: Tensor) -> Tensor:
    """1 / sqrt(input)."""
    return _floating("rsqrt", input)


def sin(input: Tensor) -> Tensor:
    return _floating("sin", input)


def cos(input: Tensor) -> Tensor:
    return _floating("cos", input)


def log1p(input: Tensor) -> Tensor:
    """log(1 + input), accurate for small inputs."""
    return _floating("log1p", input)


def expm1(input: Tensor) -> Tensor:
    """exp(input) - 1, accurate for small inputs."""
    return _floating("expm1", input)


def abs(input: Tensor) -> Tensor:
    x = input._data
    if x.dtype == bool_:
        raise NotImplementedError("abs(): not implemented for bool tensors")
    return record(ABS, np.abs(x), (input,))


def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1; NaN gives 0, as in PyTorch."""
    x = input._data
    return record(SIGN, x.copy() if x.dtype == bool_ else np.nan_to_num(np.sign(x)), (input,))


def square(input: Tensor) -> Tensor:
    """input ** 2, recorded as PowBackward0 as in PyTorch."""
    return pow(input, 2)


METHODS: dict[str, Any] = {
    "sqrt": sqrt, "rsqrt": rsqrt, "sin": sin, "cos": cos, "log1p": log1p, "expm1": expm1,
    "abs": abs, "__abs__": abs, "sign": sign, "square": square,
}
