"""The implicit reparameterization gradients of Gamma and Dirichlet samples (Figurnov et al. 2018): how a sample
held at its CDF value moves with the concentration, d x / d alpha = -(d CDF / d alpha) / pdf. These are PyTorch's
approximations (Jankowiak & Obermeyer 2018: series, saddle point expansions and fitted rational functions, picked
by region), so that a gradient through a sample is the one PyTorch gives for that sample.

Each takes the array module `xp` (numpy or cupy) and float64 arrays; every region's formula runs on the whole
array and `where` picks (a GPU then never sends a count back), under `errstate` for the regions not picked.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.devices.gamma import digamma

# PyTorch's branch bounds are float literals (0.8f ...), compared in double.
SMALL_X = float(np.float32(0.8))
LOW_BAND, HIGH_BAND = float(np.float32(0.9)), float(np.float32(1.1))

# Gamma's rational approximation exp(p / q): the coefficients of p (four) and q (four) in v = log(alpha), each a
# quadratic in u = log(x / alpha) (rows: its constant, linear and quadratic terms).
GAMMA_RATIONAL = (
    (0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084),
    (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
    (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
     -1.5247877e-07),
)
# The Beta's rational correction p / q: [p or q][power of u][power of a] gives a cubic in b (u = log x,
# a = log alpha - u, b = log total - a).
BETA_RATIONAL = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))),
)


def _nan_to_zero(xp: Any, x: Any) -> Any:
    return xp.where(xp.isnan(x), 0.0, x)


# -- Gamma ---------------------------------------------------------------------------------------------------------
def _gamma_small_x(xp: Any, alpha: Any, x: Any) -> Any:
    """For x < 0.8: the CDF's Taylor series in x, differentiated term by term."""
    numer = xp.ones_like(x)
    denom = alpha
    series1 = numer / denom
    series2 = numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    pow_x_alpha = x**alpha
    pdf = x ** (alpha - 1) * xp.exp(-x)
    cdf = pow_x_alpha * series1
    cdf_alpha = (xp.log(x) - digamma(xp, alpha)) * cdf - pow_x_alpha * series2
    return _nan_to_zero(xp, -cdf_alpha / pdf)


def _gamma_large_alpha(xp: Any, alpha: Any, x: Any) -> Any:
    """For alpha > 8: Rice's saddle point expansion, with a polynomial near x = alpha, where it is singular."""
    numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
    numer_2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x)
    near_mean = numer_1 * numer_2 / (1244160 * (alpha * alpha) * (alpha * alpha))
    denom = xp.sqrt(8 * alpha)
    term2 = denom / (alpha - x)
    term3 = (x - alpha - alpha * xp.log(x / alpha)) ** -1.5
    term23 = xp.where(x < alpha, term2 - term3, term2 + term3)
    term1 = xp.log(x / alpha) * term23 - xp.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    away = -stirling * (x * term1) / denom
    return xp.where((LOW_BAND * alpha <= x) & (x <= HIGH_BAND * alpha), near_mean, away)


def _gamma_rational(xp: Any, alpha: Any, x: Any) -> Any:
    """Elsewhere: a rational function fitted in (log(x / alpha), log(alpha))."""
    u = xp.log(x / alpha)
    v = xp.log(alpha)
    c = [GAMMA_RATIONAL[0][i] + u * (GAMMA_RATIONAL[1][i] + u * GAMMA_RATIONAL[2][i]) for i in range(8)]
    p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
    q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
    return xp.exp(p / q)


def standard_gamma_grad(xp: Any, alpha: Any, x: Any) -> Any:
    """d x / d alpha for samples `x` of Gamma(alpha, 1) (PyTorch's _standard_gamma_grad)."""
    with np.errstate(all="ignore"):
        small_x = _gamma_small_x(xp, alpha, x)
        large_alpha = _gamma_large_alpha(xp, alpha, x)
        rational = _gamma_rational(xp, alpha, x)
    return xp.where(x < SMALL_X, small_x, xp.where(alpha > 8.0, large_alpha, rational))


# -- Beta (and so Dirichlet) ---------------------------------------------------------------------------------------
def _beta_alpha_small_x(xp: Any, x: Any, alpha: Any, beta: Any) -> Any:
    """The gradient with respect to alpha for x near 0: a Taylor series in x."""
    factor = digamma(xp, alpha) - digamma(xp, alpha + beta) - xp.log(x)
    numer = xp.ones_like(x)
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer = numer * ((i - beta) * x / i)
        denom = alpha + i
        series = series + numer / denom * (factor + 1 / denom)
    return _nan_to_zero(xp, x * (1 - x) ** -beta * series)


def _beta_beta_small_x(xp: Any, x: Any, alpha: Any, beta: Any) -> Any:
    """The gradient with respect to beta for x near 0: a Taylor series in x."""
    factor = digamma(xp, alpha + beta) - digamma(xp, beta)
    numer = xp.ones_like(x)
    betas = xp.ones_like(x)
    dbetas = xp.zeros_like(x)
    series = factor / alpha
    for i in range(1, 9):
        numer = numer * (-x / i)
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + numer / (alpha + i) * (dbetas + factor * betas)
    return _nan_to_zero(xp, -((1 - x) ** (1 - beta)) * series)


def _beta_alpha_mid(xp: Any, x: Any, alpha: Any, beta: Any) -> Any:
    """For alpha and beta both large: Rice's saddle point expansion, with a polynomial near the mean."""
    total = alpha + beta
    mean = alpha / total
    std = xp.sqrt(alpha * beta / (total + 1)) / total
    poly = 47 * x * (beta * beta) * (beta * beta) + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta + alpha * (
            3 * (59 + 180 * beta - 90 * x) * (beta * beta) + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (8 * (1 - x) * (135 * beta - 11)))))
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
    near_mean = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / xp.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta)
    axbx = alpha * (x - 1) + beta * x
    term1 = term1_num / (xp.sqrt(2 * alpha / beta) * total**1.5 * axbx * axbx)
    term2 = 0.5 * xp.log(alpha / (total * x))
    term3 = xp.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4 = (beta * xp.log(beta / (total * (1 - x))) + alpha * xp.log(alpha / (total * x))) ** -1.5
    term1234 = term1 + term2 * (term3 + xp.where(x < mean, term4, -term4))
    away = stirling * prefactor * term1234
    return xp.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), near_mean, away)


def _beta_rational(xp: Any, x: Any, alpha: Any, total: Any) -> Any:
    """Elsewhere: a rational correction to x (digamma(total) - digamma(alpha)) / beta."""
    u = xp.log(x)
    a = xp.log(alpha) - u
    b = xp.log(total) - a
    pow_u = (1.0, u, u * u)
    pow_a = (1.0, a, a * a)
    p = q = 0.0
    for i in range(3):
        for j in range(3):
            ua = pow_u[i] * pow_a[j]
            cp, cq = BETA_RATIONAL[0][i][j], BETA_RATIONAL[1][i][j]
            p = p + ua * (cp[0] + b * (cp[1] + b * (cp[2] + b * cp[3])))
            q = q + ua * (cq[0] + b * (cq[1] + b * (cq[2] + b * cq[3])))
    approx = x * (digamma(xp, total) - digamma(xp, alpha)) / (total - alpha)
    return p / q * approx


def dirichlet_grad(xp: Any, x: Any, alpha: Any, total: Any) -> Any:
    """d x_i / d alpha_i, scaled by 1 / (1 - x_i), for a Dirichlet sample component `x` of concentration `alpha`
    (the concentrations summing to `total`): the Beta(alpha, total - alpha) marginal's gradient (PyTorch's
    _dirichlet_grad)."""
    beta = total - alpha
    boundary = total * x * (1 - x)
    with np.errstate(all="ignore"):
        near_zero = _beta_alpha_small_x(xp, x, alpha, beta)
        near_one = -_beta_beta_small_x(xp, 1 - x, beta, alpha)
        mid = _beta_alpha_mid(xp, x, alpha, beta)
        rational = _beta_rational(xp, x, alpha, total)
    return xp.where(
        (x <= 0.5) & (boundary < 2.5), near_zero,
        xp.where((x >= 0.5) & (boundary < 0.75), near_one, xp.where((alpha > 6) & (beta > 6), mid, rational)),
    )
