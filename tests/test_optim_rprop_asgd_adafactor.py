"""Rprop, ASGD and Adafactor: trajectories against plain-numpy versions of the update as PyTorch's documentation
writes it, state layout, state dict round trips and PyTorch's argument errors."""

import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn, optim

rng = np.random.default_rng(7)
CURVATURE = rng.uniform(0.2, 3.0, (3, 4))
TARGET = rng.normal(size=(3, 4))
START = rng.normal(size=(3, 4))
STEPS = 12


def gradient_at(p: np.ndarray) -> np.ndarray:
    """A bumpy quadratic's gradient, so gradient signs flip now and then (which Rprop reacts to)."""
    flat = p.reshape(3, 4)
    return (CURVATURE * (flat - TARGET) + 0.5 * np.sin(3 * flat)).reshape(p.shape)


def run(name, options, shape=(3, 4), steps=STEPS, dtype=ag.float64, device=None):
    p = nn.Parameter(ag.tensor(START.reshape(shape), dtype=dtype, device=device))
    opt = getattr(optim, name)([p], **options)
    take_steps(opt, p, steps)
    return p, opt


def take_steps(opt, p, steps):
    for _ in range(steps):
        values = p.detach().cpu().numpy().astype(np.float64)
        p.grad = ag.tensor(gradient_at(values), dtype=p.dtype, device=p.device)
        opt.step()


# -- the updates as the documentation's pseudo-code writes them, on plain numpy ----------------------------------
def rprop_reference(steps, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    theta, prev, eta = START.copy(), np.zeros_like(START), np.full_like(START, lr)
    for _ in range(steps):
        g = gradient_at(theta) * (-1 if maximize else 1)
        for i in np.ndindex(theta.shape):
            if g[i] * prev[i] > 0:
                eta[i] = min(eta[i] * etas[1], step_sizes[1])
            elif g[i] * prev[i] < 0:
                eta[i] = max(eta[i] * etas[0], step_sizes[0])
                g[i] = 0
            theta[i] -= eta[i] * np.sign(g[i])
            prev[i] = g[i]
    return theta


def asgd_reference(steps, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, maximize=False):
    """The documented rule; eta and mu are kept in float32, as PyTorch keeps them."""
    theta, ax, eta, mu = START.copy(), np.zeros_like(START), np.float32(lr), np.float32(1.0)
    for t in range(1, steps + 1):
        g = gradient_at(theta) * (-1 if maximize else 1) + weight_decay * theta
        theta = theta * (1 - lambd * float(eta))
        theta = theta - float(eta) * g
        ax = ax + (theta - ax) * float(mu) if mu != 1 else theta.copy()
        eta = np.float32(lr / (1 + lambd * lr * t) ** alpha)
        mu = np.float32(1 / max(1, t - t0))
    return theta, ax


def adafactor_reference(steps, shape, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0,
                        maximize=False):
    eps1 = np.finfo(np.float64).eps if eps[0] is None else eps[0]
    theta = START.reshape(shape).copy()
    factored = len(shape) > 1
    row = np.zeros((*shape[:-1], 1)) if factored else None
    col = np.zeros((*shape[:-2], 1, shape[-1])) if factored else None
    v = np.zeros(shape)
    for t in range(1, steps + 1):
        g = gradient_at(theta) * (-1 if maximize else 1)
        beta2_hat = 1 - t**beta2_decay
        rho = min(lr, 1 / np.sqrt(t))
        step_scale = max(eps[1], np.sqrt(np.mean(theta**2))) * rho
        theta = theta - lr * weight_decay * theta
        if factored:
            row = beta2_hat * row + (1 - beta2_hat) * np.mean(g * g, axis=-1, keepdims=True)
            col = beta2_hat * col + (1 - beta2_hat) * np.mean(g * g, axis=-2, keepdims=True)
            v_hat = row @ col / np.maximum(np.mean(row, axis=-2, keepdims=True), eps1)
        else:
            v = beta2_hat * v + (1 - beta2_hat) * g * g
            v_hat = v
        u = g / np.maximum(np.sqrt(v_hat), eps1)
        u = u / max(1.0, np.sqrt(np.mean(u * u)) / d)
        theta = theta - step_scale * u
    return theta


RPROP_CASES = [{}, dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2)), dict(lr=0.05, maximize=True)]
ASGD_CASES = [{}, dict(lr=0.05, lambd=0.1, alpha=0.5, t0=3, weight_decay=0.1), dict(lr=0.05, t0=0, maximize=True)]
ADAFACTOR_CASES = [
    {}, dict(lr=0.1, beta2_decay=-0.5, eps=(1e-3, 1e-2), d=1.5, weight_decay=0.1), dict(lr=0.05, maximize=True),
]


@pytest.mark.parametrize("options", RPROP_CASES)
def test_rprop_follows_the_documented_rule(options):
    p, opt = run("Rprop", options)
    # Rprop moves by step sizes alone: the trajectory is exact up to the products of eta factors.
    np.testing.assert_allclose(p.detach().numpy(), rprop_reference(STEPS, **options), rtol=1e-13, atol=1e-15)
    assert opt.state[p]["step"].item() == STEPS


def test_rprop_skips_the_step_after_a_sign_change_and_clamps_step_sizes():
    p = nn.Parameter(ag.tensor([0.0, 0.0], dtype=ag.float64))
    opt = optim.Rprop([p], lr=0.1, etas=(0.5, 3.0), step_sizes=(0.04, 0.25))
    for grad in ([1.0, 1.0], [1.0, -1.0], [1.0, -1.0]):
        p.grad = ag.tensor(grad, dtype=ag.float64)
        opt.step()
    # Element 0: steps 0.1, 0.25 (0.3 clamped), 0.25; element 1: 0.1, then the flip halves it to 0.05 and skips
    # the move, then (no flip seen) moves by 0.05 the other way.
    np.testing.assert_allclose(p.detach().numpy(), [-0.6, -0.1 + 0.05])
    np.testing.assert_allclose(opt.state[p]["step_size"].numpy(), [0.25, 0.05])


@pytest.mark.parametrize("options", ASGD_CASES)
def test_asgd_follows_the_documented_rule(options):
    p, opt = run("ASGD", options)
    theta, ax = asgd_reference(STEPS, **options)
    np.testing.assert_allclose(p.detach().numpy(), theta, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(opt.state[p]["ax"].numpy(), ax, rtol=1e-13, atol=1e-15)
    state = opt.state[p]
    assert [state[k].dtype for k in ("step", "eta", "mu")] == [ag.float32] * 3


@pytest.mark.parametrize("shape", [(3, 4), (12,), (2, 3, 2)])
@pytest.mark.parametrize("options", ADAFACTOR_CASES)
def test_adafactor_follows_the_documented_rule(options, shape):
    p, opt = run("Adafactor", options, shape=shape)
    np.testing.assert_allclose(p.detach().numpy(), adafactor_reference(STEPS, shape, **options), rtol=1e-12,
                               atol=1e-15)


def test_adafactor_keeps_row_and_column_statistics_of_a_matrix_and_full_ones_of_a_vector():
    _, opt = run("Adafactor", {}, shape=(2, 3, 2), steps=1)
    state = opt.state_dict()["state"][0]
    assert list(state) == ["step", "row_var", "col_var"]
    assert state["row_var"].shape == (2, 3, 1) and state["col_var"].shape == (2, 1, 2)
    _, opt = run("Adafactor", {}, shape=(12,), steps=1)
    assert list(opt.state_dict()["state"][0]) == ["step", "variance"]


DEFAULTS = {
    "Rprop": dict(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), foreach=None, maximize=False,
                  differentiable=False, capturable=False),
    "ASGD": dict(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None, maximize=False,
                 differentiable=False, capturable=False),
    "Adafactor": dict(lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, foreach=None,
                      maximize=False),
}
STATE_KEYS = {
    "Rprop": ["step", "prev", "step_size"], "ASGD": ["step", "eta", "mu", "ax"], "Adafactor": ["step", "row_var",
                                                                                                 "col_var"],
}
CASES = {"Rprop": RPROP_CASES[1], "ASGD": ASGD_CASES[1], "Adafactor": ADAFACTOR_CASES[1]}


@pytest.mark.parametrize("name", list(DEFAULTS))
def test_defaults_and_state_keys_are_pytorchs(name):
    p = nn.Parameter(ag.tensor(START))
    assert list(getattr(optim, name)([p]).defaults.items()) == list(DEFAULTS[name].items())
    _, opt = run(name, {}, steps=2)
    state = opt.state_dict()["state"][0]
    assert list(state) == STATE_KEYS[name] and state["step"].item() == 2.0


@pytest.mark.parametrize("name", list(DEFAULTS))
def test_state_dict_round_trip_continues_identically(name):
    p, opt = run(name, CASES[name], steps=4)
    saved = opt.state_dict()
    clone = nn.Parameter(ag.tensor(p.detach().numpy()))
    clone_opt = getattr(optim, name)([clone], lr=0.5)
    clone_opt.load_state_dict(saved)
    assert clone_opt.param_groups[0]["lr"] == CASES[name]["lr"]
    take_steps(opt, p, 3)
    take_steps(clone_opt, clone, 3)
    # (ASGD's eta and mu load in the parameter's dtype, as PyTorch loads them, but keep float32-rounded values)
    np.testing.assert_array_equal(clone.detach().numpy(), p.detach().numpy())
    assert saved["state"][0]["step"].item() == 4.0 and clone_opt.state[clone]["step"].item() == 7.0


@pytest.mark.parametrize("name", list(DEFAULTS))
def test_float32_parameters_stay_float32(name):
    p, opt = run(name, CASES[name], dtype=ag.float32, steps=3)
    reference, _ = run(name, CASES[name], steps=3)
    assert p.dtype == ag.float32
    assert all(v.dtype == ag.float32 for v in opt.state[p].values())
    np.testing.assert_allclose(p.detach().numpy(), reference.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("make", "text"), [
    (lambda ps: optim.Rprop(ps, lr=-1), "Invalid learning rate: -1"),
    (lambda ps: optim.Rprop(ps, etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
    (lambda ps: optim.Rprop(ps, etas=(0.5, 0.9)), "Invalid eta values: 0.5, 0.9"),
    (lambda ps: optim.Rprop(ps, lr=ag.tensor([0.1, 0.2])), "Tensor lr must be 1-element"),
    (lambda ps: optim.ASGD(ps, lr=-1), "Invalid learning rate: -1"),
    (lambda ps: optim.ASGD(ps, weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
    (lambda ps: optim.Adafactor(ps, lr=-1), "Learning rate should be >= 0 but is: -1"),
    (lambda ps: optim.Adafactor(ps, beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    (lambda ps: optim.Adafactor(ps, eps=(-1, 1e-3)), "epsilon1 should be >= 0 but is: -1"),
    (lambda ps: optim.Adafactor(ps, eps=(None, -1)), "epsilon2 should be >= 0 but is: -1"),
    (lambda ps: optim.Adafactor(ps, d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    (lambda ps: optim.Adafactor(ps, weight_decay=-1), "weight_decay should be >= 0 but is: -1"),
    (lambda ps: optim.Rprop(ps, capturable=True), "do not support capturable=True"),
    (lambda ps: optim.ASGD(ps, differentiable=True), "do not support differentiable=True"),
])
def test_bad_options_get_pytorchs_errors(make, text):
    with pytest.raises(ValueError, match=re.escape(text)):
        make([nn.Parameter(ag.ones(1))])


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(DEFAULTS))
def test_cuda_parameters_step_as_cpu_ones(name):
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    p, opt = run(name, CASES[name], device=cuda)
    reference, _ = run(name, CASES[name])
    np.testing.assert_allclose(p.detach().cpu().numpy(), reference.detach().numpy(), rtol=1e-12, atol=1e-15)
    for key, value in opt.state[p].items():  # ASGD keeps its scalars on the parameter's device, as PyTorch does
        on_cpu = key == "step" and name != "ASGD"
        assert value.device == (ag.device("cpu") if on_cpu else cuda), key
