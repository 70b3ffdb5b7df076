"""The Airy function Ai on float64 arrays, good to a few ulps relative where it decays and to about 1e-15 of its
amplitude where it oscillates, down to x = -1e10 (past that two doubles no longer hold the phase zeta to 1e-16).

Three ranges of x, each evaluated on the whole array and picked with `where`:

- x > 1: Ai(x) = sqrt(x/3) / pi K_1/3(zeta), zeta = 2/3 x**(3/2) (DLMF 9.6.1), with `bessel_k.scaled_k`.
- -10 <= x <= 1: Taylor steps along Airy's equation y'' = x y from the values at 0, Ai(0) = 1 / (3**(2/3)
  Gamma(2/3)) and Ai'(0) = -1 / (3**(1/3) Gamma(1/3)): about x0 the Taylor coefficients follow c_{k+2} =
  (x0 c_k + c_{k-1}) / ((k+2)(k+1)), and each element takes STEPS steps of x / STEPS. On this side Ai and Bi are
  of one size, so the steps' rounding does not grow (beyond 1, Bi's growth would swamp Ai).
- x < -10: the asymptotic expansion (DLMF 9.7.9) Ai(-x) ~ (cos(zeta - pi/4) P + sin(zeta - pi/4) Q) /
  (sqrt(pi) x**(1/4)), P = sum_k (-1)**k u_2k / zeta**2k, Q = sum_k (-1)**k u_2k+1 / zeta**(2k+1), u_k =
  u_{k-1} (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k). Its smallest term, near k = 2 zeta, is about e**(-2 zeta), 5e-19 at
  -10.

zeta = 2/3 |x|**1.5 is carried in two doubles (Dekker's exact products), as exp(-zeta) and cos(zeta) would magnify
its rounding zeta times.

At +-inf Ai is 0 (its limits; PyTorch's kernel gives NaN at -inf), and below -1e200 too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices.bessel_k import scaled_k
from actorgrad.devices.erf import polynomial

AI_0 = 1 / (3 ** (2 / 3) * math.gamma(2 / 3))
AI_PRIME_0 = -1 / (3 ** (1 / 3) * math.gamma(1 / 3))
DECAYING = 1.0  # x above: by K_1/3
OSCILLATING = -10.0  # x below: by the asymptotic expansion
STEPS = 20  # |step| <= 1/2
TAYLOR_TERMS = 26  # (sqrt(10) / 2)**26 / 26! is below 1e-21
ASYMPTOTIC_TERMS = 20  # of P, and of Q
UNDERFLOW = 200.0  # Ai(200) is 0 in float64
FAR = 1e200  # x below -FAR: 0, Ai's limit (|Ai| < |x|**-1/4 = 1e-50, and zeta overflows)
SPLITTER = 2.0 ** 27 + 1


def _u() -> list[float]:
    u = [1.0]
    for k in range(1, 2 * ASYMPTOTIC_TERMS):
        u.append(u[-1] * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216 * k))
    return u


U = _u()
P = tuple((-1) ** k * U[2 * k] for k in reversed(range(ASYMPTOTIC_TERMS)))
Q = tuple((-1) ** k * U[2 * k + 1] for k in reversed(range(ASYMPTOTIC_TERMS)))


def _taylor_steps(xp: Any, x: Any) -> Any:
    """Ai(x) for OSCILLATING <= x <= DECAYING."""
    h = x / STEPS
    value, slope = xp.full_like(x, AI_0), xp.full_like(x, AI_PRIME_0)
    for step in range(STEPS):
        x0 = step * h
        before, c, c_next = xp.zeros_like(x), value, slope  # c_{k-1}, c_k, c_{k+1}
        power = xp.ones_like(x)  # h**k
        value, slope = c, c_next
        for k in range(TAYLOR_TERMS - 2):
            c_after = (x0 * c + before) / ((k + 2) * (k + 1))  # c_{k+2}
            power = power * h
            value = value + c_next * power
            slope = slope + (k + 2) * c_after * power
            before, c, c_next = c, c_next, c_after
    return value


def _split(a: Any) -> tuple[Any, Any]:
    """a as the sum of two halves of 26 bits, whose products are exact (Dekker's splitting; numpy has no fma)."""
    c = SPLITTER * a
    high = c - (c - a)
    return high, a - high


def _exact_product(a: Any, b: Any) -> tuple[Any, Any]:
    """a * b as p + e exactly, p the rounded product."""
    p = a * b
    (ah, al), (bh, bl) = _split(a), _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _zeta(xp: Any, y: Any) -> tuple[Any, Any]:
    """2/3 y**(3/2) as high + low, to about 2**-100 of it (its rounding to one double would cost 1e-13 at 100)."""
    s = xp.sqrt(y)
    p, e = _exact_product(s, s)
    s_low = ((y - p) - e) / (2 * s)  # sqrt(y) = s + s_low
    w, e = _exact_product(y, s)
    w_low = e + y * s_low  # y**1.5 = w + w_low
    high = 2 * w / 3
    t, e = _exact_product(3.0, high)
    return high, ((2 * w - t) - e) / 3 + 2 * w_low / 3


def _oscillating(xp: Any, x: Any) -> Any:
    """Ai(x) for x < OSCILLATING."""
    y = -x
    zeta, zeta_low = _zeta(xp, y)
    z = 1 / zeta
    c, s = xp.cos(zeta), xp.sin(zeta)
    c_low, s_low = xp.cos(zeta_low), xp.sin(zeta_low)
    c, s = c * c_low - s * s_low, s * c_low + c * s_low  # of zeta + zeta_low
    # cos(zeta - pi/4) = (c + s) / sqrt2, sin(zeta - pi/4) = (s - c) / sqrt2
    series = (c + s) * polynomial(xp, P, z * z) + (s - c) * z * polynomial(xp, Q, z * z)
    return series / (math.sqrt(2 * math.pi) * y ** 0.25)


def _decaying(xp: Any, x: Any) -> Any:
    """Ai(x) for x > DECAYING."""
    zeta, zeta_low = _zeta(xp, x)
    return xp.sqrt(x / 3) / math.pi * scaled_k(xp, 1 / 3, zeta) * (xp.exp(-zeta) * xp.exp(-zeta_low))


def airy_ai(xp: Any, x: Any) -> Any:
    """Ai(x) of an array, elementwise, in float64."""
    x = xp.asarray(x, dtype=xp.float64)
    with np.errstate(all="ignore"):
        decaying, oscillating = x > DECAYING, (x < OSCILLATING) & (x > -FAR)
        middle = xp.where(decaying | oscillating | ~(x >= OSCILLATING), 0.0, x)
        out = xp.where(decaying, _decaying(xp, xp.where(decaying, xp.minimum(x, UNDERFLOW), 2.0)),
                       xp.where(oscillating, _oscillating(xp, xp.where(oscillating, x, -20.0)),
                                _taylor_steps(xp, middle)))
        return xp.where(x <= -FAR, 0.0, xp.where(xp.isnan(x), xp.nan, out))
