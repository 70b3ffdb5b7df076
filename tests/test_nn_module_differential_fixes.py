"""Module API behaviour found to differ from PyTorch's in a differential review, now as PyTorch's:
load_state_dict(assign=True), its refusal of non-tensor values, 0-d slots from 1-element vectors, BatchNorm
checkpoints from before `num_batches_tracked`, Sequential repetition, the parameter-name check before a module is
assigned, dir() of a module, and `to()` casting complex parameters."""

from collections import OrderedDict

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn


def _linear(in_features: int = 2, out_features: int = 3) -> nn.Linear:
    m = nn.Linear(in_features, out_features)
    with ag.no_grad():
        m.weight.copy_(ag.tensor(np.arange(in_features * out_features, dtype=np.float32).reshape(out_features, -1)))
        m.bias.fill_(0.5)
    return m


# -- load_state_dict(assign=True) ---------------------------------------------------------------------------------
def test_assign_puts_the_checkpoint_tensors_in_the_slots_with_their_dtype():
    m = _linear()
    weight = ag.full((3, 2), 2.0, dtype=ag.float64)
    bias = nn.Parameter(ag.ones(3, dtype=ag.float64))
    keys = m.load_state_dict({"weight": weight, "bias": bias}, assign=True)
    assert keys.missing_keys == [] and keys.unexpected_keys == []
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m.weight.dtype == ag.float64 and m.bias is bias
    assert [name for name, _ in m.named_parameters()] == ["weight", "bias"]
    weight.add_(1.0)  # the Parameter shares the checkpoint tensor's data, as PyTorch's
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.full((3, 2), 3.0))
    out = m(ag.ones(1, 2, dtype=ag.float64))
    np.testing.assert_allclose(out.detach().numpy(), np.full((1, 3), 3.0 * 2 + 1.0))


def test_assign_keeps_each_parameters_requires_grad():
    m = _linear()
    m.weight.requires_grad_(False)
    incoming = nn.Parameter(ag.ones(3, 2))
    m.load_state_dict({"weight": incoming, "bias": ag.zeros(3)}, assign=True)
    assert m.weight is incoming and not m.weight.requires_grad
    assert isinstance(m.bias, nn.Parameter) and m.bias.requires_grad


def test_assign_of_a_buffer_keeps_the_tensor_and_its_registration():
    bn = nn.BatchNorm1d(2)
    state = bn.state_dict()
    mean = ag.tensor([1.0, 2.0], dtype=ag.float64)
    state["running_mean"] = mean
    bn.load_state_dict(state, assign=True)
    assert bn.running_mean is mean
    assert [name for name, _ in bn.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]


def test_assign_refuses_a_shape_mismatch_and_reports_missing_keys():
    m = _linear()
    with pytest.raises(RuntimeError, match=r"size mismatch for weight: copying a param with shape \(4, 2\)"):
        m.load_state_dict({"weight": ag.ones(4, 2), "bias": ag.ones(3)}, assign=True)
    keys = m.load_state_dict({"weight": ag.ones(3, 2)}, strict=False, assign=True)
    assert keys.missing_keys == ["bias"]
    np.testing.assert_array_equal(m.bias.detach().numpy(), np.full(3, 0.5))


def test_assign_into_a_module_reached_twice_takes_the_last_value():
    shared = _linear(1, 1)
    seq = nn.Sequential(shared, shared)
    seq.load_state_dict({"0.weight": ag.full((1, 1), 2.0), "0.bias": ag.zeros(1),
                         "1.weight": ag.full((1, 1), 3.0), "1.bias": ag.zeros(1)}, True, True)
    assert seq[0] is seq[1]
    assert seq[0].weight.item() == 3.0


def test_load_state_dict_refuses_values_that_are_not_tensors_and_loads_nothing():
    m = _linear()
    with pytest.raises(RuntimeError, match=r'While copying the parameter named "weight", expected actorgrad.Tensor '
                                           r"or Tensor-like object from checkpoint but received <class 'list'>"):
        m.load_state_dict({"weight": [[1.0, 2.0]] * 3, "bias": ag.zeros(3)})
    np.testing.assert_array_equal(m.bias.detach().numpy(), np.full(3, 0.5))


def test_a_scalar_slot_loads_the_first_element_of_a_vector():
    m = nn.Module()
    m.scale = nn.Parameter(ag.tensor(1.0))
    m.load_state_dict({"scale": ag.tensor([3.0])})
    assert m.scale.shape == () and m.scale.item() == 3.0


# -- BatchNorm checkpoints from before num_batches_tracked ---------------------------------------------------------
def test_batchnorm_records_version_two_in_the_metadata():
    state = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).state_dict()
    assert state._metadata["0"] == {"version": 1}
    assert state._metadata["1"] == {"version": 2}


@pytest.mark.parametrize("metadata", [None, {"1": {"version": 1}}])
def test_an_old_batchnorm_checkpoint_without_the_count_loads(metadata):
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    model[1].num_batches_tracked.fill_(7)
    state = OrderedDict((k, v) for k, v in model.state_dict().items() if "num_batches" not in k)
    state["1.running_mean"] = ag.tensor([0.25, -0.5])
    if metadata is not None:
        state._metadata = metadata
    assert repr(model.load_state_dict(state)) == "<All keys matched successfully>"
    assert model[1].num_batches_tracked.item() == 7  # the module keeps its count
    np.testing.assert_array_equal(model[1].running_mean.numpy(), np.array([0.25, -0.5], np.float32))


def test_a_version_two_batchnorm_checkpoint_without_the_count_is_missing_a_key():
    bn = nn.BatchNorm1d(2)
    full = bn.state_dict()
    state = OrderedDict((k, v) for k, v in full.items() if k != "num_batches_tracked")
    state._metadata = full._metadata
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "num_batches_tracked"'):
        bn.load_state_dict(state)


# -- Sequential repetition -----------------------------------------------------------------------------------------
def test_sequential_times_an_int_repeats_the_same_modules():
    a, b = nn.Linear(1, 1), nn.ReLU()
    seq = nn.Sequential(a, b)
    for doubled in (seq * 2, 2 * seq):
        assert len(doubled) == 4 and list(doubled) == [a, b, a, b]  # named_children() gives each module once
    assert len(seq) == 2
    same = seq
    seq *= 3
    assert seq is same and list(seq) == [a, b] * 3


@pytest.mark.parametrize("factor, error, message", [
    (0, ValueError, "Non-positive multiplication factor 0 for <class 'actorgrad.nn.container.Sequential'>"),
    (2.0, TypeError, "unsupported operand type(s) for *: <class 'actorgrad.nn.container.Sequential'> and "
                     "<class 'float'>"),
])
def test_sequential_repetition_refuses_bad_factors(factor, error, message):
    seq = nn.Sequential(nn.ReLU())
    with pytest.raises(error) as info:
        seq * factor
    assert str(info.value) == message
    with pytest.raises(error):
        seq *= factor


# -- attribute rules -----------------------------------------------------------------------------------------------
def test_assigning_a_module_to_a_parameter_name_is_refused():
    m = nn.Linear(1, 1)
    with pytest.raises(TypeError) as info:
        m.weight = nn.ReLU()
    assert str(info.value) == ("cannot assign 'actorgrad.nn.activation.ReLU' as parameter 'weight' "
                               "(actorgrad.nn.Parameter or None expected)")
    assert isinstance(m.weight, nn.Parameter) and list(m.named_children()) == []


def test_dir_lists_parameters_buffers_and_submodules_but_not_numbered_children():
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.Linear(1, 1))
            self.scale = nn.Parameter(ag.ones(1))
            self.register_buffer("steps", ag.zeros(1), persistent=False)

    names = dir(Net())
    assert {"body", "scale", "steps", "forward", "training"} <= set(names)
    assert names == sorted(set(names))
    seq_names = dir(nn.Sequential(nn.ReLU()))
    assert "append" in seq_names and not any(name[0].isdigit() for name in seq_names)


# -- casts ---------------------------------------------------------------------------------------------------------
def _mixed() -> nn.Module:
    m = nn.Module()
    m.c = nn.Parameter(ag.tensor(np.array([1 + 2j, -3j], np.complex64)))
    m.f = nn.Parameter(ag.tensor([1.5, 2.5]))
    m.register_buffer("i", ag.ones(2, dtype=ag.int32))
    return m


def test_to_casts_complex_parameters_and_double_leaves_them():
    with pytest.warns(UserWarning, match="Complex modules"):
        m = _mixed().to(ag.complex128)
    assert (m.c.dtype, m.f.dtype, m.i.dtype) == (ag.complex128, ag.complex128, ag.int32)
    np.testing.assert_array_equal(m.c.detach().numpy(), np.array([1 + 2j, -3j]))
    m = _mixed().double()
    assert (m.c.dtype, m.f.dtype, m.i.dtype) == (ag.complex64, ag.float64, ag.int32)
    m = _mixed().half()
    assert (m.c.dtype, m.f.dtype) == (ag.complex64, ag.float16)


def test_to_a_real_dtype_keeps_the_real_part_of_complex_parameters():
    m = _mixed()
    with pytest.warns(Warning):  # the imaginary part is discarded, with a warning as in PyTorch
        m.to(ag.float64)
    assert m.c.dtype == ag.float64 and isinstance(m.c, nn.Parameter)
    np.testing.assert_array_equal(m.c.detach().numpy(), np.array([1.0, 0.0]))


@pytest.mark.gpu
def test_assign_and_complex_casts_on_cuda(cupy):
    m = _linear().to("cuda")
    weight = ag.full((3, 2), 2.0, dtype=ag.float64, device="cuda")
    m.load_state_dict({"weight": weight, "bias": ag.zeros(3, dtype=ag.float64, device="cuda")}, assign=True)
    assert m.weight.device == ag.device("cuda") and m.weight.dtype == ag.float64
    out = m(ag.ones(1, 2, dtype=ag.float64, device="cuda"))
    np.testing.assert_allclose(out.detach().cpu().numpy(), np.full((1, 3), 4.0))
    with pytest.warns(UserWarning, match="Complex modules"):
        mixed = _mixed().to("cuda").to(ag.complex128)
    assert mixed.c.dtype == ag.complex128 and mixed.c.device == ag.device("cuda")
    np.testing.assert_array_equal(mixed.c.detach().cpu().numpy(), np.array([1 + 2j, -3j]))


def test_a_cast_to_the_dtype_held_keeps_the_array_and_the_gradient():
    m = nn.Linear(2, 2)
    flat = m.weight.view(4)  # shares the weight's memory
    grad = ag.ones(2, 2)
    m.weight.grad = grad
    m.float()
    m.to(ag.float32)
    assert m.weight.grad is grad
    with ag.no_grad():
        m.weight.fill_(2.5)
    np.testing.assert_array_equal(flat.detach().numpy(), np.full(4, 2.5, np.float32))


# -- PyTorch's private state-dict hooks, which libraries call ----------------------------------------------------
def test_private_load_pre_hook_gets_no_module_unless_asked():
    model = nn.Sequential(nn.Linear(1, 1))
    seen = []

    def rename(state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        seen.append((prefix, strict))
        state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")

    model[0]._register_load_state_dict_pre_hook(rename)
    model[0]._register_load_state_dict_pre_hook(lambda module, *rest: seen.append(module), with_module=True)
    keys = model.load_state_dict({"0.w": ag.full((1, 1), 4.0), "0.bias": ag.zeros(1)})
    assert repr(keys) == "<All keys matched successfully>"
    assert seen == [("0.", True), model[0]] and model[0].weight.item() == 4.0


def test_private_state_dict_hook_may_return_the_dict():
    model = nn.Sequential(nn.Linear(1, 1))
    model._register_state_dict_hook(lambda module, state, prefix, meta: OrderedDict(extra=ag.ones(1)))
    model[0]._register_state_dict_hook(lambda module, state, prefix, meta: {"dropped": 1})  # a child's is dropped
    assert list(model.state_dict()) == ["extra"]
    public = nn.Linear(1, 1)
    public.register_state_dict_post_hook(lambda module, state, prefix, meta: state)
    with pytest.raises(RuntimeError, match="^state_dict post-hook must return None$"):
        public.state_dict()


# -- class hierarchy: layers PyTorch keeps as siblings ---------------------------------------------------------------
@pytest.mark.parametrize("layer, not_a", [
    (nn.Dropout2d(), nn.Dropout), (nn.Dropout1d(), nn.Dropout), (nn.Dropout3d(), nn.Dropout),
    (nn.AlphaDropout(), nn.Dropout), (nn.FeatureAlphaDropout(), nn.Dropout),
    (nn.MaxPool1d(2), nn.MaxPool2d), (nn.MaxPool3d(2), nn.MaxPool2d), (nn.AvgPool3d(2), nn.AvgPool2d),
    (nn.CELU(), nn.ELU), (nn.Hardswish(), nn.Hardsigmoid), (nn.Softshrink(), nn.Hardshrink),
])
def test_isinstance_tells_sibling_layers_apart(layer, not_a):
    """Code that picks layers by class (`isinstance(m, nn.Dropout)` to change p, `nn.Hardsigmoid` to swap it)
    must not catch their siblings."""
    assert not isinstance(layer, not_a)


def test_sibling_layers_keep_their_settings_and_reprs():
    assert repr(nn.Dropout2d(0.25, inplace=True)) == "Dropout2d(p=0.25, inplace=True)"
    assert repr(nn.MaxPool3d(2, 1)) == "MaxPool3d(kernel_size=2, stride=1, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.CELU(0.5, inplace=True)) == "CELU(alpha=0.5, inplace=True)"
    assert repr(nn.Hardswish(inplace=True)) == "Hardswish()" and repr(nn.Softshrink(0.25)) == "Softshrink(0.25)"
    x = ag.tensor([-2.0, -0.1, 0.3, 2.0])
    np.testing.assert_allclose(nn.Softshrink(0.25)(x).numpy(), [-1.75, 0.0, 0.05, 1.75], rtol=1e-6)
    np.testing.assert_allclose(nn.CELU(0.5)(x).numpy()[:2], 0.5 * np.expm1(np.array([-2.0, -0.1]) / 0.5),
                               rtol=1e-6)
    pooled = nn.AvgPool3d(2)(ag.arange(8.0).reshape(1, 1, 2, 2, 2))
    assert pooled.item() == 3.5


# -- PyTorch's nn.modules namespace ---------------------------------------------------------------------------------
def test_nn_modules_holds_the_base_classes_isinstance_checks_use():
    from actorgrad.nn.modules.batchnorm import _BatchNorm, _NormBase
    from actorgrad.nn.modules.conv import _ConvNd
    from actorgrad.nn.modules.instancenorm import _InstanceNorm
    from actorgrad.nn.modules.loss import _Loss, _WeightedLoss

    assert isinstance(nn.BatchNorm2d(3), _BatchNorm) and isinstance(nn.LazyBatchNorm1d(), _BatchNorm)
    assert not isinstance(nn.InstanceNorm2d(3), _BatchNorm)  # siblings under _NormBase, as PyTorch's
    assert isinstance(nn.InstanceNorm2d(3), _InstanceNorm) and isinstance(nn.InstanceNorm2d(3), _NormBase)
    assert isinstance(nn.ConvTranspose2d(1, 1, 1), _ConvNd) and not isinstance(nn.Linear(1, 1), _ConvNd)
    assert isinstance(nn.CrossEntropyLoss(), _WeightedLoss) and isinstance(nn.MSELoss(), _Loss)
    assert nn.modules.Linear is nn.Linear and nn.modules.container.Sequential is nn.Sequential
    assert nn.modules.module.Module is nn.Module


def test_nn_modules_module_registers_global_hooks():
    calls = []
    handle = nn.modules.module.register_module_forward_hook(lambda m, args, out: calls.append(type(m).__name__))
    try:
        nn.Sequential(nn.ReLU())(ag.ones(1))
    finally:
        handle.remove()
    nn.ReLU()(ag.ones(1))
    assert calls == ["ReLU", "Sequential"]


def test_nn_modules_utils():
    from actorgrad.nn.modules.utils import _pair, _quadruple, _single, _triple, consume_prefix_in_state_dict_if_present

    assert (_single(2), _pair(3), _triple((1, 2, 3)), _quadruple(0)) == ((2,), (3, 3), (1, 2, 3), (0, 0, 0, 0))
    wrapped = nn.Sequential(OrderedDict(module=nn.Linear(1, 1)))
    state = wrapped.state_dict()
    consume_prefix_in_state_dict_if_present(state, "module.")
    assert list(state) == ["weight", "bias"] and "module" not in state._metadata
    assert repr(nn.Linear(1, 1).load_state_dict(state)) == "<All keys matched successfully>"


def test_an_integer_parameter_that_requires_grad_is_refused_in_pytorchs_words():
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require gradients$"):
        nn.Parameter(ag.ones(2, dtype=ag.int64))
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype"):
        nn.ParameterList([ag.ones(1, dtype=ag.int32)])
    frozen = nn.Parameter(ag.ones(2, dtype=ag.int64), requires_grad=False)
    assert not frozen.requires_grad and frozen.dtype == ag.int64


def test_module_to_a_bare_index_names_a_cuda_device():
    m = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="^Device index must not be negative$"):
        m.to(-1)
    if not ag.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):  # cuda:0 is asked for, as PyTorch's to(0)
            m.to(0)
