"""nn.Module's API fuzzed against PyTorch 2.13 (generated module trees and sequences of API calls): the fixes.

Registration checks a child's type before its name; get_parameter refuses a parameter registered as None; each
module's load pre-hooks see (and edit) only the keys under its prefix, with `strict` True as PyTorch passes it;
post-hooks run as PyTorch's recursion runs them (children first, siblings in order) and see the keys found so far;
an entry of a state dict that holds a tied slot's own array reads what was loaded into that slot before it;
`assign=True` refuses an integer tensor for a parameter that requires grad, loading nothing; `to()` refuses the
`copy` flag; casts and moves keep the gradient object; train() and state_dict() reach children through the
children's own (overridable) methods; `_get_name`, `__setstate__`, PyTorch's names of the hook registries and the
global registration hooks.
"""

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn


def _leaf(*values: float) -> nn.Module:
    """A module with one parameter `w` holding `values` and no children."""
    leaf = nn.Module()
    leaf.w = nn.Parameter(ag.tensor(list(values)))
    return leaf


def test_add_module_checks_the_type_before_the_name():
    model = nn.Linear(2, 2)
    for register in (model.add_module, model.register_module):
        with pytest.raises(TypeError, match="^int is not a Module subclass$"):
            register("weight", 3)  # an existing attribute's name, but the value is what is wrong
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        model.add_module("weight", nn.ReLU())


def test_get_parameter_refuses_a_parameter_registered_as_none():
    model = nn.Sequential(nn.Linear(2, 2, bias=False))
    with pytest.raises(AttributeError, match="^`bias` is not an nn.Parameter$"):
        model.get_parameter("0.bias")
    model[0].register_buffer("stat", None)
    assert model.get_buffer("0.stat") is None
    with pytest.raises(AttributeError, match="^`weight` is not a buffer$"):
        model.get_buffer("0.weight")


def test_a_load_pre_hook_sees_and_edits_only_the_keys_under_its_prefix():
    model = nn.Sequential(_leaf(1.0, 2.0), _leaf(3.0, 4.0))
    seen = []

    def rename_every_key(module, state_dict, prefix, metadata, strict, missing, unexpected, errors):
        seen.append((prefix, sorted(state_dict), strict, dict(metadata)))
        for key in list(state_dict):  # a hook that renames without looking at the prefix: PyTorch hands it its keys
            if key.endswith(".old"):
                state_dict[key[:-len(".old")] + ".w"] = state_dict.pop(key)

    model[1].register_load_state_dict_pre_hook(rename_every_key)
    incoming = OrderedDict([("0.old", ag.tensor([5.0, 6.0])), ("1.old", ag.tensor([7.0, 8.0]))])
    keys = model.load_state_dict(incoming, strict=False)
    assert seen == [("1.", ["1.old"], True, {})]  # strict=False, yet PyTorch passes its hooks True
    assert keys.missing_keys == ["0.w"] and keys.unexpected_keys == ["0.old"]
    np.testing.assert_array_equal(model[0].w.detach().numpy(), [1.0, 2.0])  # its key was not the child's to rename
    np.testing.assert_array_equal(model[1].w.detach().numpy(), [7.0, 8.0])
    seen.clear()
    model.load_state_dict(model.state_dict(), assign=True)
    assert seen[0][3] == {"version": 1, "assign_to_params_buffers": True}


def test_load_post_hooks_run_children_first_and_see_the_keys_found_so_far():
    model = nn.Sequential(nn.Sequential(_leaf(1.0)), _leaf(2.0))
    calls = []
    for name, module in model.named_modules():
        module.register_load_state_dict_post_hook(
            lambda module, keys, name=name: calls.append((name, list(keys.missing_keys)))
        )
    state = model.state_dict()
    del state["1.w"]
    model.load_state_dict(state, strict=False)
    # post-order: the inner leaf, its parent, then the second child (whose key is missing), then the root
    assert calls == [("0.0", []), ("0", []), ("1", ["1.w"]), ("", ["1.w"])]


def test_extra_state_is_set_before_the_module_post_hooks_of_later_modules():
    order = []

    class WithExtra(nn.Module):
        def get_extra_state(self):
            return "state"

        def set_extra_state(self, state):
            order.append(("extra", state))

    model = nn.Sequential(_leaf(1.0), WithExtra())
    model[0].register_load_state_dict_post_hook(lambda module, keys: order.append("post 0"))
    model.load_state_dict(model.state_dict())
    assert order == ["post 0", ("extra", "state")]


@pytest.mark.parametrize("changed", ["enc.w", "dec.w"])
def test_a_changed_tied_entry_wins_over_the_entry_that_aliases_the_slot(changed):
    model = nn.Module()
    tied = _leaf(1.0, 2.0)
    model.enc, model.dec = tied, tied
    state = model.state_dict()  # both entries share the slot's array, as PyTorch's share its storage
    state[changed] = ag.tensor([10.0, 20.0])
    model.load_state_dict(state)
    np.testing.assert_array_equal(tied.w.detach().numpy(), [10.0, 20.0])


def test_assign_refuses_an_integer_tensor_for_a_parameter_that_requires_grad():
    model = nn.Linear(2, 2)
    weight = model.weight
    incoming = {"weight": ag.ones(2, 2, dtype=ag.float64), "bias": ag.ones(2, dtype=ag.int64)}
    message = ('While copying the parameter named "bias", whose dimensions in the model are (2,) and whose '
               "dimensions in the checkpoint are (2,), an exception occurred : ('Only Tensors of floating point and "
               "complex dtype can require gradients',).")
    with pytest.raises(RuntimeError) as error:
        model.load_state_dict(incoming, assign=True)
    assert str(error.value) == "Error(s) in loading state_dict for Linear:\n\t" + message
    assert model.weight is weight and model.weight.dtype == ag.float32  # nothing was assigned
    model.bias.requires_grad_(False)
    model.load_state_dict(incoming, assign=True)  # a parameter that needs no grad may hold integers
    assert model.bias.dtype == ag.int64 and isinstance(model.bias, nn.Parameter)


def test_to_refuses_the_copy_flag_and_a_keyword_for_what_a_positional_gave():
    model = nn.Linear(2, 2)
    for args, kwargs in (((ag.float64, False, False), {}), ((ag.float64,), {"copy": False}),
                         (("cpu", ag.float64, True, True), {})):
        with pytest.raises(RuntimeError, match=r"^\.to\(\) does not accept copy argument$"):
            model.to(*args, **kwargs)
    for args, kwargs in (((ag.float64,), {"device": "cpu"}), (("cpu",), {"device": "cpu"}),
                         ((ag.zeros(1),), {"dtype": ag.float64})):
        with pytest.raises(TypeError, match="^to\\(\\) received an invalid combination of arguments"):
            model.to(*args, **kwargs)
    assert model.weight.dtype == ag.float32
    assert model.to("cpu", dtype=ag.float64).weight.dtype == ag.float64
    assert model.to(ag.float32, True).weight.dtype == ag.float32  # non_blocking alone is fine


def test_casts_keep_the_gradient_object():
    model = nn.Linear(2, 2)
    model(ag.ones(1, 2)).sum().backward()
    grad = model.weight.grad
    expected = grad.numpy().astype(np.float64)
    model.double()
    assert model.weight.grad is grad and grad.dtype == ag.float64
    np.testing.assert_array_equal(grad.numpy(), expected)
    model.to(ag.float16).cpu()
    assert model.weight.grad is grad and grad.dtype == ag.float16


def test_get_name_names_the_module_in_repr_and_lookup_errors():
    class Renamed(nn.Module):
        def _get_name(self):
            return "Shown"

    model = nn.Sequential(Renamed())
    assert repr(model) == "Sequential(\n  (0): Shown()\n)"
    assert nn.Linear(1, 1)._get_name() == "Linear"
    with pytest.raises(AttributeError, match="^Shown has no attribute `x`$"):
        model.get_submodule("0.x")


class _Restored(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(1, 1)

    def __setstate__(self, state):
        super().__setstate__(state)
        self.restored = True


def test_setstate_for_subclasses_and_pickles_without_hook_registries():
    model = pickle.loads(pickle.dumps(_Restored()))
    assert model.restored and isinstance(model.inner, nn.Linear)
    state = nn.Linear(2, 1).__getstate__()
    for name in ("_forward_hooks", "_forward_pre_hooks", "_non_persistent_buffers_set"):
        del state[name]  # as in a module pickled before these existed
    old = nn.Linear.__new__(nn.Linear)
    old.__setstate__(state)
    assert old(ag.ones(3, 2)).shape == (3, 1) and list(old.state_dict()) == ["weight", "bias"]
    assert len(copy.deepcopy(old)._forward_hooks) == 0


def test_global_registration_hooks_see_and_may_replace_what_is_registered():
    hooks = nn.modules.module
    seen = []
    handles = [
        hooks.register_module_parameter_registration_hook(
            lambda module, name, value: seen.append(("parameter", name))
            or (nn.Parameter(ag.zeros(value.shape)) if name == "w" else None)
        ),
        hooks.register_module_buffer_registration_hook(lambda module, name, value: seen.append(("buffer", name))),
        hooks.register_module_module_registration_hook(lambda module, name, value: seen.append(("module", name))),
    ]
    try:
        model = nn.Module()
        model.w = nn.Parameter(ag.ones(2))
        model.nothing = None  # a plain attribute: no registration
        model.register_parameter("p", None)  # None parameters are not shown to the hooks, as in PyTorch
        model.register_buffer("b", ag.ones(1))
        model.b = ag.zeros(1)  # reassigning a buffer registers it again
        model.child = nn.Module()
        model.child = None
    finally:
        for handle in handles:
            handle.remove()
    assert seen == [("parameter", "w"), ("buffer", "b"), ("buffer", "b"), ("module", "child"), ("module", "child")]
    np.testing.assert_array_equal(model.w.detach().numpy(), [0.0, 0.0])
    model.q = nn.Parameter(ag.ones(1))
    assert len(seen) == 5  # removed


def test_named_modules_memo_holds_modules_and_non_persistent_names_have_pytorchs_attribute():
    inner = nn.ReLU()
    model = nn.Sequential(inner, nn.Tanh())
    assert [name for name, _ in model.named_modules(memo={inner})] == ["", "1"]
    model.register_buffer("mask", ag.ones(1), persistent=False)
    assert model._non_persistent_buffers_set == {"mask"} and "mask" not in model.state_dict()
    state = model.__getstate__()
    state["_non_persistent_buffers"] = state.pop("_non_persistent_buffers_set")  # an older actorgrad pickle
    restored = nn.Sequential.__new__(nn.Sequential)
    restored.__setstate__(state)
    assert restored._non_persistent_buffers_set == {"mask"} and "mask" not in restored.state_dict()


def test_the_state_dict_hook_registries_have_pytorchs_names_from_the_start():
    model = nn.Linear(1, 1)
    for name in ("_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                 "_load_state_dict_post_hooks"):
        assert getattr(model, name) == OrderedDict(), name
    handle = model.register_state_dict_post_hook(lambda module, state, prefix, metadata: None)
    assert list(model._state_dict_hooks) == [handle.id]


class _FrozenNorm(nn.Module):
    """A block that keeps its BatchNorm in eval mode and adds an entry to its state dict, by overriding
    `train` and `state_dict`, as models that freeze statistics do."""

    def __init__(self):
        super().__init__()
        self.norm = nn.BatchNorm1d(2)
        self.linear = nn.Linear(2, 2)

    def train(self, mode=True):
        super().train(mode)
        self.norm.eval()
        return self

    def state_dict(self, *args, **kwargs):
        state = super().state_dict(*args, **kwargs)
        state[kwargs.get("prefix", "") + "note"] = ag.tensor(1.0)
        return state


def test_a_parent_calls_its_childrens_own_train_and_state_dict():
    model = nn.Sequential(_FrozenNorm(), nn.Dropout())
    model.eval()
    model.train()
    assert [(name, module.training) for name, module in model.named_modules()] == [
        ("", True), ("0", True), ("0.norm", False), ("0.linear", True), ("1", True)]
    keys = list(model.state_dict())
    assert keys[-2:] == ["0.linear.bias", "0.note"] and "0.norm.running_mean" in keys


@pytest.mark.gpu
def test_a_move_keeps_the_gradient_object_on_the_device(cupy):
    model = nn.Linear(2, 2)
    model(ag.ones(1, 2)).sum().backward()
    grad = model.weight.grad
    expected = grad.numpy().copy()
    model.cuda()
    assert model.weight.grad is grad and grad.device.type == "cuda" and model.weight.device.type == "cuda"
    np.testing.assert_array_equal(grad.cpu().numpy(), expected)
    model.cpu()
    assert model.weight.grad is grad and grad.device.type == "cpu"
