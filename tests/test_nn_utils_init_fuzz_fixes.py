"""Behaviour of nn.init and nn.utils that a generated comparison with PyTorch found differing: constant_ checks
its value against the tensor's dtype as fill_ does, orthogonal_ refuses the dtypes PyTorch's QR and sign refuse,
trunc_normal_ refuses complex tensors, functional_call puts only tensors, and only where a tensor (or nothing)
was, and a layer made without a bias registers it as None."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.func import functional_call
from actorgrad.nn import init


@pytest.mark.parametrize(("dtype", "value"), [
    (ag.uint8, 300),
    (ag.uint8, -2.5),
    (ag.int8, 1000),
    (ag.int64, float("nan")),
    (ag.float32, 1 + 2j),
])
def test_constant_refuses_a_value_its_dtype_cannot_hold_and_leaves_the_tensor(dtype, value):
    t = ag.ones(3, dtype=dtype)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type .* without overflow$"):
        init.constant_(t, value)
    assert t.tolist() == [1, 1, 1]


@pytest.mark.parametrize(("dtype", "value", "expected"), [
    (ag.int8, -2.5, -2),  # truncated toward zero, as a cast
    (ag.int32, 1.7, 1),
    (ag.bool, 5, True),
    (ag.uint8, 255, 255),
    (ag.complex64, 1 + 2j, 1 + 2j),
    (ag.float64, 0.1, 0.1),
])
def test_constant_casts_a_value_that_fits(dtype, value, expected):
    t = ag.zeros(2, 3, dtype=dtype)
    assert init.constant_(t, value) is t
    assert t.dtype == dtype and t.tolist() == [[expected] * 3] * 2


def test_constant_of_a_parameter_records_nothing_and_bumps_the_version():
    w = ag.nn.Parameter(ag.zeros(2, 2))
    version = w._version
    init.constant_(w, 3)
    assert w.grad_fn is None and w.is_leaf and w.requires_grad
    assert w._version > version
    np.testing.assert_array_equal(w.detach().numpy(), np.full((2, 2), 3.0, np.float32))


def test_orthogonal_refuses_float16_as_pytorchs_qr_does():
    t = ag.zeros(3, 3, dtype=ag.float16)
    with pytest.raises(NotImplementedError, match="^\"geqrf_cpu\" not implemented for 'Half'$"):
        init.orthogonal_(t)
    assert not t.numpy().any()


@pytest.mark.parametrize("dtype", [ag.complex64, ag.complex128])
def test_orthogonal_refuses_complex_tensors(dtype):
    with pytest.raises(NotImplementedError, match="torch.sign is not intended to support complex numbers"):
        init.orthogonal_(ag.zeros(3, 4, dtype=dtype))


def test_orthogonal_still_leaves_an_empty_float16_tensor_alone():
    t = ag.zeros(0, 3, dtype=ag.float16)
    assert init.orthogonal_(t) is t


@pytest.mark.filterwarnings("ignore:mean is more than 2 std")
@pytest.mark.parametrize(("a", "b", "kernel"), [(-2.0, 2.0, "lt_cpu"), (3.0, 4.0, "gt_cpu")])
def test_trunc_normal_refuses_complex_tensors(a, b, kernel):
    t = ag.zeros(4, dtype=ag.complex64)
    with pytest.raises(NotImplementedError, match=f"^\"{kernel}\" not implemented for 'ComplexFloat'$"):
        init.trunc_normal_(t, a=a, b=b)
    assert not t.numpy().any()


def test_trunc_normal_checks_the_bounds_before_the_dtype():
    with pytest.raises(RuntimeError, match="^uniform_ expects to return a \\[from, to\\) range"):
        init.trunc_normal_(ag.zeros(4, dtype=ag.complex64), a=1.0, b=-1.0)



def test_constant_takes_a_zero_dim_tensor_but_refuses_one_with_dims():
    t = ag.zeros(2, 2)
    init.constant_(t, ag.tensor(1.5, dtype=ag.float64))
    assert t.dtype == ag.float32 and t.tolist() == [[1.5, 1.5], [1.5, 1.5]]
    with pytest.raises(RuntimeError, match="^fill_ only supports 0-dimension value tensor but got tensor with 1 "):
        init.constant_(t, ag.tensor([2.5]))
    assert t.tolist() == [[1.5, 1.5], [1.5, 1.5]]


def two_layers() -> ag.nn.Sequential:
    model = ag.nn.Sequential(ag.nn.Linear(2, 2, dtype=ag.float64), ag.nn.Tanh())
    with ag.no_grad():
        model[0].weight.copy_(ag.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ag.float64))
        model[0].bias.copy_(ag.tensor([0.5, -0.5], dtype=ag.float64))
    return model


@pytest.mark.parametrize(("key", "value", "error", "message"), [
    ("0", ag.zeros(2), TypeError, "^attribute `0`: Linear\\(.*\\) is not an instance of actorgrad.Tensor$"),
    ("0.in_features", ag.zeros(1), TypeError, "^attribute `in_features`: 2 is not an instance of actorgrad.Tensor$"),
    ("0.forward", ag.zeros(1), TypeError, "^attribute `forward`: <bound method"),
    ("0.weight.x", ag.zeros(1), TypeError, "^submodule `0.weight`: tensor\\(\\[\\[0., 0.\\],"),  # `good`, put first
    ("0.bias", 3, TypeError, "^3 is not an instance of actorgrad.Tensor$"),
    ("2.weight", ag.zeros(1), AttributeError, "^Sequential has no attribute `2`$"),
])
def test_functional_call_refuses_what_is_not_a_tensor_slot_and_leaves_the_module(key, value, error, message):
    model = two_layers()
    good = ag.zeros(2, 2, dtype=ag.float64)
    with pytest.raises(error, match=message):
        functional_call(model, {"0.weight": good, key: value}, (ag.ones(1, 2, dtype=ag.float64),))
    assert [name for name, _ in model.named_parameters()] == ["0.weight", "0.bias"]
    assert model[0].weight.tolist() == [[1.0, 2.0], [3.0, 4.0]] and model[0].in_features == 2
    x = ag.tensor([[1.0, -1.0]], dtype=ag.float64)
    np.testing.assert_allclose(model(x).detach().numpy(), np.tanh([[1.0 - 2.0 + 0.5, 3.0 - 4.0 - 0.5]]))


def test_functional_call_still_takes_none_and_a_new_attribute():
    model = two_layers()
    x = ag.tensor([[1.0, -1.0]], dtype=ag.float64)
    y = functional_call(model, {"0.bias": None, "0.extra": ag.ones(1)}, (x,))
    np.testing.assert_allclose(y.detach().numpy(), np.tanh([[1.0 - 2.0, 3.0 - 4.0]]))
    assert not hasattr(model[0], "extra") and model[0].bias.tolist() == [0.5, -0.5]



@pytest.mark.parametrize("make", [
    lambda: ag.nn.Linear(3, 2, bias=False),
    lambda: ag.nn.Conv1d(3, 2, 1, bias=False),
    lambda: ag.nn.ConvTranspose1d(3, 2, 1, bias=False),
    lambda: ag.nn.Bilinear(3, 3, 2, bias=False),
    lambda: ag.nn.LayerNorm(3, bias=False),
    lambda: ag.nn.LayerNorm(3, elementwise_affine=False),
])
def test_a_module_without_bias_registers_it_as_none(make):
    """As PyTorch's `register_parameter('bias', None)`: the slot is a parameter's, out of the state dict, and takes
    only a Parameter (or None)."""
    module = make()
    assert "bias" in module._parameters and module.bias is None
    assert "bias" not in module.state_dict() and "bias" not in dict(module.named_parameters())
    with pytest.raises(TypeError, match="cannot assign 'actorgrad.FloatTensor' as parameter 'bias'"):
        module.bias = ag.zeros(2)
    module.bias = ag.nn.Parameter(ag.zeros(2 if not isinstance(module, ag.nn.LayerNorm) else 3))
    assert "bias" in module.state_dict()

@pytest.mark.gpu
def test_constant_checks_its_value_on_cuda(cupy):
    t = ag.zeros(2, dtype=ag.uint8, device="cuda")
    with pytest.raises(RuntimeError, match="without overflow"):
        init.constant_(t, 300)
    init.constant_(t, 7)
    assert isinstance(t._data, cupy.ndarray) and t.cpu().tolist() == [7, 7]
    init.constant_(t, ag.tensor(5))
    assert isinstance(t._data, cupy.ndarray) and t.cpu().tolist() == [5, 5]
