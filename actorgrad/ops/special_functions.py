"""torch.special's incomplete gamma functions (gammainc, gammaincc: igamma and igammac at top level and as Tensor
methods), modified Bessel functions (i0, i0e, i1, i1e), the normal distribution's log cdf and inverse cdf
(log_ndtr, ndtri), entr and the Hurwitz zeta function, with their gradient rules.

The kernels are `actorgrad.devices.incomplete_gamma`, `bessel`, `normal` and `zeta`: they run in float64 and round
to the op's floating dtype. Where PyTorch has no derivative (igamma's and igammac's input, zeta's x) the node is
recorded all the same, and raises PyTorch's error when a backward reaches that input.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices import bessel, incomplete_gamma, normal
from actorgrad.devices import zeta as zeta_kernel
from actorgrad.ops.gamma import float64_kernel_op, lgamma
from actorgrad.ops.inplace_recording import write_in_place
from actorgrad.ops.operands import (
    SCALAR_NAMES,
    broadcast_error,
    data_as,
    floating,
    kernel_operands,
    not_implemented,
    require_tensors,
    result_type,
)
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.ops.special import invalid_combination
from actorgrad.ops.special_unary import SQRT1_2, erfcx, erfcx_kernel
from actorgrad.tensor import Tensor, float16

__all__ = ["i0", "igamma", "igammac"]

SQRT_2PI = math.sqrt(2 * math.pi)
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def _not_implemented(what: str) -> Any:
    def formula(ops: Any, g: Any) -> Any:
        raise NotImplementedError(f"the derivative for '{what}' is not implemented.")

    return formula


def _special(ops: Any, like: Any, kernel: Any, op: Any, *args: Any) -> Any:
    """A special function inside a gradient formula: the op itself on Tensors (a backward that records, so it
    differentiates again), the kernel on raw arrays, in `like`'s dtype."""
    if isinstance(like, Tensor):
        return op(*args)
    return kernel(ops.xp, *args).astype(like.dtype, copy=False)


def _per_element(ns: float) -> Any:
    return lambda data, params: ns * data.size


def _i1_grad(ops: Any, g: Any, self: Any, result: Any, scaled: bool) -> Any:
    """I1' = I0 - I1 / x and I1e' = I0e - I1e (sgn(x) + 1 / x); 1/2 (their limit at 0) where |x| is not above the
    dtype's eps, NaN included, as PyTorch's i1_backward, which has no float16 kernel."""
    if self.dtype == float16:
        raise not_implemented("i1e_backward" if scaled else "i1_backward", float16)
    eps = float(np.finfo(self.dtype).eps)
    big = abs(self) > eps
    safe = ops.where(big, self, eps)
    if scaled:
        slope = _special(ops, safe, bessel.i0e, i0e, safe) - result * (ops.sign(safe) + 1 / safe)
    else:
        slope = _special(ops, safe, bessel.i0, i0, safe) - result / safe
    return g * ops.where(big, slope, 0.5)


# The backward kernels' nanoseconds per element, measured here on 1e5 float64 elements, so that the scheduler sends
# large nodes to worker threads (the default estimate is 1 ns per element).
I0 = Rule("I0Backward0", (("self",), lambda ops, g, self: g * _special(ops, self, bessel.i1, i1, self)),
          cost=_per_element(200))
I0E = Rule("SpecialI0EBackward0", (
    ("self", "result"),
    lambda ops, g, self, result: g * (_special(ops, self, bessel.i1e, i1e, self) - ops.sign(self) * result),
), cost=_per_element(200))
I1 = Rule("SpecialI1Backward0", (
    ("self", "result"), lambda ops, g, self, result: _i1_grad(ops, g, self, result, False),
), cost=_per_element(250))
I1E = Rule("SpecialI1EBackward0", (
    ("self", "result"), lambda ops, g, self, result: _i1_grad(ops, g, self, result, True),
), cost=_per_element(250))
NDTRI = Rule("SpecialNdtriBackward0", (("result",), lambda ops, g, result: g * SQRT_2PI * ops.exp(result * result / 2)))


def _log_ndtr_grad(ops: Any, g: Any, self: Any, result: Any) -> Any:
    """pdf / cdf = sqrt(2 / pi) / erfcx(-self / sqrt 2): PyTorch's exp(-(result + self**2 / 2)) / sqrt(2 pi) loses
    the slope in the cancellation of its two large terms in the left tail (at -1000, 956 in float32 for 1000).
    Recorded (on Tensors), erfcx is taken below 0 only, where its derivative stays finite, and PyTorch's expression,
    exact there, above."""
    if isinstance(self, Tensor):
        left = self < 0
        tail = SQRT_2_OVER_PI / erfcx(ops.where(left, self * -SQRT1_2, 0.0))
        return g * ops.where(left, tail, ops.exp(-(result + self * self / 2)) / SQRT_2PI)
    return g * (SQRT_2_OVER_PI / erfcx_kernel(ops.xp, self * -SQRT1_2).astype(self.dtype, copy=False))


LOG_NDTR = Rule("SpecialLogNdtrBackward0", (("self", "result"), _log_ndtr_grad))
ENTR = Rule("SpecialEntrBackward0", (("self",), lambda ops, g, self: g * -(1 + ops.log(self))))


def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0."""
    return float64_kernel_op(I0, bessel.i0, input, "i0_vml_cpu")


def i0e(input: Tensor) -> Tensor:
    """exp(-|input|) i0(input), which does not overflow."""
    return float64_kernel_op(I0E, bessel.i0e, input, "i0e_cpu")


def i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 1."""
    return float64_kernel_op(I1, bessel.i1, input, "i1_cpu")


def i1e(input: Tensor) -> Tensor:
    """exp(-|input|) i1(input), which does not overflow."""
    return float64_kernel_op(I1E, bessel.i1e, input, "i1e_cpu")


def _refuse_half(name: str, input: Tensor) -> None:
    """PyTorch's error for float16 where its kernel has no half version (ndtri, log_ndtr)."""
    if input._data.dtype == float16:
        raise not_implemented(f"{name}_{input._device.type}", float16)


def ndtri(input: Tensor) -> Tensor:
    """The inverse of the standard normal cdf: -inf at 0, inf at 1, NaN outside [0, 1]."""
    _refuse_half("ndtri", input)
    return float64_kernel_op(NDTRI, normal.ndtri, input, "ndtri_cpu")


def log_ndtr(input: Tensor) -> Tensor:
    """The log of the standard normal cdf, accurate far into both tails."""
    _refuse_half("log_ndtr", input)
    return float64_kernel_op(LOG_NDTR, normal.log_ndtr, input, "log_ndtr_cpu")


def _entr_kernel(xp: Any, x: Any) -> Any:
    x = xp.asarray(x, dtype=xp.float64)
    return xp.where(x > 0, -x * xp.log(xp.where(x > 0, x, 1.0)), xp.where(x == 0, 0.0, xp.where(x < 0, -xp.inf, x)))


def entr(input: Tensor) -> Tensor:
    """-input log(input) elementwise: 0 at 0, -inf below 0."""
    return float64_kernel_op(ENTR, _entr_kernel, input, "entr_cpu")


# -- igamma, igammac ---------------------------------------------------------------------------------------------
def _igamma_slope(ops: Any, g: Any, self: Any, other: Any) -> Any:
    """d igamma / d other = other**(self - 1) e**-other / Gamma(self): PyTorch's exp((self - 1) log(other) - other
    - lgamma(self)), recorded as that on Tensors; on raw arrays a kernel that keeps its accuracy where that
    expression cancels (large self and other) and matches its values at the edges."""
    if isinstance(other, Tensor):
        return g * ((self - 1) * other.log() - other - lgamma(self)).exp()
    return g * incomplete_gamma.gammainc_grad(ops.xp, self, other).astype(g.dtype, copy=False)


IGAMMA = Rule("IgammaBackward0", ((), _not_implemented("igamma: input")), (("self", "other"), _igamma_slope),
              broadcasts=True, cost=_per_element(250))
IGAMMAC = Rule("IgammacBackward0", ((), _not_implemented("igammac: input")),
               (("self", "other"), lambda ops, g, self, other: _igamma_slope(ops, -g, self, other)),
               broadcasts=True, cost=_per_element(250))


def _incomplete_gamma(name: str, upper: bool, input: Tensor, other: Tensor) -> Tensor:
    """P or Q of two tensors; `name` for the shape error (the dtype error names PyTorch's kernel)."""
    device = common_device((input, other))
    dtype = result_type(input, other)
    if dtype.kind != "f":
        kernel = "igammac" if upper else "igamma"
        raise NotImplementedError(f'"{kernel}_{device.type}" not implemented for \'{SCALAR_NAMES[dtype]}\'')
    a, x = kernel_operands(data_as(input, dtype), data_as(other, dtype))
    try:
        np.broadcast_shapes(a.shape, x.shape)
    except ValueError:
        raise broadcast_error(name, a.shape, x.shape) from None
    fn = incomplete_gamma.gammaincc if upper else incomplete_gamma.gammainc
    data = fn(device.xp, a, x).astype(dtype, copy=False)
    return record(IGAMMAC if upper else IGAMMA, data, (input, other))


def igamma(input: Tensor, other: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other); floating dtypes only. Differentiable in
    other only, as in PyTorch."""
    require_tensors("igamma", input=input, other=other)
    return _incomplete_gamma("igamma", False, input, other)


def igammac(input: Tensor, other: Tensor) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P(input, other)."""
    require_tensors("igammac", input=input, other=other)
    return _incomplete_gamma("igammac", True, input, other)


def special_gammainc(input: Tensor, other: Tensor) -> Tensor:
    """P(input, other) (igamma)."""
    require_tensors("special_gammainc", input=input, other=other)
    return _incomplete_gamma("special_gammainc", False, input, other)


def special_gammaincc(input: Tensor, other: Tensor) -> Tensor:
    """Q(input, other) (igammac)."""
    require_tensors("special_gammaincc", input=input, other=other)
    return _incomplete_gamma("special_gammaincc", True, input, other)


# -- zeta ----------------------------------------------------------------------------------------------------------
def _zeta_grad(ops: Any, g: Any, x: Any, q: Any) -> Any:
    """d zeta(x, q) / dq = -x zeta(x + 1, q)."""
    return -g * x * _special(ops, q, zeta_kernel.zeta, zeta, x + 1, q)


ZETA = Rule("SpecialZetaBackward0", ((), _not_implemented("zeta")), (("x", "q"), _zeta_grad), broadcasts=True,
            cost=_per_element(500))
ZETA_NUMBER_X = Rule("SpecialZetaBackward1", (("x", "q"), _zeta_grad), cost=_per_element(500))
ZETA_NUMBER_Q = Rule("SpecialZetaBackward2", ((), _not_implemented("zeta")))


def zeta(input: Tensor | float, other: Tensor | float) -> Tensor:
    """The Hurwitz zeta function, the sum over k >= 0 of (other + k)**-input; either operand may be a Python
    number. Differentiable in other only, as in PyTorch."""
    numbers = [not isinstance(v, Tensor) for v in (input, other)]
    if all(numbers) or any(not isinstance(v, Tensor | int | float) for v in (input, other)):
        raise invalid_combination("special_zeta", input, other)
    dtype = floating(result_type(input, other))
    device = common_device([v for v in (input, other) if isinstance(v, Tensor)])
    if dtype == float16:
        raise NotImplementedError(f'"zeta_{device.type}" not implemented for \'Half\'')
    x, q = kernel_operands(*(np.asarray(v, dtype) if number else data_as(v, dtype)
                             for v, number in zip((input, other), numbers)))
    try:
        np.broadcast_shapes(x.shape, q.shape)
    except ValueError:
        raise broadcast_error("special_zeta", x.shape, q.shape) from None
    data = zeta_kernel.zeta(device.xp, x, q).astype(dtype, copy=False)
    if numbers[0]:
        return record(ZETA_NUMBER_X, data, (other,), x=float(input), q=other)
    if numbers[1]:
        return record(ZETA_NUMBER_Q, data, (input,))
    return record(ZETA, data, (input, other), x=input, q=other)


# -- Tensor methods: other is argument 1 ----------------------------------------------------------------------------
def _incomplete_gamma_method(name: str, upper: bool) -> Any:
    def method(self: Tensor, other: Tensor) -> Tensor:
        require_tensors(name, 1, other=other)
        return _incomplete_gamma(name, upper, self, other)

    def in_place(self: Tensor, other: Tensor) -> Tensor:
        require_tensors(name + "_", 1, other=other)
        return write_in_place(self, lambda s: _incomplete_gamma(name, upper, s, other), (other,), True)

    method.__name__, in_place.__name__ = name, name + "_"
    return {name: method, name + "_": in_place}


METHODS = {
    "i0": i0, "i0_": lambda self: write_in_place(self, i0, (), True),
    **_incomplete_gamma_method("igamma", False), **_incomplete_gamma_method("igammac", True),
}
