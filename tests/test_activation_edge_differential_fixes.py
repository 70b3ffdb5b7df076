"""Activations at special inputs (NaN, +-inf, -0.0, their kinks), from a differential review against PyTorch.
Expected values are the definitions written out per element; NaN takes the branch PyTorch's kernels write for it
(the one its comparisons fail into)."""

import math
import warnings

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
EDGES = [math.nan, math.inf, -math.inf, -0.0, 0.0, -3.0, 3.0, -1.25, 0.75, 40.0, -40.0]


def leaf(values, dtype=np.float64, device=None):
    return ag.tensor(np.array(values, dtype=dtype), requires_grad=True, device=device)


def weighted_grad(fn, values, dtype, device=None):
    """The gradient of (fn(x) * w).sum(), w = 1, 2, 3, ..., and the weights."""
    x = leaf(values, dtype, device)
    w = np.arange(1, len(values) + 1, dtype=dtype)
    (fn(x) * ag.tensor(w, device=device)).sum().backward()
    return x.grad.cpu().numpy(), w


def elu_slope(x, alpha, scale, input_scale):
    """elu's derivative as PyTorch's kernel writes it: the exponential side where x <= 0, else `scale` (a NaN
    fails x <= 0)."""
    return scale * alpha * input_scale * math.exp(x * input_scale) if x <= 0 else scale


def hardswish_slope(x):
    """0 at or below -3, x / 3 + 1/2 inside, 1 at or above 3 (a NaN fails both comparisons: 1)."""
    return 0.0 if x <= -3 else x / 3 + 0.5 if x < 3 else 1.0


ELUS = [
    ("selu", F.selu, SELU_ALPHA, SELU_SCALE, 1.0),
    ("elu_alpha_2", lambda t: F.elu(t, 2.0), 2.0, 1.0, 1.0),
    ("celu_alpha_0.5", lambda t: F.celu(t, 0.5), 0.5, 1.0, 2.0),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("label, fn, alpha, scale, input_scale", ELUS)
def test_elu_family_gradient_at_nan_is_the_linear_sides(label, fn, alpha, scale, input_scale, dtype):
    got, w = weighted_grad(fn, EDGES, dtype)
    want = [wi * elu_slope(x, alpha, scale, input_scale) for x, wi in zip(EDGES, w)]
    np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=label)
    assert got[0] == pytest.approx(scale * w[0])  # selu's was alpha * scale times too large


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("label, fn, alpha, scale, input_scale", ELUS)
def test_elu_family_keeps_the_sign_of_negative_zero(label, fn, alpha, scale, input_scale, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = fn(leaf(EDGES, dtype)).detach().numpy()
    want = [scale * x if x > 0 else scale * alpha * math.expm1(x * input_scale) for x in EDGES]
    np.testing.assert_allclose(y, want, rtol=1e-6, equal_nan=True, err_msg=label)
    assert np.signbit(y[3]) and not np.signbit(y[4])  # scale * alpha * expm1(-0.0) is -0.0


@pytest.mark.filterwarnings("ignore:invalid value encountered in multiply")  # -inf * 0 in the forward: NaN
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hardswish_gradient_at_nan_and_its_kinks(dtype):
    got, w = weighted_grad(F.hardswish, EDGES, dtype)
    np.testing.assert_allclose(got, [wi * hardswish_slope(x) for x, wi in zip(EDGES, w)], rtol=1e-6)
    assert got[0] == w[0]  # was 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softshrink_at_infinities_nan_and_its_kinks_warns_nothing(dtype):
    lambd = 0.5
    values = EDGES + [-0.5, 0.5, -0.25]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # was inf * 0: numpy's invalid-value warning
        y = F.softshrink(leaf(values, dtype), lambd).detach().numpy()
    want = [x - lambd if x > lambd else x + lambd if x < -lambd else x if math.isnan(x) else 0.0 for x in values]
    np.testing.assert_array_equal(y, np.array(want, dtype=dtype))


def test_changed_rules_still_match_finite_differences_away_from_their_kinks():
    x = leaf([-4.5, -2.0, -0.7, 0.4, 1.3, 2.9, 3.6])
    for fn in (F.selu, lambda t: F.elu(t, 2.0), lambda t: F.celu(t, 0.5)):
        assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))
    assert gradcheck(F.hardswish, (x,)) and gradgradcheck(F.hardswish, (x,))
    assert gradcheck(F.softshrink, (x,))


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore:invalid value encountered in multiply")  # hardswish(-inf) is -inf * 0: NaN
def test_edge_rules_on_cuda_match_the_definitions(cupy):
    got, w = weighted_grad(F.selu, EDGES, np.float64, "cuda:0")
    want = [wi * elu_slope(x, SELU_ALPHA, SELU_SCALE, 1.0) for x, wi in zip(EDGES, w)]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    got, w = weighted_grad(F.hardswish, EDGES, np.float64, "cuda:0")
    np.testing.assert_allclose(got, [wi * hardswish_slope(x) for x, wi in zip(EDGES, w)], rtol=1e-6)
    y = F.softshrink(leaf(EDGES, device="cuda:0")).detach().cpu().numpy()
    want = [x - 0.5 if x > 0.5 else x + 0.5 if x < -0.5 else x if math.isnan(x) else 0.0 for x in EDGES]
    np.testing.assert_array_equal(y, want)
    y = F.softplus(leaf(EDGES, device="cuda:0"), 2.0, 10.0).detach().cpu().numpy()
    np.testing.assert_allclose(y, [softplus_value(x, 2.0, 10.0) for x in EDGES], rtol=1e-6, equal_nan=True)


def softplus_value(x, beta, threshold):
    return x if x * beta > threshold else math.log1p(math.exp(x * beta)) / beta


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("beta, threshold", [(1.0, 20.0), (2.0, 10.0), (-1.0, 20.0)])
def test_softplus_at_nan_and_infinities_warns_nothing(beta, threshold, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # was numpy's invalid-value warning from logaddexp at NaN
        y = F.softplus(leaf(EDGES, dtype), beta, threshold).detach().numpy()
    want = [softplus_value(x, beta, threshold) for x in EDGES]
    np.testing.assert_allclose(y, want, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mish_at_nan_and_large_inputs_warns_nothing(dtype):
    values = [math.nan, math.inf, -0.0, 0.0, -3.0, 1.5, 19.5, 20.5, 40.0, -40.0, 700.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = F.mish(leaf(values, dtype)).detach().numpy()
    want = [x * math.tanh(math.log1p(math.exp(min(x, 700.0)))) for x in values]
    np.testing.assert_allclose(y, np.array(want, dtype=dtype), rtol=1e-6, equal_nan=True)
