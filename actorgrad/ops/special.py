"""Special functions (erf, erfc, xlogy, xlog1py, logaddexp, logaddexp2) and their gradient rules; erf's kernels are
`actorgrad.devices.erf_float32` for float32 tensors and Cody's `actorgrad.devices.erf` for the rest."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices.erf_float32 import erf_for_dtype, erfc_for_dtype
from actorgrad.ops.gamma import float64_kernel_op
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


def erf(input: Tensor) -> Tensor:
    """The error function, 2 / sqrt(pi) times the integral of exp(-t**2) from 0 to input."""
    return float64_kernel_op(ERF, erf_for_dtype, input, "erf_vml_cpu")


def erfc(input: Tensor) -> Tensor:
    """1 - erf(input), without the cancellation for large inputs."""
    return float64_kernel_op(ERFC, erfc_for_dtype, input, "erfc_vml_cpu")


def invalid_combination(name: str, input: Any, other: Any) -> TypeError:
    """PyTorch's error for a binary op given neither (Tensor, Tensor), (Number, Tensor) nor (Tensor, Number)."""
    return TypeError(
        f"{name}() received an invalid combination of arguments - got ({type(input).__name__}, "
        f"{type(other).__name__}), but expected one of:\n * (Tensor input, Tensor other, *, Tensor out = None)\n"
        " * (Number self, Tensor other, *, Tensor out = None)\n * (Tensor input, Number other, *, Tensor out = None)\n"
    )


def _log1p(ops: Any, y: Any) -> Any:
    """log1p inside a formula: the op on Tensors (a backward that records), numpy's or CuPy's on arrays."""
    return y.log1p() if isinstance(y, Tensor) else ops.xp.log1p(y)


def _x_log_rules(name: str, log: Any, shift: float) -> tuple[Rule, Rule, Rule]:
    """The rules of x * log(y + shift): x's gradient is log(y + shift), but 0 where x is 0 and y + shift <= 0
    (where the log is -inf or NaN), as PyTorch's formula; y's is x / (y + shift). With x a number only y has a
    gradient; with y a number only x, with y saved as its log."""
    # the log in the gradient's dtype: numpy's log of a uint8 y would be float16
    x_grad = (("y", "masked"), lambda ops, g, y, masked: ops.where(masked, 0, g * log(ops, ops.cast(y, g.dtype))))
    y_grad = (("x", "y"), lambda ops, g, x, y: g * x / (y + shift if shift else y))
    return (
        Rule(f"{name}Backward0", x_grad, y_grad, broadcasts=True),
        Rule(f"{name}Backward1", y_grad),
        Rule(f"{name}Backward2", (("log_y", "masked"), lambda ops, g, log_y, masked: ops.where(masked, 0, g * log_y))),
    )


XLOGY = _x_log_rules("Xlogy", lambda ops, y: ops.log(y), 0)
XLOG1PY = _x_log_rules("SpecialXlog1Py", _log1p, 1)


def _x_log(name: str, rules: tuple[Rule, Rule, Rule], log: Any, pole: float, input: Any, other: Any) -> Tensor:
    """input * log(other) (log1p for xlog1py), 0 where input is 0 unless other is NaN; either operand may be a
    Python number. `pole`: where the log is -inf."""
    numbers = [not isinstance(v, Tensor) for v in (input, other)]
    if all(numbers) or any(not isinstance(v, Tensor | int | float) for v in (input, other)):
        raise invalid_combination(name, input, other)
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
        log_y = log(xp, y)
        try:
            data = xp.where((x == 0) & ~xp.isnan(y), 0, x * log_y).astype(dtype, copy=False)
        except ValueError:
            raise broadcast_error(name, x.shape, y.shape) from None
    if numbers[0]:
        return record(rules[1], data, (other,), x=float(input), y=other)
    masked = Tensor(xp.asarray((x == 0) & (y <= pole)), device=device)
    if numbers[1]:
        return record(rules[2], data, (input,), log_y=float(log_y), masked=masked)
    return record(rules[0], data, (input, other), x=input, y=other, masked=masked)


def xlogy(input: Tensor | float, other: Tensor | float) -> Tensor:
    """input * log(other), 0 where input is 0 (unless other is NaN); either operand may be a Python number."""
    return _x_log("xlogy", XLOGY, lambda xp, y: xp.log(y), 0, input, other)


def xlog1py(input: Tensor | float, other: Tensor | float) -> Tensor:
    """input * log1p(other), 0 where input is 0 (unless other is NaN); either operand may be a Python number."""
    return _x_log("special_xlog1py", XLOG1PY, lambda xp, y: xp.log1p(y), -1, input, other)


def _share(ops: Any, g: Any, self: Any, other: Any, ln_base: float) -> Any:
    """d/d(self) of log_b(b**self + b**other), times g: g / (1 + b**(other - self)), its conjugate for complex
    inputs (PyTorch's conjugate-Wirtinger convention)."""
    gap = other - self
    return g / ops.conj(1 + ops.exp(gap if ln_base == 1 else gap * ln_base))


def _log_add_rule(name: str, ln_base: float) -> Rule:
    return Rule(
        name,
        (("self", "other"), lambda ops, g, self, other: _share(ops, g, self, other, ln_base)),
        (("self", "other"), lambda ops, g, self, other: _share(ops, g, other, self, ln_base)),
        broadcasts=True,
    )


LOGADDEXP = _log_add_rule("LogaddexpBackward0", 1)
LOGADDEXP2 = _log_add_rule("Logaddexp2Backward0", math.log(2))


def _complex_logaddexp(xp: Any, x: Any, y: Any) -> Any:
    """PyTorch's complex logaddexp (numpy's takes no complex numbers): the operand with the larger real part plus
    log1p(exp(smaller - larger)), its imaginary part not wrapped into (-pi, pi]; where both real parts are the same
    infinity, the smaller operand (-inf) or log(exp(x) + exp(y)) (inf), as PyTorch's kernel."""
    x_lower = x.real < y.real
    low, high = xp.where(x_lower, x, y), xp.where(x_lower, y, x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # inf - inf, log(0): replaced below
        out = high + xp.log1p(xp.exp(low - high))
        both_infinite = (low.real == high.real) & xp.isinf(low.real)
        return xp.where(both_infinite, xp.where(low.real < 0, low, xp.log(xp.exp(low) + xp.exp(high))), out)


def _log_add(name: str, rule: Rule, input: Tensor, other: Tensor) -> Tensor:
    require_tensors(name, input=input, other=other)
    device = common_device((input, other))
    dtype = result_type(input, other)
    if dtype.kind != "f" and (dtype.kind != "c" or name != "logaddexp"):
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{SCALAR_NAMES.get(dtype, dtype)}\'')
    x, y = kernel_operands(data_as(input, dtype), data_as(other, dtype))
    try:
        data = _complex_logaddexp(device.xp, x, y) if dtype.kind == "c" else getattr(device.xp, name)(x, y)
    except ValueError:
        raise broadcast_error(name, x.shape, y.shape) from None
    return record(rule, data, (input, other))


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """log(exp(input) + exp(other)), without overflow; floating and complex dtypes."""
    return _log_add("logaddexp", LOGADDEXP, input, other)


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """log2(2**input + 2**other), without overflow; floating dtypes only."""
    return _log_add("logaddexp2", LOGADDEXP2, input, other)


METHODS = {"erf": erf, "erfc": erfc, "xlogy": xlogy, "logaddexp": logaddexp, "logaddexp2": logaddexp2}
