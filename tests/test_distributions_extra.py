"""VonMises, FisherSnedecor, Kumaraswamy, ContinuousBernoulli, the relaxed Bernoulli and one-hot categorical,
LowRankMultivariateNormal and MixtureSameFamily: log densities, entropies, moments and KL divergences against closed
forms or numerical integration written out here with numpy and math; gradients by gradcheck (log densities,
reparameterized samples, divergences); sample statistics on fixed seeds (six standard errors); expand; and
argument validation with PyTorch's error texts."""

from __future__ import annotations

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import distributions as D
from actorgrad.autograd import gradcheck
from actorgrad.distributions.circular import log_bessel_i
from actorgrad.distributions.relaxed import ExpRelaxedCategorical, LogitRelaxedBernoulli

N = 20000  # draws for the sample statistics
LOG_2PI = math.log(2 * math.pi)
erf = np.vectorize(math.erf)


def f64(values, requires_grad: bool = False) -> ag.Tensor:
    return ag.tensor(np.asarray(values, dtype=np.float64), dtype=ag.float64, requires_grad=requires_grad)


def assert_close(got, expected, rtol: float = 1e-12, atol: float = 1e-13) -> None:
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), np.asarray(expected, dtype=float), rtol=rtol,
                               atol=atol)


def draws_of(dist, n: int = N, seed: int = 0) -> np.ndarray:
    ag.manual_seed(seed)
    return dist.sample((n,)).numpy()


def integrate(values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The trapezoid rule along the last axis."""
    return np.trapezoid(values, grid, axis=-1)


def assert_mean_within_six_standard_errors(draws: np.ndarray, expected) -> None:
    """The sample mean over axis 0 within six of its (estimated) standard errors of `expected`."""
    standard_error = draws.std(0) / math.sqrt(draws.shape[0])
    assert np.all(np.abs(draws.mean(0) - expected) <= 6 * standard_error), (draws.mean(0), expected, standard_error)


def assert_frequency_within_six_standard_errors(hits: np.ndarray, probability) -> None:
    """The frequency of `hits` (booleans, draws along axis 0) within six binomial standard errors."""
    probability = np.asarray(probability, dtype=float)
    standard_error = np.sqrt(probability * (1 - probability) / hits.shape[0])
    assert np.all(np.abs(hits.mean(0) - probability) <= 6 * standard_error), (hits.mean(0), probability)


def expected_error(text: str) -> str:
    return rf"^Expected parameter {text}.*, but found invalid values:\n"


# -- VonMises --------------------------------------------------------------------------------------------------------
ANGLE_GRID = np.linspace(-math.pi, math.pi, 4001)  # the trapezoid rule is exponentially accurate on a period


def log_bessel_by_quadrature(order: int, x: float) -> float:
    """log I_n(x) = x + log((1/pi) int_0^pi exp(x (cos t - 1)) cos(n t) dt)."""
    t = ANGLE_GRID[2000:]
    return x + math.log(integrate(np.exp(x * (np.cos(t) - 1)) * np.cos(order * t), t) / math.pi)


VM_LOC, VM_KAPPA = [0.5, -2.0, 3.0], [0.3, 8.0, 40.0]


def von_mises_log_normalizer(kappa: float) -> float:
    """log of the integral of exp(kappa cos t) over a period."""
    return kappa + math.log(integrate(np.exp(kappa * (np.cos(ANGLE_GRID) - 1)), ANGLE_GRID))


@pytest.mark.parametrize("order", [0, 1])
def test_log_bessel_i_equals_quadrature(order):
    x = [0.05, 0.3, 1.0, 3.7, 12.0, 19.9, 20.0, 20.1, 45.0, 150.0, 700.0, 1000.0]  # I0(1000) overflows
    expected = [log_bessel_by_quadrature(order, v) for v in x]
    assert_close(log_bessel_i(order, f64(x)), expected, rtol=2e-14)


def test_von_mises_log_prob_and_variance_equal_numerical_integration():
    dist = D.VonMises(f64(VM_LOC), f64(VM_KAPPA))
    values = np.array([[0.1, 2.0, -7.0], [math.pi, -math.pi, 10.0]])  # any real angle, read modulo 2 pi
    normalizers = np.array([von_mises_log_normalizer(k) for k in VM_KAPPA])
    assert_close(dist.log_prob(f64(values)), VM_KAPPA * np.cos(values - VM_LOC) - normalizers)
    densities = np.exp(np.multiply.outer(VM_KAPPA, np.cos(ANGLE_GRID)) - normalizers[:, None])
    assert_close(dist.variance, 1 - integrate(densities * np.cos(ANGLE_GRID), ANGLE_GRID))
    assert_close(dist.mean, VM_LOC)
    assert_close(dist.mode, VM_LOC)


def test_von_mises_samples_follow_the_density():
    """The mean resultant along loc is I1/I0 (1 - variance), across it 0; the mass within 0.5 of loc is the
    integral of the density; draws lie in [-pi, pi)."""
    loc, kappa = VM_LOC + [1.0], VM_KAPPA + [1e-6]  # 1e-6: the envelope's small-kappa branch
    dist = D.VonMises(f64(loc), f64(kappa))
    draws = draws_of(dist)
    assert draws.shape == (N, 4) and draws.min() >= -math.pi and draws.max() < math.pi
    offset = np.angle(np.exp(1j * (draws - loc)))
    assert_mean_within_six_standard_errors(np.cos(offset), 1 - dist.variance.numpy())
    assert_mean_within_six_standard_errors(np.sin(offset), 0.0)
    near = np.abs(ANGLE_GRID) <= 0.5
    grid = ANGLE_GRID[near]
    mass = [integrate(np.exp(k * np.cos(grid) - von_mises_log_normalizer(k)), grid) for k in kappa]
    assert_frequency_within_six_standard_errors(np.abs(offset) <= 0.5, mass)


def test_von_mises_samples_in_float32_and_refuses_rsample():
    dist = D.VonMises(ag.tensor([0.0, 1.0]), ag.tensor([2.0, 1e-4]))
    ag.manual_seed(1)
    draws = dist.sample((100,))
    assert draws.dtype == ag.float32 and draws.shape == (100, 2) and not dist.has_rsample


def test_von_mises_log_prob_and_variance_pass_gradcheck():
    values = f64([0.3, -2.0, 1.0, 4.0])

    def scores(loc, kappa):
        dist = D.VonMises(loc, kappa)
        return dist.log_prob(values), dist.variance

    assert gradcheck(scores, [f64([0.5, -1.0, 2.0, 0.1], True), f64([0.4, 19.0, 25.0, 3.0], True)])


def test_von_mises_expand_and_validation():
    dist = D.VonMises(f64([0.5, -1.0]), 2.0)
    wider = dist.expand((3, 2))
    assert type(wider) is D.VonMises and wider.batch_shape == (3, 2) and wider.concentration.shape == (3, 2)
    assert_close(wider.log_prob(f64(0.2)), np.broadcast_to(dist.log_prob(f64(0.2)).numpy(), (3, 2)))
    assert D.VonMises(0.0, 1.0).batch_shape == ()
    with pytest.raises(ValueError, match=expected_error(r"concentration \(Tensor of shape \(\)\) of distribution "
                                                        r"VonMises\(loc: 0\.0, concentration: -1\.0\) to satisfy "
                                                        r"the constraint GreaterThan\(lower_bound=0\.0\)")):
        D.VonMises(0.0, -1.0)
    with pytest.raises(ValueError, match=r"^Expected value argument \(Tensor of shape \(\)\) to be within the "
                                         r"support \(Real\(\)\) of the distribution VonMises"):
        D.VonMises(0.0, 1.0).log_prob(f64(math.nan))


# -- FisherSnedecor --------------------------------------------------------------------------------------------------
F_DF1, F_DF2 = [3.0, 5.0, 1.5], [10.0, 12.0, 6.0]


def f_log_density(x, d1, d2):
    """Through the beta variable b = d1 x / (d1 x + d2), Beta(d1/2, d2/2), with db/dx = d1 d2 / (d1 x + d2)^2."""
    log_b, log_1_minus_b = np.log(d1 * x) - np.log(d1 * x + d2), math.log(d2) - np.log(d1 * x + d2)
    a, c = d1 / 2, d2 / 2
    log_beta = (a - 1) * log_b + (c - 1) * log_1_minus_b - (math.lgamma(a) + math.lgamma(c) - math.lgamma(a + c))
    return log_beta + np.log(d1 * d2 / (d1 * x + d2) ** 2)


def test_fisher_snedecor_log_prob_and_moments_equal_the_beta_form_and_integration():
    dist = D.FisherSnedecor(f64(F_DF1), f64(F_DF2))
    x = np.array([0.2, 1.3, 4.0])
    assert_close(dist.log_prob(f64(x)), [f_log_density(v, a, b) for v, a, b in zip(x, F_DF1, F_DF2)])
    s = np.linspace(-40.0, 40.0, 400001)  # x = e^s: the tails x^(d1/2 - 1) at 0 and x^(-d2/2 - 1) at infinity
    grid = np.exp(s)
    for i, (a, b) in enumerate(zip(F_DF1, F_DF2)):
        weight = np.exp(f_log_density(grid, a, b)) * grid
        mean = integrate(weight * grid, s)
        np.testing.assert_allclose(integrate(weight, s), 1.0, rtol=1e-9)
        np.testing.assert_allclose(dist.mean.numpy()[i], mean, rtol=1e-9)
        np.testing.assert_allclose(dist.variance.numpy()[i], integrate(weight * grid**2, s) - mean**2, rtol=1e-8)
    assert_close(dist.mode[:2], [(a - 2) / a * b / (b + 2) for a, b in zip(F_DF1[:2], F_DF2[:2])])
    assert np.isnan(dist.mode.numpy()[2])


def test_fisher_snedecor_moments_are_nan_where_undefined_without_nan_gradients():
    df2 = f64([2.0, 4.0, 10.0], requires_grad=True)
    dist = D.FisherSnedecor(f64([3.0, 3.0, 3.0]), df2)
    assert np.isnan(dist.mean.detach().numpy()[0]) and np.isnan(dist.variance.detach().numpy()[:2]).all()
    (dist.mean[1:].sum() + dist.variance[2]).backward()
    def variance(b):
        return 2 * b * b * (3.0 + b - 2) / (3.0 * (b - 2) ** 2 * (b - 4))

    h = 1e-6  # the variance's derivative in df2 by a central difference
    expected = [0.0, -2 / (4.0 - 2) ** 2, -2 / (10.0 - 2) ** 2 + (variance(10.0 + h) - variance(10.0 - h)) / (2 * h)]
    np.testing.assert_allclose(df2.grad.numpy(), expected, rtol=1e-7, atol=1e-12)


def test_fisher_snedecor_samples_follow_the_distribution_and_carry_the_mean_gradient():
    """The sample mean, the mass below 1 (by integration) and, per draw, the gradient of the draw: its mean is the
    gradient of the mean df2 / (df2 - 2), that is 0 in df1 and -2 / (df2 - 2)^2 in df2."""
    df1, df2 = f64(np.full(N, 3.0), True), f64(np.full(N, 10.0), True)
    ag.manual_seed(0)
    draws = D.FisherSnedecor(df1, df2).rsample()
    draws.sum().backward()
    assert_mean_within_six_standard_errors(draws.detach().numpy(), 10.0 / 8.0)
    s = np.linspace(-40.0, 0.0, 100001)
    below_one = integrate(np.exp(f_log_density(np.exp(s), 3.0, 10.0) + s), s)
    assert_frequency_within_six_standard_errors(draws.detach().numpy() <= 1.0, below_one)
    assert_mean_within_six_standard_errors(df1.grad.numpy(), 0.0)
    assert_mean_within_six_standard_errors(df2.grad.numpy(), -2 / 8.0**2)


def test_fisher_snedecor_log_prob_passes_gradcheck_expand_and_validation():
    assert gradcheck(lambda a, b: D.FisherSnedecor(a, b).log_prob(f64([0.2, 1.3, 4.0])),
                     [f64(F_DF1, True), f64(F_DF2, True)])
    wider = D.FisherSnedecor(f64([3.0]), 10.0).expand((4, 2))
    assert wider.batch_shape == (4, 2) and wider.sample((5,)).shape == (5, 4, 2) and wider.rsample().shape == (4, 2)
    assert_close(wider.mean, np.full((4, 2), 1.25))
    with pytest.raises(ValueError, match=expected_error(r"concentration \(Tensor of shape \(\)\) of distribution "
                                                        r"Gamma\(concentration: -1\.0, rate: -2\.0\)")):
        D.FisherSnedecor(1.0, -2.0)  # PyTorch's: the inner Gamma of df2 refuses it first
    with pytest.raises(ValueError, match=r"^Expected value argument \(Tensor of shape \(\)\) to be within the "
                                         r"support \(GreaterThan\(lower_bound=0\.0\)\) of the distribution "
                                         r"FisherSnedecor\(df1: 1\.0, df2: 2\.0\)"):
        D.FisherSnedecor(1.0, 2.0).log_prob(f64(-1.0))


# -- Kumaraswamy -----------------------------------------------------------------------------------------------------
K_A, K_B = [0.6, 2.5, 1.5], [2.0, 3.0, 4.0]


def kumaraswamy_log_density(x, a, b):
    return math.log(a * b) + (a - 1) * np.log(x) + (b - 1) * np.log1p(-(x**a))


def test_kumaraswamy_log_prob_moments_and_entropy_equal_the_closed_form_and_integration():
    dist = D.Kumaraswamy(f64(K_A), f64(K_B))
    x = np.array([0.05, 0.5, 0.9])
    assert_close(dist.log_prob(f64(x)), [kumaraswamy_log_density(v, a, b) for v, a, b in zip(x, K_A, K_B)],
                 rtol=1e-11)
    s = np.linspace(-60.0, 0.0, 400001)  # x = e^s: the pole at 0 for a < 1 (b integer: none at 1)
    grid = np.exp(s)
    for i, (a, b) in enumerate(zip(K_A, K_B)):
        with np.errstate(divide="ignore"):
            log_density = kumaraswamy_log_density(grid, a, b)
        weight = np.exp(log_density) * grid
        log_density[-1] = 0.0  # the density is 0 at x = 1, and so is its term in the entropy
        mean = integrate(weight * grid, s)
        np.testing.assert_allclose(integrate(weight, s), 1.0, rtol=1e-8)
        np.testing.assert_allclose(dist.mean.numpy()[i], mean, rtol=1e-8)
        np.testing.assert_allclose(dist.variance.numpy()[i], integrate(weight * grid**2, s) - mean**2, rtol=1e-8,
                                   atol=1e-9)
        np.testing.assert_allclose(dist.entropy().numpy()[i], -integrate(weight * log_density, s), rtol=1e-7)


def test_kumaraswamy_mode_is_the_peak_of_the_density_or_nan():
    grid = np.linspace(1e-6, 1 - 1e-6, 1000001)
    mode = D.Kumaraswamy(f64(K_A), f64(K_B)).mode.numpy()
    assert np.isnan(mode[0])  # a < 1: the density has a pole at 0
    # where ((a - 1) / (ab - 1))^(1/a) is a number, but a < 1 or b < 1 (a pole at 0 or at 1)
    assert np.isnan(D.Kumaraswamy(f64([0.5, 3.0]), f64([3.0, 0.5])).mode.numpy()).all()
    for i in (1, 2):
        peak = grid[np.argmax(kumaraswamy_log_density(grid, K_A[i], K_B[i]))]
        np.testing.assert_allclose(mode[i], peak, atol=2e-6)


def test_kumaraswamy_samples_follow_the_cdf():
    dist = D.Kumaraswamy(f64(K_A), f64(K_B))
    draws = draws_of(dist)
    assert draws.min() >= 0 and draws.max() <= 1
    assert_mean_within_six_standard_errors(draws, dist.mean.numpy())
    for x in (0.2, 0.5, 0.8):
        assert_frequency_within_six_standard_errors(draws <= x, 1 - (1 - x ** np.array(K_A)) ** np.array(K_B))


def test_kumaraswamy_rsample_log_prob_and_entropy_pass_gradcheck():
    def rsample(a, b):
        ag.manual_seed(7)  # the same noise on every call
        return D.Kumaraswamy(a, b).rsample((3,))

    def scores(a, b):
        dist = D.Kumaraswamy(a, b)
        return dist.log_prob(f64([0.05, 0.5, 0.9])), dist.entropy(), dist.mean, dist.variance

    for fn in (rsample, scores):
        assert gradcheck(fn, [f64(K_A, True), f64(K_B, True)])


def test_kumaraswamy_expand_and_validation():
    dist = D.Kumaraswamy(f64([2.0, 0.5]), 3.0)
    wider = dist.expand((3, 2))
    assert type(wider) is D.Kumaraswamy and wider.batch_shape == (3, 2) and wider.concentration1.shape == (3, 2)
    assert_close(wider.log_prob(f64(0.3)), np.broadcast_to(dist.log_prob(f64(0.3)).numpy(), (3, 2)))
    assert_close(wider.entropy(), np.broadcast_to(dist.entropy().numpy(), (3, 2)))
    assert wider.rsample((4,)).shape == (4, 3, 2)
    with pytest.raises(ValueError, match=expected_error(r"concentration1 \(Tensor of shape \(\)\) of distribution "
                                                        r"Kumaraswamy\(concentration1: -1\.0, concentration0: 2\.0\) "
                                                        r"to satisfy the constraint GreaterThan\(lower_bound=0\.0\)")):
        D.Kumaraswamy(-1.0, 2.0)
    with pytest.raises(ValueError, match=r"^Expected value argument \(Tensor of shape \(\)\) to be within the "
                                         r"support \(Interval\(lower_bound=0\.0, upper_bound=1\.0\)\) of the "
                                         r"distribution Kumaraswamy"):
        D.Kumaraswamy(1.0, 2.0).log_prob(f64(1.5))


# -- ContinuousBernoulli ---------------------------------------------------------------------------------------------
CB_PROBS = [0.1, 0.3, 0.4995, 0.5, 0.5008, 0.9]  # 0.4995, 0.5 and 0.5008 in the Taylor window (0.499, 0.501]
UNIT_GRID = np.linspace(0.0, 1.0, 200001)


def cb_log_density(x, lam: float):
    """log C(l) + x log l + (1 - x) log(1 - l), C(l) = 2 artanh(1 - 2l) / (1 - 2l) (2 at l = 1/2)."""
    t = 1 - 2 * lam
    log_c = math.log(2.0) if t == 0 else math.log(2 * math.atanh(t) / t)
    return log_c + x * math.log(lam) + (1 - x) * math.log1p(-lam)


def cb_log_densities(x: np.ndarray, lams) -> np.ndarray:
    """The log densities at x (..., one per lam) of each lam."""
    return np.stack([cb_log_density(x[..., i], lam) for i, lam in enumerate(lams)], -1)


@pytest.mark.parametrize("parameter", ["probs", "logits"])
def test_continuous_bernoulli_log_prob_equals_the_closed_form(parameter):
    lam = np.array(CB_PROBS)
    given = lam if parameter == "probs" else np.log(lam / (1 - lam))
    dist = D.ContinuousBernoulli(**{parameter: f64(given)})
    x = np.array([[0.2, 0.5, 0.0, 0.9, 1.0, 0.7], [1.0, 0.0, 0.3, 0.5, 0.25, 0.1]])
    assert_close(dist.log_prob(f64(x)), cb_log_densities(x, lam), rtol=1e-10)


def test_continuous_bernoulli_moments_entropy_and_cdf_equal_numerical_integration():
    """On the grid x = 0, 5e-6, ..., 1 the trapezoid rule is within about 1e-11 of these smooth integrals."""
    dist = D.ContinuousBernoulli(f64(CB_PROBS))
    grid = UNIT_GRID
    log_densities = np.stack([cb_log_density(grid, lam) for lam in CB_PROBS])
    densities = np.exp(log_densities)
    np.testing.assert_allclose(integrate(densities, grid), 1.0, rtol=1e-10)
    mean = integrate(densities * grid, grid)
    assert_close(dist.mean, mean, rtol=1e-10)
    assert_close(dist.variance, integrate(densities * (grid - mean[:, None]) ** 2, grid), rtol=1e-9)
    assert_close(dist.entropy(), -integrate(densities * log_densities, grid), rtol=1e-9, atol=1e-11)
    x = np.array([0.1, 0.35, 0.5, 0.72, 0.95])
    for lam, cdf in zip(CB_PROBS, dist.cdf(f64(x[:, None])).mT.numpy()):
        expected = [integrate(np.exp(cb_log_density(g, lam)), g) for g in (np.linspace(0, v, 20001) for v in x)]
        inside = 0.499 < lam <= 0.501  # the window, where PyTorch's CDF is the uniform's (off by up to 4e-4)
        np.testing.assert_allclose(cdf, x if inside else expected, rtol=1e-8)
        np.testing.assert_allclose(cdf, expected, atol=5e-4)
    assert_close(dist.icdf(dist.cdf(f64(x[:, None]))), np.broadcast_to(x[:, None], (5, 6)), rtol=1e-10)
    assert_close(dist.cdf(f64([[0.0], [1.0]])), [[0.0] * 6, [1.0] * 6])


def test_continuous_bernoulli_taylor_expansions_hold_to_their_next_order_in_a_wide_window():
    """With the window (0.4, 0.6], l = 0.45 and 0.55 (x = (l - 1/2)^2 = 0.0025) take the expansions, whose first
    omitted terms are about 1e-7 (log C), 2e-7 (mean) and 5e-9 (variance); a wrong coefficient of their last terms
    (1.4e-5, 4.4e-5 and 8.5e-7 here) would show."""
    lam = [0.45, 0.55]
    dist = D.ContinuousBernoulli(f64(lam), lims=(0.4, 0.6))
    grid = UNIT_GRID
    log_densities = np.stack([cb_log_density(grid, v) for v in lam])
    densities = np.exp(log_densities)
    x = [0.3, 0.8]
    np.testing.assert_allclose(dist.log_prob(f64(x)).numpy(), [cb_log_density(v, p) for v, p in zip(x, lam)],
                               atol=2e-7)
    mean = integrate(densities * grid, grid)
    np.testing.assert_allclose(dist.mean.numpy(), mean, atol=5e-7)
    np.testing.assert_allclose(dist.variance.numpy(), integrate(densities * (grid - mean[:, None]) ** 2, grid),
                               atol=2e-8)
    np.testing.assert_allclose(dist.entropy().numpy(), -integrate(densities * log_densities, grid), atol=3e-7)
    d = np.array(lam) - 0.5  # the window is the one given: the mean is the expansion's, not the exact form's
    assert_close(dist.mean, 0.5 + d / 3 + 16 / 45 * d**3)


def test_continuous_bernoulli_samples_follow_the_cdf():
    dist = D.ContinuousBernoulli(f64(CB_PROBS))
    draws = draws_of(dist)
    assert draws.min() >= 0 and draws.max() <= 1
    assert_mean_within_six_standard_errors(draws, dist.mean.numpy())
    for x in (0.25, 0.6):
        assert_frequency_within_six_standard_errors(draws <= x, dist.cdf(f64(x)).numpy())


@pytest.mark.parametrize("parameter", ["probs", "logits"])
def test_continuous_bernoulli_rsample_log_prob_and_moments_pass_gradcheck(parameter):
    lam = np.array([0.1, 0.4995, 0.7, 0.52])
    given = lam if parameter == "probs" else np.log(lam / (1 - lam))

    def scores(param):
        dist = D.ContinuousBernoulli(**{parameter: param})
        return (dist.log_prob(f64([0.2, 0.5, 0.9, 0.0])), dist.entropy(), dist.mean, dist.variance,
                dist.cdf(f64([0.3, 0.6, 0.1, 0.8])))

    def rsample(param):
        ag.manual_seed(7)
        return D.ContinuousBernoulli(**{parameter: param}).rsample((3,))

    for fn in (scores, rsample):
        assert gradcheck(fn, [f64(given, True)])


def test_continuous_bernoulli_clamps_probs_keeps_lims_on_expand_and_validates_as_torchs():
    eps = float(np.finfo(np.float64).eps)
    assert_close(D.ContinuousBernoulli(f64([1.5, 0.0])).probs, [1 - eps, eps])  # silently, as PyTorch's
    extreme = D.ContinuousBernoulli(logits=f64([50.0, -50.0]))  # probs from the logits are clamped too
    assert_close(extreme.probs, [1 - eps, eps])
    assert np.isfinite([extreme.log_prob(f64(0.5)).numpy(), extreme.entropy().numpy(), extreme.mean.numpy()]).all()
    with pytest.raises(ValueError, match=r"^The parameter probs has invalid values$"):
        D.ContinuousBernoulli(f64([0.5, 1.5]), validate_args=True)
    for given in ({}, {"probs": 0.5, "logits": 0.0}):
        with pytest.raises(ValueError, match=r"^Either `probs` or `logits` must be specified, but not both\.$"):
            D.ContinuousBernoulli(**given)
    with pytest.raises(ValueError, match=r"^Expected value argument \(Tensor of shape \(1,\)\) to be within the "
                                         r"support \(Interval\(lower_bound=0\.0, upper_bound=1\.0\)\) of the "
                                         r"distribution ContinuousBernoulli"):
        D.ContinuousBernoulli(f64([0.5])).log_prob(f64([1.5]))
    dist = D.ContinuousBernoulli(f64([0.3, 0.45]), lims=(0.4, 0.6))
    wider = dist.expand((3, 2))
    assert type(wider) is D.ContinuousBernoulli and wider.batch_shape == (3, 2) and wider._lims == (0.4, 0.6)
    assert_close(wider.mean, np.broadcast_to(dist.mean.numpy(), (3, 2)))


# -- KL divergences involving ContinuousBernoulli --------------------------------------------------------------------
def test_continuous_bernoulli_kl_divergences_equal_numerical_integration():
    lam_p, lam_q = np.array([0.2, 0.4995, 0.9]), np.array([0.6, 0.3, 0.5001])
    cb_p, cb_q = D.ContinuousBernoulli(f64(lam_p)), D.ContinuousBernoulli(f64(lam_q))
    grid = UNIT_GRID
    log_p = np.stack([cb_log_density(grid, lam) for lam in lam_p])
    log_q = np.stack([cb_log_density(grid, lam) for lam in lam_q])

    def kl(lp, lq):
        return integrate(np.exp(lp) * (lp - lq), grid)

    assert_close(D.kl_divergence(cb_p, cb_q), kl(log_p, log_q), rtol=1e-8, atol=1e-10)
    a, b = np.array([2.0, 3.0, 2.5]), np.array([3.0, 2.0, 4.0])  # smooth enough for the trapezoid rule
    inner = grid[1:-1]  # the beta's log density is -inf at an end where its concentration exceeds 1
    log_beta = ((a[:, None] - 1) * np.log(inner) + (b[:, None] - 1) * np.log1p(-inner)
                + np.vectorize(math.lgamma)(a + b)[:, None] - np.vectorize(math.lgamma)(a)[:, None]
                - np.vectorize(math.lgamma)(b)[:, None])
    assert_close(D.kl_divergence(D.Beta(f64(a), f64(b)), cb_q),
                 integrate(np.exp(log_beta) * (log_beta - log_q[:, 1:-1]), inner), rtol=1e-7)
    rate = np.array([0.5, 2.0, 1.0])
    assert_close(D.kl_divergence(cb_p, D.Exponential(f64(rate))),
                 kl(log_p, np.log(rate)[:, None] - rate[:, None] * grid), rtol=1e-8)
    loc, scale = np.array([0.3, -1.0, 2.0]), np.array([0.5, 2.0, 1.0])
    log_normal = -0.5 * ((grid - loc[:, None]) / scale[:, None]) ** 2 - np.log(scale)[:, None] - 0.5 * LOG_2PI
    assert_close(D.kl_divergence(cb_p, D.Normal(f64(loc), f64(scale))), kl(log_p, log_normal), rtol=1e-8)
    low, high = np.array([-1.0, 0.0, 0.1]), np.array([1.5, 1.0, 2.0])
    kl_uniform = D.kl_divergence(cb_p, D.Uniform(f64(low), f64(high))).numpy()
    np.testing.assert_allclose(kl_uniform[:2], kl(log_p[:2], -np.log(high - low)[:2, None]), rtol=1e-8)
    assert kl_uniform[2] == math.inf  # q misses [0, 0.1)
    u_low, u_high = np.array([0.1, 0.0, -0.1]), np.array([0.5, 1.0, 0.5])
    kl_from_uniform = D.kl_divergence(D.Uniform(f64(u_low), f64(u_high)), cb_q).numpy()
    for i in range(2):
        inside = (grid >= u_low[i]) & (grid <= u_high[i])
        log_u = -math.log(u_high[i] - u_low[i])
        np.testing.assert_allclose(kl_from_uniform[i], integrate(np.exp(log_u) * (log_u - log_q[i, inside]),
                                                                 grid[inside]), rtol=1e-6)
    assert kl_from_uniform[2] == math.inf  # p reaches below 0


def test_continuous_bernoulli_kl_is_infinite_against_wider_supports_and_passes_gradcheck():
    cb = D.ContinuousBernoulli(f64([0.2, 0.7]))
    for p, q in [(cb, D.Pareto(f64([1.0, 2.0]), 1.0)), (D.Exponential(f64([1.0, 2.0])), cb),
                 (D.Gamma(f64([1.0, 2.0]), 1.0), cb), (D.Gumbel(f64([1.0, 2.0]), 1.0), cb),
                 (D.Laplace(f64([1.0, 2.0]), 1.0), cb), (D.Normal(f64([1.0, 2.0]), 1.0), cb),
                 (D.Pareto(f64([1.0, 2.0]), 3.0), cb)]:
        assert D.kl_divergence(p, q).numpy().tolist() == [math.inf, math.inf]
    assert gradcheck(lambda a, b: D.kl_divergence(D.ContinuousBernoulli(a), D.ContinuousBernoulli(logits=b)),
                     [f64([0.2, 0.4995, 0.9], True), f64([0.3, -1.0, 2.0], True)])


# -- RelaxedBernoulli, RelaxedOneHotCategorical ----------------------------------------------------------------------
def logistic_log_density(y, logits, temperature):
    """(logits + logit(U)) / t is logistic of location logits / t and scale 1 / t."""
    z = logits - temperature * y
    return math.log(temperature) + z - 2 * np.logaddexp(0.0, z)


def test_logit_relaxed_bernoulli_log_prob_is_the_logistic_density_and_stays_finite():
    logits = np.array([-1.0, 0.3, 2.0])
    dist = LogitRelaxedBernoulli(f64(0.7), logits=f64(logits))
    y = np.array([[0.5, -3.0, 1.0], [-2000.0, 0.0, 2000.0]])  # |logits - t y| of 1400: exp would overflow
    got = dist.log_prob(f64(y))
    assert_close(got, logistic_log_density(y, logits, 0.7))
    assert np.isfinite(got.numpy()).all()


def test_relaxed_bernoulli_log_prob_is_the_change_of_variables_and_integrates_to_one():
    probs, temperature = np.array([0.1, 0.5, 0.8]), 0.7
    logits = np.log(probs / (1 - probs))
    dist = D.RelaxedBernoulli(f64(temperature), probs=f64(probs))
    v = np.array([0.2, 0.6, 0.99])
    x = np.log(v / (1 - v))
    assert_close(dist.log_prob(f64(v)), logistic_log_density(x, logits, temperature) - np.log(v * (1 - v)),
                 rtol=1e-10)
    x_grid = np.linspace(-40.0, 40.0, 80001)  # y = sigmoid(x): dy = y (1 - y) dx
    y_grid = 1 / (1 + np.exp(-x_grid))
    density = np.exp(dist.log_prob(f64(y_grid[:, None])).numpy()) * (y_grid * (1 - y_grid))[:, None]
    np.testing.assert_allclose(integrate(density.T, x_grid), 1.0, rtol=1e-7)


def test_relaxed_bernoulli_rsample_is_the_sigmoid_of_shifted_logistic_noise():
    probs, temperature = f64([0.1, 0.5, 0.8]), f64([0.5, 1.0, 2.0])
    ag.manual_seed(3)
    u = ag.rand((4, 3), dtype=ag.float64).numpy()
    ag.manual_seed(3)
    sample = D.RelaxedBernoulli(temperature, probs=probs).rsample((4,))
    p, t = probs.numpy(), temperature.numpy()
    assert_close(sample, 1 / (1 + np.exp(-(np.log(u / (1 - u)) + np.log(p / (1 - p))) / t)), rtol=1e-10)


def test_relaxed_samples_keep_the_discrete_probabilities():
    """Above 1/2 with probability probs whatever the temperature; the argmax of a relaxed one-hot draw is
    categorical with probs (the Gumbel-max property)."""
    probs = np.array([0.1, 0.5, 0.8])
    for temperature in (0.3, 3.0):
        draws = draws_of(D.RelaxedBernoulli(f64(temperature), probs=f64(probs)))
        assert draws.min() > 0 and draws.max() < 1
        assert_frequency_within_six_standard_errors(draws > 0.5, probs)
    simplex_probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    draws = draws_of(D.RelaxedOneHotCategorical(f64(0.5), probs=f64(simplex_probs)))
    assert draws.shape == (N, 2, 3) and draws.min() > 0
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-12)
    winners = draws.argmax(-1)
    for k in range(3):
        assert_frequency_within_six_standard_errors(winners == k, simplex_probs[:, k])


def concrete_log_density(x, probs, temperature):
    """Maddison et al.'s Concrete density: (K - 1)! t^(K - 1) prod(p_i x_i^(-t - 1)) / (sum p_i x_i^-t)^K."""
    k = x.shape[-1]
    return (math.lgamma(k) + (k - 1) * math.log(temperature) + (np.log(probs) - (temperature + 1) * np.log(x)).sum(-1)
            - k * np.log((probs * x**-temperature).sum(-1)))


def test_relaxed_one_hot_log_prob_is_the_concrete_density():
    probs, temperature = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]), 0.7
    x = np.array([[0.1, 0.2, 0.7], [0.5, 0.45, 0.05]])
    dist = D.RelaxedOneHotCategorical(f64(temperature), logits=f64(np.log(probs) + 1.5))  # unnormalized logits
    assert_close(dist.log_prob(f64(x)), concrete_log_density(x, probs, temperature), rtol=1e-10)
    base = ExpRelaxedCategorical(f64(temperature), probs=f64(probs))
    assert_close(base.log_prob(f64(np.log(x))), concrete_log_density(x, probs, temperature) + np.log(x).sum(-1),
                 rtol=1e-10)


def test_exp_relaxed_categorical_rsample_is_a_log_softmax_of_gumbel_perturbed_logits():
    logits = np.array([[0.1, -0.5, 1.0], [2.0, 0.0, -1.0]])
    ag.manual_seed(3)
    u = ag.rand((4, 2, 3), dtype=ag.float64).numpy()
    ag.manual_seed(3)
    sample = ExpRelaxedCategorical(f64(0.5), logits=f64(logits)).rsample((4,))
    scores = (logits - np.log(np.exp(logits).sum(-1, keepdims=True)) - np.log(-np.log(u))) / 0.5
    expected = scores - np.log(np.exp(scores).sum(-1, keepdims=True))
    assert_close(sample, expected, rtol=1e-10)


def test_relaxed_rsample_and_log_prob_pass_gradcheck():
    def bernoulli(logits, temperature):
        ag.manual_seed(7)
        dist = D.RelaxedBernoulli(temperature, logits=logits)
        return dist.rsample((3,)), dist.log_prob(f64([0.2, 0.6, 0.99]))

    def one_hot(logits, temperature):
        ag.manual_seed(7)
        dist = D.RelaxedOneHotCategorical(temperature, logits=logits)
        return dist.rsample((3,)), dist.log_prob(f64([[0.1, 0.2, 0.7], [0.5, 0.45, 0.05]]))

    assert gradcheck(bernoulli, [f64([-1.0, 0.3, 2.0], True), f64(0.7, True)])
    assert gradcheck(one_hot, [f64([[0.1, -0.5, 1.0], [2.0, 0.0, -1.0]], True), f64(0.7, True)])


def test_relaxed_expand_shapes_and_validation():
    dist = D.RelaxedBernoulli(f64(0.5), probs=f64([0.2, 0.7]))
    wider = dist.expand((3, 2))
    assert type(wider) is D.RelaxedBernoulli and wider.batch_shape == (3, 2) and wider.probs.shape == (3, 2)
    assert_close(wider.log_prob(f64(0.4)), np.broadcast_to(dist.log_prob(f64(0.4)).numpy(), (3, 2)))
    assert D.RelaxedBernoulli(0.5, probs=0.3).batch_shape == () and D.RelaxedBernoulli(0.5, 0.3).sample().shape == ()
    one_hot = D.RelaxedOneHotCategorical(f64(0.5), probs=f64([0.2, 0.3, 0.5]))
    wider = one_hot.expand((4,))
    assert wider.batch_shape == (4,) and wider.event_shape == (3,) and wider.rsample((2,)).shape == (2, 4, 3)
    assert_close(wider.log_prob(f64([0.1, 0.2, 0.7])), np.full(4, one_hot.log_prob(f64([0.1, 0.2, 0.7])).item()))
    with pytest.raises(ValueError, match=expected_error(r"probs \(Tensor of shape \(\)\) of distribution "
                                                        r"LogitRelaxedBernoulli\(probs: 1\.5\) to satisfy the "
                                                        r"constraint Interval\(lower_bound=0\.0, upper_bound=1\.0\)")):
        D.RelaxedBernoulli(f64(0.5), probs=1.5)
    for make in (lambda: D.RelaxedBernoulli(f64(0.5)), lambda: D.RelaxedOneHotCategorical(f64(0.5))):
        with pytest.raises(ValueError, match=r"^Either `probs` or `logits` must be specified, but not both\.$"):
            make()
    with pytest.raises(ValueError, match=expected_error(r"probs \(Tensor of shape \(3,\)\) of distribution "
                                                        r"Categorical\(probs: \(3,\)\) to satisfy the constraint "
                                                        r"Simplex\(\)")):
        D.RelaxedOneHotCategorical(f64(0.5), probs=f64([0.5, -0.5, 1.0]))
    with pytest.raises(ValueError, match=r"^Expected value argument \(Tensor of shape \(2,\)\) to be within the "
                                         r"support \(Simplex\(\)\) of the distribution RelaxedOneHotCategorical\(\)"):
        D.RelaxedOneHotCategorical(f64(0.5), probs=f64([0.5, 0.5])).log_prob(f64([0.7, 0.7]))


# -- LowRankMultivariateNormal ---------------------------------------------------------------------------------------
LR_LOC = np.array([0.3, -0.2, 1.0, 0.5])
LR_FACTOR = np.array([[[1.0, 0.2], [-0.5, 0.8], [0.3, -1.1], [0.9, 0.4]],
                      [[0.4, -0.6], [1.2, 0.1], [-0.2, 0.5], [0.0, 0.9]]])
LR_DIAG = np.array([[0.5, 1.5, 0.8, 1.1], [2.0, 0.3, 0.7, 1.0]])
LR_COV = LR_FACTOR @ LR_FACTOR.transpose(0, 2, 1) + np.apply_along_axis(np.diag, -1, LR_DIAG)


def mvn_log_density(x, loc, cov):
    diff = np.asarray(x) - loc
    distance = np.einsum("...i,...ij,...j->...", diff, np.linalg.inv(cov), diff)
    return -0.5 * (loc.shape[-1] * LOG_2PI + np.linalg.slogdet(cov)[1] + distance)


def mvn_kl(loc_p, cov_p, loc_q, cov_q):
    inverse_q = np.linalg.inv(cov_q)
    diff = loc_q - loc_p
    trace = np.trace(inverse_q @ cov_p, axis1=-2, axis2=-1)
    distance = np.einsum("...i,...ij,...j->...", diff, inverse_q, diff)
    return 0.5 * (trace + distance - loc_p.shape[-1] + np.linalg.slogdet(cov_q)[1] - np.linalg.slogdet(cov_p)[1])


def low_rank() -> D.LowRankMultivariateNormal:
    return D.LowRankMultivariateNormal(f64(LR_LOC), f64(LR_FACTOR), f64(LR_DIAG))


def test_low_rank_log_prob_entropy_and_matrices_equal_the_dense_forms():
    dist = low_rank()
    assert dist.batch_shape == (2,) and dist.event_shape == (4,) and dist.loc.shape == (2, 4)
    x = np.array([[[0.5, 0.1, 0.2, -1.0], [1.0, -0.3, 0.4, 2.0]], [[-2.0, 1.0, 3.0, 0.0], [0.0, 0.0, 0.0, 0.0]]])
    assert_close(dist.log_prob(f64(x)), mvn_log_density(x, LR_LOC, LR_COV))
    assert_close(dist.entropy(), 0.5 * (4 * (1 + LOG_2PI) + np.linalg.slogdet(LR_COV)[1]))
    assert_close(dist.covariance_matrix, LR_COV)
    assert_close(dist.precision_matrix, np.linalg.inv(LR_COV))
    assert_close(dist.scale_tril, np.linalg.cholesky(LR_COV))
    assert_close(dist.variance, np.diagonal(LR_COV, axis1=-2, axis2=-1))
    assert_close(dist.mean, np.broadcast_to(LR_LOC, (2, 4)))
    assert_close(dist.mode, np.broadcast_to(LR_LOC, (2, 4)))


def test_low_rank_samples_have_its_mean_and_covariance():
    """The covariance entries within six standard errors: sqrt((var_i var_j + cov_ij^2) / N) for normal draws."""
    draws = draws_of(low_rank())
    assert_mean_within_six_standard_errors(draws, np.broadcast_to(LR_LOC, (2, 4)))
    centered = draws - draws.mean(0)
    covariance = np.einsum("nbi,nbj->bij", centered, centered) / N
    variances = np.diagonal(LR_COV, axis1=-2, axis2=-1)
    standard_error = np.sqrt((variances[:, :, None] * variances[:, None, :] + LR_COV**2) / N)
    assert np.all(np.abs(covariance - LR_COV) <= 6 * standard_error)


def test_low_rank_rsample_log_prob_and_entropy_pass_gradcheck():
    def scores(loc, factor, diag):
        dist = D.LowRankMultivariateNormal(loc, factor, diag)
        return dist.log_prob(f64([[0.5, 0.1, 0.2, -1.0], [1.0, -0.3, 0.4, 2.0]])), dist.entropy()

    def rsample(loc, factor, diag):
        ag.manual_seed(7)
        return D.LowRankMultivariateNormal(loc, factor, diag).rsample((3,))

    for fn in (scores, rsample):
        assert gradcheck(fn, [f64(LR_LOC, True), f64(LR_FACTOR, True), f64(LR_DIAG, True)])


def test_low_rank_kl_divergences_equal_the_dense_closed_form_and_pass_gradcheck():
    p = low_rank()
    other_loc, other_factor, other_diag = LR_LOC[::-1] + 0.5, LR_FACTOR[0][:, :1] * 1.5, LR_DIAG[1] + 0.2
    q = D.LowRankMultivariateNormal(f64(other_loc), f64(other_factor), f64(other_diag))
    other_cov = other_factor @ other_factor.T + np.diag(other_diag)
    assert_close(D.kl_divergence(p, q), mvn_kl(LR_LOC, LR_COV, other_loc, other_cov))
    assert_close(D.kl_divergence(q, p), mvn_kl(other_loc, other_cov, LR_LOC, LR_COV))
    assert_close(D.kl_divergence(p, p), [0.0, 0.0], atol=1e-14)
    dense_cov = LR_COV[::-1] + np.eye(4)
    dense = D.MultivariateNormal(f64(other_loc), f64(dense_cov))
    assert_close(D.kl_divergence(dense, p), mvn_kl(other_loc, dense_cov, LR_LOC, LR_COV))
    assert_close(D.kl_divergence(p, dense), mvn_kl(LR_LOC, LR_COV, other_loc, dense_cov))

    def kls(loc, factor, diag, scale_tril):
        p = D.LowRankMultivariateNormal(loc, factor, diag)
        dense = D.MultivariateNormal(loc.flip(-1), scale_tril=scale_tril, validate_args=False)
        return D.kl_divergence(p, q), D.kl_divergence(q, p), D.kl_divergence(dense, p), D.kl_divergence(p, dense)

    factor = np.linalg.cholesky(dense_cov)
    assert gradcheck(kls, [f64(LR_LOC, True), f64(LR_FACTOR, True), f64(LR_DIAG, True), f64(factor, True)])


def test_low_rank_broadcasts_the_batch_and_expands():
    dist = D.LowRankMultivariateNormal(f64(np.zeros((3, 1, 4))), f64(LR_FACTOR), f64(LR_DIAG[0]))
    assert dist.batch_shape == (3, 2) and dist.cov_factor.shape == (3, 2, 4, 2) and dist.cov_diag.shape == (3, 2, 4)
    assert dist.sample((5,)).shape == (5, 3, 2, 4) and dist.entropy().shape == (3, 2)
    single = D.LowRankMultivariateNormal(f64(LR_LOC), f64(LR_FACTOR[1]), f64(LR_DIAG[1]))
    wider = single.expand((3, 2))
    assert type(wider) is D.LowRankMultivariateNormal and wider.batch_shape == (3, 2)
    assert wider.cov_factor.shape == (3, 2, 4, 2) and wider.covariance_matrix.shape == (3, 2, 4, 4)
    reversed_loc = LR_LOC[::-1].copy()
    assert_close(wider.log_prob(f64(reversed_loc)), np.full((3, 2), mvn_log_density(reversed_loc, LR_LOC, LR_COV[1])))
    assert_close(wider.precision_matrix[2, 1], np.linalg.inv(LR_COV[1]))


def test_low_rank_refuses_bad_arguments_with_torchs_errors():
    cases = [
        ((ag.tensor(0.0), ag.ones(3, 1), ag.ones(3)), r"^loc must be at least one-dimensional\.$"),
        ((ag.zeros(3), ag.ones(3), ag.ones(3)),
         r"^cov_factor must be at least two-dimensional, with optional leading batch dimensions$"),
        ((ag.zeros(3), ag.ones(2, 1), ag.ones(3)), r"^cov_factor must be a batch of matrices with shape 3 x m$"),
        ((ag.zeros(3), ag.ones(3, 1), ag.ones(2)), r"^cov_diag must be a batch of vectors with shape \(3,\)$"),
        ((ag.zeros(2, 3), ag.ones(4, 3, 1), ag.ones(3)),
         r"^Incompatible batch shapes: loc \(2, 3\), cov_factor \(4, 3, 1\), cov_diag \(3,\)$"),
        ((ag.zeros(3), 0.1 * ag.ones(3, 2), ag.tensor([1.0, 1.0, -100.0])),
         expected_error(r"cov_diag \(Tensor of shape \(3,\)\) of distribution LowRankMultivariateNormal\(loc: "
                        r"\(3,\), cov_factor: \(3, 2\), cov_diag: \(3,\)\) to satisfy the constraint "
                        r"IndependentConstraint\(GreaterThan\(lower_bound=0\.0\), 1\)")),
    ]
    for arguments, text in cases:
        with pytest.raises(ValueError, match=text):
            D.LowRankMultivariateNormal(*arguments)
    three = D.LowRankMultivariateNormal(ag.zeros(3), ag.ones(3, 1), ag.ones(3))
    two = D.LowRankMultivariateNormal(ag.zeros(2), ag.ones(2, 1), ag.ones(2))
    with pytest.raises(ValueError, match=r"^KL-divergence between two Low Rank Multivariate Normals with different "
                                         r"event shapes cannot be computed$"):
        D.kl_divergence(three, two)
    with pytest.raises(ValueError, match=r"^KL-divergence between two \(Low Rank\) Multivariate Normals with "
                                         r"different event shapes cannot be computed$"):
        D.kl_divergence(three, D.MultivariateNormal(ag.zeros(2), ag.eye(2)))


# -- MixtureSameFamily -----------------------------------------------------------------------------------------------
MIX_LOGITS = np.array([[0.1, 0.5, -0.3], [1.0, 0.0, 0.2]])
MIX_LOC = np.array([[-1.0, 0.5, 2.0], [0.0, 1.0, 3.0]])
MIX_SCALE = np.array([[0.5, 1.0, 0.7], [1.2, 0.3, 0.8]])
MIX_WEIGHTS = np.exp(MIX_LOGITS) / np.exp(MIX_LOGITS).sum(-1, keepdims=True)


def normal_mixture(logits=MIX_LOGITS, loc=MIX_LOC, scale=MIX_SCALE) -> D.MixtureSameFamily:
    return D.MixtureSameFamily(D.Categorical(logits=f64(logits)), D.Normal(f64(loc), f64(scale)))


def mixture_density(x, weights=MIX_WEIGHTS, loc=MIX_LOC, scale=MIX_SCALE):
    """x: (..., batch) -> the density at each, summed over the components."""
    z = (np.asarray(x)[..., None] - loc) / scale
    return (weights * np.exp(-0.5 * z * z) / (scale * math.sqrt(2 * math.pi))).sum(-1)


def test_mixture_log_prob_cdf_and_moments_equal_the_mixture_of_normals():
    dist = normal_mixture()
    assert dist.batch_shape == (2,) and dist.event_shape == ()
    x = np.array([[0.3, -0.2], [1.5, 2.5], [-4.0, 9.0]])
    assert_close(dist.log_prob(f64(x)), np.log(mixture_density(x)))
    cdf = (MIX_WEIGHTS * 0.5 * (1 + erf((x[..., None] - MIX_LOC) / (MIX_SCALE * math.sqrt(2))))).sum(-1)
    assert_close(dist.cdf(f64(x)), cdf)
    grid = np.linspace(-15.0, 15.0, 300001)
    density = mixture_density(grid[:, None]).T
    mean = integrate(density * grid, grid)
    assert_close(dist.mean, mean, rtol=1e-9)
    assert_close(dist.variance, integrate(density * (grid - mean[:, None]) ** 2, grid), rtol=1e-9)


def test_mixture_of_vector_components_sums_over_the_event():
    scale = np.stack([MIX_SCALE, MIX_SCALE[::-1]], -1)
    loc = np.stack([MIX_LOC, -MIX_LOC], -1)
    dist = D.MixtureSameFamily(D.Categorical(probs=f64(MIX_WEIGHTS)),
                               D.Independent(D.Normal(f64(loc), f64(scale)), 1))
    assert dist.batch_shape == (2,) and dist.event_shape == (2,)
    x = np.array([[[0.3, -0.2], [1.5, 2.5]], [[-1.0, 0.5], [0.0, 0.0]]])
    z = (x[..., None, :] - loc) / scale
    component = np.exp(-0.5 * z * z).prod(-1) / (scale.prod(-1) * 2 * math.pi)
    assert_close(dist.log_prob(f64(x)), np.log((MIX_WEIGHTS * component).sum(-1)))
    mean = (MIX_WEIGHTS[..., None] * loc).sum(-2)
    assert_close(dist.mean, mean)
    assert_close(dist.variance, (MIX_WEIGHTS[..., None] * (scale**2 + loc**2)).sum(-2) - mean**2)
    assert dist.sample((5,)).shape == (5, 2, 2)
    assert repr(dist.support) == "MixtureSameFamilyConstraint(IndependentConstraint(Real(), 1))"


def test_mixture_samples_pick_components_with_the_mixture_weights():
    """Components far apart (means -10, 0, 10, scale 0.5): the nearest mean tells which one a draw came from."""
    means = np.array([-10.0, 0.0, 10.0])
    dist = normal_mixture(MIX_LOGITS, np.broadcast_to(means, (2, 3)), np.full((2, 3), 0.5))
    draws = draws_of(dist)
    assert draws.shape == (N, 2)
    nearest = np.abs(draws[..., None] - means).argmin(-1)
    for k in range(3):
        assert_frequency_within_six_standard_errors(nearest == k, MIX_WEIGHTS[:, k])
    assert_mean_within_six_standard_errors(draws, dist.mean.numpy())
    overlapping = draws_of(normal_mixture(), seed=1)
    cdf_at = normal_mixture().cdf(f64(0.5)).numpy()
    assert_frequency_within_six_standard_errors(overlapping <= 0.5, cdf_at)


def test_mixture_broadcasts_a_categorical_of_a_smaller_batch():
    """One set of weights for a batch of two mixtures: every draw has the batch shape (PyTorch's fails here), and
    the two mixtures choose their components independently: with components far apart, both draws come from the
    same one with probability sum_k w_k^2."""
    dist = D.MixtureSameFamily(D.Categorical(logits=f64(MIX_LOGITS[0])), D.Normal(f64(MIX_LOC), f64(MIX_SCALE)))
    assert dist.batch_shape == (2,) and dist.sample((4,)).shape == (4, 2)
    means = np.array([-10.0, 0.0, 10.0])
    apart = D.MixtureSameFamily(D.Categorical(logits=f64(MIX_LOGITS[0])),
                                D.Normal(f64(np.broadcast_to(means, (2, 3))), 0.5))
    nearest = np.abs(draws_of(apart)[..., None] - means).argmin(-1)
    assert_frequency_within_six_standard_errors(nearest[:, 0] == nearest[:, 1], (MIX_WEIGHTS[0] ** 2).sum())
    weights = np.broadcast_to(MIX_WEIGHTS[0], (2, 3))
    x = np.array([0.3, -0.2])
    assert_close(dist.log_prob(f64(x)), np.log(mixture_density(x, weights)))
    assert_close(dist.mean, (weights * MIX_LOC).sum(-1))
    deeper = D.MixtureSameFamily(D.Categorical(logits=f64(MIX_LOGITS)),
                                 D.Normal(f64(np.broadcast_to(MIX_LOC, (4, 2, 3))), f64(MIX_SCALE)))
    assert deeper.batch_shape == (4, 2) and deeper.sample((3,)).shape == (3, 4, 2)
    assert_close(deeper.mean, np.broadcast_to((MIX_WEIGHTS * MIX_LOC).sum(-1), (4, 2)))


def test_mixture_log_prob_and_cdf_pass_gradcheck():
    def scores(logits, loc, scale):
        dist = D.MixtureSameFamily(D.Categorical(logits=logits), D.Normal(loc, scale))
        x = f64([[0.3, -0.2], [1.5, 2.5]])
        return dist.log_prob(x), dist.cdf(x), dist.mean, dist.variance

    assert gradcheck(scores, [f64(MIX_LOGITS, True), f64(MIX_LOC, True), f64(MIX_SCALE, True)])


def test_mixture_expand_and_validation():
    dist = normal_mixture()
    wider = dist.expand((3, 2))
    assert type(wider) is D.MixtureSameFamily and wider.batch_shape == (3, 2)
    assert wider.component_distribution.batch_shape == (3, 2, 3) and wider.mixture_distribution.batch_shape == (3, 2)
    assert_close(wider.log_prob(f64(0.4)), np.broadcast_to(dist.log_prob(f64(0.4)).numpy(), (3, 2)))
    assert wider.sample((4,)).shape == (4, 3, 2)
    components = D.Normal(f64(MIX_LOC), f64(MIX_SCALE))
    with pytest.raises(ValueError, match=r"^ The Mixture distribution needs to be an  instance of "
                                         r"actorgrad\.distributions\.Categorical$"):
        D.MixtureSameFamily(components, components)
    with pytest.raises(ValueError, match=r"^The Component distribution needs to be an instance of "
                                         r"actorgrad\.distributions\.Distribution$"):
        D.MixtureSameFamily(D.Categorical(logits=f64(MIX_LOGITS)), 3)
    with pytest.raises(ValueError, match=r"^`mixture_distribution component` \(4\) does not equal "
                                         r"`component_distribution\.batch_shape\[-1\]` \(3\)$"):
        D.MixtureSameFamily(D.Categorical(logits=f64(np.zeros(4))), components)
    with pytest.raises(ValueError, match=r"^`mixture_distribution\.batch_shape` \(\(3,\)\) is not compatible with "
                                         r"`component_distribution\.batch_shape`\(\(2,\)\)$"):
        D.MixtureSameFamily(D.Categorical(logits=f64(np.zeros((3, 3)))), components)
    uniforms = D.MixtureSameFamily(D.Categorical(logits=f64(np.zeros((2, 2)))),
                                   D.Uniform(f64([[0.0, 0.5], [0.0, 2.0]]), f64([[2.0, 3.0], [1.0, 3.0]])))
    assert uniforms.support.check(f64([1.0, 2.5])).tolist() == [True, False]  # in every component's support
    exponentials = D.MixtureSameFamily(D.Categorical(logits=f64(np.zeros(2))), D.Exponential(f64([1.0, 2.0])))
    with pytest.raises(ValueError, match=r"^Expected value argument \(Tensor of shape \(\)\) to be within the "
                                         r"support \(MixtureSameFamilyConstraint\(GreaterThanEq\(lower_bound=0\.0\)"
                                         r"\)\) of the distribution MixtureSameFamily\(\n  Categorical"):
        exponentials.log_prob(f64(-1.0))


# -- on cuda:0 (CuPy, or the stand-in in CI) --------------------------------------------------------------------------
GPU_CASES = {
    "VonMises": (D.VonMises, [[0.5, -2.0], [0.3, 25.0]], [0.1, 2.0]),
    "FisherSnedecor": (D.FisherSnedecor, [[3.0, 5.0], [10.0, 12.0]], [0.2, 1.3]),
    "Kumaraswamy": (D.Kumaraswamy, [[0.6, 2.5], [1.5, 3.0]], [0.05, 0.5]),
    "ContinuousBernoulli": (D.ContinuousBernoulli, [[0.1, 0.4995]], [0.2, 0.5]),
    "RelaxedBernoulli": (lambda t, p: D.RelaxedBernoulli(t, probs=p), [0.7, [0.1, 0.8]], [0.2, 0.6]),
    "RelaxedOneHotCategorical": (lambda t, lg: D.RelaxedOneHotCategorical(t, logits=lg),
                                 [0.7, [0.1, -0.5, 1.0]], [0.1, 0.2, 0.7]),
    "LowRankMultivariateNormal": (D.LowRankMultivariateNormal, [LR_LOC, LR_FACTOR, LR_DIAG], LR_LOC[::-1].copy()),
    "MixtureSameFamily": (lambda lg, m, s: D.MixtureSameFamily(D.Categorical(logits=lg), D.Normal(m, s)),
                          [MIX_LOGITS, MIX_LOC, MIX_SCALE], [0.3, -0.2]),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(GPU_CASES))
def test_extra_distributions_give_the_same_numbers_and_gradients_on_cuda(name):
    pytest.importorskip("cupy")
    build, params, value = GPU_CASES[name]
    results = []
    for device in (None, ag.device("cuda:0")):
        leaves = [ag.tensor(np.asarray(p), dtype=ag.float64, device=device, requires_grad=True) for p in params]
        dist = build(*leaves)
        score = dist.log_prob(ag.tensor(np.asarray(value), dtype=ag.float64, device=device))
        ag.manual_seed(2)
        sample = dist.rsample((3,)) if dist.has_rsample else dist.sample((3,))
        total = score.sum() + (sample.sum() if dist.has_rsample else 0)
        grads = ag.autograd.grad(total, leaves, allow_unused=True)
        assert score.device == sample.device == leaves[0].device
        results.append([t.detach().cpu().numpy() for t in (score, sample, *grads) if t is not None])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-10)
