"""`nn.utils`: conv/linear + BatchNorm fusion, the hook-based weight_norm and spectral_norm, skip_init, the
deprecated clip_grad_norm and stateless.functional_call."""

import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn
from actorgrad.autograd import gradcheck
from actorgrad.nn.utils import stateless

rng = np.random.default_rng(11)


def f64(values, **kwargs):
    return ag.tensor(values, dtype=ag.float64, **kwargs)


def with_statistics(bn, affine=True):
    """An eval-mode BatchNorm with running statistics (and affine parameters) away from their defaults."""
    n = bn.num_features
    with ag.no_grad():
        bn.running_mean.copy_(f64(rng.normal(size=n)))
        bn.running_var.copy_(f64(rng.uniform(0.5, 2.0, n)))
        if affine:
            bn.weight.copy_(f64(rng.normal(size=n)))
            bn.bias.copy_(f64(rng.normal(size=n)))
    return bn.eval()


# -- fusion --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("layer", "bn", "x_shape", "transpose"), [
    (lambda: nn.Conv1d(3, 4, 3), lambda: nn.BatchNorm1d(4), (2, 3, 7), False),
    (lambda: nn.Conv2d(3, 4, 3, bias=False), lambda: nn.BatchNorm2d(4, affine=False), (2, 3, 5, 6), False),
    (lambda: nn.ConvTranspose2d(3, 4, 2, stride=2), lambda: nn.BatchNorm2d(4), (2, 3, 4, 3), True),
    (lambda: nn.Conv3d(2, 3, 1), lambda: nn.BatchNorm3d(3), (1, 2, 3, 2, 2), False),
])
def test_a_fused_convolution_computes_batchnorm_of_the_convolution(layer, bn, x_shape, transpose):
    conv = layer().double().eval()
    norm = with_statistics(bn().double(), affine=bn().affine)
    fused = nn.utils.fuse_conv_bn_eval(conv, norm, transpose=transpose)
    x = f64(rng.normal(size=x_shape))
    np.testing.assert_allclose(fused(x).detach().numpy(), norm(conv(x)).detach().numpy(), rtol=1e-12, atol=1e-13)
    assert fused is not conv and isinstance(fused.weight, nn.Parameter) and fused.weight.is_leaf
    assert fused.bias is not None and conv.weight.shape == fused.weight.shape


@pytest.mark.parametrize(("out_features", "num_features"), [(4, 4), (4, 1)])
def test_a_fused_linear_layer_computes_batchnorm_of_the_layer(out_features, num_features):
    linear = nn.Linear(3, out_features).double().eval()
    norm = with_statistics(nn.BatchNorm1d(num_features).double())
    fused = nn.utils.fuse_linear_bn_eval(linear, norm)
    x = f64(rng.normal(size=(5, 3)))
    expected = linear(x) if num_features == 4 else linear(x).reshape(-1, 1)
    expected = norm(expected).reshape(5, out_features)
    np.testing.assert_allclose(fused(x).detach().numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-13)


def test_fused_weights_keep_the_layers_dtypes_and_requires_grad():
    conv_w = ag.ones(2, 1, 3, dtype=ag.float32)
    weight, bias = nn.utils.fuse_conv_bn_weights(conv_w, None, f64([0.5, 1.0]), f64([4.0, 1.0]), 0.0, None, None)
    assert weight.dtype == bias.dtype == ag.float32 and not weight.requires_grad and bias.requires_grad is False
    np.testing.assert_allclose(weight.numpy()[:, 0, 0], [0.5, 1.0])
    np.testing.assert_allclose(bias.numpy(), [-0.25, -1.0])
    weight, bias = nn.utils.fuse_linear_bn_weights(nn.Parameter(ag.ones(2, 2)), None, f64([0.0, 1.0]),
                                                   f64([1.0, 4.0]), 0.0, f64([2.0, 2.0]), f64([0.0, 0.0]))
    assert weight.requires_grad and weight.dtype == ag.float32
    np.testing.assert_allclose(bias.numpy(), [0.0, -1.0])


@pytest.mark.parametrize(("call", "text"), [
    (lambda: nn.utils.fuse_conv_bn_eval(nn.Conv1d(1, 2, 1), nn.BatchNorm1d(2).eval()), "Fusion only for eval!"),
    (lambda: nn.utils.fuse_linear_bn_eval(nn.Linear(1, 2).eval(), nn.BatchNorm1d(2)), "Fusion only for eval!"),
    (lambda: nn.utils.fuse_conv_bn_eval(nn.Conv1d(1, 2, 1).eval(), nn.BatchNorm1d(2, track_running_stats=False).eval()),
     "bn.running_mean and bn.running_var must not be None"),
    (lambda: nn.utils.fuse_linear_bn_eval(nn.Linear(1, 2).eval(), nn.BatchNorm1d(3).eval()),
     "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got linear.out_features=2 and "
     "bn.num_features=3"),
])
def test_fusion_refuses_what_pytorchs_refuses(call, text):
    with pytest.raises(AssertionError, match=re.escape(text)):
        call()


# -- weight_norm and spectral_norm, the hook-based forms ------------------------------------------------------
W = rng.normal(size=(4, 3))


def linear_with(weight):
    layer = nn.Linear(weight.shape[1], weight.shape[0]).double()
    with ag.no_grad():
        layer.weight.copy_(f64(weight))
    return layer


@pytest.mark.parametrize(("dim", "axes"), [(0, (1,)), (1, (0,)), (None, (0, 1))])
def test_weight_norm_splits_the_weight_and_recombines_it_before_each_forward(dim, axes):
    with pytest.warns(FutureWarning, match="in favor of `actorgrad.nn.utils.parametrizations.weight_norm`"):
        layer = nn.utils.weight_norm(linear_with(W), dim=dim)
    assert [name for name, _ in layer.named_parameters()] == ["bias", "weight_g", "weight_v"]
    norms = np.sqrt((W**2).sum(axis=axes, keepdims=dim is not None))
    np.testing.assert_allclose(layer.weight_g.detach().numpy(), norms, rtol=1e-14)
    np.testing.assert_allclose(layer.weight.detach().numpy(), W, rtol=1e-14)
    with ag.no_grad():
        layer.weight_g.mul_(3.0)
    x = f64(rng.normal(size=(2, 3)))
    np.testing.assert_allclose(layer(x).detach().numpy(), x.numpy() @ (3 * W).T + layer.bias.detach().numpy(),
                               rtol=1e-13)
    assert "weight" not in layer.state_dict()


def test_weight_norm_gradients_reach_both_parts():
    with pytest.warns(FutureWarning):
        layer = nn.utils.weight_norm(linear_with(W))
    x = f64(rng.normal(size=(2, 3)))

    def forward(g, v):
        layer._parameters["weight_g"], layer._parameters["weight_v"] = g, v
        return layer(x)

    assert gradcheck(forward, (layer.weight_g.detach().requires_grad_(), f64(W, requires_grad=True)))


def test_remove_weight_norm_puts_the_weight_back_as_a_parameter():
    with pytest.warns(FutureWarning):
        layer = nn.utils.weight_norm(linear_with(W))
    with ag.no_grad():
        layer.weight_g.mul_(2.0)
    assert nn.utils.remove_weight_norm(layer) is layer
    assert [name for name, _ in layer.named_parameters()] == ["bias", "weight"]  # registered anew, so last
    np.testing.assert_allclose(layer.weight.detach().numpy(), 2 * W, rtol=1e-14)
    assert isinstance(layer.weight, nn.Parameter) and not layer._forward_pre_hooks


def test_spectral_norm_divides_by_the_largest_singular_value_in_training():
    layer = nn.utils.spectral_norm(linear_with(W), n_power_iterations=60)
    assert sorted(layer.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    layer(f64(rng.normal(size=(2, 3))))
    sigma = np.linalg.svd(W, compute_uv=False)[0]
    np.testing.assert_allclose(layer.weight.detach().numpy(), W / sigma, rtol=1e-10)
    u = layer.weight_u.numpy().copy()
    layer.eval()
    layer(f64(rng.normal(size=(2, 3))))
    np.testing.assert_array_equal(layer.weight_u.numpy(), u)  # no power iteration in eval mode


def test_spectral_norm_of_a_transposed_convolution_takes_its_output_dim():
    conv = nn.ConvTranspose1d(2, 3, 2).double()
    weight = conv.weight.detach().numpy().copy()
    nn.utils.spectral_norm(conv, n_power_iterations=80)
    conv(f64(rng.normal(size=(1, 2, 4))))
    sigma = np.linalg.svd(weight.transpose(1, 0, 2).reshape(3, -1), compute_uv=False)[0]
    np.testing.assert_allclose(conv.weight.detach().numpy(), weight / sigma, rtol=1e-10)


def test_spectral_norm_gradcheck_in_eval_mode():
    layer = nn.utils.spectral_norm(linear_with(W)).eval()
    x = f64(rng.normal(size=(2, 3)))

    def forward(weight):
        layer._parameters["weight_orig"] = weight
        return layer(x)

    assert gradcheck(forward, (f64(W, requires_grad=True),))


def test_remove_spectral_norm_keeps_the_normalised_weight():
    layer = nn.utils.spectral_norm(linear_with(W), n_power_iterations=60)
    layer(f64(rng.normal(size=(2, 3))))
    expected = layer.weight.detach().numpy()
    nn.utils.remove_spectral_norm(layer)
    assert sorted(layer.state_dict()) == ["bias", "weight"] and isinstance(layer.weight, nn.Parameter)
    np.testing.assert_allclose(layer.weight.detach().numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize(("call", "error", "text"), [
    (lambda: nn.utils.remove_weight_norm(nn.Linear(2, 2)), ValueError, "weight_norm of 'weight' not found in Linear("),
    (lambda: nn.utils.remove_spectral_norm(nn.Linear(2, 2)), ValueError,
     "spectral_norm of 'weight' not found in Linear("),
    (lambda: nn.utils.spectral_norm(nn.utils.spectral_norm(nn.Linear(2, 2))), RuntimeError,
     "Cannot register two spectral_norm hooks on the same parameter weight"),
    (lambda: nn.utils.spectral_norm(nn.Linear(2, 2, bias=False), name="bias"), ValueError,
     "`SpectralNorm` cannot be applied as parameter `bias` is None"),
    (lambda: nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0), ValueError,
     "Expected n_power_iterations to be positive, but got n_power_iterations=0"),
])
def test_norm_hooks_refuse_what_pytorchs_refuse(call, error, text):
    with pytest.raises(error, match=re.escape(text)):
        call()


def test_weight_norm_twice_on_one_parameter_is_refused():
    with pytest.warns(FutureWarning):
        layer = nn.utils.weight_norm(nn.Linear(2, 2))
        with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
            nn.utils.weight_norm(layer)


# -- skip_init, clip_grad_norm, functional_call ----------------------------------------------------------------
def test_skip_init_builds_the_module_without_drawing_its_values():
    ag.manual_seed(0)
    expected = ag.rand(3).tolist()
    ag.manual_seed(0)
    layer = nn.utils.skip_init(nn.Linear, 4, out_features=2, dtype=ag.float64)
    assert ag.rand(3).tolist() == expected  # the generator was not used
    assert layer.weight.shape == (2, 4) and layer.weight.dtype == ag.float64 and layer.weight.requires_grad
    ag.manual_seed(0)
    nn.Linear(4, 2)
    assert ag.rand(3).tolist() != expected  # as a normal build does use it
    nn.init.ones_(layer.weight)
    assert layer.weight.tolist() == [[1.0] * 4] * 2  # initialisers work again afterwards


@pytest.mark.parametrize(("cls", "text"), [
    (int, "Expected a Module; got <class 'int'>"),
    (nn.ReLU, "Module must support a 'device' arg to skip initialization"),
])
def test_skip_init_refuses_what_pytorchs_refuses(cls, text):
    with pytest.raises(RuntimeError, match=re.escape(text)):
        nn.utils.skip_init(cls)


def test_clip_grad_norm_is_the_deprecated_name_of_clip_grad_norm_():
    p = nn.Parameter(f64([3.0, 4.0]))
    p.grad = f64([3.0, 4.0])
    with pytest.warns(FutureWarning, match=re.escape("`actorgrad.nn.utils.clip_grad_norm` is now deprecated in favor "
                                                     "of `actorgrad.nn.utils.clip_grad_norm_`.")):
        total = nn.utils.clip_grad_norm([p], 1.0)
    assert total.item() == 5.0
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-6)


@pytest.mark.filterwarnings("ignore:`actorgrad.nn.utils.stateless.functional_call` is deprecated:FutureWarning")
def test_functional_call_runs_the_module_with_the_given_tensors_and_puts_its_own_back():
    model = nn.Sequential(nn.Linear(3, 2), nn.Tanh()).double()
    weight, x = f64(rng.normal(size=(2, 3)), requires_grad=True), f64(rng.normal(size=(4, 3)))
    original = model[0].weight
    out = stateless.functional_call(model, {"0.weight": weight}, x)
    expected = np.tanh(x.numpy() @ weight.detach().numpy().T + model[0].bias.detach().numpy())
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-14)
    out.sum().backward()
    assert weight.grad is not None and original.grad is None and model[0].weight is original
    assert stateless.functional_call(model, {}, args=(x,), kwargs={}).shape == (4, 2)


@pytest.mark.filterwarnings("ignore:`actorgrad.nn.utils.stateless.functional_call` is deprecated:FutureWarning")
def test_functional_call_restores_the_module_when_the_call_raises():
    model = nn.Linear(3, 2)
    original = model.weight
    with pytest.raises(RuntimeError):
        stateless.functional_call(model, {"weight": ag.ones(5, 5)}, ag.ones(1, 3))
    assert model.weight is original


@pytest.mark.filterwarnings("ignore:`actorgrad.nn.utils.stateless.functional_call` is deprecated:FutureWarning")
def test_functional_call_ties_shared_weights_unless_asked_not_to():
    model = nn.Sequential(nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)).double()
    model[1].weight = model[0].weight
    x = f64([[1.0, 2.0]])
    identity = f64(np.eye(2))
    assert stateless.functional_call(model, {"0.weight": identity}, x).tolist() == [[1.0, 2.0]]
    untied = stateless.functional_call(model, {"0.weight": identity}, x, tie_weights=False)
    expected = x.numpy() @ model[0].weight.detach().numpy().T
    np.testing.assert_allclose(untied.detach().numpy(), expected, rtol=1e-14)
    with pytest.raises(ValueError, match=re.escape("functional_call got multiple values for keys ['0.weight', "
                                                   "'1.weight'], which are tied. Consider using tie_weights=False")):
        stateless.functional_call(model, {"0.weight": identity, "1.weight": 2 * identity}, x)


@pytest.mark.filterwarnings("ignore:`actorgrad.nn.utils.stateless.functional_call` is deprecated:FutureWarning")
def test_functional_call_strict_checks_the_names():
    text = "Error(s) in reparametrizing for Linear:\n\tUnexpected key(s): 'x'.\n\tMissing key(s): 'bias'."
    with pytest.raises(RuntimeError, match=re.escape(text)):
        stateless.functional_call(nn.Linear(2, 2), {"weight": ag.zeros(2, 2), "x": ag.ones(1)}, ag.ones(2),
                                  strict=True)


@pytest.mark.gpu
def test_fusion_and_spectral_norm_on_cuda():
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    conv = nn.Conv1d(2, 3, 2).double().eval()
    norm = with_statistics(nn.BatchNorm1d(3).double())
    x = f64(rng.normal(size=(1, 2, 5)))
    expected = norm(conv(x)).detach().numpy()
    fused = nn.utils.fuse_conv_bn_eval(conv.to(cuda), norm.to(cuda))
    assert fused.weight.device == cuda
    np.testing.assert_allclose(fused(x.to(cuda)).detach().cpu().numpy(), expected, rtol=1e-12, atol=1e-13)
    layer = nn.utils.spectral_norm(linear_with(W).to(cuda), n_power_iterations=60)
    layer(f64(rng.normal(size=(2, 3)), device=cuda))
    sigma = np.linalg.svd(W, compute_uv=False)[0]
    np.testing.assert_allclose(layer.weight.detach().cpu().numpy(), W / sigma, rtol=1e-10)
