"""kl_divergence between different families (kl_cross): each finite pair against a quadrature of
p(x) (log p(x) - log q(x)) on a fine Gauss-Legendre grid (a sum over the support for discrete p), float64 gradcheck
in the parameters of both sides, and inf where p's support reaches outside q's or a Pareto p lacks the moment q's
log density needs, as PyTorch's."""

from __future__ import annotations

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import distributions as D
from actorgrad.autograd import gradcheck, gradgradcheck

NODES, WEIGHTS = np.polynomial.legendre.leggauss(16)


def f64(values):
    return ag.tensor(values, dtype=ag.float64)


def kl_by_quadrature(p, q, edges, log_x=False, panels=300):
    """The integral of p (log p - log q) over the segments between `edges`, in x, or in t = log x when log_x, with
    `panels` 16-point Gauss-Legendre panels per segment (no node on an edge, where a density may be singular)."""
    total = 0.0
    for a, b in zip(edges[:-1], edges[1:]):
        cuts = np.linspace(a, b, panels + 1)
        half = np.diff(cuts)[:, None] / 2
        t = (cuts[:-1, None] + half * (NODES + 1)).ravel()
        w = (half * WEIGHTS).ravel()
        x = np.exp(t) if log_x else t
        lp = p.log_prob(f64(x)).numpy()
        lq = q.log_prob(f64(x)).numpy()
        total += np.sum(w * (x if log_x else 1.0) * np.exp(lp) * (lp - lq))
    return total


# name: (build p, p's parameters, build q, q's parameters, quadrature edges, log_x)
FINITE = {
    "Beta-Normal": (D.Beta, [2.5, 1.7], D.Normal, [0.3, 0.8], [0, 1], False),
    "Beta-Exponential": (D.Beta, [2.5, 1.7], D.Exponential, [1.3], [0, 1], False),
    "Beta-Gamma": (D.Beta, [2.5, 1.7], D.Gamma, [2.2, 1.4], [0, 1], False),
    "Beta-Uniform": (D.Beta, [2.5, 1.7], D.Uniform, [-0.5, 1.5], [0, 1], False),
    "Exponential-Normal": (D.Exponential, [1.7], D.Normal, [0.3, 0.8], [-40, math.log(40)], True),
    "Exponential-Gamma": (D.Exponential, [1.7], D.Gamma, [2.2, 1.4], [-40, math.log(40)], True),
    "Exponential-Gumbel": (D.Exponential, [1.7], D.Gumbel, [0.4, 1.3], [-40, math.log(40)], True),
    "Gamma-Normal": (D.Gamma, [2.3, 1.6], D.Normal, [0.3, 0.8], [-40, math.log(60)], True),
    "Gamma-Exponential": (D.Gamma, [2.3, 1.6], D.Exponential, [1.3], [-40, math.log(60)], True),
    "Gamma-Gumbel": (D.Gamma, [2.3, 1.6], D.Gumbel, [0.4, 1.3], [-40, math.log(60)], True),
    "Chi2-Exponential": (D.Chi2, [3.0], D.Exponential, [0.7], [-40, math.log(200)], True),
    "Gumbel-Normal": (D.Gumbel, [0.4, 1.3], D.Normal, [0.3, 0.8], [0.4 - 1.3 * 5, 0.4 + 1.3 * 60], False),
    "Laplace-Normal": (D.Laplace, [0.2, 0.9], D.Normal, [0.3, 0.8], [0.2 - 60, 0.2, 0.2 + 60], False),
    "Normal-Gumbel": (D.Normal, [0.3, 0.7], D.Gumbel, [0.4, 1.3], [0.3 - 12, 0.3 + 12], False),
    "Normal-Laplace": (D.Normal, [0.3, 0.7], D.Laplace, [-0.2, 0.9], [0.3 - 12, -0.2, 0.3 + 12], False),
    "Pareto-Normal": (D.Pareto, [1.5, 3.5], D.Normal, [0.3, 0.8], [math.log(1.5), math.log(1.5) + 45], True),
    "Pareto-Exponential": (D.Pareto, [1.5, 3.5], D.Exponential, [1.3], [math.log(1.5), math.log(1.5) + 30], True),
    "Pareto-Gamma": (D.Pareto, [1.5, 3.5], D.Gamma, [2.2, 1.4], [math.log(1.5), math.log(1.5) + 30], True),
    "Uniform-Normal": (D.Uniform, [0.2, 0.7], D.Normal, [0.3, 0.8], [0.2, 0.7], False),
    "Uniform-Exponential": (D.Uniform, [0.2, 0.7], D.Exponential, [1.3], [0.2, 0.7], False),
    "Uniform-Gamma": (D.Uniform, [0.2, 0.7], D.Gamma, [2.2, 1.4], [0.2, 0.7], False),
    "Uniform-Gumbel": (D.Uniform, [0.2, 0.7], D.Gumbel, [0.4, 1.3], [0.2, 0.7], False),
    "Uniform-Beta": (D.Uniform, [0.2, 0.7], D.Beta, [2.5, 1.7], [0.2, 0.7], False),
    "Uniform-Pareto": (D.Uniform, [0.2, 0.7], D.Pareto, [0.1, 2.5], [0.2, 0.7], False),
    # a lower end at 0, where x log x is 0 and Gamma's and Beta's log densities are singular
    "Uniform from 0-Gamma": (D.Uniform, [0.0, 0.6], D.Gamma, [2.2, 1.4], [-40, math.log(0.6)], True),
    "Uniform from 0-Beta": (D.Uniform, [0.0, 0.6], D.Beta, [2.5, 1.7], [-40, math.log(0.6)], True),
}


def build_pair(name, leaves):
    build_p, p_params, build_q, _, _, _ = FINITE[name]
    return build_p(*leaves[:len(p_params)]), build_q(*leaves[len(p_params):])


@pytest.mark.parametrize("name", list(FINITE))
def test_kl_divergence_equals_a_quadrature_of_the_log_density_ratio(name):
    _, p_params, _, q_params, edges, log_x = FINITE[name]
    p, q = build_pair(name, [f64(v) for v in p_params + q_params])
    expected = kl_by_quadrature(p, q, edges, log_x)
    got = D.kl_divergence(p, q)
    assert got.dtype == ag.float64 and got.shape == ()
    np.testing.assert_allclose(got.item(), expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", [n for n in FINITE if "from 0" not in n])  # d(x log x)/dx is -inf at 0
def test_kl_divergence_passes_gradcheck_and_gradgradcheck_in_both_sides_parameters(name):
    _, p_params, _, q_params, _, _ = FINITE[name]
    leaves = [ag.tensor(v, dtype=ag.float64, requires_grad=True) for v in p_params + q_params]
    assert gradcheck(lambda *x: D.kl_divergence(*build_pair(name, x)), leaves)
    assert gradgradcheck(lambda *x: D.kl_divergence(*build_pair(name, x)), leaves)


def test_a_batch_gives_each_member_its_own_divergence_in_float32():
    p = D.Uniform(ag.tensor([0.1, 0.3]), ag.tensor([0.5, 0.9]))
    q = D.Gumbel(ag.tensor([[0.0], [1.0]]), 2.0)
    batch = D.kl_divergence(p, q)
    assert batch.shape == (2, 2) and batch.dtype == ag.float32
    for i in range(2):
        for j in range(2):
            one = D.kl_divergence(D.Uniform(p.low[j].double(), p.high[j].double()),
                                  D.Gumbel(q.loc[i, 0].double(), 2.0))
            np.testing.assert_allclose(batch[i, j].item(), one.item(), rtol=1e-6)


def test_bernoulli_to_poisson_equals_the_sum_over_zero_and_one():
    p, q = D.Bernoulli(f64([0.3, 0.8])), D.Poisson(f64([0.5, 2.0]))
    x = f64([[0.0], [1.0]])
    lp, lq = p.log_prob(x).numpy(), q.log_prob(x).numpy()
    np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), (np.exp(lp) * (lp - lq)).sum(0), rtol=1e-12)
    leaves = [ag.tensor([0.3, 0.8], dtype=ag.float64, requires_grad=True),
              ag.tensor([0.5, 2.0], dtype=ag.float64, requires_grad=True)]
    assert gradcheck(lambda a, b: D.kl_divergence(D.Bernoulli(a), D.Poisson(b)), leaves)


# p's support always reaches outside q's
ALWAYS_INFINITE = [
    (D.Beta(f64([2.0, 0.5]), f64([3.0, 1.0])), [D.Pareto(f64(0.5), f64(2.0))]),
    (D.Exponential(f64([2.0, 0.5])), [D.Beta(f64(2.0), f64(3.0)), D.Pareto(f64(0.5), f64(2.0)),
                                       D.Uniform(f64(0.0), f64(100.0))]),
    (D.Gamma(f64([2.0, 0.5]), f64(1.0)), [D.Beta(f64(2.0), f64(3.0)), D.Pareto(f64(0.5), f64(2.0)),
                                           D.Uniform(f64(0.0), f64(100.0))]),
    (D.Pareto(f64([2.0, 0.5]), f64(3.0)), [D.Beta(f64(2.0), f64(3.0)), D.Uniform(f64(0.0), f64(100.0))]),
    (D.Poisson(f64([2.0, 0.5])), [D.Bernoulli(f64(0.5)), D.Binomial(100, f64(0.5))]),
]
for _real_line in (D.Gumbel(f64([0.0, 1.0]), f64(1.0)), D.Laplace(f64([0.0, 1.0]), f64(1.0)),
                   D.Normal(f64([0.0, 1.0]), f64(1.0))):
    ALWAYS_INFINITE.append((_real_line, [D.Beta(f64(2.0), f64(3.0)), D.Exponential(f64(1.0)),
                                         D.Gamma(f64(2.0), f64(1.0)), D.Pareto(f64(0.5), f64(2.0)),
                                         D.Uniform(f64(-100.0), f64(100.0))]))


@pytest.mark.parametrize("p, qs", ALWAYS_INFINITE, ids=lambda v: type(v).__name__ if not isinstance(v, list) else "")
def test_kl_divergence_is_infinite_where_p_reaches_outside_qs_support(p, qs):
    for q in qs:
        kl = D.kl_divergence(p, q)
        assert kl.shape == (2,) and kl.dtype == ag.float64, type(q)
        assert np.all(np.isposinf(kl.numpy())), type(q)


def test_a_bounded_side_makes_the_divergence_infinite_only_where_the_supports_do_not_nest():
    beta_uniform = D.kl_divergence(D.Beta(f64(2.0), f64(3.0)), D.Uniform(f64([0.0, 0.1, -1.0, 0.0]),
                                                                        f64([1.0, 1.0, 2.0, 0.9])))
    assert np.isposinf(beta_uniform.numpy()).tolist() == [False, True, False, True]
    np.testing.assert_allclose(beta_uniform[2].item(), beta_uniform[0].item() + math.log(3), rtol=1e-12)
    uniform = D.Uniform(f64([0.0, -0.1, 0.5, 0.5]), f64([1.0, 0.5, 1.1, 0.9]))
    beta = D.kl_divergence(uniform, D.Beta(f64(2.0), f64(3.0))).numpy()
    assert np.isposinf(beta).tolist() == [False, True, True, False]
    for q in (D.Exponential(f64(1.0)), D.Gamma(f64(2.0), f64(1.0))):
        assert np.isposinf(D.kl_divergence(uniform, q).numpy()).tolist() == [False, True, False, False]
    pareto = D.kl_divergence(uniform, D.Pareto(f64([0.5, 0.01, 0.5, 0.6]), f64(2.0))).numpy()
    assert np.isposinf(pareto).tolist() == [True, True, False, True]


@pytest.mark.parametrize("q, order", [(D.Exponential(f64(1.3)), 1), (D.Gamma(f64(2.2), f64(1.4)), 1),
                                      (D.Normal(f64(0.3), f64(0.8)), 2)], ids=["Exponential", "Gamma", "Normal"])
def test_a_pareto_without_the_moment_q_needs_is_infinite_with_zero_gradient(q, order):
    alpha = ag.tensor([order - 0.5, float(order), order + 0.5], dtype=ag.float64, requires_grad=True)
    kl = D.kl_divergence(D.Pareto(f64(1.5), alpha), q)
    assert np.isposinf(kl.detach().numpy()).tolist() == [True, True, False]
    kl[2].backward()
    grad = alpha.grad.numpy()
    assert grad[:2].tolist() == [0.0, 0.0] and np.isfinite(grad[2]) and grad[2] != 0


@pytest.mark.gpu
@pytest.mark.parametrize("name", [n for n in FINITE if "from 0" not in n])
def test_the_divergence_and_its_gradients_are_the_cpus_on_cuda(name):
    pytest.importorskip("cupy")
    _, p_params, _, q_params, _, _ = FINITE[name]
    results = []
    for device in (None, ag.device("cuda:0")):
        leaves = [ag.tensor([v, v * 1.1], dtype=ag.float64, device=device, requires_grad=True)
                  for v in p_params + q_params]
        kl = D.kl_divergence(*build_pair(name, leaves))
        assert kl.device == leaves[0].device
        grads = ag.autograd.grad(kl.sum(), leaves)
        results.append([t.detach().cpu().numpy() for t in (kl, *grads)])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-10)


@pytest.mark.gpu
def test_the_infinite_divergences_stay_on_cuda():
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    p = D.Normal(ag.tensor([0.0, 1.0], device=cuda), 1.0)
    kl = D.kl_divergence(p, D.Exponential(ag.tensor(1.0, device=cuda)))
    assert kl.device == cuda and np.isposinf(kl.cpu().numpy()).all()
    masked = D.kl_divergence(D.Uniform(ag.tensor([-1.0, 0.5], device=cuda), 2.0),
                             D.Gamma(ag.tensor(2.0, device=cuda), 1.0))
    assert masked.device == cuda and np.isposinf(masked.cpu().numpy()).tolist() == [True, False]
