"""RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam and the remaining lr schedulers, against PyTorch 2.13.

The optimizers run 8 float64 steps on the quadratic below, its gradient made in numpy, and are checked against
plain-numpy versions of PyTorch's single-tensor updates written out below in its order of operations. They agree to
2 ulps (all but one case to the bit; RAdam's longer product chain may round differently once). The schedules are
plain Python floats, checked bit for bit against PyTorch's scheduling rules, also written out below.
"""

import math
import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn, optim
from actorgrad.optim import lr_scheduler as L

CURVATURE = np.array([[0.5, 2.0, 1.0], [3.0, 0.2, 1.5]])
TARGET = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]])
START = np.array([[0.3, 0.1, -0.4], [2.0, -1.0, 0.7]])
STEPS = 8
OPTIONS = {
    "RMSprop": [
        dict(lr=0.01), dict(lr=0.01, alpha=0.9, momentum=0.5), dict(lr=0.02, centered=True, weight_decay=0.1),
        dict(lr=0.01, centered=True, momentum=0.9, maximize=True), dict(lr=0.05, alpha=0.3, centered=True, eps=1e-3),
    ],
    "Adagrad": [
        dict(lr=0.1), dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.5),
        dict(lr=0.1, eps=1e-3, maximize=True),
    ],
    "Adadelta": [dict(), dict(lr=0.5, rho=0.8, eps=1e-3, weight_decay=0.1), dict(rho=0.3, maximize=True)],
    "Adamax": [
        dict(lr=0.05), dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1),
        dict(betas=(0.3, 0.99), eps=1e-3, maximize=True),
    ],
    "NAdam": [
        dict(lr=0.05), dict(lr=0.05, momentum_decay=0.1, weight_decay=0.1),
        dict(weight_decay=0.2, decoupled_weight_decay=True, maximize=True), dict(lr=0.05, betas=(0.4, 0.9)),
    ],
    # RAdam's rectified step starts at step 6 with these betas.
    "RAdam": [
        dict(lr=0.05), dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1),
        dict(weight_decay=0.2, decoupled_weight_decay=True, maximize=True), dict(lr=0.05, betas=(0.3, 0.99)),
    ],
}
TORCH_DEFAULTS = {
    "RMSprop": {"lr": 0.01, "momentum": 0, "alpha": 0.99, "eps": 1e-08, "centered": False, "weight_decay": 0,
                "capturable": False, "foreach": None, "maximize": False, "differentiable": False},
    "Adagrad": {"lr": 0.01, "lr_decay": 0, "eps": 1e-10, "weight_decay": 0, "initial_accumulator_value": 0,
                "foreach": None, "maximize": False, "differentiable": False, "fused": None},
    "Adadelta": {"lr": 1.0, "rho": 0.9, "eps": 1e-06, "weight_decay": 0, "maximize": False, "capturable": False,
                 "foreach": None, "differentiable": False},
    "Adamax": {"lr": 0.002, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0, "foreach": None,
               "maximize": False, "differentiable": False, "capturable": False},
    "NAdam": {"lr": 0.002, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0, "momentum_decay": 0.004,
              "decoupled_weight_decay": False, "maximize": False, "foreach": None, "capturable": False,
              "differentiable": False},
    "RAdam": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0, "maximize": False, "foreach": None,
              "capturable": False, "decoupled_weight_decay": False, "differentiable": False},
}
# Options that make every state tensor, and the state keys PyTorch keeps for them, in its order.
TORCH_STATE_KEYS = {
    "RMSprop": (dict(momentum=0.5, centered=True), ["step", "square_avg", "momentum_buffer", "grad_avg"]),
    "Adagrad": ({}, ["step", "sum"]),
    "Adadelta": ({}, ["step", "square_avg", "acc_delta"]),
    "Adamax": ({}, ["step", "exp_avg", "exp_inf"]),
    "NAdam": ({}, ["step", "mu_product", "exp_avg", "exp_avg_sq"]),
    "RAdam": ({}, ["step", "exp_avg", "exp_avg_sq"]),
}


def quadratic_grad(p: np.ndarray) -> np.ndarray:
    return CURVATURE * (p - TARGET)


CASES = [(name, case) for name, cases in OPTIONS.items() for case in range(len(cases))]


# -- the updates as PyTorch's single-tensor code writes them, in its order of operations, on plain numpy ----------
# Torch's unfused kernels compute addcmul_(a, b, value=v) as self + v * a * b, addcdiv_(a, b, value=v) as
# self + v * a / b, add_(x, alpha=v) as self + v * x and lerp_(end, w) as self + w * (end - self) for w < 0.5, else
# end - (end - self) * (1 - w). Step counters are float32 tensors read back as Python floats; NAdam's mu_product is a
# float32 tensor multiplied in float32.
def lerp(start, end, weight):
    return start + weight * (end - start) if weight < 0.5 else end - (end - start) * (1 - weight)


def rmsprop_step(p, g, state, step, lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False):
    if weight_decay:
        g = g + weight_decay * p
    state["sq"] = state.get("sq", 0 * p) * alpha + (1 - alpha) * g * g
    if centered:
        state["avg"] = lerp(state.get("avg", 0 * p), g, 1 - alpha)
        avg = np.sqrt(state["sq"] + -1 * state["avg"] * state["avg"]) + eps
    else:
        avg = np.sqrt(state["sq"]) + eps
    if momentum > 0:
        state["buf"] = state.get("buf", 0 * p) * momentum + 1 * g / avg
        return p + -lr * state["buf"]
    return p + -lr * g / avg


def adagrad_step(p, g, state, step, lr=0.01, lr_decay=0, eps=1e-10, weight_decay=0, initial_accumulator_value=0):
    if weight_decay:
        g = g + weight_decay * p
    clr = lr / (1 + (step - 1) * lr_decay)
    state["sum"] = state.get("sum", np.full_like(p, initial_accumulator_value)) + 1 * g * g
    return p + -clr * g / (np.sqrt(state["sum"]) + eps)


def adadelta_step(p, g, state, step, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0):
    if weight_decay:
        g = g + weight_decay * p
    state["sq"] = state.get("sq", 0 * p) * rho + (1 - rho) * g * g
    std = np.sqrt(state["sq"] + eps)
    delta = np.sqrt(state.get("acc", 0 * p) + eps) / std * g
    state["acc"] = state.get("acc", 0 * p) * rho + (1 - rho) * delta * delta
    return p + -lr * delta


def adamax_step(p, g, state, step, lr=0.002, betas=(0.9, 0.999), eps=1e-8, weight_decay=0):
    if weight_decay:
        g = g + weight_decay * p
    state["m"] = lerp(state.get("m", 0 * p), g, 1 - betas[0])
    state["u"] = np.maximum(state.get("u", 0 * p) * betas[1], np.abs(g) + eps)
    clr = lr / (1 - betas[0] ** step)
    return p + -clr * state["m"] / state["u"]


def nadam_step(p, g, state, step, lr=0.002, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=0.004,
               decoupled_weight_decay=False):
    beta1, beta2 = betas
    bias_correction2 = 1 - beta2**step
    if weight_decay and decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    elif weight_decay:
        g = g + weight_decay * p
    mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
    state["mu_product"] = state.get("mu_product", np.float32(1.0)) * np.float32(mu)
    mu_product = float(state["mu_product"])
    state["m"] = lerp(state.get("m", 0 * p), g, 1 - beta1)
    state["v"] = state.get("v", 0 * p) * beta2 + (1 - beta2) * g * g
    denom = np.sqrt(state["v"] / bias_correction2) + eps
    p = p + (-lr * (1.0 - mu) / (1.0 - mu_product)) * g / denom
    return p + (-lr * mu_next) / (1.0 - mu_product * mu_next) * state["m"] / denom


def radam_step(p, g, state, step, lr=0.001, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
               decoupled_weight_decay=False):
    beta1, beta2 = betas
    if weight_decay and decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    elif weight_decay:
        g = g + weight_decay * p
    state["m"] = lerp(state.get("m", 0 * p), g, 1 - beta1)
    state["v"] = state.get("v", 0 * p) * beta2 + (1 - beta2) * g * g
    bias_correction1, bias_correction2 = 1 - beta1**step, 1 - beta2**step
    corrected = state["m"] / bias_correction1
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
    if rho_t <= 5.0:
        return p - corrected * lr
    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
    adaptive = (bias_correction2**0.5) / (np.sqrt(state["v"]) + eps)
    return p - corrected * lr * adaptive * rect


REFERENCE_STEPS = {"RMSprop": rmsprop_step, "Adagrad": adagrad_step, "Adadelta": adadelta_step,
                   "Adamax": adamax_step, "NAdam": nadam_step, "RAdam": radam_step}


def reference_trajectory(name, options, steps=STEPS):
    """The parameter after `steps` steps of PyTorch's documented update, the gradient negated for maximize."""
    options = dict(options)
    sign = -1.0 if options.pop("maximize", False) else 1.0
    p, state = START.copy(), {}
    for step in range(1, steps + 1):
        p = REFERENCE_STEPS[name](p, sign * quadratic_grad(p), state, float(step), **options)
    return p


def take_steps(opt, params, steps):
    for _ in range(steps):
        for p in params:
            p.grad = ag.tensor(quadratic_grad(p.detach().cpu().numpy()), device=p.device)
        opt.step()


def run(name, options, steps=STEPS, device=None):
    p = nn.Parameter(ag.tensor(START, dtype=ag.float64, device=device))
    opt = getattr(optim, name)([p], **options)
    take_steps(opt, [p], steps)
    return p, opt


@pytest.mark.parametrize(("name", "case"), CASES)
def test_optimizer_matches_pytorch(name, case):
    p, _ = run(name, OPTIONS[name][case])
    np.testing.assert_array_max_ulp(p.detach().numpy(), reference_trajectory(name, OPTIONS[name][case]), maxulp=2)


@pytest.mark.parametrize("name", list(TORCH_DEFAULTS))
def test_defaults_and_state_keys_are_pytorchs(name):
    p = nn.Parameter(ag.tensor(START))
    assert list(getattr(optim, name)([p]).defaults.items()) == list(TORCH_DEFAULTS[name].items())
    options, keys = TORCH_STATE_KEYS[name]
    _, opt = run(name, options, steps=2)
    state = opt.state_dict()["state"][0]
    assert list(state) == keys
    for key, value in state.items():
        counter = key in ("step", "mu_product")
        assert value.dtype == (ag.float32 if counter else ag.float64) and value.shape == (() if counter else (2, 3))
    assert state["step"].item() == 2.0


@pytest.mark.parametrize("name", list(TORCH_DEFAULTS))
def test_state_dict_round_trip_continues_identically(name):
    options = {**OPTIONS[name][1], "maximize": True}
    p, opt = run(name, options, steps=3)
    saved = opt.state_dict()
    assert saved["param_groups"][0]["params"] == [0] and saved["param_groups"][0]["maximize"]
    clone = nn.Parameter(ag.tensor(p.detach().numpy()))
    clone_opt = getattr(optim, name)([clone], lr=0.5)
    clone_opt.load_state_dict(saved)
    assert {k: v for k, v in clone_opt.param_groups[0].items() if k != "params"} == {
        k: v for k, v in saved["param_groups"][0].items() if k != "params"}
    take_steps(opt, [p], 2)
    take_steps(clone_opt, [clone], 2)
    if name == "NAdam":
        # PyTorch loads mu_product in the parameter's dtype, so the loaded run keeps it in float64, not float32.
        assert clone_opt.state[clone]["mu_product"].dtype == ag.float64
        np.testing.assert_allclose(clone.detach().numpy(), p.detach().numpy(), rtol=1e-7)
    else:
        np.testing.assert_array_equal(clone.detach().numpy(), p.detach().numpy())
    assert saved["state"][0]["step"].item() == 3.0 and clone_opt.state[clone]["step"].item() == 5.0


def test_a_state_dict_from_an_older_version_loads_as_pytorchs_does():
    _, opt = run("NAdam", {}, steps=1)
    saved = opt.state_dict()
    del saved["param_groups"][0]["decoupled_weight_decay"]
    saved["state"][0]["step"] = 1
    saved["state"][0]["mu_product"] = 0.5
    opt.load_state_dict(saved)
    state = next(iter(opt.state.values()))
    assert opt.param_groups[0]["decoupled_weight_decay"] is False
    assert state["step"].dtype == state["mu_product"].dtype == ag.float32 and state["mu_product"].item() == 0.5


def test_param_groups_keep_their_own_options():
    a, b = (nn.Parameter(ag.tensor(START)) for _ in range(2))
    opt = optim.RMSprop([{"params": [a]}, {"params": b, "momentum": 0.5, "centered": True}], lr=0.02)
    take_steps(opt, [a, b], 4)
    np.testing.assert_array_equal(a.detach().numpy(), run("RMSprop", dict(lr=0.02), steps=4)[0].detach().numpy())
    alone, _ = run("RMSprop", dict(lr=0.02, momentum=0.5, centered=True), steps=4)
    np.testing.assert_array_equal(b.detach().numpy(), alone.detach().numpy())
    assert set(opt.state[b]) == {"step", "square_avg", "momentum_buffer", "grad_avg"}


def test_adagrad_makes_its_state_at_construction_from_the_constructors_accumulator():
    a, b, c = (nn.Parameter(ag.zeros(2, dtype=ag.float64)) for _ in range(3))
    opt = optim.Adagrad([{"params": [a]}, {"params": [b], "initial_accumulator_value": 2.0}],
                        initial_accumulator_value=0.5)
    assert [opt.state[p]["sum"].tolist() for p in (a, b)] == [[0.5, 0.5]] * 2  # the group's value is not used
    assert list(opt.state_dict()["state"]) == [0, 1] and opt.state[a]["step"].item() == 0.0
    opt.add_param_group({"params": [c], "initial_accumulator_value": 3.0})
    c.grad = ag.ones(2, dtype=ag.float64)
    opt.step()
    assert opt.state[c]["sum"].tolist() == [1.5, 1.5] and opt.state[a]["step"].item() == 0.0


@pytest.mark.parametrize("name", list(TORCH_DEFAULTS))
def test_float32_parameters_stay_float32_and_unused_ones_stay_put(name):
    p = nn.Parameter(ag.tensor(START.astype(np.float32)))
    idle = nn.Parameter(ag.ones(2))
    opt = getattr(optim, name)([p, idle], **TORCH_STATE_KEYS[name][0])
    p.grad = ag.tensor(quadratic_grad(START).astype(np.float32))
    opt.step()
    array = p._data
    opt.step()
    assert p._data is array and p.dtype == ag.float32 and not np.array_equal(p.detach().numpy(), START)
    assert all(v.dtype == ag.float32 for v in opt.state[p].values())
    assert idle.tolist() == [1.0, 1.0]


def test_zero_grad_closure_and_a_tensor_lr():
    p = nn.Parameter(ag.tensor([1.0, -2.0], dtype=ag.float64))
    opt = optim.Adamax([p], lr=ag.tensor(0.1))
    p.grad = ag.ones(2, dtype=ag.float64)
    opt.zero_grad()
    assert p.grad is None

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 5.0
    assert p.tolist() == pytest.approx([0.9, -1.9], abs=1e-8)  # Adamax's first step moves by lr (less eps)


@pytest.mark.parametrize(("make", "text"), [
    (lambda ps: optim.RMSprop(ps, lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda ps: optim.RMSprop(ps, eps=-1), "Invalid epsilon value: -1"),
    (lambda ps: optim.RMSprop(ps, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda ps: optim.RMSprop(ps, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda ps: optim.RMSprop(ps, alpha=-0.1), "Invalid alpha value: -0.1"),
    (lambda ps: optim.RMSprop(ps, lr=math.nan), "Invalid learning rate: nan"),
    (lambda ps: optim.Adagrad(ps, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda ps: optim.Adagrad(ps, initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    (lambda ps: optim.Adagrad(ps, eps=-1), "Invalid epsilon value: -1"),
    (lambda ps: optim.Adadelta(ps, rho=1.5), "Invalid rho value: 1.5"),
    (lambda ps: optim.Adadelta(ps, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda ps: optim.Adamax(ps, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda ps: optim.Adamax(ps, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda ps: optim.NAdam(ps, momentum_decay=-1), "Invalid momentum_decay value: -1"),
    (lambda ps: optim.NAdam(ps, betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (lambda ps: optim.RAdam(ps, lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda ps: optim.RAdam(ps, betas=(-0.1, 0.9)), "Invalid beta parameter at index 0: -0.1"),
    (lambda ps: optim.RAdam(ps, lr=ag.tensor([0.1, 0.2])), "Tensor lr must be 1-element"),
    # Options whose promise actorgrad cannot keep are refused, as for SGD and Adam.
    (lambda ps: optim.RMSprop(ps, capturable=True), "do not support capturable=True"),
    (lambda ps: optim.NAdam(ps, differentiable=True), "do not support differentiable=True"),
])
def test_bad_options_get_pytorchs_errors(make, text):
    with pytest.raises(ValueError, match=re.escape(text)):
        make([nn.Parameter(ag.ones(1))])


def test_optimizers_are_exported():
    assert {"RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"} <= set(optim.__all__)

# -- schedulers ----------------------------------------------------------------------------------------------------
# Group 1's lr (starting at 0.05; group 0's at 0.1) and momentum (SGD's, starting at 0.5, or Adam's beta1) after each
# of 20 steps: PyTorch's rules, written out here in its order of operations (recursive where its get_lr is), which
# its schedulers must match bit for bit.
def one_cycle(k, start, peak, low, phases, anneal, momenta):
    """OneCycleLR at step k: phases are (end_step, start, end) keys into start/peak/low, annealed by `anneal`."""
    values = {"start": start, "peak": peak, "low": low}
    begin = 0.0
    for i, (end, a, b) in enumerate(phases):
        if k <= end or i == len(phases) - 1:
            pct = (k - begin) / (end - begin)
            return anneal(values[a], values[b], pct), anneal(momenta[i][0], momenta[i][1], pct)
        begin = end


def cos_anneal(start, end, pct):
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def linear_anneal(start, end, pct):
    return (end - start) * pct + start


def cyclic(k, base, peak, up, down, scale, by_cycle, momenta=(0.8, 0.9)):
    total = float(up + down)
    ratio = up / total
    cycle = math.floor(1 + k / total)
    x = 1.0 + k / total - cycle
    factor = x / ratio if x <= ratio else (x - 1) / (ratio - 1)
    s = scale(cycle if by_cycle else k)
    return base + (peak - base) * factor * s, momenta[1] - (momenta[1] - momenta[0]) * factor * s


def warm_restarts(t_0, t_mult, eta_min):
    t_cur, t_i, lrs = 0, t_0, []
    for _ in range(21):
        lrs.append(eta_min + (0.05 - eta_min) * (1 + math.cos(math.pi * t_cur / t_i)) / 2)
        t_cur += 1
        if t_cur >= t_i:
            t_cur, t_i = t_cur % t_i, t_i * t_mult
    return lrs


def chained_rules(rules, first):
    """lrs from `first` on, each next one from the last by rules(lr, k) for k = 1..20."""
    lrs = [first]
    for k in range(1, 21):
        lrs.append(rules(lrs[-1], k))
    return lrs


def constant_rule(lr, k, total):  # ConstantLR(factor=0.5)'s recursive step
    return lr * (1.0 / 0.5) if k == total else lr


def linear_rule(lr, k):  # LinearLR(0.25, 1.0, 4)
    return lr * (1.0 + (1.0 - 0.25) / (4 * 0.25 + (k - 1) * (1.0 - 0.25))) if k <= 4 else lr


def sequential_three_rule(lr, k):
    if k < 5:
        return linear_rule(lr, k)
    if k == 5 or k == 12:  # the next scheduler's step(0): its closed form at epoch 0, the base lr
        return 0.05
    if k < 12:  # StepLR(3, 0.5) at its epoch k - 5
        return lr * 0.5 if (k - 5) % 3 == 0 else lr
    epoch = k - 12  # CosineAnnealingLR(T_max=5)
    if (epoch - 1 - 5) % 10 == 0:
        return lr + 0.05 * (1 - math.cos(math.pi / 5)) / 2
    return (1 + math.cos(math.pi * epoch / 5)) / (1 + math.cos(math.pi * (epoch - 1) / 5)) * lr


def polynomial_rule(lr, k):
    return lr * ((1.0 - k / 12) / (1.0 - (k - 1) / 12)) ** 2.0 if k <= 12 else lr


def expected_schedule(name):
    """Group 1's 21 lrs and momentums."""
    cos_two = [(5.0, "start", "peak"), (19, "peak", "low")]
    if name.startswith("one_cycle"):
        if name == "one_cycle_linear_three_phase":
            peak, phases, anneal = 0.5, [(4.0, "start", "peak"), (8.0, "peak", "start"), (19, "start", "low")], \
                linear_anneal
            momenta = [(0.95, 0.85), (0.85, 0.95), (0.95, 0.95)]
        else:
            peak, phases, anneal = 0.5, cos_two, cos_anneal
            momenta = [(0.9, 0.8), (0.8, 0.9)] if name == "one_cycle_adam" else [(0.95, 0.85), (0.85, 0.95)]
        start = peak / (10.0 if name == "one_cycle_linear_three_phase" else 25.0)
        pairs = [one_cycle(k, start, peak, start / 1e4, phases, anneal, momenta) for k in range(21)]
        return [lr for lr, _ in pairs], [m for _, m in pairs]
    if name == "cyclic_triangular":
        pairs = [cyclic(k, 0.01, 0.1, 3, 5, lambda x: 1.0, True) for k in range(21)]
        return [lr for lr, _ in pairs], [m for _, m in pairs]
    if name == "cyclic_exp_range_adam":
        pairs = [cyclic(k, 0.01, 0.1, 4, 4, lambda x: 0.9**x, False) for k in range(21)]
        return [lr for lr, _ in pairs], [m for _, m in pairs]
    if name == "cyclic_triangular2":
        lrs = [cyclic(k, 0.02, 0.2, 2, 2, lambda x: 1 / (2.0 ** (x - 1)), True)[0] for k in range(21)]
    elif name == "warm_restarts":
        lrs = warm_restarts(3, 2, 0.001)
    elif name == "warm_restarts_t_mult_1":
        lrs = warm_restarts(4, 1, 0)
    elif name == "constant":
        lrs = chained_rules(lambda lr, k: constant_rule(lr, k, 4), 0.05 * 0.5)
    elif name == "polynomial":
        lrs = chained_rules(polynomial_rule, 0.05)
    elif name == "sequential":  # ConstantLR(0.5, 3), then ExponentialLR(0.9) from step(0) at epoch 4
        lrs = chained_rules(lambda lr, k: constant_rule(lr, k, 3) if k < 4 else 0.05 if k == 4 else lr * 0.9,
                            0.05 * 0.5)
    elif name == "sequential_three":
        lrs = chained_rules(sequential_three_rule, 0.05 * 0.25)
    else:  # chained: ConstantLR(0.5, 4)'s step, then ExponentialLR(0.9)'s, every step
        lrs = chained_rules(lambda lr, k: constant_rule(lr, k, 4) * 0.9, 0.05 * 0.5)
    return lrs, [0.5] * 21



SCHEDULERS = {
    "constant": ("SGD", lambda o: L.ConstantLR(o, factor=0.5, total_iters=4)),
    "polynomial": ("SGD", lambda o: L.PolynomialLR(o, total_iters=12, power=2.0)),
    "warm_restarts": ("SGD", lambda o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001)),
    "warm_restarts_t_mult_1": ("SGD", lambda o: L.CosineAnnealingWarmRestarts(o, T_0=4)),
    "one_cycle_cos": ("SGD", lambda o: L.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=20)),
    "one_cycle_linear_three_phase": ("SGD", lambda o: L.OneCycleLR(
        o, max_lr=0.5, epochs=4, steps_per_epoch=5, pct_start=0.25, anneal_strategy="linear", three_phase=True,
        div_factor=10.0)),
    "one_cycle_adam": ("Adam", lambda o: L.OneCycleLR(o, max_lr=0.5, total_steps=20, base_momentum=0.8,
                                                      max_momentum=0.9)),
    "cyclic_triangular": ("SGD", lambda o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5)),
    "cyclic_triangular2": ("SGD", lambda o: L.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.2], step_size_up=2,
                                                       mode="triangular2", cycle_momentum=False)),
    "cyclic_exp_range_adam": ("Adam", lambda o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4,
                                                           mode="exp_range", gamma=0.9)),
    "sequential": ("SGD", lambda o: L.SequentialLR(
        o, [L.ConstantLR(o, factor=0.5, total_iters=3), L.ExponentialLR(o, 0.9)], milestones=[4])),
    "sequential_three": ("SGD", lambda o: L.SequentialLR(
        o, [L.LinearLR(o, 0.25, 1.0, 4), L.StepLR(o, 3, 0.5), L.CosineAnnealingLR(o, 5)], milestones=[5, 12])),
    "chained": ("SGD", lambda o: L.ChainedScheduler([L.ConstantLR(o, factor=0.5, total_iters=4),
                                                     L.ExponentialLR(o, 0.9)])),
}


def two_groups(kind="SGD"):
    groups = [{"params": [nn.Parameter(ag.zeros(2))]}, {"params": [nn.Parameter(ag.zeros(2))], "lr": 0.05}]
    return optim.SGD(groups, lr=0.1, momentum=0.5) if kind == "SGD" else optim.Adam(groups, lr=0.1)


def momentum_of(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


def run_schedule(name, steps=20):
    kind, make = SCHEDULERS[name]
    opt = two_groups(kind)
    scheduler = make(opt)
    lrs, momentums = [scheduler.get_last_lr()[1]], [momentum_of(opt.param_groups[1])]
    for _ in range(steps):
        opt.step()
        scheduler.step()
        assert [g["lr"] for g in opt.param_groups] == scheduler.get_last_lr()
        lrs.append(scheduler.get_last_lr()[1])
        momentums.append(momentum_of(opt.param_groups[1]))
    return opt, scheduler, lrs, momentums


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_schedule_matches_pytorch_over_20_steps(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, _, lrs, momentums = run_schedule(name)
    expected_lrs, expected_momentums = expected_schedule(name)
    assert lrs == expected_lrs  # bit for bit
    assert momentums == expected_momentums


EPOCHS = [2, 5, 9, 3.5, 7.25, 0, 20]


def warm_restart_at(epoch, t_0, t_mult=1, eta_min=0.0):
    """CosineAnnealingWarmRestarts' closed form at an epoch: the restart it falls in, then the cosine within it."""
    t_cur, t_i = epoch, t_0
    if epoch >= t_0 and t_mult == 1:
        t_cur = epoch % t_0
    elif epoch >= t_0:
        n = int(math.log(epoch / t_0 * (t_mult - 1) + 1, t_mult))
        t_cur, t_i = epoch - t_0 * (t_mult**n - 1) / (t_mult - 1), t_0 * t_mult**n
    return eta_min + (1.0 - eta_min) * (1 + math.cos(math.pi * t_cur / t_i)) / 2


@pytest.mark.parametrize(("make", "warns", "expected"), [
    (lambda o: L.ConstantLR(o, 0.5, 4), True, [0.5, 1.0, 1.0, 0.5, 1.0, 0.5, 1.0]),
    (lambda o: L.PolynomialLR(o, 8, 1.5), True, [(1.0 - min(8, e) / 8) ** 1.5 for e in EPOCHS]),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 3, 2, 0.01), False, [warm_restart_at(e, 3, 2, 0.01) for e in EPOCHS]),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 3), False, [warm_restart_at(e, 3) for e in EPOCHS]),
])
def test_step_with_an_epoch_uses_the_closed_form(make, warns, expected):
    opt = optim.SGD([nn.Parameter(ag.zeros(1))], lr=1.0)
    scheduler = make(opt)
    opt.step()
    seen = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for epoch in EPOCHS:
            scheduler.step(epoch)
            seen.append(scheduler.get_last_lr()[0])
    assert seen == expected and scheduler.last_epoch == 20
    assert bool(caught) == warns  # CosineAnnealingWarmRestarts takes an epoch without the deprecation warning


@pytest.mark.parametrize("name", ["warm_restarts", "one_cycle_adam", "cyclic_triangular", "sequential_three",
                                  "chained"])
def test_scheduler_state_dict_round_trip_continues_identically(name):
    opt, scheduler, _, _ = run_schedule(name, steps=7)
    saved, saved_opt = scheduler.state_dict(), opt.state_dict()
    kind, make = SCHEDULERS[name]
    resumed_opt = two_groups(kind)
    resumed = make(resumed_opt)
    resumed_opt.load_state_dict(saved_opt)
    resumed.load_state_dict(saved)
    assert resumed.get_last_lr() == scheduler.get_last_lr()
    for o, s in ((opt, scheduler), (resumed_opt, resumed)):
        for _ in range(5):
            o.step()
            s.step()
    assert resumed.get_last_lr() == scheduler.get_last_lr()
    assert [momentum_of(g) for g in resumed_opt.param_groups] == [momentum_of(g) for g in opt.param_groups]


def test_combined_schedulers_save_each_schedulers_state():
    opt, scheduler, _, _ = run_schedule("sequential", steps=5)
    state = scheduler.state_dict()
    assert list(state) == ["_milestones", "last_epoch", "_last_lr", "_schedulers"] and state["last_epoch"] == 5
    # The first ran to epoch 3; the second restarted at its milestone (4) and took one step since.
    assert [s["last_epoch"] for s in state["_schedulers"]] == [3, 1] and state["_schedulers"][1]["_step_count"] == 2
    chained = run_schedule("chained", steps=2)[1].state_dict()
    assert list(chained) == ["_last_lr", "_schedulers"] and chained["_schedulers"][0]["factor"] == 0.5


def test_cyclic_lr_saves_a_callable_objects_scale_fn_but_not_a_function():
    class Halving:
        def __init__(self):
            self.calls = 0

        def __call__(self, x):
            self.calls += 1
            return 0.5**x

    halving = Halving()
    opt = two_groups()
    scheduler = L.CyclicLR(opt, 0.01, 0.1, step_size_up=2, scale_fn=halving, scale_mode="iterations")
    opt.step()
    scheduler.step()
    assert scheduler.get_last_lr()[0] == 0.01 + (0.1 - 0.01) * 0.5 * 0.5
    state = scheduler.state_dict()
    # PyTorch calls scale_fn once per group for the lr and once for the momentum: 2 steps * 2 groups * 2.
    assert state["_scale_fn_custom"] == {"calls": 8} and list(state)[-1] == "_scale_fn_custom"
    halving.calls = 9
    scheduler.load_state_dict(state)
    assert halving.calls == 8 and scheduler.scale_mode == "iterations"
    by_mode = L.CyclicLR(two_groups(), 0.01, 0.1, scale_fn=lambda x: 1.0)
    assert by_mode.state_dict()["_scale_fn_custom"] is None
    exp_range = L.CyclicLR(two_groups(), 0.01, 0.1, mode="exp_range", scale_mode="cycle")
    assert exp_range.scale_mode == "iterations"  # a built-in mode fixes its scale mode, as in PyTorch


def test_one_cycle_lr_refuses_to_step_past_its_total():
    opt = two_groups()
    scheduler = L.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    for _ in range(2):
        opt.step()
        scheduler.step()
    with pytest.raises(ValueError, match=r"^Tried to step 3 times. The specified number of total steps is 2$"):
        scheduler.step()
    assert opt.param_groups[0]["initial_lr"] == 0.04 and opt.param_groups[0]["min_lr"] == 0.04 / 1e4


def test_sequential_lr_starts_the_first_scheduler_from_the_initial_lr():
    opt = two_groups()
    first, second = L.ExponentialLR(opt, 0.5), L.ConstantLR(opt, 0.25, 2)
    assert opt.param_groups[0]["lr"] == 0.025  # each took its first step when made
    scheduler = L.SequentialLR(opt, [first, second], milestones=[2])
    assert scheduler.get_last_lr() == [0.1, 0.05] and first.last_epoch == 0 and second.last_epoch == -1
    assert first._step_count == 1


@pytest.mark.parametrize(("make", "error", "text"), [
    (lambda o: L.ConstantLR(o, factor=1.5), ValueError,
     "Constant multiplicative factor expected to be between 0 and 1."),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 0), ValueError, "Expected positive integer T_0, but got 0"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 2, T_mult=0), ValueError, "Expected integer T_mult >= 1, but got 0"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 2, eta_min="a"), ValueError,
     "Expected float or int eta_min, but got a of type <class 'str'>"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 2).step(-1), ValueError, "Expected non-negative epoch, but got -1"),
    (lambda o: L.OneCycleLR(o, 1.0), ValueError, "You must define either total_steps OR (epochs AND steps_per_epoch)"),
    (lambda o: L.OneCycleLR(o, 1.0, total_steps=0), ValueError, "Expected positive integer total_steps, but got 0"),
    (lambda o: L.OneCycleLR(o, 1.0, epochs=0, steps_per_epoch=2), ValueError,
     "Expected positive integer epochs, but got 0"),
    (lambda o: L.OneCycleLR(o, 1.0, epochs=2, steps_per_epoch=1.5), ValueError,
     "Expected positive integer steps_per_epoch, but got 1.5"),
    (lambda o: L.OneCycleLR(o, 1.0, 10, pct_start=1), ValueError,
     "Expected float between 0 and 1 pct_start, but got 1"),
    (lambda o: L.OneCycleLR(o, 1.0, 10, anneal_strategy="x"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear', instead got x"),
    (lambda o: L.OneCycleLR(o, [1.0], 10), ValueError,
     "max_lr must have the same length as optimizer.param_groups. max_lr has 1 values, param_groups has 2."),
    (lambda o: L.OneCycleLR(optim.Adagrad([nn.Parameter(ag.zeros(1))]), 1.0, 10), ValueError,
     "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
    (lambda o: L.CyclicLR(o, 0.1, 1.0, mode="x"), ValueError, "mode is invalid and scale_fn is None"),
    (lambda o: L.CyclicLR(3, 0.1, 1.0), TypeError, "int is not an Optimizer"),
    (lambda o: L.SequentialLR(o, [], []), ValueError,
     "SequentialLR expects at least one scheduler, but got no scheduler."),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2), L.StepLR(o, 3)], []), ValueError,
     "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone "
     "points, but got number of schedulers 2 and the number of milestones to be equal to 0"),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2), L.ReduceLROnPlateau(o)], [1]), ValueError,
     "SequentialLR does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs to be specified "
     "when calling `step`, but got one at index 1 in the given schedulers sequence."),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2), 3], [1]), TypeError,
     "SequentialLR at index 1 should have `optimizer` as its attribute."),
    (lambda o: L.SequentialLR(o, [L.StepLR(two_groups(), 2)], []), ValueError,
     "SequentialLR expects all schedulers to belong to the same optimizer, but got scheduler StepLR at index 0 has "),
    (lambda o: L.ChainedScheduler([]), ValueError,
     "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler."),
    (lambda o: L.ChainedScheduler([L.StepLR(o, 2), L.ReduceLROnPlateau(o)]), ValueError,
     "ChainedScheduler does not support `ReduceLROnPlateau` scheduler"),
])
def test_scheduler_argument_errors(make, error, text):
    with pytest.raises(error, match=f"^{re.escape(text)}"):
        make(two_groups())


def test_schedulers_are_exported():
    new = {"ConstantLR", "PolynomialLR", "CosineAnnealingWarmRestarts", "OneCycleLR", "CyclicLR", "SequentialLR",
           "ChainedScheduler"}
    assert new <= set(L.__all__) and all(getattr(L, name).__name__ == name for name in new)


# -- on cuda -------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize(("name", "case"), CASES)
def test_optimizers_step_cuda_parameters_as_cpu_ones(name, case):
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    p, opt = run(name, OPTIONS[name][case], device=cuda)
    for key, value in opt.state[p].items():  # counters stay on the cpu, as PyTorch keeps them
        assert value.device == (ag.device("cpu") if key in ("step", "mu_product") else cuda), key
    # A GPU may fuse multiply-adds: the values agree to rounding, not to the bit.
    np.testing.assert_allclose(p.detach().cpu().numpy(), run(name, OPTIONS[name][case])[0].detach().numpy(),
                               rtol=1e-12, atol=1e-15)
    saved = opt.state_dict()
    moved = nn.Parameter(ag.tensor(START, dtype=ag.float64, device=cuda))
    loaded = getattr(optim, name)([moved])
    loaded.load_state_dict(saved)
    assert all(v.device == cuda for k, v in loaded.state[moved].items() if k not in ("step",))
