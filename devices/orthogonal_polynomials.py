"""The classical orthogonal polynomials of torch.special at an integer degree n, elementwise on arrays of x and n in
the op's dtype (float32 or float64): Chebyshev T, U, V, W and their shifted forms on [0, 1], physicists' and
probabilists' Hermite H and He, Laguerre L and Legendre P.

PyTorch's conventions, which are part of the result:
- n is truncated towards zero; a negative n (and an n that is NaN, infinite or beyond int64) gives 0.
- the Chebyshev kinds take their values at y = +-1 exactly (y = x, or 2x - 1 for the shifted ones), and for
  |y| < 1 past a small degree their trigonometric forms (T_n(cos t) = cos(n t), U_n(cos t) = sin((n + 1) t) /
  sin t, V_n(cos t) = cos((n + 1/2) t) / cos(t / 2), W_n(cos t) = sin((n + 1/2) t) / sin(t / 2));
- elsewhere the three-term recurrence from P_0 = 1 and P_1, which stops at the first NaN, so a degree that
  overflows to inf and then inf - inf gives NaN, as PyTorch's;
- Hermite's degree is capped: above 512 in float64 (128 in float32) the result is NaN; Laguerre's L_n(0) is 1.

The recurrence runs over all elements at once up to the largest degree still needing it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

INT64_LIMIT = 2.0 ** 63
HERMITE_LIMIT = {np.dtype(np.float32): 128, np.dtype(np.float64): 512}
DONE_CHECK = 32  # recurrence steps between checks for whether any element still needs one (a sync on a GPU)


@dataclass(frozen=True)
class Recurrence:
    """P_1(y) and P_m = step(m, y, P_{m-1}, P_{m-2}) for m >= 2."""
    first: Callable[[Any], Any]
    step: Callable[[Any, Any, Any, Any], Any]


RECURRENCES = {
    "chebyshev_t": Recurrence(lambda y: y, lambda m, y, q, p: (y + y) * q - p),
    "chebyshev_u": Recurrence(lambda y: y + y, lambda m, y, q, p: (y + y) * q - p),
    "chebyshev_v": Recurrence(lambda y: y + y - 1, lambda m, y, q, p: (y + y) * q - p),
    "chebyshev_w": Recurrence(lambda y: y + y + 1, lambda m, y, q, p: (y + y) * q - p),
    "hermite_h": Recurrence(lambda x: x + x, lambda m, x, q, p: (x + x) * q - (2 * m - 2) * p),
    "hermite_he": Recurrence(lambda x: x, lambda m, x, q, p: x * q - (m - 1) * p),
    "laguerre_l": Recurrence(lambda x: 1 - x, lambda m, x, q, p: (((2 * m - 2) + (1 - x)) * q - (m - 1) * p) / m),
    "legendre_p": Recurrence(lambda x: x, lambda m, x, q, p: ((2 * m - 1) * x * q - (m - 1) * p) / m),
}


def degree(xp: Any, n: Any) -> Any:
    """n as PyTorch's static_cast<int64_t>: truncated; -1 (which gives 0) where that is undefined."""
    n = xp.asarray(n)
    if n.dtype.kind != "f":
        return n.astype(xp.int64)
    valid = xp.isfinite(n) & (xp.abs(n) < INT64_LIMIT)
    return xp.where(valid, xp.trunc(xp.where(valid, n, -1)), -1).astype(xp.int64)


def _recurrence(xp: Any, kind: str, y: Any, n: Any, needed: Any) -> Any:
    """P_n(y) by the recurrence where `needed` (0 elsewhere), n >= 2 there."""
    rule = RECURRENCES[kind]
    p = xp.ones_like(y)
    q = rule.first(y)
    out = xp.zeros_like(y)
    todo = xp.where(needed, n, 0)
    top = int(todo.max()) if todo.size else 0
    with np.errstate(all="ignore"):
        for m in range(2, top + 1):
            r = rule.step(y.dtype.type(m), y, q, p)
            p, q = q, r
            finished = todo == m
            out = xp.where(finished | (xp.isnan(r) & (todo > m)), r, out)
            todo = xp.where(finished | xp.isnan(r), 0, todo)
            if m % DONE_CHECK == 0 and not bool(todo.any()):
                break
    return out


def _signed(n: Any, value: Any) -> Any:
    """(-1)**n value."""
    return value * (1 - 2 * (n % 2)).astype(value.dtype)


def _chebyshev_endpoint(xp: Any, kind: str, y: Any, n: Any) -> Any:
    """P_n(+-1) for |y| == 1: T 1 and (-1)**n, U n + 1 and (-1)**n (n + 1), V 1 and (-1)**n (2n + 1), W 2n + 1 and
    (-1)**n."""
    one, nf = xp.ones_like(y), n.astype(y.dtype)
    at_plus, at_minus = {
        "chebyshev_t": (one, one), "chebyshev_u": (nf + 1, nf + 1),
        "chebyshev_v": (one, 2 * nf + 1), "chebyshev_w": (2 * nf + 1, one),
    }[kind]
    return xp.where(y > 0, at_plus, _signed(n, at_minus))


def _chebyshev_trigonometric(xp: Any, kind: str, y: Any, n: Any) -> Any:
    """The trigonometric forms for |y| < 1; V and W at the end where their divisor rounds to 1, the endpoint's
    value."""
    t = xp.arccos(xp.where(xp.abs(y) < 1, y, 0))
    nf = n.astype(y.dtype)
    if kind == "chebyshev_t":
        return xp.cos(nf * t)
    if kind == "chebyshev_u":
        return xp.sin((nf + 1) * t) / xp.sin(t)
    if kind == "chebyshev_v":
        return xp.where(xp.sin(t / 2) != 1, xp.cos((nf + 0.5) * t) / xp.cos(t / 2), _signed(n, 2 * nf + 1))
    return xp.where(xp.cos(t / 2) != 1, xp.sin((nf + 0.5) * t) / xp.sin(t / 2),
                    _chebyshev_endpoint(xp, kind, y, n))


# Chebyshev kinds: the degree above which |y| < 1 takes the trigonometric form (PyTorch's, shifted then not)
TRIGONOMETRIC_FROM = {"chebyshev_t": (6, 6), "chebyshev_u": (8, 6), "chebyshev_v": (8, 6), "chebyshev_w": (8, 4)}


def polynomial(xp: Any, kind: str, x: Any, n: Any, dtype: Any, *, shifted: bool = False) -> Any:
    """P_n(x) of the family `kind` (a key of RECURRENCES), the shifted Chebyshev form P_n(2x - 1) if `shifted`,
    computed in `dtype`; x and n broadcast."""
    x = xp.asarray(x).astype(dtype, copy=False)
    n = degree(xp, xp.asarray(n).astype(dtype, copy=False))
    x, n = xp.broadcast_arrays(x, n)
    y = x + x - 1 if shifted else x
    with np.errstate(all="ignore"):
        if kind.startswith("chebyshev"):
            edge = xp.abs(y) == 1
            trigonometric = (n > TRIGONOMETRIC_FROM[kind][shifted]) & (xp.abs(y) < 1)
            special = [(edge, lambda: _chebyshev_endpoint(xp, kind, y, n)),
                       (trigonometric, lambda: _chebyshev_trigonometric(xp, kind, y, n))]
        elif kind == "legendre_p":
            special = [(xp.abs(y) == 1, lambda: _signed(xp.where(y > 0, 0, n), xp.ones_like(y)))]
        elif kind == "laguerre_l":
            special = [(y == 0, lambda: xp.ones_like(y))]
        else:
            special = [(n > HERMITE_LIMIT[np.dtype(dtype)], lambda: xp.full_like(y, xp.nan))]
        needed = n >= 2
        for mask, _ in special:
            needed = needed & ~mask
        out = _recurrence(xp, kind, y, n, needed)
        out = xp.where(n == 1, RECURRENCES[kind].first(y), out)
        out = xp.where(n == 0, 1, out)
        for mask, value in reversed(special):
            if bool(mask.any()):
                out = xp.where(mask, value(), out)
        return xp.where(n < 0, 0, out).astype(dtype, copy=False)
