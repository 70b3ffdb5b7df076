"""The piecewise-linear activations (relu, leaky_relu, rrelu, threshold, hardtanh, relu6, hardsigmoid, hardshrink,
softshrink) and their gradient rules. Each gradient is `g` masked or scaled by comparisons with the input, and is
itself recorded as an op (ThresholdBackwardBackward0, HardtanhBackwardBackward0, ...), as PyTorch records it, so a
double backward works.

PyTorch has most of them in torch.nn.functional only, not as Tensor methods; like PyTorch they refuse the integer
tensors its kernels refuse, with its texts.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.ops.arithmetic_unary import relu as _relu
from actorgrad.ops.dim_activations import floating_data, recorded_grad
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.inplace_recording import write_in_place
from actorgrad.ops.operands import SCALAR_NAMES, fitted_number
from actorgrad.ops.record import Rule, record, zeros_grad
from actorgrad.random import numpy_generator
from actorgrad.tensor import Tensor

__all__ = ["hardshrink", "hardsigmoid", "hardtanh", "leaky_relu", "relu6", "threshold"]


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


def _inside(ops: Any, g: Any, self: Any, low: float, high: float) -> Any:
    """`g` where low < self < high, else 0."""
    return ops.where(self > low, ops.where(self < high, g, 0), 0)


# leaky_relu's kink: at 0 the gradient is negative_slope, as in PyTorch (self > 0 picks the slope 1).
LEAKY_RELU = Rule("LeakyReluBackward0", (("self", "negative_slope"), _leaky_relu_grad))
LEAKY_RELU_INPLACE = Rule("LeakyReluBackward1", (("result", "negative_slope"), _leaky_relu_inplace_grad))
# relu's gradient `g` where its result is not 0, recorded on both (its gradient for the result is 0).
THRESHOLD_BACKWARD = Rule(
    "ThresholdBackwardBackward0", (("other",), lambda ops, g, other: ops.relu_grad(g, other)), ((), zeros_grad)
)
# The kinks take PyTorch's sides: hardtanh, hardsigmoid and threshold pass no gradient at their bounds.
HARDTANH = Rule(
    "HardtanhBackward0",
    (("self", "min_val", "max_val"), recorded_grad("HardtanhBackwardBackward0", _inside, "min_val", "max_val")),
)
# PyTorch has no derivative of hardsigmoid's gradient (a double backward raises); its gradient here is zero.
HARDSIGMOID = Rule(
    "HardsigmoidBackward0",
    (("self",), recorded_grad("HardsigmoidBackwardBackward0", lambda ops, g, self: _inside(ops, g / 6, self, -3, 3))),
)
_THRESHOLD_GRAD = (
    ("self", "threshold"),
    recorded_grad(
        "ThresholdBackwardBackward0", lambda ops, g, self, limit: ops.where(self <= limit, 0, g), "threshold"
    ),
)
THRESHOLD = Rule("ThresholdBackward0", _THRESHOLD_GRAD)
THRESHOLD_INPLACE = Rule("ThresholdBackward1", _THRESHOLD_GRAD)  # threshold_'s, saving a copy of the input


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
_rrelu_grad = recorded_grad("RreluWithNoiseBackwardBackward0", lambda ops, g, self, noise: g * noise, "noise")
RRELU = Rule("RreluWithNoiseBackward0", (("self", "noise"), _rrelu_grad))


def _rrelu_inplace_grad(
    ops: Any, g: Any, result: Any, noise: Any, lower: float, upper: float, training: bool
) -> Any:
    """rrelu_'s gradient, its node saving the result as PyTorch's does. PyTorch reads it off the result's sign
    with the mean slope when the slopes were not drawn (eval, or a range under 1e-6 wide), so refuses a negative
    one there, as leaky_relu_ does."""
    if not (training and upper - lower > 1e-6) and lower + upper < 0:
        raise RuntimeError(LEAKY_RELU_INPLACE_NEGATIVE_SLOPE)
    return _rrelu_grad(ops, g, result, noise)


RRELU_INPLACE = Rule(
    "RreluWithNoiseBackward1", (("result", "noise", "lower", "upper", "training"), _rrelu_inplace_grad)
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


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """value where x <= threshold, else x (so NaN stays NaN, with its gradient); integer tensors stay integer."""
    if inplace:
        return write_in_place(input, lambda s: _threshold(THRESHOLD_INPLACE, s, threshold, value), (), True)
    return _threshold(THRESHOLD, input, threshold, value)


def _threshold(rule: Rule, input: Tensor, threshold: float, value: float) -> Tensor:
    x = input._data
    if x.dtype.kind != "f":
        if x.dtype.kind in "bc":
            raise NotImplementedError(f"\"threshold_cpu\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
        threshold, value = fitted_number(threshold, x.dtype)[()], fitted_number(value, x.dtype)[()]  # as the kernel's
    data = np.where(x <= threshold, value, x).astype(x.dtype, copy=False)
    return record(rule, data, (input,), threshold=threshold)


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
    if training.__class__ is not bool:
        raise not_bool("rrelu", "training", training, 4)
    if inplace:
        return write_in_place(input, lambda s: _rrelu(RRELU_INPLACE, s, lower, upper, training), (), False)
    return _rrelu(RRELU, input, lower, upper, training)


def _rrelu(rule: Rule, input: Tensor, lower: float, upper: float, training: bool) -> Tensor:
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
    return record(rule, x * noise, (input,), noise=noise, lower=lower, upper=upper, training=training)


METHODS: dict[str, Any] = {"hardshrink": hardshrink}
