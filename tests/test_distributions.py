"""actorgrad.distributions against PyTorch 2.13's torch.distributions: log densities, entropies, moments, CDFs and
KL divergences with their gradients (reference numbers computed offline with torch in float64), gradients by
gradcheck (log densities, reparameterized samples), the implicit gradients of gamma and Dirichlet samples, sampling
shapes, reproducibility and statistics, and argument validation."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import distributions as D
from actorgrad.autograd import gradcheck
from actorgrad.distributions.gamma_gradients import dirichlet_grad, standard_gamma_grad

# -- reference numbers (torch 2.13, float64): per case, the values and the gradients of log_prob.sum() +
# entropy.sum() (of kl.sum() for KL_REFERENCE, of cdf.sum() + icdf.sum() for CDF_REFERENCE) w.r.t. the parameters --
REFERENCE = {'Bernoulli(logits)': {'entropy': [0.6820224894250294, 0.6191210810456879],
                       'grads': [[0.35221998968111723, -0.138897761656152]],
                       'log_prob': [-0.5543552444685271, -0.37110066594777774],
                       'mean': [0.574442516811659, 0.31002551887238755],
                       'variance': [0.2444583116907459, 0.21390969652029443]},
 'Bernoulli(probs)': {'entropy': [0.6108643020548935, 0.5004024235381879],
                      'grads': [[4.180631193720537, -6.386294361119891]],
                      'log_prob': [-1.2039728043259361, -1.6094379124341005],
                      'mean': [0.3, 0.8],
                      'variance': [0.21, 0.15999999999999998]},
 'Beta': {'entropy': [-0.8838931153981984, -0.14259906852727355],
          'grads': [[7.54954457812447, -0.24570172106570276],
                    [-0.2572719471411697, 0.323857735003096]],
          'log_prob': [0.28675247844343743, 0.3412336681549742],
          'mean': [0.3, 0.5238095238095238],
          'variance': [0.105, 0.04796790511076225]},
 'Categorical(logits)': {'entropy': [1.0529013276679486, 1.0880302246016647],
                         'grads': [[[-0.23345133111420355, -0.6226386529556298, 0.8560899840698333],
                                    [0.737567438765793, -0.26243256123420694,
                                     -0.47513487753158606]]],
                         'log_prob': [-1.4434200371423098, -1.2089181979565276]},
 'Categorical(probs)': {'entropy': [0.8239592165010823, 0.9950269901795212],
                        'grads': [[[-0.3647207128176595, -1.1820784236607647, 10.550789527739097],
                                   [4.4545004517741695, -0.5454995482258304, -1.563600361419336]]],
                        'log_prob': [-2.4849066497880004, -1.504077396776274]},
 'Dirichlet': {'entropy': [-2.58684264344154, -1.5088009282325565],
               'grads': [[[11.311634934865857, -0.6081628578199311, 0.3429023691771581],
                          [2.628640868003072, -0.5093158352401124, -0.05563761334770434]]],
               'log_prob': [0.8854833418214586, 1.1816954417041163],
               'mean': [[0.075, 0.55, 0.375],
                        [0.12280701754385964, 0.3508771929824561, 0.5263157894736842]],
               'variance': [[0.013875, 0.0495, 0.046875],
                            [0.01607842596803609, 0.03399438633241916, 0.03721007152602638]]},
 'Exponential': {'entropy': [2.203972804325936, 0.21154263963572972],
                 'grads': [[-0.5, -0.4]],
                 'log_prob': [-1.353972804325936, -0.09154263963572984],
                 'mean': [3.333333333333334, 0.4545454545454546],
                 'variance': [11.11111111111111, 0.2066115702479339]},
 'Gamma': {'entropy': [-0.6992940167832848, 0.9506481621413202],
           'grads': [[10.415019366725609, -0.45495630146150134], [-1.1, 0.20000000000000007]],
           'log_prob': [0.3390090870961364, -0.47157254780774543],
           'mean': [0.42857142857142866, 1.1],
           'variance': [0.6122448979591837, 0.55]},
 'Independent': {'entropy': [3.1743493030305583, 3.936489355077455],
                 'grads': [[[-0.40816326530612246, 0.4], [-0.4, 0.03333333333333334]],
                           [[0.11661807580174928, 0.32000000000000006],
                            [0.16000000000000003, 0.00333333333333333]]],
                 'log_prob': [-2.5351656295611704, -3.021489355077455],
                 'mean': [[0.3, -1.2], [0.5, 0.1]],
                 'variance': [[0.48999999999999994, 4.0], [1.0, 9.0]]},
 'Laplace': {'entropy': [1.336472236621213, 2.386294361119891],
             'grads': [[-1.4285714285714286, 0.5], [0.40816326530612246, 0.4]],
             'log_prob': [-0.6221865223354985, -2.1862943611198906],
             'mean': [0.3, -1.2],
             'variance': [0.9799999999999999, 8.0]},
 'Normal': {'entropy': [1.0622635892659402, 2.112085713764618],
            'grads': [[-0.40816326530612246, 0.4], [0.11661807580174928, 0.32000000000000006]],
            'log_prob': [-0.6030799157965525, -1.932085713764618],
            'mean': [0.3, -1.2],
            'variance': [0.48999999999999994, 4.0]},
 'OneHotCategorical': {'entropy': [0.8239592165010823, 0.9950269901795212],
                       'grads': [[[-0.3647207128176595, -1.1820784236607647, 10.550789527739097],
                                  [4.4545004517741695, -0.5454995482258304, -1.563600361419336]]],
                       'log_prob': [-2.4849066497880004, -1.504077396776274],
                       'mean': [[0.24999999999999997, 0.6666666666666666, 0.08333333333333333],
                                [0.22222222222222224, 0.22222222222222224, 0.5555555555555556]],
                       'variance': [[0.18749999999999997, 0.22222222222222224, 0.07638888888888888],
                                    [0.17283950617283952, 0.17283950617283952,
                                     0.24691358024691357]]},
 'Uniform': {'entropy': [-0.916290731874155, 1.1631508098056809],
             'grads': [[0.0, 0.0], [0.0, 0.0]],
             'log_prob': [0.916290731874155, -1.1631508098056809],
             'mean': [0.5, 0.4],
             'variance': [0.01333333333333333, 0.8533333333333334]}}

KL_REFERENCE = {'Bernoulli': {'grads': [[-1.2527629684953678, 3.58351893845611],
                         [1.2499999999999996, -4.374999999999999]],
               'kl': [0.1837868973868122, 1.145725502930663]},
 'Beta': {'grads': [[-7.164397127730954, 0.35157422903794955],
                    [0.3646551819317607, 0.05159812363185101],
                    [1.7505061641140474, -2.7811375550154653],
                    [-0.07174958999849812, -0.16743191613535613]],
          'kl': [0.9697613730821952, 0.6543798138210573]},
 'Categorical': {'grads': [[[-1.1503882611360081, 0.4190578655327202, -0.16017800319322928]],
                           [[0.753968253968254, -2.103174603174603, -0.31746031746031744]]],
                 'kl': [0.47556363275142666]},
 'Dirichlet': {'grads': [[[-4.186287658987573, 0.8330996767573408, 2.114059424934612]],
                         [[2.655447413668878, -3.8405705412832014, -4.441172638456953]]],
               'kl': [1.326879805673951]},
 'Exponential': {'grads': [[-8.88888888888889, 0.6944444444444445],
                           [2.4242424242424243, -4.166666666666666]],
                 'kl': [1.3673836825364063, 0.9584261358947218]},
 'Gamma': {'grads': [[-8.653434493095151, 0.5173772060383834],
                     [0.6530612244897962, -0.05000000000000002],
                     [2.3166292297421593, -3.6137056388801083],
                     [-0.3047619047619048, 0.19999999999999996]],
           'kl': [1.1608520272877478, 0.69765688806589]},
 'Independent': {'grads': [[[0.08888888888888889, -5.6]], [[-1.1174603174603175, 7.5]],
                           [[-0.08888888888888889, 5.6]], [[0.5096296296296295, -45.68]]],
                 'kl': [10.413623468704785]},
 'Laplace': {'grads': [[0.16568180461647597, -1.006829392417181],
                       [-0.784448034506898, 1.1883900328907924],
                       [-0.16568180461647597, 1.006829392417181],
                       [0.3439848421543555, -7.572682430331276]],
             'kl': [0.2461627888153637, 2.4000468540457476]},
 'Normal': {'grads': [[0.08888888888888889, -5.6], [-1.1174603174603175, 7.5],
                      [-0.08888888888888889, 5.6], [0.5096296296296295, -45.68]],
            'kl': [0.37991782982467454, 10.03370563888011]},
 'OneHotCategorical': {'grads': [[[-1.1503882611360081, 0.4190578655327202, -0.16017800319322928]],
                                 [[0.753968253968254, -2.103174603174603, -0.31746031746031744]]],
                       'kl': [0.47556363275142666]},
 'Uniform': {'grads': [[2.5, 0.0], [-2.5, -0.0], [-0.7142857142857143, -0.0],
                       [0.7142857142857143, 0.0]],
             'kl': [1.252762968495368, math.inf]}}

CDF_REFERENCE = {'Exponential': {'cdf': [0.1392920235749422, 0.5852170883184187],
                 'grads': [[-2.04901880416758, -0.30982755702035203]],
                 'icdf': [0.7438118377140326, 1.0466295877245662]},
 'Laplace': {'cdf': [0.37573864653764294, 0.7753355179413893],
             'grads': [[0.4632305049462243, 0.8876677589706946],
                       [-0.7629280190016476, 1.5195721196106564]],
             'icdf': [-0.3414035123119085, 2.018875824868201]},
 'Normal': {'cdf': [0.38754848109799234, 0.7881446014166034],
            'grads': [[0.4528760572225541, 0.8551542236192585],
                      [-0.6853001070650726, 1.1656749444400076]],
            'icdf': [-0.28913486350103995, 1.3631031310892017]},
 'Uniform': {'cdf': [0.5000000000000001, 0.5],
             'grads': [[-0.4499999999999993, -0.05625000000000002], [-1.0500000000000005, 0.74375]],
             'icdf': [0.38, 1.6800000000000004]}}

GAMMA_GRAD = ([0.3, 0.3, 2.5, 2.5, 20.0, 20.0, 20.0, 5.0], [0.05, 1.5, 0.5, 4.0, 19.5, 10.0, 30.0, 3.0],
 [0.49471098700419375, 3.2128333918963614, 0.426839502982039, 1.3395387468383573,
  0.9956475202907359, 0.6988779184588811, 1.2265978621587852, 0.7918785927616308])

DIRICHLET_GRAD = ([0.05, 0.95, 0.52, 0.335, 0.4, 0.7], [0.5, 3.0, 10.0, 10.0, 4.0, 0.8],
 [1.5, 3.5, 20.0, 30.0, 14.0, 5.0],
 [0.3153402393214728, 0.3513072656601796, 0.0527123870687066, 0.03435186167599084,
  0.09000959636115476, 0.5139772314101052])

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
# Gradients through digamma's derivative: actorgrad's polygamma(1, x) is good to a few ulps, PyTorch's trigamma to
# about 1e-10 (relative), which cancellation in these gradients can grow to a few 1e-9.
TRIGAMMA = {"Gamma", "Beta", "Dirichlet"}


def f64(values, requires_grad: bool = True) -> ag.Tensor:
    return ag.tensor(values, dtype=ag.float64, requires_grad=requires_grad)


def assert_close(got, expected, rtol: float = 1e-13, atol: float = 1e-15) -> None:
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), np.asarray(expected), rtol=rtol, atol=atol)


def assert_grads(grads, expected, name: str) -> None:
    rtol, atol = (1e-9, 1e-9) if name in TRIGAMMA else (1e-12, 1e-15)
    for got, want in zip(grads, expected, strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol)


def sample_cases():
    """One distribution of each kind, batched, in float64."""
    return {name: build(*(f64(p, requires_grad=False) for p in params)) for name, (build, params, _) in CASES.items()}


# -- values and gradients against PyTorch's ------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_log_prob_entropy_and_moments_equal_torchs(name):
    build, params, value = CASES[name]
    expected = REFERENCE[name]
    leaves = [f64(p) for p in params]
    dist = build(*leaves)
    log_prob = dist.log_prob(f64(value, requires_grad=False))
    entropy = dist.entropy()
    assert_close(log_prob, expected["log_prob"])
    assert_close(entropy, expected["entropy"])
    for moment in ("mean", "variance"):
        if moment in expected:
            assert_close(getattr(dist, moment), expected[moment])
    assert_grads(ag.autograd.grad(log_prob.sum() + entropy.sum(), leaves), expected["grads"], name)


@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_divergence_and_its_gradient_equal_torchs(name):
    build, p_params, q_params = KL_CASES[name]
    p_leaves, q_leaves = [f64(v) for v in p_params], [f64(v) for v in q_params]
    kl = D.kl_divergence(build(*p_leaves), build(*q_leaves))
    assert_close(kl, KL_REFERENCE[name]["kl"])
    assert_grads(ag.autograd.grad(kl.sum(), p_leaves + q_leaves), KL_REFERENCE[name]["grads"], name)


@pytest.mark.parametrize("name", list(CDF_REFERENCE))
def test_cdf_and_icdf_equal_torchs(name):
    build, params, value = CASES[name]
    leaves = [f64(p) for p in params]
    dist = build(*leaves)
    cdf, icdf = dist.cdf(f64(value, requires_grad=False)), dist.icdf(f64([0.2, 0.9], requires_grad=False))
    assert_close(cdf, CDF_REFERENCE[name]["cdf"])
    assert_close(icdf, CDF_REFERENCE[name]["icdf"])
    assert_grads(ag.autograd.grad(cdf.sum() + icdf.sum(), leaves), CDF_REFERENCE[name]["grads"], name)


def test_kl_divergence_is_infinite_or_zero_at_the_edges_as_torchs():
    bernoulli = D.kl_divergence(D.Bernoulli(f64([0.0, 1.0, 0.3, 0.3])), D.Bernoulli(f64([0.5, 0.5, 0.0, 1.0])))
    assert_close(bernoulli, [0.6931471805599453, 0.6931471805599453, math.inf, math.inf])
    categorical = D.kl_divergence(D.Categorical(f64([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]])),
                                  D.Categorical(f64([[0.2, 0.0, 0.8], [0.2, 0.3, 0.5]])))
    assert_close(categorical, [math.inf, 0.0])
    uniform = D.kl_divergence(D.Uniform(f64([0.0, 0.0]), f64([1.0, 1.0])), D.Uniform(f64([0.5, -1.0]), f64([2.0, 2.0])))
    assert_close(uniform, [math.inf, 1.0986122886681098])


def test_modes_equal_torchs():
    assert_close(D.Bernoulli(f64([0.2, 0.5, 0.7])).mode, [0.0, math.nan, 1.0])
    assert_close(D.Beta(f64([0.3, 2.0, 0.5, 3.0]), f64([0.7, 0.5, 2.0, 4.0])).mode, [1.0, 1.0, 0.0, 0.4])
    assert_close(D.Gamma(f64([0.3, 2.0]), f64([0.7, 3.0])).mode, [0.0, 1 / 3])
    assert D.Categorical(f64([[0.3, 0.5, 0.2], [0.6, 0.1, 0.3]])).mode.tolist() == [1, 0]
    assert_close(D.OneHotCategorical(f64([0.3, 0.5, 0.2])).mode, [0.0, 1.0, 0.0])
    assert np.isnan(D.Uniform(0.0, 1.0).mode.item())


def test_categorical_entropy_is_finite_with_a_zero_probability():
    assert_close(D.Categorical(f64([0.0, 0.5, 0.5])).entropy(), 0.6931471805599453)


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
def test_the_gamma_sample_gradient_equals_torchs_in_each_region():
    alpha, x, expected = GAMMA_GRAD
    np.testing.assert_allclose(standard_gamma_grad(np, np.array(alpha), np.array(x)), expected, rtol=1e-13)


def test_the_dirichlet_sample_gradient_equals_torchs_in_each_region():
    x, alpha, total, expected = DIRICHLET_GRAD
    got = dirichlet_grad(np, np.array(x), np.array(alpha), np.array(total))
    np.testing.assert_allclose(got, expected, rtol=1e-12)


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
