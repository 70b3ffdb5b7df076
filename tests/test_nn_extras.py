"""torch.nn / torch.optim extras: gradient clipping, parameter vectors, learning-rate schedulers, the containers,
the loss, activation, shape, batch-norm and pooling modules.

Expected numbers are computed independently in the tests (numpy, closed forms, PyTorch's documented rules
written out); reprs and error texts are PyTorch's with `torch` read as `actorgrad`.
"""

import math
import re
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn, optim
from actorgrad.nn import functional as F
from actorgrad.nn.utils import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters
from actorgrad.optim import lr_scheduler as L


def with_grad(values, grad):
    p = nn.Parameter(ag.tensor(values))
    p.grad = ag.tensor(grad)
    return p


def grads(params):
    return [p.grad.numpy().tolist() for p in params]


# -- clip_grad_norm_ / clip_grad_value_ ----------------------------------------------------------------------------
def test_clip_grad_norm_scales_every_gradient_by_max_norm_over_the_joint_norm():
    params = [with_grad([0.0, 0.0], [3.0, 4.0]), with_grad([[0.0, 0.0]], [[12.0, 0.0]])]
    total = clip_grad_norm_(params, 1.0)
    assert total.item() == 13.0 and total.dtype == ag.float32 and total.shape == ()
    coef = np.float32(1.0) / (np.float32(13.0) + np.float32(1e-6))
    np.testing.assert_array_equal(params[0].grad.numpy(), np.float32([3.0, 4.0]) * coef)
    np.testing.assert_array_equal(params[1].grad.numpy(), np.float32([[12.0, 0.0]]) * coef)


@pytest.mark.parametrize(("norm_type", "total"), [
    ("inf", 12.0),  # PyTorch's: norm_type may be the string 'inf'
    (math.inf, 12.0),
    (1, 19.0),
])
def test_clip_grad_norm_of_other_orders(norm_type, total):
    params = [with_grad([0.0, 0.0], [3.0, 4.0]), with_grad([0.0, 0.0], [12.0, 0.0])]
    assert clip_grad_norm_(params, 5.0, norm_type=norm_type).item() == total
    expected = np.array([[3.0, 4.0], [12.0, 0.0]]) * 5.0 / (total + 1e-6)  # scaled by max_norm / (total + 1e-6)
    np.testing.assert_allclose(grads(params), expected, rtol=1e-6)


def test_clip_grad_norm_leaves_small_gradients_and_skips_parameters_without_one():
    small, none = with_grad([0.0, 0.0], [0.3, -0.4]), nn.Parameter(ag.zeros(2))
    total = clip_grad_norm_(iter([small, none]), 1.0)
    np.testing.assert_allclose(total.item(), 0.5, rtol=1e-6)
    assert small.grad.numpy().tolist() == np.float32([0.3, -0.4]).tolist() and none.grad is None


def test_clip_grad_norm_of_one_tensor_keeps_its_dtype_and_records_no_graph():
    p = nn.Parameter(ag.zeros(2, dtype=ag.float64))
    p.grad = ag.tensor([6.0, 8.0], dtype=ag.float64, requires_grad=True)
    total = clip_grad_norm_(p, 2.0)
    assert total.dtype == ag.float64 and total.item() == 10.0 and not total.requires_grad
    np.testing.assert_allclose(p.grad.detach().numpy(), [6.0 * 2 / (10 + 1e-6), 8.0 * 2 / (10 + 1e-6)], rtol=1e-15)


def test_clip_grad_norm_non_finite():
    p = with_grad([0.0, 0.0], [3.0, math.inf])
    with pytest.raises(RuntimeError, match=r"^The total norm of order 2.0 for gradients from `parameters` is non-fini"
                                           r"te, so it cannot be clipped. To disable this error and scale the gradie"
                                           r"nts by the non-finite norm anyway, set `error_if_nonfinite=False`$"):
        clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert p.grad.numpy().tolist() == [3.0, math.inf]  # refused before any change
    with np.errstate(invalid="ignore"):  # inf * 0, as PyTorch computes it
        assert clip_grad_norm_([p], 1.0, foreach=True).item() == math.inf
    assert p.grad.numpy()[0] == 0.0 and math.isnan(p.grad.numpy()[1])


def test_clip_grad_norm_without_gradients_returns_zero_and_warns_for_an_empty_generator():
    assert clip_grad_norm_([nn.Parameter(ag.zeros(1))], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient clipping will occur."):
        total = clip_grad_norm_((p for p in []), 1.0)
    assert total.item() == 0.0 and total.dtype == ag.float32


def test_clip_grad_value_clamps_each_element():
    a, b = with_grad([0.0, 0.0, 0.0], [3.0, -4.0, 0.5]), nn.Parameter(ag.zeros(1))
    clip_grad_value_([a, b], 3.5)
    assert a.grad.numpy().tolist() == [3.0, -3.5, 0.5] and b.grad is None
    clip_grad_value_(a, 1)
    assert a.grad.numpy().tolist() == [1.0, -1.0, 0.5]


def test_parameters_to_vector_and_back():
    a, b = nn.Parameter(ag.tensor([1.0, 2.0])), nn.Parameter(ag.tensor([[3.0], [4.0]]))
    vec = parameters_to_vector([a, b])
    assert vec.requires_grad and vec.detach().numpy().tolist() == [1.0, 2.0, 3.0, 4.0]
    (vec * ag.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()  # differentiable, as PyTorch's
    assert a.grad.numpy().tolist() == [1.0, 2.0] and b.grad.numpy().tolist() == [[3.0], [4.0]]
    vector_to_parameters(ag.tensor([9.0, 8.0, 7.0, 6.0]), [a, b])
    assert a.detach().numpy().tolist() == [9.0, 8.0] and b.detach().numpy().tolist() == [[7.0], [6.0]]
    assert a.requires_grad and isinstance(a, nn.Parameter)
    with pytest.raises(TypeError, match=r"^expected actorgrad.Tensor, but got: list$"):
        vector_to_parameters([1.0], [a])


# -- lr_scheduler ------------------------------------------------------------------------------------------------------
# Group 1's lr (starting at 0.05) after each of 20 steps (group 0 starts at 0.1): each schedule's closed form, and
# PyTorch's chained (recursive) rules, written out here, which its schedulers must match bit for bit.
MILESTONES = [2, 5, 5, 9]
CLOSED_FORMS = {
    "step": lambda k: 0.05 * 0.5 ** (k // 3),
    "multi": lambda k: 0.05 * 0.3 ** sum(m <= k for m in MILESTONES),  # a repeated milestone counts twice
    "exp": lambda k: 0.05 * 0.9 ** k,
    "cos": lambda k: 0.01 + (0.05 - 0.01) * (1 + math.cos(math.pi * k / 7)) / 2,
    "lambda": lambda k: 0.05 / (k + 1),
    "linear": lambda k: 0.05 * (0.25 + (0.9 - 0.25) * min(k, 6) / 6),
}


def chained_step(name: str, lr: float, k: int) -> float:
    """PyTorch's recursive rule for step k >= 1: the new lr from the last one."""
    if name == "step":
        return lr * 0.5 if k % 3 == 0 else lr
    if name == "multi":
        return lr * 0.3 ** MILESTONES.count(k)
    if name == "exp":
        return lr * 0.9
    if name == "lambda":  # not chained: the base lr times the factor
        return 0.05 * (1 / (k + 1))
    if name == "linear":
        return lr if k > 6 else lr * (1 + (0.9 - 0.25) / (6 * 0.25 + (k - 1) * (0.9 - 0.25)))
    if (k - 1 - 7) % 14 == 0:  # cos, at the bottom of a period
        return lr + (0.05 - 0.01) * (1 - math.cos(math.pi / 7)) / 2
    return (1 + math.cos(math.pi * k / 7)) / (1 + math.cos(math.pi * (k - 1) / 7)) * (lr - 0.01) + 0.01


def chained(name: str) -> list[float]:
    lrs = [0.05 * 0.25 if name == "linear" else 0.05]
    for k in range(1, 21):
        lrs.append(chained_step(name, lrs[-1], k))
    return lrs


PLATEAU_METRICS = [5, 4, 4, 4, 4, 4, 3, 3.9999, 3.5, *[3.5] * 11]
SCHEDULERS = {
    "step": lambda o: L.StepLR(o, 3, 0.5),
    "multi": lambda o: L.MultiStepLR(o, [2, 5, 5, 9], 0.3),
    "exp": lambda o: L.ExponentialLR(o, 0.9),
    "cos": lambda o: L.CosineAnnealingLR(o, 7, 0.01),
    "lambda": lambda o: L.LambdaLR(o, lambda e: 1 / (e + 1)),
    "linear": lambda o: L.LinearLR(o, 0.25, 0.9, 6),
    "plateau": lambda o: L.ReduceLROnPlateau(o, patience=2, factor=0.5, cooldown=1, min_lr=0.004),
}


def two_groups(lr=0.1):
    return optim.SGD([{"params": [nn.Parameter(ag.zeros(2))]}, {"params": [nn.Parameter(ag.zeros(2))], "lr": 0.05}],
                     lr=lr)


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_schedule_matches_pytorch_over_20_steps(name):
    opt = two_groups()
    scheduler = SCHEDULERS[name](opt)
    seen = [scheduler.get_last_lr()[1]]
    for i in range(20):
        opt.step()
        scheduler.step(PLATEAU_METRICS[i]) if name == "plateau" else scheduler.step()
        seen.append(scheduler.get_last_lr()[1])
        assert [g["lr"] for g in opt.param_groups] == scheduler.get_last_lr()
    if name == "plateau":  # halved after 3 bad epochs (patience 2), then a cooldown epoch, down to min_lr
        assert seen == [0.05] * 5 + [0.025] * 5 + [0.0125] * 4 + [0.00625] * 4 + [0.004] * 3
        return
    np.testing.assert_allclose(seen, [CLOSED_FORMS[name](k) for k in range(21)], rtol=1e-13)
    assert seen == chained(name)  # bit for bit: the chained rules are PyTorch's


def test_scheduler_records_initial_lr_and_counts_epochs():
    opt = two_groups()
    scheduler = L.StepLR(opt, 2)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05] == scheduler.base_lrs
    assert scheduler.last_epoch == 0 and scheduler._step_count == 1
    opt.step()
    scheduler.step()
    assert scheduler.last_epoch == 1
    assert list(scheduler.state_dict()) == [
        "step_size", "gamma", "base_lrs", "last_epoch", "_step_count", "_is_initial", "_get_lr_called_within_step",
        "_last_lr",
    ]
    assert "initial_lr" in opt.state_dict()["param_groups"][0]


def test_scheduler_resumes_from_its_and_the_optimizers_state():
    opt = two_groups(1.0)
    scheduler = L.StepLR(opt, 2, 0.5)
    for _ in range(3):
        opt.step()
        scheduler.step()
    saved, saved_opt = scheduler.state_dict(), opt.state_dict()
    resumed_opt = two_groups(1.0)
    resumed_opt.load_state_dict(saved_opt)
    resumed = L.StepLR(resumed_opt, 2, 0.5, last_epoch=2)
    resumed.load_state_dict(saved)
    assert resumed.last_epoch == 3 and resumed.get_last_lr() == [0.5, 0.025]
    resumed_opt.step()
    resumed.step()
    assert resumed.get_last_lr() == [0.25, 0.0125]
    with pytest.raises(KeyError) as error:
        L.StepLR(two_groups(), 2, last_epoch=3)
    assert error.value.args[0].startswith(
        "param 'initial_lr' is not specified in param_groups[0] when resuming scheduler with last_epoch >= 0.\n"
        "This typically happens when:\n1. You're trying to resume training from a checkpoint but haven't properly "
        "loaded the optimizer state\n2. You're using"
    )


def test_scheduler_warns_when_stepped_before_the_optimizer():
    opt = two_groups()
    scheduler = L.ExponentialLR(opt, 0.5)
    with pytest.warns(UserWarning, match=r"^Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        scheduler.step()
    opt = two_groups()
    scheduler = L.ExponentialLR(opt, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        scheduler.step()
    assert opt._opt_called and opt.step._wrapped_by_lr_sched
    with pytest.warns(UserWarning, match=r"^To get the last learning rate computed by the scheduler, please use "
                                         r"`get_last_lr\(\)`.$"):
        assert scheduler.get_lr() == [0.025, 0.0125]


@pytest.mark.parametrize(("make", "epoch", "expected"), [
    (lambda o: L.StepLR(o, 3, 0.5), 7, 0.25),
    (lambda o: L.MultiStepLR(o, [2, 4, 4]), 4, 0.1 ** 3),
    (lambda o: L.ExponentialLR(o, 0.5), 3, 0.125),
    (lambda o: L.CosineAnnealingLR(o, 10), 5, 0.5),
    (lambda o: L.LinearLR(o, 0.5, 1.0, 4), 2, 0.75),
])
def test_step_with_an_epoch_uses_the_closed_form_and_warns(make, epoch, expected):
    opt = optim.SGD([nn.Parameter(ag.zeros(1))], lr=1.0)
    scheduler = make(opt)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        scheduler.step(epoch)
    assert scheduler.get_last_lr() == [expected] and scheduler.last_epoch == epoch


def test_scheduler_argument_errors():
    opt = two_groups()
    with pytest.raises(TypeError, match=r"^int is not an Optimizer$"):
        L.StepLR(3, 2)
    with pytest.raises(ValueError, match=r"^Expected 2 lr_lambdas, but got 1$"):
        L.LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(ValueError, match=r"^Starting multiplicative factor expected to be greater than 0 and less "
                                         r"or equal to 1.$"):
        L.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match=r"^Ending multiplicative factor expected to be between 0 and 1.$"):
        L.LinearLR(opt, end_factor=1.5)
    for kwargs, error, text in [
        ({"mode": "bad"}, ValueError, "mode bad is unknown!"),
        ({"threshold_mode": "x"}, ValueError, "threshold mode x is unknown!"),
        ({"factor": 1.0}, ValueError, "Factor should be < 1.0."),
        ({"min_lr": [1.0]}, ValueError, "expected 2 min_lrs, got 1"),
    ]:
        with pytest.raises(error, match=f"^{text}$"):
            L.ReduceLROnPlateau(opt, **kwargs)


def test_lambda_lr_saves_the_state_of_callable_objects_only():
    class Halving:
        def __init__(self):
            self.calls = 0

        def __call__(self, epoch):
            self.calls += 1
            return 0.5**epoch

    opt = two_groups()
    halving = Halving()
    scheduler = L.LambdaLR(opt, [halving, lambda e: 1.0])
    state = scheduler.state_dict()
    assert list(state)[-1] == "lr_lambdas" and state["lr_lambdas"] == [{"calls": 1}, None]
    halving.calls = 7
    scheduler.load_state_dict(state)
    assert halving.calls == 1 and "lr_lambdas" in state


def test_reduce_lr_on_plateau_max_mode_with_an_absolute_threshold():
    opt = optim.SGD([nn.Parameter(ag.zeros(1))], lr=1.0)
    scheduler = L.ReduceLROnPlateau(opt, mode="max", threshold_mode="abs", threshold=0.5, patience=0)
    seen = []
    for metric in [1, 1.4, 2, 2.2]:
        scheduler.step(ag.tensor(metric))
        seen.append((scheduler.get_last_lr()[0], scheduler.best))
    assert seen == [(1.0, 1.0), (0.1, 1.0), (0.1, 2.0), (0.1 * 0.1, 2.0)]
    restored = L.ReduceLROnPlateau(opt)
    restored.load_state_dict(scheduler.state_dict())
    assert restored.mode == "max" and restored.mode_worse == -math.inf and restored.last_epoch == 4


# -- containers ----------------------------------------------------------------------------------------------------
def test_sequential_indexing_insertion_and_deletion():
    relu, tanh, gelu = nn.ReLU(), nn.Tanh(), nn.GELU()
    s = nn.Sequential(relu, tanh, gelu)
    assert s[-1] is gelu and s[-3] is relu
    for bad in (3, -4):
        with pytest.raises(IndexError, match=f"^index {bad} is out of range$"):
            s[bad]
    with pytest.raises(TypeError, match=r"^'str' object cannot be interpreted as an integer$"):
        s["a"]
    with pytest.raises(TypeError, match=r"^cannot assign 'int' as child module '0' \(.*Module or None expected\)$"):
        s[0] = 3
    tail = s[1:]
    assert type(tail) is nn.Sequential and list(tail._modules) == ["1", "2"]  # a slice keeps the names
    assert s.pop(1) is tanh and list(s._modules.items()) == [("0", relu), ("1", gelu)]  # renumbered
    s.insert(1, tanh).insert(-1, relu)
    assert list(s) == [relu, tanh, relu, gelu]
    with pytest.raises(IndexError, match=r"^Index out of range: 5$"):
        s.insert(5, tanh)
    with pytest.raises(AssertionError, match=r"^module should be of type: <class 'actorgrad.nn.module.Module'>$"):
        s.insert(0, 3)
    del s[1:3]
    assert list(s._modules.items()) == [("0", relu), ("1", gelu)]
    s.extend([tanh]).append(relu)
    del s[0]
    assert list(s._modules.items()) == [("0", gelu), ("1", tanh), ("2", relu)]


def test_sequential_addition_and_ordered_dict():
    named = nn.Sequential(OrderedDict(a=nn.ReLU(), b=nn.Tanh()))
    assert list(named._modules) == ["a", "b"]
    both = named + named
    assert list(both._modules) == ["0", "1", "2", "3"] and both[2] is named[0]
    with pytest.raises(ValueError, match=r"^add operator supports only objects of Sequential class, but <class "
                                         r"'actorgrad.nn.activation.ReLU'> is given.$"):
        named + nn.ReLU()
    named += nn.Sequential(nn.GELU())
    assert list(named._modules) == ["a", "b", "2"]
    del named[0]
    assert list(named._modules) == ["0", "1"]
    x = ag.tensor([-1.0, 2.0])
    assert (nn.Sequential(nn.ReLU(), nn.Sigmoid())(x)).numpy().tolist() == [0.5, F.sigmoid(ag.tensor(2.0)).item()]


def test_module_list():
    blocks = nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh(), nn.Tanh(), nn.Tanh(), nn.Sequential(nn.ReLU())])
    assert repr(blocks) == (
        "ModuleList(\n  (0-1): 2 x ReLU()\n  (2-4): 3 x Tanh()\n  (5): Sequential(\n    (0): ReLU()\n  )\n)"
    )
    assert repr(nn.ModuleList()) == "ModuleList()"
    assert type(blocks[1:3]) is nn.ModuleList and len(blocks[1:3]) == 2 and blocks[-1] is blocks[5]
    with pytest.raises(IndexError, match=r"^index 6 is out of range$"):
        blocks[6]
    first = blocks[0]
    assert blocks.pop(0) is first and len(blocks) == 5
    del blocks[::2]
    assert list(blocks._modules) == ["0", "1"]
    blocks.insert(1, nn.GELU())
    assert [type(m).__name__ for m in blocks + [nn.ReLU()]] == ["Tanh", "GELU", "Tanh", "ReLU"]
    with pytest.raises(TypeError, match=r"^ModuleList.extend should be called with an iterable, but got int$"):
        nn.ModuleList(3)
    with pytest.raises(TypeError, match=r"^int is not a Module subclass$"):
        nn.ModuleList([3])


def test_module_dict():
    heads = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
    assert list(heads) == ["b", "a"] and "a" in heads and len(heads) == 2  # insertion order
    heads.update([("c", nn.GELU())])
    assert list(heads.keys()) == ["b", "a", "c"] and isinstance(heads.pop("b"), nn.ReLU)
    assert repr(heads) == "ModuleDict(\n  (a): Tanh()\n  (c): GELU(approximate='none')\n)"
    for arg, error, text in [
        ({"a": 3}, TypeError, "int is not a Module subclass"),
        ([1], TypeError, "ModuleDict update sequence element #0 should be Iterable; isint"),
        ([(1, 2, 3)], ValueError, "ModuleDict update sequence element #0 has length 3; 2 is required"),
        (3, TypeError, "ModuleDict.update should be called with an iterable of key/value pairs, but got int"),
    ]:
        with pytest.raises(error, match=f"^{text}$"):
            nn.ModuleDict(arg)
    with pytest.raises(KeyError):
        heads["x"]


def test_parameter_list_and_dict():
    values = nn.ParameterList([nn.Parameter(ag.zeros(2, 3)), ag.zeros(2, dtype=ag.float64), "x"])
    assert [type(p).__name__ for p in values] == ["Parameter", "Parameter", "str"] and values[1].requires_grad
    assert list(values.state_dict()) == ["0", "1"]
    assert repr(values) == (
        "ParameterList(\n    (0): Parameter containing: [actorgrad.float32 of size 2x3]\n"
        "    (1): Parameter containing: [actorgrad.float64 of size 2]\n    (2): Object of type: str\n)"
    )
    assert repr(nn.ParameterList([ag.zeros(1)])) == "ParameterList(  (0): Parameter containing: [actorgrad.float32 " \
                                                    "of size 1])"
    assert len(values[0:2]) == 2
    with pytest.raises(IndexError, match=r"^index 3 is out of range$"):
        values[3]
    with pytest.raises(RuntimeError, match=r"^ParameterList should not be called.$"):
        values(1)
    with pytest.raises(TypeError, match=r"^ParameterList.extend should be called with an iterable, but got Tensor$"):
        nn.ParameterList(ag.zeros(2))
    named = nn.ParameterDict({"b": ag.zeros(2, 3), "a": nn.Parameter(ag.zeros(1))})
    assert list(named) == ["a", "b"] == list(named.state_dict())  # a plain dict is taken in sorted order
    assert repr(named) == (
        "ParameterDict(\n    (a): Parameter containing: [actorgrad.FloatTensor of size 1]\n"
        "    (b): Parameter containing: [actorgrad.FloatTensor of size 2x3]\n)"
    )
    with pytest.raises(TypeError, match=r"^Index given to ParameterDict cannot be used as a key as it is not a string "
                                        r"\(type is 'int'\). Open an issue on github if you need non-string keys.$"):
        named[1]
    with pytest.raises(AttributeError, match=r"^'ParameterDict' object has no attribute 'zz'$"):
        named["zz"]
    merged = named | nn.ParameterDict(OrderedDict(z=ag.ones(1), c=ag.ones(2)))
    assert list(merged) == ["a", "b", "z", "c"] and merged.popitem()[0] == "c" and merged.get("q", 5) == 5


def test_containers_register_their_contents_by_dotted_names():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 1)])
            self.heads = nn.ModuleDict({"x": nn.Linear(1, 1)})
            self.extra = nn.ParameterList([ag.zeros(3)])
            self.named = nn.ParameterDict({"s": ag.ones(1)})

    net = Net()
    assert list(net.state_dict()) == [
        "blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias", "heads.x.weight", "heads.x.bias",
        "extra.0", "named.s",
    ]
    assert len(list(net.parameters())) == 8


# -- losses --------------------------------------------------------------------------------------------------------
X = [[0.5, -1.0, 2.0], [0.1, 0.2, -0.3]]


def test_loss_modules_pass_their_options_on():
    x, t = ag.tensor(X, dtype=ag.float64), ag.tensor([2, 0])
    ce = nn.CrossEntropyLoss(weight=ag.tensor([1.0, 2.0, 0.5], dtype=ag.float64), label_smoothing=0.1)
    assert repr(ce) == "CrossEntropyLoss()" and list(ce.state_dict()) == ["weight"] and ce.ignore_index == -100
    weights, logp = np.array([1.0, 2.0, 0.5]), np.array(X) - np.log(np.exp(X).sum(1, keepdims=True))
    nll = -logp[[0, 1], [2, 0]] * weights[[2, 0]]  # smoothing 0.1 over 3 classes, both parts over the weights' sum
    smoothed = (0.9 * nll.sum() - 0.1 * (logp * weights).sum() / 3) / weights[[2, 0]].sum()
    np.testing.assert_allclose(ce(x, t).item(), smoothed, rtol=1e-12)
    assert nn.NLLLoss(reduction="sum")(x, t).item() == -2.1
    bce = nn.BCEWithLogitsLoss(pos_weight=ag.tensor([2.0, 1.0, 0.5], dtype=ag.float64))
    assert list(bce.state_dict()) == ["pos_weight"]
    positive, log_sigmoid = np.array(X) > 0, lambda v: -np.logaddexp(0, -v)  # noqa: E731
    want = -np.where(positive, [2.0, 1.0, 0.5] * log_sigmoid(np.array(X)), log_sigmoid(-np.array(X))).mean()
    np.testing.assert_allclose(bce(x, (x > 0).double()).item(), want, rtol=1e-12)
    y = ag.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]], dtype=ag.float64)
    np.testing.assert_allclose(nn.MSELoss()(x, y).numpy(), np.mean((np.array(X) - y.numpy()) ** 2), rtol=1e-15)
    np.testing.assert_allclose(nn.L1Loss(reduction="none")(x, y).numpy(), np.abs(np.array(X) - y.numpy()))


def test_loss_legacy_reduction_arguments():
    with pytest.warns(UserWarning, match=r"^size_average and reduce args will be deprecated, please use "
                                         r"reduction='sum' instead.$"):
        assert nn.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.CrossEntropyLoss(reduce=False).reduction == "none"
    with pytest.raises(ValueError, match=r"^bad is not a valid value for reduction$"):
        nn.L1Loss(reduction="bad")(ag.zeros(2), ag.zeros(2))


# -- activations and shape modules ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("module", "text"), [
    (nn.Identity(3, a=2), "Identity()"),
    (nn.Flatten(), "Flatten(start_dim=1, end_dim=-1)"),
    (nn.Unflatten(1, (2, 3)), "Unflatten(dim=1, unflattened_size=(2, 3))"),
    (nn.Unflatten(-1, [2, 3]), "Unflatten(dim=-1, unflattened_size=[2, 3])"),
    (nn.Sigmoid(), "Sigmoid()"),
    (nn.Softmax(), "Softmax(dim=None)"),
    (nn.LogSoftmax(dim=-1), "LogSoftmax(dim=-1)"),
    (nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)"),
    (nn.LeakyReLU(0.2, True), "LeakyReLU(negative_slope=0.2, inplace=True)"),
    (nn.SiLU(), "SiLU()"),
    (nn.SiLU(True), "SiLU(inplace=True)"),
    (nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"),
    (nn.Softplus(2, 10), "Softplus(beta=2, threshold=10)"),
    (nn.ReLU(), "ReLU()"),
    (nn.ReLU(inplace=True), "ReLU(inplace=True)"),
    (nn.Dropout(0.2, True), "Dropout(p=0.2, inplace=True)"),
])
def test_activation_reprs(module, text):
    assert repr(module) == text


@pytest.mark.parametrize(("module", "expected"), [
    (nn.LeakyReLU(0.2), [-0.4, 3.0]),
    (nn.SiLU(), [-2.0 / (1 + math.exp(2.0)), 3.0 / (1 + math.exp(-3.0))]),
    (nn.Softplus(2, 5), [math.log1p(math.exp(-4.0)) / 2, 3.0]),  # linear where beta x > threshold
    (nn.Sigmoid(), [1 / (1 + math.exp(2.0)), 1 / (1 + math.exp(-3.0))]),
    (nn.ReLU(), [0.0, 3.0]),
    (nn.Identity(), [-2.0, 3.0]),
])
def test_activation_values(module, expected):
    np.testing.assert_allclose(module(ag.tensor([-2.0, 3.0], dtype=ag.float64)).numpy(), expected, rtol=1e-15)


def test_softmax_without_dim_takes_pytorchs_implicit_choice():
    x = ag.tensor([[-2.0, 3.0]], dtype=ag.float64)
    with pytest.warns(UserWarning, match=r"^Implicit dimension choice for log_softmax has been deprecated. Change "
                                         r"the call to include dim=X as an argument.$"):
        out = nn.LogSoftmax()(x)
    # x - logsumexp; the kernel's log(1 + e^-5) rounds 1 + e^-5 first: 2e-14 off log1p's at the small entry
    np.testing.assert_allclose(out.numpy(), [[-5.0, 0.0]] - np.log1p(np.exp(-5.0)), rtol=5e-14)
    with pytest.warns(UserWarning, match="softmax"):
        assert nn.Softmax()(ag.zeros(2, 3, 4)).sum(0).numpy().tolist() == np.ones((3, 4)).tolist()  # dim 0 for 3-D
    np.testing.assert_allclose(nn.Softmax(1)(x).numpy(), np.exp(out.numpy()), rtol=1e-15)


def test_flatten_and_unflatten():
    x = ag.arange(24.0).reshape(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12) and nn.Flatten(0, 1)(x).shape == (6, 4)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"):
        nn.Flatten()(ag.zeros(3))
    y = nn.Unflatten(-1, (-1, 2))(x)
    assert y.shape == (2, 3, 2, 2) and y.numpy().ravel().tolist() == list(range(24))
    with pytest.raises(RuntimeError, match=r"^unflatten: Provided sizes \[5, 2\] don't multiply up to the size of dim "
                                           r"2 \(4\) in the input tensor$"):
        nn.Unflatten(2, (5, 2))(x)
    with pytest.raises(RuntimeError, match=r"^unflatten: sizes must be non-empty$"):
        nn.Unflatten(1, ())(x)
    with pytest.raises(TypeError, match=r"^unflattened_size must be tuple of ints, but found element of type float at "
                                        r"pos 1$"):
        nn.Unflatten(1, (2, 1.5))
    with pytest.raises(TypeError, match=r"^unflattened_size must be a tuple of ints, but found type int$"):
        nn.Unflatten(1, 3)


def test_dropout_module_follows_training_mode():
    drop = nn.Dropout(1.0)
    x = ag.ones(4)
    assert drop(x).numpy().tolist() == [0.0] * 4
    assert drop.eval()(x) is x


# -- batch norm and pooling ----------------------------------------------------------------------------------------
BATCHES = [np.arange(12, dtype=np.float64).reshape(4, 3) ** 1.5 * (i + 1) for i in range(3)]


def running_statistics(momentum):
    """From mean 0 and variance 1, each batch's mean and unbiased variance blended in with the momentum, or with
    1 / (batches so far): a cumulative average, when it is None."""
    mean, var = np.zeros(3), np.ones(3)
    for count, batch in enumerate(BATCHES, 1):
        factor = 1 / count if momentum is None else momentum
        mean = (1 - factor) * mean + factor * batch.mean(0)
        var = (1 - factor) * var + factor * batch.var(0, ddof=1)
    return mean, var


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_running_statistics(momentum):
    mean, var = running_statistics(momentum)
    first_eval_row = (BATCHES[0][0] - mean) / np.sqrt(var + 1e-5)
    bn = nn.BatchNorm1d(3, momentum=momentum).double()
    for batch in BATCHES:
        bn(ag.tensor(batch))
    np.testing.assert_allclose(bn.running_mean.numpy(), mean, rtol=1e-9)
    np.testing.assert_allclose(bn.running_var.numpy(), var, rtol=1e-9)
    assert bn.num_batches_tracked.item() == 3 and bn.num_batches_tracked.dtype == ag.int64
    np.testing.assert_allclose(bn.eval()(ag.tensor(BATCHES[0])).detach().numpy()[0], first_eval_row, rtol=1e-9)
    if momentum is None:
        np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([b.mean(0) for b in BATCHES], axis=0))
    bn.reset_running_stats()
    assert bn.running_mean.numpy().tolist() == [0.0] * 3 and bn.num_batches_tracked.item() == 0


def test_batch_norm_layout_and_modes():
    bn = nn.BatchNorm1d(3)
    assert repr(bn) == "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert bn.weight.detach().numpy().tolist() == [1.0] * 3 and bn.bias.detach().numpy().tolist() == [0.0] * 3
    plain = nn.BatchNorm2d(2, momentum=None, affine=False, track_running_stats=False).double()
    assert repr(plain) == (
        "BatchNorm2d(2, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=False)"
    )
    assert list(plain.state_dict()) == [] and plain.running_mean is None
    x = np.arange(16.0).reshape(2, 2, 2, 2) ** 2
    out = plain.eval()(ag.tensor(x)).numpy()  # no running statistics: the batch's, even in eval
    mean, var = x.mean((0, 2, 3), keepdims=True), x.var((0, 2, 3), keepdims=True)  # the biased variance
    np.testing.assert_allclose(out[0, 0], ((x - mean) / np.sqrt(var + 1e-5))[0, 0], rtol=1e-9)
    assert nn.BatchNorm1d(2, bias=False).bias is None
    three_d = nn.BatchNorm1d(2).double()
    three_d(ag.tensor(np.arange(12.0).reshape(2, 2, 3)))
    np.testing.assert_allclose(three_d.running_var.numpy(), [2.06, 2.06], rtol=1e-12)
    for layer, shape, text in [
        (nn.BatchNorm1d(3), (2,), "expected 2D or 3D input (got 1D input)"),
        (nn.BatchNorm1d(3), (2, 3, 1, 1), "expected 2D or 3D input (got 4D input)"),
        (nn.BatchNorm2d(3), (2, 3, 4), "expected 4D input (got 3D input)"),
        (nn.BatchNorm1d(3), (1, 3), "Expected more than 1 value per channel when training, got input size [1, 3]"),
    ]:
        with pytest.raises(ValueError, match=f"^{re.escape(text)}$"):
            layer(ag.zeros(*shape))


def test_pooling_modules():
    assert repr(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.MaxPool2d((2, 3), 1, 1, 2, True, True)) == (
        "MaxPool2d(kernel_size=(2, 3), stride=1, padding=1, dilation=2, ceil_mode=True)"
    )
    assert repr(nn.AvgPool2d(3, 2, 1, True, False, 4)) == "AvgPool2d(kernel_size=3, stride=2, padding=1)"
    x = ag.arange(16.0).reshape(1, 1, 4, 4)
    assert nn.MaxPool2d(2)(x).numpy().tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
    assert nn.AvgPool2d(2)(x).numpy().tolist() == [[[[2.5, 4.5], [10.5, 12.5]]]]
    out, index = nn.MaxPool2d(2, return_indices=True)(x)
    assert index.numpy().tolist() == [[[[5, 7], [13, 15]]]]


@pytest.mark.parametrize(("module", "expected"), [
    (nn.ReLU(inplace=True), [0.0, 2.0]),
    (nn.LeakyReLU(0.5, inplace=True), [-0.5, 2.0]),
    (nn.Dropout(1.0, inplace=True), [0.0, 0.0]),
    (nn.SiLU(inplace=True), [-1 / (1 + math.e), 2 / (1 + math.exp(-2.0))]),  # float32: to rtol 1e-6
])
def test_inplace_modules_write_into_their_input(module, expected):
    x = ag.tensor([-1.0, 2.0])
    assert module(x) is x
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-6)
