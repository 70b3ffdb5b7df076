"""Special functions (erf, erfc, xlogy, logaddexp, logaddexp2) and their gradient rules; erf's kernel is
`actorgrad.devices.erf`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices.erf import erf as erf_kernel
from actorgrad.devices.erf import erfc as erfc_kernel
from actorgrad.ops.operands import (
    SCALAR_NAMES,
    broadcast_error,
    data_as,
    floating,
    kernel_operands,
    require_tensors,
    result_type,
)
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.tensor import Tensor

__all__ = ["erf", "erfc", "logaddexp", "logaddexp2", "xlogy"]

TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)

ERF = Rule("ErfBackward0", (("self",), lambda ops, g, self: g * TWO_OVER_SQRT_PI * ops.exp(-self * self)))
ERFC = Rule("ErfcBackward0", (("self",), lambda ops, g, self: -g * TWO_OVER_SQRT_PI * ops.exp(-self * self)))


def _apply(rule: Rule, kernel: Any, input: Tensor) -> Tensor:
    """The kernel runs in float64 whatever the input's dtype, then rounds to the op's floating dtype."""
    x = input._data
    return record(rule, kernel(input._device.xp, x).astype(floating(x.dtype), copy=False), (input,))


def erf(input: Tensor) -> Tensor:
    """The error function, 2 / sqrt(pi) times the integral of exp(-t**2) from 0 to input."""
    return _apply(ERF, erf_kernel, input)


def erfc(input: Tensor) -> Tensor:
    """1 - erf(input), without the cancellation for large inputs."""
    return _apply(ERFC, erfc_kernel, input)


# x's gradient is log(y), but 0 where x is 0 and y <= 0 (where log(y) is -inf or NaN), as PyTorch's formula.
_X_GRAD = (("y", "masked"), lambda ops, g, y, masked: ops.where(masked, 0, g * ops.log(y)))
_Y_GRAD = (("x", "y"), lambda ops, g, x, y: g * x / y)
XLOGY = Rule("XlogyBackward0", _X_GRAD, _Y_GRAD, broadcasts=True)
# x a number: only y has a gradient; y a number: only x, with y saved as its log.
XLOGY_NUMBER_X = Rule("XlogyBackward1", _Y_GRAD)
XLOGY_NUMBER_Y = Rule(
    "XlogyBackward2", (("log_y", "masked"), lambda ops, g, log_y, masked: ops.where(masked, 0, g * log_y))
)


def xlogy(input: Tensor | float, other: Tensor | float) -> Tensor:
    """input * log(other), 0 where input is 0 (unless other is NaN); either operand may be a Python number."""
    numbers = [not isinstance(v, Tensor) for v in (input, other)]
    if all(numbers) or any(not isinstance(v, Tensor | int | float) for v in (input, other)):
        raise TypeError(f"xlogy() received an invalid combination of arguments - got ({type(input).__name__}, "
                        f"{type(other).__name__}), but expected (Tensor, Tensor), (Number, Tensor) or "
                        "(Tensor, Number)")
    dtype = floating(result_type(input, other))
    if numbers[0]:
        device, x, y = other._device, np.asarray(input, dtype)[()], data_as(other, dtype)
    elif numbers[1]:
        device, x, y = input._device, data_as(input, dtype), np.asarray(other, dtype)[()]
    else:
        device = common_device((input, other))
        x, y = kernel_operands(data_as(input, dtype), data_as(other, dtype))
    xp = device.xp
    with np.errstate(divide="ignore", invalid="ignore"):  # log of 0 or a negative: -inf or NaN, as in PyTorch
        log_y = xp.log(y)
        try:
            data = xp.where((x == 0) & ~xp.isnan(y), 0, x * log_y).astype(dtype, copy=False)
        except ValueError:
            raise broadcast_error("xlogy", x.shape, y.shape) from None
    if numbers[0]:
        return record(XLOGY_NUMBER_X, data, (other,), x=float(input), y=other)
    masked = Tensor(xp.asarray((x == 0) & (y <= 0)), device=device)
    if numbers[1]:
        return record(XLOGY_NUMBER_Y, data, (input,), log_y=float(log_y), masked=masked)
    return record(XLOGY, data, (input, other), x=input, y=other, masked=masked)


def _share(ops: Any, g: Any, self: Any, other: Any, ln_base: float) -> Any:
    """d/d(self) of log_b(b**self + b**other), times g: g / (1 + b**(other - self))."""
    gap = other - self
    return g / (1 + ops.exp(gap if ln_base == 1 else gap * ln_base))


def _log_add_rule(name: str, ln_base: float) -> Rule:
    return Rule(
        name,
        (("self", "other"), lambda ops, g, self, other: _share(ops, g, self, other, ln_base)),
        (("self", "other"), lambda ops, g, self, other: _share(ops, g, other, self, ln_base)),
        broadcasts=True,
    )


LOGADDEXP = _log_add_rule("LogaddexpBackward0", 1)
LOGADDEXP2 = _log_add_rule("Logaddexp2Backward0", math.log(2))


def _log_add(name: str, rule: Rule, input: Tensor, other: Tensor) -> Tensor:
    require_tensors(name, input=input, other=other)
    device = common_device((input, other))
    dtype = result_type(input, other)
    if dtype.kind != "f":
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{SCALAR_NAMES.get(dtype, dtype)}\'')
    x, y = kernel_operands(data_as(input, dtype), data_as(other, dtype))
    try:
        data = getattr(device.xp, name)(x, y)
    except ValueError:
        raise broadcast_error(name, x.shape, y.shape) from None
    return record(rule, data, (input, other))


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """log(exp(input) + exp(other)), without overflow; floating dtypes only."""
    return _log_add("logaddexp", LOGADDEXP, input, other)


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """log2(2**input + 2**other), without overflow; floating dtypes only."""
    return _log_add("logaddexp2", LOGADDEXP2, input, other)


METHODS = {"erf": erf, "erfc": erfc, "xlogy": xlogy, "logaddexp": logaddexp, "logaddexp2": logaddexp2}
