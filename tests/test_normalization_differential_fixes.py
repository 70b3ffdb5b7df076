"""Behaviours of the normalization and dropout ops and layers found to differ from PyTorch's by differential testing,
each checked against an independent computation: float16 norms computed in float32 (a float16 sum of squares
overflows), the result dtype of group_norm and rms_norm with parameters of another dtype, LayerNorm's positional
device and dtype and its reset_parameters, the top-level torch.dropout / layer_norm / group_norm forms, the feature
dropouts' rank check (only where a mask is drawn), batch_norm's refusal of one running statistic without the other
and of running statistics that require grad, its Python checks of eps (not made by the kernel behind instance_norm
and torch.batch_norm), and SyncBatchNorm."""

import warnings

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
import actorgrad.nn.functional as F

RNG = np.random.default_rng(31)
RANK_ERROR = "^Feature dropout requires at least 2 dimensions in the input$"


def _group_norm_ref(x: np.ndarray, groups: int, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-5):
    """Each sample's channels in `groups` groups, each normalised over its values, then scaled and shifted per
    channel; in float64."""
    x = x.astype(np.float64)
    grouped = x.reshape(x.shape[0], groups, -1)
    centred = grouped - grouped.mean(-1, keepdims=True)
    xhat = (centred / np.sqrt((centred ** 2).mean(-1, keepdims=True) + eps)).reshape(x.shape)
    per_channel = (x.shape[1],) + (1,) * (x.ndim - 2)
    return xhat, xhat * weight.reshape(per_channel) + bias.reshape(per_channel)


def _rms_norm_ref(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * weight


def _batch_norm_ref(x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    dims = (0, *range(2, x.ndim))
    return (x - x.mean(dims, keepdims=True)) / np.sqrt(x.var(dims, keepdims=True) + eps)


def test_group_norm_of_a_float16_input_with_float32_parameters_is_float16():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float16)
    weight, bias = RNG.standard_normal(4), RNG.standard_normal(4)
    w = ag.tensor(weight, dtype=ag.float32, requires_grad=True)
    b = ag.tensor(bias, dtype=ag.float32, requires_grad=True)
    out = F.group_norm(ag.tensor(x), 2, w, b)
    assert out.dtype == ag.float16
    xhat, expected = _group_norm_ref(x, 2, weight.astype(np.float32), bias.astype(np.float32))
    np.testing.assert_allclose(out.detach().numpy().astype(np.float64), expected, rtol=1e-2, atol=1e-2)
    g = RNG.standard_normal(x.shape)
    out.backward(ag.tensor(g, dtype=ag.float16))
    assert w.grad.dtype == ag.float32 and b.grad.dtype == ag.float32  # the parameters' own dtype
    g16 = g.astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(w.grad.numpy(), (g16 * xhat).sum((0, 2)), rtol=1e-2, atol=2e-2)
    np.testing.assert_allclose(b.grad.numpy(), g16.sum((0, 2)), rtol=1e-3, atol=1e-3)
    layer = nn.GroupNorm(2, 4)  # a float32 layer over float16 activations
    assert layer(ag.tensor(x)).dtype == ag.float16


@pytest.mark.parametrize("x_dtype, w_dtype", [(np.float16, np.float32), (np.float32, np.float64),
                                              (np.float64, np.float32), (np.float16, np.float64)])
def test_rms_norm_result_has_the_inputs_dtype_whatever_the_weights(x_dtype, w_dtype):
    x = RNG.standard_normal((3, 6)).astype(x_dtype)
    weight = RNG.standard_normal(6).astype(w_dtype)
    w = ag.tensor(weight, requires_grad=True)
    out = F.rms_norm(ag.tensor(x), [6], w, eps=1e-3)
    assert out.dtype == ag.tensor(x).dtype
    tolerance = 1e-2 if x_dtype == np.float16 else 1e-6
    np.testing.assert_allclose(out.detach().numpy(), _rms_norm_ref(x, weight.astype(np.float64), 1e-3),
                               rtol=tolerance, atol=tolerance)
    out.sum().backward()
    assert w.grad.dtype == w.dtype


def test_rms_norm_module_keeps_float16_activations_float16():
    layer = nn.RMSNorm(6)
    assert layer(ag.tensor(RNG.standard_normal((2, 6)), dtype=ag.float16)).dtype == ag.float16


def test_group_norm_and_rms_norm_gradients_agree_with_finite_differences():
    x = ag.tensor(RNG.standard_normal((2, 4, 3)), requires_grad=True)
    w = ag.tensor(RNG.standard_normal(4), requires_grad=True)
    b = ag.tensor(RNG.standard_normal(4), requires_grad=True)
    assert ag.autograd.gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (x, w, b))
    assert ag.autograd.gradgradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (x, w, b))
    w3 = ag.tensor(RNG.standard_normal(3), requires_grad=True)
    assert ag.autograd.gradcheck(lambda x, w: F.rms_norm(x, [3], w, 1e-3), (x, w3))
    assert ag.autograd.gradgradcheck(lambda x, w: F.rms_norm(x, [3], w, 1e-3), (x, w3))


def _normalized_ref(x: np.ndarray, dims: tuple, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray]:
    """(x normalised over `dims`, 1/std), in float64."""
    x = x.astype(np.float64)
    centred = x - x.mean(dims, keepdims=True)
    rstd = 1 / np.sqrt((centred ** 2).mean(dims, keepdims=True) + eps)
    return centred * rstd, rstd


def _normalized_grad_ref(g: np.ndarray, xhat: np.ndarray, rstd: np.ndarray, dims: tuple) -> np.ndarray:
    """The gradient of normalisation over `dims` (statistics included): (g - mean g - xhat mean(g xhat)) / std."""
    return (g - g.mean(dims, keepdims=True) - xhat * (g * xhat).mean(dims, keepdims=True)) * rstd


FLOAT16_NORMS = [  # (function of a float16 tensor, the dims it normalises over): 256 values of size ~20 each, whose
    (lambda x: F.layer_norm(x, [256]), (2,)),  # float16 sum of squares (~100000) overflows
    (lambda x: F.group_norm(x.reshape(2, 4, 128), 2).reshape(2, 2, 256), (2,)),
    (lambda x: F.instance_norm(x), (2,)),
    (lambda x: F.batch_norm(x.transpose(0, 1), None, None, training=True).transpose(0, 1), (1, 2)),
]


@pytest.mark.parametrize("call, dims", FLOAT16_NORMS)
def test_float16_norms_compute_in_float32_as_pytorchs(call, dims):
    x = (RNG.standard_normal((2, 2, 256)) * 20).astype(np.float16)
    g = RNG.standard_normal(x.shape).astype(np.float16)
    leaf = ag.tensor(x, requires_grad=True)
    out = call(leaf)
    assert out.dtype == ag.float16
    xhat, rstd = _normalized_ref(x, dims)
    np.testing.assert_allclose(out.detach().numpy().astype(np.float64), xhat, rtol=2e-3, atol=2e-3)
    out.backward(ag.tensor(g))
    expected = _normalized_grad_ref(g.astype(np.float64), xhat, rstd, dims)
    np.testing.assert_allclose(leaf.grad.numpy().astype(np.float64), expected, rtol=1e-2, atol=1e-4)


def test_float16_batch_norm_running_statistics_and_float32_parameter_gradients_do_not_overflow():
    x = (RNG.standard_normal((256, 2, 256)) * 3 + 1).astype(np.float16)  # 65536 values per channel
    mean, var = ag.zeros(2, dtype=ag.float16), ag.ones(2, dtype=ag.float16)
    F.batch_norm(ag.tensor(x), mean, var, training=True, momentum=1.0)
    wide = x.astype(np.float64)
    np.testing.assert_allclose(mean.numpy(), wide.mean((0, 2)), rtol=1e-3)
    np.testing.assert_allclose(var.numpy(), wide.var((0, 2), ddof=1), rtol=1e-3)
    out = F.batch_norm(ag.tensor(x), mean, var, training=False)  # float16 running statistics in eval
    expected = (wide - mean.numpy().astype(np.float64)[:, None]) / np.sqrt(var.numpy().astype(np.float64)[:, None]
                                                                           + 1e-5)
    np.testing.assert_allclose(out.numpy().astype(np.float64), expected, rtol=2e-3, atol=2e-3)
    bias = ag.zeros(2, requires_grad=True)  # float32 parameters of a float16 input
    F.batch_norm(ag.tensor(x), None, None, None, bias, training=True).sum().backward()
    np.testing.assert_array_equal(bias.grad.numpy(), [65536.0, 65536.0])  # past float16's largest, 65504


def test_float16_local_response_norm_averages_squares_without_overflow():
    x = np.array([[[200.0], [-220.0], [150.0]]], dtype=np.float16)  # neighbouring squares sum past 65504
    out = F.local_response_norm(ag.tensor(x), 2, alpha=1e-3, beta=0.75, k=2.0)
    assert out.dtype == ag.float16
    squares = x.astype(np.float64)[0, :, 0] ** 2
    average = (np.concatenate([[0.0], squares[:-1]]) + squares) / 2
    expected = x.astype(np.float64)[0, :, 0] / (2.0 + 1e-3 * average) ** 0.75
    np.testing.assert_allclose(out.numpy()[0, :, 0].astype(np.float64), expected, rtol=2e-3)


def test_layer_norm_module_takes_device_then_dtype_positionally():
    layer = nn.LayerNorm(4, 1e-5, True, True, "cpu", ag.float64)
    assert layer.weight.dtype == ag.float64 and layer.bias.dtype == ag.float64
    x = RNG.standard_normal((3, 4))
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(layer(ag.tensor(x)).detach().numpy(), expected, rtol=1e-12)


def test_layer_norm_module_resets_its_parameters_as_other_layers_do():
    layer = nn.LayerNorm([2, 3])
    with ag.no_grad():
        layer.weight.mul_(3.0)
        layer.bias.add_(2.0)
    layer.reset_parameters()
    np.testing.assert_array_equal(layer.weight.detach().numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(layer.bias.detach().numpy(), np.zeros((2, 3)))
    nn.LayerNorm(3, elementwise_affine=False).reset_parameters()  # nothing to reset


def test_top_level_dropout_takes_pytorchs_train_flag_and_refuses_a_bad_p_with_a_runtime_error():
    x = ag.tensor(RNG.standard_normal((3, 4)))
    np.testing.assert_array_equal(ag.dropout(x, p=1.0, train=True).numpy(), np.zeros((3, 4)))
    np.testing.assert_array_equal(ag.dropout(x, 0.5, train=False).numpy(), x.numpy())
    kept = ag.dropout(x, 0.25, True).numpy()
    assert np.all((kept == 0) | np.isclose(kept, x.numpy() / 0.75, rtol=1e-12))
    with pytest.raises(RuntimeError, match=r"^dropout probability has to be between 0 and 1, but got 1.5$"):
        ag.dropout(x, 1.5, True)


def test_top_level_layer_norm_and_group_norm_take_pytorchs_trailing_cudnn_flag():
    x = RNG.standard_normal((2, 4, 3))
    weight, bias = RNG.standard_normal(3), RNG.standard_normal(3)
    out = ag.layer_norm(ag.tensor(x), [3], ag.tensor(weight), ag.tensor(bias), 1e-3, False)
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3) * weight + bias
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    weight, bias = RNG.standard_normal(4), RNG.standard_normal(4)
    out = ag.group_norm(ag.tensor(x), 2, ag.tensor(weight), ag.tensor(bias), 1e-3, True)
    np.testing.assert_allclose(out.numpy(), _group_norm_ref(x, 2, weight, bias, 1e-3)[1], rtol=1e-12)


FEATURE_DROPOUTS = [(F.dropout2d, (4,)), (F.dropout2d, ()), (F.dropout3d, ()), (F.feature_alpha_dropout, (4,))]


@pytest.mark.parametrize("fn, shape", FEATURE_DROPOUTS)
def test_feature_dropouts_check_the_rank_only_where_they_draw_a_mask(fn, shape):
    x = ag.tensor(RNG.standard_normal(shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dropout2d/3d warn of the deprecated rank first, as PyTorch's
        np.testing.assert_array_equal(fn(x, 0.0, True).numpy(), x.numpy())
        np.testing.assert_array_equal(fn(x, 0.5, False).numpy(), x.numpy())
        np.testing.assert_array_equal(fn(x, 1.0, True).numpy(), np.zeros(shape))
        with pytest.raises(RuntimeError, match=RANK_ERROR):
            fn(x, 0.5, True)


@pytest.mark.parametrize("call", [
    lambda x, m, v: F.batch_norm(x, m, v, training=True),
    lambda x, m, v: F.instance_norm(x, m, v, use_input_stats=True),
])
def test_one_running_statistic_without_the_other_is_refused_while_training(call):
    x = ag.tensor(RNG.standard_normal((4, 3, 5)))
    for mean, var in ((ag.zeros(3, dtype=ag.float64), None), (None, ag.ones(3, dtype=ag.float64))):
        with pytest.raises(ValueError, match="^running_mean and running_var must either both be None or neither "
                                             "be None$"):
            call(x, mean, var)
    empty = F.batch_norm(ag.zeros(0, 3, 5), ag.zeros(3), None, training=True)  # no values: nothing checked
    assert empty.shape == (0, 3, 5)


@pytest.mark.parametrize("training", [True, False])
def test_running_statistics_that_require_grad_are_refused_in_grad_mode(training):
    x = ag.tensor(RNG.standard_normal((4, 3, 5)))
    for name in ("running_mean", "running_var"):
        stats = {"running_mean": ag.zeros(3, dtype=ag.float64), "running_var": ag.ones(3, dtype=ag.float64)}
        stats[name].requires_grad_(True)
        with pytest.raises(RuntimeError, match=rf"^The function 'native_batch_norm' is not differentiable with "
                                               rf"respect to argument '{name}'\. This input cannot have "
                                               "requires_grad True\\.$"):
            F.batch_norm(x, stats["running_mean"], stats["running_var"], training=training)
        with pytest.raises(RuntimeError, match=f"argument '{name}'"):
            F.instance_norm(x, stats["running_mean"], stats["running_var"], use_input_stats=training)
    mean = ag.zeros(3, dtype=ag.float64, requires_grad=True)
    with ag.no_grad():  # no graph to leave them out of: the update goes ahead
        F.batch_norm(x, mean, ag.ones(3, dtype=ag.float64), training=True, momentum=0.5)
    np.testing.assert_allclose(mean.detach().numpy(), 0.5 * x.numpy().mean((0, 2)), rtol=1e-12)


def test_functional_batch_norm_checks_eps_as_pytorchs_python_does():
    x = RNG.standard_normal((4, 3, 5))
    for eps in (0.0, -1e-3):
        with pytest.raises(ValueError, match=rf"^batch_norm eps must be positive during training, but got {eps}$"):
            F.batch_norm(ag.tensor(x), None, None, training=True, eps=eps)
        with pytest.raises(ValueError, match=rf"^batch_norm eps must be positive during training, but got {eps}$"):
            nn.BatchNorm1d(3, eps=eps)(ag.tensor(x))
    with pytest.raises(ValueError, match=r"^batch_norm eps must be non-negative, but got -0.001$"):
        F.batch_norm(ag.tensor(x), ag.zeros(3, dtype=ag.float64), ag.ones(3, dtype=ag.float64), eps=-1e-3)
    mean, var = RNG.standard_normal(3), RNG.random(3) + 0.5
    out = F.batch_norm(ag.tensor(x), ag.tensor(mean), ag.tensor(var), eps=0.0)  # eval: zero is allowed
    np.testing.assert_allclose(out.numpy(), (x - mean[:, None]) / np.sqrt(var[:, None]), rtol=1e-12)
    # the kernel behind instance_norm and torch.batch_norm makes neither this check nor the batch-size one
    np.testing.assert_allclose(F.instance_norm(ag.tensor(x), eps=0.0).numpy(), _normalized_ref(x, (2,), 0.0)[0],
                               rtol=1e-10)
    one = ag.batch_norm(ag.tensor(x[:1, :, :1]), None, None, None, None, True, 0.1, 1e-5, False)
    np.testing.assert_array_equal(one.numpy(), np.zeros((1, 3, 1)))  # each value minus itself


def test_sync_batch_norm_is_batch_norm_over_any_rank_in_one_process():
    layer = nn.SyncBatchNorm(3, momentum=0.25).double()
    for shape in ((6, 3), (2, 3, 2, 2, 2)):
        x = RNG.standard_normal(shape)
        before = layer.running_var.numpy().copy()
        out = layer(ag.tensor(x))
        np.testing.assert_allclose(out.detach().numpy(), _batch_norm_ref(x), rtol=1e-10)
        dims = (0, *range(2, x.ndim))
        np.testing.assert_allclose(layer.running_var.numpy(), 0.75 * before + 0.25 * x.var(dims, ddof=1),
                                   rtol=1e-12)
    assert layer.num_batches_tracked.item() == 2
    assert list(layer.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert repr(layer) == ("SyncBatchNorm(3, eps=1e-05, momentum=0.25, affine=True, bias=True, "
                           "track_running_stats=True)")
    with pytest.raises(ValueError, match=r"^expected at least 2D input \(got 1D input\)$"):
        layer(ag.ones(3))
    with pytest.raises(ValueError, match="^SyncBatchNorm number of input channels should be non-zero$"):
        layer(ag.ones(4, 0, 2))
    assert isinstance(layer, nn.modules.batchnorm._BatchNorm)


def test_convert_sync_batchnorm_shares_parameters_buffers_and_mode():
    net = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3), nn.Sequential(nn.BatchNorm1d(3, affine=False)))
    net[1].eval()
    weight, mean = net[1].weight, net[2][0].running_mean
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(net, process_group="group")
    assert converted is net and type(net[1]) is nn.SyncBatchNorm and type(net[2][0]) is nn.SyncBatchNorm
    assert net[1].weight is weight and net[2][0].running_mean is mean and net[2][0].weight is None
    assert not net[1].training and net[2][0].training and net[1].process_group == "group"
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm2d(2, track_running_stats=False))
    assert type(single) is nn.SyncBatchNorm and single.running_mean is None


@pytest.mark.gpu
def test_mixed_dtype_norms_on_cuda_give_the_inputs_dtype(cupy):
    x = RNG.standard_normal((2, 4, 3)).astype(np.float16)
    weight, bias = RNG.standard_normal(4), RNG.standard_normal(4)
    out = F.group_norm(ag.tensor(x, device="cuda:0"), 2, ag.tensor(weight, dtype=ag.float32, device="cuda:0"),
                       ag.tensor(bias, dtype=ag.float32, device="cuda:0"))
    assert out.dtype == ag.float16 and out.device.type == "cuda"
    expected = _group_norm_ref(x, 2, weight.astype(np.float32), bias.astype(np.float32))[1]
    np.testing.assert_allclose(out.cpu().numpy().astype(np.float64), expected, rtol=1e-2, atol=1e-2)
    out = F.rms_norm(ag.tensor(x, device="cuda:0"), [3], ag.tensor(weight[:3], dtype=ag.float32, device="cuda:0"))
    assert out.dtype == ag.float16
    eps = float(np.finfo(np.float32).eps)
    np.testing.assert_allclose(out.cpu().numpy().astype(np.float64), _rms_norm_ref(x, weight[:3], eps), rtol=1e-2,
                               atol=1e-2)
    x = ag.tensor(RNG.standard_normal(4), device="cuda:0")
    np.testing.assert_array_equal(F.feature_alpha_dropout(x, 1.0, True).cpu().numpy(), np.zeros(4))
