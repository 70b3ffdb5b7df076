"""The Bessel functions of the first and second kind J0, J1, Y0, Y1 and the spherical j0(x) = sin(x) / x, on float64
arrays, good to about 1e-15 absolute for |x| <= 25 and to a few ulps relative beyond (near the zeros that is all
the relative accuracy one can ask of any method fed a rounded x).

Three ranges of |x|, each evaluated on the whole array and picked with `where`:

- |x| <= 2: the power series (DLMF 10.2.2 and 10.8.1) J_nu = (x/2)**nu sum_k (-x**2/4)**k / (k! (k + nu)!),
  Y0 = 2/pi (log(x/2) + gamma) J0 + 2/pi sum_k (-1)**(k+1) H_k (x**2/4)**k / k!**2 (H_k the harmonic numbers) and
  Y1 = -2/(pi x) + 2/pi log(x/2) J1 - x/(2 pi) sum_k (psi(k+1) + psi(k+2)) (-x**2/4)**k / (k! (k+1)!). Their
  terms fall from the first, so at most a factor 3 cancels.
- 2 < |x| <= 25: Miller's backward recurrence J_{k-1} = 2k/x J_k - J_{k+1} from k = 80 (where J_80(25) is
  1e-31 of J0), normalized by 1 = J0 + 2 sum J_{2k}, which also gives Neumann's series (DLMF 10.23.16 and its
  derivative) Y0 = 2/pi (log(x/2) + gamma) J0 - 4/pi sum_k (-1)**k J_{2k} / k and
  Y1 = 2/pi ((log(x/2) + gamma) J1 - J0 / x) + 2/pi sum_k (-1)**k (J_{2k-1} - J_{2k+1}) / k.
- beyond: Hankel's expansions (DLMF 10.17.3), J_nu = sqrt(2/(pi x)) (P cos(chi) - Q sin(chi)) and Y_nu =
  sqrt(2/(pi x)) (P sin(chi) + Q cos(chi)), chi = x - (nu/2 + 1/4) pi, P = sum_k (-1)**k a_2k(nu) / x**2k and
  Q = sum_k (-1)**k a_2k+1(nu) / x**(2k+1), a_k(nu) as in `bessel`. Their smallest term, near k = 2x, is about
  e**(-2x), 2e-22 at 25; 30 terms reach 1e-17. cos(chi) and sin(chi) come from cos(x) and sin(x), so a huge x
  loses nothing to rounding x - pi/4.

J0 is even, J1 odd; Y0 and Y1 are NaN below 0 and -inf at 0. At +-inf all four are 0 (their limits; PyTorch's Cephes
kernels give NaN there).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices.erf import polynomial

EULER_GAMMA = 0.5772156649015329
SERIES_RANGE = 2.0
SERIES_TERMS = 20
RECURRENCE_RANGE = 25.0
RECURRENCE_START = 80
RECURRENCE_SEED = 1e-150  # J_80 before normalizing: J_80(2) is 1e-119 of J0(2), so nothing overflows or underflows
HANKEL_TERMS = 15  # of P, and of Q


def _harmonic(k: int) -> float:
    return math.fsum(1 / j for j in range(1, k + 1))


def _series_coefficients(nu: int, weight: Any) -> tuple[float, ...]:
    """(-1)**k weight(k) / (k! (k + nu)!) for k = SERIES_TERMS - 1 down to 0: coefficients of (x**2/4)**k."""
    return tuple((-1) ** k * weight(k) / (math.factorial(k) * math.factorial(k + nu))
                 for k in range(SERIES_TERMS - 1, -1, -1))


SERIES_J = {nu: _series_coefficients(nu, lambda k: 1.0) for nu in (0, 1)}
SERIES_Y0 = _series_coefficients(0, lambda k: -_harmonic(k))  # -H_k: the sum's terms (-1)**(k+1) H_k u**k / k!**2
SERIES_Y1 = _series_coefficients(1, lambda k: _harmonic(k) + _harmonic(k + 1) - 2 * EULER_GAMMA)  # psi sums


def _hankel_coefficients(nu: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """P's and Q's coefficients of 1/x**(2k) and 1/x**(2k+1), highest power first: a_0 = 1, a_k = a_{k-1}
    (4 nu**2 - (2k - 1)**2) / (8k), with P = a_0 - a_2/x**2 + a_4/x**4 ... and Q = a_1/x - a_3/x**3 + ..."""
    a = [1.0]
    for k in range(1, 2 * HANKEL_TERMS):
        a.append(a[-1] * (4 * nu * nu - (2 * k - 1) ** 2) / (8 * k))
    p = tuple((-1) ** k * a[2 * k] for k in reversed(range(HANKEL_TERMS)))
    q = tuple((-1) ** k * a[2 * k + 1] for k in reversed(range(HANKEL_TERMS)))
    return p, q


HANKEL = {nu: _hankel_coefficients(nu) for nu in (0, 1)}


def _series(xp: Any, y: Any) -> dict:
    """J0, J1, Y0, Y1 for 0 < y <= SERIES_RANGE."""
    u = y * y / 4
    j0 = polynomial(xp, SERIES_J[0], u)
    j1 = y / 2 * polynomial(xp, SERIES_J[1], u)
    log_half = xp.log(y / 2)
    y0 = 2 / math.pi * ((log_half + EULER_GAMMA) * j0 + polynomial(xp, SERIES_Y0, u))
    y1 = -2 / (math.pi * y) + 2 / math.pi * log_half * j1 - y / (2 * math.pi) * polynomial(xp, SERIES_Y1, u)
    return {"j0": j0, "j1": j1, "y0": y0, "y1": y1}


def _miller(xp: Any, y: Any) -> dict:
    """J0, J1, Y0, Y1 for SERIES_RANGE < y <= RECURRENCE_RANGE by the backward recurrence."""
    above = xp.zeros_like(y)  # J_{k+1}, unnormalized
    here = xp.full_like(y, RECURRENCE_SEED)  # J_k
    norm = xp.zeros_like(y)  # 2 sum J_{2k}, k >= 1
    neumann0 = xp.zeros_like(y)  # sum (-1)**k J_{2k} / k
    neumann1 = xp.zeros_like(y)  # sum (-1)**k (J_{2k-1} - J_{2k+1}) / k, gathered by odd index j = 2m - 1
    for k in range(RECURRENCE_START, 0, -1):
        if k % 2 == 0:
            m = k // 2
            norm = norm + 2 * here
            neumann0 = neumann0 + (-1) ** m / m * here
        else:
            m = (k + 1) // 2
            neumann1 = neumann1 + (-1) ** m * (1 / m + (1 / (m - 1) if m > 1 else 0)) * here
        above, here = here, 2 * k / y * here - above
    scale = 1 / (here + norm)  # J0 + 2 sum J_{2k} = 1
    j0, j1 = here * scale, above * scale
    log_term = xp.log(y / 2) + EULER_GAMMA
    y0 = 2 / math.pi * (log_term * j0 - 2 * neumann0 * scale)
    y1 = 2 / math.pi * (log_term * j1 - j0 / y + neumann1 * scale)
    return {"j0": j0, "j1": j1, "y0": y0, "y1": y1}


def _hankel(xp: Any, y: Any) -> dict:
    """J0, J1, Y0, Y1 for y > RECURRENCE_RANGE."""
    z = 1 / y
    amplitude = xp.sqrt(2 / (math.pi * y))
    c, s = xp.cos(y), xp.sin(y)
    out = {}
    # chi = y - pi/4: cos(chi) = (c + s)/sqrt2, sin(chi) = (s - c)/sqrt2; chi = y - 3pi/4: (s - c)/sqrt2, -(s + c)/sqrt2
    for nu, (cos_chi, sin_chi) in ((0, (c + s, s - c)), (1, (s - c, -(s + c)))):
        p = polynomial(xp, HANKEL[nu][0], z * z)
        q = z * polynomial(xp, HANKEL[nu][1], z * z)
        out[f"j{nu}"] = amplitude * (p * cos_chi - q * sin_chi) / math.sqrt(2)
        out[f"y{nu}"] = amplitude * (p * sin_chi + q * cos_chi) / math.sqrt(2)
    return out


def _bessel(xp: Any, name: str, x: Any) -> Any:
    x = xp.asarray(x, dtype=xp.float64)
    y = xp.abs(x)
    with np.errstate(all="ignore"):
        near, middle = y <= SERIES_RANGE, y <= RECURRENCE_RANGE
        # each range sees stand-ins outside it, so that no branch meets 0, inf or NaN
        out = xp.where(near, _series(xp, xp.where(near & (y > 0), y, 1.0))[name],
                       xp.where(middle, _miller(xp, xp.where(near | ~middle, 10.0, y))[name],
                                _hankel(xp, xp.where(middle | ~(y < xp.inf), 50.0, y))[name]))
        out = xp.where(y == xp.inf, 0.0, xp.where(xp.isnan(x), xp.nan, out))
        if name == "j0":
            return xp.where(y == 0, 1.0, out)
        if name == "j1":
            return xp.where(y == 0, x, xp.where(x < 0, -out, out))
        out = xp.where(y == 0, -xp.inf, out)
        return xp.where(x < 0, xp.nan, out)


def j0(xp: Any, x: Any) -> Any:
    """J0(x) of an array, elementwise, in float64."""
    return _bessel(xp, "j0", x)


def j1(xp: Any, x: Any) -> Any:
    """J1(x), odd, in float64."""
    return _bessel(xp, "j1", x)


def y0(xp: Any, x: Any) -> Any:
    """Y0(x) in float64: -inf at 0, NaN below."""
    return _bessel(xp, "y0", x)


def y1(xp: Any, x: Any) -> Any:
    """Y1(x) in float64: -inf at 0, NaN below."""
    return _bessel(xp, "y1", x)


def spherical_j0(xp: Any, x: Any) -> Any:
    """sin(x) / x in float64, 1 at 0 and 0 at +-inf; below |x| = 1/2 its Taylor series to x**12 (whose next
    term is below 1e-17 there), which keeps the tiny |x| exact."""
    x = xp.asarray(x, dtype=xp.float64)
    with np.errstate(all="ignore"):
        u = x * x
        series = polynomial(xp, tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(6, -1, -1)), u)
        out = xp.where(xp.abs(x) < 0.5, series, xp.sin(x) / x)
        return xp.where(xp.isinf(x), 0.0, out)
