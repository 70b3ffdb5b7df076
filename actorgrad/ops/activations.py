"""Activation functions (leaky_relu, gelu, softplus, silu) and their gradient rules.

PyTorch has them in torch.nn.functional only, not as Tensor methods; like PyTorch they refuse integer tensors.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices.erf import erf as erf_kernel
from actorgrad.ops.inplace import _inplace
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor

__all__ = ["gelu", "leaky_relu", "silu", "softplus"]

SQRT1_2 = 1 / math.sqrt(2)
INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
GELU_CUBIC = 0.044715  # the cubic term of gelu's tanh approximation


def _gelu_grad(ops: Any, g: Any, self: Any, approximate: str) -> Any:
    if approximate == "tanh":
        t = ops.tanh(SQRT_2_OVER_PI * (self + GELU_CUBIC * self * self * self))
        slope = SQRT_2_OVER_PI * (1 + 3 * GELU_CUBIC * self * self)
        return g * (0.5 * (1 + t) + 0.5 * self * (1 - t * t) * slope)
    cdf = 0.5 * (1 + ops.erf(self * SQRT1_2))
    pdf = INV_SQRT_2PI * ops.exp(-0.5 * self * self)
    return g * (cdf + self * pdf)


def _silu_grad(ops: Any, g: Any, self: Any) -> Any:
    s = ops.sigmoid(self)
    return g * s * (1 + self * (1 - s))


def _zeros(ops: Any, g: Any) -> Any:
    return ops.zeros_like(g)


def _leaky_relu_grad(ops: Any, g: Any, self: Any, negative_slope: float) -> Any:
    """`g` scaled by leaky_relu's slope at `self`; in a recorded backward, an op on `self` too, so the gradient
    can be differentiated again (to zero there, as PyTorch's LeakyReluBackwardBackward0)."""
    if isinstance(g, Tensor):
        data = g._device.ops.where(self._data > 0, g._data, g._data * negative_slope)
        return record(LEAKY_RELU_BACKWARD, data, (g, self), negative_slope=negative_slope)
    return ops.where(self > 0, g, g * negative_slope)


LEAKY_RELU_INPLACE_NEGATIVE_SLOPE = (
    "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. This is "
    "caused by calling in-place forward function with a negative slope, please call out-of-place version instead. "
    "File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward "
    "calculation with negative slope"
)


def _leaky_relu_inplace_grad(ops: Any, g: Any, result: Any, negative_slope: float) -> Any:
    """The gradient read off the result, which is positive where the input was for a slope >= 0; PyTorch refuses
    a negative slope, whose result has the input's sign flipped."""
    if negative_slope < 0:
        raise RuntimeError(LEAKY_RELU_INPLACE_NEGATIVE_SLOPE)
    return _leaky_relu_grad(ops, g, result, negative_slope)


# leaky_relu's kink: at 0 the gradient is negative_slope, as in PyTorch (self > 0 picks the slope 1).
LEAKY_RELU = Rule("LeakyReluBackward0", (("self", "negative_slope"), _leaky_relu_grad))
LEAKY_RELU_INPLACE = Rule("LeakyReluBackward1", (("result", "negative_slope"), _leaky_relu_inplace_grad))
LEAKY_RELU_BACKWARD = Rule(
    "LeakyReluBackwardBackward0", (("other", "negative_slope"), _leaky_relu_grad), ((), _zeros)
)
# relu's gradient `g` where its result is not 0, recorded on both (its gradient for the result is 0).
THRESHOLD_BACKWARD = Rule(
    "ThresholdBackwardBackward0", (("other",), lambda ops, g, other: ops.relu_grad(g, other)), ((), _zeros)
)
GELU = Rule("GeluBackward0", (("self", "approximate"), _gelu_grad))
# Above the threshold softplus is the identity, and so is its gradient.
SOFTPLUS = Rule(
    "SoftplusBackward0",
    (
        ("self", "beta", "threshold"),
        lambda ops, g, self, beta, threshold: ops.where(self * beta > threshold, g, g * ops.sigmoid(self * beta)),
    ),
)
SILU = Rule("SiluBackward0", (("self",), _silu_grad))


def _floating_data(op: str, input: Tensor) -> np.ndarray:
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f"{op}(): not implemented for tensors of dtype {x.dtype}; convert to a "
                                  f"floating dtype first, e.g. input.float()")
    return x


def relu_backward(g: Tensor, result: Tensor) -> Tensor:
    """relu's gradient as a recorded op, for a backward with create_graph=True."""
    return record(THRESHOLD_BACKWARD, g._device.ops.relu_grad(g._data, result._data), (g, result))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """max(0, x) + negative_slope * min(0, x); `inplace` writes it into `input` (LeakyReluBackward1, as
    PyTorch's leaky_relu_, whose gradient comes from the result)."""
    if inplace:
        return _inplace(input, lambda s: _leaky_relu(LEAKY_RELU_INPLACE, s, negative_slope), (), False)
    return _leaky_relu(LEAKY_RELU, input, negative_slope)


def _leaky_relu(rule: Rule, input: Tensor, negative_slope: float) -> Tensor:
    x = _floating_data("leaky_relu", input)
    return record(rule, np.where(x > 0, x, x * negative_slope), (input,), negative_slope=negative_slope)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), Phi the standard normal CDF (exact, through erf), or its tanh approximation."""
    x = _floating_data("gelu", input)
    if approximate == "none":
        data = 0.5 * x * (1 + erf_kernel(input._device.xp, x * SQRT1_2).astype(x.dtype, copy=False))
    elif approximate == "tanh":
        data = 0.5 * x * (1 + np.tanh(SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x)))
    else:
        raise RuntimeError(f"gelu(): approximate argument must be either none or tanh, got {approximate!r}")
    return record(GELU, data, (input,), approximate=approximate)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, switching to x where beta * x > threshold."""
    x = _floating_data("softplus", input)
    scaled = x * beta
    data = np.where(scaled > threshold, x, np.logaddexp(0, scaled) / beta)
    return record(SOFTPLUS, data, (input,), beta=beta, threshold=threshold)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x); `inplace` writes it into `input` (its node keeps a copy of the old values)."""
    if inplace:
        return _inplace(input, silu, (), True)
    x = _floating_data("silu", input)
    return record(SILU, x * input._device.ops.sigmoid(x), (input,))


METHODS: dict[str, Any] = {}
