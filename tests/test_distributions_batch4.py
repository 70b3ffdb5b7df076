"""ExponentialFamily (its Bregman entropy and KL divergence through actorgrad's autograd), InverseGamma,
GeneralizedPareto, Wishart, LKJCholesky, OneHotCategoricalStraightThrough and Gamma.cdf against closed forms
written out here with numpy and math: log densities, CDFs, entropies, moments and KL divergences; gradients by
gradcheck; sample statistics on fixed seeds; expand; and argument validation with PyTorch's error texts."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import distributions as D
from actorgrad.autograd import gradcheck
from actorgrad.distributions import constraints as C
from actorgrad.distributions.gamma_gradients import standard_gamma_grad
from actorgrad.distributions.kl import _kl_expfamily_expfamily

N = 20000  # draws for the sample statistics
LOG_2 = math.log(2)

# a scale matrix with correlations large enough that S and its transpose-free mistakes (L^T L) differ by far more
# than the sampling tolerances
SCALE = np.array([[2.0, 0.9, 0.3], [0.9, 1.0, -0.5], [0.3, -0.5, 1.5]])
SCALE_Q = np.array([[1.0, -0.2, 0.0], [-0.2, 2.0, 0.4], [0.0, 0.4, 0.8]])


def f64(values, requires_grad: bool = False) -> ag.Tensor:
    return ag.tensor(np.asarray(values, dtype=np.float64), dtype=ag.float64, requires_grad=requires_grad)


def numpy_of(t: ag.Tensor) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def assert_close(got, expected, rtol: float = 1e-12, atol: float = 1e-12) -> None:
    np.testing.assert_allclose(numpy_of(got), np.asarray(expected, dtype=float), rtol=rtol, atol=atol)


def draws_of(dist, n: int = N, seed: int = 0) -> np.ndarray:
    ag.manual_seed(seed)
    return dist.sample((n,)).numpy()


# -- closed forms ----------------------------------------------------------------------------------------------------
def digamma(x: float) -> float:
    """psi(x) for x > 0: the recurrence psi(x) = psi(x + 1) - 1 / x up to x >= 10, then the asymptotic series."""
    shift = 0.0
    while x < 10:
        shift -= 1 / x
        x += 1
    inv2 = 1 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    return shift + math.log(x) - 0.5 / x - series


def mvlgamma(x: float, p: int) -> float:
    return p * (p - 1) / 4 * math.log(math.pi) + sum(math.lgamma(x - j / 2) for j in range(p))


def mvdigamma(x: float, p: int) -> float:
    return sum(digamma(x - j / 2) for j in range(p))


def logdet(m: np.ndarray) -> float:
    sign, value = np.linalg.slogdet(m)
    assert sign > 0
    return float(value)


def wishart_log_density(x: np.ndarray, df: float, scale: np.ndarray) -> float:
    p = scale.shape[-1]
    return ((df - p - 1) / 2 * logdet(x) - np.trace(np.linalg.solve(scale, x)) / 2 - df * p / 2 * LOG_2
            - df / 2 * logdet(scale) - mvlgamma(df / 2, p))


def wishart_mean_log_det(df: float, scale: np.ndarray) -> float:
    """E[log det X] = mvdigamma(df / 2) + p log 2 + log det S."""
    p = scale.shape[-1]
    return mvdigamma(df / 2, p) + p * LOG_2 + logdet(scale)


def wishart_entropy(df: float, scale: np.ndarray) -> float:
    """-E[log p(X)] with E[X] = df S, so E[tr(S^-1 X)] = df p."""
    p = scale.shape[-1]
    return (-(df - p - 1) / 2 * wishart_mean_log_det(df, scale) + df * p / 2 + df * p / 2 * LOG_2
            + df / 2 * logdet(scale) + mvlgamma(df / 2, p))


def wishart_kl(df_p: float, scale_p: np.ndarray, df_q: float, scale_q: np.ndarray) -> float:
    """E_p[log p(X) - log q(X)], from the densities with E_p[log det X] and E_p[X] = df_p S_p."""
    p = scale_p.shape[-1]
    trace = np.trace((np.linalg.inv(scale_p) - np.linalg.inv(scale_q)) @ scale_p)
    return ((df_p - df_q) / 2 * wishart_mean_log_det(df_p, scale_p) - df_p / 2 * trace
            - (df_p - df_q) * p / 2 * LOG_2 - df_p / 2 * logdet(scale_p) + df_q / 2 * logdet(scale_q)
            - mvlgamma(df_p / 2, p) + mvlgamma(df_q / 2, p))


def gamma_cdf_integer(k: int, x: float) -> float:
    """P(k, x) for a whole shape k: one less the first k terms of the Poisson(x) distribution."""
    return 1 - math.exp(-x) * sum(x**j / math.factorial(j) for j in range(k))


def generalized_pareto_log_density(x: float, loc: float, scale: float, c: float) -> float:
    z = (x - loc) / scale
    if c == 0:
        return -math.log(scale) - z
    return -math.log(scale) - (1 / c + 1) * math.log1p(c * z)


def generalized_pareto_cdf(x: float, loc: float, scale: float, c: float) -> float:
    z = (x - loc) / scale
    return 1 - (math.exp(-z) if c == 0 else (1 + c * z) ** (-1 / c))


# -- the exponential family ------------------------------------------------------------------------------------------
def test_the_families_pytorch_derives_from_exponential_family_do_so():
    members = [D.Bernoulli, D.Beta, D.ContinuousBernoulli, D.Dirichlet, D.Exponential, D.Gamma, D.Chi2, D.Normal,
               D.Poisson, D.Wishart]
    others = [D.Binomial, D.Categorical, D.OneHotCategorical, D.StudentT, D.Uniform, D.Laplace, D.Geometric,
              D.InverseGamma, D.GeneralizedPareto, D.LKJCholesky, D.MultivariateNormal]
    assert all(issubclass(cls, D.ExponentialFamily) for cls in members)
    assert not any(issubclass(cls, D.ExponentialFamily) for cls in others)
    assert issubclass(D.ExponentialFamily, D.Distribution)


def exp_family_pairs():
    """Per family: p and q of that family, p of batch (2,) and q of batch (2,) or (), with the closed-form
    divergence registered for the pair (or, for Wishart, written out here)."""
    cb_probs = [0.2, 0.4999]  # the second inside the window where ContinuousBernoulli uses its Taylor forms
    return {
        "Normal": (D.Normal(f64([0.3, -1.0]), f64([0.7, 2.0])), D.Normal(f64(1.3), f64(1.7))),
        "Exponential": (D.Exponential(f64([0.5, 3.0])), D.Exponential(f64([1.5, 2.0]))),
        "Gamma": (D.Gamma(f64([0.5, 3.0]), f64([2.0, 0.3])), D.Gamma(f64([1.5, 2.0]), f64(1.3))),
        "Chi2": (D.Chi2(f64([3.0, 5.0])), D.Chi2(f64([4.0, 2.0]))),
        "Beta": (D.Beta(f64([0.5, 3.0]), f64([2.0, 0.3])), D.Beta(f64([1.5, 2.0]), f64([1.0, 1.3]))),
        "Dirichlet": (D.Dirichlet(f64([[0.5, 3.0, 1.2], [2.0, 2.0, 2.0]])), D.Dirichlet(f64([1.5, 2.0, 1.0]))),
        "Bernoulli": (D.Bernoulli(f64([0.2, 0.9])), D.Bernoulli(f64([0.5, 0.3]))),
        "ContinuousBernoulli": (D.ContinuousBernoulli(f64(cb_probs)), D.ContinuousBernoulli(f64([0.6, 0.3]))),
        "Poisson": (D.Poisson(f64([1.0, 2.0])), D.Poisson(f64([3.0, 0.5]))),
    }


@pytest.mark.parametrize("name", ["Normal", "Exponential", "Gamma", "Chi2", "Bernoulli", "ContinuousBernoulli"])
def test_the_bregman_entropy_equals_each_familys_closed_form(name):
    p, _ = exp_family_pairs()[name]
    bregman = D.ExponentialFamily.entropy(p)
    assert bregman.shape == p.batch_shape
    assert_close(bregman, numpy_of(p.entropy()), rtol=1e-9, atol=1e-12)


def test_the_bregman_entropy_needs_a_mean_carrier_measure():
    """PyTorch gives Poisson, Beta and Dirichlet none: Poisson (no closed form) has no entropy."""
    with pytest.raises(NotImplementedError):
        D.Poisson(f64([1.0])).entropy()
    with pytest.raises(NotImplementedError):
        D.ExponentialFamily.entropy(D.Beta(f64([1.0]), f64([2.0])))


def test_the_bregman_entropy_works_under_no_grad_and_for_a_users_family():
    """N(mu, 1) as its own family: theta = mu, F = theta^2 / 2, k(x) = -x^2 / 2 - log(2 pi) / 2; its entropy is
    (1 + log(2 pi)) / 2 and KL(N(a, 1) || N(b, 1)) = (a - b)^2 / 2, both from the Bregman forms alone."""

    class UnitNormal(D.ExponentialFamily):
        arg_constraints = {"loc": C.real}

        def __init__(self, loc):
            self.loc = loc
            super().__init__(loc.shape)

        @property
        def _natural_params(self):
            return (self.loc,)

        def _log_normalizer(self, x):
            return x.pow(2) / 2

        @property
        def _mean_carrier_measure(self):
            return -(1 + self.loc.pow(2)) / 2 - 0.5 * math.log(2 * math.pi)

    loc = f64([0.3, -1.2], requires_grad=True)
    with ag.no_grad():
        entropy = UnitNormal(loc).entropy()
    assert_close(entropy, [0.5 * (1 + math.log(2 * math.pi))] * 2)
    kl = D.kl_divergence(UnitNormal(f64([1.0, 2.0])), UnitNormal(loc))
    assert_close(kl, [(1.0 - 0.3) ** 2 / 2, (2.0 + 1.2) ** 2 / 2])
    (grad,) = ag.autograd.grad(kl.sum(), [loc])  # differentiable in q
    assert_close(grad, [0.3 - 1.0, -1.2 - 2.0])


@pytest.mark.parametrize("name", list(exp_family_pairs()))
def test_the_bregman_kl_divergence_equals_the_registered_closed_form(name):
    p, q = exp_family_pairs()[name]
    bregman = _kl_expfamily_expfamily(p, q)
    assert bregman.shape == (2,)
    assert_close(bregman, numpy_of(D.kl_divergence(p, q)), rtol=1e-9, atol=1e-12)


def test_the_bregman_kl_divergence_passes_gradcheck_in_q():
    def divergence(concentration, rate):
        return _kl_expfamily_expfamily(D.Gamma(f64([0.5, 3.0]), f64([2.0, 0.3])), D.Gamma(concentration, rate))

    assert gradcheck(divergence, [f64([1.5, 2.0], requires_grad=True), f64([1.3, 0.4], requires_grad=True)])


def test_kl_divergence_refuses_two_different_exponential_families():
    with pytest.raises(NotImplementedError, match=r"^The cross KL-divergence between different exponential families "
                                                  r"cannot {29}be computed using Bregman divergences$"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Bernoulli(0.3))


# -- Gamma.cdf -------------------------------------------------------------------------------------------------------
def test_gamma_cdf_equals_the_closed_forms():
    """Whole shapes by the Poisson sum, shape 1/2 by erf(sqrt(x)); rate scales x."""
    values = [0.2, 1.0, 3.5, 9.0]
    dist = D.Gamma(f64([[1.0], [3.0], [0.5]]), f64([[2.0], [0.7], [1.5]]))
    expected = [[gamma_cdf_integer(1, 2.0 * v) for v in values], [gamma_cdf_integer(3, 0.7 * v) for v in values],
                [math.erf(math.sqrt(1.5 * v)) for v in values]]
    assert_close(dist.cdf(f64(values)), expected, rtol=1e-12, atol=1e-14)
    assert_close(D.Chi2(f64(2.0)).cdf(f64(values)), [-math.expm1(-v / 2) for v in values])  # inherited
    with pytest.raises(ValueError, match=r"^Expected value argument .*GreaterThanEq\(lower_bound=0\.0\)"):
        dist.cdf(f64([-1.0]))


def test_gamma_cdf_passes_gradcheck_in_rate_and_value():
    concentration = f64([0.7, 2.5])
    assert gradcheck(lambda rate, value: D.Gamma(concentration, rate).cdf(value),
                     [f64([1.3, 0.4], requires_grad=True), f64([0.8, 3.0], requires_grad=True)])


# -- InverseGamma ----------------------------------------------------------------------------------------------------
IG_CONCENTRATION, IG_RATE = [9.5, 6.0], [2.0, 0.5]


def inverse_gamma_log_density(y: float, a: float, b: float) -> float:
    return a * math.log(b) - math.lgamma(a) - (a + 1) * math.log(y) - b / y


def test_inverse_gamma_log_prob_cdf_and_moments_equal_the_closed_forms():
    dist = D.InverseGamma(f64(IG_CONCENTRATION), f64(IG_RATE))
    values = [0.7, 1.3]
    expected = [inverse_gamma_log_density(y, a, b) for y, a, b in zip(values, IG_CONCENTRATION, IG_RATE)]
    assert_close(dist.log_prob(f64(values)), expected)
    # P(Y <= y) = P(X >= 1 / y) for X gamma: at whole shape 6, the first six Poisson(rate / y) terms
    assert_close(dist.cdf(f64([1.0, 0.4]))[1], 1 - gamma_cdf_integer(6, 0.5 / 0.4))
    a, b = np.array(IG_CONCENTRATION), np.array(IG_RATE)
    assert_close(dist.mean, b / (a - 1))
    assert_close(dist.mode, b / (a + 1))
    assert_close(dist.variance, b**2 / ((a - 1) ** 2 * (a - 2)))
    entropy = [x + math.log(y * math.gamma(x)) - (1 + x) * digamma(x) for x, y in zip(a, b)]
    assert_close(dist.entropy(), entropy, rtol=1e-12)
    heavy = D.InverseGamma(f64([0.5, 1.5]), f64(1.0))
    assert_close(heavy.mean, [math.inf, 2.0])
    assert_close(heavy.variance, [math.inf, math.inf])


def test_inverse_gamma_samples_match_the_mean_and_variance():
    dist = D.InverseGamma(f64(IG_CONCENTRATION), f64(IG_RATE))
    draws = draws_of(dist)
    assert draws.shape == (N, 2) and (draws > 0).all()
    np.testing.assert_allclose(draws.mean(0), numpy_of(dist.mean), rtol=0.02)
    np.testing.assert_allclose(draws.var(0), numpy_of(dist.variance), rtol=0.25)  # heavy tails: loose


@pytest.mark.parametrize("dtype", [ag.float32, ag.float64])
@pytest.mark.parametrize("make", [
    lambda x: D.Gamma(x(2.5), x(2.0)), lambda x: D.InverseGamma(x(2.5), x(2.0)), lambda x: D.Poisson(x(3.0)),
    lambda x: D.Binomial(x(5.0), x(0.3)), lambda x: D.NegativeBinomial(x(3.0), x(0.4)),
])
def test_a_distribution_of_0d_parameters_draws_0d_samples(make, dtype):
    # numpy draws a Python number, not an array, for a 0-d parameter
    dist = make(lambda value: ag.tensor(value, dtype=dtype))
    value = dist.sample()
    assert value.shape == () and value.dtype == dtype and value.item() >= 0
    assert dist.sample((3,)).shape == (3,)


def test_inverse_gamma_passes_gradcheck():
    params = [f64(IG_CONCENTRATION, requires_grad=True), f64(IG_RATE, requires_grad=True)]
    value = f64([0.7, 1.3])

    def scores(a, b):
        dist = D.InverseGamma(a, b)
        return dist.log_prob(value) + dist.entropy() + dist.mean + dist.variance

    def sample(b):
        ag.manual_seed(3)
        return D.InverseGamma(params[0], b).rsample((3,))

    assert gradcheck(scores, params)
    assert gradcheck(sample, params[1:])
    # the CDF is the gamma's, differentiable in rate and value only
    assert gradcheck(lambda b, y: D.InverseGamma(params[0], b).cdf(y), [params[1], f64([0.7, 1.3], requires_grad=True)])


def test_inverse_gamma_rsample_differentiates_by_the_implicit_gamma_gradient():
    """Y = 1 / X for X = G / rate, G standard gamma: dY/d concentration = -Y^2 (dG/d concentration) / rate, with
    dG/d concentration the gamma sampler's implicit gradient at G = rate / Y."""
    concentration = f64(IG_CONCENTRATION, requires_grad=True)
    rate = np.array(IG_RATE)
    ag.manual_seed(1)
    value = D.InverseGamma(concentration, f64(rate)).rsample((4,))
    value.sum().backward()
    y = value.detach().numpy()
    alpha = np.broadcast_to(np.array(IG_CONCENTRATION), y.shape)
    expected = (-(y**2) * standard_gamma_grad(np, alpha, rate / y) / rate).sum(0)
    np.testing.assert_allclose(concentration.grad.numpy(), expected, rtol=1e-10)


def test_inverse_gamma_kl_divergence_is_its_gammas():
    """1 / x is one invertible map for both: the divergence is that of the gamma bases."""
    p, q = D.InverseGamma(f64([9.5, 6.0]), f64([2.0, 0.5])), D.InverseGamma(f64([3.0, 1.5]), f64(1.0))
    a_p, b_p, a_q, b_q = np.array([9.5, 6.0]), np.array([2.0, 0.5]), np.array([3.0, 1.5]), 1.0
    digammas = np.array([digamma(a) for a in a_p])
    lgammas = np.array([[math.lgamma(a) for a in a_q], [math.lgamma(a) for a in a_p]])
    expected = (a_q * np.log(b_p / b_q) + lgammas[0] - lgammas[1]
                + (a_p - a_q) * digammas + (b_q - b_p) * a_p / b_p)
    assert_close(D.kl_divergence(p, q), expected, rtol=1e-12)


def test_inverse_gamma_expands_and_validates():
    dist = D.InverseGamma(f64(IG_CONCENTRATION), f64(IG_RATE)).expand((4, 2))
    assert type(dist) is D.InverseGamma and dist.batch_shape == (4, 2) and dist.rate.shape == (4, 2)
    assert dist.sample((3,)).shape == (3, 4, 2)
    with pytest.raises(ValueError, match=r"^Expected parameter rate .* GreaterThan\(lower_bound=0\.0\)"):
        D.InverseGamma(f64([1.0]), f64([-1.0]))
    with pytest.raises(ValueError, match=r"^Expected value argument .*GreaterThan\(lower_bound=0\.0\)"):
        D.InverseGamma(f64([1.0]), f64([1.0])).log_prob(f64([-1.0]))


# -- GeneralizedPareto -----------------------------------------------------------------------------------------------
GP_LOC, GP_SCALE, GP_CONCENTRATION = [0.3, -1.0, 0.5], [1.5, 0.7, 2.0], [0.2, 0.0, -0.4]


def test_generalized_pareto_log_prob_cdf_icdf_and_moments_equal_the_closed_forms():
    dist = D.GeneralizedPareto(f64(GP_LOC), f64(GP_SCALE), f64(GP_CONCENTRATION))
    values = [1.7, 0.2, 2.5]
    params = list(zip(values, GP_LOC, GP_SCALE, GP_CONCENTRATION))
    assert_close(dist.log_prob(f64(values)), [generalized_pareto_log_density(*p) for p in params])
    assert_close(dist.cdf(f64(values)), [generalized_pareto_cdf(*p) for p in params])
    assert_close(dist.log_survival_function(f64(values)), [math.log1p(-generalized_pareto_cdf(*p)) for p in params])
    u = f64([0.1, 0.5, 0.93])
    assert_close(dist.cdf(dist.icdf(u)), numpy_of(u))
    loc, scale, c = map(np.array, (GP_LOC, GP_SCALE, GP_CONCENTRATION))
    assert_close(dist.mean, loc + scale / (1 - c))
    assert_close(dist.variance, scale**2 / ((1 - c) ** 2 * (1 - 2 * c)))
    assert_close(dist.entropy(), np.log(scale) + c + 1)
    assert_close(dist.mode, loc)
    support = dist.support
    assert_close(support.upper_bound, [math.inf, math.inf, 0.5 + 2.0 / 0.4])
    heavy = D.GeneralizedPareto(0.0, 1.0, f64([0.7, 1.2]))
    assert np.isnan(numpy_of(heavy.mean)[1]) and np.isnan(numpy_of(heavy.variance)).all()


def test_generalized_pareto_samples_match_the_mean_and_variance():
    dist = D.GeneralizedPareto(f64(GP_LOC), f64(GP_SCALE), f64([0.1, 0.0, -0.4]))
    draws = draws_of(dist)
    assert (draws >= np.array(GP_LOC)).all() and (draws[:, 2] <= 0.5 + 2.0 / 0.4).all()
    np.testing.assert_allclose(draws.mean(0), numpy_of(dist.mean), rtol=0.03)
    np.testing.assert_allclose(draws.var(0), numpy_of(dist.variance), rtol=0.08)


def test_generalized_pareto_passes_gradcheck():
    params = [f64(GP_LOC, requires_grad=True), f64(GP_SCALE, requires_grad=True),
              f64([0.2, 0.3, -0.4], requires_grad=True)]
    value = f64([1.7, 0.2, 2.5])

    def scores(loc, scale, c):
        dist = D.GeneralizedPareto(loc, scale, c)
        return dist.log_prob(value) + dist.cdf(value) + dist.entropy() + dist.mean

    def sample(loc, scale, c):
        ag.manual_seed(5)
        return D.GeneralizedPareto(loc, scale, c).rsample((3,))

    assert gradcheck(scores, params)
    assert gradcheck(sample, params)


def test_generalized_pareto_expands_and_validates():
    dist = D.GeneralizedPareto(f64(GP_LOC), f64(GP_SCALE), f64(GP_CONCENTRATION)).expand((2, 3))
    assert type(dist) is D.GeneralizedPareto and dist.batch_shape == (2, 3) and dist.concentration.shape == (2, 3)
    assert D.GeneralizedPareto(0.0, 1.0, 0.5).batch_shape == ()
    with pytest.raises(ValueError, match=r"^Expected parameter scale .* GreaterThan\(lower_bound=0\.0\)"):
        D.GeneralizedPareto(f64([0.0]), f64([0.0]), f64([0.1]))
    with pytest.raises(ValueError, match=r"^Expected value argument .*Interval\(lower_bound="):
        D.GeneralizedPareto(f64([0.0]), f64([1.0]), f64([-0.5])).log_prob(f64([2.5]))


# -- Wishart ---------------------------------------------------------------------------------------------------------
def wishart_from(parameterization: str, df, scale, **kwargs) -> D.Wishart:
    scale = np.asarray(scale)
    matrix = {"covariance_matrix": scale, "precision_matrix": np.linalg.inv(scale),
              "scale_tril": np.linalg.cholesky(scale)}[parameterization]
    return D.Wishart(f64(df), **{parameterization: f64(matrix)}, **kwargs)


WISHART_VALUE = np.array([[3.0, 0.2, 0.1], [0.2, 2.0, -0.3], [0.1, -0.3, 4.5]])


@pytest.mark.parametrize("parameterization", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_log_prob_entropy_and_moments_equal_the_closed_forms(parameterization):
    dfs = (3.5, 7.0)
    dist = wishart_from(parameterization, dfs, SCALE)
    assert dist.batch_shape == (2,) and dist.event_shape == (3, 3)
    assert_close(dist.log_prob(f64(WISHART_VALUE)), [wishart_log_density(WISHART_VALUE, df, SCALE) for df in dfs],
                 rtol=1e-10)
    assert_close(dist.entropy(), [wishart_entropy(df, SCALE) for df in dfs], rtol=1e-10)
    assert_close(D.ExponentialFamily.entropy(dist), numpy_of(dist.entropy()), rtol=1e-10)
    assert_close(dist.mean, [df * SCALE for df in dfs], rtol=1e-10)
    diagonal = np.diag(SCALE)
    assert_close(dist.variance, [df * (SCALE**2 + np.outer(diagonal, diagonal)) for df in dfs], rtol=1e-10)
    assert_close(dist.mode, [np.full((3, 3), math.nan), 3.0 * SCALE], rtol=1e-10)  # undefined for df <= p + 1
    for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
        expected = {"covariance_matrix": SCALE, "precision_matrix": np.linalg.inv(SCALE),
                    "scale_tril": np.linalg.cholesky(SCALE)}[name]
        assert_close(getattr(dist, name), np.broadcast_to(expected, (2, 3, 3)), rtol=1e-10, atol=1e-12)


def test_wishart_samples_match_the_mean_and_variance():
    dist = wishart_from("covariance_matrix", [4.5, 7.0], SCALE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no singular draw at these df
        draws = draws_of(dist)
    assert draws.shape == (N, 2, 3, 3)
    np.testing.assert_allclose(draws, draws.transpose(0, 1, 3, 2), atol=1e-12)
    np.testing.assert_allclose(draws.mean(0), numpy_of(dist.mean), rtol=0.03, atol=0.03)
    np.testing.assert_allclose(draws.var(0), numpy_of(dist.variance), rtol=0.08)


def test_wishart_kl_divergence_equals_the_closed_form_for_each_batch_entry():
    """Through the Bregman fallback; a batch of two pairs with different df (PyTorch's sums its df term over the
    batch here)."""
    p = wishart_from("scale_tril", [4.5, 7.0], SCALE)
    q = wishart_from("precision_matrix", [3.5, 9.0], SCALE_Q)
    expected = [wishart_kl(4.5, SCALE, 3.5, SCALE_Q), wishart_kl(7.0, SCALE, 9.0, SCALE_Q)]
    assert_close(D.kl_divergence(p, q), expected, rtol=1e-9)
    assert_close(D.kl_divergence(p, p), [0.0, 0.0], atol=1e-10)


def test_wishart_passes_gradcheck():
    """Unvalidated, as gradcheck moves the entries above the diagonal too."""
    tril = np.linalg.cholesky(SCALE)
    params = [f64([4.5, 7.0], requires_grad=True), f64(tril, requires_grad=True)]
    value = f64(WISHART_VALUE)

    def scores(df, scale_tril):
        dist = D.Wishart(df, scale_tril=scale_tril, validate_args=False)
        return dist.log_prob(value) + dist.entropy() + dist.variance.sum((-2, -1))

    def sample(scale_tril):
        ag.manual_seed(4)
        return D.Wishart(params[0], scale_tril=scale_tril, validate_args=False).rsample((2,))

    def divergence(df, scale_tril):
        return D.kl_divergence(wishart_from("covariance_matrix", [4.0, 6.0], SCALE_Q),
                               D.Wishart(df, scale_tril=scale_tril, validate_args=False))

    assert gradcheck(scores, params)
    assert gradcheck(sample, params[1:])
    assert gradcheck(divergence, params)


def test_wishart_rsample_gradient_in_df_is_unbiased_for_the_mean():
    """d E[X] / d df = S: the average over draws of the samples' df gradient (the gamma sampler's implicit one,
    through the chi draws of the Bartlett factor)."""
    df = f64([4.5, 7.0], requires_grad=True)
    ag.manual_seed(8)
    draws = D.Wishart(df, covariance_matrix=f64(SCALE)).rsample((4000,))
    weights = f64(np.arange(9.0).reshape(3, 3))
    (draws * weights).sum((-2, -1)).mean(0).sum().backward()
    np.testing.assert_allclose(df.grad.numpy(), [(SCALE * np.arange(9.0).reshape(3, 3)).sum()] * 2, rtol=0.05)


def test_wishart_redraws_singular_samples():
    class FirstDrawSingular(D.Wishart):
        draws = 0

        def _bartlett_sampling(self, sample_shape):
            FirstDrawSingular.draws += 1
            sample = super()._bartlett_sampling(sample_shape)
            return sample * 0 if FirstDrawSingular.draws == 1 else sample

    dist = FirstDrawSingular(f64(5.0), covariance_matrix=f64(SCALE))
    with pytest.warns(UserWarning, match=r"^Singular sample detected\.$"):
        sample = dist.rsample((2,))
    assert FirstDrawSingular.draws == 2 and bool(C.positive_definite.check(sample).all())


def test_wishart_expands_and_validates():
    dist = wishart_from("precision_matrix", 5.0, SCALE).expand((2,))
    assert type(dist) is D.Wishart and dist.batch_shape == (2,) and dist.precision_matrix.shape == (2, 3, 3)
    assert dist.sample((4,)).shape == (4, 2, 3, 3)
    assert D.Wishart(5.0, covariance_matrix=f64(np.stack([SCALE, SCALE_Q]))).mean.shape == (2, 3, 3)
    with pytest.raises(AssertionError, match=r"^Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        D.Wishart(f64(5.0))
    with pytest.raises(ValueError, match=r"^scale_tril must be at least two-dimensional"):
        D.Wishart(f64(5.0), covariance_matrix=f64([1.0]))
    with pytest.raises(ValueError, match=r"^Value of df=1\.5 expected to be greater than ndim - 1 = 2\.$"):
        D.Wishart(1.5, covariance_matrix=f64(SCALE))
    with pytest.warns(UserWarning, match=r"^Low df values detected"):
        D.Wishart(2.5, covariance_matrix=f64(SCALE))
    with pytest.raises(ValueError, match=r"^Expected parameter covariance_matrix .* PositiveDefinite\(\)"):
        D.Wishart(5.0, covariance_matrix=f64(-SCALE))
    with pytest.raises(ValueError, match=r"^Expected value argument .*PositiveDefinite\(\)"):
        D.Wishart(5.0, covariance_matrix=f64(SCALE)).log_prob(f64(-SCALE))


# -- LKJCholesky -----------------------------------------------------------------------------------------------------
def test_lkj_cholesky_log_prob_in_two_dims_equals_the_closed_form():
    """At dim 2, L = [[1, 0], [r, sqrt(1 - r^2)]] with density (1 - r^2)^(eta - 1) / B(1/2, eta) in r."""
    r = np.array([-0.6, 0.1, 0.8])
    values = np.zeros((3, 2, 2))
    values[:, 0, 0], values[:, 1, 0], values[:, 1, 1] = 1.0, r, np.sqrt(1 - r**2)
    eta = 2.5
    log_beta = math.lgamma(0.5) + math.lgamma(eta) - math.lgamma(eta + 0.5)
    assert_close(D.LKJCholesky(2, f64(eta)).log_prob(f64(values)), (eta - 1) * np.log1p(-(r**2)) - log_beta)


@pytest.mark.parametrize("eta", [0.7, 2.5])
def test_lkj_cholesky_density_in_three_dims_integrates_to_one(eta):
    """Over the three free entries (a, b, c) of L = [[1, 0, 0], [a, ., 0], [b, c, .]], by uniform points of
    [-1, 1]^3 (volume 8) kept where b^2 + c^2 < 1."""
    rng = np.random.default_rng(0)
    a, b, c = rng.uniform(-1, 1, (3, 200000))
    inside = b**2 + c**2 < 1
    a, b, c = a[inside], b[inside], c[inside]
    values = np.zeros((a.size, 3, 3))
    values[:, 0, 0], values[:, 1, 0], values[:, 1, 1] = 1.0, a, np.sqrt(1 - a**2)
    values[:, 2, 0], values[:, 2, 1], values[:, 2, 2] = b, c, np.sqrt(1 - b**2 - c**2)
    density = np.exp(D.LKJCholesky(3, f64(eta), validate_args=False).log_prob(f64(values)).numpy())
    assert abs(density.sum() / 200000 * 8 - 1) < 0.015


def test_lkj_cholesky_samples_are_correlation_factors_with_the_lkj_marginals():
    """Every correlation of LKJ(dim, eta) is 2 B - 1 with B ~ Beta(eta - 1 + dim / 2, same): mean 0, variance
    1 / (2 eta + dim - 1)."""
    dim, eta = 4, 2.0
    draws = draws_of(D.LKJCholesky(dim, f64([eta, 0.5])))
    assert draws.shape == (N, 2, dim, dim)
    assert bool(C.corr_cholesky.check(f64(draws)).all())
    correlations = draws @ draws.transpose(0, 1, 3, 2)
    rows, cols = np.tril_indices(dim, -1)
    off_diagonal = correlations[..., rows, cols]
    np.testing.assert_allclose(off_diagonal.mean(0), 0.0, atol=0.02)
    expected = np.array([[1 / (2 * e + dim - 1)] * rows.size for e in (eta, 0.5)])
    np.testing.assert_allclose(off_diagonal.var(0), expected, rtol=0.05)


def test_lkj_cholesky_log_prob_passes_gradcheck():
    values = D.LKJCholesky(3, f64(1.0)).sample((2,))
    assert gradcheck(lambda eta: D.LKJCholesky(3, eta).log_prob(values), [f64([0.7, 2.5], requires_grad=True)])


def test_lkj_cholesky_expands_and_validates():
    dist = D.LKJCholesky(3, f64([0.5, 2.0])).expand((4, 2))
    assert type(dist) is D.LKJCholesky and dist.batch_shape == (4, 2) and dist.event_shape == (3, 3)
    assert dist.sample().shape == (4, 2, 3, 3) and not dist.has_rsample
    with pytest.raises(ValueError, match=r"^Expected dim to be an integer greater than or equal to 2\. Found dim=1\.$"):
        D.LKJCholesky(1)
    with pytest.raises(ValueError, match=r"^Expected parameter concentration .* GreaterThan\(lower_bound=0\.0\)"):
        D.LKJCholesky(3, f64([-1.0]))
    with pytest.raises(ValueError, match=r"^Expected value argument .*CorrCholesky\(\)"):
        D.LKJCholesky(2).log_prob(f64([[1.0, 0.0], [0.5, 0.5]]))


# -- OneHotCategoricalStraightThrough --------------------------------------------------------------------------------
def test_one_hot_straight_through_samples_one_hot_and_passes_the_probs_gradient():
    logits = f64([[0.3, -1.0, 2.0], [0.0, 0.5, -0.5]], requires_grad=True)
    dist = D.OneHotCategoricalStraightThrough(logits=logits)
    assert dist.has_rsample and isinstance(dist, D.OneHotCategorical)
    ag.manual_seed(6)
    sample = dist.rsample((5,))
    ag.manual_seed(6)
    plain = dist.sample((5,))
    assert_close(sample, plain.numpy())
    assert bool(C.one_hot.check(sample.detach()).all())
    weights = f64(np.arange(30.0).reshape(5, 2, 3))
    (grad,) = ag.autograd.grad((sample * weights).sum(), [logits], retain_graph=True)
    (expected,) = ag.autograd.grad((dist.probs * weights.sum(0)).sum(), [logits])
    assert_close(grad, numpy_of(expected))
    expanded = dist.expand((4, 2))
    assert type(expanded) is D.OneHotCategoricalStraightThrough and expanded.rsample().shape == (4, 2, 3)
    other = D.OneHotCategoricalStraightThrough(probs=f64([0.2, 0.3, 0.5]))
    expected_kl = numpy_of(D.kl_divergence(D.Categorical(logits=logits), D.Categorical(probs=f64([0.2, 0.3, 0.5]))))
    assert_close(D.kl_divergence(dist, other), expected_kl)


# -- constraints.cat and constraints.stack, now in a module of their own ----------------------------------------------
def test_cat_and_stack_constraints_are_still_reached_through_constraints():
    joined = C.cat([C.positive, C.real], dim=0, lengths=[1, 2])
    assert isinstance(joined, C.Constraint) and repr(joined) == "Cat()"
    assert numpy_of(joined.check(f64([-1.0, -2.0, 3.0]))).tolist() == [False, True, True]
    stacked = C.stack([C.positive, C.unit_interval], dim=-1)
    assert numpy_of(stacked.check(f64([[1.0, 0.5], [1.0, 1.5]]))).tolist() == [True, False]  # dim -1: in the event


# -- on cuda:0 (CuPy, or the stand-in in CI) --------------------------------------------------------------------------
GPU_CASES = {
    "InverseGamma": (D.InverseGamma, [IG_CONCENTRATION, IG_RATE], [0.7, 1.3]),
    "GeneralizedPareto": (D.GeneralizedPareto, [GP_LOC, GP_SCALE, [0.2, 0.3, -0.4]], [1.7, 0.2, 2.5]),
    "Wishart": (lambda df, tril: D.Wishart(df, scale_tril=tril), [[4.5, 7.0], np.linalg.cholesky(SCALE)],
                WISHART_VALUE),
    "LKJCholesky": (lambda eta: D.LKJCholesky(2, eta), [[0.7, 2.5]], [[1.0, 0.0], [0.6, 0.8]]),
    "OneHotCategoricalStraightThrough": (lambda lg: D.OneHotCategoricalStraightThrough(logits=lg),
                                         [[0.3, -1.0, 2.0]], [0.0, 0.0, 1.0]),
    "Gamma": (D.Gamma, [[0.7, 2.5], [1.3, 0.4]], [0.8, 3.0]),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(GPU_CASES))
def test_batch4_distributions_give_the_same_numbers_and_gradients_on_cuda(name):
    pytest.importorskip("cupy")
    build, params, value = GPU_CASES[name]
    results = []
    for device in (None, ag.device("cuda:0")):
        leaves = [ag.tensor(np.asarray(p), dtype=ag.float64, device=device, requires_grad=True) for p in params]
        dist = build(*leaves)
        score = dist.log_prob(ag.tensor(np.asarray(value), dtype=ag.float64, device=device))
        if name in ("Gamma", "Wishart"):  # Gamma's cdf; Wishart's Bregman entropy and KL (autograd inside)
            given = ag.tensor(np.asarray(value), dtype=ag.float64, device=device)
            score = score + dist.cdf(given) if name == "Gamma" else score + D.kl_divergence(dist.expand((2,)), dist)
        ag.manual_seed(2)
        sample = dist.rsample((3,)) if dist.has_rsample else dist.sample((3,))
        total = score.sum() + (sample.sum() if dist.has_rsample else 0)
        grads = ag.autograd.grad(total, leaves[1:] if name == "Gamma" else leaves)  # cdf: not in concentration
        assert score.device == sample.device == grads[0].device == leaves[0].device
        results.append([t.detach().cpu().numpy() for t in (score, sample, *grads)])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
