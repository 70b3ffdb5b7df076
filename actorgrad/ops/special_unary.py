"""torch.special's ndtr, erfcx, Bessel functions of the first and second kind (bessel_j0, bessel_j1, bessel_y0,
bessel_y1), modified Bessel functions (modified_bessel_i0, i1, k0, k1 and the scaled k0, k1), spherical_bessel_j0 and
airy_ai.

The kernels (`actorgrad.devices.bessel_jy`, `bessel_k`, `bessel`, `airy`, `erf`) run in float64 and round to the
op's floating dtype. As in PyTorch, ndtr is (1 + erf(x / sqrt 2)) / 2 recorded as those ops, erfcx has a gradient
and the Bessel and Airy functions have none: their results never require grad, whatever their input.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices import airy, bessel, bessel_jy, bessel_k
from actorgrad.devices.erf import erfcx as erfcx_of_positive
from actorgrad.ops.operands import floating, not_implemented
from actorgrad.ops.record import Rule, record
from actorgrad.ops.special import erf
from actorgrad.tensor import Tensor, float16

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "erfcx", "modified_bessel_i0",
    "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "ndtr", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "spherical_bessel_j0",
]

SQRT1_2 = 1 / math.sqrt(2)
TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
OVERFLOW = 27.0  # exp(27**2) is inf in float64; clamping there keeps the split finite for -inf


def _computed(name: str, kernel: Any, input: Tensor) -> Any:
    """The kernel's float64 values rounded to the op's floating dtype; PyTorch's error for float16, which its
    kernels lack."""
    x = input._data
    dtype = floating(x.dtype)
    if dtype == float16:
        raise not_implemented(f"{name}_{input._device.type}", dtype)
    with np.errstate(all="ignore"):
        return kernel(input._device.xp, x).astype(dtype, copy=False)


def _exp_square(xp: Any, y: Any) -> Any:
    """exp(y * y) without the rounding error of y * y, which exp would magnify: y splits into a multiple of 1/16
    (whose square is exact) and a small rest."""
    head = xp.trunc(y * 16) / 16
    return xp.exp(head * head) * xp.exp((y - head) * (y + head))


def erfcx_kernel(xp: Any, x: Any) -> Any:
    """exp(x**2) erfc(x) for any x: `erf.erfcx` at x >= 0, and 2 exp(x**2) - erfcx(-x) below (DLMF 7.4.3), inf
    where exp(x**2) overflows."""
    x = xp.asarray(x, dtype=xp.float64)
    y = xp.abs(x)
    positive = erfcx_of_positive(xp, y)
    return xp.where(x < 0, 2 * _exp_square(xp, xp.minimum(y, OVERFLOW)) - positive, positive)


ERFCX = Rule("SpecialErfcxBackward0", (
    ("self", "result"), lambda ops, g, self, result: (2 * self * result - TWO_OVER_SQRT_PI) * g,
))


def erfcx(input: Tensor) -> Tensor:
    """The scaled complementary error function exp(input**2) erfc(input): erfc without its underflow."""
    return record(ERFCX, _computed("erfcx", erfcx_kernel, input), (input,))


def ndtr(input: Tensor) -> Tensor:
    """The standard normal cdf, (1 + erf(input / sqrt 2)) / 2 as PyTorch computes and records it (so 0 from
    input -38 down; log_ndtr keeps the far left tail)."""
    return (1 + erf(input * SQRT1_2)) * 0.5


def _no_derivative(name: str, kernel: Any, input: Tensor) -> Tensor:
    return Tensor(_computed(name, kernel, input), device=input._device)


def bessel_j0(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 0."""
    return _no_derivative("bessel_j0", bessel_jy.j0, input)


def bessel_j1(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 1."""
    return _no_derivative("bessel_j1", bessel_jy.j1, input)


def bessel_y0(input: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 0: -inf at 0, NaN below."""
    return _no_derivative("bessel_y0", bessel_jy.y0, input)


def bessel_y1(input: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 1: -inf at 0, NaN below."""
    return _no_derivative("bessel_y1", bessel_jy.y1, input)


def modified_bessel_i0(input: Tensor) -> Tensor:
    """I0, as `i0` but with no gradient (PyTorch's modified_bessel_i0 has none)."""
    return _no_derivative("modified_bessel_i0", bessel.i0, input)


def modified_bessel_i1(input: Tensor) -> Tensor:
    """I1, as `special.i1` but with no gradient."""
    return _no_derivative("modified_bessel_i1", bessel.i1, input)


def modified_bessel_k0(input: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 0: inf at 0, NaN below."""
    return _no_derivative("modified_bessel_k0", bessel_k.k0, input)


def modified_bessel_k1(input: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 1: inf at 0, NaN below."""
    return _no_derivative("modified_bessel_k1", bessel_k.k1, input)


def scaled_modified_bessel_k0(x: Tensor) -> Tensor:
    """exp(x) K0(x), which does not underflow."""
    return _no_derivative("scaled_modified_bessel_k0", bessel_k.k0e, x)


def scaled_modified_bessel_k1(x: Tensor) -> Tensor:
    """exp(x) K1(x), which does not underflow."""
    return _no_derivative("scaled_modified_bessel_k1", bessel_k.k1e, x)


def spherical_bessel_j0(x: Tensor) -> Tensor:
    """The spherical Bessel function of the first kind of order 0, sin(x) / x."""
    return _no_derivative("spherical_bessel_j0", bessel_jy.spherical_j0, x)


def airy_ai(x: Tensor) -> Tensor:
    """The Airy function Ai, the solution of y'' = x y that decays as x grows."""
    return _no_derivative("airy_ai", airy.airy_ai, x)
