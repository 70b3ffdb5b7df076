"""MultivariateNormal, StudentT, Chi2 and the counting distributions (Poisson, Geometric, Binomial, NegativeBinomial,
Multinomial) against closed forms written out here with numpy and math: log densities, entropies, moments, modes
and KL divergences; gradients by gradcheck (log densities, reparameterized samples, divergences); sample
statistics on fixed seeds; expand; and argument validation with PyTorch's error texts."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import distributions as D
from actorgrad.autograd import gradcheck
from actorgrad.distributions.gamma_gradients import standard_gamma_grad

EULER = 0.5772156649015329
LOG_2PI = math.log(2 * math.pi)
N = 20000  # draws for the sample statistics

# Two lower Cholesky factors, with off-diagonal entries large enough that L L^T and L^T L differ by far more than
# the sampling tolerances.
SCALE_TRIL = np.array([[[1.2, 0.0, 0.0], [0.9, 0.8, 0.0], [-0.7, 0.6, 1.5]],
                       [[0.7, 0.0, 0.0], [0.4, 1.1, 0.0], [0.8, -0.9, 0.6]]])
COVARIANCE = SCALE_TRIL @ SCALE_TRIL.transpose(0, 2, 1)
LOC = np.array([[0.3, -0.2, 1.0], [0.1, 0.5, -1.0]])


def f64(values, requires_grad: bool = False) -> ag.Tensor:
    return ag.tensor(np.asarray(values, dtype=np.float64), dtype=ag.float64, requires_grad=requires_grad)


def assert_close(got, expected, rtol: float = 1e-12, atol: float = 1e-12) -> None:
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), np.asarray(expected, dtype=float), rtol=rtol,
                               atol=atol)


def draws_of(dist, n: int = N, seed: int = 0) -> np.ndarray:
    ag.manual_seed(seed)
    return dist.sample((n,)).numpy()


# -- closed forms ----------------------------------------------------------------------------------------------------
def mvn_log_density(x, loc, cov):
    diff = np.asarray(x) - loc
    distance = np.einsum("...i,...ij,...j->...", diff, np.linalg.inv(cov), diff)
    return -0.5 * (loc.shape[-1] * LOG_2PI + np.linalg.slogdet(cov)[1] + distance)


def mvn_kl(loc_p, cov_p, loc_q, cov_q):
    inverse_q = np.linalg.inv(cov_q)
    diff = loc_q - loc_p
    trace = np.trace(inverse_q @ cov_p, axis1=-2, axis2=-1)
    distance = np.einsum("...i,...ij,...j->...", diff, inverse_q, diff)
    log_ratio = np.linalg.slogdet(cov_q)[1] - np.linalg.slogdet(cov_p)[1]
    return 0.5 * (trace + distance - loc_p.shape[-1] + log_ratio)


def digamma_at_half_integer(x: float) -> float:
    """psi(x) for x in 1/2, 1, 3/2, 2, ...: from psi(1/2) = -gamma - 2 log 2 or psi(1) = -gamma by
    psi(x + 1) = psi(x) + 1 / x."""
    base, value = (0.5, -EULER - 2 * math.log(2)) if (2 * x) % 2 == 1 else (1.0, -EULER)
    while base < x:
        value += 1 / base
        base += 1
    return value


def student_t_log_density(x: float, df: float, loc: float, scale: float) -> float:
    y = (x - loc) / scale
    return (math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi) - math.log(scale)
            - (df + 1) / 2 * math.log1p(y * y / df))


def student_t_entropy(df: float, scale: float) -> float:
    log_beta = math.lgamma(df / 2) + math.lgamma(0.5) - math.lgamma((df + 1) / 2)
    digammas = digamma_at_half_integer((df + 1) / 2) - digamma_at_half_integer(df / 2)
    return math.log(scale) + (df + 1) / 2 * digammas + 0.5 * math.log(df) + log_beta


def poisson_log_pmf(k: int, rate: float) -> float:
    return (k * math.log(rate) if k else 0.0) - rate - math.lgamma(k + 1)


def geometric_log_pmf(k: int, p: float) -> float:
    return (k * math.log1p(-p) if k else 0.0) + math.log(p)


def binomial_log_pmf(k: int, n: int, p: float) -> float:
    return math.log(math.comb(n, k)) + k * math.log(p) + (n - k) * math.log1p(-p)


def negative_binomial_log_pmf(k: int, r: float, p: float) -> float:
    """PyTorch's convention: k successes (probability p each) before the r-th failure."""
    return math.lgamma(k + r) - math.lgamma(k + 1) - math.lgamma(r) + k * math.log(p) + r * math.log1p(-p)


def multinomial_log_pmf(counts, probs) -> float:
    return (math.lgamma(sum(counts) + 1) - sum(math.lgamma(c + 1) for c in counts)
            + sum(c * math.log(p) for c, p in zip(counts, probs)))


def frequencies(draws: np.ndarray, values) -> np.ndarray:
    return np.stack([(draws == v).mean(0) for v in values])


# -- MultivariateNormal ----------------------------------------------------------------------------------------------
def mvn_from(parameterization: str, loc, covariance, **kwargs) -> D.MultivariateNormal:
    covariance = np.asarray(covariance)
    matrix = {"covariance_matrix": covariance, "precision_matrix": np.linalg.inv(covariance),
              "scale_tril": np.linalg.cholesky(covariance)}[parameterization]
    return D.MultivariateNormal(f64(loc), **{parameterization: f64(matrix)}, **kwargs)


PARAMETERIZATIONS = ["covariance_matrix", "precision_matrix", "scale_tril"]


@pytest.mark.parametrize("parameterization", PARAMETERIZATIONS)
def test_multivariate_normal_log_prob_and_entropy_equal_the_closed_forms(parameterization):
    dist = mvn_from(parameterization, LOC, COVARIANCE)
    value = np.array([[[0.5, 0.1, 0.2], [1.0, -0.3, 0.4]], [[-2.0, 1.0, 3.0], [0.0, 0.0, 0.0]]])
    assert dist.batch_shape == (2,) and dist.event_shape == (3,)
    assert_close(dist.log_prob(f64(value)), mvn_log_density(value, LOC, COVARIANCE))
    entropy = 0.5 * (3 * (1 + LOG_2PI) + np.linalg.slogdet(COVARIANCE)[1])
    assert_close(dist.entropy(), entropy)


@pytest.mark.parametrize("parameterization", PARAMETERIZATIONS)
def test_multivariate_normal_gives_every_matrix_and_the_moments(parameterization):
    dist = mvn_from(parameterization, LOC, COVARIANCE)
    assert_close(dist.covariance_matrix, COVARIANCE)
    assert_close(dist.precision_matrix, np.linalg.inv(COVARIANCE))
    assert_close(dist.scale_tril, SCALE_TRIL)
    assert_close(dist.mean, LOC)
    assert_close(dist.mode, LOC)
    assert_close(dist.variance, np.diagonal(COVARIANCE, axis1=-2, axis2=-1))
    assert_close(dist.stddev, np.sqrt(np.diagonal(COVARIANCE, axis1=-2, axis2=-1)))


def test_multivariate_normal_broadcasts_the_batch_dims_of_loc_and_the_matrix():
    dist = D.MultivariateNormal(f64(LOC[0]), f64(COVARIANCE))
    assert dist.batch_shape == (2,) and dist.loc.shape == (2, 3)
    assert_close(dist.log_prob(f64(LOC[1])), mvn_log_density(LOC[1], LOC[0], COVARIANCE))
    dist = D.MultivariateNormal(f64(np.zeros((4, 1, 3))), scale_tril=f64(SCALE_TRIL))
    assert dist.batch_shape == (4, 2) and dist.scale_tril.shape == (4, 2, 3, 3)
    assert dist.sample((5,)).shape == (5, 4, 2, 3)
    assert dist.entropy().shape == (4, 2) and dist.variance.shape == (4, 2, 3)


def test_multivariate_normal_samples_have_its_mean_and_covariance():
    """Six standard errors at most: the mean's is at most sqrt(3.4 / N), a covariance entry's at most
    sqrt(2 * 3.4**2 / N); the transposed factor (L^T L) would miss by more than 0.5."""
    dist = D.MultivariateNormal(f64(LOC), scale_tril=f64(SCALE_TRIL))
    draws = draws_of(dist)
    assert draws.shape == (N, 2, 3)
    np.testing.assert_allclose(draws.mean(0), LOC, atol=6 * math.sqrt(3.4 / N))
    centered = draws - draws.mean(0)
    covariance = np.einsum("nbi,nbj->bij", centered, centered) / N
    np.testing.assert_allclose(covariance, COVARIANCE, atol=6 * math.sqrt(2 * 3.4**2 / N))
    assert np.abs(SCALE_TRIL.transpose(0, 2, 1) @ SCALE_TRIL - COVARIANCE).max() > 0.5


def lower_factor_to_covariance(factor: ag.Tensor) -> ag.Tensor:
    """A positive-definite matrix from any square one, so that gradcheck can perturb every entry."""
    return ag.matmul(factor, factor.mT) + ag.eye(3, dtype=ag.float64)


@pytest.mark.parametrize("parameterization", PARAMETERIZATIONS)
def test_multivariate_normal_log_prob_and_entropy_pass_gradcheck(parameterization):
    value = f64([[0.5, 0.1, 0.2], [1.0, -0.3, 0.4]])

    def scores(loc, factor):
        if parameterization == "scale_tril":  # perturbed above the diagonal: no longer a valid factor
            dist = D.MultivariateNormal(loc, scale_tril=factor, validate_args=False)
        else:
            dist = D.MultivariateNormal(loc, **{parameterization: lower_factor_to_covariance(factor)})
        return dist.log_prob(value), dist.entropy()

    assert gradcheck(scores, [f64(LOC, True), f64(SCALE_TRIL, True)])


def test_multivariate_normal_scale_tril_gets_no_gradient_above_its_diagonal():
    scale_tril = f64(SCALE_TRIL, True)
    D.MultivariateNormal(f64(LOC), scale_tril=scale_tril).log_prob(f64(LOC[::-1].copy())).sum().backward()
    assert np.all(np.triu(scale_tril.grad.numpy(), 1) == 0)
    assert np.all(np.diagonal(scale_tril.grad.numpy(), axis1=-2, axis2=-1) != 0)


def test_multivariate_normal_rsample_is_loc_plus_scale_tril_times_noise_and_passes_gradcheck():
    ag.manual_seed(3)
    noise = ag.randn((4, 2, 3), dtype=ag.float64).numpy()
    ag.manual_seed(3)
    sample = D.MultivariateNormal(f64(LOC), f64(COVARIANCE)).rsample((4,))
    assert_close(sample, LOC + np.einsum("bij,nbj->nbi", SCALE_TRIL, noise))

    def rsample(loc, factor):
        ag.manual_seed(7)  # the same noise on every call
        return D.MultivariateNormal(loc, lower_factor_to_covariance(factor)).rsample((3,))

    assert gradcheck(rsample, [f64(LOC, True), f64(SCALE_TRIL, True)])


def test_multivariate_normal_kl_divergence_equals_the_closed_form_and_passes_gradcheck():
    other_loc, other_covariance = LOC[::-1] + 0.5, COVARIANCE[::-1] + np.eye(3)
    p = mvn_from("scale_tril", LOC, COVARIANCE)
    q = mvn_from("covariance_matrix", other_loc, other_covariance)
    assert_close(D.kl_divergence(p, q), mvn_kl(LOC, COVARIANCE, other_loc, other_covariance))
    assert_close(D.kl_divergence(p, p), [0.0, 0.0])
    single = mvn_from("precision_matrix", LOC[0], COVARIANCE[0])  # batch () against batch (2,)
    assert_close(D.kl_divergence(single, q), mvn_kl(LOC[0], COVARIANCE[0], other_loc, other_covariance))

    def kl(loc_p, factor_p, loc_q, factor_q):
        return D.kl_divergence(D.MultivariateNormal(loc_p, lower_factor_to_covariance(factor_p)),
                               D.MultivariateNormal(loc_q, scale_tril=factor_q, validate_args=False))

    other_tril = SCALE_TRIL[::-1].copy()
    assert gradcheck(kl, [f64(LOC, True), f64(SCALE_TRIL, True), f64(other_loc, True), f64(other_tril, True)])


def test_multivariate_normal_expand_broadcasts_the_batch():
    dist = mvn_from("covariance_matrix", LOC[0], COVARIANCE[0])
    wider = dist.expand((4, 2))
    assert type(wider) is D.MultivariateNormal and wider.batch_shape == (4, 2) and wider.event_shape == (3,)
    assert wider.covariance_matrix.shape == (4, 2, 3, 3) and wider.loc.shape == (4, 2, 3)
    assert_close(wider.log_prob(f64(LOC[1])), np.full((4, 2), mvn_log_density(LOC[1], LOC[0], COVARIANCE[0])))
    assert_close(wider.precision_matrix[3, 1], np.linalg.inv(COVARIANCE[0]))
    assert wider.sample((5,)).shape == (5, 4, 2, 3) and wider.rsample().shape == (4, 2, 3)


def test_multivariate_normal_refuses_bad_arguments_with_torchs_errors():
    with pytest.raises(ValueError, match=r"^loc must be at least one-dimensional\.$"):
        D.MultivariateNormal(ag.tensor(0.0), ag.eye(2))
    for given in ({}, {"covariance_matrix": ag.eye(2), "scale_tril": ag.eye(2)}):
        with pytest.raises(ValueError, match=r"^Exactly one of covariance_matrix or precision_matrix or scale_tril "
                                             r"may be specified\.$"):
            D.MultivariateNormal(ag.zeros(2), **given)
    for name, shown in [("covariance_matrix", "covariance_matrix"), ("precision_matrix", "precision_matrix"),
                        ("scale_tril", "scale_tril matrix")]:
        with pytest.raises(ValueError, match=rf"^{shown} must be at least two-dimensional, with optional leading "
                                             rf"batch dimensions$"):
            D.MultivariateNormal(ag.zeros(2), **{name: ag.ones(2)})
    with pytest.raises(ValueError, match=r"^Expected parameter covariance_matrix \(Tensor of shape \(2, 2\)\) of "
                                         r"distribution MultivariateNormal\(loc: \(2,\), covariance_matrix: "
                                         r"\(2, 2\)\) to satisfy the constraint PositiveDefinite\(\), but found "
                                         r"invalid values:\ntensor\(\[\[1\., 2\.\],\n        \[2\., 1\.\]\]\)$"):
        D.MultivariateNormal(ag.zeros(2), ag.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match=r"^Expected parameter covariance_matrix .* PositiveDefinite\(\)"):
        D.MultivariateNormal(ag.zeros(2), ag.tensor([[1.0, 0.5], [0.0, 1.0]]))  # not symmetric
    with pytest.raises(ValueError, match=r"^Expected parameter scale_tril .* LowerCholesky\(\)"):
        D.MultivariateNormal(ag.zeros(2), scale_tril=ag.tensor([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"^Expected parameter scale_tril .* LowerCholesky\(\)"):
        D.MultivariateNormal(ag.zeros(2), scale_tril=ag.tensor([[1.0, 0.0], [0.5, -1.0]]))
    with pytest.raises(ValueError, match=r"^Expected parameter precision_matrix .* PositiveDefinite\(\)"):
        D.MultivariateNormal(ag.zeros(2), precision_matrix=-ag.eye(2))
    with pytest.raises(ValueError, match=r"^covariance_matrix must be of shape \(\.\.\., 2, 2\) to match loc's last "
                                         r"dim 2, got \(3, 3\)$"):
        D.MultivariateNormal(ag.zeros(2), ag.eye(3))
    dist = D.MultivariateNormal(ag.zeros(2), ag.eye(2))
    with pytest.raises(ValueError, match=r"^The right-most size of value must match event_shape: \(3,\) vs \(2,\)\.$"):
        dist.log_prob(ag.zeros(3))
    with pytest.raises(ValueError, match=r"^Expected value argument .* within the support "
                                         r"\(IndependentConstraint\(Real\(\), 1\)\)"):
        dist.log_prob(ag.tensor([0.0, math.nan]))
    with pytest.raises(ValueError, match=r"^KL-divergence between two Multivariate Normals with different event "
                                         r"shapes cannot be computed$"):
        D.kl_divergence(dist, D.MultivariateNormal(ag.zeros(3), ag.eye(3)))


# -- StudentT and Chi2 -----------------------------------------------------------------------------------------------
T_PARAMS = ([1.0, 2.0, 3.0, 4.0], [0.3, -1.0, 2.0, 0.0], [0.7, 2.0, 1.0, 3.0])  # df, loc, scale


def test_student_t_log_prob_and_entropy_equal_the_closed_forms():
    dist = D.StudentT(*(f64(p) for p in T_PARAMS))
    values = [0.1, 0.4, -2.0, 5.0]
    expected = [student_t_log_density(x, *p) for x, *p in zip(values, *T_PARAMS)]
    assert_close(dist.log_prob(f64(values)), expected)
    assert_close(dist.entropy(), [student_t_entropy(df, s) for df, s in zip(T_PARAMS[0], T_PARAMS[2])])
    assert_close(D.StudentT(1.0, 0.0, 2.0).entropy(), math.log(4 * math.pi * 2.0), rtol=1e-6)  # Cauchy's


def test_student_t_mean_and_variance_are_nan_or_infinite_where_undefined_as_torchs():
    dist = D.StudentT(f64([0.5, 1.0, 1.5, 2.0, 3.0, 6.0]), f64([1.0] * 6), f64([2.0] * 6))
    assert_close(dist.mean, [math.nan, math.nan, 1.0, 1.0, 1.0, 1.0])
    assert_close(dist.variance, [math.nan, math.nan, math.inf, math.inf, 4.0 * 3.0, 4.0 * 6.0 / 4.0])
    assert_close(dist.mode, [1.0] * 6)
    df = f64([2.0, 3.0], requires_grad=True)
    D.StudentT(df, 0.0, 1.0).variance.sum().backward()  # the infinite entry leaves no NaN in the gradient
    assert_close(df.grad, [0.0, -2.0 / (3.0 - 2.0) ** 2])


def student_t_cdf(t: np.ndarray, df: int) -> np.ndarray:
    """The standard t CDF in closed form for 1 and 2 degrees of freedom."""
    return 0.5 + np.arctan(t) / math.pi if df == 1 else 0.5 + t / (2 * np.sqrt(2 + t * t))


def test_student_t_samples_follow_its_distribution():
    """The empirical CDF at a few points, within 0.02 (about six standard errors); a chi-squared draw of the wrong
    scale (sqrt 2 off) moves the df = 2 CDF at 1 by 0.05."""
    dist = D.StudentT(f64([1.0, 2.0]), f64([0.5, -1.0]), f64([2.0, 0.5]))
    draws = draws_of(dist)
    for i, (df, loc, scale) in enumerate([(1, 0.5, 2.0), (2, -1.0, 0.5)]):
        points = np.array([-3.0, -1.0, 0.0, 1.0, 3.0])
        empirical = (draws[:, i, None] <= loc + scale * points).mean(0)
        np.testing.assert_allclose(empirical, student_t_cdf(points, df), atol=0.02)


def test_student_t_rsample_scales_a_normal_draw_by_a_chi2_draw():
    df, loc, scale = f64([1.5, 4.0, 9.0], True), f64([0.3, -1.0, 2.0], True), f64([0.7, 2.0, 1.0], True)
    ag.manual_seed(5)
    sample = D.StudentT(df, loc, scale).rsample((4,))
    ag.manual_seed(5)  # PyTorch's order: the normal noise, then the chi-squared draw
    noise = ag.randn((4, 3), dtype=ag.float64).numpy()
    chi2 = D.Chi2(df.detach()).sample((4,)).numpy()
    d, m, s = (t.detach().numpy() for t in (df, loc, scale))
    assert_close(sample, m + s * noise * np.sqrt(d / chi2))
    sample.sum().backward()
    # d chi2 / d df through the gamma's implicit gradient: chi2 = 2 G, G ~ Gamma(df / 2, 1)
    d_chi2 = standard_gamma_grad(np, np.broadcast_to(d / 2, chi2.shape), chi2 / 2)
    d_ratio = 0.5 / np.sqrt(d * chi2) - 0.5 * np.sqrt(d) * chi2**-1.5 * d_chi2
    np.testing.assert_allclose(df.grad.numpy(), (s * noise * d_ratio).sum(0), rtol=1e-10)
    np.testing.assert_allclose(scale.grad.numpy(), (noise * np.sqrt(d / chi2)).sum(0), rtol=1e-12)
    np.testing.assert_allclose(loc.grad.numpy(), [4.0] * 3, rtol=1e-12)


def test_student_t_rsample_log_prob_and_entropy_pass_gradcheck():
    df = f64(T_PARAMS[0])

    def rsample(loc, scale):
        ag.manual_seed(7)
        return D.StudentT(df, loc, scale).rsample((3,))

    assert gradcheck(rsample, [f64(T_PARAMS[1], True), f64(T_PARAMS[2], True)])
    value = f64([0.1, 0.4, -2.0, 5.0])

    def scores(df, loc, scale):
        dist = D.StudentT(df, loc, scale)
        return dist.log_prob(value), dist.entropy()

    assert gradcheck(scores, [f64(p, True) for p in T_PARAMS], atol=1e-6)


def test_chi2_is_a_gamma_of_half_df_and_rate_one_half():
    dist = D.Chi2(f64([1.0, 3.0, 7.5]))
    assert isinstance(dist, D.Gamma) and dist.batch_shape == (3,)
    assert_close(dist.df, [1.0, 3.0, 7.5])
    assert_close(dist.concentration, [0.5, 1.5, 3.75])
    assert_close(dist.rate, [0.5, 0.5, 0.5])
    x = np.array([0.4, 2.0, 6.0])
    k = np.array([1.0, 3.0, 7.5])
    log_density = (k / 2 - 1) * np.log(x) - x / 2 - k / 2 * math.log(2) - np.array([math.lgamma(v / 2) for v in k])
    assert_close(dist.log_prob(f64(x)), log_density)
    assert_close(dist.mean, k)
    assert_close(dist.variance, 2 * k)
    draws = draws_of(dist)
    np.testing.assert_allclose(draws.mean(0), k, atol=6 * math.sqrt(15.0 / N))
    np.testing.assert_allclose(draws.var(0), 2 * k, rtol=0.1)
    wider = dist.expand((2, 3))
    assert type(wider) is D.Chi2 and wider.batch_shape == (2, 3)
    assert_close(wider.df, np.broadcast_to(k, (2, 3)))
    assert D.Chi2(4.0).batch_shape == () and repr(D.Chi2(4.0)) == "Chi2()"


def test_student_t_and_chi2_refuse_bad_parameters_with_torchs_errors():
    with pytest.raises(ValueError, match=r"^Expected parameter df \(Tensor of shape \(1,\)\) of distribution Chi2\(\) "
                                         r"to satisfy the constraint GreaterThan\(lower_bound=0\.0\), but found "
                                         r"invalid values:\ntensor\(\[-1\.\]\)$"):
        D.Chi2(ag.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"^Expected parameter df \(Tensor of shape \(\)\) of distribution Chi2\(\)"):
        D.StudentT(-1.0)
    with pytest.raises(ValueError, match=r"^Expected parameter scale \(Tensor of shape \(2,\)\) of distribution "
                                         r"StudentT\(df: \(2,\), loc: \(2,\), scale: \(2,\)\) to satisfy the "
                                         r"constraint GreaterThan\(lower_bound=0\.0\)"):
        D.StudentT(ag.ones(2), 0.0, ag.tensor([1.0, 0.0]))
    assert D.StudentT(-1.0, validate_args=False).df.item() == -1.0


def test_student_t_expand_and_shapes():
    dist = D.StudentT(f64([2.0, 5.0]), 0.0, 1.0)
    assert dist.batch_shape == (2,) and D.StudentT(3.0).batch_shape == ()
    wider = dist.expand((3, 2))
    assert type(wider) is D.StudentT and wider.batch_shape == (3, 2) and wider._chi2.batch_shape == (3, 2)
    assert wider.rsample((4,)).shape == (4, 3, 2)
    assert_close(wider.log_prob(f64([0.5, 0.5])), np.broadcast_to(dist.log_prob(f64([0.5, 0.5])).numpy(), (3, 2)))


# -- Poisson -----------------------------------------------------------------------------------------------------------
def test_poisson_log_prob_and_moments_equal_the_closed_forms():
    rates = [0.7, 2.5, 7.0]
    dist = D.Poisson(f64(rates))
    for k in (0, 1, 4, 12):
        assert_close(dist.log_prob(f64([k] * 3)), [poisson_log_pmf(k, r) for r in rates])
    assert_close(D.Poisson(f64([0.0])).log_prob(f64([0.0])), [0.0])  # no events at rate 0 is certain
    assert_close(D.Poisson(f64([0.0])).log_prob(f64([2.0])), [-math.inf])
    assert_close(dist.mean, rates)
    assert_close(dist.variance, rates)
    assert_close(dist.mode, [0.0, 2.0, 7.0])  # floor: round would give 1 for 0.7


def test_poisson_samples_follow_the_pmf():
    rates = [0.5, 4.0]
    draws = draws_of(D.Poisson(f64(rates)))
    assert np.all(draws == np.round(draws))
    expected = np.exp([[poisson_log_pmf(k, r) for r in rates] for k in range(10)])
    np.testing.assert_allclose(frequencies(draws, range(10)), expected, atol=0.02)


# -- Geometric ---------------------------------------------------------------------------------------------------------
def test_geometric_log_prob_entropy_and_moments_equal_the_closed_forms():
    probs = [0.2, 0.5, 0.9]
    for dist in (D.Geometric(f64(probs)), D.Geometric(logits=f64(np.log(probs) - np.log1p(-np.array(probs))))):
        for k in (0, 1, 5):
            assert_close(dist.log_prob(f64([k] * 3)), [geometric_log_pmf(k, p) for p in probs])
        entropy = [-sum(math.exp(geometric_log_pmf(k, p)) * geometric_log_pmf(k, p) for k in range(400))
                   for p in probs]
        assert_close(dist.entropy(), entropy)
        p = np.array(probs)
        assert_close(dist.mean, (1 - p) / p)
        assert_close(dist.variance, (1 - p) / p**2)
        assert_close(dist.mode, [0.0, 0.0, 0.0])
    certain = D.Geometric(f64([1.0, 1.0]))
    assert_close(certain.log_prob(f64([0.0, 1.0])), [0.0, -math.inf])


def test_geometric_counts_failures_before_the_first_success():
    probs = [0.3, 0.8]
    draws = draws_of(D.Geometric(f64(probs)))
    assert draws.min() == 0 and np.all(draws == np.round(draws))
    expected = np.exp([[geometric_log_pmf(k, p) for p in probs] for k in range(8)])
    np.testing.assert_allclose(frequencies(draws, range(8)), expected, atol=0.02)


def test_geometric_refuses_a_zero_probability_with_torchs_error():
    with pytest.raises(ValueError, match=r"^Expected parameter probs \(Tensor of shape \(2,\)\) of distribution "
                                         r"Geometric\(probs: \(2,\)\) to be positive but found invalid values:\n"
                                         r"tensor\(\[0\.\]\)$"):
        D.Geometric(ag.tensor([0.5, 0.0]))
    with pytest.raises(ValueError, match=r"^Expected parameter probs .* Interval\(lower_bound=0\.0, "
                                         r"upper_bound=1\.0\)"):
        D.Geometric(ag.tensor([1.5]))
    with pytest.raises(ValueError, match=r"^Either `probs` or `logits` must be specified, but not both\.$"):
        D.Geometric()
    with pytest.raises(ValueError, match=r"^Expected value argument .* \(IntegerGreaterThan\(lower_bound=0\)\) "
                                         r"of the distribution Geometric"):
        D.Geometric(ag.tensor([0.5])).log_prob(ag.tensor([1.5]))


# -- Binomial ----------------------------------------------------------------------------------------------------------
def test_binomial_log_prob_entropy_and_moments_equal_the_closed_forms():
    probs = np.array([0.2, 0.5, 0.9])
    for dist in (D.Binomial(5, f64(probs)), D.Binomial(f64([5.0] * 3), logits=f64(np.log(probs / (1 - probs))))):
        for k in (0, 2, 5):
            assert_close(dist.log_prob(f64([k] * 3)), [binomial_log_pmf(k, 5, p) for p in probs])
        entropy = [-sum(math.exp(binomial_log_pmf(k, 5, p)) * binomial_log_pmf(k, 5, p) for k in range(6))
                   for p in probs]
        assert_close(dist.entropy(), entropy)
        assert_close(dist.mean, 5 * probs)
        assert_close(dist.variance, 5 * probs * (1 - probs))
        assert_close(dist.mode, [1.0, 3.0, 5.0])
    assert_close(D.Binomial(3, f64([1.0])).mode, [3.0])  # floor((n + 1) p) clamped to n
    assert_close(D.Binomial(f64([0.0, 4.0]), f64([0.3, 0.3])).log_prob(f64([0.0, 4.0])), [0.0, 4 * math.log(0.3)])


def test_binomial_enumerates_its_support_and_samples_follow_the_pmf():
    dist = D.Binomial(4, f64([0.2, 0.7]))
    assert dist.enumerate_support().tolist() == [[float(k)] * 2 for k in range(5)]
    assert dist.enumerate_support(expand=False).shape == (5, 1)
    draws = draws_of(dist)
    expected = np.exp([[binomial_log_pmf(k, 4, p) for p in (0.2, 0.7)] for k in range(5)])
    np.testing.assert_allclose(frequencies(draws, range(5)), expected, atol=0.02)
    assert draws.dtype == np.float64


def test_binomial_refuses_bad_arguments_with_torchs_errors():
    with pytest.raises(ValueError, match=r"^Expected parameter total_count \(Tensor of shape \(1,\)\) of distribution "
                                         r"Binomial\(total_count: tensor\(\[2\.5000\]\), "
                                         r"probs: tensor\(\[0\.5000\]\)\) to satisfy the constraint "
                                         r"IntegerGreaterThan\(lower_bound=0\), but found invalid values:\n"
                                         r"tensor\(\[2\.5000\]\)$"):
        D.Binomial(ag.tensor([2.5]), ag.tensor([0.5]))
    with pytest.raises(ValueError, match=r"^Expected value argument \(Tensor of shape \(1,\)\) to be within the "
                                         r"support \(IntegerInterval\(lower_bound=0, "
                                         r"upper_bound=tensor\(\[3\.\]\)\)\)"):
        D.Binomial(3, ag.tensor([0.5])).log_prob(ag.tensor([4.0]))
    uneven = D.Binomial(ag.tensor([2.0, 3.0]), ag.tensor([0.5, 0.5]))
    with pytest.raises(NotImplementedError, match=r"^Inhomogeneous total count not supported by `entropy`\.$"):
        uneven.entropy()
    with pytest.raises(NotImplementedError, match=r"^Inhomogeneous total count not supported by "
                                                  r"`enumerate_support`\.$"):
        uneven.enumerate_support()
    with pytest.raises(ValueError, match=r"^Either `probs` or `logits` must be specified, but not both\.$"):
        D.Binomial(3, ag.tensor([0.5]), ag.tensor([0.0]))


# -- NegativeBinomial --------------------------------------------------------------------------------------------------
def test_negative_binomial_log_prob_and_moments_equal_the_closed_forms():
    counts, probs = np.array([2.0, 0.5, 3.5]), np.array([0.2, 0.5, 0.8])
    for dist in (D.NegativeBinomial(f64(counts), f64(probs)),
                 D.NegativeBinomial(f64(counts), logits=f64(np.log(probs / (1 - probs))))):
        for k in (0, 1, 6):
            assert_close(dist.log_prob(f64([k] * 3)), [negative_binomial_log_pmf(k, r, p)
                                                        for r, p in zip(counts, probs)])
        assert_close(dist.mean, counts * probs / (1 - probs))
        assert_close(dist.variance, counts * probs / (1 - probs) ** 2)
        assert_close(dist.mode, np.floor(np.maximum((counts - 1) * probs / (1 - probs), 0)))
    assert_close(D.NegativeBinomial(f64([0.0]), f64([0.4])).log_prob(f64([0.0])), [0.0])  # no trials: certain


def test_negative_binomial_samples_follow_the_pmf():
    counts, probs = [2.0, 0.5], [0.3, 0.6]
    draws = draws_of(D.NegativeBinomial(f64(counts), f64(probs)))
    expected = np.exp([[negative_binomial_log_pmf(k, r, p) for r, p in zip(counts, probs)] for k in range(8)])
    np.testing.assert_allclose(frequencies(draws, range(8)), expected, atol=0.02)
    assert np.all(draws_of(D.NegativeBinomial(f64([0.0]), f64([0.5])), 50) == 0)


def test_negative_binomial_refuses_bad_arguments_with_torchs_errors():
    with pytest.raises(ValueError, match=r"^Expected parameter probs \(Tensor of shape \(1,\)\) of distribution "
                                         r"NegativeBinomial\(total_count: tensor\(\[2\.\]\), "
                                         r"probs: tensor\(\[1\.\]\)\) to satisfy the constraint "
                                         r"HalfOpenInterval\(lower_bound=0\.0, upper_bound=1\.0\)"):
        D.NegativeBinomial(2, ag.tensor([1.0]))
    with pytest.raises(ValueError, match=r"^Expected parameter total_count .* GreaterThanEq\(lower_bound=0\)"):
        D.NegativeBinomial(-2.0, ag.tensor([0.5]))


# -- Multinomial -------------------------------------------------------------------------------------------------------
def compositions(n: int, k: int):
    return [c for c in itertools.product(range(n + 1), repeat=k) if sum(c) == n]


def test_multinomial_log_prob_entropy_and_moments_equal_the_closed_forms():
    probs = np.array([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    for dist in (D.Multinomial(3, f64(probs * 7)), D.Multinomial(3, logits=f64(np.log(probs) + 1.5))):
        assert dist.batch_shape == (2,) and dist.event_shape == (3,)
        outcomes = compositions(3, 3)
        log_prob = dist.log_prob(f64(np.array(outcomes)[:, None, :]))
        assert_close(log_prob, [[multinomial_log_pmf(c, p) for p in probs] for c in outcomes])
        entropy = [-sum(math.exp(multinomial_log_pmf(c, p)) * multinomial_log_pmf(c, p) for c in outcomes)
                   for p in probs]
        assert_close(dist.entropy(), entropy)
        assert_close(dist.mean, 3 * probs)
        assert_close(dist.variance, 3 * probs * (1 - probs))
    impossible = D.Multinomial(2, logits=f64([0.0, -math.inf]))
    assert_close(impossible.log_prob(f64([2.0, 0.0])), 0.0)
    assert_close(impossible.log_prob(f64([1.0, 1.0])), -math.inf)


def test_multinomial_samples_follow_the_pmf():
    probs = [0.2, 0.5, 0.3]
    draws = draws_of(D.Multinomial(4, f64(probs)))
    assert draws.shape == (N, 3) and np.all(draws.sum(-1) == 4)
    for outcome in compositions(4, 3):
        frequency = np.all(draws == outcome, -1).mean()
        assert abs(frequency - math.exp(multinomial_log_pmf(outcome, probs))) < 0.02


def test_multinomial_refuses_bad_arguments_with_torchs_errors():
    with pytest.raises(NotImplementedError, match=r"^inhomogeneous total_count is not supported$"):
        D.Multinomial(2.0, ag.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match=r"^Expected value argument \(Tensor of shape \(2,\)\) to be within the "
                                         r"support \(Multinomial\(\)\) of the distribution Multinomial\(\)"):
        D.Multinomial(3, ag.tensor([0.5, 0.5])).log_prob(ag.tensor([4.0, 0.0]))
    with pytest.raises(ValueError, match=r"^Expected parameter probs .* Simplex\(\)"):
        D.Multinomial(3, ag.tensor([0.5, -0.2]))


# -- shared: gradients, KL, expand, sampling -------------------------------------------------------------------------
# name -> (build from the parameters, parameters, a value in the support, whether entropy is defined)
COUNT_CASES = {
    "Poisson": (D.Poisson, [[0.5, 2.5]], [0.0, 3.0], False),
    "Geometric(probs)": (D.Geometric, [[0.3, 0.8]], [0.0, 3.0], True),
    "Geometric(logits)": (lambda logits: D.Geometric(logits=logits), [[-0.3, 1.2]], [0.0, 3.0], True),
    "Binomial(probs)": (lambda probs: D.Binomial(4, probs), [[0.3, 0.8]], [1.0, 4.0], True),
    "Binomial(logits)": (lambda logits: D.Binomial(4, logits=logits), [[-0.3, 0.0]], [1.0, 4.0], True),
    "NegativeBinomial": (D.NegativeBinomial, [[2.0, 0.5], [0.3, 0.6]], [0.0, 3.0], False),
    "Multinomial(probs)": (lambda probs: D.Multinomial(3, probs), [[[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]],
                           [[1.0, 2.0, 0.0], [0.0, 0.0, 3.0]], True),
    "Multinomial(logits)": (lambda logits: D.Multinomial(3, logits=logits), [[[0.2, -0.5, 0.3], [0.1, 0.1, 0.8]]],
                            [[1.0, 2.0, 0.0], [0.0, 0.0, 3.0]], True),
}


@pytest.mark.parametrize("name", list(COUNT_CASES))
def test_count_log_prob_and_entropy_pass_gradcheck(name):
    build, params, value, has_entropy = COUNT_CASES[name]
    fixed = f64(value)

    def scores(*leaves):
        dist = build(*leaves)
        return (dist.log_prob(fixed), dist.entropy()) if has_entropy else dist.log_prob(fixed)

    assert gradcheck(scores, [f64(p, True) for p in params])


KL_CASES = {
    "Poisson": (D.Poisson, [0.5, 2.5], [1.5, 0.3],
                lambda p, q: sum(math.exp(poisson_log_pmf(k, p)) * (poisson_log_pmf(k, p) - poisson_log_pmf(k, q))
                                 for k in range(100))),
    "Geometric": (D.Geometric, [0.3, 0.8], [0.6, 0.2],
                  lambda p, q: sum(math.exp(geometric_log_pmf(k, p))
                                   * (geometric_log_pmf(k, p) - geometric_log_pmf(k, q)) for k in range(400))),
    "Binomial": (lambda probs: D.Binomial(4, probs), [0.3, 0.8], [0.6, 0.2],
                 lambda p, q: sum(math.exp(binomial_log_pmf(k, 4, p))
                                  * (binomial_log_pmf(k, 4, p) - binomial_log_pmf(k, 4, q)) for k in range(5))),
}


@pytest.mark.parametrize("name", list(KL_CASES))
def test_count_kl_divergence_equals_the_sum_over_the_support_and_passes_gradcheck(name):
    build, p, q, series = KL_CASES[name]
    assert_close(D.kl_divergence(build(f64(p)), build(f64(q))), [series(a, b) for a, b in zip(p, q)])
    assert_close(D.kl_divergence(build(f64(p)), build(f64(p))), [0.0, 0.0], atol=1e-15)
    assert gradcheck(lambda a, b: D.kl_divergence(build(a), build(b)), [f64(p, True), f64(q, True)])


def test_binomial_kl_divergence_is_infinite_where_p_has_more_trials_and_refuses_fewer():
    p = D.Binomial(f64([4.0, 5.0]), f64([0.3, 0.3]))
    q = D.Binomial(f64([4.0, 4.0]), f64([0.2, 0.2]))
    kl = D.kl_divergence(p, q).numpy()
    assert kl[1] == math.inf and np.isfinite(kl[0])
    with pytest.raises(NotImplementedError, match=r"^KL between Binomials where q\.total_count > p\.total_count is "
                                                  r"not implemented$"):
        D.kl_divergence(q, p)


def sample_case(name: str):
    build, params, _, _ = COUNT_CASES[name]
    return build(*(f64(p) for p in params))


@pytest.mark.parametrize("name", list(COUNT_CASES))
@pytest.mark.parametrize("sample_shape", [(), (3,), (2, 4)])
def test_count_samples_have_sample_batch_and_event_shape(name, sample_shape):
    dist = sample_case(name)
    expected = sample_shape + dist.batch_shape + dist.event_shape
    sample = dist.sample(sample_shape)
    assert sample.shape == expected and sample.dtype == ag.float64 and not sample.requires_grad
    assert dist.log_prob(sample).shape == sample_shape + dist.batch_shape
    assert not dist.has_rsample


@pytest.mark.parametrize("name", list(COUNT_CASES))
def test_count_samples_repeat_under_manual_seed(name):
    dist = sample_case(name)
    first, again, other = draws_of(dist, 200, 3), draws_of(dist, 200, 3), draws_of(dist, 200, 4)
    assert np.array_equal(first, again) and not np.array_equal(first, other)


@pytest.mark.parametrize("name", list(COUNT_CASES))
def test_count_expand_broadcasts_the_batch(name):
    build, params, value, _ = COUNT_CASES[name]
    dist = build(*(f64(p) for p in params))
    wider = dist.expand((3,) + dist.batch_shape)
    assert type(wider) is type(dist) and wider.batch_shape == (3,) + dist.batch_shape
    assert wider.event_shape == dist.event_shape
    if name.startswith("Multinomial"):
        assert wider.probs.shape == wider.batch_shape + wider.event_shape
    else:
        parameters = [value for key, value in vars(wider).items() if key in wider.arg_constraints]
        assert len(parameters) >= 1 and all(p.shape == wider.batch_shape for p in parameters)
    expected = np.broadcast_to(dist.log_prob(f64(value)).numpy(), wider.batch_shape)
    assert_close(wider.log_prob(f64(value)), expected)
    assert_close(wider.mean, np.broadcast_to(dist.mean.detach().numpy(), wider.batch_shape + dist.event_shape))
    assert wider.sample((2,)).shape == (2,) + wider.batch_shape + dist.event_shape
    assert D.Poisson(f64([1.0]), validate_args=False).expand((2,))._validate_args is False


def test_new_constraints_check_as_torchs():
    C = D.constraints
    assert C.nonnegative_integer.check(ag.tensor([0.0, 2.0, -1.0, 1.5])).tolist() == [True, True, False, False]
    assert C.half_open_interval(0.0, 1.0).check(ag.tensor([0.0, 0.5, 1.0])).tolist() == [True, True, False]
    assert C.multinomial(3).check(ag.tensor([[1.0, 2.0], [2.0, 2.0], [-1.0, 1.0]])).tolist() == [True, False, False]
    matrices = ag.tensor([[[2.0, 0.5], [0.5, 1.0]], [[1.0, 2.0], [2.0, 1.0]]])
    assert C.positive_definite.check(matrices).tolist() == [True, False]
    assert C.lower_cholesky.check(ag.tensor([[[1.0, 0.0], [3.0, 2.0]], [[1.0, 0.0], [3.0, 0.0]]])).tolist() == [
        True, False]
    assert C.square.check(ag.ones(2, 3)).item() is False
    assert repr(C.positive_definite) == "PositiveDefinite()" and repr(C.nonnegative_integer) == (
        "IntegerGreaterThan(lower_bound=0)")
    assert C.positive_definite.event_dim == 2 and C.multinomial(2).is_discrete


# -- on cuda:0 (CuPy, or the stand-in in CI) --------------------------------------------------------------------------
GPU_CASES = {
    "MultivariateNormal": (lambda loc, cov: D.MultivariateNormal(loc, cov), [LOC, COVARIANCE], LOC[::-1].copy()),
    "MultivariateNormal(precision)": (lambda loc, p: D.MultivariateNormal(loc, precision_matrix=p),
                                      [LOC, np.linalg.inv(COVARIANCE)], LOC[::-1].copy()),
    "StudentT": (D.StudentT, list(T_PARAMS), [0.1, 0.4, -2.0, 5.0]),
    **{name: (build, params, value) for name, (build, params, value, _) in COUNT_CASES.items()},
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(GPU_CASES))
def test_new_distributions_give_the_same_numbers_and_gradients_on_cuda(name):
    pytest.importorskip("cupy")
    build, params, value = GPU_CASES[name]
    results = []
    for device in (None, ag.device("cuda:0")):
        leaves = [ag.tensor(np.asarray(p), dtype=ag.float64, device=device, requires_grad=True) for p in params]
        dist = build(*leaves)
        score = dist.log_prob(ag.tensor(np.asarray(value), dtype=ag.float64, device=device))
        if name.startswith(("MultivariateNormal", "StudentT", "Geometric", "Binomial", "Multinomial")):
            score = score + dist.entropy()
        ag.manual_seed(2)
        sample = dist.rsample((3,)) if dist.has_rsample else dist.sample((3,))
        grads = ag.autograd.grad((score.sum() + sample.sum()) if dist.has_rsample else score.sum(), leaves)
        assert score.device == sample.device == grads[0].device == leaves[0].device
        results.append([t.detach().cpu().numpy() for t in (score, sample, *grads)])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-10)
