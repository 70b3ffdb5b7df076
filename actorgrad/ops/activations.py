"""Activation functions applied per element (leaky_relu, gelu, softplus, silu, elu, hardtanh, mish, threshold,
hardshrink, softshrink, rrelu, ...) and their gradient rules. The ones that look along a dim (glu,
prelu, the functional softmax, log_softmax and softmin) live in dim_activations; glu, prelu and softmin are
exported from here too, as this family's.

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
from actorgrad.ops.arithmetic import relu as _relu
from actorgrad.ops.dim_activations import floating_data, glu, prelu, recorded_grad, softmin
from actorgrad.ops.dim_activations import log_softmax as log_softmax
from actorgrad.ops.dim_activations import softmax as softmax
from actorgrad.ops.inplace_recording import write_in_place
from actorgrad.ops.operand_checks import BOOL_SUBTRACTION
from actorgrad.ops.operands import SCALAR_NAMES, fitted_number
from actorgrad.ops.record import Rule, record, zeros_grad
from actorgrad.random import numpy_generator
from actorgrad.tensor import Tensor

__all__ = [
    "celu", "elu", "gelu", "glu", "hardshrink", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "logsigmoid",
    "mish", "prelu", "relu6", "selu", "silu", "softmin", "softplus", "softsign", "tanhshrink", "threshold",
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


_leaky_relu_grad = recorded_grad(
    "LeakyReluBackwardBackward0",
    lambda ops, g, self, negative_slope: ops.where(self > 0, g, g * negative_slope),
    "negative_slope",
)


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


def _elu_grad(ops: Any, g: Any, self: Any, alpha: float, scale: float, input_scale: float) -> Any:
    # exp of the negative part only: no overflow for large inputs, and no 0 * inf in a double backward. At 0 the
    # exponential side, whose own gradient PyTorch takes from x < 0 only: the second derivative at 0 is 0. A NaN
    # fails x <= 0 and takes the linear side, as in PyTorch's kernel (not the exponential side's alpha * scale).
    negative = ops.where(self < 0, self, 0)
    return ops.where(self <= 0, g * (scale * alpha * input_scale) * ops.exp(negative * input_scale), g * scale)


def _mish_grad(ops: Any, g: Any, self: Any) -> Any:
    """tanh(softplus(x)) written with sigmoid(x) and sigmoid(-x), both exact in their tails:
    1 + e^x = 1 / sigmoid(-x), so tanh(log(1 + e^x)) = sigmoid(x) (1 + sigmoid(-x)) / (1 + sigmoid(-x)^2)."""
    s, q = ops.sigmoid(self), ops.sigmoid(-self)
    t = s * (1 + q) / (1 + q * q)
    return g * (t + self * s * (1 - t * t))


def _inside(ops: Any, g: Any, self: Any, low: float, high: float) -> Any:
    """`g` where low < self < high, else 0."""
    return ops.where(self > low, ops.where(self < high, g, 0), 0)


def _hardswish_grad(ops: Any, g: Any, self: Any) -> Any:
    # A NaN fails both comparisons and passes `g`, as in PyTorch's kernel.
    return ops.where(self <= -3, 0, ops.where(self < 3, g * (self / 3 + 0.5), g))


# leaky_relu's kink: at 0 the gradient is negative_slope, as in PyTorch (self > 0 picks the slope 1).
LEAKY_RELU = Rule("LeakyReluBackward0", (("self", "negative_slope"), _leaky_relu_grad))
LEAKY_RELU_INPLACE = Rule("LeakyReluBackward1", (("result", "negative_slope"), _leaky_relu_inplace_grad))
# relu's gradient `g` where its result is not 0, recorded on both (its gradient for the result is 0).
THRESHOLD_BACKWARD = Rule(
    "ThresholdBackwardBackward0", (("other",), lambda ops, g, other: ops.relu_grad(g, other)), ((), zeros_grad)
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
# The kinks take PyTorch's sides: elu's at 0 the exponential one; hardtanh, hardsigmoid and threshold pass no
# gradient at their bounds; hardswish's is 0 at -3 and 1 at 3.
_ELU_GRAD = (("self", "alpha", "scale", "input_scale"), _elu_grad)
ELU = Rule("EluBackward0", _ELU_GRAD)
CELU = Rule("CeluBackward0", _ELU_GRAD)
HARDTANH = Rule(
    "HardtanhBackward0",
    (("self", "min_val", "max_val"), recorded_grad("HardtanhBackwardBackward0", _inside, "min_val", "max_val")),
)
# PyTorch has no derivative of hardsigmoid's gradient (a double backward raises); its gradient here is zero.
HARDSIGMOID = Rule(
    "HardsigmoidBackward0",
    (("self",), recorded_grad("HardsigmoidBackwardBackward0", lambda ops, g, self: _inside(ops, g / 6, self, -3, 3))),
)
HARDSWISH = Rule("HardswishBackward0", (("self",), _hardswish_grad))
MISH = Rule("MishBackward0", (("self",), _mish_grad))
LOG_SIGMOID = Rule("LogSigmoidBackward0", (("self",), lambda ops, g, self: g * ops.sigmoid(-self)))
THRESHOLD = Rule(
    "ThresholdBackward0",
    (
        ("self", "threshold"),
        recorded_grad(
            "ThresholdBackwardBackward0", lambda ops, g, self, limit: ops.where(self <= limit, 0, g), "threshold"
        ),
    ),
)


def _outside(ops: Any, g: Any, self: Any, lambd: float) -> Any:
    """0 where -lambd <= self <= lambd, else `g`: both shrinks pass no gradient at +-lambd, and a NaN's, as
    PyTorch's."""
    return ops.where(self >= -lambd, ops.where(self <= lambd, 0, g), g)


HARDSHRINK = Rule(
    "HardshrinkBackward0", (("self", "lambd"), recorded_grad("HardshrinkBackwardBackward0", _outside, "lambd"))
)
SOFTSHRINK = Rule(
    "SoftshrinkBackward0", (("self", "lambd"), recorded_grad("SoftshrinkBackwardBackward0", _outside, "lambd"))
)
# rrelu's gradient is g times the slope each element was given (1 where x > 0), kept from the forward.
RRELU = Rule(
    "RreluWithNoiseBackward0",
    (("self", "noise"),
     recorded_grad("RreluWithNoiseBackwardBackward0", lambda ops, g, self, noise: g * noise, "noise")),
)


def relu_backward(g: Tensor, result: Tensor) -> Tensor:
    """relu's gradient as a recorded op, for a backward with create_graph=True."""
    return record(THRESHOLD_BACKWARD, g._device.ops.relu_grad(g._data, result._data), (g, result))


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(0, x) (torch.nn.functional.relu); `inplace` writes it into `input` and returns it, as relu_."""
    if input._data.dtype.kind == "b":
        raise RuntimeError("Boolean inputs not supported for relu")
    return input.relu_() if inplace else _relu(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """max(0, x) + negative_slope * min(0, x); `inplace` writes it into `input` (LeakyReluBackward1, as
    PyTorch's leaky_relu_, whose gradient comes from the result)."""
    if inplace:
        return write_in_place(input, lambda s: _leaky_relu(LEAKY_RELU_INPLACE, s, negative_slope), (), False)
    return _leaky_relu(LEAKY_RELU, input, negative_slope)


def _leaky_relu(rule: Rule, input: Tensor, negative_slope: float) -> Tensor:
    x = floating_data("leaky_relu_cpu", input)
    return record(rule, np.where(x > 0, x, x * negative_slope), (input,), negative_slope=negative_slope)


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
    """scale * x for x > 0, else scale * alpha * (exp(x * input_scale) - 1): elu, selu and celu."""
    if inplace:
        return write_in_place(input, lambda s: _elu(rule, s, alpha, scale, input_scale, False), (), True)
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


def _check_limits(x: np.ndarray, min_val: float, max_val: float) -> None:
    """hardtanh's refusals for a tensor that is not floating, in PyTorch's order: bool, negative limits of an
    unsigned dtype, complex (its clamp's), limits an integer dtype cannot hold (each truncated toward zero)."""
    if x.dtype.kind == "b":
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if x.dtype.kind == "u" and int(min_val) < 0:  # min_val <= max_val; each read as an integer
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    if x.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    for limit in (min_val, max_val):  # read as an int64, then as the dtype
        if not math.isfinite(limit):
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        fitted_number(int(limit), x.dtype)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """x clamped to [min_val, max_val]; integer tensors stay integer, as in PyTorch."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return write_in_place(input, lambda s: hardtanh(s, min_val, max_val), (), True)
    x = input._data
    if x.dtype.kind != "f":
        _check_limits(x, min_val, max_val)
    data = np.clip(x, min_val, max_val).astype(x.dtype, copy=False)
    return record(HARDTANH, data, (input,), min_val=min_val, max_val=max_val)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(0, x), 6): hardtanh(x, 0, 6), as PyTorch records it."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x + 3, 0), 6) / 6."""
    if inplace:
        return write_in_place(input, hardsigmoid, (), True)
    x = floating_data("hardsigmoid_cpu", input)
    return record(HARDSIGMOID, np.clip(x + 3, 0, 6) / 6, (input,))


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


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """value where x <= threshold, else x (so NaN stays NaN, with its gradient); integer tensors stay integer."""
    if inplace:
        return write_in_place(input, lambda s: _threshold(s, threshold, value), (), True)
    return _threshold(input, threshold, value)


def _threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    x = input._data
    if x.dtype.kind != "f":
        if x.dtype.kind in "bc":
            raise NotImplementedError(f"\"threshold_cpu\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
        threshold, value = fitted_number(threshold, x.dtype)[()], fitted_number(value, x.dtype)[()]  # as the kernel's
    data = np.where(x <= threshold, value, x).astype(x.dtype, copy=False)
    return record(THRESHOLD, data, (input,), threshold=threshold)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """0 where -lambd <= x <= lambd, else x (NaN stays NaN)."""
    x = floating_data("hardshrink_cpu", input)
    data = np.where((x >= -lambd) & (x <= lambd), 0, x).astype(x.dtype, copy=False)
    return record(HARDSHRINK, data, (input,), lambd=lambd)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, else 0 (with no 0 * inf, so +-inf pass without numpy's
    warning); NaN fails x >= -lambd and stays NaN."""
    x = floating_data("softshrink_check", input)
    top = float(np.finfo(x.dtype).max)
    if not 0 <= lambd <= top:
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype {SCALAR_NAMES[x.dtype]}, but found "
                           f"{lambd:g}")
    data = np.where(x > lambd, x - lambd, np.where(x >= -lambd, 0, x + lambd)).astype(x.dtype, copy=False)
    return record(SOFTSHRINK, data, (input,), lambd=lambd)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """x for x > 0, else x times a slope: drawn uniformly from [lower, upper] per element from actorgrad's
    generator while training, (lower + upper) / 2 in eval; `inplace` writes it into `input`."""
    if inplace:
        return write_in_place(input, lambda s: rrelu(s, lower, upper, training), (), True)
    x = floating_data("rrelu_with_noise_out_cpu", input)
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    where = input._device
    slopes = (lower + upper) / 2
    if training:
        dtype = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float64)  # random() draws only these
        slopes = lower + (upper - lower) * numpy_generator(None).random(x.shape, dtype=dtype)
        if where.type == "cuda":  # drawn on the host, from the generator `manual_seed` sets
            slopes = where.asarray(slopes)
    noise = where.xp.where(x > 0, 1, slopes).astype(x.dtype, copy=False)
    return record(RRELU, x * noise, (input,), noise=noise)


METHODS: dict[str, Any] = {"hardshrink": hardshrink}
