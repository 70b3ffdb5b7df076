"""The Hurwitz zeta function zeta(s, q) = sum over k >= 0 of (q + k)**-s on float64 arrays, with PyTorch's domain
(s > 1; q > 0, or q < 0 for an integer s), good to a few ulps where the sum does not cancel.

Euler-Maclaurin summation (DLMF 25.11.5 with the remainder of 2.10.1): the first terms directly until
w = q + n >= s + 10 (at most 64 of them), then w**(1 - s) / (s - 1) + w**-s / 2 and 10 Bernoulli terms
B_2j / (2j)! s (s + 1) ... (s + 2j - 2) w**(1 - s - 2j). From w >= s + 10 the terms fall by a factor of at least
10 each and the last is below 1e-17 of the sum; where 64 direct terms stop short of s + 10 (large s and q), the
part left after them is below e**-64 of the sum, so the Bernoulli terms hardly count.

For q = -(m + f) < 0 (m an integer, 0 < f < 1) and an integer s, the terms up to k = m are (-1)**s (j + f)**-s,
j = 0..m, that is (-1)**s (zeta(s, f) - zeta(s, 1 - q)), and the rest is zeta(s, 1 - f): three sums at positive
arguments. Each function takes the array module `xp`, so the same code serves numpy and cupy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices.gamma import BERNOULLI

MAX_DIRECT = 64
# B_2j / (2j)!, j = 1..10
EULER_MACLAURIN = tuple(b / math.factorial(2 * j) for j, b in enumerate(BERNOULLI, 1))


def _hurwitz(xp: Any, s: Any, q: Any) -> Any:
    """zeta(s, q) for finite s > 1 and q > 0 (q = inf gives 0), same-shape arrays."""
    total = xp.zeros_like(q)
    w = q
    if q.size:
        steps = min(MAX_DIRECT, max(0, math.ceil(float(xp.max(s + 10 - xp.minimum(q, s + 10))))))
        for _ in range(steps):
            below = w < s + 10
            total = total + xp.where(below, w ** -s, 0.0)
            w = xp.where(below, w + 1, w)
    power = w ** -s
    term = s / w  # s (s + 1) ... (s + 2j - 2) / w**(2j - 1)
    bernoulli = xp.zeros_like(q)
    for j, c in enumerate(EULER_MACLAURIN, 1):
        bernoulli = bernoulli + c * term
        term = term * ((s + 2 * j - 1) * (s + 2 * j) / (w * w))
    tail = w / (s - 1) + 0.5 + bernoulli
    return total + xp.where(power == 0, 0.0, power * tail)  # the terms may overflow where w**-s underflows


def zeta(xp: Any, s: Any, q: Any) -> Any:
    """zeta(s, q) of two arrays, elementwise with broadcasting, in float64. As PyTorch: inf at s = 1 and at
    q = 0 or a negative integer (whatever s > 1), NaN for s < 1 and for another q < 0 with s not an integer,
    zeta(inf, q) inf for q < 1.
    Beyond PyTorch, which gives NaN there, the limits zeta(s, inf) = 0, zeta(inf, 1) = 1 and zeta(inf, q > 1) = 0."""
    s, q = xp.broadcast_arrays(xp.asarray(s, dtype=xp.float64), xp.asarray(q, dtype=xp.float64))
    with np.errstate(all="ignore"):
        finite_s = (s > 1) & (s < xp.inf)
        sc = xp.where(finite_s, s, 2.0)
        whole_s = s == xp.floor(s)
        negative = (q < 0) & (q > -xp.inf) & (q != xp.floor(q)) & whole_s
        # zeta(s, 1 - f), with 1 - f = q - floor(q) exactly, where q < 0
        out = _hurwitz(xp, sc, xp.where(negative, q - xp.floor(q), xp.where(q > 0, q, 1.0)))
        if bool(xp.any(negative)):
            # zeta(s, f), with f = ceil(q) - q exactly, and zeta(s, 1 - q)
            rest = _hurwitz(xp, xp.concatenate([sc.ravel()] * 2), xp.concatenate([
                xp.where(negative, xp.ceil(q) - q, xp.inf).ravel(), xp.where(negative, 1 - q, xp.inf).ravel(),
            ])).reshape((2,) + s.shape)
            sign = xp.where(xp.fmod(sc, 2) == 1, -1.0, 1.0)
            # zeta(s, 1 - f) + (-1)**s zeta(s, f) first: where they cancel (odd s), they cancel exactly at f = 1/2
            out = xp.where(negative, (out + sign * rest[0]) - sign * rest[1], out)
        out = xp.where(s == xp.inf, xp.where(q > 1, 0.0, xp.where(q == 1, 1.0, xp.inf)), out)
        out = xp.where((q <= 0) & (q == xp.floor(q)), xp.inf, out)
        out = xp.where((q < 0) & (q != xp.floor(q)) & ~whole_s, xp.nan, out)
        out = xp.where(xp.isnan(q) | (s < 1) | xp.isnan(s), xp.nan, out)
        return xp.where(s == 1, xp.inf, out)
