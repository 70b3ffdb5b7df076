"""Distribution behaviours found to differ from PyTorch's by a generated (fuzzed) differential review, each checked
against an independent expectation (numpy inverses and determinants, closed-form Gaussian densities).

A batch of n matrices of size n is the shape that went wrong: the identity of size n beside it has the shape of the
batch's rows, so a general `linalg.solve` read it as a batch of vectors, not as one matrix."""

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.distributions import Chi2, Gamma, HalfCauchy, MultivariateNormal, Wishart

N = 3
RNG = np.random.default_rng(20261127)


def positive_definite(batch: tuple[int, ...], n: int) -> np.ndarray:
    a = RNG.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


PRECISION = positive_definite((N,), N)  # a batch of N matrices of size N
COVARIANCE = positive_definite((N,), N)
LOC = RNG.normal(size=(N, N))
VALUE = RNG.normal(size=(2, N, N))


def gaussian_log_density(value: np.ndarray, loc: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """log N(value; loc, precision^-1) = -(n log 2 pi + d^T P d - log det P) / 2."""
    d = value - loc
    quadratic = np.einsum("...i,...ij,...j->...", d, precision, d)
    return -0.5 * (d.shape[-1] * math.log(2 * math.pi) + quadratic - np.linalg.slogdet(precision)[1])


def f64(a: np.ndarray, requires_grad: bool = False, device: str | None = None) -> ag.Tensor:
    return ag.tensor(a, dtype=ag.float64, requires_grad=requires_grad, device=device)


@pytest.mark.parametrize("n", [2, 3])
def test_multivariate_normal_from_a_batch_of_n_precision_matrices_factors_their_inverses(n):
    precision = positive_definite((n,), n)
    dist = MultivariateNormal(f64(RNG.normal(size=(n,))), precision_matrix=f64(precision))
    L = dist.scale_tril.numpy()
    assert np.all(np.triu(L, 1) == 0)
    np.testing.assert_allclose(L @ np.swapaxes(L, -1, -2), np.linalg.inv(precision), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dist.covariance_matrix.numpy(), np.linalg.inv(precision), rtol=1e-12, atol=1e-14)


def test_multivariate_normal_from_a_batch_of_n_precision_matrices_scores_and_has_their_entropy():
    dist = MultivariateNormal(f64(LOC), precision_matrix=f64(PRECISION))
    np.testing.assert_allclose(dist.log_prob(f64(VALUE)).numpy(), gaussian_log_density(VALUE, LOC, PRECISION),
                               rtol=1e-12)
    entropy = 0.5 * (N * (1 + math.log(2 * math.pi)) - np.linalg.slogdet(PRECISION)[1])
    np.testing.assert_allclose(dist.entropy().numpy(), entropy, rtol=1e-12)
    np.testing.assert_allclose(dist.variance.numpy(), np.diagonal(np.linalg.inv(PRECISION), axis1=-2, axis2=-1),
                               rtol=1e-12)


def test_multivariate_normal_precision_matrix_of_a_batch_of_n_factors_is_their_inverse():
    scale_tril = np.linalg.cholesky(COVARIANCE)
    dist = MultivariateNormal(f64(LOC), scale_tril=f64(scale_tril))
    np.testing.assert_allclose(dist.precision_matrix.numpy(), np.linalg.inv(COVARIANCE), rtol=1e-11, atol=1e-13)


def test_multivariate_normal_log_prob_through_a_batch_of_n_precision_matrices_passes_gradcheck():
    def log_prob(loc, factor):  # P = F F^T + I stays positive definite wherever gradcheck perturbs F
        precision = ag.matmul(factor, factor.mT) + ag.eye(N, dtype=ag.float64)
        return MultivariateNormal(loc, precision_matrix=precision).log_prob(f64(VALUE))

    inputs = [f64(LOC, True), f64(np.linalg.cholesky(PRECISION) / 2, True)]
    assert gradcheck(log_prob, inputs)
    assert gradgradcheck(log_prob, inputs)


@pytest.mark.parametrize("p", [2, 3])
def test_wishart_over_a_batch_of_p_matrices_inverts_them_both_ways(p):
    scale = positive_definite((p,), p)
    df = f64(RNG.uniform(p + 1, p + 3, size=(p,)))
    from_covariance = Wishart(df, covariance_matrix=f64(scale))
    np.testing.assert_allclose(from_covariance.precision_matrix.numpy(), np.linalg.inv(scale), rtol=1e-11,
                               atol=1e-13)
    from_precision = Wishart(df, precision_matrix=f64(scale))
    np.testing.assert_allclose(from_precision.covariance_matrix.numpy(), np.linalg.inv(scale), rtol=1e-11,
                               atol=1e-13)
    mean = df.numpy()[:, None, None] * np.linalg.inv(scale)  # E[X] = df * covariance
    np.testing.assert_allclose(from_precision.mean.numpy(), mean, rtol=1e-11)


# -- Gamma.cdf: a float64 value promotes float32 parameters (the cdf is not cast down, as log_prob's value is) -----
def test_gamma_cdf_of_a_float64_value_is_float64_for_float32_parameters():
    x = np.array([0.1234567891, 1.5, 7.25])
    rate = 1.5
    dist = Gamma(ag.tensor([2.0, 2.0, 2.0], dtype=ag.float32), ag.tensor(rate, dtype=ag.float32))
    cdf = dist.cdf(ag.tensor(x, dtype=ag.float64))
    assert cdf.dtype == ag.float64
    expected = 1 - np.exp(-rate * x) * (1 + rate * x)  # P(2, y) = 1 - e^-y (1 + y)
    np.testing.assert_allclose(cdf.numpy(), expected, rtol=1e-12)
    assert dist.cdf(ag.tensor(x, dtype=ag.float32)).dtype == ag.float32
    assert dist.cdf(1.5).dtype == ag.float32  # a number takes the parameters' dtype


def test_chi2_cdf_of_a_float64_value_is_float64_for_float32_degrees_of_freedom():
    x = np.array([0.3, 2.0, 5.5])
    cdf = Chi2(ag.tensor(2.0, dtype=ag.float32)).cdf(ag.tensor(x, dtype=ag.float64))
    assert cdf.dtype == ag.float64
    np.testing.assert_allclose(cdf.numpy(), 1 - np.exp(-x / 2), rtol=1e-12)  # chi-squared with 2 dof


# -- HalfCauchy.log_prob reads its value at the scale's dtype, as PyTorch's does ----------------------------------
def half_cauchy_log_density(x: np.ndarray, scale: float) -> np.ndarray:
    return np.log(2 / (math.pi * scale * (1 + (x / scale) ** 2)))


def test_half_cauchy_log_prob_reads_a_float64_value_at_a_float32_scale():
    x = np.array([0.25, 1.0, 3.5])
    log_prob = HalfCauchy(ag.tensor(1.5, dtype=ag.float32)).log_prob(ag.tensor(x, dtype=ag.float64))
    assert log_prob.dtype == ag.float32
    np.testing.assert_allclose(log_prob.numpy(), half_cauchy_log_density(x, 1.5), rtol=1e-6)


def test_half_cauchy_log_prob_of_a_bool_value_scores_zero_and_one():
    log_prob = HalfCauchy(ag.tensor([2.0, 2.0], dtype=ag.float64)).log_prob(ag.tensor([True, False]))
    assert log_prob.dtype == ag.float64
    np.testing.assert_allclose(log_prob.numpy(), half_cauchy_log_density(np.array([1.0, 0.0]), 2.0), rtol=1e-12)


@pytest.mark.gpu
def test_multivariate_normal_from_a_batch_of_n_precision_matrices_on_cuda():
    pytest.importorskip("cupy")
    dist = MultivariateNormal(f64(LOC, device="cuda:0"), precision_matrix=f64(PRECISION, device="cuda:0"))
    log_prob = dist.log_prob(f64(VALUE, device="cuda:0"))
    assert log_prob.device.type == "cuda"
    np.testing.assert_allclose(log_prob.cpu().numpy(), gaussian_log_density(VALUE, LOC, PRECISION), rtol=1e-10)
    np.testing.assert_allclose(dist.precision_matrix.cpu().numpy(), PRECISION, rtol=1e-10)
