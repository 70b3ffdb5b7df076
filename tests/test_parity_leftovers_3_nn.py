"""PyTorch's remaining nn pieces: CrossMapLRN2d (values by Lua Torch's running sum, gradients against finite
differences), the deprecated NLLLoss2d and Container, and Module's set_submodule, share_memory, to_empty, compile,
extra state, the four state-dict hooks and the refused moves."""

import warnings

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(11)


def _running_sum_lrn(x, size, alpha, beta, k):
    """Lua Torch's CrossMapLRN forward: the first channel's sum over the first (size - 1) // 2 + 1 squares, each
    next one adding the square entering the window and, past the first `reach` channels, dropping the one
    `reach` behind (which never drops channel 0)."""
    squares = x * x
    channels = x.shape[1]
    reach = (size - 1) // 2 + 1
    scale = np.zeros_like(x)
    scale[:, 0] = squares[:, :min(reach, channels)].sum(axis=1)
    for c in range(1, channels):
        scale[:, c] = scale[:, c - 1]
        if c < channels - reach + 1:
            scale[:, c] += squares[:, c + reach - 1]
        if c > reach:
            scale[:, c] -= squares[:, c - reach]
    return x * (k + alpha / size * scale) ** -beta


@pytest.mark.parametrize("size, channels", [(1, 4), (2, 5), (3, 6), (4, 3), (5, 9)])
def test_cross_map_lrn2d_matches_the_running_sum_and_finite_differences(size, channels):
    values = RNG.normal(size=(2, channels, 2, 3))
    m = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.6, k=1.2)
    np.testing.assert_allclose(m(ag.tensor(values)).numpy(), _running_sum_lrn(values, size, 0.5, 0.6, 1.2),
                               rtol=1e-12)
    x = ag.tensor(values, requires_grad=True)
    assert gradcheck(m, (x,)) and gradgradcheck(m, (x,))


def test_cross_map_lrn2d_repr_defaults_and_rank_error():
    m = nn.CrossMapLRN2d(5)
    assert (m.size, m.alpha, m.beta, m.k) == (5, 1e-4, 0.75, 1)
    assert repr(nn.CrossMapLRN2d(3, alpha=0.3, beta=0.7, k=1.5)) == "CrossMapLRN2d(3, alpha=0.3, beta=0.7, k=1.5)"
    with pytest.raises(ValueError, match="^CrossMapLRN2d: Expected input to be 4D, got 3D instead.$"):
        m(ag.ones(2, 3, 4))


def test_nllloss2d_and_container_warn_as_deprecated_and_work():
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead"):
        loss = nn.NLLLoss2d(ignore_index=1)
    assert isinstance(loss, nn.NLLLoss) and loss.ignore_index == 1
    logp = ag.tensor(RNG.normal(size=(2, 3, 2, 2))).log_softmax(1)
    target = ag.tensor([[[0, 1], [2, 0]], [[1, 2], [0, 0]]])
    assert loss(logp, target).item() == nn.NLLLoss(ignore_index=1)(logp, target).item()
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        c = nn.Container(a=nn.Linear(2, 2), b=nn.ReLU())
    assert list(c._modules) == ["a", "b"] and len(list(c.parameters())) == 2


def test_set_submodule_replaces_or_adds_under_an_existing_parent():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    m.set_submodule("1.0", nn.Tanh())
    m.set_submodule("1.x", nn.Sigmoid())
    assert isinstance(m[1][0], nn.Tanh) and isinstance(m[1].x, nn.Sigmoid)
    m.set_submodule("1.0", nn.ReLU(), strict=True)
    assert isinstance(m[1][0], nn.ReLU)
    with pytest.raises(AttributeError, match="^Sequential has no attribute `7`$"):
        m.set_submodule("1.7", nn.Tanh(), strict=True)
    with pytest.raises(AttributeError, match="^Sequential has no attribute `3`$"):
        m.set_submodule("3.0", nn.Tanh())
    with pytest.raises(AttributeError, match="^`weight` is not an nn.Module$"):
        m.set_submodule("0.weight", nn.Tanh())
    with pytest.raises(ValueError, match="^Cannot set the submodule without a target name!$"):
        m.set_submodule("", nn.Tanh())
    with pytest.raises(ValueError, match="^`module` is not an nn.Module, found <class 'int'>$"):
        m.set_submodule("1.0", 3)


def test_to_empty_keeps_shapes_dtypes_and_parameter_objects():
    m = nn.Linear(3, 2).double()
    weight = m.weight
    m(ag.ones(1, 3, dtype=ag.float64)).sum().backward()
    assert m.to_empty(device="cpu") is m
    assert m.weight is weight and weight.shape == (2, 3) and weight.dtype == ag.float64 and weight.requires_grad
    assert weight.grad.shape == (2, 3) and weight.device == ag.device("cpu")
    moved = nn.Linear(2, 2).to_empty(device="async_cpu:0")
    assert moved.weight.device == ag.device("async_cpu:0") and moved.bias.device == ag.device("async_cpu:0")


def test_share_memory_compile_and_the_refused_moves():
    m = nn.Linear(2, 2)
    assert m.share_memory() is m and m.compile(mode="max-autotune") is None
    x = ag.ones(1, 2)
    np.testing.assert_array_equal(m(x).detach().numpy(), (x @ m.weight.t() + m.bias).detach().numpy())
    assert nn.Module.call_super_init is False and nn.Module.dump_patches is False
    for move in ("xpu", "ipu", "mtia"):
        with pytest.raises(RuntimeError, match=move.upper() if move != "ipu" else "ipu devices"):
            getattr(m, move)()
    with pytest.raises(TypeError, match="no bfloat16 dtype"):
        m.bfloat16()


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.count = 0

    def get_extra_state(self):
        return {"count": self.count}

    def set_extra_state(self, state):
        self.count = state["count"]


def test_extra_state_is_saved_and_loaded_under_extra_state_keys():
    outer = nn.Sequential(Counter())
    outer[0].count = 7
    sd = outer.state_dict()
    assert list(sd) == ["0._extra_state", "0.lin.weight", "0.lin.bias"] and sd["0._extra_state"] == {"count": 7}
    fresh = nn.Sequential(Counter())
    fresh.load_state_dict(sd)
    assert fresh[0].count == 7
    del sd["0._extra_state"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "0._extra_state"'):
        fresh.load_state_dict(sd)
    with pytest.raises(RuntimeError, match="get_extra_state\\(\\) that should never be called"):
        nn.Linear(1, 1).get_extra_state()


def test_state_dict_hooks_run_in_pytorchs_order_and_may_edit_the_dict():
    m = nn.Sequential(nn.Linear(2, 2))
    calls = []
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(("pre", prefix, keep_vars)))
    m[0].register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(("child pre", prefix)))

    def post(mod, sd, prefix, local_metadata):
        calls.append(("post", sorted(sd), local_metadata["version"]))
        sd["note"] = ag.tensor(1.0)

    handle = m.register_state_dict_post_hook(post)
    sd = m.state_dict()
    assert calls == [("pre", "", False), ("child pre", "0."), ("post", ["0.bias", "0.weight"], 1)]
    assert "note" in sd
    handle.remove()
    assert "note" not in m.state_dict()
    m.register_state_dict_post_hook(lambda *args: 1)
    with pytest.raises(RuntimeError, match="^state_dict post-hook must return None$"):
        m.state_dict()


def test_load_state_dict_pre_hook_renames_keys_and_reports_errors():
    m = nn.Linear(2, 2)
    old = {"w": ag.ones(2, 2), "b": ag.zeros(2)}

    def rename(mod, sd, prefix, local_metadata, strict, missing, unexpected, errors):
        sd[prefix + "weight"], sd[prefix + "bias"] = sd.pop(prefix + "w"), sd.pop(prefix + "b")

    m.register_load_state_dict_pre_hook(rename)
    m.load_state_dict(old)
    assert m.weight.tolist() == [[1.0, 1.0], [1.0, 1.0]] and set(old) == {"w", "b"}  # the caller's dict kept
    other = nn.Linear(2, 2)
    weight = other.weight.detach().numpy().copy()
    other.register_load_state_dict_pre_hook(lambda mod, sd, *rest: rest[-1].append("refused by hook"))
    with pytest.raises(RuntimeError, match="refused by hook"):
        other.load_state_dict(nn.Linear(2, 2).state_dict())
    np.testing.assert_array_equal(other.weight.detach().numpy(), weight)  # nothing loaded


def test_load_state_dict_post_hook_sees_the_loaded_values_and_can_clear_strict_errors():
    m = nn.Sequential(nn.Linear(2, 2))
    seen = []

    def forgive(mod, keys):
        seen.append((mod[0].weight.tolist(), list(keys.unexpected_keys)))
        keys.unexpected_keys.clear()

    m.register_load_state_dict_post_hook(forgive)
    sd = {"0.weight": ag.zeros(2, 2), "0.bias": ag.zeros(2), "stray": ag.ones(1)}
    result = m.load_state_dict(sd)
    assert seen == [([[0.0, 0.0], [0.0, 0.0]], ["stray"])] and result.unexpected_keys == []
    m.register_load_state_dict_post_hook(lambda mod, keys: 1)
    with pytest.raises(AssertionError, match="not expected to return new values"):
        m.load_state_dict(sd)


def test_a_module_has_every_public_method_of_pytorchs():
    wanted = ("set_submodule", "share_memory", "to_empty", "compile", "get_extra_state", "set_extra_state",
              "register_state_dict_pre_hook", "register_state_dict_post_hook", "register_load_state_dict_pre_hook",
              "register_load_state_dict_post_hook", "ipu", "xpu", "mtia", "bfloat16", "call_super_init",
              "dump_patches")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert all(hasattr(nn.Module, name) for name in wanted)
