"""actorgrad.distributions against their textbook formulas: log densities, entropies, moments, CDFs and KL
divergences written out in numpy and `math` (no number comes from torch or from actorgrad), their gradients against
central differences of those formulas and by gradcheck (log densities, reparameterized samples), the implicit
gradients of gamma and Dirichlet samples against the implicit derivative of the incomplete gamma and beta functions,
sampling shapes, reproducibility and statistics, and argument validation."""

from __future__ import annotations

import math
import statistics
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import distributions as D
from actorgrad.autograd import gradcheck
from actorgrad.distributions.gamma_gradients import dirichlet_grad, standard_gamma_grad

# name -> (build from the parameters, parameters, a value in the support)
CASES = {
    "Normal": (D.Normal, [[0.3, -1.2], [0.7, 2.0]], [0.1, 0.4]),
    "Uniform": (D.Uniform, [[0.3, -1.2], [0.7, 2.0]], [0.5, 0.4]),
    "Exponential": (D.Exponential, [[0.3, 2.2]], [0.5, 0.4]),
    "Laplace": (D.Laplace, [[0.3, -1.2], [0.7, 2.0]], [0.1, 0.4]),
    "Gamma": (D.Gamma, [[0.3, 2.2], [0.7, 2.0]], [0.1, 0.4]),
    "Beta": (D.Beta, [[0.3, 2.2], [0.7, 2.0]], [0.1, 0.4]),
    "Dirichlet": (D.Dirichlet, [[[0.3, 2.2, 1.5], [0.7, 2.0, 3.0]]], [[0.1, 0.4, 0.5], [0.2, 0.2, 0.6]]),
    "Bernoulli(probs)": (D.Bernoulli, [[0.3, 0.8]], [1.0, 0.0]),
    "Bernoulli(logits)": (lambda logits: D.Bernoulli(logits=logits), [[0.3, -0.8]], [1.0, 0.0]),
    "Categorical(probs)": (D.Categorical, [[[0.3, 0.8, 0.1], [0.2, 0.2, 0.5]]], [2.0, 0.0]),
    "Categorical(logits)": (lambda logits: D.Categorical(logits=logits), [[[0.3, 0.8, 0.1], [0.2, 0.2, 0.5]]],
                            [2.0, 0.0]),
    "OneHotCategorical": (D.OneHotCategorical, [[[0.3, 0.8, 0.1], [0.2, 0.2, 0.5]]], [[0, 0, 1.0], [1, 0, 0.0]]),
    "Independent": (lambda loc, scale: D.Independent(D.Normal(loc, scale), 1),
                    [[[0.3, -1.2], [0.5, 0.1]], [[0.7, 2.0], [1.0, 3.0]]], [0.1, 0.4]),
}
KL_CASES = {
    "Normal": (D.Normal, [[0.3, -1.2], [0.7, 2.0]], [[0.1, 0.2], [1.5, 0.5]]),
    "Uniform": (D.Uniform, [[0.3, -1.2], [0.7, 2.0]], [[0.1, -0.2], [1.5, 2.5]]),
    "Exponential": (D.Exponential, [[0.3, 1.2]], [[1.1, 0.2]]),
    "Laplace": (D.Laplace, [[0.3, -1.2], [0.7, 2.0]], [[0.1, 0.2], [1.5, 0.5]]),
    "Gamma": (D.Gamma, [[0.3, 1.2], [0.7, 2.0]], [[1.1, 0.2], [1.5, 0.5]]),
    "Beta": (D.Beta, [[0.3, 1.2], [0.7, 2.0]], [[1.1, 0.2], [1.5, 0.5]]),
    "Bernoulli": (D.Bernoulli, [[0.3, 0.9]], [[0.6, 0.2]]),
    "Categorical": (D.Categorical, [[[0.3, 0.9, 0.2]]], [[[0.6, 0.2, 0.1]]]),
    "OneHotCategorical": (D.OneHotCategorical, [[[0.3, 0.9, 0.2]]], [[[0.6, 0.2, 0.1]]]),
    "Dirichlet": (D.Dirichlet, [[[0.3, 0.9, 0.2]]], [[[0.6, 0.2, 0.1]]]),
    "Independent": (lambda loc, scale: D.Independent(D.Normal(loc, scale), 1), [[[0.3, -1.2]], [[0.7, 2.0]]],
                    [[[0.1, 0.2]], [[1.5, 0.5]]]),
}
CDF_CASES = ["Normal", "Uniform", "Exponential", "Laplace"]
ICDF_AT = np.array([0.2, 0.9])


# -- the references: each distribution's documented formulas in numpy and math ---------------------------------------
LOG_2PI = math.log(2 * math.pi)
lgamma = np.vectorize(math.lgamma, otypes=[np.float64])
erf = np.vectorize(math.erf, otypes=[np.float64])
standard_normal_quantile = np.vectorize(statistics.NormalDist().inv_cdf, otypes=[np.float64])


def digamma(x) -> np.ndarray:
    """psi(x) for x > 0: the recurrence psi(x) = psi(x + 1) - 1 / x up to x >= 10, then the asymptotic series."""
    x = np.array(x, dtype=np.float64)
    shift = np.zeros_like(x)
    while (x < 10).any():
        shift = shift - np.where(x < 10, 1 / x, 0.0)
        x = np.where(x < 10, x + 1, x)
    inv2 = 1 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    return shift + np.log(x) - 0.5 / x - series


def lbeta(a, b):
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def normal(loc, scale, x):
    return {"log_prob": -((x - loc) ** 2) / (2 * scale**2) - np.log(scale) - LOG_2PI / 2,
            "entropy": 0.5 + LOG_2PI / 2 + np.log(scale), "mean": loc, "variance": scale**2,
            "cdf": (1 + erf((x - loc) / (scale * math.sqrt(2)))) / 2,
            "icdf": loc + scale * standard_normal_quantile(ICDF_AT)}


def uniform(low, high, x):
    width = high - low
    return {"log_prob": -np.log(width), "entropy": np.log(width), "mean": (low + high) / 2, "variance": width**2 / 12,
            "cdf": np.clip((x - low) / width, 0, 1), "icdf": low + ICDF_AT * width}


def exponential(rate, x):
    return {"log_prob": np.log(rate) - rate * x, "entropy": 1 - np.log(rate), "mean": 1 / rate,
            "variance": rate**-2.0, "cdf": -np.expm1(-rate * x), "icdf": -np.log1p(-ICDF_AT) / rate}


def laplace(loc, scale, x):
    z = (x - loc) / scale
    return {"log_prob": -np.log(2 * scale) - np.abs(z), "entropy": 1 + np.log(2 * scale), "mean": loc,
            "variance": 2 * scale**2, "cdf": np.where(z < 0, np.exp(z) / 2, 1 - np.exp(-z) / 2),
            "icdf": loc + scale * np.where(ICDF_AT < 0.5, np.log(2 * ICDF_AT), -np.log(2 - 2 * ICDF_AT))}


def gamma(concentration, rate, x):
    a = concentration
    return {"log_prob": a * np.log(rate) + (a - 1) * np.log(x) - rate * x - lgamma(a),
            "entropy": a - np.log(rate) + lgamma(a) + (1 - a) * digamma(a), "mean": a / rate, "variance": a / rate**2}


def beta(a, b, x):
    return {"log_prob": (a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - lbeta(a, b),
            "entropy": lbeta(a, b) - (a - 1) * digamma(a) - (b - 1) * digamma(b) + (a + b - 2) * digamma(a + b),
            "mean": a / (a + b), "variance": a * b / ((a + b) ** 2 * (a + b + 1))}


def dirichlet(c, x):
    total = c.sum(-1, keepdims=True)
    log_norm = lgamma(c).sum(-1) - lgamma(total[..., 0])
    return {"log_prob": ((c - 1) * np.log(x)).sum(-1) - log_norm,
            "entropy": log_norm + (total[..., 0] - c.shape[-1]) * digamma(total[..., 0])
            - ((c - 1) * digamma(c)).sum(-1),
            "mean": c / total, "variance": c * (total - c) / (total**2 * (total + 1))}


def bernoulli(p, x):
    return {"log_prob": x * np.log(p) + (1 - x) * np.log1p(-p), "entropy": -p * np.log(p) - (1 - p) * np.log1p(-p),
            "mean": p, "variance": p * (1 - p)}


def categorical(p, x, one_hot: bool = False):
    p = p / p.sum(-1, keepdims=True)
    index = (x.argmax(-1) if one_hot else x).astype(np.int64)
    result = {"log_prob": np.log(np.take_along_axis(p, index[..., None], -1))[..., 0],
              "entropy": -(p * np.log(p)).sum(-1)}
    return result | ({"mean": p, "variance": p * (1 - p)} if one_hot else {})


def independent_normal(loc, scale, x):
    parts = normal(loc, scale, x)
    return {"log_prob": parts["log_prob"].sum(-1), "entropy": parts["entropy"].sum(-1), "mean": loc,
            "variance": scale**2}


FORMULAS = {
    "Normal": normal, "Uniform": uniform, "Exponential": exponential, "Laplace": laplace, "Gamma": gamma,
    "Beta": beta, "Dirichlet": dirichlet, "Bernoulli(probs)": bernoulli,
    "Bernoulli(logits)": lambda logits, x: bernoulli(sigmoid(logits), x),
    "Categorical(probs)": categorical, "Categorical(logits)": lambda logits, x: categorical(softmax(logits), x),
    "OneHotCategorical": lambda p, x: categorical(p, x, one_hot=True), "Independent": independent_normal,
}


def normal_kl(mp, sp, mq, sq):
    return np.log(sq / sp) + (sp**2 + (mp - mq) ** 2) / (2 * sq**2) - 0.5


def uniform_kl(lp, hp, lq, hq):
    """log of the width ratio where q's interval holds p's, else infinite."""
    inside = (lq <= lp) & (hp <= hq)
    return np.where(inside, np.log((hq - lq) / (hp - lp)), np.inf)


def gamma_kl(ap, rp, aq, rq):
    return ((ap - aq) * digamma(ap) - lgamma(ap) + lgamma(aq) + aq * (np.log(rp) - np.log(rq))
            + ap * (rq - rp) / rp)


def beta_kl(ap, bp, aq, bq):
    return (lbeta(aq, bq) - lbeta(ap, bp) + (ap - aq) * digamma(ap) + (bp - bq) * digamma(bp)
            + (aq - ap + bq - bp) * digamma(ap + bp))


def categorical_kl(p, q):
    p, q = p / p.sum(-1, keepdims=True), q / q.sum(-1, keepdims=True)
    return (p * np.log(p / q)).sum(-1)


def dirichlet_kl(a, b):
    a0, b0 = a.sum(-1), b.sum(-1)
    return (lgamma(a0) - lgamma(a).sum(-1) - lgamma(b0) + lgamma(b).sum(-1)
            + ((a - b) * (digamma(a) - digamma(a0)[..., None])).sum(-1))


KL_FORMULAS = {
    "Normal": normal_kl, "Uniform": uniform_kl,
    "Exponential": lambda rp, rq: np.log(rp / rq) + rq / rp - 1,
    "Laplace": lambda mp, bp, mq, bq: (np.log(bq / bp) + np.abs(mp - mq) / bq
                                       + bp / bq * np.exp(-np.abs(mp - mq) / bp) - 1),
    "Gamma": gamma_kl, "Beta": beta_kl,
    "Bernoulli": lambda p, q: p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q)),
    "Categorical": categorical_kl, "OneHotCategorical": categorical_kl, "Dirichlet": dirichlet_kl,
    "Independent": lambda mp, sp, mq, sq: normal_kl(mp, sp, mq, sq).sum(-1),
}


def gradients(numpy_gradient, f, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """The gradient of the scalar f(*arrays) with respect to each array, by central differences."""
    def moving(i):
        return lambda x: f(*arrays[:i], x, *arrays[i + 1:])

    return [numpy_gradient(moving(i), x) for i, x in enumerate(arrays)]


def f64(values, requires_grad: bool = True) -> ag.Tensor:
    return ag.tensor(values, dtype=ag.float64, requires_grad=requires_grad)


def assert_close(got, expected, rtol: float = 1e-12, atol: float = 1e-14) -> None:
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), np.asarray(expected), rtol=rtol, atol=atol)


def assert_grads(grads, expected) -> None:
    """Against central differences of the formulas (truncation and rounding near 1e-9)."""
    for got, want in zip(grads, expected, strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-7, atol=1e-8)


def sample_cases():
    """One distribution of each kind, batched, in float64."""
    return {name: build(*(f64(p, requires_grad=False) for p in params)) for name, (build, params, _) in CASES.items()}


# -- values and gradients against the formulas ---------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_log_prob_entropy_and_moments_follow_their_formulas(name, numpy_gradient):
    build, params, value = CASES[name]
    arrays, x = [np.array(p) for p in params], np.array(value)
    expected = FORMULAS[name](*arrays, x)
    leaves = [f64(p) for p in params]
    dist = build(*leaves)
    log_prob = dist.log_prob(f64(value, requires_grad=False))
    entropy = dist.entropy()
    assert_close(log_prob, expected["log_prob"])
    assert_close(entropy, expected["entropy"])
    for moment in ("mean", "variance"):
        if moment in expected:
            assert_close(getattr(dist, moment), np.broadcast_to(expected[moment], dist.batch_shape + dist.event_shape))

    def score(*values):
        formulas = FORMULAS[name](*values, x)
        return formulas["log_prob"].sum() + formulas["entropy"].sum()

    assert_grads(ag.autograd.grad(log_prob.sum() + entropy.sum(), leaves), gradients(numpy_gradient, score, arrays))


@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_divergence_and_its_gradient_follow_the_closed_form(name, numpy_gradient):
    build, p_params, q_params = KL_CASES[name]
    arrays = [np.array(v) for v in p_params + q_params]
    p_leaves, q_leaves = [f64(v) for v in p_params], [f64(v) for v in q_params]
    kl = D.kl_divergence(build(*p_leaves), build(*q_leaves))
    assert_close(kl, KL_FORMULAS[name](*arrays))

    def finite_sum(*values):  # an infinite divergence is a constant: it adds no gradient
        divergence = KL_FORMULAS[name](*values)
        return np.where(np.isinf(divergence), 0.0, divergence).sum()

    assert_grads(ag.autograd.grad(kl.sum(), p_leaves + q_leaves), gradients(numpy_gradient, finite_sum, arrays))


@pytest.mark.parametrize("name", CDF_CASES)
def test_cdf_and_icdf_follow_their_formulas(name, numpy_gradient):
    build, params, value = CASES[name]
    arrays, x = [np.array(p) for p in params], np.array(value)
    expected = FORMULAS[name](*arrays, x)
    leaves = [f64(p) for p in params]
    dist = build(*leaves)
    cdf, icdf = dist.cdf(f64(value, requires_grad=False)), dist.icdf(f64(ICDF_AT, requires_grad=False))
    assert_close(cdf, expected["cdf"])
    assert_close(icdf, expected["icdf"])

    def total(*values):
        formulas = FORMULAS[name](*values, x)
        return formulas["cdf"].sum() + formulas["icdf"].sum()

    assert_grads(ag.autograd.grad(cdf.sum() + icdf.sum(), leaves), gradients(numpy_gradient, total, arrays))


def test_kl_divergence_is_infinite_or_zero_at_the_edges():
    # Bernoulli: KL(0 || 1/2) = KL(1 || 1/2) = log 2; a q of 0 or 1 against p = 0.3 puts no mass where p has some
    bernoulli = D.kl_divergence(D.Bernoulli(f64([0.0, 1.0, 0.3, 0.3])), D.Bernoulli(f64([0.5, 0.5, 0.0, 1.0])))
    assert_close(bernoulli, [math.log(2), math.log(2), math.inf, math.inf])
    categorical = D.kl_divergence(D.Categorical(f64([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]])),
                                  D.Categorical(f64([[0.2, 0.0, 0.8], [0.2, 0.3, 0.5]])))
    assert_close(categorical, [math.inf, 0.0])
    # U(0, 1) against U(0.5, 2): p has mass outside q; against U(-1, 2): log of the widths' ratio 3 / 1
    uniform = D.kl_divergence(D.Uniform(f64([0.0, 0.0]), f64([1.0, 1.0])), D.Uniform(f64([0.5, -1.0]), f64([2.0, 2.0])))
    assert_close(uniform, [math.inf, math.log(3)])


def test_modes_are_the_densities_peaks_with_pytorchs_conventions():
    # Bernoulli: the likelier outcome, NaN at a tie (PyTorch's choice)
    assert_close(D.Bernoulli(f64([0.2, 0.5, 0.7])).mode, [0.0, math.nan, 1.0])
    # Beta: (a - 1) / (a + b - 2) = 2 / 5 for (3, 4); the end where the density is unbounded when one concentration
    # is below 1; when both are, the Dirichlet's corner of the first largest clamped concentration - 1 (both 0: 1.0)
    assert_close(D.Beta(f64([0.3, 2.0, 0.5, 3.0]), f64([0.7, 0.5, 2.0, 4.0])).mode, [1.0, 1.0, 0.0, 0.4])
    # Gamma: (concentration - 1) / rate, clamped at 0: 0 and 1 / 3
    assert_close(D.Gamma(f64([0.3, 2.0]), f64([0.7, 3.0])).mode, [0.0, 1 / 3])
    assert D.Categorical(f64([[0.3, 0.5, 0.2], [0.6, 0.1, 0.3]])).mode.tolist() == [1, 0]
    assert_close(D.OneHotCategorical(f64([0.3, 0.5, 0.2])).mode, [0.0, 1.0, 0.0])
    assert np.isnan(D.Uniform(0.0, 1.0).mode.item())


def test_categorical_entropy_is_finite_with_a_zero_probability():
    assert_close(D.Categorical(f64([0.0, 0.5, 0.5])).entropy(), math.log(2))  # two equally likely outcomes


def test_categorical_log_prob_broadcasts_values_against_the_batch():
    dist = D.Categorical(f64([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]))
    log_prob = dist.log_prob(ag.tensor([[0], [2], [1]]))
    assert_close(log_prob, np.log([[0.2, 0.1], [0.5, 0.8], [0.3, 0.1]]))


# -- gradients by finite differences ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_log_prob_and_entropy_pass_gradcheck(name):
    build, params, value = CASES[name]
    fixed = f64(value, requires_grad=False)

    def scores(*leaves):
        dist = build(*leaves)
        return dist.log_prob(fixed), dist.entropy()

    assert gradcheck(scores, [f64(p) for p in params])


@pytest.mark.parametrize("name", ["Normal", "Uniform", "Exponential", "Laplace", "Independent"])
def test_rsample_passes_gradcheck(name):
    build, params, _ = CASES[name]

    def sample(*leaves):
        ag.manual_seed(7)  # the same noise on every call
        return build(*leaves).rsample((3,))

    assert gradcheck(sample, [f64(p) for p in params])


@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_divergence_passes_gradcheck(name):
    build, p_params, q_params = KL_CASES[name]
    if name == "Uniform":  # q's interval must hold p's for a finite divergence
        q_params = [[0.1, -1.5], [1.5, 2.5]]
    n = len(p_params)
    assert gradcheck(lambda *leaves: D.kl_divergence(build(*leaves[:n]), build(*leaves[n:])),
                     [f64(v) for v in p_params + q_params])

# -- the implicit reparameterization gradients of gamma and Dirichlet samples --------------------------------------
def gamma_cdf(a, x):
    """The regularized lower incomplete gamma P(a, x) = e^-x sum_n x^(a+n) / Gamma(a+n+1): positive terms only
    (its derivative loses digits where P is near 1, far in the upper tail: the points below stay under 0.99)."""
    n = np.arange(400)[:, None]
    return np.exp(-x + (a + n) * np.log(x) - lgamma(a + n + 1)).sum(0)


def beta_cdf(a, b, x):
    """The regularized incomplete beta I_x(a, b) = x^a (1-x)^b / (a B(a, b)) sum_n (a+b)_n / (a+1)_n x^n."""
    n = np.arange(3000)[:, None]
    log_terms = lgamma(a + b + n) - lgamma(a + b) - lgamma(a + 1 + n) + lgamma(a + 1) + n * np.log(x)
    prefix = a * np.log(x) + b * np.log1p(-x) - np.log(a) - lbeta(a, b)
    return np.exp(prefix + log_terms).sum(0)


def derivative(f, x, h):
    """f'(x) by Richardson's extrapolation of two central differences (error of order h^4)."""
    return (8 * (f(x + h / 2) - f(x - h / 2)) - (f(x + h) - f(x - h))) / (6 * h)


# (alpha, x, rtol), through PyTorch's branches: x < 0.8 (a six-term series: exact at x = 0.05, about 1e-5 off at
# 0.5), alpha > 8 near and away from the mean (saddle point expansions) and elsewhere a fitted rational function;
# the approximations are good to about 1e-4 (measured: up to 6e-5 off).
GAMMA_POINTS = ([0.3, 0.3, 2.5, 2.5, 20.0, 20.0, 20.0, 5.0], [0.05, 1.5, 0.5, 4.0, 19.5, 10.0, 30.0, 3.0],
                [1e-10, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4])
# (x, alpha, total, rtol): near 0 and near 1 (series, exact), both concentrations above 6 (saddle point expansion, near
# and away from the mean) and the fitted rational correction (measured: up to 5e-4 off)
DIRICHLET_POINTS = ([0.05, 0.95, 0.52, 0.335, 0.4, 0.7], [0.5, 3.0, 10.0, 10.0, 4.0, 0.8],
                    [1.5, 3.5, 20.0, 30.0, 14.0, 5.0], [1e-9, 1e-9, 1e-3, 1e-3, 1e-3, 1e-3])


def test_the_gamma_sample_gradient_is_the_implicit_derivative_in_each_region():
    """d x / d alpha = -(d P(alpha, x) / d alpha) / pdf(x), within each branch's accuracy."""
    alpha, x, rtol = (np.array(v) for v in GAMMA_POINTS)
    pdf = np.exp((alpha - 1) * np.log(x) - x - lgamma(alpha))
    expected = -derivative(lambda a: gamma_cdf(a, x), alpha, 1e-3 * alpha) / pdf
    got = standard_gamma_grad(np, alpha, x)
    assert (np.abs(got / expected - 1) <= rtol).all(), (got, expected)


def test_the_dirichlet_sample_gradient_is_the_implicit_derivative_in_each_region():
    """For a component x of marginal Beta(alpha, total - alpha): (1 - x) dirichlet_grad = d x / d alpha with the other
    concentrations held, -(d I_x(alpha, beta) / d alpha) / pdf(x), within each branch's accuracy."""
    x, alpha, total, rtol = (np.array(v) for v in DIRICHLET_POINTS)
    b = total - alpha
    pdf = np.exp((alpha - 1) * np.log(x) + (b - 1) * np.log1p(-x) - lbeta(alpha, b))
    expected = -derivative(lambda a: beta_cdf(a, b, x), alpha, 1e-3 * alpha) / pdf
    got = dirichlet_grad(np, x, alpha, total) * (1 - x)
    assert (np.abs(got / expected - 1) <= rtol).all(), (got, expected)


def test_gamma_rsample_differentiates_by_the_implicit_gradient_at_its_sample():
    concentration, rate = f64([0.3, 2.2, 9.0]), f64([0.7, 2.0, 1.5])
    ag.manual_seed(1)
    value = D.Gamma(concentration, rate).rsample((4,))
    value.sum().backward()
    x, r = value.detach().numpy(), rate.detach().numpy()
    alpha = np.broadcast_to(concentration.detach().numpy(), x.shape)
    np.testing.assert_allclose(concentration.grad.numpy(), (standard_gamma_grad(np, alpha, x * r) / r).sum(0),
                               rtol=1e-12)
    np.testing.assert_allclose(rate.grad.numpy(), (-x / r).sum(0), rtol=1e-12)


def test_beta_rsample_differentiates_by_the_dirichlet_gradient_at_its_sample():
    a, b = f64([0.3, 2.2, 9.0]), f64([0.7, 2.0, 8.5])
    ag.manual_seed(1)
    value = D.Beta(a, b).rsample((4,))
    weights = np.arange(12.0).reshape(4, 3)
    (value * ag.tensor(weights)).sum().backward()
    x, a0, b0 = value.detach().numpy(), a.detach().numpy(), b.detach().numpy()
    # the sample's first component moves with a by the Dirichlet gradient times (1 - x), with b through the second
    np.testing.assert_allclose(a.grad.numpy(), (dirichlet_grad(np, x, a0, a0 + b0) * weights * (1 - x)).sum(0),
                               rtol=1e-9)
    np.testing.assert_allclose(b.grad.numpy(), (-dirichlet_grad(np, 1 - x, b0, a0 + b0) * weights * x).sum(0),
                               rtol=1e-9)


def test_the_implicit_gradients_are_unbiased_for_the_mean():
    """d E[x] / d parameter, averaged over many samples: 1 / rate for a gamma's concentration, b / (a + b)**2 and
    -a / (a + b)**2 for a beta's."""
    ag.manual_seed(0)
    concentration, rate = f64([0.4, 3.0]), f64([1.0, 2.0])
    D.Gamma(concentration, rate).rsample((20000,)).mean(0).sum().backward()
    np.testing.assert_allclose(concentration.grad.numpy(), [1.0, 0.5], rtol=0.03)
    np.testing.assert_allclose(rate.grad.numpy(), [-0.4, -0.75], rtol=0.03)
    a, b = f64([0.5, 4.0]), f64([2.0, 3.0])
    D.Beta(a, b).rsample((20000,)).mean(0).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0 / 6.25, 3.0 / 49.0], rtol=0.03)
    np.testing.assert_allclose(b.grad.numpy(), [-0.5 / 6.25, -4.0 / 49.0], rtol=0.03)


def test_gamma_samples_are_clamped_above_zero():
    ag.manual_seed(0)
    sample = D.Gamma(f64([1e-3], requires_grad=False), f64([1.0], requires_grad=False)).sample((200,))
    assert (sample.numpy() >= np.finfo(np.float64).tiny).all()
    ag.manual_seed(0)
    sample = D.Beta(f64([1e-3]), f64([1e-3])).sample((200,))
    assert ((sample.numpy() > 0) & (sample.numpy() < 1)).all()


# -- sampling ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("sample_shape", [(), (3,), (2, 4)])
def test_samples_have_sample_batch_and_event_shape(name, sample_shape):
    dist = sample_cases()[name]
    expected = sample_shape + dist.batch_shape + dist.event_shape
    sample = dist.sample(sample_shape)
    assert sample.shape == expected and not sample.requires_grad
    assert dist.log_prob(sample).shape == sample_shape + dist.batch_shape
    if dist.has_rsample:
        assert dist.rsample(sample_shape).shape == expected
    wider = dist.expand((5,) + dist.batch_shape)
    assert wider.batch_shape == (5,) + dist.batch_shape and wider.event_shape == dist.event_shape
    assert wider.sample(sample_shape).shape == sample_shape + (5,) + expected[len(sample_shape):]


def test_batch_and_event_shapes():
    assert D.Normal(0.0, 1.0).batch_shape == () and D.Normal(ag.zeros(3), 1.0).batch_shape == (3,)
    assert D.Normal(ag.zeros(3, 1), ag.ones(2)).batch_shape == (3, 2)
    assert D.Dirichlet(ag.ones(4, 3)).batch_shape == (4,) and D.Dirichlet(ag.ones(4, 3)).event_shape == (3,)
    assert D.OneHotCategorical(ag.ones(4, 3)).event_shape == (3,)
    assert D.Categorical(ag.ones(4, 3)).batch_shape == (4,) and D.Categorical(ag.ones(4, 3)).event_shape == ()
    diagonal = D.Independent(D.Normal(ag.zeros(2, 3), ag.ones(2, 3)), 1)
    assert (diagonal.batch_shape, diagonal.event_shape) == ((2,), (3,))
    assert repr(diagonal.support) == "IndependentConstraint(Real(), 1)"


@pytest.mark.parametrize("name", list(CASES))
def test_samples_repeat_under_manual_seed(name):
    dist = sample_cases()[name]
    draws = []
    for seed in (3, 3, 4):
        ag.manual_seed(seed)
        draws.append(dist.sample((50,)).numpy())
    assert np.array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], draws[2])


@pytest.mark.parametrize("name", [n for n in CASES if not n.startswith("Categorical")])
def test_sample_means_and_deviations_match_the_distributions(name):
    """A fixed seed and bounds of about six standard errors: the check cannot flake, and a wrong sampler (a
    swapped parameter, a wrong scale) misses by far more."""
    dist = sample_cases()[name]
    ag.manual_seed(0)
    draws = dist.sample((20000,)).numpy()
    mean, std = dist.mean.detach().numpy(), dist.stddev.detach().numpy()
    np.testing.assert_allclose(draws.mean(0), mean, atol=float(6 * std.max() / math.sqrt(20000)))
    np.testing.assert_allclose(draws.std(0), std, rtol=0.05)


def test_categorical_samples_follow_the_probabilities():
    ag.manual_seed(0)
    draws = D.Categorical(f64([[0.3, 0.6, 0.1], [0.2, 0.2, 0.6]])).sample((20000,)).numpy()
    frequencies = np.stack([(draws == k).mean(0) for k in range(3)], -1)
    np.testing.assert_allclose(frequencies, [[0.3, 0.6, 0.1], [0.2, 0.2, 0.6]], atol=0.02)


def test_enumerate_support():
    assert D.Bernoulli(ag.ones(2) / 2).enumerate_support().tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert D.Categorical(ag.ones(2, 3)).enumerate_support(expand=False).tolist() == [[0], [1], [2]]
    one_hot = D.OneHotCategorical(ag.ones(2, 3)).enumerate_support()
    assert one_hot.shape == (3, 2, 3) and one_hot[1, 0].tolist() == [0.0, 1.0, 0.0]


# -- parameters ---------------------------------------------------------------------------------------------------
def test_numbers_give_default_dtype_scalars_and_tensors_set_the_dtype():
    dist = D.Normal(0.0, 1)
    assert dist.loc.dtype == ag.float32 and dist.scale.dtype == ag.float32 and dist.batch_shape == ()
    assert D.Normal(f64([0.0]), 2).scale.dtype == ag.float64
    assert D.Beta(2.0, 3.0).concentration1.item() == 2.0 and D.Beta(2.0, 3.0).batch_shape == ()
    assert repr(dist) == "Normal(loc: 0.0, scale: 1.0)"


def test_probs_and_logits_derive_each_other_and_normalize():
    bernoulli = D.Bernoulli(probs=f64([0.25]))
    assert "logits" not in vars(bernoulli)
    assert_close(bernoulli.logits, [math.log(1 / 3)])
    categorical = D.Categorical(f64([1.0, 3.0]))
    assert_close(categorical.probs, [0.25, 0.75])
    assert_close(categorical.logits, np.log([0.25, 0.75]))
    assert_close(D.Categorical(logits=f64([0.0, 0.0])).probs, [0.5, 0.5])


# -- validation ----------------------------------------------------------------------------------------------------
def test_invalid_parameters_raise_torchs_error():
    with pytest.raises(ValueError, match=r"^Expected parameter scale \(Tensor of shape \(2,\)\) of distribution "
                                         r"Normal\(loc: .*, scale: .*\) to satisfy the constraint "
                                         r"GreaterThan\(lower_bound=0\.0\), but found invalid values:\n"
                                         r"tensor\(\[ 1\., -1\.\]\)$"):
        D.Normal(ag.zeros(2), ag.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"^Expected parameter scale \(Tensor of shape \(\)\) of distribution "
                                         r"Normal\(loc: 0\.0, scale: -1\.0\)"):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError, match=r"constraint LessThan\(upper_bound=tensor\(\[1\.0000, 0\.5000\]\)\)"):
        D.Uniform(ag.tensor([0.0, 1.0]), ag.tensor([1.0, 0.5]))
    with pytest.raises(ValueError, match=r"^Expected parameter probs .* Simplex\(\)"):
        D.Categorical(ag.tensor([0.3, -0.3]))
    with pytest.raises(ValueError, match=r"^Expected parameter concentration .* "
                                         r"IndependentConstraint\(GreaterThan\(lower_bound=0\.0\), 1\)"):
        D.Beta(ag.tensor([0.3, -0.7]), 1.0)
    with pytest.raises(ValueError, match=r"^Expected parameter probs .* Interval\(lower_bound=0\.0, "
                                         r"upper_bound=1\.0\)"):
        D.Bernoulli(ag.tensor([1.5]))


@pytest.mark.parametrize("dist, value, support", [
    (lambda: D.Bernoulli(ag.tensor([0.3])), [0.5], r"Boolean\(\)"),
    (lambda: D.Exponential(ag.tensor([0.3, 0.7])), [-1.5, 0.5], r"GreaterThanEq\(lower_bound=0\.0\)"),
    (lambda: D.Beta(ag.tensor([0.3, 0.7]), 1.0), [1.5, 0.5], r"Interval\(lower_bound=0\.0, upper_bound=1\.0\)"),
    (lambda: D.Categorical(ag.tensor([0.3, 0.7])), [2.0], r"IntegerInterval\(lower_bound=0, upper_bound=1\)"),
    (lambda: D.OneHotCategorical(ag.tensor([0.3, 0.7])), [1.0, 1.0], r"OneHot\(\)"),
    (lambda: D.Uniform(ag.tensor([0.0, 1.0]), ag.tensor([1.0, 2.0])), [3.0, 1.0],
     r"Interval\(lower_bound=tensor\(\[0\., 1\.\]\), upper_bound=tensor\(\[1\., 2\.\]\)\)"),
    (lambda: D.Dirichlet(ag.tensor([0.3, 0.7])), [0.6, 0.6], r"Simplex\(\)"),
    (lambda: D.Normal(ag.zeros(2), 1.0), [math.nan, 0.5], r"Real\(\)"),
])
def test_log_prob_refuses_values_outside_the_support(dist, value, support):
    with pytest.raises(ValueError, match=rf"^Expected value argument \(Tensor of shape \({len(value)},\)\) to be "
                                         rf"within the support \({support}\) of the distribution"):
        dist().log_prob(ag.tensor(value))


def test_log_prob_refuses_values_of_the_wrong_shape_or_type():
    normal = D.Normal(ag.zeros(2), 1.0)
    with pytest.raises(ValueError, match=r"^Value is not broadcastable with batch_shape\+event_shape: \(3,\) vs "
                                         r"\(2,\)\.$"):
        normal.log_prob(ag.zeros(3))
    with pytest.raises(ValueError, match=r"^The right-most size of value must match event_shape: \(1,\) vs \(2,\)\.$"):
        D.Dirichlet(ag.ones(2)).log_prob(ag.ones(1))
    with pytest.raises(ValueError, match=r"^The value argument to log_prob must be a Tensor$"):
        normal.log_prob([0.0, 1.0])


def test_validation_can_be_turned_off():
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    assert D.Bernoulli(ag.tensor([0.3]), validate_args=False).log_prob(ag.tensor([0.5])).shape == (1,)
    D.Distribution.set_default_validate_args(False)
    try:
        assert D.Normal(0.0, -1.0).scale.item() == -1.0
        with pytest.raises(ValueError):
            D.Normal(0.0, -1.0, validate_args=True)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")
    assert D.Normal(0.0, 1.0, validate_args=False).expand((2,))._validate_args is False


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"^Either `probs` or `logits` must be specified, but not both\.$"):
        D.Bernoulli(ag.tensor([0.3]), ag.tensor([0.3]))
    with pytest.raises(ValueError, match=r"^`probs` parameter must be at least one-dimensional\.$"):
        D.Categorical(ag.tensor(0.3))
    with pytest.raises(ValueError, match=r"^Expected reinterpreted_batch_ndims <= len\(base_distribution"
                                         r"\.batch_shape\), actual 2 vs 1$"):
        D.Independent(D.Normal(ag.zeros(2), 1.0), 2)
    with pytest.raises(ValueError, match=r"^Input arguments must all be instances of Number"):
        D.Normal([0.0], 1.0)


# -- kl_divergence's registry ------------------------------------------------------------------------------------
def test_kl_divergence_refuses_an_unregistered_pair():
    with pytest.raises(NotImplementedError, match=r"^No KL\(p \|\| q\) is implemented for p type Normal and q type "
                                                  r"Cauchy$"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Cauchy(0.0, 1.0))
    with pytest.raises(TypeError, match=r"^Expected type_p to be a Distribution subclass"):
        D.register_kl(int, D.Normal)


def test_register_kl_picks_the_most_specific_pair():
    class Narrow(D.Normal):
        pass

    class Narrower(Narrow):
        pass

    @D.register_kl(Narrow, D.Normal)
    def narrow_normal(p, q):
        return ag.tensor(1.0)

    assert D.kl_divergence(Narrower(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 1.0  # a subclass inherits the pair
    assert D.kl_divergence(D.Normal(0.0, 1.0), Narrow(0.0, 2.0)).item() != 1.0  # the base Normal pair is kept

    @D.register_kl(D.Normal, Narrow)
    def normal_narrow(p, q):
        return ag.tensor(2.0)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        D.kl_divergence(Narrow(0.0, 1.0), Narrow(0.0, 1.0))
    assert any("Ambiguous kl_divergence(Narrow, Narrow)" in str(w.message) for w in caught)


# -- on cuda:0 (CuPy, or the stand-in in CI) --------------------------------------------------------------------------
@pytest.mark.gpu
def test_normal_log_prob_and_rsample_gradient_work_on_cuda():
    pytest.importorskip("cupy")
    results = []
    for device in (None, ag.device("cuda:0")):
        loc = ag.tensor([0.3, -1.2], dtype=ag.float64, device=device, requires_grad=True)
        scale = ag.tensor([0.7, 2.0], dtype=ag.float64, device=device, requires_grad=True)
        dist = D.Normal(loc, scale)
        ag.manual_seed(2)
        sample = dist.rsample((3,))
        log_prob = dist.log_prob(sample.detach())
        (sample * sample).sum().backward(inputs=[loc, scale])
        assert sample.device == log_prob.device == loc.grad.device == loc.device
        results.append([t.detach().cpu().numpy() for t in (sample, log_prob, loc.grad, scale.grad)])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.gpu
@pytest.mark.parametrize("family", [D.Gamma, D.Beta])
def test_gamma_and_beta_rsample_gradients_work_on_cuda(family):
    pytest.importorskip("cupy")
    results = []
    for device in (None, ag.device("cuda:0")):
        first = ag.tensor([0.3, 2.2, 9.0], dtype=ag.float64, device=device, requires_grad=True)
        second = ag.tensor([0.7, 2.0, 8.5], dtype=ag.float64, device=device, requires_grad=True)
        ag.manual_seed(2)
        sample = family(first, second).rsample((4,))
        sample.sum().backward()
        assert sample.device == first.grad.device == first.device
        results.append([t.detach().cpu().numpy() for t in (sample, first.grad, second.grad)])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
