"""C's fmod, fmax, fmin, hypot, copysign and ldexp, heaviside and float_power, elementwise with broadcasting and
PyTorch's promotion, with their gradient rules.

fmod's remainder has the dividend's sign (remainder's has the divisor's); fmax and fmin ignore a NaN when the
other operand is a number. Their gradients use masks and quotients taken in the forward, which are piecewise
constant, so they enter a recorded backward as constants.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.ops.arithmetic import _no_derivative, pow
from actorgrad.ops.operands import (
    SCALAR_NAMES,
    as_operand,
    common_dtype,
    data_as,
    floating,
    kernel_operands,
    require_tensors,
)
from actorgrad.ops.pointwise import _broadcast_kernel, _method
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.ops.shape import to_dtype
from actorgrad.tensor import Tensor, float64

__all__ = ["copysign", "float_power", "fmax", "fmin", "fmod", "heaviside", "hypot", "ldexp"]

LN2 = math.log(2)
_MASKED = (("mask",), lambda ops, g, mask: g * mask)
FMOD_NUMBER = Rule("FmodBackward0", ((), None))
FMOD_TENSOR = Rule(  # the quotient from the inputs, so a recorded gradient stays connected to them
    "FmodBackward1", ((), None), (("self", "other"), lambda ops, g, self, other: -g * ops.trunc(self / other)),
    broadcasts=True,
)
FMAX = Rule("FmaxBackward0", _MASKED, (("other_mask",), lambda ops, g, other_mask: g * other_mask), broadcasts=True)
FMIN = Rule("FminBackward0", *FMAX.grads, broadcasts=True)


def _over_result(ops: Any, g: Any, value: Any, result: Any) -> Any:
    """hypot's gradient in one operand: value / hypot, NaN at the origin (0 / 0), as PyTorch's."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return g * value / result


def _sign_flip(ops: Any, g: Any, self: Any, result: Any) -> Any:
    """copysign's gradient in its input: result / self (1 or -1, NaN at inf), but 0 where self is 0, as PyTorch's
    copysign_tensor_self_backward."""
    with np.errstate(invalid="ignore"):  # the masked 0 / 0
        return g * ops.where(self == 0, 0, result / self)


HYPOT = Rule("HypotBackward0", (("self", "result"), _over_result), (("other", "result"), _over_result),
             broadcasts=True)
# the sign copied from other is piecewise constant in it: other's gradient is zero, as in PyTorch
COPYSIGN = Rule("CopysignBackward0", (("self", "result"), _sign_flip), ((), lambda ops, g: ops.zeros_like(g)),
                broadcasts=True)
COPYSIGN_NUMBER = Rule("CopysignBackward1", (("self", "result"), _sign_flip))
LDEXP = Rule(
    "LdexpBackward0",
    (("exponent",), lambda ops, g, exponent: g * 2.0 ** exponent),
    (("result",), lambda ops, g, result: g * result * LN2),
    broadcasts=True,
)
HEAVISIDE = _no_derivative("heaviside")


def fmod(input: Tensor, other: Tensor | float) -> Tensor:
    """input - trunc(input / other) * other; an integer division by zero raises, as in PyTorch."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fmod(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    number = not isinstance(other, Tensor)
    dtype = common_dtype(input, other)
    other_t = as_operand(other, dtype, input, wrap=True)  # an int out of the dtype's range wraps, as PyTorch's
    device = common_device((input, other_t))
    xp = device.xp
    if dtype.kind in "bc":
        raise NotImplementedError(f"\"fmod_{device.type}\" not implemented for '{SCALAR_NAMES[dtype]}'")
    x, y = kernel_operands(data_as(input, dtype), data_as(other_t, dtype))
    if dtype.kind in "biu" and x.size and bool((y == 0).any()):  # an empty input divides nothing
        raise RuntimeError("ZeroDivisionError")
    with np.errstate(invalid="ignore", divide="ignore"):
        data = xp.asarray(_broadcast_kernel("fmod", xp.fmod, x, y), dtype=dtype)
        if number:
            return record(FMOD_NUMBER, data, (input,))
    return record(FMOD_TENSOR, data, (input, other_t))


def _choose(op: str, rule: Rule, kernel: str, input: Tensor, other: Tensor) -> Tensor:
    require_tensors(op, input=input, other=other)
    device = common_device((input, other))
    dtype = common_dtype(input, other)
    if dtype.kind == "c":
        raise RuntimeError(f"{op} not implemented for complex tensors.")
    xp = device.xp
    x, y = kernel_operands(data_as(input, dtype), data_as(other, dtype))
    data = xp.asarray(_broadcast_kernel(op, getattr(xp, kernel), x, y), dtype=dtype)
    if dtype.kind != "f":
        return record(rule, data, (input, other), mask=None, other_mask=None)
    # The input's value was taken where it won, tied, or faced a NaN (PyTorch's masks).
    mask = ((x >= y) if kernel == "fmax" else (x <= y)) | xp.isnan(y)
    return record(rule, data, (input, other), mask=mask, other_mask=~mask)


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise maximum, where a NaN loses to a number."""
    return _choose("fmax", FMAX, "fmax", input, other)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise minimum, where a NaN loses to a number."""
    return _choose("fmin", FMIN, "fmin", input, other)


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """sqrt(input**2 + other**2), without overflow or underflow on the way; floating dtypes only."""
    require_tensors("hypot", input=input, other=other)
    device = common_device((input, other))
    dtype = common_dtype(input, other)
    if dtype.kind != "f":
        raise NotImplementedError(f"\"hypot_{device.type}\" not implemented for '{SCALAR_NAMES[dtype]}'")
    x, y = kernel_operands(data_as(input, dtype), data_as(other, dtype))
    return record(HYPOT, _broadcast_kernel("hypot", device.xp.hypot, x, y), (input, other))


def copysign(input: Tensor, other: Tensor | float) -> Tensor:
    """input's magnitude with other's sign (-0.0 counts as negative); integer and bool inputs give the default
    float dtype."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor | int | float):
        raise TypeError(
            f"copysign() received an invalid combination of arguments - got ({type(input).__name__}, "
            f"{type(other).__name__}), but expected one of:\n * (Tensor input, Tensor other)\n"
            " * (Tensor input, Number other)"
        )
    dtype = floating(common_dtype(input, other))
    other_t = as_operand(other, dtype, input)  # a number in the floating result dtype: copysign(uint8, -3) is fine
    device = common_device((input, other_t))
    x, y = kernel_operands(data_as(input, dtype), data_as(other_t, dtype))
    data = _broadcast_kernel("copysign", device.xp.copysign, x, y)
    if isinstance(other, Tensor):
        return record(COPYSIGN, data, (input, other_t))
    return record(COPYSIGN_NUMBER, data, (input,))


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The step function: 0 where input < 0, `values` where it is 0, 1 where it is > 0, and 0 at NaN (PyTorch's
    kernel compares; numpy's heaviside gives NaN there). Both tensors of one dtype; it has no derivative."""
    require_tensors("heaviside", input=input, values=values)
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    if input.dtype.kind == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    device = common_device((input, values))
    xp = device.xp
    x, y = kernel_operands(input._data, values._data)
    data = _broadcast_kernel("heaviside", lambda x, y: xp.where(xp.asarray(x == 0), y, x > 0), x, y)
    return record(HEAVISIDE, data.astype(input._data.dtype, copy=False), (input, values))


def float_power(input: Tensor | float, exponent: Tensor | float) -> Tensor:
    """input ** exponent in float64 (complex128 when either operand is complex), whatever the operands' dtypes:
    each tensor not in that dtype is copied to it first (ToCopyBackward0) and the power recorded as pow's, as
    PyTorch does."""
    tensors = [isinstance(v, Tensor) for v in (input, exponent)]
    if not any(tensors) or not all(isinstance(v, Tensor | int | float | complex) for v in (input, exponent)):
        raise TypeError(
            f"float_power() received an invalid combination of arguments - got ({type(input).__name__}, "
            f"{type(exponent).__name__}), but expected one of:\n * (Tensor input, Tensor exponent)\n"
            " * (Number self, Tensor exponent)\n * (Tensor input, Number exponent)"
        )
    pair = tuple(zip((input, exponent), tensors))
    is_complex = any(v.is_complex() if t else isinstance(v, complex) for v, t in pair)
    dtype = np.dtype(np.complex128) if is_complex else float64
    base, power = (to_dtype(v, dtype) if t and v.dtype != dtype else v for v, t in pair)
    return pow(base, power)


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """input * 2 ** other. The power is taken in other's dtype when that is floating, else in the result's (so a
    float64 input meets 2 ** 1000 exactly, and a float32 one inf), as PyTorch takes it."""
    require_tensors("ldexp", input=input, other=other)
    device = common_device((input, other))
    dtype = floating(common_dtype(input, other))
    # an integer exponent, as the floating one the power is taken in (it has no gradient: a constant)
    exponent = other if other._data.dtype.kind == "f" else Tensor(other._data.astype(dtype), device=other._device)
    with np.errstate(over="ignore"):  # a power past the dtype's range is inf, as in PyTorch
        power = device.xp.power(2, exponent._data).astype(dtype, copy=False)
        data = _broadcast_kernel("ldexp", device.xp.multiply, *kernel_operands(data_as(input, dtype), power))
    return record(LDEXP, data, (input, other), exponent=exponent)


METHODS: dict[str, Any] = {
    "fmod": fmod, "fmax": fmax, "fmin": fmin, "hypot": _method(hypot, "other"), "copysign": copysign,
    "heaviside": _method(heaviside, "values"), "float_power": float_power, "ldexp": _method(ldexp, "other"),
}
