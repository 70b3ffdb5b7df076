"""The unary ops of the arithmetic core (neg, exp, log, tanh, sigmoid, relu: one table row each) and reciprocal,
with their gradient rules. Gradients of complex inputs follow PyTorch's convention, as arithmetic's do: g times
the conjugate of the derivative.
"""

from __future__ import annotations

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops import float_kernels
from actorgrad.ops.operands import floating, floating_or_complex
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor, bool_

__all__ = ["exp", "log", "neg", "reciprocal", "relu", "sigmoid", "tanh"]

RECIPROCAL = Rule("ReciprocalBackward0", (("result",), lambda ops, g, result: -g * ops.conj(result * result)))

UNARY = {  # each kernel takes the device's ArrayOps, for its array module
    "neg": (Rule("NegBackward0", ((), lambda ops, g: -g)), lambda ops, x: ops.xp.negative(x)),
    "exp": (Rule("ExpBackward0", (("result",), lambda ops, g, result: g * ops.conj(result))),
            lambda ops, x: ops.xp.exp(x)),
    "log": (Rule("LogBackward0", (("self",), lambda ops, g, self: g / ops.conj(self))), lambda ops, x: ops.xp.log(x)),
    "tanh": (
        Rule("TanhBackward0", (("result",), lambda ops, g, result: g * ops.conj(1 - result * result))),
        lambda ops, x: ops.xp.tanh(x),
    ),
    "sigmoid": (
        Rule("SigmoidBackward0", (("result",), lambda ops, g, result: g * ops.conj(result * (1 - result)))),
        float_kernels.sigmoid,
    ),
    "relu": (
        Rule("ReluBackward0", (("result",), lambda ops, g, result: ops.relu_grad(g, result))),
        lambda ops, x: ops.xp.maximum(x, 0),
    ),
}


def reciprocal(input: Tensor) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(reciprocal, "reciprocal", input)
    x = input._data
    return record(RECIPROCAL, np.reciprocal(x.astype(floating_or_complex(x.dtype), copy=False)), (input,))


def _unary(name: str, input: Tensor) -> Tensor:
    rule, kernel = UNARY[name]
    x = input._data
    if x.dtype.kind != "f":  # float inputs, the common case, need nothing here
        if name == "neg" and x.dtype == bool_:
            raise RuntimeError(
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                "mask, use the `~` or `logical_not()` operator instead."
            )
        if name == "relu" and x.dtype == bool_:
            raise RuntimeError("Boolean inputs not supported for relu")
        if name == "relu" and x.dtype.kind == "c":
            raise NotImplementedError("clamp is not supported for complex types")
        if name not in ("neg", "relu") and x.dtype.kind != "c":
            x = x.astype(floating(x.dtype), copy=False)  # exp of an int tensor is float32, as in PyTorch
    return record(rule, kernel(input._device.ops, x), (input,))


def neg(input: Tensor) -> Tensor:
    return _unary("neg", input)


def exp(input: Tensor) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(exp, "exp", input)
    return _unary("exp", input)


def log(input: Tensor) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(log, "log", input)
    return _unary("log", input)


def tanh(input: Tensor) -> Tensor:
    return _unary("tanh", input)


def sigmoid(input: Tensor) -> Tensor:
    return _unary("sigmoid", input)


def relu(input: Tensor) -> Tensor:
    return _unary("relu", input)


METHODS = {
    "__neg__": neg, "neg": neg,
    "exp": exp, "log": log, "tanh": tanh, "sigmoid": sigmoid, "relu": relu, "reciprocal": reciprocal,
}
