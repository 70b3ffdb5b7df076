"""The modified Bessel functions of the second kind K0 and K1 and their scaled forms exp(x) K0(x) and exp(x) K1(x),
on float64 arrays, good to a few ulps; `scaled_k` also serves any real order for x >= 1/2 (the Airy function takes
K_1/3).

Three ranges of x, each evaluated on the whole array and picked with `where`:

- x <= 1: the power series (DLMF 10.31.1, 10.31.2) K0 = -(log(x/2) + gamma) I0 + sum_k H_k (x**2/4)**k / k!**2 and
  K1 = 1/x + log(x/2) I1 - x/4 sum_k (psi(k+1) + psi(k+2)) (x**2/4)**k / (k! (k+1)!), H_k the harmonic numbers.
  K0 is of the order of the terms there (a factor 5 at most cancels).
- 1 < x <= 20: the integral exp(x) K_nu(x) = int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt (DLMF 10.32.9) by the
  trapezoidal rule, which converges like exp(-2 pi d / h) for an integrand analytic in a strip |Im t| < d, here
  up to 1e-17 of the integral with h = 1/8 (d about 1); past t = 5.5 the integrand is below 1e-31 of it.
- beyond: the asymptotic expansion exp(x) K_nu(x) ~ sqrt(pi / (2x)) sum_k a_k(nu) / x**k (DLMF 10.40.2, a_k as in
  `bessel`), whose smallest term, near k = 2x, is about e**(-2x), 4e-18 at 20.

At 0 both are inf (K1 overflows from x below 1/1.8e308), below 0 NaN, at inf 0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices.erf import polynomial

EULER_GAMMA = 0.5772156649015329
SERIES_RANGE = 1.0
SERIES_TERMS = 14  # (1/4)**13 / 13!**2 is below 1e-27
INTEGRAL_RANGE = 20.0
STEP = 0.125
NODES = 45  # t up to 5.5
ASYMPTOTIC_TERMS = 32


def _harmonic(k: int) -> float:
    return math.fsum(1 / j for j in range(1, k + 1))


def _coefficients(nu: int, weight: Any) -> tuple[float, ...]:
    """weight(k) / (k! (k + nu)!) for k = SERIES_TERMS - 1 down to 0."""
    return tuple(weight(k) / (math.factorial(k) * math.factorial(k + nu)) for k in range(SERIES_TERMS - 1, -1, -1))


SERIES_I = {nu: _coefficients(nu, lambda k: 1.0) for nu in (0, 1)}
SERIES_K0 = _coefficients(0, _harmonic)
SERIES_K1 = _coefficients(1, lambda k: _harmonic(k) + _harmonic(k + 1) - 2 * EULER_GAMMA)


def _series(xp: Any, nu: int, x: Any) -> Any:
    """K0 or K1 for 0 < x <= SERIES_RANGE."""
    u = x * x / 4
    log_half = xp.log(x / 2)
    if nu == 0:
        return -(log_half + EULER_GAMMA) * polynomial(xp, SERIES_I[0], u) + polynomial(xp, SERIES_K0, u)
    i1 = x / 2 * polynomial(xp, SERIES_I[1], u)
    return 1 / x + log_half * i1 - x / 4 * polynomial(xp, SERIES_K1, u)


def _integral(xp: Any, nu: float, x: Any) -> Any:
    """exp(x) K_nu(x) by the trapezoidal rule."""
    total = xp.full_like(x, 0.5)  # the node t = 0, halved
    for j in range(1, NODES):
        t = j * STEP
        total = total + xp.exp(-x * (2 * math.sinh(t / 2) ** 2)) * math.cosh(nu * t)
    return STEP * total


def _asymptotic_coefficients(nu: float) -> tuple[float, ...]:
    """a_k(nu) for k = ASYMPTOTIC_TERMS - 1 down to 0."""
    a = [1.0]
    for k in range(1, ASYMPTOTIC_TERMS):
        a.append(a[-1] * (4 * nu * nu - (2 * k - 1) ** 2) / (8 * k))
    return tuple(reversed(a))


def asymptotic_sum(xp: Any, nu: float, x: Any) -> Any:
    """sum_k a_k(nu) / x**k, for x >= INTEGRAL_RANGE."""
    return polynomial(xp, _asymptotic_coefficients(nu), 1 / x)


def scaled_k(xp: Any, nu: float, x: Any) -> Any:
    """exp(x) K_nu(x) for x >= 1/2 (the integral up to INTEGRAL_RANGE, the asymptotic expansion beyond)."""
    far = x > INTEGRAL_RANGE
    near = xp.where(far, 1.0, x)
    x_far = xp.where(far, x, INTEGRAL_RANGE)
    return xp.where(far, math.sqrt(math.pi / 2) / xp.sqrt(x_far) * asymptotic_sum(xp, nu, x_far),
                    _integral(xp, nu, near))


def _k(xp: Any, nu: int, x: Any, scaled: bool) -> Any:
    x = xp.asarray(x, dtype=xp.float64)
    with np.errstate(all="ignore"):
        near = x <= SERIES_RANGE
        small = xp.where(near & (x > 0), x, SERIES_RANGE)
        series = _series(xp, nu, small)
        if scaled:
            series = series * xp.exp(small)
        rest = xp.where(near | ~(x < xp.inf), 2.0, x)  # stand-ins where the other branches are used
        beyond = scaled_k(xp, nu, rest)
        if not scaled:
            half = xp.exp(-rest / 2)  # twice, so that K stays finite down to where it underflows
            beyond = beyond * half * half
        out = xp.where(near, series, beyond)
        out = xp.where(x == 0, xp.inf, xp.where(x == xp.inf, 0.0, out))
        return xp.where((x < 0) | xp.isnan(x), xp.nan, out)


def k0(xp: Any, x: Any) -> Any:
    """K0(x) of an array, elementwise, in float64."""
    return _k(xp, 0, x, False)


def k1(xp: Any, x: Any) -> Any:
    """K1(x), in float64."""
    return _k(xp, 1, x, False)


def k0e(xp: Any, x: Any) -> Any:
    """exp(x) K0(x), in float64."""
    return _k(xp, 0, x, True)


def k1e(xp: Any, x: Any) -> Any:
    """exp(x) K1(x), in float64."""
    return _k(xp, 1, x, True)
