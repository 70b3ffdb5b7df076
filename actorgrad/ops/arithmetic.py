"""Elementwise binary ops (add, sub, mul, div, floor_divide, remainder, pow) and their gradient rules, one table
row each; the unary ops of the arithmetic core live in arithmetic_unary.

Binary rules undo broadcasting with `ops.sum_to`, the one shared helper for it.
"""

from __future__ import annotations

import cmath
import math
from functools import partial
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.devices import cpu
from actorgrad.devices.floor_division import python_division
from actorgrad.ops import float_kernels
from actorgrad.ops.arithmetic_unary import reciprocal
from actorgrad.ops.float_kernels import FLOAT16, FLOAT16_SCALAR_OPS, float16_by_scalar
from actorgrad.ops.operand_checks import check_alpha, check_subtraction, check_unsigned_number
from actorgrad.ops.operands import (
    as_operand,
    broadcast_error,
    data_as,
    fitted_number,
    floating_or_complex,
    kernel_operands,
    not_implemented,
    number_array,
    result_type,
)
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.saved_tensors import WrappedNumber
from actorgrad.tensor import Tensor, bool_

__all__ = ["add", "floor_divide", "mul", "pow", "remainder", "sub"]

ADD = Rule("AddBackward0", ((), None), ((), None), broadcasts=True)
SUB = Rule("SubBackward0", ((), None), ((), lambda ops, g: -g), broadcasts=True)
# Gradients of complex inputs follow PyTorch's convention (the conjugate Wirtinger derivative): for a holomorphic
# op the input's gradient is g times the conjugate of the derivative. `ops.conj` returns a real value itself.
ADD_ALPHA = Rule("AddBackward0", ((), None), (("alpha",), lambda ops, g, alpha: g * alpha.conjugate()),
                 broadcasts=True)
SUB_ALPHA = Rule("SubBackward0", ((), None), (("alpha",), lambda ops, g, alpha: g * -alpha.conjugate()),
                 broadcasts=True)
MUL = Rule(
    "MulBackward0",
    (("other",), lambda ops, g, other: g * ops.conj(other)),
    (("self",), lambda ops, g, self: g * ops.conj(self)),
    broadcasts=True,
)
DIV = Rule(
    "DivBackward0",
    (("other",), lambda ops, g, other: g / ops.conj(other)),
    (("self", "other"), lambda ops, g, self, other: -g * ops.conj(self / (other * other))),
    broadcasts=True,
)


def _nonnegative(x: Any) -> Any:
    """x >= 0; for a complex x, real and >= 0 (PyTorch's test for where 0 ** x has a zero slope in x)."""
    if isinstance(x, complex) or getattr(getattr(x, "dtype", None), "kind", None) == "c":  # x may be a number
        return (x.real >= 0) & (x.imag == 0)
    return x >= 0


def _exponent_grad(ops: Any, self: Any, other: Any, result: Any) -> Any:
    """d(self ** other)/d(other): 0 where self is 0 and other >= 0 (not 0 * log(0), which is NaN), as in PyTorch.
    The log is taken in the result's dtype, as PyTorch's: numpy's of an int8 base would be float16, of a negative
    base beside a complex exponent NaN."""
    slope = result * ops.log(ops.cast(self, result.dtype))
    return ops.where(self == 0, ops.where(_nonnegative(other), 0, slope), slope)


POW = Rule(
    "PowBackward1",
    # 0 where other is 0, as in PyTorch: other * self ** (other - 1) is 0 * inf = NaN at self = 0.
    (("self", "other"),
     lambda ops, g, self, other: ops.where(other == 0, 0, g * ops.conj(other * self ** (other - 1)))),
    (("self", "other", "result"),
     lambda ops, g, self, other, result: g * ops.conj(_exponent_grad(ops, self, other, result))),
    broadcasts=True,
)


# PyTorch's remainder rule divides with rounding_mode='floor', whose gradient is zero (floor_divide has none).
FLOOR_QUOTIENT = Rule(
    "DivBackward2", ((), lambda ops, g: ops.zeros_like(g)), ((), lambda ops, g: ops.zeros_like(g)), broadcasts=True
)


def _floor_quotient(ops: Any, self: Any, other: Any) -> Any:
    """floor(self / other) in remainder's rule: arrays, or tensors recorded with zero gradients."""
    if isinstance(self, Tensor):
        return _binary("floor_divide", self, other, FLOOR_QUOTIENT)
    return self // other if ops.xp is np else python_division(ops.xp, False, self, other)


def _no_derivative(op: str) -> Rule:
    """PyTorch records an op it has no derivative for, and raises only when a backward reaches it."""

    def formula(ops: Any, g: Any) -> Any:
        raise RuntimeError(
            f"derivative for aten::{op} is not implemented, as in PyTorch; detach() its inputs, or leave them "
            f"out of the graph, where no gradient through {op} is needed"
        )

    return Rule("NotImplemented", ((), formula), ((), formula))


REMAINDER = Rule(
    "RemainderBackward1",
    ((), None),
    (("self", "other"), lambda ops, g, self, other: -g * _floor_quotient(ops, self, other)),
    broadcasts=True,
)
REMAINDER_SCALAR = Rule("RemainderBackward0", ((), None))  # tensor % number
NUMBER_REMAINDER = _no_derivative("remainder")  # number % tensor
_BINARY = {
    "add": (ADD, np.add),
    "sub": (SUB, np.subtract),
    "mul": (MUL, np.multiply),
    "div": (DIV, np.divide),
    "pow": (POW, np.power),
    "floor_divide": (_no_derivative("floor_divide"), np.floor_divide),
    "remainder": (REMAINDER, float_kernels.remainder),
}

POW_SCALAR = Rule(
    "PowBackward0",
    (
        ("self", "exponent"),
        lambda ops, g, self, exponent: (
            ops.zeros_like(g) if exponent == 0 else g * ops.conj(exponent * self ** (exponent - 1))
        ),
    ),
)


def _log_number(x: float | complex, complex_result: bool) -> float | complex:
    """log of a Python number, -inf at 0 and NaN below as for a real tensor (math.log raises there); the complex
    log where the number or the power is complex."""
    if x.__class__ is complex or complex_result:
        return cmath.log(x) if x != 0 else -math.inf
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else math.nan


def _number_base_grad(ops: Any, g: Any, self: Any, result: Any, base: float | complex) -> Any:
    """d(base ** self)/d(self) for a Python number base: 0 where base is 0 and self >= 0 (not 0 * -inf = NaN),
    as in PyTorch; masked before multiplying by g, so a NaN in g still comes through."""
    slope = result * _log_number(base, result.dtype.kind == "c")
    if base == 0:
        slope = ops.where(_nonnegative(self), 0, slope)
    return g * ops.conj(slope)


RPOW_SCALAR = Rule("PowBackward2", (("self", "result", "base"), _number_base_grad))
RSUB_SCALAR = Rule("RsubBackward1", ((), lambda ops, g: -g))
NEGATIVE_INTEGER_POWER = "Integers to negative integer powers are not allowed."


def _promoted(name: str, a: Any, b: Any) -> tuple[Tensor, Tensor, Any, Any]:
    """Both operands as tensors, and their arrays in the dtype the op computes in (PyTorch's promotion)."""
    if name == "sub":
        check_subtraction(a, b)
    check_unsigned_number(a, b)
    dtype = result_type(a, b)
    if name == "div":
        # true division: integers give the default float dtype, x / 1000 divides by 1000
        dtype = floating_or_complex(dtype)
    # a number out of the dtype's range wraps, as PyTorch casts it: int8_tensor + 1000 adds -24
    a, b = as_operand(a, dtype, b, wrap=True), as_operand(b, dtype, a, wrap=True)
    if name == "pow":
        if dtype == bool_:  # bools to a bool tensor's power: PyTorch has no kernel (numpy's gives int8)
            raise not_implemented("pow", dtype)
    elif name in ("floor_divide", "remainder"):
        if dtype == bool_ or dtype.kind == "c":  # complex numbers have no floor
            raise not_implemented("div_floor_cpu" if name == "floor_divide" else "remainder_cpu", dtype)
        if dtype.kind in "iu" and a._data.size and np.any(b._data == 0):  # numpy gives 0; none for an empty a
            raise RuntimeError(f"ZeroDivisionError: integer {name} by zero; divide floating tensors for inf or nan")
    return a, b, data_as(a, dtype), data_as(b, dtype)


def _integer_power(xp: Any, x: Any, y: Any) -> Any:
    """PyTorch's integer power, where a negative exponent (numpy refuses it) gives 1 for a base of 1, -1 or 1 for
    -1 by the exponent's parity, and 0 for any other base (0 included)."""
    negative = y < 0
    power = xp.power(x, xp.where(negative, 0, y))
    odd = (y % 2).astype(bool)
    ones = (x == 1) | ((x == -1) & ~odd)
    return xp.where(negative, ones.astype(power.dtype) - ((x == -1) & odd).astype(power.dtype), power)


def _binary(name: str, a: Any, b: Any, rule: Rule | None = None) -> Tensor:
    """`name`'s kernel on a and b, recorded with the op's rule from `_BINARY` unless `rule` is given."""
    own_rule, kernel = _BINARY[name]
    x = a._data if a.__class__ is Tensor else None
    y = b._data if b.__class__ is Tensor else None
    if x is None or y is None or x.dtype != y.dtype or x.dtype.kind != "f":  # else nothing to promote
        if y is None and x is not None and x.dtype.kind == "f" and b.__class__ in (float, int):
            if x.dtype is FLOAT16 and name in FLOAT16_SCALAR_OPS:
                return float16_by_scalar(rule or own_rule, kernel, a, b)
            b = WrappedNumber(number_array(b, x.dtype))  # a number never outranks a float tensor: nothing else to check
            y = b._data
        elif (x is not None and x.dtype is FLOAT16 and name in FLOAT16_SCALAR_OPS and y is not None and y.ndim == 0
              and y.dtype.kind == "f" and x.ndim):
            return float16_by_scalar(rule or own_rule, kernel, a, b)
        else:
            a, b, x, y = _promoted(name, a, b)
    if x.__class__ is not y.__class__:  # a GPU array beside a zero-dim host array: pass that as a scalar
        common_device((a, b))  # tensors on two devices get PyTorch's error before a kernel mixes them
        x, y = kernel_operands(x, y)
    where = a._device if a._device is not cpu else b._device
    if where is not cpu and name in ("floor_divide", "remainder") and x.dtype.kind == "f":
        kernel = partial(python_division, where.xp, name == "remainder")
    elif name == "pow" and x.dtype.kind in "iu" and (y < 0).any():
        kernel = partial(_integer_power, where.xp)
    elif where is not cpu:  # the device's own ufunc: numpy's would reach it only through __array_ufunc__
        kernel = getattr(where.xp, kernel.__name__)
    try:
        data = kernel(x, y)
    except ValueError:
        raise broadcast_error(name, x.shape, y.shape) from None
    return record(rule or own_rule, data, (a, b))


def _scaled(name: str, rule: Rule, input: Tensor, other: Any, alpha: Any) -> Tensor:
    """`input + alpha * other` (or minus) as one node, as PyTorch records add/sub with alpha."""
    check_alpha(alpha, result_type(input, other).kind)
    input, other, x, y = _promoted(name, input, other)
    where = input._device if input._device is not cpu else other._device  # a zero-dim cpu input meets any device
    kernel = getattr(where.xp, _BINARY[name][1].__name__)
    # float16 computes in float32 and rounds once (alpha itself is rounded to float16 first), as PyTorch's kernel
    work = np.dtype(np.float32) if x.dtype == np.float16 else x.dtype
    try:
        # alpha checked as PyTorch checks it, and as a scalar: CuPy rejects host arrays
        scaled = y.astype(work, copy=False) * fitted_number(alpha, x.dtype).astype(work)[()]
        data = kernel(*kernel_operands(x.astype(work, copy=False), scaled)).astype(x.dtype, copy=False)
    except ValueError:
        raise broadcast_error(rule.name, x.shape, y.shape) from None
    return record(rule, data, (input, other), alpha=alpha)


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """input + alpha * other."""
    if alpha.__class__ is int and alpha == 1:  # not 1.0 or True, which PyTorch checks against the result's dtype
        return _binary("add", input, other)
    return _scaled("add", ADD_ALPHA, input, other, alpha)


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """input - alpha * other."""
    if alpha.__class__ is int and alpha == 1:  # not 1.0 or True, which PyTorch checks against the result's dtype
        return _binary("sub", input, other)
    return _scaled("sub", SUB_ALPHA, input, other, alpha)


def mul(input: Any, other: Any) -> Tensor:
    return _binary("mul", input, other)


def div(input: Any, other: Any) -> Tensor:
    return _binary("div", input, other)


def floor_divide(input: Any, other: Any) -> Tensor:
    """floor(input / other), rounding toward -inf as Python's //; like PyTorch, it has no derivative."""
    return _binary("floor_divide", input, other)


def remainder(input: Any, other: Any) -> Tensor:
    """input - other * floor(input / other): the result takes other's sign, as Python's %."""
    if not isinstance(input, Tensor):
        return _binary("remainder", input, other, NUMBER_REMAINDER)
    return _binary("remainder", input, other, None if isinstance(other, Tensor) else REMAINDER_SCALAR)


def rsub(input: Tensor, other: Any) -> Tensor:
    """`other - input` for a Python number `other`."""
    if isinstance(other, Tensor):
        return sub(other, input)
    check_subtraction(other, input)
    check_unsigned_number(input, other)
    dtype = result_type(input, other)
    return record(
        RSUB_SCALAR,
        np.subtract(*kernel_operands(as_operand(other, dtype, wrap=True)._data, data_as(input, dtype))),
        (input,),
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | complex) and not isinstance(value, bool)


def pow(input: Any, exponent: Any) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(pow, "pow", input, exponent)
    if isinstance(input, Tensor) and _is_number(exponent):
        dtype = result_type(input, exponent)
        if dtype.kind in "iu" and exponent < 0:
            raise RuntimeError(NEGATIVE_INTEGER_POWER)
        data = np.power(*kernel_operands(data_as(input, dtype), fitted_number(exponent, dtype)))  # PyTorch checks it
        return record(POW_SCALAR, data, (input,), exponent=exponent)
    if isinstance(exponent, Tensor) and _is_number(input):
        dtype = result_type(input, exponent)
        base, power = kernel_operands(as_operand(input, dtype, wrap=True)._data, data_as(exponent, dtype))
        negative = dtype.kind in "iu" and (power < 0).any()
        data = _integer_power(exponent._device.xp, base, power) if negative else np.power(base, power)
        return record(RPOW_SCALAR, data, (exponent,), base=input)
    if exponent.__class__ is bool and isinstance(input, Tensor) and input._data.dtype == bool_:
        # numpy's power of bools is int8; PyTorch's stays bool: x ** True is x, x ** False is all True
        return record(POW_SCALAR, input._data | (not exponent), (input,), exponent=exponent)
    return _binary("pow", input, exponent)


def rtruediv(input: Tensor, other: Any) -> Tensor:
    """`other / input`: recorded as `input.reciprocal() * other`, as PyTorch records it."""
    return mul(reciprocal(input), other)


METHODS = {
    "add": add, "sub": sub, "mul": mul, "floor_divide": floor_divide, "remainder": remainder, "pow": pow,
}
