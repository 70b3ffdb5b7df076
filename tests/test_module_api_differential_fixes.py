"""nn.Module API behaviours a differential review against PyTorch found missing: the warning of `to(complex)`,
positional `state_dict` arguments, the buffer assignment error, and the order (and scope) of the keys
`load_state_dict` reports as unexpected or missing."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn


def test_to_complex_dtype_warns_and_casts_values():
    layer = nn.Linear(3, 2)
    before = layer.weight.detach().numpy().copy()
    with pytest.warns(UserWarning, match="^Complex modules are a new feature under active development"):
        out = layer.to(ag.complex64)
    assert out is layer
    assert layer.weight.dtype == np.complex64
    np.testing.assert_array_equal(layer.weight.detach().numpy(), before.astype(np.complex64))


def test_to_real_dtype_does_not_warn():
    layer = nn.Linear(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layer.to(ag.float64)
    assert layer.weight.dtype == np.float64


def test_state_dict_positional_arguments_warn_and_still_apply():
    layer = nn.Linear(2, 1)
    destination: dict = {}
    with pytest.warns(FutureWarning, match="Positional args are being deprecated, use kwargs instead"):
        result = layer.state_dict(destination, "p.", True)
    assert result is destination
    assert list(result) == ["p.weight", "p.bias"]
    assert result["p.weight"] is layer.weight  # keep_vars=True, given third
    with pytest.warns(FutureWarning):
        only_destination = layer.state_dict({})
    assert list(only_destination) == ["weight", "bias"]
    assert not only_destination["weight"].requires_grad


def test_state_dict_keyword_arguments_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(nn.Linear(2, 1).state_dict(prefix="q.")) == ["q.weight", "q.bias"]


def test_assigning_a_non_tensor_to_a_buffer_names_buffer_and_tensor():
    norm = nn.BatchNorm1d(2)
    with pytest.raises(TypeError, match=r"^cannot assign 'int' as buffer 'running_mean' "
                                        r"\(actorgrad\.nn\.Buffer, actorgrad\.Tensor or None expected\)$"):
        norm.running_mean = 3


def _nested() -> nn.Sequential:
    return nn.Sequential(nn.Sequential(nn.Linear(1, 1)), nn.Linear(1, 1))


def test_unexpected_keys_are_grouped_by_the_module_that_reports_them():
    # PyTorch's recursion reports a key under the deepest module its path reaches, modules in pre-order, and within
    # a module in the checkpoint's order: the root's ('zz', '2.x': no child '2'), then '0', '0.0', then '1'.
    model = _nested()
    state = dict(model.state_dict())
    for key in ["0.0.zz", "zz", "1.zz", "0.zz", "0.0.a.b", "2.x", "1.weight.x"]:
        state[key] = ag.tensor([1.0])
    keys = model.load_state_dict(state, strict=False)
    assert keys.missing_keys == []
    assert keys.unexpected_keys == ["zz", "2.x", "0.zz", "0.0.zz", "0.0.a.b", "1.zz", "1.weight.x"]


def test_strict_error_lists_unexpected_keys_in_module_order():
    model = nn.Sequential(nn.Linear(2, 3))
    state = dict(model.state_dict())
    state["0.foo"] = ag.tensor([1.0])
    state["1.weight"] = ag.tensor([1.0])
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "1.weight", "0.foo". $'):
        model.load_state_dict(state)


def test_keys_under_a_child_set_to_none_are_ignored_but_the_bare_name_is_unexpected():
    model = nn.Sequential(nn.Linear(1, 1))
    model.register_module("gone", None)
    state = dict(model.state_dict())
    state["gone.weight"] = ag.tensor([1.0])
    state["gone"] = ag.tensor([1.0])
    keys = model.load_state_dict(state, strict=False)
    assert (keys.missing_keys, keys.unexpected_keys) == ([], ["gone"])


class _WithExtraState(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(1, 1)
        self.value = 0

    def get_extra_state(self) -> int:
        return self.value

    def set_extra_state(self, state: int) -> None:
        self.value = state


def test_missing_keys_follow_each_module_with_its_extra_state_before_its_children():
    model = nn.Sequential(_WithExtraState(), _WithExtraState())
    keys = model.load_state_dict({}, strict=False)
    assert keys.missing_keys == ["0._extra_state", "0.inner.weight", "0.inner.bias",
                                 "1._extra_state", "1.inner.weight", "1.inner.bias"]


@pytest.mark.gpu
def test_to_complex_on_the_device_warns_and_keeps_the_device(cupy):
    layer = nn.Linear(2, 2).to("cuda")
    before = layer.weight.detach().cpu().numpy()
    with pytest.warns(UserWarning, match="Complex modules"):
        layer.to(ag.complex128)
    assert layer.weight.device.type == "cuda"
    assert layer.weight.dtype == np.complex128
    np.testing.assert_array_equal(layer.weight.detach().cpu().numpy(), before.astype(np.complex128))
