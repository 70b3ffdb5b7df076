"""The modified Bessel functions of the first kind I0 and I1, and their exponentially scaled forms
I0e(x) = exp(-|x|) I0(x) and I1e(x) = exp(-|x|) I1(x), on float64 arrays, good to a few ulps.

Two ranges of |x|, each a polynomial evaluated by Horner's rule on the whole array and picked with `where`:

- |x| <= 20: the power series I0(x) = sum_k (x**2 / 4)**k / k!**2 and I1(x) = x / 2 sum_k (x**2 / 4)**k /
  (k! (k + 1)!) (DLMF 10.25.2). Its terms are all positive, so nothing cancels; 38 of them reach 1e-17 of the sum
  at |x| = 20.
- beyond: the asymptotic expansion I_nu(x) ~ e**x / sqrt(2 pi x) sum_k (-1)**k a_k(nu) / x**k, a_k(nu) =
  (4 nu**2 - 1) (4 nu**2 - 9) ... (4 nu**2 - (2k - 1)**2) / (k! 8**k) (DLMF 10.40.1). Its smallest term, near
  k = 2x, is about e**(-2x), below 1e-17 from x = 20 on; 28 terms reach that there.

I0 and I1 multiply the scaled sum by exp(|x| / 2) twice, so that they stay finite up to where they overflow
(|x| about 713.98, not 709.78 where exp(x) does). At +-inf: I0 = inf, I1 = +-inf (PyTorch's Cephes kernels give
NaN there), I0e = 0, I1e = +-0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices.erf import polynomial

SERIES_RANGE = 20.0
SERIES_TERMS = 38
ASYMPTOTIC_TERMS = 28


def _series_coefficients(nu: int) -> tuple[float, ...]:
    """1 / (k! (k + nu)!) for k = SERIES_TERMS - 1 down to 0."""
    return tuple(1 / (math.factorial(k) * math.factorial(k + nu)) for k in range(SERIES_TERMS - 1, -1, -1))


def _asymptotic_coefficients(nu: int) -> tuple[float, ...]:
    """(-1)**k a_k(nu) for k = ASYMPTOTIC_TERMS - 1 down to 0: the coefficients of 1 / x**k."""
    out = [1.0]
    for k in range(1, ASYMPTOTIC_TERMS):
        out.append(-out[-1] * (4 * nu * nu - (2 * k - 1) ** 2) / (8 * k))
    return tuple(reversed(out))


SERIES = {nu: _series_coefficients(nu) for nu in (0, 1)}
ASYMPTOTIC = {nu: _asymptotic_coefficients(nu) for nu in (0, 1)}


def _bessel(xp: Any, nu: int, x: Any, scaled: bool) -> Any:
    x = xp.asarray(x, dtype=xp.float64)
    y = xp.abs(x)
    with np.errstate(all="ignore"):
        near = y <= SERIES_RANGE
        s = xp.where(near, y, 0.0)
        series = polynomial(xp, SERIES[nu], s * s / 4)
        if nu:
            series = series * (s / 2)
        far = xp.where(near, SERIES_RANGE, y)
        tail = polynomial(xp, ASYMPTOTIC[nu], 1 / far) / xp.sqrt(2 * math.pi * far)  # I e**-x
        if scaled:
            out = xp.where(near, series * xp.exp(-s), tail)
        else:
            half = xp.exp(far / 2)
            out = xp.where(near, series, xp.where(y == xp.inf, xp.inf, half * tail * half))
        out = xp.where(xp.isnan(x), xp.nan, out)
        return xp.where(x < 0, -out, out) if nu else out


def i0(xp: Any, x: Any) -> Any:
    """I0(x) of an array, elementwise, in float64."""
    return _bessel(xp, 0, x, False)


def i0e(xp: Any, x: Any) -> Any:
    """exp(-|x|) I0(x), in float64."""
    return _bessel(xp, 0, x, True)


def i1(xp: Any, x: Any) -> Any:
    """I1(x), odd, in float64 (I1(-0.0) is 0.0, as PyTorch's)."""
    return _bessel(xp, 1, x, False)


def i1e(xp: Any, x: Any) -> Any:
    """exp(-|x|) I1(x), in float64."""
    return _bessel(xp, 1, x, True)
