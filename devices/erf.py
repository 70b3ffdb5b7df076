"""erf, erfc and the scaled erfcx on float64 arrays, after W. J. Cody's rational approximations ("Rational
Chebyshev approximations for the error function", Math. Comp. 23, 1969), good to about an ulp.

numpy has no erf and scipy is not a dependency. Three ranges of |x|, each a ratio of two polynomials:
near zero erf itself is a rational function of x**2; further out erfc is exp(-x**2) times a rational function of
|x|, and in the tail exp(-x**2) / |x| times one of 1 / x**2. erf = 1 - erfc out there loses nothing, as erf is
then at least 0.49; erfcx(x) = exp(x**2) erfc(x) is the same forms without their exp(-x**2). Each function
takes the array module `xp`, so the same code serves numpy and cupy.
"""

from __future__ import annotations

import math
from typing import Any

NEAR = 0.46875  # |x| up to here: erf from x**2
TAIL = 4.0  # |x| beyond here: erfc from 1 / x**2
UNDERFLOW = 40.0  # erfc(40) is 0 in float64; clamping there keeps exp's split finite for |x| = inf

# Polynomial coefficients, highest power first; each denominator is monic.
ERF_NEAR_P = (1.85777706184603153e-1, 3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
              3.20937758913846947e03)
ERF_NEAR_Q = (1.0, 2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
              2.84423683343917062e03)
ERFC_MID_P = (2.15311535474403846e-8, 5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
              2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03, 2.05107837782607147e03,
              1.23033935479799725e03)
ERFC_MID_Q = (1.0, 1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
              1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03, 3.43936767414372164e03,
              1.23033935480374942e03)
ERFC_TAIL_P = (1.63153871373020978e-2, 3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
               1.60837851487422766e-2, 6.58749161529837803e-4)
ERFC_TAIL_Q = (1.0, 2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
               6.05183413124413191e-2, 2.33520497626869185e-3)
INV_SQRT_PI = 1 / math.sqrt(math.pi)


def polynomial(xp: Any, coefficients: tuple, x: Any) -> Any:
    """Horner's rule, as numpy's polyval runs it (CuPy's polyval takes coefficients only as a device array)."""
    out = xp.zeros_like(x)
    for c in coefficients:
        out = out * x + c
    return out


def _rational(xp: Any, p: tuple, q: tuple, x: Any) -> Any:
    return polynomial(xp, p, x) / polynomial(xp, q, x)


def _exp_minus_square(xp: Any, y: Any) -> Any:
    """exp(-y * y) without the rounding error of y * y, which exp would magnify: y splits into a multiple of 1/16
    (whose square is exact) and a small rest."""
    head = xp.trunc(y * 16) / 16
    return xp.exp(-head * head) * xp.exp(-(y - head) * (y + head))


def _erf_near(xp: Any, x: Any) -> Any:
    return x * _rational(xp, ERF_NEAR_P, ERF_NEAR_Q, x * x)


def _erfc_beyond(xp: Any, y: Any) -> Any:
    """erfc(y) for y > NEAR."""
    out = xp.empty_like(y)
    mid = y <= TAIL
    ym = y[mid]
    out[mid] = _exp_minus_square(xp, ym) * _rational(xp, ERFC_MID_P, ERFC_MID_Q, ym)
    yt = xp.minimum(y[~mid], UNDERFLOW)
    z = 1 / (yt * yt)
    out[~mid] = _exp_minus_square(xp, yt) / yt * (INV_SQRT_PI - z * _rational(xp, ERFC_TAIL_P, ERFC_TAIL_Q, z))
    return out


def erf(xp: Any, x: Any) -> Any:
    """The error function of an array, elementwise, computed and returned in float64; NaN stays NaN."""
    x = xp.asarray(x, dtype=xp.float64)
    y = xp.abs(x)
    out = x.copy()  # positions in no range below (NaN) keep their value
    near = y <= NEAR
    out[near] = _erf_near(xp, x[near])
    beyond = y > NEAR
    out[beyond] = xp.copysign(1 - _erfc_beyond(xp, y[beyond]), x[beyond])
    return out


def erfc(xp: Any, x: Any) -> Any:
    """1 - erf(x) of an array, in float64 and without the cancellation for large x; NaN stays NaN."""
    x = xp.asarray(x, dtype=xp.float64)
    y = xp.abs(x)
    out = x.copy()
    near = y <= NEAR
    out[near] = 1 - _erf_near(xp, x[near])
    beyond = y > NEAR
    tail = _erfc_beyond(xp, y[beyond])
    out[beyond] = xp.where(x[beyond] < 0, 2 - tail, tail)
    return out


def erfcx(xp: Any, x: Any) -> Any:
    """exp(x**2) erfc(x) for x >= 0 (the scaled complementary error function) of an array, in float64, without
    erfc's underflow: the same rational forms with their exp(-x**2) left out (beyond NEAR), so it keeps its relative
    accuracy for any x (erfcx(x) ~ 1 / (x sqrt(pi)), 0 at inf); NaN stays NaN."""
    x = xp.asarray(x, dtype=xp.float64)
    near = x <= NEAR
    mid = x <= TAIL
    xn = xp.where(near, x, 0.0)
    near_value = xp.exp(xn * xn) * (1 - _erf_near(xp, xn))
    mid_value = _rational(xp, ERFC_MID_P, ERFC_MID_Q, xp.where(mid, x, TAIL))
    xt = xp.where(mid, TAIL, x)
    z = 1 / (xt * xt)
    tail_value = (INV_SQRT_PI - z * _rational(xp, ERFC_TAIL_P, ERFC_TAIL_Q, z)) / xt
    return xp.where(near, near_value, xp.where(mid, mid_value, tail_value))
