"""actorgrad.distributions.transforms, TransformedDistribution and the distributions built on it (LogNormal,
HalfNormal, HalfCauchy, Gumbel, Weibull, Pareto, LogisticNormal) with Cauchy: values against closed forms written
here in numpy, log-Jacobians against numerical derivatives, gradients by gradcheck, sample statistics on fixed
seeds, KL divergences against numerical integration, and PyTorch's argument errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import distributions as D
from actorgrad.autograd import gradcheck
from actorgrad.distributions import transforms as T

EULER = 0.5772156649015329
erf = np.vectorize(math.erf)
gamma_fn = np.vectorize(math.gamma)


def f64(values, requires_grad: bool = False) -> ag.Tensor:
    return ag.tensor(values, dtype=ag.float64, requires_grad=requires_grad)


def assert_close(got, expected, rtol: float = 1e-12, atol: float = 1e-14) -> None:
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), np.asarray(expected, dtype=float), rtol=rtol,
                               atol=atol)


# -- closed forms, in numpy --------------------------------------------------------------------------------------
def normal_logpdf(x, loc, scale):
    return -0.5 * ((x - loc) / scale) ** 2 - np.log(scale) - 0.5 * math.log(2 * math.pi)


def normal_cdf(x, loc, scale):
    return 0.5 * (1 + erf((x - loc) / (scale * math.sqrt(2))))


def stick_fractions(y):
    """The fraction of the stick left that each of y's first K entries takes, and what is left after each."""
    left = 1 - np.cumsum(y[..., :-1], -1)
    return y[..., :-1] / (left + y[..., :-1]), left


def logistic_normal_logpdf(y, loc, scale):
    """x_i = logit(fraction_i) + log(K - i) is normal; dx_i/dy_i = 1 / y_i + 1 / left_i (a triangular Jacobian)."""
    fraction, left = stick_fractions(y)
    k = y.shape[-1] - 1
    x = np.log(fraction / (1 - fraction)) + np.log(np.arange(k, 0, -1))
    return (normal_logpdf(x, loc, scale) + np.log(1 / y[..., :-1] + 1 / left)).sum(-1)


def weibull_mode(scale, k):
    with np.errstate(invalid="ignore"):
        return np.where(k > 1, scale * ((k - 1) / k) ** (1 / k), np.nan)


# name -> build (from float64 tensors), parameters, a value in the support, and the closed forms in numpy of the
# parameters (as arrays): logpdf(x, *p), cdf(x, *p), mean, variance, mode, entropy (those the family has)
FAMILIES = {
    "LogNormal": dict(
        build=D.LogNormal, params=[[0.3, -1.2], [0.7, 2.0]], value=[0.5, 3.0],
        logpdf=lambda x, m, s: normal_logpdf(np.log(x), m, s) - np.log(x),
        cdf=lambda x, m, s: normal_cdf(np.log(x), m, s),
        mean=lambda m, s: np.exp(m + s**2 / 2), variance=lambda m, s: np.expm1(s**2) * np.exp(2 * m + s**2),
        mode=lambda m, s: np.exp(m - s**2), entropy=lambda m, s: m + 0.5 + 0.5 * np.log(2 * math.pi * s**2)),
    "HalfNormal": dict(
        build=D.HalfNormal, params=[[0.7, 2.0]], value=[0.5, 3.0],
        logpdf=lambda x, s: 0.5 * math.log(2 / math.pi) - np.log(s) - x**2 / (2 * s**2),
        cdf=lambda x, s: erf(x / (s * math.sqrt(2))),
        mean=lambda s: s * math.sqrt(2 / math.pi), variance=lambda s: s**2 * (1 - 2 / math.pi),
        mode=lambda s: 0 * s, entropy=lambda s: 0.5 * np.log(math.pi * math.e * s**2 / 2)),
    "HalfCauchy": dict(
        build=D.HalfCauchy, params=[[0.7, 2.0]], value=[0.5, 3.0],
        logpdf=lambda x, s: np.log(2 / (math.pi * s * (1 + (x / s) ** 2))),
        cdf=lambda x, s: 2 / math.pi * np.arctan(x / s),
        mean=lambda s: np.inf + s, variance=lambda s: np.inf + s, mode=lambda s: 0 * s,
        entropy=lambda s: np.log(2 * math.pi * s)),
    "Cauchy": dict(
        build=D.Cauchy, params=[[0.3, -1.2], [0.7, 2.0]], value=[0.5, 3.0],
        logpdf=lambda x, m, s: -np.log(math.pi * s * (1 + ((x - m) / s) ** 2)),
        cdf=lambda x, m, s: 0.5 + np.arctan((x - m) / s) / math.pi,
        mean=lambda m, s: np.nan + m, variance=lambda m, s: np.inf + m, mode=lambda m, s: m,
        entropy=lambda m, s: np.log(4 * math.pi * s)),
    "Gumbel": dict(
        build=D.Gumbel, params=[[0.3, -1.2], [0.7, 2.0]], value=[0.5, 3.0],
        logpdf=lambda x, m, s: -np.log(s) - (x - m) / s - np.exp(-(x - m) / s),
        cdf=lambda x, m, s: np.exp(-np.exp(-(x - m) / s)),
        mean=lambda m, s: m + s * EULER, variance=lambda m, s: (math.pi * s) ** 2 / 6, mode=lambda m, s: m,
        entropy=lambda m, s: np.log(s) + EULER + 1),
    "Weibull": dict(
        build=D.Weibull, params=[[0.7, 2.0], [0.6, 3.0]], value=[0.5, 3.0],
        logpdf=lambda x, s, k: np.log(k / s) + (k - 1) * np.log(x / s) - (x / s) ** k,
        cdf=lambda x, s, k: -np.expm1(-((x / s) ** k)),
        mean=lambda s, k: s * gamma_fn(1 + 1 / k),
        variance=lambda s, k: s**2 * (gamma_fn(1 + 2 / k) - gamma_fn(1 + 1 / k) ** 2),
        mode=weibull_mode, entropy=lambda s, k: EULER * (1 - 1 / k) + np.log(s / k) + 1),
    "Pareto": dict(
        build=D.Pareto, params=[[0.7, 2.0], [0.8, 3.0]], value=[1.5, 3.0],
        logpdf=lambda x, s, a: np.log(a) + a * np.log(s) - (a + 1) * np.log(x),
        cdf=lambda x, s, a: 1 - (s / x) ** a,
        mean=lambda s, a: np.where(a > 1, a * s / np.maximum(a - 1, 1e-300), np.inf),
        variance=lambda s, a: np.where(a > 2, s**2 * a / ((a - 1) ** 2 * np.maximum(a - 2, 1e-300)), np.inf),
        mode=lambda s, a: s, entropy=lambda s, a: np.log(s / a) + 1 + 1 / a),
    "LogisticNormal": dict(
        build=D.LogisticNormal, params=[[0.3, -1.2, 0.5], [0.7, 2.0, 1.0]], value=[0.2, 0.3, 0.4, 0.1],
        logpdf=lambda y, m, s: logistic_normal_logpdf(y, m, s)),
}
WITH_CDF = [name for name, case in FAMILIES.items() if "cdf" in case]
FINITE_MOMENTS = ["LogNormal", "HalfNormal", "Gumbel", "Weibull"]


def build(name: str):
    case = FAMILIES[name]
    return case["build"](*(f64(p) for p in case["params"]))


def numpy_params(name: str) -> list[np.ndarray]:
    return [np.array(p) for p in FAMILIES[name]["params"]]


# -- the families' values against closed forms ---------------------------------------------------------------------
@pytest.mark.parametrize("name", list(FAMILIES))
def test_log_prob_equals_the_closed_form_density(name):
    dist = build(name)
    value = np.array(FAMILIES[name]["value"])
    assert_close(dist.log_prob(f64(value)), FAMILIES[name]["logpdf"](value, *numpy_params(name)))


@pytest.mark.parametrize("name", WITH_CDF)
def test_cdf_equals_the_closed_form_and_icdf_inverts_it(name):
    dist = build(name)
    case, params = FAMILIES[name], numpy_params(name)
    value = np.array(case["value"])
    assert_close(dist.cdf(f64(value)), case["cdf"](value, *params))
    probs = np.array([[0.05, 0.2], [0.5, 0.5], [0.9, 0.99]])
    quantiles = dist.icdf(f64(probs)).numpy()
    np.testing.assert_allclose(case["cdf"](quantiles, *params), probs, rtol=1e-11)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # an infinite mean or a nan mode comes silently
@pytest.mark.parametrize("name", [n for n in FAMILIES if "mean" in FAMILIES[n]])
def test_mean_variance_mode_and_entropy_equal_the_closed_forms(name):
    dist = build(name)
    case, params = FAMILIES[name], numpy_params(name)
    for prop in ("mean", "variance", "mode"):
        assert_close(getattr(dist, prop), case[prop](*params))
    assert_close(dist.entropy(), case["entropy"](*params))


def test_gumbel_stddev_and_pareto_support_follow_the_parameters():
    gumbel = build("Gumbel")
    assert_close(gumbel.stddev, math.pi / math.sqrt(6) * np.array([0.7, 2.0]))
    pareto = build("Pareto")
    assert repr(pareto.support) == "GreaterThanEq(lower_bound=tensor([0.7000, 2.0000], dtype=actorgrad.float64))"
    assert pareto.support.check(f64([0.69, 2.0])).tolist() == [False, True]


def test_half_distributions_give_minus_infinity_below_zero_without_validation():
    for dist in (D.HalfNormal(f64([1.0]), validate_args=False), D.HalfCauchy(f64([1.0]), validate_args=False)):
        assert dist.log_prob(f64([-0.5])).item() == -math.inf


# -- gradients by finite differences -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(FAMILIES))
def test_log_prob_and_entropy_pass_gradcheck(name):
    case = FAMILIES[name]
    value = f64(case["value"])

    def scores(*leaves):
        dist = case["build"](*leaves)
        return (dist.log_prob(value), dist.entropy()) if "entropy" in case else dist.log_prob(value)

    assert gradcheck(scores, [f64(p, requires_grad=True) for p in case["params"]])


@pytest.mark.parametrize("name", list(FAMILIES))
def test_rsample_passes_gradcheck(name):
    case = FAMILIES[name]

    def sample(*leaves):
        ag.manual_seed(7)  # the same noise on every call
        return case["build"](*leaves).rsample((3,))

    assert build(name).has_rsample
    assert gradcheck(sample, [f64(p, requires_grad=True) for p in case["params"]])


@pytest.mark.parametrize("name", WITH_CDF)
def test_cdf_and_icdf_pass_gradcheck(name):
    case = FAMILIES[name]
    value, probs = f64(case["value"]), f64([0.2, 0.7])

    def both(*leaves):
        dist = case["build"](*leaves)
        return dist.cdf(value), dist.icdf(probs)

    assert gradcheck(both, [f64(p, requires_grad=True) for p in case["params"]])


# -- sampling -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", WITH_CDF)
def test_sample_frequencies_below_the_quantiles_match_the_probabilities(name):
    """20000 draws on a fixed seed: a frequency's standard error is at most 0.0036, so 0.02 is over five of them,
    while a wrong sampler (a swapped or ignored parameter) misses some quantile by far more."""
    dist = build(name)
    ag.manual_seed(0)
    draws = dist.sample((20000,)).numpy()
    probs = np.array([0.1, 0.5, 0.9])
    quantiles = dist.icdf(f64(probs[:, None]).expand(3, 2)).numpy()
    frequencies = np.stack([(draws <= q).mean(0) for q in quantiles])
    np.testing.assert_allclose(frequencies, np.broadcast_to(probs[:, None], (3, 2)), atol=0.02)


@pytest.mark.parametrize("name", FINITE_MOMENTS)
def test_sample_means_match_the_means(name):
    dist = build(name)
    ag.manual_seed(1)
    draws = dist.sample((20000,)).numpy()
    std = np.sqrt(FAMILIES[name]["variance"](*numpy_params(name)))
    assert (np.abs(draws.mean(0) - dist.mean.numpy()) < 6 * std / math.sqrt(20000)).all()


def test_logistic_normal_samples_lie_on_the_simplex_with_normal_stick_logits():
    dist = build("LogisticNormal")
    ag.manual_seed(0)
    draws = dist.sample((20000,)).numpy()
    assert draws.shape == (20000, 4) and (draws > 0).all()
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-12)
    fraction, _ = stick_fractions(draws)
    logits = np.log(fraction / (1 - fraction)) + np.log([3.0, 2.0, 1.0])
    loc, scale = numpy_params("LogisticNormal")
    assert (np.abs(logits.mean(0) - loc) < 6 * scale / math.sqrt(20000)).all()
    np.testing.assert_allclose(logits.std(0), scale, rtol=0.05)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_samples_have_sample_batch_and_event_shape_and_expand_keeps_the_values(name):
    dist = build(name)
    for sample_shape in ((), (3,), (2, 4)):
        sample = dist.sample(sample_shape)
        assert sample.shape == sample_shape + dist.batch_shape + dist.event_shape and not sample.requires_grad
        assert dist.rsample(sample_shape).shape == sample.shape
        assert dist.log_prob(sample).shape == sample_shape + dist.batch_shape
    wider = dist.expand((5,) + dist.batch_shape)
    assert type(wider) is type(dist) and wider.batch_shape == (5,) + dist.batch_shape
    assert wider.event_shape == dist.event_shape and wider.sample((2,)).shape[:2] == (2, 5)
    value = f64(FAMILIES[name]["value"])
    assert_close(wider.log_prob(value), np.broadcast_to(dist.log_prob(value).numpy(), wider.batch_shape))


@pytest.mark.parametrize("name", list(FAMILIES))
def test_samples_repeat_under_manual_seed(name):
    dist = build(name)
    draws = []
    for seed in (3, 3, 4):
        ag.manual_seed(seed)
        draws.append(dist.sample((50,)).numpy())
    assert np.array_equal(draws[0], draws[1]) and not np.array_equal(draws[0], draws[2])


def test_parameters_given_as_numbers_make_a_scalar_batch():
    for dist in (D.LogNormal(0.0, 1.0), D.HalfNormal(1.0), D.Gumbel(0.0, 1.0), D.Weibull(1.0, 2.0),
                 D.Pareto(1.0, 2.0), D.Cauchy(0.0, 1.0), D.HalfCauchy(1.0)):
        assert dist.batch_shape == () and dist.sample().shape == () and dist.sample().dtype == ag.float32
    logistic = D.LogisticNormal(0.0, 1.0)
    assert (logistic.batch_shape, logistic.event_shape) == ((), (2,))


# -- transforms -----------------------------------------------------------------------------------------------------
# name -> (the transform, points of its domain, its forward map in numpy)
LOC, SCALE = np.array([0.5, -1.0, 2.0]), np.array([2.0, -0.5, 3.0])
TRANSFORMS = {
    "Exp": (T.ExpTransform, [-1.3, 0.2, 2.0], np.exp),
    "Sigmoid": (T.SigmoidTransform, [-1.3, 0.2, 2.0], lambda x: 1 / (1 + np.exp(-x))),
    "Tanh": (T.TanhTransform, [-1.3, 0.2, 2.0], np.tanh),
    "Softplus": (T.SoftplusTransform, [-1.3, 0.2, 2.0], lambda x: np.log1p(np.exp(x))),
    "Affine": (lambda: T.AffineTransform(f64(LOC), f64(SCALE)), [-1.3, 0.2, 2.0], lambda x: LOC + SCALE * x),
    "Affine(numbers)": (lambda: T.AffineTransform(1.5, -2.0), [-1.3, 0.2, 2.0], lambda x: 1.5 - 2.0 * x),
    "Power": (lambda: T.PowerTransform(f64([2.5, -0.5, 1.5])), [0.3, 1.2, 2.0],
              lambda x: x ** np.array([2.5, -0.5, 1.5])),
    "Exp.inv": (lambda: T.ExpTransform().inv, [0.3, 1.2, 2.0], np.log),
    "Sigmoid.inv": (lambda: T.SigmoidTransform().inv, [0.1, 0.5, 0.8], lambda y: np.log(y / (1 - y))),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transform_maps_as_its_formula_and_its_inverse_maps_back(name):
    make, points, forward = TRANSFORMS[name]
    transform, x = make(), f64(points)
    y = transform(x)
    assert_close(y, forward(np.array(points)))
    assert_close(transform.inv(y), points, rtol=1e-10)
    assert transform.inv.inv is transform and transform.bijective
    assert bool(transform.domain.check(x).all()) and bool(transform.codomain.check(y).all())


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_log_abs_det_jacobian_and_sign_agree_with_a_numerical_derivative(name):
    make, points, _ = TRANSFORMS[name]
    transform, x, h = make(), np.array(points), 1e-6
    slope = (transform(f64(x + h)).numpy() - transform(f64(x - h)).numpy()) / (2 * h)
    assert_close(transform.log_abs_det_jacobian(f64(x), transform(f64(x))), np.log(np.abs(slope)), rtol=1e-8)
    sign = transform.sign
    assert np.array_equal(np.broadcast_to(sign.numpy() if isinstance(sign, ag.Tensor) else sign, x.shape),
                          np.sign(slope))


def test_tanh_log_jacobian_stays_finite_where_tanh_saturates():
    x = f64([-30.0, 30.0])
    transform = T.TanhTransform()
    assert_close(transform.log_abs_det_jacobian(x, transform(x)), np.log(4.0) - 60.0 - 2 * np.log1p(np.exp(-60.0)))


def test_compose_transform_chains_its_parts_and_sums_their_log_jacobians():
    chain = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0), T.PowerTransform(0.5)])
    x = np.array([-1.3, 0.2, 2.0])
    y = chain(f64(x))
    assert_close(y, np.sqrt(1 + 2 * np.exp(x)))
    assert_close(chain.inv(y), x, rtol=1e-12)
    h = 1e-6
    slope = (np.sqrt(1 + 2 * np.exp(x + h)) - np.sqrt(1 + 2 * np.exp(x - h))) / (2 * h)
    assert_close(chain.log_abs_det_jacobian(f64(x), y), np.log(slope), rtol=1e-8)
    assert chain.inv.inv is chain and chain.bijective and int(chain.sign) == 1
    assert isinstance(chain.inv, T.ComposeTransform) and chain.inv.parts[0] == T.PowerTransform(0.5).inv
    flipped = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(0.0, -2.0)])
    assert flipped.sign == -1 and repr(flipped.codomain) == "Real()" and repr(flipped.domain) == "Real()"
    assert repr(flipped) == "ComposeTransform(\n    ExpTransform(),\n    AffineTransform()\n)"
    assert not T.ComposeTransform([T.ExpTransform(), T.AbsTransform()]).bijective


def test_compose_transform_sums_elementwise_terms_over_a_vector_parts_event():
    chain = T.ComposeTransform([T.AffineTransform(0.0, 2.0), T.StickBreakingTransform()])
    assert repr(chain.domain) == "IndependentConstraint(Real(), 1)" and repr(chain.codomain) == "Simplex()"
    assert chain.forward_shape((4, 3)) == (4, 4) and chain.inverse_shape((4, 4)) == (4, 3)
    x = f64([[0.3, -1.0, 0.5], [0.1, 0.2, -0.4]])
    stick = T.StickBreakingTransform()
    expected = 3 * math.log(2.0) + stick.log_abs_det_jacobian(2 * x, stick(2 * x)).numpy()
    assert_close(chain.log_abs_det_jacobian(x, chain(x)), expected)


def test_identity_transform_returns_its_input_with_a_zero_log_jacobian():
    x = f64([0.3, -2.0])
    assert T.identity_transform(x) is x and T.identity_transform.inv(x) is x
    assert_close(T.identity_transform.log_abs_det_jacobian(x, x), [0.0, 0.0])
    assert T.identity_transform.sign == 1 and repr(T.identity_transform.domain) == "Real()"


def test_stick_breaking_maps_onto_the_simplex_with_the_determinant_of_its_jacobian():
    transform, x = T.StickBreakingTransform(), np.array([0.3, -1.0, 0.5])
    y = transform(f64(x)).numpy()
    assert y.shape == (4,) and (y > 0).all() and abs(y.sum() - 1) < 1e-15
    assert_close(transform(f64([0.0, 0.0, 0.0])), [0.25, 0.25, 0.25, 0.25])  # the shift centres x = 0
    assert_close(transform.inv(f64(y)), x, rtol=1e-12)
    h = 1e-6
    jacobian = np.stack([(transform(f64(x + h * e)).numpy() - transform(f64(x - h * e)).numpy())[:3] / (2 * h)
                         for e in np.eye(3)], -1)  # the first K entries fix the last
    assert_close(transform.log_abs_det_jacobian(f64(x), f64(y)), np.linalg.slogdet(jacobian)[1], rtol=1e-8)
    assert transform.forward_shape((2, 3)) == (2, 4) and transform.inverse_shape((2, 4)) == (2, 3)
    with pytest.raises(ValueError, match=r"^Too few dimensions on input$"):
        transform.forward_shape(())


def test_affine_transform_over_vector_events_sums_its_log_scale():
    transform = T.AffineTransform(0.0, f64([2.0, -0.5, 3.0]), event_dim=1)
    x = f64(np.ones((4, 3)))
    assert transform.event_dim == 1 and repr(transform.domain) == "IndependentConstraint(Real(), 1)"
    assert_close(transform.log_abs_det_jacobian(x, transform(x)), np.full(4, math.log(3.0)))
    assert transform.forward_shape((4, 1)) == (4, 3)


def test_abs_transform_inverts_to_the_non_negative_preimage():
    transform, y = T.AbsTransform(), f64([0.5, 2.0])
    assert not transform.bijective and not transform.inv.bijective
    assert transform.inv(y) is y and transform(f64([-0.5, 2.0])).tolist() == [0.5, 2.0]
    with pytest.raises(NotImplementedError):
        _ = transform.sign


def test_cache_size_one_returns_the_input_that_gave_the_output():
    x = f64([40.0])  # sigmoid(40) rounds to 1, clamped to 1 - eps: recomputing the inverse gives about 36
    uncached, cached = T.SigmoidTransform(), T.SigmoidTransform(cache_size=1)
    assert abs(uncached.inv(uncached(x)).item() - 40.0) > 3
    y = cached(x)
    assert cached.inv(y) is x and cached(x) is y
    assert cached.inv.with_cache(1) is cached.inv and uncached.with_cache(1)._cache_size == 1
    composed = T.ComposeTransform([T.ExpTransform(), T.SigmoidTransform()], cache_size=1)
    assert all(part._cache_size == 1 for part in composed.parts)
    assert T.PowerTransform(2.0).with_cache(1).exponent.item() == 2.0
    with pytest.raises(ValueError, match=r"^cache_size must be 0 or 1$"):
        T.ExpTransform(cache_size=2)


def test_transforms_are_equal_when_their_maps_are():
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.SigmoidTransform()
    assert T.ExpTransform().inv == T.ExpTransform().inv and T.ExpTransform().inv != T.ExpTransform()
    assert T.AffineTransform(0.0, 2.0) == T.AffineTransform(0.0, ag.tensor(2.0))
    assert T.AffineTransform(0.0, 2.0) != T.AffineTransform(0.0, 3.0)
    assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(0.0, 2.0)
    assert T.PowerTransform(2.0) == T.PowerTransform(ag.tensor(2.0)) and T.PowerTransform(2.0) != T.PowerTransform(3.0)
    assert T.ComposeTransform([T.ExpTransform()]) == T.ComposeTransform([T.ExpTransform()])
    assert repr(T.ExpTransform().inv) == "_InverseTransform(ExpTransform())"


def test_event_dim_refuses_a_transform_that_changes_it():
    class Widen(T.Transform):
        domain = D.constraints.real
        codomain = D.constraints.real_vector

    with pytest.raises(ValueError, match=r"^Please use either \.domain\.event_dim or \.codomain\.event_dim$"):
        _ = Widen().event_dim
    assert T.TanhTransform().event_dim == 0 and repr(T.TanhTransform().codomain) == (
        "Interval(lower_bound=-1.0, upper_bound=1.0)")


# -- TransformedDistribution ----------------------------------------------------------------------------------------
def test_log_prob_is_the_change_of_variables_and_cdf_follows_the_transforms():
    loc, scale = np.array([0.3, -1.2]), np.array([0.7, 2.0])
    dist = D.TransformedDistribution(D.Normal(f64(loc), f64(scale)), [T.AffineTransform(1.0, 2.0), T.ExpTransform()])
    value = np.array([0.5, 3.0])  # log(value) = 1 + 2 x: log-normal of mean 1 + 2 loc, deviation 2 scale
    assert_close(dist.log_prob(f64(value)), normal_logpdf(np.log(value), 1 + 2 * loc, 2 * scale) - np.log(value))
    assert_close(dist.cdf(f64(value)), normal_cdf(np.log(value), 1 + 2 * loc, 2 * scale))
    assert_close(dist.icdf(dist.cdf(f64(value))), value, rtol=1e-12)
    assert repr(dist.support) == "GreaterThan(lower_bound=0.0)" and dist.has_rsample


def test_cdf_and_icdf_flip_under_decreasing_transforms():
    loc, scale = np.array([0.3, -1.2]), np.array([0.7, 2.0])
    mixed = np.array([-2.0, 3.0])
    for factor, transform in ((-2.0, T.AffineTransform(1.0, -2.0)), (mixed, T.AffineTransform(1.0, f64(mixed)))):
        dist = D.TransformedDistribution(D.Normal(f64(loc), f64(scale)), transform)
        value = np.array([0.5, 3.0])
        expected = normal_cdf(value, 1 + factor * loc, np.abs(factor) * scale)
        assert_close(dist.cdf(f64(value)), expected)
        assert_close(dist.icdf(f64(expected)), value, rtol=1e-12)


def test_vector_transforms_move_batch_dims_into_the_event():
    loc = np.array([[0.3, -1.2, 0.5], [0.1, 0.0, 2.0]])
    scale = np.array([2.0, -0.5, 3.0])
    dist = D.TransformedDistribution(D.Normal(f64(loc), 1.0), T.AffineTransform(0.0, f64(scale), event_dim=1))
    assert (dist.batch_shape, dist.event_shape) == ((2,), (3,)) and isinstance(dist.base_dist, D.Independent)
    assert repr(dist.support) == "IndependentConstraint(Real(), 1)"
    value = np.array([[1.0, 0.2, -0.4], [0.0, 3.0, 1.5]])
    expected = normal_logpdf(value / scale, loc, 1.0).sum(-1) - np.log(np.abs(scale)).sum()
    assert_close(dist.log_prob(f64(value)), expected)
    exp_of_vectors = D.TransformedDistribution(D.Independent(D.Normal(f64(loc), 1.0), 1), T.ExpTransform())
    assert (exp_of_vectors.batch_shape, exp_of_vectors.event_shape) == ((2,), (3,))
    positive = np.exp(value)
    assert_close(exp_of_vectors.log_prob(f64(positive)), (normal_logpdf(value, loc, 1.0) - value).sum(-1))
    assert repr(exp_of_vectors.support) == "IndependentConstraint(GreaterThan(lower_bound=0.0), 1)"


def test_transform_parameters_broadcast_the_base_batch():
    dist = D.TransformedDistribution(D.Normal(f64(0.0), 1.0), T.AffineTransform(f64([1.0, 2.0]), 1.0))
    assert dist.batch_shape == (2,) and dist.base_dist.batch_shape == (2,)
    ag.manual_seed(0)
    assert dist.sample((3,)).shape == (3, 2)
    wider = dist.expand((4, 2))
    assert wider.batch_shape == (4, 2) and wider.base_dist.batch_shape == (4, 2)
    assert type(wider) is D.TransformedDistribution and wider.transforms is dist.transforms


def test_no_transforms_keep_the_base_distribution():
    base = D.Gamma(f64([2.0]), f64([3.0]))
    dist = D.TransformedDistribution(base, [])
    assert dist.support is base.support and dist.has_rsample
    assert_close(dist.log_prob(f64([0.5])), base.log_prob(f64([0.5])).numpy())


def test_sample_works_without_rsample_in_the_base():
    dist = D.TransformedDistribution(D.Bernoulli(f64([0.3, 0.6])), T.AffineTransform(1.0, 2.0))
    assert not dist.has_rsample
    ag.manual_seed(0)
    assert set(np.unique(dist.sample((200,)).numpy())) == {1.0, 3.0}
    with pytest.raises(NotImplementedError):
        dist.rsample()


def test_transformed_distribution_refuses_bad_arguments_with_torchs_errors():
    with pytest.raises(ValueError, match=r"^transforms must be a Transform or list, but was 3$"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), 3)
    with pytest.raises(ValueError, match=r"^transforms must be a Transform or a list of Transforms$"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), [T.ExpTransform(), 3])
    with pytest.raises(ValueError, match=r"^base_distribution needs to have shape with size at least 1, but got "
                                         r"\(\)\.$"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), T.StickBreakingTransform())
    with pytest.raises(ValueError, match=r"^Expected value argument \(Tensor of shape \(\)\) to be within the "
                                         r"support \(GreaterThan\(lower_bound=0\.0\)\) of the distribution "
                                         r"TransformedDistribution\(\), but found invalid values:\n-1\.0$"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), T.ExpTransform()).log_prob(ag.tensor(-1.0))


def test_a_subclass_with_its_own_init_must_bring_its_own_expand():
    class Shifted(D.TransformedDistribution):
        def __init__(self, loc):
            super().__init__(D.Normal(loc, 1.0), T.AffineTransform(1.0, 1.0))

    with pytest.raises(NotImplementedError, match=r"^Subclass Shifted of TransformedDistribution that defines a "
                                                  r"custom __init__ method must also define a custom \.expand\(\)"):
        Shifted(f64([0.0])).expand((2, 1))


# -- argument validation -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, text", [
    (lambda: D.LogNormal(0.0, -1.0), r"scale \(Tensor of shape \(\)\) of distribution Normal\(loc: 0\.0, "
                                     r"scale: -1\.0\)"),
    (lambda: D.HalfNormal(f64([1.0, -1.0])), r"scale \(Tensor of shape \(2,\)\) of distribution HalfNormal\(\)"),
    (lambda: D.HalfCauchy(-1.0), r"scale \(Tensor of shape \(\)\) of distribution HalfCauchy\(\)"),
    (lambda: D.Cauchy(0.0, -1.0), r"scale \(Tensor of shape \(\)\) of distribution Cauchy\(loc: 0\.0, scale: -1\.0\)"),
    (lambda: D.Gumbel(0.0, -1.0), r"scale \(Tensor of shape \(\)\) of distribution Gumbel\(loc: 0\.0, scale: -1\.0\)"),
    (lambda: D.Weibull(-1.0, 1.0), r"scale \(Tensor of shape \(\)\) of distribution Weibull\(scale: -1\.0, "
                                   r"concentration: 1\.0\)"),
    (lambda: D.Weibull(1.0, -1.0), r"concentration \(Tensor of shape \(\)\) of distribution Weibull\(scale: 1\.0, "
                                   r"concentration: -1\.0\)"),
    (lambda: D.Pareto(-1.0, 1.0), r"scale \(Tensor of shape \(\)\) of distribution Pareto\(alpha: 1\.0, "
                                  r"scale: -1\.0\)"),
    (lambda: D.Pareto(1.0, -1.0), r"rate \(Tensor of shape \(\)\) of distribution Exponential\(rate: -1\.0\)"),
    (lambda: D.LogisticNormal(f64([0.0, 0.0]), f64([1.0, -1.0])), r"scale \(Tensor of shape \(2,\)\) of "
                                                                  r"distribution Normal\(loc: \(2,\), scale: \(2,\)\)"),
])
def test_invalid_parameters_raise_torchs_error(make, text):
    with pytest.raises(ValueError, match=rf"^Expected parameter {text}.* to satisfy the constraint "
                                         r"GreaterThan\(lower_bound=0\.0\), but found invalid values:\n"):
        make()


@pytest.mark.parametrize("make, value, support, shown", [
    (lambda: D.Pareto(2.0, 1.0), 1.0, r"GreaterThanEq\(lower_bound=2\.0\)", r"Pareto\(alpha: 1\.0, scale: 2\.0\)"),
    (lambda: D.HalfNormal(1.0), -1.0, r"GreaterThanEq\(lower_bound=0\.0\)", r"HalfNormal\(\)"),
    (lambda: D.HalfCauchy(1.0), -1.0, r"GreaterThanEq\(lower_bound=0\.0\)", r"HalfCauchy\(\)"),
    (lambda: D.LogNormal(0.0, 1.0), -1.0, r"GreaterThan\(lower_bound=0\.0\)", r"LogNormal\(\)"),
    (lambda: D.Weibull(1.0, 1.0), 0.0, r"GreaterThan\(lower_bound=0\.0\)", r"Weibull\(scale: 1\.0, "
                                                                          r"concentration: 1\.0\)"),
    (lambda: D.Cauchy(0.0, 1.0), math.nan, r"Real\(\)", r"Cauchy\(loc: 0\.0, scale: 1\.0\)"),
])
def test_log_prob_refuses_values_outside_the_support(make, value, support, shown):
    with pytest.raises(ValueError, match=rf"^Expected value argument \(Tensor of shape \(\)\) to be within the "
                                         rf"support \({support}\) of the distribution {shown}, but found invalid "
                                         r"values:\n"):
        make().log_prob(ag.tensor(value))


def test_logistic_normal_refuses_values_off_the_simplex():
    with pytest.raises(ValueError, match=r"^Expected value argument \(Tensor of shape \(3,\)\) to be within the "
                                         r"support \(Simplex\(\)\) of the distribution LogisticNormal\(\)"):
        D.LogisticNormal(f64([0.0, 0.0]), 1.0).log_prob(f64([0.5, 0.6, 0.1]))


# -- KL divergences against numerical integration -------------------------------------------------------------------
def integrate(fn, lo: float, hi: float, n: int = 400001) -> float:
    grid = np.linspace(lo, hi, n)
    return float(np.trapezoid(fn(grid), grid))


def kl_by_integration(name: str, p: list[float], q: list[float]) -> float:
    """KL(p || q) = E_p[log p - log q], by the trapezoid rule in a variable where p's mass sits on a bounded
    grid: log x on (0, inf), the angle of p's own Cauchy quantile for the Cauchys."""
    logpdf = FAMILIES[name]["logpdf"]

    def log_ratio(x):
        return logpdf(x, *p) - logpdf(x, *q)

    if name == "Cauchy":  # x = loc + scale tan(t): p(x) dx = dt / pi
        return integrate(lambda t: log_ratio(p[0] + p[1] * np.tan(t)) / math.pi, -math.pi / 2 + 1e-9,
                         math.pi / 2 - 1e-9)
    if name == "HalfCauchy":  # x = scale tan(t): p(x) dx = 2 dt / pi
        return integrate(lambda t: 2 * log_ratio(p[0] * np.tan(t)) / math.pi, 1e-12, math.pi / 2 - 1e-9)
    if name == "Gumbel":
        return integrate(lambda x: np.exp(logpdf(x, *p)) * log_ratio(x), -20.0, 120.0)
    lo = math.log(p[0]) if name == "Pareto" else -40.0

    def in_log_space(u):
        x = np.exp(u)
        return np.exp(logpdf(x, *p)) * x * log_ratio(x)

    return integrate(in_log_space, lo, lo + 80.0)


KL_CASES = {
    "LogNormal": ([[0.3, -1.2], [0.7, 2.0]], [[0.1, 0.2], [1.5, 0.5]]),
    "HalfNormal": ([[0.7, 2.0]], [[1.5, 0.5]]),
    "HalfCauchy": ([[0.7, 2.0]], [[1.5, 0.5]]),
    "Cauchy": ([[0.3, -1.2], [0.7, 2.0]], [[0.1, 0.2], [1.5, 0.5]]),
    "Gumbel": ([[0.3, -1.2], [0.7, 2.0]], [[0.1, 0.2], [1.5, 0.5]]),
    "Pareto": ([[0.7, 2.0], [0.8, 3.0]], [[0.5, 1.5], [1.5, 0.5]]),
}


@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_divergence_equals_numerical_integration(name):
    p_params, q_params = KL_CASES[name]
    build_fn = FAMILIES[name]["build"]
    kl = D.kl_divergence(build_fn(*map(f64, p_params)), build_fn(*map(f64, q_params))).numpy()
    for i in range(2):
        expected = kl_by_integration(name, [v[i] for v in p_params], [v[i] for v in q_params])
        np.testing.assert_allclose(kl[i], expected, rtol=1e-6)


@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_divergence_passes_gradcheck(name):
    p_params, q_params = KL_CASES[name]
    build_fn, n = FAMILIES[name]["build"], len(p_params)
    assert gradcheck(lambda *leaves: D.kl_divergence(build_fn(*leaves[:n]), build_fn(*leaves[n:])),
                     [f64(v, requires_grad=True) for v in p_params + q_params])


def test_pareto_kl_is_infinite_where_q_starts_above_p():
    kl = D.kl_divergence(D.Pareto(f64([1.0, 2.0]), 2.0), D.Pareto(f64([1.5, 1.5]), 2.0))
    assert kl.numpy()[0] == math.inf and np.isfinite(kl.numpy()[1])


def test_kl_of_transformed_distributions_needs_equal_transforms():
    weibull = D.Weibull(f64([0.7, 2.0]), f64([0.6, 3.0]))
    assert_close(D.kl_divergence(weibull, D.Weibull(f64([0.7, 2.0]), f64([0.6, 3.0]))), [0.0, 0.0])
    with pytest.raises(NotImplementedError):
        D.kl_divergence(weibull, D.Weibull(f64([0.7, 2.0]), f64([0.6, 2.5])))
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.LogNormal(0.0, 1.0), D.Gumbel(0.0, 1.0))
    shifted = [T.AffineTransform(1.0, 2.0), T.ExpTransform()]
    p = D.TransformedDistribution(D.Normal(f64([0.3]), f64([0.7])), shifted)
    q = D.TransformedDistribution(D.Normal(f64([0.1]), f64([1.5])), [T.AffineTransform(1.0, 2.0), T.ExpTransform()])
    assert_close(D.kl_divergence(p, q), D.kl_divergence(D.Normal(f64([0.3]), f64([0.7])),
                                                        D.Normal(f64([0.1]), f64([1.5]))).numpy())


# -- on cuda:0 (CuPy, or the stand-in in CI) --------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("name", list(FAMILIES))
def test_rsample_log_prob_and_gradients_match_the_cpu_on_cuda(name):
    pytest.importorskip("cupy")
    case = FAMILIES[name]
    results = []
    for device in (None, ag.device("cuda:0")):
        leaves = [ag.tensor(p, dtype=ag.float64, device=device, requires_grad=True) for p in case["params"]]
        dist = case["build"](*leaves)
        ag.manual_seed(2)
        sample = dist.rsample((3,))
        log_prob = dist.log_prob(ag.tensor(case["value"], dtype=ag.float64, device=device))
        (sample.sum() + log_prob.sum()).backward()
        assert sample.device == log_prob.device == leaves[0].grad.device == leaves[0].device
        results.append([t.detach().cpu().numpy() for t in [sample, log_prob] + [leaf.grad for leaf in leaves]])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
