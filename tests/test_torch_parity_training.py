"""Training-loop behaviour that matches PyTorch 2.13: module and optimizer loading, option keywords, state.

Expected values and messages were taken from running torch 2.13 on the same steps.
"""

import pytest

import actorgrad as ag
from actorgrad import nn, optim


def test_module_load_state_dict_bumps_version_so_saved_graphs_refuse_backward():
    m = nn.Linear(2, 2)
    y = (m.weight * m.weight).sum()
    before = m.weight._version
    m.load_state_dict({key: ag.zeros(*value.shape) for key, value in m.state_dict().items()})
    assert m.weight._version == before + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*is at version 2; expected version 1"):
        y.backward()


def test_optimizer_load_state_dict_replaces_group_options():
    p = nn.Parameter(ag.ones(2))
    saved = optim.SGD([p], lr=0.1, momentum=0.9).state_dict()
    del saved["param_groups"][0]["momentum"]
    saved["param_groups"][0]["lr"] = 0.5
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    opt.load_state_dict(saved)
    group = opt.param_groups[0]
    assert "momentum" not in group and group["lr"] == 0.5 and group["params"] == [p]


@pytest.mark.parametrize(
    "make, defaults",
    [
        (optim.SGD, {"foreach": None, "differentiable": False, "fused": None}),
        (optim.Adam, {"foreach": None, "capturable": False, "differentiable": False, "fused": None,
                      "decoupled_weight_decay": False}),
        (optim.AdamW, {"foreach": None, "capturable": False, "differentiable": False, "fused": None,
                       "decoupled_weight_decay": True}),
    ],
)
def test_optimizers_take_torch_option_keywords_and_refuse_what_they_cannot_honour(make, defaults):
    p = nn.Parameter(ag.ones(2))
    opt = make([p], foreach=True, fused=False, differentiable=False)
    assert opt.defaults.items() >= {**defaults, "foreach": True, "fused": False}.items()
    assert opt.param_groups[0]["foreach"] is True
    assert make([p], fused=True).param_groups[0]["fused"] is True  # an implementation choice, as foreach
    for name in ("differentiable",) + (("capturable",) if make is not optim.SGD else ()):
        with pytest.raises(ValueError, match=f"do not support {name}=True"):
            make([p], **{name: True})


def test_sgd_without_momentum_keeps_no_state():
    p = nn.Parameter(ag.ones(2))
    opt = optim.SGD([p], lr=0.1)
    p.grad = ag.ones(2)
    opt.step()
    assert opt.state_dict()["state"] == {} and len(opt.state) == 0
