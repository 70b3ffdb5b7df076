"""Every distribution has PyTorch's public attributes and methods; those PyTorch leaves unimplemented raise
NotImplementedError; the implemented ones agree with closed forms and brute force (perplexity = exp(entropy),
stddev^2 = variance, cdf differences = integrals of the density, icdf inverts cdf, moments = quadratures or sums
over the support). Also PyTorch's names in `distributions.utils` and `constraints`, and `sample_n`."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import distributions as D
from actorgrad.distributions import constraints
from actorgrad.distributions import utils as U


def f64(values):
    return ag.tensor(values, dtype=ag.float64)


COV = [[2.0, 0.5], [0.5, 1.0]]
# name: (build from float64 tensors, parameters, a value inside the support of every batch member)
CASES = {
    "Bernoulli": (D.Bernoulli, [[0.3, 0.7]], [1.0, 0.0]),
    "Beta": (D.Beta, [[2.0, 1.5], [3.0, 1.8]], [0.3, 0.6]),
    "Binomial": (lambda p: D.Binomial(5, p), [[0.3, 0.6]], [2.0, 3.0]),
    "Categorical": (D.Categorical, [[0.2, 0.3, 0.5]], 1.0),
    "Cauchy": (D.Cauchy, [[0.0, 1.0], [1.0, 2.0]], [0.3, 0.6]),
    "Chi2": (D.Chi2, [[2.0, 3.0]], [0.3, 0.6]),
    "ContinuousBernoulli": (D.ContinuousBernoulli, [[0.3, 0.6]], [0.3, 0.6]),
    "Dirichlet": (D.Dirichlet, [[1.0, 2.0, 3.0]], [0.2, 0.3, 0.5]),
    "Exponential": (D.Exponential, [[2.0, 1.0]], [0.3, 0.6]),
    "FisherSnedecor": (D.FisherSnedecor, [[3.0, 5.0], [6.0, 7.0]], [0.3, 0.6]),
    "Gamma": (D.Gamma, [[2.0, 1.5], [3.0, 0.8]], [0.3, 0.6]),
    "GeneralizedPareto": (D.GeneralizedPareto, [[0.0, 1.0], [1.0, 2.0], [0.2, -0.3]], [0.3, 1.6]),
    "Geometric": (D.Geometric, [[0.3, 0.6]], [1.0, 2.0]),
    "Gumbel": (D.Gumbel, [[0.0, 1.0], [1.0, 2.0]], [0.3, 0.6]),
    "HalfCauchy": (D.HalfCauchy, [[1.0, 2.0]], [0.3, 0.6]),
    "HalfNormal": (D.HalfNormal, [[1.0, 2.0]], [0.3, 0.6]),
    "InverseGamma": (D.InverseGamma, [[2.0, 3.5], [3.0, 0.8]], [0.3, 0.6]),
    "Kumaraswamy": (D.Kumaraswamy, [[2.0, 1.5], [3.0, 1.8]], [0.3, 0.6]),
    "Laplace": (D.Laplace, [[0.0, 1.0], [1.0, 2.0]], [0.3, 0.6]),
    "LogNormal": (D.LogNormal, [[0.0, 1.0], [1.0, 0.5]], [0.3, 0.6]),
    "LogisticNormal": (D.LogisticNormal, [[0.0, 1.0], [1.0, 2.0]], [0.2, 0.3, 0.5]),
    "Multinomial": (lambda p: D.Multinomial(4, p), [[0.2, 0.3, 0.5]], [1.0, 1.0, 2.0]),
    "NegativeBinomial": (D.NegativeBinomial, [[3.0, 4.0], [0.3, 0.6]], [1.0, 2.0]),
    "Normal": (D.Normal, [[0.0, 1.0], [1.0, 2.0]], [0.3, 0.6]),
    "OneHotCategorical": (D.OneHotCategorical, [[0.2, 0.3, 0.5]], [0.0, 1.0, 0.0]),
    "OneHotCategoricalStraightThrough": (D.OneHotCategoricalStraightThrough, [[0.2, 0.3, 0.5]], [0.0, 1.0, 0.0]),
    "Pareto": (D.Pareto, [[1.0, 2.0], [3.0, 2.5]], [2.3, 2.6]),
    "Poisson": (D.Poisson, [[2.0, 1.0]], [1.0, 2.0]),
    "RelaxedBernoulli": (lambda t, p: D.RelaxedBernoulli(t, probs=p), [[0.5, 0.7], [0.3, 0.6]], [0.3, 0.6]),
    "RelaxedOneHotCategorical": (lambda t, p: D.RelaxedOneHotCategorical(t, probs=p), [0.5, [0.2, 0.3, 0.5]],
                                 [0.2, 0.3, 0.5]),
    "StudentT": (D.StudentT, [[3.0, 4.0], [0.0, 1.0], [1.0, 2.0]], [0.3, 0.6]),
    "Uniform": (D.Uniform, [[0.0, 1.0], [1.0, 2.0]], [0.3, 1.6]),
    "VonMises": (D.VonMises, [[0.0, 1.0], [1.0, 2.0]], [0.3, 0.6]),
    "Weibull": (D.Weibull, [[1.0, 2.0], [1.5, 2.5]], [0.3, 0.6]),
    "MultivariateNormal": (lambda m, c: D.MultivariateNormal(m, c), [[0.0, 1.0], COV], [0.3, 0.6]),
    "LowRankMultivariateNormal": (D.LowRankMultivariateNormal, [[0.0, 1.0], [[1.0], [0.5]], [1.0, 2.0]], [0.3, 0.6]),
    "Wishart": (lambda df, c: D.Wishart(df, c), [3.0, COV], COV),
    "LKJCholesky": (lambda c: D.LKJCholesky(2, c), [1.5], [[1.0, 0.0], [0.6, 0.8]]),
    "Independent": (lambda m, s: D.Independent(D.Normal(m, s), 1), [[0.0, 1.0], [1.0, 2.0]], [0.3, 0.6]),
    "MixtureSameFamily": (lambda w, m, s: D.MixtureSameFamily(D.Categorical(w), D.Normal(m, s)),
                          [[0.3, 0.7], [0.0, 1.0], [1.0, 2.0]], 0.4),
}

# What PyTorch 2.13 leaves unimplemented (NotImplementedError) for each of these: everything else is implemented.
UNIMPLEMENTED = {
    "Bernoulli": {"cdf", "icdf"}, "Beta": {"cdf", "icdf", "enumerate_support"}, "Binomial": {"cdf", "icdf"},
    "Categorical": {"cdf", "icdf"}, "Cauchy": {"enumerate_support"}, "Chi2": {"icdf", "enumerate_support"},
    "ContinuousBernoulli": {"mode", "enumerate_support"}, "Dirichlet": {"cdf", "icdf", "enumerate_support"},
    "Exponential": {"enumerate_support"}, "FisherSnedecor": {"entropy", "cdf", "icdf", "enumerate_support"},
    "Gamma": {"icdf", "enumerate_support"}, "GeneralizedPareto": {"enumerate_support"},
    "Geometric": {"cdf", "icdf", "enumerate_support"}, "Gumbel": {"enumerate_support"},
    "HalfCauchy": {"enumerate_support"}, "HalfNormal": {"enumerate_support"},
    "InverseGamma": {"icdf", "enumerate_support"}, "Kumaraswamy": {"enumerate_support"},
    "Laplace": {"enumerate_support"}, "LogNormal": {"enumerate_support"},
    "LogisticNormal": {"mean", "mode", "variance", "entropy", "cdf", "icdf", "enumerate_support"},
    "Multinomial": {"mode", "cdf", "icdf", "enumerate_support"},
    "NegativeBinomial": {"entropy", "cdf", "icdf", "enumerate_support"}, "Normal": {"enumerate_support"},
    "OneHotCategorical": {"cdf", "icdf"}, "OneHotCategoricalStraightThrough": {"cdf", "icdf"},
    "Pareto": {"enumerate_support"}, "Poisson": {"entropy", "cdf", "icdf", "enumerate_support"},
    "RelaxedBernoulli": {"mean", "mode", "variance", "entropy", "cdf", "icdf", "enumerate_support"},
    "RelaxedOneHotCategorical": {"mean", "mode", "variance", "entropy", "cdf", "icdf", "enumerate_support"},
    "StudentT": {"cdf", "icdf", "enumerate_support"}, "Uniform": {"enumerate_support"},
    "VonMises": {"entropy", "cdf", "icdf", "enumerate_support"}, "Weibull": {"enumerate_support"},
    "MultivariateNormal": {"cdf", "icdf", "enumerate_support"},
    "LowRankMultivariateNormal": {"cdf", "icdf", "enumerate_support"},
    "Wishart": {"cdf", "icdf", "enumerate_support"},
    "LKJCholesky": {"mean", "mode", "variance", "entropy", "cdf", "icdf", "enumerate_support"},
    "Independent": {"cdf", "icdf", "enumerate_support"},
    "MixtureSameFamily": {"mode", "entropy", "icdf", "enumerate_support"},
}

PUBLIC = ["arg_constraints", "batch_shape", "cdf", "entropy", "enumerate_support", "event_shape", "expand",
          "has_enumerate_support", "has_rsample", "icdf", "log_prob", "mean", "mode", "perplexity", "rsample",
          "sample", "sample_n", "set_default_validate_args", "stddev", "support", "variance"]


def build(name):
    make, params, value = CASES[name]
    return make(*[f64(p) for p in params]), f64(value)


def use(dist, attr, value):
    if attr in ("mean", "mode", "variance"):
        return getattr(dist, attr)
    if attr == "entropy":
        return dist.entropy()
    if attr == "enumerate_support":
        return dist.enumerate_support()
    return dist.cdf(value) if attr == "cdf" else dist.icdf(f64(0.3))


def test_every_distribution_class_has_pytorchs_public_attributes():
    classes = [getattr(D, n) for n in D.__all__ if isinstance(getattr(D, n), type)]
    for cls in (c for c in classes if issubclass(c, D.Distribution)):
        assert not [a for a in PUBLIC if not hasattr(cls, a)], cls


@pytest.mark.parametrize("name", list(CASES))
def test_what_pytorch_leaves_unimplemented_raises_and_the_rest_works(name):
    dist, value = build(name)
    for attr in ("mean", "mode", "variance", "entropy", "cdf", "icdf", "enumerate_support"):
        if attr in UNIMPLEMENTED[name]:
            with pytest.raises(NotImplementedError):
                use(dist, attr, value)
        else:
            assert isinstance(use(dist, attr, value), ag.Tensor), attr
    assert dist.has_enumerate_support == ("enumerate_support" not in UNIMPLEMENTED[name])


@pytest.mark.parametrize("name", [n for n in CASES if not {"entropy", "variance"} & UNIMPLEMENTED[n]])
def test_perplexity_is_exp_entropy_and_stddev_squared_is_variance(name):
    dist, _ = build(name)
    np.testing.assert_allclose(dist.perplexity().numpy(), np.exp(dist.entropy().numpy()), rtol=1e-12)
    np.testing.assert_allclose(dist.stddev.numpy() ** 2, dist.variance.numpy(), rtol=1e-12)


NODES, WEIGHTS = np.polynomial.legendre.leggauss(32)


def integrate(dist, g, lo, hi, panels=400):
    """Integral of g(x) p(x) over [lo, hi] (arrays over the batch), with Gauss-Legendre panels."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    cuts = np.linspace(lo, hi, panels + 1)
    half = (np.diff(cuts, axis=0) / 2)[:, None]
    shape = (1, -1) + (1,) * lo.ndim
    x = (cuts[:-1, None] + half * (NODES + 1).reshape(shape)).reshape(-1, *lo.shape)
    w = (half * WEIGHTS.reshape(shape)).reshape(-1, *lo.shape)
    return np.sum(w * g(x) * np.exp(dist.log_prob(f64(x)).numpy()), axis=0)


CONTINUOUS_1D = [n for n in CASES if "cdf" not in UNIMPLEMENTED[n]]  # all of them 1-d and continuous


@pytest.mark.parametrize("name", CONTINUOUS_1D)
def test_cdf_differences_are_integrals_of_the_density(name):
    dist, value = build(name)
    x0 = value.numpy() * np.ones(dist.batch_shape)
    x1 = x0 + 0.25
    got = dist.cdf(f64(x1)).numpy() - dist.cdf(f64(x0)).numpy()
    np.testing.assert_allclose(got, integrate(dist, np.ones_like, x0, x1, panels=20), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", [n for n in CONTINUOUS_1D if "icdf" not in UNIMPLEMENTED[n]])
def test_icdf_inverts_cdf(name):
    dist, value = build(name)
    np.testing.assert_allclose(dist.icdf(dist.cdf(value)).numpy(), value.numpy() * np.ones(dist.batch_shape),
                               rtol=1e-9)


# light-tailed 1-d distributions: their mean and variance against quadratures over [icdf(eps), icdf(1 - eps)]
@pytest.mark.parametrize("name", ["Normal", "Laplace", "Gumbel", "Exponential", "Uniform", "Weibull", "Kumaraswamy",
                                  "HalfNormal", "LogNormal", "ContinuousBernoulli", "GeneralizedPareto"])
def test_mean_and_variance_equal_quadratures_of_the_density(name):
    dist, _ = build(name)
    ones = np.ones(dist.batch_shape)
    lo, hi = dist.icdf(f64(1e-15 * ones)).numpy(), dist.icdf(f64((1 - 1e-15) * ones)).numpy()
    mean = integrate(dist, lambda x: x, lo, hi, panels=2000)
    np.testing.assert_allclose(dist.mean.numpy(), mean, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(dist.variance.numpy(), integrate(dist, lambda x: (x - mean) ** 2, lo, hi, 2000),
                               rtol=1e-6)


@pytest.mark.parametrize("name", ["Bernoulli", "Binomial", "OneHotCategorical", "Geometric",
                                  "Poisson", "NegativeBinomial"])
def test_discrete_moments_are_sums_over_the_support(name):
    dist, _ = build(name)
    if dist.has_enumerate_support:
        support = dist.enumerate_support()
    else:  # counts up to where the tail is below 1e-16
        support = f64(np.arange(200.0).reshape(-1, *[1] * len(dist.batch_shape)) * np.ones(dist.batch_shape))
    probs = np.exp(dist.log_prob(support).numpy())
    if dist.event_shape:
        probs = probs[..., None]
    x = support.numpy()
    np.testing.assert_allclose(probs.sum(0), 1.0, rtol=1e-12)
    mean = (probs * x).sum(0)
    np.testing.assert_allclose(dist.mean.numpy(), mean, rtol=1e-10)
    np.testing.assert_allclose(dist.variance.numpy(), (probs * (x - mean) ** 2).sum(0), rtol=1e-10)
    if "entropy" not in UNIMPLEMENTED[name]:
        np.testing.assert_allclose(dist.entropy().numpy(), -(probs * np.log(probs)).sum(0).squeeze(), rtol=1e-10)


def test_sample_n_is_sample_of_n_with_pytorchs_future_warning():
    dist = D.Normal(f64([0.0, 1.0]), 2.0)
    ag.manual_seed(5)
    with pytest.warns(FutureWarning, match=r"`sample_n\(n\)` will be deprecated. Use `sample\(\(n,\)\)` instead."):
        got = dist.sample_n(3)
    ag.manual_seed(5)
    assert got.shape == (3, 2) and np.array_equal(got.numpy(), dist.sample((3,)).numpy())


def test_set_default_validate_args_takes_only_bools():
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args(1.5)
    D.Distribution.set_default_validate_args(False)
    try:
        assert D.Normal(0.0, -1.0).scale.item() == -1.0
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match="Expected parameter scale"):
        D.Normal(0.0, -1.0)


def test_validate_sample_says_what_is_wrong_with_the_value():
    dist = D.Normal(ag.zeros(3), 1.0)
    with pytest.raises(ValueError, match=r"^The value argument to log_prob must be a Tensor$"):
        dist.log_prob([0.0])
    with pytest.raises(ValueError, match=r"Value is not broadcastable with batch_shape\+event_shape: \(2,\) vs \(3,\)"):
        dist.log_prob(ag.zeros(2))
    with pytest.raises(ValueError, match=r"The right-most size of value must match event_shape: \(2,\) vs \(3,\)"):
        D.MultivariateNormal(ag.zeros(3), ag.eye(3)).log_prob(ag.zeros(2))
    with pytest.raises(ValueError, match=r"to be within the support \(GreaterThanEq\(lower_bound=0.0\)\)"):
        D.Exponential(ag.ones(2)).cdf(ag.tensor([-1.0, 1.0]))


def test_utils_has_pytorchs_names():
    assert U.euler_constant == pytest.approx(-ag.digamma(f64(1.0)).item(), rel=1e-15)
    assert U.is_tensor_like(ag.zeros(1)) and not U.is_tensor_like(np.zeros(1)) and not U.is_tensor_like(1.0)
    x = f64(np.arange(24.0).reshape(2, 3, 4))
    assert np.array_equal(U._sum_rightmost(x, 2).numpy(), np.arange(24.0).reshape(2, 12).sum(1))
    assert U._sum_rightmost(x, 0) is x
    ag.manual_seed(3)
    noise = U._standard_normal((2, 3), ag.float64, None)
    ag.manual_seed(3)
    assert noise.dtype == ag.float64 and np.array_equal(noise.numpy(), ag.randn(2, 3, dtype=ag.float64).numpy())


def test_constraints_has_pytorchs_private_classes():
    assert constraints._Cat is constraints.cat and constraints._Stack is constraints.stack
    below = constraints._IntegerLessThan(3)
    assert below.is_discrete and repr(below) == "IntegerLessThan(upper_bound=3)"
    checked = below.check(f64([-7.0, 3.0, 3.5, 4.0, 2.0]))
    assert checked.numpy().tolist() == [True, True, False, False, True]


@pytest.mark.gpu
def test_standard_normal_and_sample_n_stay_on_cuda():
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    assert U._standard_normal((2,), ag.float32, cuda).device == cuda
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert D.Normal(ag.zeros(2, device=cuda), 1.0).sample_n(4).device == cuda
    assert math.isfinite(D.Normal(ag.zeros(2, device=cuda), 1.0).perplexity().sum().item())
