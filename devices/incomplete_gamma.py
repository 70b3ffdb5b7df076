"""The regularized incomplete gamma functions P(a, x) (lower) and Q(a, x) = 1 - P(a, x) (upper) on float64
arrays, with PyTorch's values at the edges of their domain, good to about 1e-14 relative (more where the values
are themselves ill-conditioned: exp(-x) for x near 700 is only as good as x's last bit).

Each function takes the array module `xp`, so the same code serves numpy and cupy. Each method below runs on the
elements of its region only (picked with a boolean mask), so that it costs in proportion to them; one no element
needs is skipped. The iterative ones stop when every element has converged, which is checked every eight steps:
one transfer from a GPU each time, as is each mask's check for any element.

The regions are those DiDonato and Morris (ACM TOMS 12, 1986) and Cephes' igam/igamc use:

- a >= 20 and |eta| <= 1, where x is near a and the other methods converge slowly: Temme's uniform expansion
  (DLMF 8.12.3-8.12.11) Q = erfc(eta sqrt(a / 2)) / 2 + R, P = erfc(-eta sqrt(a / 2)) / 2 - R, with
  eta**2 / 2 = x / a - 1 - log(x / a) and R = exp(-a eta**2 / 2) / sqrt(2 pi a) * sum_k c_k(eta) a**-k. The
  Taylor coefficients of the c_k in eta are derived exactly (with fractions) from DLMF 8.12.11's recursion on first
  use: see `temme_coefficients`.
- P where x <= 1 or x <= a: the series x**a e**-x / Gamma(a + 1) * sum_n x**n / ((a + 1) ... (a + n)) (DLMF 8.7.1,
  8.11.4); Q = 1 - P there when x > 1.1 or a is large for x, as P is then small.
- Q for x > 1.1 and x > a: Legendre's continued fraction for Gamma(a, x) (DLMF 8.9.2), by Lentz's method.
- Q for x <= 1.1 and a small for x: 1 - x**a / Gamma(a + 1) (by expm1) less x**a / Gamma(a) times the
  alternating sum of (-x)**n / (n! (a + n)) over n >= 1 (DLMF 8.7.3); P = 1 - Q where x > 1 and x > a.

The prefactor x**a e**-x / Gamma(a + 1) comes from a log for a < 10 and, above, from Stirling's series as
sqrt(1 / (2 pi a)) exp(a log_weight(a, x) - mu(a)), mu being lgamma's Stirling correction, which keeps its
relative accuracy for large a and x (a log(x) - x - lgamma(a) would cancel to the last few of its digits).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from actorgrad.devices.erf import erfc as erfc_kernel
from actorgrad.devices.erf import polynomial
from actorgrad.devices.gamma import LGAMMA_SERIES, ONE_MINUS_EULER, STIRLING_SERIES, lgamma

EPSILON = 2.0 ** -53
TINY = 1e-300  # Lentz's stand-in for a zero denominator
TEMME_A = 20.0  # Temme's expansion from this a on ...
TEMME_LOG_WEIGHT = -0.5  # ... where log_weight(a, x) >= this, that is |eta| <= 1
TEMME_ORDER = 12  # the powers of 1 / a it sums: c_13 a**-13, the first left out, is below 2e-19 from a = 20 on
TEMME_DEGREE = 30  # the Taylor terms of each c_k in eta: c_k's radius of convergence is 2 sqrt(pi)
STIRLING_FORM = 10.0  # the prefactor by Stirling's series from this a on (its 8 terms are within an ulp there)
SMALL_X = 1.1  # below, Q by its alternating series rather than the continued fraction
MAX_STEPS = 2000  # a cap, never met: the series converges within about 50 steps and the fraction within 110
# 1 / (2k + 3), k = 17 down to 0: (2 atanh(u) - 2u) / (2u**3) as a polynomial in u**2
ATANH_TAIL = tuple(1 / (2 * k + 3) for k in range(17, -1, -1))


def _float64(xp: Any, *arrays: Any) -> tuple:
    return tuple(xp.broadcast_arrays(*(xp.asarray(v, dtype=xp.float64) for v in arrays)))


def log_weight(xp: Any, a: Any, x: Any) -> Any:
    """log(x / a) - (x - a) / a, that is log1p(t) - t for t = (x - a) / a, without its cancellation near x = a: for
    t in [-0.5, 1], with u = t / (2 + t), it is 2 atanh(u) - t = -t u + 2 u**3 (1/3 + u**2 / 5 + ...), whose terms
    do not cancel (|u| <= 1/3); elsewhere log(x / a), which keeps x / a's relative accuracy, less t."""
    t = (x - a) / a
    near = (t >= -0.5) & (t <= 1)
    s = xp.where(near, t, 0.0)
    u = s / (2 + s)
    v = u * u
    series = -s * u + 2 * u * v * polynomial(xp, ATANH_TAIL, v)
    return xp.where(near, series, xp.log(x / a) - t)


def lgamma1p(xp: Any, a: Any) -> Any:
    """lgamma(1 + a) for a >= 0 without rounding 1 + a: up to a = 0.5 from the series of lgamma(2 + a) around 0
    (A&S 6.1.33, as `gamma.lgamma` uses it) less log1p(a)."""
    small = a <= 0.5
    z = xp.where(small, a, 0.0)
    series = z * ONE_MINUS_EULER + z * z * polynomial(xp, LGAMMA_SERIES, z) - xp.log1p(z)
    return xp.where(small, series, lgamma(xp, xp.where(small, 1.0, a + 1)))


def _stirling_correction(xp: Any, a: Any) -> Any:
    """lgamma(a) - ((a - 0.5) log(a) - a + log(2 pi) / 2), for a >= 10."""
    inverse = 1 / a
    return inverse * polynomial(xp, STIRLING_SERIES, inverse * inverse)


def _split(xp: Any, use: Any, first: Any, second: Any, a: Any, x: Any) -> Any:
    """first(a, x) where `use` holds and second(a, x) elsewhere, each on its own elements of the flat arrays."""
    out = xp.empty_like(x)
    for where, fn in ((use, first), (~use, second)):
        if bool(xp.any(where)):
            out[where] = fn(xp, a[where], x[where])
    return out


def _prefactor_stirling(xp: Any, a: Any, x: Any) -> Any:
    return xp.exp(a * log_weight(xp, a, x) - _stirling_correction(xp, a)) / xp.sqrt(2 * math.pi * a)


def _prefactor_log(xp: Any, a: Any, x: Any) -> Any:
    return xp.exp(a * xp.log(x) - x - lgamma1p(xp, a))


def prefactor(xp: Any, a: Any, x: Any) -> Any:
    """x**a e**-x / Gamma(a + 1) for flat arrays with a > 0 and x >= 0 (finite)."""
    return _split(xp, a >= STIRLING_FORM, _prefactor_stirling, _prefactor_log, a, x)


def _converged(xp: Any, step: int, unfinished: Any) -> bool:
    """Every eighth step, whether no element is left unfinished (one transfer from a GPU)."""
    return step % 8 == 7 and not bool(xp.any(unfinished))


def _lower_series(xp: Any, a: Any, x: Any) -> Any:
    """The sum over n >= 0 of x**n / ((a + 1) ... (a + n)), for x <= max(a, 1.1) (its terms fall from the first
    or second on)."""
    term = xp.ones_like(x)
    total = term
    denominator = a
    for step in range(MAX_STEPS):
        denominator = denominator + 1
        term = term * (x / denominator)
        total = total + term
        if _converged(xp, step, term > EPSILON * total):
            break
    return total


def _upper_alternating(xp: Any, a: Any, x: Any) -> Any:
    """Q(a, x) for x <= 1.1 (DLMF 8.7.3); 24 terms of the sum: 1.1**25 / 25! is below 1e-24."""
    log_power = a * xp.log(x) - lgamma1p(xp, a)  # log(x**a / Gamma(a + 1))
    total = xp.zeros_like(x)
    factor = xp.ones_like(x)
    for n in range(1, 25):
        factor = factor * (-x / n)
        total = total + factor / (a + n)
    return -xp.expm1(log_power) - a * xp.exp(log_power) * total


def _upper_fraction(xp: Any, a: Any, x: Any) -> Any:
    """Gamma(a, x) e**x x**-a as Legendre's continued fraction 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a)
    / (x + 5 - a - ...))), by the modified Lentz method; for x > 1.1 and x > a."""
    b = x + 1 - a
    c = xp.full_like(x, 1 / TINY)
    d = 1 / b
    h = d
    unfinished = xp.ones(x.shape, dtype=bool)
    for step in range(1, MAX_STEPS):
        an = -step * (step - a)
        b = b + 2
        d = an * d + b
        d = 1 / xp.where(xp.abs(d) < TINY, TINY, d)
        c = b + an / c
        c = xp.where(xp.abs(c) < TINY, TINY, c)
        delta = c * d
        h = xp.where(unfinished, h * delta, h)  # finished elements stay: more factors of 1 +- an ulp would drift
        unfinished = unfinished & (xp.abs(delta - 1) > EPSILON)
        if _converged(xp, step, unfinished):
            break
    return h


def _bernoulli(n: int) -> list[Fraction]:
    """B_0 ... B_n, exactly."""
    b = [Fraction(1)]
    for m in range(1, n + 1):
        b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return b


def _stirling_coefficients(order: int) -> list[Fraction]:
    """g_0 ... g_order of Gamma(z) ~ e**-z z**z sqrt(2 pi / z) sum_k g_k z**-k (DLMF 5.11.3): the exponential
    of the series sum_j B_2j / (2j (2j - 1)) z**(1 - 2j)."""
    b = _bernoulli(order + 1)
    exponent = [Fraction(0)] * (order + 1)
    for j in range(1, order // 2 + 2):
        if 2 * j - 1 <= order:
            exponent[2 * j - 1] = b[2 * j] / (2 * j * (2 * j - 1))
    g = [Fraction(1)]
    for n in range(1, order + 1):  # g' = exponent' g, term by term
        g.append(sum(k * exponent[k] * g[n - k] for k in range(1, n + 1)) / n)
    return g


@functools.cache
def temme_coefficients() -> tuple[tuple[float, ...], ...]:
    """The Taylor coefficients in eta of c_0 ... c_TEMME_ORDER (DLMF 8.12), each highest power first.

    With mu = x / a - 1 as a power series sum_n b_n eta**n (from mu mu' = eta (1 + mu), the derivative of
    mu - log(1 + mu) = eta**2 / 2, b_1 = 1): c_0 = 1 / mu - 1 / eta, and c_k = c_(k-1)' / eta + (-1)**k g_k / mu
    (DLMF 8.12.11), whose 1 / eta terms cancel. Exact fractions; about 0.1 s, once."""
    size = TEMME_DEGREE + 2 * TEMME_ORDER + 2
    b = [Fraction(0), Fraction(1)]
    for n in range(2, size + 1):
        cross = sum((n + 1 - i) * b[i] * b[n + 1 - i] for i in range(2, n))
        b.append((b[n - 1] - cross) / (n + 1))
    r = [Fraction(1)]  # eta / mu
    for n in range(1, size):
        r.append(-sum(b[k + 1] * r[n - k] for k in range(1, n + 1)))
    g = _stirling_coefficients(TEMME_ORDER)
    c = r[1:]
    table = [c[:TEMME_DEGREE]]
    for k in range(1, TEMME_ORDER + 1):
        assert c[1] + (-1) ** k * g[k] == 0  # the poles cancel
        c = [(m + 2) * c[m + 2] + (-1) ** k * g[k] * r[m + 1] for m in range(len(c) - 2)]
        table.append(c[:TEMME_DEGREE])
    return tuple(tuple(float(v) for v in reversed(row)) for row in table)


def _temme(xp: Any, a: Any, x: Any, upper: bool) -> Any:
    """P or Q by Temme's uniform expansion, for a >= 20 and |eta| <= 1."""
    weight = log_weight(xp, a, x)  # -eta**2 / 2
    eta = xp.sqrt(-2 * weight)
    eta = xp.where(x < a, -eta, eta)
    inverse = 1 / a
    total = xp.zeros_like(x)
    for row in reversed(temme_coefficients()):
        total = total * inverse + polynomial(xp, row, eta)
    rest = xp.exp(a * weight) / xp.sqrt(2 * math.pi * a) * total
    z = eta * xp.sqrt(a / 2)
    if upper:
        return erfc_kernel(xp, z) / 2 + rest
    return erfc_kernel(xp, -z) / 2 - rest


def _by_series(xp: Any, a: Any, x: Any, upper: bool) -> Any:
    p = prefactor(xp, a, x) * _lower_series(xp, a, x)
    return 1 - p if upper else p


def _by_fraction(xp: Any, a: Any, x: Any, upper: bool) -> Any:
    q = a * prefactor(xp, a, x) * _upper_fraction(xp, a, x)
    return q if upper else 1 - q


def _by_alternating(xp: Any, a: Any, x: Any, upper: bool) -> Any:
    q = _upper_alternating(xp, a, x)
    return q if upper else 1 - q


def _regularized(xp: Any, a: Any, x: Any, upper: bool) -> Any:
    """P(a, x) (upper False) or Q(a, x) of flat arrays with a > 0 and x > 0, both finite: each method on the
    elements of its region only, so that each costs in proportion to them and an iterative one stops when they
    have converged."""
    temme = (a >= TEMME_A) & (log_weight(xp, a, x) >= TEMME_LOG_WEIGHT)
    if upper:
        # P is small enough for Q = 1 - P where x < a, and up to x = 1.1 where a is large for x (Cephes' bounds)
        a_large = xp.where(x <= 0.5, a * xp.log(x) < -0.4, a > SMALL_X * x)
        fraction = ~temme & (x > SMALL_X) & (x > a)
        series = ~temme & ~fraction & ((x > SMALL_X) | a_large)
    else:
        series = ~temme & ((x <= 1) | (x <= a))
        fraction = ~temme & ~series & (x > SMALL_X)
    alternating = ~temme & ~series & ~fraction
    out = xp.empty_like(x)
    for use, method in ((series, _by_series), (fraction, _by_fraction), (alternating, _by_alternating),
                        (temme, _temme)):
        if bool(xp.any(use)):
            out[use] = method(xp, a[use], x[use], upper)
    return out


def _incomplete_gamma(xp: Any, a: Any, x: Any, upper: bool) -> Any:
    a, x = _float64(xp, a, x)
    shape = a.shape
    a, x = a.ravel(), x.ravel()
    with np.errstate(all="ignore"):
        regular = (a > 0) & (x > 0) & (a < xp.inf) & (x < xp.inf)
        out = xp.empty_like(x)
        out[regular] = _regularized(xp, a[regular], x[regular], upper)
        # PyTorch's values at the edges, in its order: P(0, x > 0) = 1, P(a, 0) = 0, P(inf, x) = 0, P(a, inf) = 1
        near, far = (1.0, 0.0) if upper else (0.0, 1.0)
        out = xp.where(x == xp.inf, far, out)
        out = xp.where(a == xp.inf, xp.where(x == xp.inf, xp.nan, near), out)
        out = xp.where(x == 0, near, out)
        out = xp.where(a == 0, xp.where(x > 0, far, xp.nan), out)
        out = xp.where((a < 0) | (x < 0) | xp.isnan(a) | xp.isnan(x), xp.nan, out)
        return out.reshape(shape)


def gammainc(xp: Any, a: Any, x: Any) -> Any:
    """P(a, x), the regularized lower incomplete gamma function, elementwise with broadcasting, in float64: NaN
    for a < 0 or x < 0."""
    return _incomplete_gamma(xp, a, x, False)


def gammaincc(xp: Any, a: Any, x: Any) -> Any:
    """Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma function, in float64."""
    return _incomplete_gamma(xp, a, x, True)


def _density_log(xp: Any, a: Any, x: Any) -> Any:
    """a x**(a - 1) e**-x / Gamma(a + 1), without lgamma(a)'s -log(a) for tiny a."""
    return a * xp.exp((a - 1) * xp.log(x) - x - lgamma1p(xp, a))


def _density(xp: Any, a: Any, x: Any) -> Any:
    """x**(a - 1) e**-x / Gamma(a) for flat arrays with a > 0 and x > 0, both finite."""
    return _split(xp, a >= STIRLING_FORM, lambda xp, a, x: a * _prefactor_stirling(xp, a, x) / x, _density_log, a, x)


def gammainc_grad(xp: Any, a: Any, x: Any) -> Any:
    """dP(a, x)/dx = x**(a - 1) e**-x / Gamma(a), in float64. Where a or x is 0, infinite or out of the domain,
    PyTorch's formula exp((a - 1) log(x) - x - lgamma(a)) as it evaluates (NaN at a = 1, x = 0, say)."""
    a, x = _float64(xp, a, x)
    shape = a.shape
    a, x = a.ravel(), x.ravel()
    with np.errstate(all="ignore"):
        regular = (a > 0) & (x > 0) & (a < xp.inf) & (x < xp.inf)
        out = xp.empty_like(x)
        out[regular] = _density(xp, a[regular], x[regular])
        edges = ~regular
        if bool(xp.any(edges)):
            ae, xe = a[edges], x[edges]
            out[edges] = xp.exp((ae - 1) * xp.log(xe) - xe - lgamma(xp, ae))
        return out.reshape(shape)
