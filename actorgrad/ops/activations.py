"""Activation functions applied per element (gelu, softplus, silu, elu, selu, celu, hardswish, mish, logsigmoid,
softsign, tanhshrink) and their gradient rules. The piecewise-linear ones (relu, leaky_relu, rrelu, threshold,
hardtanh, relu6, hardsigmoid, hardshrink, softshrink) live in piecewise_linear_activations. The ones that look
along a dim (glu, prelu, the functional softmax, log_softmax and softmin) live in dim_activations; glu, prelu and
softmin are exported from here too, as this family's.

PyTorch has most of them in torch.nn.functional only, not as Tensor methods; like PyTorch they refuse the integer
tensors its kernels refuse, with its texts.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.devices.erf import erf as erf_kernel
from actorgrad.devices.erf_float32 import normal_cdf_and_pdf
from actorgrad.grad_mode import is_grad_enabled
from actorgrad.ops.dim_activations import floating_data, glu, prelu, softmin
from actorgrad.ops.dim_activations import log_softmax as log_softmax
from actorgrad.ops.dim_activations import softmax as softmax
from actorgrad.ops.inplace_recording import write_in_place
from actorgrad.ops.operand_checks import BOOL_SUBTRACTION
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor

__all__ = [
    "celu", "elu", "gelu", "glu", "hardswish", "logsigmoid", "mish", "prelu", "selu", "silu", "softmin", "softplus",
    "softsign", "tanhshrink",
]

SQRT1_2 = 1 / math.sqrt(2)
INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
GELU_CUBIC = 0.044715  # the cubic term of gelu's tanh approximation
SELU_ALPHA = 1.6732632423543772848170429916717  # selu's constants, as PyTorch's
SELU_SCALE = 1.0507009873554804934193349852946
MISH_FLAT = 20.0  # 1 - tanh(softplus(20)) is about 8e-18, below half an ulp of 1.0 in float64


def _gelu_grad(ops: Any, g: Any, self: Any, approximate: str) -> Any:
    if approximate == "tanh":
        t = ops.tanh(SQRT_2_OVER_PI * (self + GELU_CUBIC * self * self * self))
        slope = SQRT_2_OVER_PI * (1 + 3 * GELU_CUBIC * self * self)
        return g * (0.5 * (1 + t) + 0.5 * self * (1 - t * t) * slope)
    if isinstance(self, Tensor) or self.dtype != ops.xp.float32:  # recorded (create_graph), or not float32
        cdf = 0.5 * (1 + ops.erf(self * SQRT1_2))
        pdf = INV_SQRT_2PI * ops.exp(-0.5 * self * self)
    else:
        cdf, pdf = normal_cdf_and_pdf(ops.xp, self)
    return g * (cdf + self * pdf)


def _silu_grad(ops: Any, g: Any, self: Any) -> Any:
    s = ops.sigmoid(self)
    return g * s * (1 + self * (1 - s))


def _elu_grad(ops: Any, g: Any, self: Any, alpha: float, scale: float, input_scale: float) -> Any:
    # exp of the negative part only: no overflow for large inputs, and no 0 * inf in a double backward. At 0 the
    # exponential side, whose own gradient PyTorch takes from x < 0 only: the second derivative at 0 is 0. A NaN
    # fails x <= 0 and takes the linear side, as in PyTorch's kernel (not the exponential side's alpha * scale).
    negative = ops.where(self < 0, self, 0)
    return ops.where(self <= 0, g * (scale * alpha * input_scale) * ops.exp(negative * input_scale), g * scale)


ELU_INPLACE_NEGATIVE_ALPHA = (
    "In-place elu backward calculation is triggered with a negative slope which is not supported. This is caused "
    "by calling in-place forward function with a negative slope, please call out-of-place version instead."
)


def _elu_result_grad(ops: Any, g: Any, result: Any, alpha: float, scale: float, input_scale: float) -> Any:
    """elu's gradient read off its result, which elu_, selu_ and celu_ save as PyTorch's do (a later change of it
    is refused): on the exponential side the derivative is input_scale * (result + scale * alpha). PyTorch
    refuses a negative alpha, whose result's sign no longer tells the two sides apart."""
    if alpha < 0:
        raise RuntimeError(ELU_INPLACE_NEGATIVE_ALPHA)
    return ops.where(result <= 0, g * input_scale * (result + scale * alpha), g * scale)


def _mish_grad(ops: Any, g: Any, self: Any) -> Any:
    """tanh(softplus(x)) written with sigmoid(x) and sigmoid(-x), both exact in their tails:
    1 + e^x = 1 / sigmoid(-x), so tanh(log(1 + e^x)) = sigmoid(x) (1 + sigmoid(-x)) / (1 + sigmoid(-x)^2)."""
    s, q = ops.sigmoid(self), ops.sigmoid(-self)
    t = s * (1 + q) / (1 + q * q)
    return g * (t + self * s * (1 - t * t))


def _hardswish_grad(ops: Any, g: Any, self: Any) -> Any:
    # A NaN fails both comparisons and passes `g`, as in PyTorch's kernel.
    return ops.where(self <= -3, 0, ops.where(self < 3, g * (self / 3 + 0.5), g))


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
# The kinks take PyTorch's sides: elu's at 0 the exponential one; hardswish's is 0 at -3 and 1 at 3.
_ELU_GRAD = (("self", "alpha", "scale", "input_scale"), _elu_grad)
ELU = Rule("EluBackward0", _ELU_GRAD)
CELU = Rule("CeluBackward0", _ELU_GRAD)
_ELU_RESULT_GRAD = (("result", "alpha", "scale", "input_scale"), _elu_result_grad)
IN_PLACE_ELU = {ELU: Rule("EluBackward1", _ELU_RESULT_GRAD), CELU: Rule("CeluBackward1", _ELU_RESULT_GRAD)}
HARDSWISH = Rule("HardswishBackward0", (("self",), _hardswish_grad))
MISH = Rule("MishBackward0", (("self",), _mish_grad))
LOG_SIGMOID = Rule("LogSigmoidBackward0", (("self",), lambda ops, g, self: g * ops.sigmoid(-self)))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), Phi the standard normal CDF (exact, through erf), or its tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    x = floating_data("GeluKernelImpl", input)
    xp = input._device.xp
    if approximate == "none" and x.dtype == xp.float32:
        data = x * normal_cdf_and_pdf(xp, x)[0]
    elif approximate == "none":
        data = 0.5 * x * (1 + erf_kernel(xp, x * SQRT1_2).astype(x.dtype, copy=False))
    else:
        data = 0.5 * x * (1 + np.tanh(SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x)))
    return record(GELU, data, (input,), approximate=approximate)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, switching to x where beta * x > threshold."""
    if autocast_state.get() is not None:
        return autocast_call(softplus, "softplus", input, beta, threshold)
    x = floating_data("softplus_cpu", input)
    scaled = x * beta
    # log1p(exp(.)) as PyTorch writes it, cut at the threshold so exp cannot overflow where the identity is kept
    # (np.logaddexp would warn on NaN; this is also twice as fast on large arrays, 1 us slower on tiny ones).
    data = np.where(scaled > threshold, x, np.log1p(np.exp(np.minimum(scaled, threshold))) / beta)
    return record(SOFTPLUS, data, (input,), beta=beta, threshold=threshold)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x), computed as PyTorch's kernel computes it, x / (1 + exp(-x)); `inplace` writes it into
    `input` (its node keeps a copy of the old values). Complex tensors too, without a gradient, as PyTorch's."""
    if inplace:
        return write_in_place(input, silu, (), True)
    x = input._data
    if x.dtype.kind != "c":
        x = floating_data("silu_cpu", input)
    elif input.requires_grad and is_grad_enabled():
        raise RuntimeError("silu does not support automatic differentiation for outputs with complex dtype.")
    with np.errstate(over="ignore", invalid="ignore"):  # exp(-x) is inf far left, where x / inf is PyTorch's -0
        data = x / (1 + np.exp(-x))
    return record(SILU, data, (input,))


def _elu(rule: Rule, input: Tensor, alpha: float, scale: float, input_scale: float, inplace: bool) -> Tensor:
    """scale * x for x > 0, else scale * alpha * (exp(x * input_scale) - 1): elu, selu and celu (in place, the
    node saves the result instead of the input)."""
    if inplace:
        in_place = IN_PLACE_ELU[rule]
        return write_in_place(input, lambda s: _elu(in_place, s, alpha, scale, input_scale, False), (), False)
    x = floating_data("elu_cpu", input)
    negative = np.expm1(np.where(x > 0, 0, x) * input_scale) * (scale * alpha)  # keeps -0.0 and NaN
    data = np.where(x > 0, x * scale, negative).astype(x.dtype, copy=False)
    return record(rule, data, (input,), alpha=alpha, scale=scale, input_scale=input_scale)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha * (exp(x) - 1)."""
    return _elu(ELU, input, alpha, 1.0, 1.0, inplace)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """elu with PyTorch's fixed alpha, scaled (recorded as EluBackward0, as in PyTorch)."""
    return _elu(ELU, input, SELU_ALPHA, SELU_SCALE, 1.0, inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha * (exp(x / alpha) - 1)."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu(CELU, input, alpha, 1.0, 1.0 / alpha, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * min(max(x + 3, 0), 6) / 6."""
    if inplace:
        return write_in_place(input, hardswish, (), True)
    x = floating_data("hardswish_cpu", input)
    return record(HARDSWISH, x * np.clip(x + 3, 0, 6) / 6, (input,))


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    if inplace:
        return write_in_place(input, mish, (), True)
    x = floating_data("mish_cpu", input)
    # Cut at MISH_FLAT, where tanh(softplus(x)) is already 1.0, so exp cannot overflow; NaN passes silently.
    return record(MISH, x * np.tanh(np.log1p(np.exp(np.minimum(x, MISH_FLAT)))), (input,))


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), exact in both tails."""
    x = floating_data("log_sigmoid_cpu", input)
    return record(LOG_SIGMOID, np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))), (input,))


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|), composed of abs, add and div as in PyTorch (integers give floats)."""
    if input._data.dtype.kind == "b":
        raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'")
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x), composed of tanh and sub as in PyTorch."""
    if input._data.dtype.kind == "b":
        raise RuntimeError(BOOL_SUBTRACTION)
    return input - input.tanh()


METHODS: dict[str, Any] = {}
