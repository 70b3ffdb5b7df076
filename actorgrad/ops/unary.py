"""Unary math ops (sqrt, rsqrt, trigonometric and hyperbolic functions and their inverses, deg2rad, rad2deg, sinc,
log2, log10, exp2, abs, sign, sgn, signbit, positive, negative, log1p, expm1, square, logit, nan_to_num) and their
gradient rules."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.grad_mode import is_grad_enabled
from actorgrad.ops.arithmetic import pow
from actorgrad.ops.arithmetic_unary import neg
from actorgrad.ops.operands import floating, number_array, require_tensors
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor, bool_

__all__ = [
    "abs", "absolute", "acos", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "asin", "asinh",
    "atan", "atanh", "cos", "cosh", "deg2rad", "exp2", "expm1", "log10", "log1p", "log2", "logit", "nan_to_num",
    "negative", "positive", "rad2deg", "rsqrt", "sgn", "sign", "signbit", "sin", "sinc", "sinh", "sqrt", "square",
    "tan",
]
LN2, LN10 = math.log(2), math.log(10)
RADIANS_PER_DEGREE, DEGREES_PER_RADIAN = math.pi / 180, 180 / math.pi


def _times(factor: float) -> Any:
    """The kernel x * factor, as PyTorch multiplies by a number: float16 in float32, rounded once (numpy would
    round the factor to float16 first, and its rad2deg is off by an ulp in float32)."""
    def kernel(xp: Any, x: Any) -> Any:
        return (x.astype(np.float32) * factor).astype(x.dtype) if x.dtype == np.float16 else x * factor

    return kernel


def _sinc(xp: Any, x: Any) -> Any:
    """sin(pi x) / (pi x), 1 at 0. pi x is rounded to x's dtype first, as PyTorch computes it (so float32's
    sinc(1.0) is -2.8e-08, not 0); float16 computes in float32, as PyTorch's does."""
    y = x.astype(np.float32) if x.dtype == np.float16 else x
    pi_y = y * math.pi
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 / 0, and sin(inf): NaN, as in PyTorch
        return xp.where(y == 0, 1, xp.sin(pi_y) / pi_y).astype(x.dtype, copy=False)


def _sinc_grad(ops: Any, g: Any, self: Any) -> Any:
    """PyTorch's sinc_backward: 0 where pi x**2 is 0 (sinc's slope at 0, and where x**2 underflows); for complex
    x, g times the conjugate slope. float16 computes in float64 (numpy's float16 pi x moves cos(pi x) far: at 27.6
    the slope was 0.0109 for 0.0126; float32 loses it near 0 in pi x cos(pi x) - sin(pi x))."""
    half = not isinstance(self, Tensor) and self.dtype == np.float16
    x = self.astype(np.float64) if half else self
    pi_x, pi_x_squared = x * math.pi, x * x * math.pi
    with np.errstate(divide="ignore", invalid="ignore"):  # the masked 0 / 0
        slope = ops.where(pi_x_squared == 0, 0, g * ops.conj((pi_x * ops.cos(pi_x) - ops.sin(pi_x)) / pi_x_squared))
    return slope.astype(np.float16) if half else slope


def _acosh_grad(ops: Any, g: Any, self: Any) -> Any:
    """1 / sqrt(z**2 - 1) for real z (finite below -1 too, as PyTorch's); for complex z the slope of the principal
    acosh, 1 / (sqrt(z - 1) sqrt(z + 1)), whose sign sqrt(z**2 - 1) gets wrong where Re(z) < 0."""
    if self.dtype.kind == "c":
        return g / ops.conj((self - 1) ** 0.5 * (self + 1) ** 0.5)
    return g / (self * self - 1) ** 0.5


# Ops whose result is floating: an integer input gives the default float dtype, as in PyTorch. A complex input
# keeps its dtype, and its gradient is g times the conjugate of the derivative (PyTorch's convention); `ops.conj`
# returns a real value itself.
FLOATING = {
    "sqrt": (Rule("SqrtBackward0", (("result",), lambda ops, g, result: g / (2 * ops.conj(result)))), "sqrt"),
    "rsqrt": (
        Rule("RsqrtBackward0", (("result",), lambda ops, g, result: -0.5 * g * ops.conj(result * result * result))),
        lambda xp, x: (1 / xp.sqrt(x.astype(np.float32))).astype(x.dtype) if x.dtype == np.float16 else 1 / xp.sqrt(x),
    ),
    "sin": (Rule("SinBackward0", (("self",), lambda ops, g, self: g * ops.conj(ops.cos(self)))), "sin"),
    "cos": (Rule("CosBackward0", (("self",), lambda ops, g, self: -g * ops.conj(ops.sin(self)))), "cos"),
    "tan": (Rule("TanBackward0", (("result",), lambda ops, g, result: g * ops.conj(1 + result * result))), "tan"),
    "asin": (Rule("AsinBackward0", (("self",), lambda ops, g, self: g / ops.conj((1 - self * self) ** 0.5))),
             "arcsin"),
    "acos": (Rule("AcosBackward0", (("self",), lambda ops, g, self: -g / ops.conj((1 - self * self) ** 0.5))),
             "arccos"),
    "atan": (Rule("AtanBackward0", (("self",), lambda ops, g, self: g / ops.conj(1 + self * self))), "arctan"),
    "asinh": (Rule("AsinhBackward0", (("self",), lambda ops, g, self: g / ops.conj((self * self + 1) ** 0.5))),
              "arcsinh"),
    "acosh": (Rule("AcoshBackward0", (("self",), _acosh_grad)), "arccosh"),
    "atanh": (Rule("AtanhBackward0", (("self",), lambda ops, g, self: g / ops.conj(1 - self * self))), "arctanh"),
    "deg2rad": (Rule("Deg2RadBackward0", ((), lambda ops, g: g * RADIANS_PER_DEGREE)),
                _times(RADIANS_PER_DEGREE)),
    "rad2deg": (Rule("Rad2DegBackward0", ((), lambda ops, g: g * DEGREES_PER_RADIAN)),
                _times(DEGREES_PER_RADIAN)),
    "sinc": (Rule("SincBackward0", (("self",), _sinc_grad)), _sinc),
    # cosh and sinh from exp: the rule's helpers have no hyperbolic functions, and exp is differentiable again
    "sinh": (Rule("SinhBackward0", (("self",), lambda ops, g, self: g * ops.conj(ops.exp(self) + ops.exp(-self)) / 2)),
             "sinh"),
    "cosh": (Rule("CoshBackward0", (("self",), lambda ops, g, self: g * ops.conj(ops.exp(self) - ops.exp(-self)) / 2)),
             "cosh"),
    "log1p": (Rule("Log1PBackward0", (("self",), lambda ops, g, self: g / ops.conj(self + 1))), "log1p"),
    "expm1": (Rule("Expm1Backward0", (("result",), lambda ops, g, result: g * ops.conj(result + 1))), "expm1"),
    "log2": (Rule("Log2Backward0", (("self",), lambda ops, g, self: g / ops.conj(self * LN2))), "log2"),
    "log10": (Rule("Log10Backward0", (("self",), lambda ops, g, self: g / ops.conj(self * LN10))), "log10"),
    "exp2": (Rule("Exp2Backward0", (("result",), lambda ops, g, result: g * ops.conj(result * LN2))), "exp2"),
}
# The ops of FLOATING that refuse complex inputs, and why: PyTorch's text, or actorgrad's where PyTorch has one.
NOT_COMPLEX = {
    "deg2rad": "deg2rad is not supported for complex tensors.",
    "rad2deg": "rad2deg is not supported for complex tensors.",
}
# abs' kink: the gradient at 0 is 0 (sign(0)), as in PyTorch.
ABS = Rule("AbsBackward0", (("self",), lambda ops, g, self: g * ops.sign(self)))
# sign is flat wherever it is differentiable; PyTorch still records a node, whose gradient is zeros.
SIGN = Rule("SignBackward0", ((), lambda ops, g: ops.zeros_like(g)))
# sgn is sign for real values; its own node name, as in PyTorch.
SGN = Rule("SgnBackward0", ((), lambda ops, g: ops.zeros_like(g)))


def _complex_sgn_grad(ops: Any, g: Any, self: Any, result: Any) -> Any:
    """sgn(z) = z / |z| changes only across the direction of z: (g - sgn Re(g conj(sgn))) / |z|, 0 at z = 0
    (PyTorch's sgn_backward)."""
    magnitude = builtins.abs(self)
    return ops.where(magnitude == 0, 0, (g - result * (g * ops.conj(result)).real) / magnitude)


COMPLEX_SGN = Rule("SgnBackward0", (("self", "result"), _complex_sgn_grad))


def _floating(name: str, input: Tensor) -> Tensor:
    """The kernel (a function of the device's array module, or the name of one of its functions) on the input
    in its floating dtype."""
    rule, kernel = FLOATING[name]
    x = input._data
    xp = input._device.xp
    if x.dtype.kind == "c":
        if name in NOT_COMPLEX:
            raise RuntimeError(NOT_COMPLEX[name])
    else:
        x = x.astype(floating(x.dtype), copy=False)
    return record(rule, getattr(xp, kernel)(x) if kernel.__class__ is str else kernel(xp, x), (input,))


def sqrt(input: Tensor) -> Tensor:
    return _floating("sqrt", input)


def rsqrt(input: Tensor) -> Tensor:
    """1 / sqrt(input)."""
    if autocast_state.get() is not None:
        return autocast_call(rsqrt, "rsqrt", input)
    return _floating("rsqrt", input)


def sin(input: Tensor) -> Tensor:
    return _floating("sin", input)


def cos(input: Tensor) -> Tensor:
    return _floating("cos", input)


def tan(input: Tensor) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(tan, "tan", input)
    return _floating("tan", input)


def asin(input: Tensor) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(asin, "asin", input)
    return _floating("asin", input)


def acos(input: Tensor) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(acos, "acos", input)
    return _floating("acos", input)


def atan(input: Tensor) -> Tensor:
    return _floating("atan", input)


def arcsin(input: Tensor) -> Tensor:
    """Alias of asin."""
    return asin(input)


def arccos(input: Tensor) -> Tensor:
    """Alias of acos."""
    return acos(input)


def arctan(input: Tensor) -> Tensor:
    """Alias of atan."""
    return atan(input)


def asinh(input: Tensor) -> Tensor:
    return _floating("asinh", input)


def acosh(input: Tensor) -> Tensor:
    return _floating("acosh", input)


def atanh(input: Tensor) -> Tensor:
    return _floating("atanh", input)


def arcsinh(input: Tensor) -> Tensor:
    """Alias of asinh."""
    return asinh(input)


def arccosh(input: Tensor) -> Tensor:
    """Alias of acosh."""
    return acosh(input)


def arctanh(input: Tensor) -> Tensor:
    """Alias of atanh."""
    return atanh(input)


def deg2rad(input: Tensor) -> Tensor:
    """input * pi / 180."""
    return _floating("deg2rad", input)


def rad2deg(input: Tensor) -> Tensor:
    """input * 180 / pi."""
    return _floating("rad2deg", input)


def sinc(input: Tensor) -> Tensor:
    """The normalized sinc, sin(pi input) / (pi input), 1 at 0."""
    return _floating("sinc", input)


def sinh(input: Tensor) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(sinh, "sinh", input)
    return _floating("sinh", input)


def cosh(input: Tensor) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(cosh, "cosh", input)
    return _floating("cosh", input)


def log2(input: Tensor) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(log2, "log2", input)
    return _floating("log2", input)


def log10(input: Tensor) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(log10, "log10", input)
    return _floating("log10", input)


def exp2(input: Tensor) -> Tensor:
    """2 ** input."""
    return _floating("exp2", input)


def log1p(input: Tensor) -> Tensor:
    """log(1 + input), accurate for small inputs."""
    if autocast_state.get() is not None:
        return autocast_call(log1p, "log1p", input)
    return _floating("log1p", input)


def expm1(input: Tensor) -> Tensor:
    """exp(input) - 1, accurate for small inputs."""
    if autocast_state.get() is not None:
        return autocast_call(expm1, "expm1", input)
    return _floating("expm1", input)


def abs(input: Tensor) -> Tensor:
    x = input._data
    if x.dtype == bool_:
        raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'")
    return record(ABS, np.abs(x), (input,))


def absolute(input: Tensor) -> Tensor:
    """Alias of abs."""
    return abs(input)


def _sign(rule: Rule, input: Tensor) -> Tensor:
    x = input._data
    return record(rule, x.copy() if x.dtype == bool_ else np.nan_to_num(np.sign(x)), (input,))


def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1; NaN gives 0, as in PyTorch."""
    if input._data.dtype.kind == "c":
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                                  "torch.sgn instead.")
    return _sign(SIGN, input)


def sgn(input: Tensor) -> Tensor:
    """sign for real tensors; z / |z| (0 at 0) for complex ones. Recorded as SgnBackward0."""
    x = input._data
    if x.dtype.kind != "c":
        return _sign(SGN, input)
    return record(COMPLEX_SGN, input._device.ops.sign(x), (input,))


def signbit(input: Tensor) -> Tensor:
    """Whether each element's sign bit is set (True for -0.0 and a negative NaN); a bool tensor without grad."""
    if input.dtype.kind == "c":
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    xp = input._device.xp
    return Tensor(xp.asarray(xp.signbit(input._data)), device=input._device)  # 0-d: a numpy scalar


def negative(input: Tensor) -> Tensor:
    """Alias of neg."""
    return neg(input)


def positive(input: Tensor) -> Tensor:
    """The input itself (PyTorch returns the same tensor, not a copy); a bool tensor is refused."""
    if input._data.dtype == bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# logit's gradient outside its domain: NaN without eps (as 1 / (x (1 - x)) has no meaning there), 0 with eps
# (the input was clamped there, so it had no effect), as PyTorch's logit_backward.
LOGIT = Rule(
    "LogitBackward0",
    (("self", "outside", "off_domain"),
     lambda ops, g, self, outside, off_domain: ops.where(outside, off_domain, g / (self * (1 - self)))),
)
# nan_to_num passes the gradient where the input was finite; the values it put in are constants.
NAN_TO_NUM = Rule("NanToNumBackward0", (("finite",), lambda ops, g, finite: ops.where(finite, g, 0)))


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """log(p / (1 - p)); with `eps`, p is first clamped to [eps, 1 - eps]. A negative eps means none (PyTorch's
    default is -1), and an eps above 0.5 clamps as PyTorch's kernel does: below eps to eps, else above 1 - eps to
    1 - eps (np.clip would give 1 - eps everywhere)."""
    x = input._data
    xp = input._device.xp
    x = x.astype(floating(x.dtype, "logit"), copy=False)
    if eps is None or eps < 0:
        outside, off_domain, p = (x < 0) | (x > 1), math.nan, x
    else:
        lo, hi = number_array(eps, x.dtype)[()], number_array(1 - eps, x.dtype)[()]
        below, above = x < lo, x > hi
        outside, off_domain, p = below | above, 0, xp.where(below, lo, xp.where(above, hi, x))
    with np.errstate(divide="ignore", invalid="ignore"):  # p = 0 or 1 gives -inf or inf, as in PyTorch
        data = xp.log(p / (1 - p))
    return record(LOGIT, data, (input,), outside=Tensor(outside, device=input._device), off_domain=off_domain)


def nan_to_num(
    input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Tensor:
    """NaN, inf and -inf replaced by `nan`, `posinf` and `neginf` (by default 0 and the dtype's largest and
    smallest values), in a complex tensor's real and imaginary parts apart; integer and bool tensors come back as
    copies."""
    x = input._data
    xp = input._device.xp
    if x.dtype.kind == "c":  # the real and imaginary parts replaced apart, as in PyTorch, which has no gradient
        if input.requires_grad and is_grad_enabled():
            raise RuntimeError("nan_to_num does not support automatic differentiation for outputs with complex dtype.")
        data = xp.empty_like(x)
        data[...] = xp.nan_to_num(x.real, nan=nan, posinf=posinf, neginf=neginf)
        data.imag[...] = xp.nan_to_num(x.imag, nan=nan, posinf=posinf, neginf=neginf)  # a view, in numpy and CuPy
        return record(NAN_TO_NUM, data, (input,), finite=None)
    if x.dtype.kind != "f":  # never requires grad: no mask to save
        return record(NAN_TO_NUM, x.copy(), (input,), finite=None)
    data = xp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)
    return record(NAN_TO_NUM, data, (input,), finite=Tensor(xp.isfinite(x), device=input._device))


def square(input: Tensor) -> Tensor:
    """input ** 2, recorded as PowBackward0 as in PyTorch."""
    require_tensors("square", input=input)  # pow would take a number
    return pow(input, 2)


METHODS: dict[str, Any] = {
    "sqrt": sqrt, "rsqrt": rsqrt, "sin": sin, "cos": cos, "tan": tan, "asin": asin, "acos": acos, "atan": atan,
    "arcsin": arcsin, "arccos": arccos, "arctan": arctan, "asinh": asinh, "acosh": acosh, "atanh": atanh,
    "arcsinh": arcsinh, "arccosh": arccosh, "arctanh": arctanh, "deg2rad": deg2rad, "rad2deg": rad2deg, "sinc": sinc,
    "sinh": sinh, "cosh": cosh, "log2": log2, "log10": log10, "exp2": exp2, "log1p": log1p, "expm1": expm1, "abs": abs,
    "__abs__": abs, "absolute": absolute, "sign": sign, "sgn": sgn, "signbit": signbit, "negative": negative,
    "positive": positive, "__pos__": positive, "square": square, "logit": logit, "nan_to_num": nan_to_num,
}
