"""lgamma, digamma, polygamma, mvlgamma and erfinv on float64 arrays, good to a few ulps away from the zeros of
the functions.

numpy has no gamma family and scipy is not a dependency. Each function takes the array module `xp`, so the same
code serves numpy and cupy; the branches here are computed on the whole array and picked with `where` (no
boolean indexing, whose count a GPU would have to send back).

- lgamma: for x >= 10 Stirling's series, 8 terms (Abramowitz & Stegun 6.1.40); below, shifted by the recurrence
  lgamma(x + 1) = lgamma(x) + log(x) into [0.5, 2.5), where the series of A&S 6.1.33 around 1 and 2 keeps the
  relative accuracy near the zeros at 1 and 2; x < 0 by the reflection lgamma(x) = log(pi / |sin(pi x)|) -
  lgamma(1 - x). Non-positive integers are poles (inf).
- digamma: Cephes' psi, as PyTorch computes it: the recurrence psi(x) = psi(x + 1) - 1 / x up to x >= 10, then the
  asymptotic series; x < 0 by the reflection psi(x) = psi(1 - x) - pi / tan(pi x), with x reduced to (-0.5, 0.5]
  first (exactly), which is more accurate next to the poles than PyTorch.
- polygamma(n >= 1): (-1)**(n + 1) n! zeta(n + 1, x), the Hurwitz zeta by Euler-Maclaurin summation (direct terms
  up to n + 10, then 10 Bernoulli terms, DLMF 25.11.5); x < 0 from the recurrence written as zetas at positive
  arguments (see `polygamma`).
- erfinv: the rational first guess PyTorch uses (Pavlis' translation of MATLAB's erfinv), then three Newton steps
  against `actorgrad.devices.erf`, with erfc beyond |y| = 0.5 so that 1 - |y| keeps its precision in the tails.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices.erf import erf as erf_kernel
from actorgrad.devices.erf import erfc as erfc_kernel
from actorgrad.devices.erf import polynomial

STIRLING = 10.0  # lgamma from Stirling's series at and beyond here
ONE_MINUS_EULER = 0.42278433509846713  # 1 - Euler's gamma
HALF_LOG_2PI = 0.9189385332046728
LOG_PI = 1.1447298858494002
# (-1)**k (zeta(k) - 1) / k for k = 28 down to 2 (A&S 6.1.33): lgamma(2 + z) = z (1 - gamma) + z**2 * poly(z).
LGAMMA_SERIES = (
    -6.42296456383809960e-11, 1.33047643742444888e-10, -2.75952288512423336e-10, 5.73136724167886225e-10,
    -1.19214014058609115e-09, 2.48367454380247848e-09, -5.18347504197004664e-09, 1.08386592148969546e-08,
    -2.27110946089431635e-08, 4.76981016936398040e-08, -1.00432248239680991e-07, 2.12071848055546646e-07,
    -4.49246919876456619e-07, 9.55141213040741935e-07, -2.03921575380136619e-06, 4.37486678990748817e-06,
    -9.43948827526839672e-06, 2.05072127756706911e-05, -4.49262367381331420e-05, 9.94575127818085310e-05,
    -2.23154758453579386e-04, 5.09669524743042450e-04, -1.19275391170326102e-03, 2.89051033074152336e-03,
    -7.38555102867398568e-03, 2.05808084277845464e-02, -6.73523010531981020e-02, 3.22467033424113203e-01,
)
# B_2k / (2k (2k - 1)) for k = 8 down to 1: Stirling's series in 1 / x**2.
STIRLING_SERIES = (-3617 / 122400, 1 / 156, -691 / 360360, 1 / 1188, -1 / 1680, 1 / 1260, -1 / 360, 1 / 12)
# Cephes' psi: the asymptotic series in 1 / x**2, highest power first.
DIGAMMA_SERIES = (8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3,
                  -4.16666666666666666667e-3, 3.96825396825396825397e-3, -8.33333333333333333333e-3,
                  8.33333333333333333333e-2)
# B_2k for k = 1..10, for the Euler-Maclaurin terms of the Hurwitz zeta.
BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798, -174611 / 330)
MAX_FACTORIAL = 170  # 171! overflows float64
# erfinv's first guess (PyTorch's calc_erfinv), highest power first.
ERFINV_CENTRAL = 0.7
ERFINV_A = (-0.140543331, 0.914624893, -1.645349621, 0.886226899)
ERFINV_B = (0.012229801, -0.329097515, 1.442710462, -2.118377725, 1.0)
ERFINV_C = (1.641345311, 3.429567803, -1.624906493, -1.970840454)
ERFINV_D = (1.637067800, 3.543889200, 1.0)
TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _float64(xp: Any, x: Any) -> Any:
    return xp.asarray(x, dtype=xp.float64)


def _non_positive_integer(xp: Any, x: Any) -> Any:
    """The poles of the gamma family: 0, -0, the negative integers and -inf."""
    return (x <= 0) & (x == xp.floor(x))


def _lgamma_positive(xp: Any, x: Any) -> Any:
    """lgamma(x) for x > 0 (inf included)."""
    # x in [1.5, 10): z = x - 2 - k after k downward steps (exact subtractions), plus log of the k factors
    mid = xp.minimum(xp.maximum(x, 1.5), STIRLING)
    steps = xp.floor(mid - 1.5)
    factors = xp.ones_like(x)
    for k in range(1, int(STIRLING - 1.5) + 1):
        factors = factors * xp.where(steps >= k, mid - k, 1.0)
    # x < 1.5: lgamma(1 + z) = lgamma(2 + z) - log1p(z), with z = x itself below 0.5 (less log(x) at the end)
    small = x < 0.5
    near_one = x < 1.5
    z = xp.where(small, x, xp.where(near_one, x - 1, mid - 2 - steps))
    series = z * ONE_MINUS_EULER + z * z * polynomial(xp, LGAMMA_SERIES, z)
    series = xp.where(near_one, series - xp.log1p(z), series + xp.log(factors))
    series = xp.where(small, series - xp.log(xp.where(small, x, 1.0)), series)
    big = xp.maximum(x, STIRLING)
    inverse = 1 / big
    stirling = (big - 0.5) * (xp.log(big) - 1) + (HALF_LOG_2PI - 0.5) + inverse * polynomial(
        xp, STIRLING_SERIES, inverse * inverse
    )
    return xp.where(x >= STIRLING, stirling, series)


def _sin_pi_abs(xp: Any, x: Any) -> Any:
    """|sin(pi x)| from the distance of x to the nearest integer, which is exact (pi x is not, for large x)."""
    r = xp.abs(x - xp.trunc(x))
    return xp.sin(math.pi * xp.minimum(r, 1 - r))


def lgamma(xp: Any, x: Any) -> Any:
    """log |Gamma(x)| of an array, elementwise, in float64: inf at the poles and at +-inf; NaN stays NaN."""
    x = _float64(xp, x)
    with np.errstate(all="ignore"):
        negative = x < 0
        positive = _lgamma_positive(xp, xp.where(negative, 1 - x, x))
        reflected = LOG_PI - xp.log(_sin_pi_abs(xp, x)) - positive
        out = xp.where(negative, reflected, positive)
        return xp.where(_non_positive_integer(xp, x), xp.inf, out)


def digamma(xp: Any, x: Any) -> Any:
    """psi(x) = d/dx lgamma(x) of an array, in float64, as PyTorch gives it: -inf at 0, inf at -0, NaN at the
    negative integers and -inf."""
    x = _float64(xp, x)
    with np.errstate(all="ignore"):
        negative = x < 0
        y = xp.where(negative, 1 - x, x)
        out = xp.zeros_like(y)
        for _ in range(int(STIRLING)):  # y > 0 reaches 10 within ten steps
            below = y < STIRLING
            out = out - xp.where(below, 1 / y, 0.0)
            y = xp.where(below, y + 1, y)
        z = 1 / (y * y)
        out = out + xp.log(y) - 0.5 / y - z * polynomial(xp, DIGAMMA_SERIES, z)
        r = x - xp.trunc(x)  # in (-1, 0]; tan has period pi, and pi r loses x's last bits next to -1
        r = xp.where(r < -0.5, r + 1, r)
        out = xp.where(negative, out - math.pi / xp.tan(math.pi * r), out)
        out = xp.where(negative & (x == xp.floor(x)), xp.nan, out)
        return xp.where(x == 0, xp.copysign(xp.inf, -x), out)


def _hurwitz_zeta(xp: Any, s: int, q: Any) -> Any:
    """zeta(s, q) = sum over k >= 0 of (q + k)**-s, for an integer s >= 2 and q > 0 (q = inf gives 0).

    The first terms directly until q + k >= bound, then Euler-Maclaurin's remainder: its 10 Bernoulli terms are
    within an ulp from there on (the terms grow with s; past 171 the bound stops growing, as n! is inf anyway)."""
    bound = float(min(s, MAX_FACTORIAL + 1) + 9)
    total = xp.zeros_like(q)
    w = q
    for _ in range(int(bound)):
        below = w < bound
        total = total + xp.where(below, w ** -float(s), 0.0)
        w = xp.where(below, w + 1, w)
    # c_k = B_2k / (2k)! * s (s + 1) ... (s + 2k - 2), the coefficient of w**(1 - s - 2k)
    coefficients = []
    rising = float(s)
    for k, b in enumerate(BERNOULLI, 1):
        coefficients.append(b / math.factorial(2 * k) * rising)
        rising *= (s + 2 * k - 1) * (s + 2 * k)
    v = 1 / (w * w)
    tail = 1 / (s - 1) + 0.5 / w + v * polynomial(xp, coefficients[::-1], v)
    return total + w ** float(1 - s) * tail


def polygamma(xp: Any, n: int, x: Any) -> Any:
    """The n-th derivative of digamma (n >= 0) of an array, in float64. Non-positive integers are poles: +inf for
    odd n, -inf for even n; at -inf the result is NaN.

    For x < 0, with x = -(m + f), m an integer and 0 < f < 1, the recurrence from x up to 1 - f sums
    (x + i)**-(n + 1) = (-1)**(n + 1) (j + f)**-(n + 1) over j = 0..m, that is zeta(n + 1, f) - zeta(n + 1, m + 1 + f):
    psi_n(x) = n! ((-1)**(n + 1) zeta(n + 1, 1 - f) + zeta(n + 1, f) - zeta(n + 1, m + 1 + f)), all at positive
    arguments, with no cancellation but that of the function's own zeros."""
    if n == 0:
        return digamma(xp, x)
    x = _float64(xp, x)
    sign = 1.0 if n % 2 else -1.0
    factorial = float(math.factorial(n)) if n <= MAX_FACTORIAL else math.inf
    with np.errstate(all="ignore"):
        negative = x < 0
        m = xp.floor(-x)
        f = -x - m
        shape = x.shape
        arguments = xp.concatenate([
            xp.where(negative, 1 - f, x).ravel(),
            xp.where(negative, f, xp.inf).ravel(),
            xp.where(negative, 1 - x, xp.inf).ravel(),  # m + 1 + f
        ])
        zeta = _hurwitz_zeta(xp, n + 1, arguments).reshape((3,) + shape)
        out = factorial * (sign * zeta[0] + zeta[1] - zeta[2])
        out = xp.where(_non_positive_integer(xp, x), sign * xp.inf, out)
        return xp.where(x == -xp.inf, xp.nan, out)


def mvlgamma(xp: Any, x: Any, p: int) -> Any:
    """The multivariate log-gamma of dimension p: sum over j < p of lgamma(x - j / 2), plus p (p - 1) / 4 log(pi)."""
    x = _float64(xp, x)
    out = xp.zeros_like(x)
    for j in range(p - 1, -1, -1):
        out = out + lgamma(xp, x - 0.5 * j)
    return out + p * (p - 1) / 4 * LOG_PI


def erfinv(xp: Any, y: Any) -> Any:
    """The inverse of erf on [-1, 1] of an array, in float64: +-inf at +-1, NaN beyond; NaN stays NaN."""
    y = _float64(xp, y)
    with np.errstate(all="ignore"):
        a = xp.abs(y)
        z = a * a
        central = a * polynomial(xp, ERFINV_A, z) / polynomial(xp, ERFINV_B, z)
        t = xp.sqrt(-xp.log((1 - a) / 2))
        tail = polynomial(xp, ERFINV_C, t) / polynomial(xp, ERFINV_D, t)
        u = xp.where(a <= ERFINV_CENTRAL, central, tail)
        u = xp.where(a < 1, u, 0.0)  # finite, so that the steps below stay finite; replaced at the end
        near = a <= 0.5
        rest = 1 - a  # exact for a >= 0.5
        for _ in range(3):  # Newton on erf(u) = a: the first guess is 4e-4 off in the far tail, each step squares that
            residual = xp.where(near, erf_kernel(xp, u) - a, rest - erfc_kernel(xp, u))
            u = u - residual / (TWO_OVER_SQRT_PI * xp.exp(-u * u))
        return xp.copysign(xp.where(a < 1, u, xp.where(a == 1, xp.inf, xp.nan)), y)
