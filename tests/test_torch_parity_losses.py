"""Losses and normalisation as PyTorch 2.13's: values (numpy formulas or closed forms), gradients
(finite differences in float64 or the derivatives' formulas), second derivatives, dtype rules and error texts."""

import math
import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck


def f64(values, requires_grad=False):
    return ag.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def raises(kind, text):
    return pytest.raises(kind, match=f"^{re.escape(text)}$")


X = [[0.2, -1.5, 0.7], [2.5, 0.1, -0.4]]
T = [[0.0, -0.5, 1.9], [0.3, 0.3, -0.1]]
W = [[1.0, 2.0, 0.5], [0.3, 1.5, 2.0]]


# -- dtypes ---------------------------------------------------------------------------------------------------------
def test_mixed_dtypes_refused_or_promoted_as_pytorch():
    with raises(RuntimeError, "mixed dtype (CPU): expect parameter to have scalar type of Float"):
        F.layer_norm(ag.ones(3, 4), (4,), weight=ag.ones(4, dtype=ag.float64))
    with raises(RuntimeError, "mixed dtype (CPU): all inputs must share same datatype."):
        F.layer_norm(ag.ones(3, 4, dtype=ag.float64), (4,), bias=ag.ones(4))
    with raises(RuntimeError, "mixed dtype (CPU): expect parameter to have scalar type of Float"):
        F.group_norm(ag.ones(2, 4), 2, weight=ag.ones(4, dtype=ag.float64))
    with raises(RuntimeError, "expected scalar type Float but found Double"):
        F.nll_loss(ag.zeros(3, 4), ag.tensor([0, 1, 2]), weight=ag.ones(4, dtype=ag.float64))
    with raises(RuntimeError, "expected scalar type Float but found Double"):
        F.cross_entropy(ag.zeros(3, 4), ag.tensor([0, 1, 2]), weight=ag.ones(4, dtype=ag.float64))
    # bce_with_logits computes in a tensor made from the target: the result has the target's dtype
    assert F.binary_cross_entropy_with_logits(ag.zeros(2), ag.full((2,), 0.5, dtype=ag.float64)).dtype == ag.float64
    assert F.binary_cross_entropy_with_logits(ag.zeros(2, dtype=ag.float64), ag.full((2,), 0.5)).dtype == ag.float32
    with raises(RuntimeError, "result type Float can't be cast to the desired output type Long"):
        F.binary_cross_entropy_with_logits(ag.zeros(2), ag.ones(2, dtype=ag.int64))
    with raises(RuntimeError, "Found dtype Double but expected Float"):
        F.binary_cross_entropy(ag.full((2,), 0.5), ag.zeros(2, dtype=ag.float64))
    assert F.smooth_l1_loss(ag.zeros(3), ag.zeros(3, dtype=ag.int64)).dtype == ag.float32


def test_class_index_targets_must_be_long_or_byte():
    with raises(RuntimeError, "expected target dtype to be Long or Byte, but got Float"):
        F.cross_entropy(ag.zeros(3, 4), ag.tensor([0.0, 1.0, 2.0]))
    with raises(RuntimeError, "expected target dtype to be Long or Byte, but got Int"):
        F.cross_entropy(ag.zeros(3, 4), ag.tensor([0, 1, 2], dtype=ag.int32))
    with raises(RuntimeError, "0D or 1D target tensor expected, multi-target not supported"):
        F.cross_entropy(ag.zeros(3, 4), ag.zeros(3, 5))
    with raises(RuntimeError, "Expected floating point type for target with class probabilities, got Long"):
        F.cross_entropy(ag.zeros(3, 4), ag.zeros(3, 4, dtype=ag.int64))


def test_ignore_index_refused_with_probability_targets():
    with raises(RuntimeError, "ignore_index is not supported for floating point target"):
        F.cross_entropy(ag.zeros(2, 3), ag.full((2, 3), 1 / 3), ignore_index=1)
    assert F.cross_entropy(ag.zeros(2, 3), ag.full((2, 3), 1 / 3), ignore_index=-1).item() == pytest.approx(math.log(3))


def test_label_smoothing_checked_only_above_one():
    with raises(RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(ag.zeros(2, 3), ag.tensor([0, 1]), label_smoothing=1.5)
    assert F.cross_entropy(ag.zeros(2, 3), ag.tensor([0, 1]), label_smoothing=-0.5).item() == pytest.approx(
        math.log(3))  # uniform logits: log 3 whatever the smoothing


# -- weights that require grad --------------------------------------------------------------------------------------
def _not_differentiable(function, argument):
    return raises(RuntimeError, f"The function '{function}' is not differentiable with respect to argument "
                                f"'{argument}'. This input cannot have requires_grad True.")


def test_weights_without_a_derivative_refuse_requires_grad():
    w = ag.ones(3, requires_grad=True)
    with _not_differentiable("nll_loss_forward", "weight"):
        F.nll_loss(ag.zeros(2, 3), ag.tensor([0, 1]), weight=w)
    with _not_differentiable("nll_loss2d_forward", "weight"):
        F.nll_loss(ag.zeros(2, 3, 2), ag.tensor([[0, 1], [0, 1]]), weight=w)
    with _not_differentiable("nll_loss_forward", "weight"):
        F.cross_entropy(ag.zeros(2, 3), ag.tensor([0.0, 1.0]), weight=w, label_smoothing=0.1)
    with _not_differentiable("binary_cross_entropy_with_logits", "weight"):
        F.binary_cross_entropy_with_logits(ag.zeros(3), ag.zeros(3), weight=w)
    with _not_differentiable("binary_cross_entropy_with_logits", "pos_weight"):
        F.binary_cross_entropy_with_logits(ag.zeros(3), ag.zeros(3), pos_weight=w)
    with _not_differentiable("binary_cross_entropy", "weight"):
        F.binary_cross_entropy(ag.full((3,), 0.5), ag.zeros(3), weight=w)
    with ag.no_grad():
        assert F.nll_loss(ag.zeros(2, 3), ag.tensor([0, 1]), weight=w).item() == 0.0
    # class probabilities are composed of tensor ops, as in PyTorch: the weight gets a gradient
    loss = F.cross_entropy(ag.zeros(2, 3), ag.full((2, 3), 1 / 3), weight=w)
    (g,) = ag.autograd.grad(loss, w)
    np.testing.assert_allclose(g.numpy(), [np.log(3) / 3] * 3, rtol=1e-6)


# -- no numpy warnings where PyTorch is silent ---------------------------------------------------------------------
def test_empty_and_fully_ignored_inputs_are_nan_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = [
            F.cross_entropy(ag.zeros(2, 3), ag.tensor([-100, -100]), label_smoothing=0.1),
            F.cross_entropy(ag.zeros(0, 3), ag.zeros(0, 3)),
            F.mse_loss(ag.zeros(0), ag.zeros(0)),
            F.l1_loss(ag.zeros(2, 0, 3), ag.zeros(2, 0, 3)),
            F.binary_cross_entropy_with_logits(ag.zeros(0), ag.zeros(0)),
            F.smooth_l1_loss(ag.zeros(0), ag.zeros(0)),
            F.kl_div(ag.zeros(0, 3), ag.zeros(0, 3), reduction="batchmean"),
        ]
        assert all(np.isnan(r.item()) for r in results)
        assert F.layer_norm(ag.zeros(2, 3, 0), (3, 0)).shape == (2, 3, 0)
        assert F.group_norm(ag.zeros(0, 4, 3), 2).shape == (0, 4, 3)
        mean, var = ag.zeros(3), ag.ones(3)
        assert F.batch_norm(ag.zeros(0, 3), mean, var, training=True).shape == (0, 3)
    assert mean.tolist() == [0.0, 0.0, 0.0] and var.tolist() == [1.0, 1.0, 1.0]  # no values: PyTorch keeps them


# -- bce with logits ------------------------------------------------------------------------------------------------
def test_bce_with_logits_weights_must_broadcast_to_the_input():
    x = ag.zeros(3, 4)
    mismatch = "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension 1"
    with raises(RuntimeError, mismatch.format(4, 3)):
        F.binary_cross_entropy_with_logits(x, x, weight=ag.ones(3))
    with raises(RuntimeError, mismatch.format(3, 4)):
        F.binary_cross_entropy_with_logits(x, x, pos_weight=ag.ones(3))
    with raises(RuntimeError, "output with shape [3, 4] doesn't match the broadcast shape [2, 3, 4]"):
        F.binary_cross_entropy_with_logits(x, x, weight=ag.ones(2, 3, 4))
    with raises(ValueError, "Target size ([3]) must be the same as input size ([3, 4])"):
        F.binary_cross_entropy_with_logits(x, ag.zeros(3))


# -- layer norm and batch norm --------------------------------------------------------------------------------------
def test_layer_norm_errors():
    with raises(TypeError, "layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int"):
        F.layer_norm(ag.zeros(2, 4), 4)
    with raises(TypeError, "layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, but found "
                           "element of type float at pos 0"):
        F.layer_norm(ag.zeros(2, 4), (4.0,))
    with raises(RuntimeError, "Expected weight to be of same shape as normalized_shape, but got weight of shape [3] "
                              "and normalized_shape = [4]"):
        F.layer_norm(ag.zeros(3, 4), (4,), weight=ag.ones(3))
    with raises(RuntimeError, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                              "element, but got normalized_shape = []"):
        F.layer_norm(ag.zeros(3, 4), ())
    assert nn.LayerNorm(4)(ag.zeros(2, 4)).shape == (2, 4)  # the module turns an int into a tuple, as PyTorch's


def test_batch_norm_errors():
    z, o = ag.zeros, ag.ones
    with raises(RuntimeError, "running_mean must be defined in evaluation mode"):
        F.batch_norm(z(2, 3), None, None)
    with raises(RuntimeError, "running_var must be defined in evaluation mode"):
        F.batch_norm(z(2, 3), z(3), None)
    with raises(RuntimeError, "running_mean should contain 3 elements not 2"):
        F.batch_norm(z(2, 3), z(2), o(2), weight=o(4))
    with raises(RuntimeError, "weight should contain 3 elements not 4"):
        F.batch_norm(z(2, 3), None, None, weight=o(4), training=True)
    with raises(RuntimeError, "running_mean should contain 0 elements not 3"):
        F.batch_norm(z(3), z(3), o(3))
    with raises(IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"):
        F.batch_norm(z(3), None, None, training=True)
    # shapes before dtypes
    with raises(RuntimeError, "running_mean should contain 3 elements not 2"):
        F.batch_norm(z(2, 3), z(2, dtype=ag.float64), o(2, dtype=ag.float64))


def test_batch_norm_counts_values_per_channel_before_checking_dtypes():
    with raises(ValueError, "Expected more than 1 value per channel when training, got input size [1, 3]"):
        nn.BatchNorm1d(3)(ag.zeros(1, 3, dtype=ag.float64))
    with raises(ValueError, "Expected more than 1 value per channel when training, got input size [1, 3, 1]"):
        F.batch_norm(ag.zeros(1, 3, 1, dtype=ag.float64), ag.zeros(3), ag.ones(3), training=True)


# -- nll_loss -------------------------------------------------------------------------------------------------------
def test_nll_loss_shape_errors():
    z = ag.zeros
    with raises(ValueError, "Expected 1 or more dimensions (got 0)"):
        F.nll_loss(ag.tensor(1.0), ag.tensor(0))
    with raises(ValueError, "Expected input batch_size (3) to match target batch_size (2)."):
        F.nll_loss(z(3, 4), ag.tensor([0, 1]))
    with raises(RuntimeError, "Expected target size [3, 5], got [3, 4]"):
        F.nll_loss(z(3, 4, 5), z(3, 4, dtype=ag.int64))
    with raises(RuntimeError, "only batches of spatial targets supported (3D tensors) but got targets of dimension: 2"):
        F.nll_loss(z(3, 4, 5, 6), z(3, 5, dtype=ag.int64))
    with raises(RuntimeError, "size mismatch (got input: [3, 4, 5, 6] , target: [3, 5, 7]"):
        F.nll_loss(z(3, 4, 5, 6), z(3, 5, 7, dtype=ag.int64))
    with raises(ValueError, "For 1D input, 1D target must have size 1, but got target size: 2"):
        F.nll_loss(z(4), ag.tensor([0, 1]))
    assert F.nll_loss(ag.tensor([1.0, 2.0, 3.0]), ag.tensor([1]), reduction="none").item() == -2.0


def test_legacy_size_average_and_reduce_pick_the_reduction():
    with pytest.warns(UserWarning, match=re.escape("please use reduction='sum' instead.")):
        loss = F.mse_loss(ag.tensor([0.0, 0.5, 2.0]), ag.zeros(3), size_average=False)
    assert loss.item() == 4.25
    with pytest.warns(UserWarning, match=re.escape("please use reduction='none' instead.")):
        loss = F.nll_loss(ag.zeros(2, 3), ag.tensor([0, 1]), None, None, -100, False)
    assert loss.shape == (2,)


# -- the losses PyTorch composes of tensor ops, and the new ones -----------------------------------------------------
def test_weighted_mse_l1_and_huber_values_and_gradients():
    x, t, w = f64(X, True), f64(T, True), f64(W, True)
    d, weights = np.subtract(X, T), np.array(W)
    # PyTorch's weighted mse and l1 divide by the weights' sum, its weighted huber by the element count
    assert F.mse_loss(x, t, weight=w).item() == pytest.approx(np.sum(weights * d ** 2) / weights.sum(), rel=1e-12)
    assert F.l1_loss(x, t, weight=w).item() == pytest.approx(np.sum(weights * np.abs(d)) / weights.sum(), rel=1e-12)
    huber = np.where(np.abs(d) < 0.8, 0.5 * d ** 2, 0.8 * (np.abs(d) - 0.4))
    assert F.huber_loss(x, t, delta=0.8, weight=w).item() == pytest.approx(np.mean(weights * huber), rel=1e-12)
    for fn in (F.mse_loss, F.l1_loss, lambda a, b, weight: F.huber_loss(a, b, delta=0.8, weight=weight)):
        assert gradcheck(lambda a, b, c, fn=fn: fn(a, b, weight=c), (x, t, w))
    assert gradgradcheck(lambda a, b, c: F.mse_loss(a, b, weight=c), (x, t, w))
    with raises(ValueError, "Weights and input must have the same size."):
        F.mse_loss(x, t, weight=f64([1.0]))
    with raises(ValueError, "Invalid reduction mode: foo. Expected one of 'none', 'mean', 'sum'."):
        F.l1_loss(x, t, weight=w, reduction="foo")


def test_smooth_l1_and_huber_loss():
    x, t = f64(X, True), f64(T, True)
    d = np.abs(np.subtract(X, T))
    np.testing.assert_allclose(F.smooth_l1_loss(x, t, beta=0.8, reduction="none").detach().numpy(),
                               np.where(d < 0.8, 0.5 * d ** 2 / 0.8, d - 0.4), rtol=1e-12)
    np.testing.assert_allclose(F.huber_loss(x, t, delta=0.8, reduction="none").detach().numpy(),
                               np.where(d < 0.8, 0.5 * d ** 2, 0.8 * (d - 0.4)), rtol=1e-12)
    for red in ("mean", "sum", "none"):
        assert gradcheck(lambda a, b, red=red: F.smooth_l1_loss(a, b, reduction=red, beta=0.8), (x, t))
        assert gradgradcheck(lambda a, b, red=red: F.huber_loss(a, b, reduction=red, delta=0.8), (x, t))
    assert F.smooth_l1_loss(x, t).grad_fn.name() == "SmoothL1LossBackward0"
    assert F.smooth_l1_loss(x, t, beta=0.0).grad_fn.name() == "L1LossBackward0"
    with raises(RuntimeError, "smooth_l1_loss does not support negative values for beta."):
        F.smooth_l1_loss(x, t, beta=-1.0)
    with raises(RuntimeError, "huber_loss does not support non-positive values for delta."):
        F.huber_loss(x, t, delta=0.0)
    with raises(ValueError, "foo is not a valid value for reduction"):
        F.huber_loss(x, t, reduction="foo")


LOGP = [[-1.2, -0.4, -2.0], [-0.7, -0.9, -1.1]]
P = [[0.2, 0.5, 0.3], [0.0, 0.6, 0.4]]


def test_kl_div():
    lp, p = f64(LOGP, True), f64(P)
    target = np.array(P)
    with np.errstate(divide="ignore", invalid="ignore"):  # t log t is 0 at t = 0
        pointwise = np.where(target > 0, target * (np.log(target) - LOGP), 0.0)
    assert F.kl_div(lp, p, reduction="batchmean").item() == pytest.approx(pointwise.sum() / 2, rel=1e-12)
    np.testing.assert_allclose(F.kl_div(lp, p, reduction="none").detach().numpy(), pointwise, rtol=1e-12)
    log_q = f64(LOGP[::-1].copy(), True)
    flipped = np.flip(LOGP, 1)
    assert F.kl_div(lp, f64(flipped.copy()), reduction="sum", log_target=True).item() == pytest.approx(
        np.sum(np.exp(flipped) * (flipped - LOGP)), rel=1e-12)
    q = f64([[0.2, 0.5, 0.3], [0.1, 0.6, 0.3]], True)  # away from 0, where t log t has no derivative
    for red in ("batchmean", "sum", "none"):
        assert gradgradcheck(lambda a, b, red=red: F.kl_div(a, b, reduction=red), (lp, q))
        assert gradgradcheck(lambda a, b, red=red: F.kl_div(a, b, reduction=red, log_target=True), (lp, log_q))
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss by both the batch size"):
        F.kl_div(lp, p)
    with raises(RuntimeError, "kl_div: Integral inputs not supported."):
        F.kl_div(ag.zeros(3), ag.zeros(3, dtype=ag.int64), reduction="sum")
    assert F.kl_div(ag.zeros(3), ag.zeros(2, 3), reduction="none").shape == (2, 3)


Q = [[0.2, 0.9, 0.5], [0.01, 0.6, 0.4]]
BT = [[0.0, 1.0, 0.3], [1.0, 0.5, 0.2]]


def test_binary_cross_entropy():
    q, t = f64(Q, True), f64(BT, True)
    qs, ts = np.array(Q), np.array(BT)
    bce = -(ts * np.log(qs) + (1 - ts) * np.log(1 - qs))
    assert F.binary_cross_entropy(q, t, weight=f64([1.0, 2.0, 0.5])).item() == pytest.approx(
        np.mean(bce * [1.0, 2.0, 0.5]), rel=1e-12)
    assert F.binary_cross_entropy(f64([0.0, 1.0]), f64([1.0, 0.0]), reduction="none").tolist() == [100.0, 100.0]
    (g,) = ag.autograd.grad(F.binary_cross_entropy(q, t.detach(), reduction="sum"), q, create_graph=True)
    spread = qs * (1 - qs)
    np.testing.assert_allclose(g.detach().numpy(), (qs - ts) / spread, rtol=1e-9)  # d bce / dq
    (gg,) = ag.autograd.grad(g.sum(), q)
    np.testing.assert_allclose(gg.numpy(), (spread - (qs - ts) * (1 - 2 * qs)) / spread ** 2, rtol=1e-9)
    inner = f64([[0.1, 0.8, 0.3], [0.7, 0.5, 0.2]], True)  # finite differences stay inside [0, 1]
    assert gradcheck(lambda a, b: F.binary_cross_entropy(a, b, weight=f64([1.0, 2.0, 0.5])), (q, inner))
    # at 0 and 1 PyTorch keeps x (1 - x) at 1e-12 or more: a finite slope
    edge = f64([0.0, 1.0], True)
    (g,) = ag.autograd.grad(F.binary_cross_entropy(edge, f64([1.0, 0.0]), reduction="sum"), edge)
    assert g.tolist() == [-1e12, 1e12]
    with raises(RuntimeError, "all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(f64([1.5]), f64([0.0]))
    with raises(RuntimeError, "all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(f64([0.5]), f64([2.0]))
    with raises(ValueError, "Using a target size ((3,)) that is different to the input size ((3, 4)) is deprecated. "
                            "Please ensure they have the same size."):
        F.binary_cross_entropy(ag.full((3, 4), 0.5), ag.zeros(3))


def test_group_norm():
    x = f64(np.arange(24.0).reshape(2, 4, 3) ** 1.5, True)
    w, b = f64([1.0, 2.0, 0.5, -1.0], True), f64([0.0, 0.1, 0.2, 0.3], True)
    groups = (np.arange(24.0) ** 1.5).reshape(2, 2, 6)  # (batch, group, its channels' values)
    normed = (groups - groups.mean(-1, keepdims=True)) / np.sqrt(groups.var(-1, keepdims=True) + 1e-5)
    want = normed.reshape(2, 4, 3) * np.reshape([1.0, 2.0, 0.5, -1.0], (4, 1)) + np.reshape([0, 0.1, 0.2, 0.3], (4, 1))
    np.testing.assert_allclose(F.group_norm(x, 2, w, b)[1].detach().numpy(), want[1], rtol=1e-10)
    small = f64(np.random.default_rng(0).standard_normal((2, 4, 3)), True)
    assert gradgradcheck(lambda a, c, d: F.group_norm(a, 2, c, d, eps=0.1), (small, w, b))
    with raises(RuntimeError, "Expected at least 2 dimensions for input tensor but received 1"):
        F.group_norm(ag.zeros(4), 2)
    with raises(RuntimeError, "Expected number of channels in input to be divisible by num_groups, but got input of "
                              "shape [2, 4] and num_groups=3"):
        F.group_norm(ag.zeros(2, 4), 3)
    with raises(ValueError, "Expected more than 1 value per channel when training, got input size [1, 4]"):
        F.group_norm(ag.zeros(1, 4), 4)
    with raises(RuntimeError, "Expected weight to be a vector of size equal to the number of channels in input, but "
                              "got weight of shape [3] and input of shape [2, 4]"):
        F.group_norm(ag.zeros(2, 4), 2, weight=ag.ones(3))


def test_normalize():
    np.testing.assert_allclose(F.normalize(f64([[3.0, -4.0], [0.0, 0.0], [1e-13, 0.0]]), p=1).numpy(),
                               [[3 / 7, -4 / 7], [0.0, 0.0], [0.1, 0.0]], rtol=1e-12)
    assert F.normalize(f64([[3.0, -4.0], [0.0, 0.0]]), dim=0).tolist() == [[1.0, -1.0], [0.0, 0.0]]
    x = f64([[3.0, -4.0], [0.5, 0.2]], True)
    assert gradgradcheck(lambda a: F.normalize(a), (x,))
    with raises(RuntimeError, "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"):
        F.normalize(ag.tensor([[3, 4]]))


def test_new_loss_and_norm_modules():
    x, t = f64(X, True), f64(T)
    assert nn.SmoothL1Loss(beta=0.8)(x, t).item() == F.smooth_l1_loss(x, t, beta=0.8).item()
    assert nn.HuberLoss(delta=0.8, reduction="sum")(x, t).item() == F.huber_loss(x, t, "sum", 0.8).item()
    assert nn.KLDivLoss(reduction="batchmean", log_target=True)(x, t).item() == F.kl_div(
        x, t, reduction="batchmean", log_target=True).item()
    q, bt, w = f64(Q), f64(BT), f64([1.0, 2.0, 0.5])
    assert nn.BCELoss(w)(q, bt).item() == F.binary_cross_entropy(q, bt, w).item()
    assert "weight" in dict(nn.BCELoss(w).named_buffers())
    gn = nn.GroupNorm(2, 4)
    assert repr(gn) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    assert [n for n, _ in gn.named_parameters()] == ["weight", "bias"]
    assert gn(ag.arange(24.0).reshape(2, 4, 3)).shape == (2, 4, 3)
    with raises(ValueError, "num_channels (5) must be divisible by num_groups (2)"):
        nn.GroupNorm(2, 5)


# -- broadcast operands, kinks, dtype refusals (fuzz against torch 2.13) ------------------------------------------
DIFFERENCE_LOSSES = (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss)


@pytest.mark.parametrize("loss", DIFFERENCE_LOSSES)
def test_difference_losses_sum_a_zero_dim_operand_gradient_back_to_zero_dim(loss):
    x, y = f64([[0.5, -1.0, 2.0]], True), f64(0.25, True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gx, gy = ag.autograd.grad(loss(x, y), (x, y))
        assert gx.shape == (1, 3) and gy.shape == ()
        z = f64([[0.5, -1.0, 2.0], [0.1, 0.2, -0.3]], True)
        gy2, gz = ag.autograd.grad(loss(y, z), (y, z))
        assert gy2.shape == () and gz.shape == (2, 3)
        assert gradcheck(lambda a, b: loss(a, b, reduction="sum"), (y, z))
        assert gradgradcheck(lambda a, b: loss(a, b), (z, y))
    # d/dy mean(loss(x - y)) = -mean(loss'(x - y)): 2 d, sign(d), and d clipped to [-1, 1] (beta = delta = 1)
    d = np.array([0.5, -1.0, 2.0]) - 0.25
    slope = {F.mse_loss: 2 * d, F.l1_loss: np.sign(d), F.smooth_l1_loss: np.clip(d, -1, 1),
             F.huber_loss: np.clip(d, -1, 1)}[loss]
    assert gy.item() == pytest.approx(-slope.mean(), rel=1e-12)


def test_kl_div_target_broadcasts_with_gradients_of_each_operand_shape():
    x = f64([[0.5, -1.0], [2.0, 0.3]], True)
    t = f64([[0.2, 0.7]], True)
    gx, gt = ag.autograd.grad(F.kl_div(x, t, reduction="sum"), (x, t))
    np.testing.assert_allclose(gx.numpy(), [[-0.2, -0.7], [-0.2, -0.7]], rtol=1e-12)
    xs = x.detach().numpy()  # d/dt sum t (log t - x) = sum over the broadcast rows of log t + 1 - x
    np.testing.assert_allclose(gt.numpy(), np.sum(np.log([[0.2, 0.7]]) + 1 - xs, 0, keepdims=True), rtol=1e-12)
    row = f64([0.2, 0.7], True)
    gx, gt = ag.autograd.grad(F.kl_div(x, row, reduction="batchmean"), (x, row))
    assert gx.shape == (2, 2)
    np.testing.assert_allclose(gt.numpy(), np.sum(np.log([0.2, 0.7]) + 1 - xs, 0) / 2, rtol=1e-12)  # batch of 2
    scalar = f64(0.4, True)
    gx, gt = ag.autograd.grad(F.kl_div(x, scalar, reduction="sum", log_target=True), (x, scalar))
    np.testing.assert_allclose(gx.numpy(), np.full((2, 2), -math.exp(0.4)), rtol=1e-12)  # sum exp(s) (s - x)
    assert gt.item() == pytest.approx(math.exp(0.4) * np.sum(0.4 - xs + 1), rel=1e-12)
    assert gradgradcheck(lambda a, b: F.kl_div(a, b, reduction="sum"), (x, row))
    assert gradgradcheck(lambda a, b: F.kl_div(a, b, reduction="none", log_target=True), (row, x))


def test_kl_div_target_gradient_at_zero_target_is_nan():
    x, t = f64([0.5, -1.0], True), f64([0.0, 0.7], True)
    gx, gt = ag.autograd.grad(F.kl_div(x, t, reduction="sum"), (x, t))
    assert gx.tolist() == [0.0, -0.7]
    assert np.isnan(gt[0].item()) and gt[1].item() == pytest.approx(math.log(0.7) + 1 + 1.0, rel=1e-12)


def test_pointwise_loss_kernels_refuse_integer_and_bool_operands():
    i, j, b = ag.tensor([1, 2]), ag.tensor([0, 3]), ag.tensor([True, False])
    for loss, kernel in ((F.mse_loss, "mse_cpu"), (F.smooth_l1_loss, "smooth_l1_cpu"), (F.huber_loss, "huber_cpu")):
        for reduction in ("none", "sum", "mean"):
            with raises(NotImplementedError, f"\"{kernel}\" not implemented for 'Long'"):
                loss(i, j, reduction=reduction)
        with raises(NotImplementedError, f"\"{kernel}\" not implemented for 'Bool'"):
            loss(b, b)
        assert loss(i.float(), j).item() == (1.0 if loss is F.mse_loss else 0.5)
    mean_error = ("mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
                  "Got: Long")
    with raises(RuntimeError, mean_error):
        F.l1_loss(i, j)
    with raises(RuntimeError, mean_error):
        F.smooth_l1_loss(i, j, beta=0.0)
    assert F.l1_loss(i, j, reduction="sum").item() == 2
    assert F.mse_loss(i, j, weight=ag.ones(2)).item() == 1.0  # torch's weighted path is composed: no kernel check


def test_group_norm_counts_values_per_group_over_batch_and_positions():
    # one channel a group: (x - mean) / sqrt(var + eps) over that channel's two values, var 0.25 and 1
    np.testing.assert_allclose(F.group_norm(ag.tensor([[[1.0, 2.0], [3.0, 5.0]]]), 2).numpy(),
                               [[[-0.5, 0.5] / np.sqrt(0.25 + 1e-5), [-1.0, 1.0] / np.sqrt(1 + 1e-5)]], rtol=1e-6)
    with raises(ValueError, "Expected more than 1 value per channel when training, got input size [1, 2, 1]"):
        F.group_norm(ag.zeros(1, 2, 1), 2)
    with raises(NotImplementedError, "\"GroupNormKernelImpl\" not implemented for 'Long'"):
        F.group_norm(ag.tensor([[[1, 2], [3, 5]]]), 2)


def test_normalize_zero_dim_and_dim_out_of_range():
    assert F.normalize(ag.tensor(2.0), dim=0).item() == 1.0
    assert F.normalize(ag.tensor(-2.0), dim=-1).item() == -1.0
    s = f64(0.7, True)
    assert gradgradcheck(lambda a: F.normalize(a, dim=0, eps=0.1), (s,))
    with raises(IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"):
        F.normalize(ag.tensor([1.0, 2.0]))
    with raises(IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"):
        F.normalize(ag.tensor(2.0), dim=1)
