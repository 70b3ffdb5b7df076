"""nn.Buffer and the lazy modules as PyTorch's: a Buffer assigned to a module registers itself (persistent or not);
a lazy module's placeholders take their shapes from the first input, are initialised as the regular layer's, and
the module becomes the regular class. Reprs and error texts were read off torch 2.13 (not a test dependency).
"""

import copy
import math
import re

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
import actorgrad.nn.functional as F


def _raises(fn, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        fn()


# -- nn.Buffer ------------------------------------------------------------------------------------------------------
def test_assigning_a_buffer_registers_it_with_its_persistence():
    m = nn.Module()
    m.kept = nn.Buffer(ag.ones(2))
    m.scratch = nn.Buffer(ag.zeros(3), persistent=False)
    m.plain = ag.ones(1)
    assert [name for name, _ in m.named_buffers()] == ["kept", "scratch"]
    assert list(m.state_dict()) == ["kept"]
    m.scratch = nn.Buffer(ag.zeros(3))  # a persistent Buffer under a non-persistent name makes it persistent
    assert list(m.state_dict()) == ["kept", "scratch"]
    m.kept = ag.full((2,), 5.0)  # a plain tensor under a buffer's name stays a buffer
    np.testing.assert_array_equal(m.state_dict()["kept"].numpy(), [5.0, 5.0])


def test_a_buffer_shares_its_datas_array_and_requires_grad_as_it_does():
    x = ag.ones(2, requires_grad=True)
    y = x * 2
    b = nn.Buffer(y)
    assert b.requires_grad and b.grad_fn is None and b.persistent
    b.detach().add_(1)
    np.testing.assert_array_equal(y.detach().numpy(), [3.0, 3.0])
    assert nn.Buffer().shape == (0,)
    assert not nn.Buffer(ag.ones(2)).requires_grad


def test_assigning_a_buffer_where_the_name_is_taken_fails_as_torch():
    m = nn.Module()
    m.x = 1
    _raises(lambda: setattr(m, "x", nn.Buffer(ag.ones(1))), KeyError, "\"attribute 'x' already exists\"")
    m.w = nn.Parameter(ag.ones(1))
    _raises(lambda: setattr(m, "w", nn.Buffer(ag.ones(1))), TypeError,
            "cannot assign 'actorgrad.FloatTensor' as parameter 'w' (actorgrad.nn.Parameter or None expected)")


# -- lazy modules: placeholders ------------------------------------------------------------------------------------
def test_placeholders_have_no_shape_until_materialized():
    p = nn.UninitializedParameter()
    b = nn.UninitializedBuffer(dtype=ag.float64)
    assert repr(p) == "<UninitializedParameter>" and repr(b) == "<UninitializedBuffer>"
    assert p.requires_grad and not b.requires_grad
    _raises(lambda: p.shape, RuntimeError, "Can't access the shape of an uninitialized parameter or buffer. This "
            "error usually happens in `load_state_dict` when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing their attributes.")
    p.materialize((2, 3))
    b.materialize((4,))
    assert type(p) is nn.Parameter and p.shape == (2, 3) and p.requires_grad
    assert type(b) is ag.Tensor and b.shape == (4,) and b.dtype == ag.float64


@pytest.mark.parametrize("layer, text", [
    (lambda: nn.LazyLinear(3), "LazyLinear(in_features=0, out_features=3, bias=True)"),
    (lambda: nn.LazyConv2d(4, 3), "LazyConv2d(0, 4, kernel_size=(3, 3), stride=(1, 1))"),
    (lambda: nn.LazyConvTranspose1d(4, 3, groups=2), "LazyConvTranspose1d(0, 4, kernel_size=(3,), stride=(1,), "
                                                     "groups=2)"),
    (lambda: nn.LazyBatchNorm2d(), "LazyBatchNorm2d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                                   "track_running_stats=True)"),
    (lambda: nn.LazyInstanceNorm1d(), "LazyInstanceNorm1d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                                      "track_running_stats=True)"),
])
def test_lazy_layers_repr_and_hold_placeholders_as_torch(layer, text):
    m = layer()
    assert repr(m) == text
    assert all(isinstance(p, nn.UninitializedParameter) for p in m.parameters())
    assert m.has_uninitialized_params()


# -- lazy modules: the first call -----------------------------------------------------------------------------------
def test_lazy_linear_infers_in_features_and_becomes_a_linear():
    ag.manual_seed(0)
    m = nn.LazyLinear(3)
    x = ag.randn(2, 5)
    y = m(x)
    assert type(m) is nn.Linear and m.in_features == 5 and not hasattr(m, "_initialize_hook")
    assert m.weight.shape == (3, 5) and m.bias.shape == (3,) and type(m.weight) is nn.Parameter
    np.testing.assert_allclose(y.detach().numpy(), F.linear(x, m.weight, m.bias).detach().numpy())
    bound = 1 / math.sqrt(5)  # Linear's init: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    assert np.abs(m.weight.detach().numpy()).max() <= bound and np.abs(m.bias.detach().numpy()).max() <= bound
    assert np.abs(m.weight.detach().numpy()).max() > 0
    m(x).sum().backward()
    assert m.weight.grad.shape == (3, 5)


@pytest.mark.parametrize("lazy, regular, kwargs, shape, weight_shape", [
    (nn.LazyConv1d, nn.Conv1d, {}, (2, 4, 9), (6, 2, 3)),
    (nn.LazyConv2d, nn.Conv2d, {"padding": 1}, (4, 5, 5), (6, 2, 3, 3)),  # unbatched: channels from dim 0
    (nn.LazyConv3d, nn.Conv3d, {}, (1, 4, 4, 4, 4), (6, 2, 3, 3, 3)),
    (nn.LazyConvTranspose1d, nn.ConvTranspose1d, {}, (2, 4, 5), (4, 3, 3)),
    (nn.LazyConvTranspose2d, nn.ConvTranspose2d, {"stride": 2}, (1, 4, 3, 3), (4, 3, 3, 3)),
    (nn.LazyConvTranspose3d, nn.ConvTranspose3d, {}, (1, 4, 2, 2, 2), (4, 3, 3, 3, 3)),
])
def test_lazy_convolutions_infer_in_channels_and_become_their_regular_class(lazy, regular, kwargs, shape,
                                                                            weight_shape):
    m = lazy(6, 3, groups=2, **kwargs)
    x = ag.randn(*shape)
    y = m(x)
    assert type(m) is regular and m.in_channels == 4 and m.weight.shape == weight_shape and m.bias.shape == (6,)
    reference = regular(4, 6, 3, groups=2, **kwargs)
    reference.load_state_dict(m.state_dict())
    np.testing.assert_allclose(y.detach().numpy(), reference(x).detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("lazy, regular, shape", [
    (nn.LazyBatchNorm1d, nn.BatchNorm1d, (6, 3)),
    (nn.LazyBatchNorm2d, nn.BatchNorm2d, (2, 3, 4, 4)),
    (nn.LazyBatchNorm3d, nn.BatchNorm3d, (2, 3, 2, 2, 2)),
    (nn.LazyInstanceNorm1d, nn.InstanceNorm1d, (2, 3, 5)),
    (nn.LazyInstanceNorm2d, nn.InstanceNorm2d, (2, 3, 4, 4)),
    (nn.LazyInstanceNorm3d, nn.InstanceNorm3d, (2, 3, 2, 2, 2)),
])
def test_lazy_norms_infer_num_features_and_start_their_running_statistics(lazy, regular, shape):
    x = ag.randn(*shape, dtype=ag.float64)
    m = lazy(dtype=ag.float64)
    y = m(x)
    assert type(m) is regular and m.num_features == 3
    reference = regular(3, affine=True, track_running_stats=True, dtype=ag.float64)
    expected = reference(x)
    np.testing.assert_allclose(y.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(m.running_mean.numpy(), reference.running_mean.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.ones(3))
    assert int(m.num_batches_tracked) == int(reference.num_batches_tracked)


def test_a_lazy_instance_norm_without_statistics_or_affine_keeps_num_features_zero():
    m = nn.LazyInstanceNorm2d(affine=False, track_running_stats=False)
    with pytest.warns(UserWarning, match="does not match num_features"):
        m(ag.randn(2, 3, 4, 4))
    assert type(m) is nn.InstanceNorm2d and m.num_features == 0


def test_lazy_parameters_land_on_the_given_dtype_and_in_the_state_dict_as_placeholders():
    m = nn.LazyLinear(2, dtype=ag.float64)
    state = m.state_dict()
    assert isinstance(state["weight"], nn.UninitializedParameter)
    m(ag.randn(1, 4, dtype=ag.float64))
    assert m.weight.dtype == ag.float64
    clone = copy.deepcopy(nn.LazyConv1d(2, 1))
    assert isinstance(clone.weight, nn.UninitializedParameter)


def test_load_state_dict_materializes_a_lazy_module():
    m = nn.LazyLinear(3)
    m.load_state_dict({"weight": ag.ones(3, 2), "bias": ag.zeros(3)})
    assert type(m) is nn.LazyLinear and m.weight.shape == (3, 2) and m.in_features == 0
    y = m(ag.ones(1, 2))
    assert type(m) is nn.Linear and m.in_features == 2
    np.testing.assert_array_equal(y.detach().numpy(), [[2.0, 2.0, 2.0]])



def test_a_lazy_state_dict_loads_into_a_lazy_module_and_is_refused_by_a_materialized_one():
    saved = nn.LazyBatchNorm1d().state_dict()  # placeholders, and a materialized num_batches_tracked
    fresh = nn.LazyBatchNorm1d()
    keys = fresh.load_state_dict(saved)
    assert not keys.missing_keys and not keys.unexpected_keys
    assert fresh.has_uninitialized_params() and type(fresh) is nn.LazyBatchNorm1d
    fresh(ag.ones(4, 3))
    assert fresh.running_mean.shape == (3,)
    _raises(lambda: fresh.load_state_dict(saved), RuntimeError,
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes.")

def test_lazy_errors_match_torch():
    _raises(lambda: nn.LazyConv2d(4, 3)(ag.randn(3, 4)), RuntimeError,
            "Expected 3D (unbatched) or 4D (batched) input to LazyConv2d, but got input of size: actorgrad.Size([3, "
            "4])")
    _raises(lambda: nn.LazyConv2d(4, 3, groups=2)(ag.randn(1, 3, 5, 5)), ValueError,
            "in_channels must be divisible by groups")
    m = nn.LazyLinear(3)
    m.load_state_dict({"weight": ag.ones(3, 2), "bias": ag.zeros(3)})
    _raises(lambda: m(ag.ones(1, 4)), AssertionError,
            "The in_features inferred from input: 4 is not equal to in_features from self.weight: 2")


@pytest.mark.gpu
def test_lazy_modules_and_buffers_on_cuda(cupy):
    cuda = ag.device("cuda")
    m = nn.LazyLinear(3, device="cuda")
    assert m.weight.device is cuda
    y = m(ag.randn(2, 4, device="cuda"))
    assert m.weight.device is cuda and m.bias.device is cuda and y.device is cuda
    norm = nn.LazyBatchNorm1d(device="cuda")
    norm(ag.randn(5, 3, device="cuda"))
    assert norm.running_mean.device is cuda and norm.num_batches_tracked.device is cuda
    holder = nn.Module()
    holder.b = nn.Buffer(ag.ones(2, device="cuda"))
    assert holder.b.device is cuda and list(holder.state_dict()) == ["b"]
