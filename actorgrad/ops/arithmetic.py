"""Elementwise ops and their gradient rules, one table row each.

Binary rules undo broadcasting with `ops.sum_to`, the one shared helper for it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.ops.record import Rule, as_tensor_operand, record
from actorgrad.tensor import Tensor

__all__ = ["add", "div", "exp", "log", "mul", "neg", "pow", "relu", "sigmoid", "sub", "tanh"]

ADD = Rule("AddBackward0", ((), None), ((), None), broadcasts=True)
SUB = Rule("SubBackward0", ((), None), ((), lambda ops, g: -g), broadcasts=True)
MUL = Rule(
    "MulBackward0",
    (("other",), lambda ops, g, other: g * other),
    (("self",), lambda ops, g, self: g * self),
    broadcasts=True,
)
DIV = Rule(
    "DivBackward0",
    (("other",), lambda ops, g, other: g / other),
    (("self", "other"), lambda ops, g, self, other: -g * self / (other * other)),
    broadcasts=True,
)
POW = Rule(
    "PowBackward1",
    (("self", "other"), lambda ops, g, self, other: g * other * self ** (other - 1)),
    (("self", "result"), lambda ops, g, self, result: g * result * ops.log(self)),
    broadcasts=True,
)
_BINARY = {
    "add": (ADD, np.add),
    "sub": (SUB, np.subtract),
    "mul": (MUL, np.multiply),
    "div": (DIV, np.divide),
    "pow": (POW, np.power),
}

POW_SCALAR = Rule(
    "PowBackward0",
    (
        ("self", "exponent"),
        lambda ops, g, self, exponent: ops.zeros_like(g) if exponent == 0 else g * exponent * self ** (exponent - 1),
    ),
)
RPOW_SCALAR = Rule("PowBackward2", (("result", "base"), lambda ops, g, result, base: g * result * math.log(base)))
RSUB_SCALAR = Rule("RsubBackward1", ((), lambda ops, g: -g))

UNARY = {
    "neg": (Rule("NegBackward0", ((), lambda ops, g: -g)), np.negative),
    "exp": (Rule("ExpBackward0", (("result",), lambda ops, g, result: g * result)), np.exp),
    "log": (Rule("LogBackward0", (("self",), lambda ops, g, self: g / self)), np.log),
    "tanh": (Rule("TanhBackward0", (("result",), lambda ops, g, result: g * (1 - result * result))), np.tanh),
    "sigmoid": (
        Rule("SigmoidBackward0", (("result",), lambda ops, g, result: g * result * (1 - result))),
        lambda x: 0.5 + 0.5 * np.tanh(0.5 * x),
    ),
    "relu": (
        Rule("ReluBackward0", (("result",), lambda ops, g, result: g * ops.positive_mask(result))),
        lambda x: np.maximum(x, 0),
    ),
}


def _binary(name: str, a: Any, b: Any) -> Tensor:
    rule, kernel = _BINARY[name]
    if not isinstance(a, Tensor):
        a = as_tensor_operand(a, b)
    if not isinstance(b, Tensor):
        b = as_tensor_operand(b, a)
    x, y = a._data, b._data
    try:
        data = kernel(x, y)
    except ValueError:
        raise RuntimeError(
            f"{name}: the size of tensor a {x.shape} must match the size of tensor b {y.shape} "
            f"(or be broadcastable to it)"
        ) from None
    return record(rule, data, (a, b))


def add(input: Any, other: Any) -> Tensor:
    return _binary("add", input, other)


def sub(input: Any, other: Any) -> Tensor:
    return _binary("sub", input, other)


def mul(input: Any, other: Any) -> Tensor:
    return _binary("mul", input, other)


def div(input: Any, other: Any) -> Tensor:
    return _binary("div", input, other)


def rsub(input: Tensor, other: Any) -> Tensor:
    """`other - input` for a Python number `other`."""
    if isinstance(other, Tensor):
        return sub(other, input)
    return record(RSUB_SCALAR, np.subtract(as_tensor_operand(other, input)._data, input._data), (input,))


def pow(input: Any, exponent: Any) -> Tensor:
    if isinstance(input, Tensor) and isinstance(exponent, int | float) and not isinstance(exponent, bool):
        data = np.power(input._data, as_tensor_operand(exponent, input)._data)
        return record(POW_SCALAR, data, (input,), exponent=exponent)
    if isinstance(exponent, Tensor) and isinstance(input, int | float):
        data = np.power(as_tensor_operand(input, exponent)._data, exponent._data)
        return record(RPOW_SCALAR, data, (exponent,), base=input)
    return _binary("pow", input, exponent)


def _unary(name: str, input: Tensor) -> Tensor:
    rule, kernel = UNARY[name]
    return record(rule, kernel(input._data), (input,))


def neg(input: Tensor) -> Tensor:
    return _unary("neg", input)


def exp(input: Tensor) -> Tensor:
    return _unary("exp", input)


def log(input: Tensor) -> Tensor:
    return _unary("log", input)


def tanh(input: Tensor) -> Tensor:
    return _unary("tanh", input)


def sigmoid(input: Tensor) -> Tensor:
    return _unary("sigmoid", input)


def relu(input: Tensor) -> Tensor:
    return _unary("relu", input)


def _reflected(op: Any) -> Any:
    return lambda self, other: op(other, self)


def _commuted(op: Any) -> Any:
    """`2 * x` records as `x * 2`, as PyTorch does, so the tensor stays the first input."""
    return lambda self, other: op(self, other)


METHODS = {
    "__add__": add, "__radd__": _commuted(add), "add": add,
    "__sub__": sub, "__rsub__": rsub, "sub": sub,
    "__mul__": mul, "__rmul__": _commuted(mul), "mul": mul,
    "__truediv__": div, "__rtruediv__": _reflected(div), "div": div,
    "__pow__": pow, "__rpow__": _reflected(pow), "pow": pow,
    "__neg__": neg, "neg": neg,
    "exp": exp, "log": log, "tanh": tanh, "sigmoid": sigmoid, "relu": relu,
}
