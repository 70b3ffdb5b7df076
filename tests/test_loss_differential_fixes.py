"""Loss behaviours found to differ from PyTorch's by differential testing, each checked against an independent
computation: the deprecated reduction='elementwise_mean' (taken, with a warning, by the losses PyTorch runs as one
kernel, refused by those it composes in Python), huber_loss's result in the input's dtype, l1_loss's mean over
complex differences, binary_cross_entropy_with_logits at infinite logits (the target's infinite gradient, no numpy
warnings), gaussian_nll_loss's error for a var of another type and TripletMarginWithDistanceLoss's
PairwiseDistance child."""

import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(31)
X = RNG.standard_normal((4, 5))
Y = RNG.standard_normal((4, 5))
P = RNG.uniform(0.1, 0.9, (4, 5))
CLASSES = np.array([1, 0, 4, 2])
SIGNS = np.array([1.0, -1.0, -1.0, 1.0, 1.0])
DEPRECATED = "reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead."


def _logsumexp(x: np.ndarray) -> np.ndarray:
    top = x.max(1)
    return top + np.log(np.exp(x - top[:, None]).sum(1))


def _t(a: np.ndarray) -> ag.Tensor:
    return ag.tensor(a)


# (loss of reduction, numpy mean it must equal)
KERNEL_LOSSES = {
    "mse_loss": (lambda r: F.mse_loss(_t(X), _t(Y), reduction=r), np.mean((X - Y) ** 2)),
    "l1_loss": (lambda r: F.l1_loss(_t(X), _t(Y), reduction=r), np.mean(np.abs(X - Y))),
    "nll_loss": (lambda r: F.nll_loss(_t(X), _t(CLASSES), reduction=r), -np.mean(X[np.arange(4), CLASSES])),
    "cross_entropy": (lambda r: F.cross_entropy(_t(X), _t(CLASSES), reduction=r),
                      np.mean(_logsumexp(X) - X[np.arange(4), CLASSES])),
    "kl_div": (lambda r: F.kl_div(_t(X), _t(P), reduction=r), np.mean(P * (np.log(P) - X))),
    "margin_ranking_loss": (lambda r: F.margin_ranking_loss(_t(X[0]), _t(Y[0]), _t(SIGNS), reduction=r),
                            np.mean(np.maximum(0, -SIGNS * (X[0] - Y[0])))),
    # one frame, one label per sample: each loss is -log_probs at its label, over a target length of 1
    "ctc_loss": (lambda r: F.ctc_loss(_t(X[None]), _t(CLASSES[:, None] % 4 + 1), [1] * 4, [1] * 4, reduction=r),
                 -np.mean(X[np.arange(4), CLASSES % 4 + 1])),
    "MSELoss": (lambda r: nn.MSELoss(reduction=r)(_t(X), _t(Y)), np.mean((X - Y) ** 2)),
}


@pytest.mark.parametrize("name", list(KERNEL_LOSSES))
def test_kernel_losses_take_elementwise_mean_as_the_mean_with_one_deprecation_warning(name):
    loss, expected = KERNEL_LOSSES[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = loss("elementwise_mean")
    assert [str(w.message) for w in caught] == [DEPRECATED]  # kl_div's warning about 'mean' is not given
    assert got.shape == ()
    np.testing.assert_allclose(got.item(), expected, rtol=1e-12)


COMPOSED_LOSSES = {
    "poisson_nll_loss": (lambda r: F.poisson_nll_loss(_t(X), _t(P), reduction=r),
                         "elementwise_mean is not a valid value for reduction"),
    "triplet_margin_with_distance_loss": (lambda r: F.triplet_margin_with_distance_loss(_t(X), _t(Y), _t(P),
                                                                                         reduction=r),
                                          "elementwise_mean is not a valid value for reduction"),
    "gaussian_nll_loss": (lambda r: F.gaussian_nll_loss(_t(X), _t(Y), _t(P), reduction=r),
                          "elementwise_mean is not valid"),
    "multilabel_soft_margin_loss": (lambda r: F.multilabel_soft_margin_loss(_t(X), _t(P), reduction=r),
                                    "elementwise_mean is not valid"),
    "weighted mse_loss": (lambda r: F.mse_loss(_t(X), _t(Y), reduction=r, weight=_t(P)),
                          "Invalid reduction mode: elementwise_mean. Expected one of 'none', 'mean', 'sum'."),
}


@pytest.mark.parametrize("name", list(COMPOSED_LOSSES))
def test_losses_composed_in_python_refuse_elementwise_mean(name):
    loss, message = COMPOSED_LOSSES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused before any warning
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            loss("elementwise_mean")


def _huber(d: np.ndarray, delta: float) -> np.ndarray:
    return np.where(np.abs(d) < delta, 0.5 * d * d, delta * (np.abs(d) - 0.5 * delta))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("input_dtype, target_dtype", [(np.float32, np.float64), (np.float16, np.float32)])
def test_huber_loss_has_the_inputs_dtype_and_each_operand_its_own_gradient(reduction, input_dtype, target_dtype):
    x = ag.tensor(X.astype(input_dtype), requires_grad=True)
    y = ag.tensor(Y.astype(target_dtype), requires_grad=True)
    out = F.huber_loss(x, y, reduction=reduction, delta=0.8)
    assert out.dtype == input_dtype
    d = X.astype(input_dtype).astype(np.float64) - Y.astype(target_dtype).astype(np.float64)
    losses = _huber(d, 0.8)
    expected = losses if reduction == "none" else losses.mean() if reduction == "mean" else losses.sum()
    tolerance = 1e-6 if input_dtype == np.float32 else 2e-3
    np.testing.assert_allclose(out.detach().numpy().astype(np.float64), expected, rtol=tolerance, atol=tolerance)
    g = RNG.standard_normal(out.shape)
    gx, gy = ag.autograd.grad(out, (x, y), ag.tensor(g.astype(input_dtype)))
    assert (gx.dtype, gy.dtype) == (input_dtype, target_dtype)
    slope = np.clip(d, -0.8, 0.8) * (g if reduction == "none" else g / (d.size if reduction == "mean" else 1))
    np.testing.assert_allclose(gx.numpy().astype(np.float64), slope, rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(gy.numpy().astype(np.float64), -slope, rtol=tolerance, atol=tolerance)


def test_weighted_huber_loss_promotes_the_input_dtype_losses_with_the_weight():
    weight = RNG.uniform(0.5, 2.0, (4, 5))
    out = F.huber_loss(ag.tensor(X.astype(np.float32)), ag.tensor(Y), reduction="sum", weight=ag.tensor(weight))
    assert out.dtype == np.float64
    losses = _huber(X.astype(np.float32).astype(np.float64) - Y, 1.0).astype(np.float32)
    np.testing.assert_allclose(out.item(), (losses * weight).sum(), rtol=1e-12)


COMPLEX_X = X + 1j * Y
COMPLEX_Y = P - 1j * X[::-1]


@pytest.mark.parametrize("dtype, real", [(np.complex128, np.float64), (np.complex64, np.float32)])
def test_l1_loss_mean_of_complex_differences_is_their_mean_magnitude(dtype, real):
    out = F.l1_loss(ag.tensor(COMPLEX_X.astype(dtype)), ag.tensor(COMPLEX_Y.astype(dtype)))
    assert out.dtype == real
    np.testing.assert_allclose(out.item(), np.abs(COMPLEX_X - COMPLEX_Y).mean(), rtol=1e-6)


def test_l1_loss_mean_of_complex_differences_has_the_gradient_of_its_magnitudes():
    x = ag.tensor(COMPLEX_X, requires_grad=True)
    y = ag.tensor(COMPLEX_Y, requires_grad=True)
    assert gradcheck(lambda a, b: F.l1_loss(a, b), (x, y))
    assert gradcheck(lambda a, b: F.l1_loss(a, b, reduction="sum"), (x, y))


def _distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """PairwiseDistance's: the 2-norm of each row of a - b + eps."""
    return np.sqrt(((a - b + 1e-6) ** 2).sum(1))


def test_triplet_margin_with_distance_loss_module_keeps_a_pairwise_distance_child():
    loss = nn.TripletMarginWithDistanceLoss(margin=0.5)
    assert isinstance(loss.distance_function, nn.PairwiseDistance)
    assert list(loss.children()) == [loss.distance_function]
    assert repr(loss) == "TripletMarginWithDistanceLoss(\n  (distance_function): PairwiseDistance()\n)"
    anchor, positive, negative = X, Y, P
    expected = np.maximum(0.5 + _distance(anchor, positive) - _distance(anchor, negative), 0).mean()
    np.testing.assert_allclose(loss(_t(anchor), _t(positive), _t(negative)).item(), expected, rtol=1e-12)
    given = nn.TripletMarginWithDistanceLoss(distance_function=F.pairwise_distance)
    assert given.distance_function is F.pairwise_distance and not list(given.children())


INFINITE_LOGITS = np.array([np.inf, -np.inf, 40.0, -40.0])
SOFT_TARGETS = np.array([1.0, 0.0, 0.5, 0.5])


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0, x)


@pytest.mark.parametrize("pos_weight", [None, 2.0])
def test_bce_with_logits_target_gradient_at_infinite_logits_is_infinite_and_silent(pos_weight):
    x = ag.tensor(INFINITE_LOGITS, requires_grad=True)
    t = ag.tensor(SOFT_TARGETS, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = F.binary_cross_entropy_with_logits(
            x, t, reduction="none", pos_weight=None if pos_weight is None else ag.tensor([pos_weight]))
        gx, gt = ag.autograd.grad(out.sum(), (x, t))
    pw = 1.0 if pos_weight is None else pos_weight
    # the finite losses: (1 - t) x + (1 + (pw - 1) t) softplus(-x)
    finite = INFINITE_LOGITS[2:], SOFT_TARGETS[2:]
    expected = (1 - finite[1]) * finite[0] + (1 + (pw - 1) * finite[1]) * _softplus(-finite[0])
    np.testing.assert_allclose(out.detach().numpy()[2:], expected, rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), [0.0, 0.0, 0.5, -0.5 * pw], rtol=1e-12)
    np.testing.assert_array_equal(gt.numpy(), pw * _softplus(-INFINITE_LOGITS) - _softplus(INFINITE_LOGITS))
    assert gt.numpy()[0] == -np.inf and gt.numpy()[1] == np.inf


def test_bce_with_logits_target_gradient_matches_finite_differences_twice():
    x = ag.tensor(RNG.standard_normal((3, 4)) * 3, requires_grad=True)
    t = ag.tensor(RNG.uniform(0.1, 0.9, (3, 4)), requires_grad=True)
    pos_weight = ag.tensor(RNG.uniform(0.5, 2.0, 4))

    def loss(a, b):
        return F.binary_cross_entropy_with_logits(a, b, pos_weight=pos_weight, reduction="none")

    assert gradcheck(loss, (x, t)) and gradgradcheck(loss, (x, t))


@pytest.mark.parametrize("var", [1, True, [1.0]])
def test_gaussian_nll_loss_names_a_var_that_is_neither_tensor_nor_float(var):
    with pytest.raises(TypeError, match=rf"^gaussian_nll_loss\(\): argument 'var' \(position 3\) must be Tensor or "
                                        rf"float, not {type(var).__name__}$"):
        F.gaussian_nll_loss(_t(X), _t(Y), var)
    expected = 0.5 * (np.log(2.0) + (X - Y) ** 2 / 2.0).mean()
    np.testing.assert_allclose(F.gaussian_nll_loss(_t(X), _t(Y), 2.0).item(), expected, rtol=1e-12)


@pytest.mark.gpu
def test_huber_complex_l1_and_bce_with_logits_on_cuda_match_their_definitions(cupy):
    x = ag.tensor(X.astype(np.float32), device="cuda:0", requires_grad=True)
    y = ag.tensor(Y, device="cuda:0", requires_grad=True)
    out = F.huber_loss(x, y, reduction="sum")
    assert out.dtype == np.float32 and out.device == ag.device("cuda:0")
    d = X.astype(np.float32).astype(np.float64) - Y
    np.testing.assert_allclose(out.item(), _huber(d, 1.0).sum(), rtol=1e-6)
    gx, gy = ag.autograd.grad(out, (x, y))
    assert (gx.dtype, gy.dtype) == (np.float32, np.float64)
    np.testing.assert_allclose(gy.cpu().numpy(), -np.clip(d, -1, 1), rtol=1e-6)
    a = ag.tensor(COMPLEX_X, device="cuda:0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.warns(UserWarning, match=f"^{re.escape(DEPRECATED)}$"):
            out = F.l1_loss(a, ag.tensor(COMPLEX_Y, device="cuda:0"), reduction="elementwise_mean")
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.item(), np.abs(COMPLEX_X - COMPLEX_Y).mean(), rtol=1e-12)
    x = ag.tensor(INFINITE_LOGITS, device="cuda:0")
    t = ag.tensor(SOFT_TARGETS, device="cuda:0", requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = F.binary_cross_entropy_with_logits(x, t, reduction="none")
        (gt,) = ag.autograd.grad(out.sum(), t)
    np.testing.assert_allclose(out.detach().cpu().numpy()[2:], [20.0, 20.0], rtol=1e-12)
    np.testing.assert_array_equal(gt.cpu().numpy(), -INFINITE_LOGITS)
