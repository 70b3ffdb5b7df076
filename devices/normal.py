"""The standard normal distribution's log cdf (log_ndtr) and inverse cdf (ndtri) on float64 arrays, good to a few
ulps, built on `actorgrad.devices.erf` and `gamma.erfinv`. Each function takes the array module `xp`, so the same
code serves numpy and cupy.

- log_ndtr(x) = log(erfc(-x / sqrt 2) / 2). Left of 0 it is log(erfcx(z) / 2) - z**2 with z = -x / sqrt 2, which
  neither underflows nor loses digits however far left x is (about -x**2 / 2 there); right of 0,
  log1p(-erfc(x / sqrt 2) / 2), which keeps the tiny values near 0.
- ndtri(p): in the middle (|p - 1/2| <= 1/4) sqrt 2 erfinv(2p - 1), where 2p - 1 is exact. In the tails, by the
  symmetry ndtri(1 - q) = -ndtri(q) (1 - p is exact for p >= 1/2), it solves erfc(z) = 2q for z = -x / sqrt 2
  with three Newton steps on log(erfc(z)) = log(erfcx(z)) - z**2, which neither underflows nor loses relative
  accuracy down to the smallest subnormal q, from the first guess of Abramowitz & Stegun 26.2.23 (within 4.5e-4;
  each step about squares the error).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices.erf import erfc, erfcx, polynomial
from actorgrad.devices.gamma import erfinv

SQRT2 = math.sqrt(2)
SQRT_PI = math.sqrt(math.pi)
TAIL = 0.25  # ndtri by Newton's method for p below this or above 1 - this
# A&S 26.2.23, t = sqrt(-2 log q): -ndtri(q) ~ t - (c0 + c1 t + c2 t**2) / (1 + d1 t + d2 t**2 + d3 t**3)
GUESS_P = (0.010328, 0.802853, 2.515517)
GUESS_Q = (0.001308, 0.189269, 1.432788, 1.0)
NEWTON_STEPS = 3


def log_ndtr(xp: Any, x: Any) -> Any:
    """log of the standard normal cdf of an array, elementwise, in float64; NaN stays NaN."""
    x = xp.asarray(x, dtype=xp.float64)
    with np.errstate(all="ignore"):
        left = x < 0
        z = xp.where(left, -x / SQRT2, 0.0)
        left_value = xp.log(erfcx(xp, z) / 2) - z * z
        right_value = xp.log1p(-erfc(xp, xp.where(left, 0.0, x / SQRT2)) / 2)
        return xp.where(left, left_value, right_value)


def ndtri(xp: Any, p: Any) -> Any:
    """The inverse of the standard normal cdf of an array, in float64: -inf at 0, inf at 1, NaN outside [0, 1]."""
    p = xp.asarray(p, dtype=xp.float64)
    with np.errstate(all="ignore"):
        middle = xp.abs(p - 0.5) <= TAIL
        central = SQRT2 * erfinv(xp, xp.where(middle, 2 * p - 1, 0.0))
        q = xp.where(p < 0.5, p, 1 - p)
        q = xp.where(middle | ~(q > 0), TAIL, q)  # stand-ins where the tail's steps are not used
        t = xp.sqrt(-2 * xp.log(q))
        z = (t - polynomial(xp, GUESS_P, t) / polynomial(xp, GUESS_Q, t)) / SQRT2
        log_target = xp.log(2 * q)
        for _ in range(NEWTON_STEPS):
            scaled = erfcx(xp, z)
            z = z + (xp.log(scaled) - z * z - log_target) * (SQRT_PI / 2) * scaled
        tail = xp.where(p < 0.5, -SQRT2 * z, SQRT2 * z)
        out = xp.where(middle, central, tail)
        out = xp.where(p == 0, -xp.inf, xp.where(p == 1, xp.inf, out))
        return xp.where((p < 0) | (p > 1) | xp.isnan(p), xp.nan, out)
