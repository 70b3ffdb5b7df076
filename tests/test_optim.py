"""Optimizers on a fixed quadratic, against PyTorch's documented update rules written out here in numpy.

Gradients are set on `p.grad` directly (grad = curvature * (p - target)), so these tests need no ops.
"""

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn, optim

CURVATURE = np.array([[0.5, 2.0, 1.0], [3.0, 0.2, 1.5]])
TARGET = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]])
START = np.array([[0.3, 0.1, -0.4], [2.0, -1.0, 0.7]])
STEPS = 6


def quadratic_grad(p: np.ndarray) -> np.ndarray:
    return CURVATURE * (p - TARGET)


def run(make_optimizer, steps: int = STEPS) -> np.ndarray:
    p = nn.Parameter(ag.tensor(START, dtype=ag.float64))
    opt = make_optimizer([p])
    for _ in range(steps):
        p.grad = ag.tensor(quadratic_grad(p.detach().numpy()))
        opt.step()
    return p.detach().numpy()


def sgd_rule(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    p, buf = START.copy(), None
    for _ in range(STEPS):
        g = quadratic_grad(p)
        g = -g if maximize else g
        g = g + weight_decay * p
        if momentum:
            buf = g if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def adam_rule(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False, decoupled=False):
    beta1, beta2 = betas
    p, m, v, v_max = START.copy(), 0.0, 0.0, 0.0
    for t in range(1, STEPS + 1):
        g = quadratic_grad(p)
        g = -g if maximize else g
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        v_max = np.maximum(v_max, v)
        m_hat = m / (1 - beta1**t)
        v_hat = (v_max if amsgrad else v) / (1 - beta2**t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p


@pytest.mark.parametrize(
    "options",
    [
        dict(lr=0.1),
        dict(lr=0.1, momentum=0.9),
        dict(lr=0.05, momentum=0.8, dampening=0.3),
        dict(lr=0.1, momentum=0.9, nesterov=True),
        dict(lr=0.1, momentum=0.5, weight_decay=0.2),
        dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1, maximize=True),
    ],
)
def test_sgd_follows_pytorchs_rule(options):
    np.testing.assert_allclose(run(lambda ps: optim.SGD(ps, **options)), sgd_rule(**options), rtol=1e-12, atol=1e-12)


def test_sgd_momentum_first_two_steps_by_hand():
    lr, mu, damp = 0.1, 0.9, 0.25
    p = nn.Parameter(ag.tensor([1.0], dtype=ag.float64))
    opt = optim.SGD([p], lr=lr, momentum=mu, dampening=damp)
    p.grad = ag.tensor([2.0], dtype=ag.float64)
    opt.step()
    assert p.item() == pytest.approx(1.0 - lr * 2.0)  # the first buffer is the gradient, undampened
    p.grad = ag.tensor([-1.0], dtype=ag.float64)
    opt.step()
    assert p.item() == pytest.approx(0.8 - lr * (mu * 2.0 + (1 - damp) * -1.0))


@pytest.mark.parametrize(
    "options",
    [
        dict(lr=0.05),
        dict(lr=0.05, amsgrad=True),
        dict(lr=0.1, betas=(0.8, 0.95), eps=1e-3, weight_decay=0.3),
        dict(lr=0.1, amsgrad=True, weight_decay=0.1, maximize=True),
    ],
)
def test_adam_follows_pytorchs_rule(options):
    np.testing.assert_allclose(run(lambda ps: optim.Adam(ps, **options)), adam_rule(**options), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("options", [dict(lr=0.05), dict(lr=0.1, weight_decay=0.5, amsgrad=True)])
def test_adamw_decouples_weight_decay(options):
    expected = adam_rule(decoupled=True, **{"weight_decay": 1e-2, **options})
    np.testing.assert_allclose(run(lambda ps: optim.AdamW(ps, **options)), expected, rtol=1e-12, atol=1e-12)
    assert not np.allclose(expected, adam_rule(**{"weight_decay": 1e-2, **options}))


def test_adams_first_step_moves_each_coordinate_by_lr():
    p = nn.Parameter(ag.tensor([1.0, 1.0, 1.0], dtype=ag.float64))
    opt = optim.Adam([p], lr=0.01, eps=0.0)
    p.grad = ag.tensor([3.0, -0.5, 1e-4], dtype=ag.float64)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.99, 1.01, 0.99], rtol=1e-12)
    assert opt.state[p]["step"] == 1 and set(opt.state[p]) == {"step", "exp_avg", "exp_avg_sq"}


def test_float32_parameters_stay_float32_and_updates_are_in_place():
    p = nn.Parameter(ag.tensor(START.astype(np.float32)))
    opt = optim.Adam([p], lr=0.1)
    p.grad = ag.tensor(quadratic_grad(START).astype(np.float32))
    opt.step()
    array = p._data
    opt.step()
    assert p._data is array and p.dtype == ag.float32
    assert p.is_leaf and p.requires_grad and p.grad_fn is None


def test_a_shared_or_read_only_array_is_copied_not_overwritten():
    source = ag.tensor([1.0, 2.0])
    shared = nn.Parameter(source)
    assert shared._data is source._data
    read_only = nn.Parameter(ag.broadcast_to(ag.tensor([1.0]), (2,)))
    model = nn.Module()
    model.w = shared
    snapshot = model.state_dict()
    opt = optim.SGD([shared, read_only], lr=0.5)
    for p in (shared, read_only):
        p.grad = ag.ones(2)
    opt.step()
    opt.step()
    assert source.tolist() == [1.0, 2.0] and snapshot["w"].tolist() == [1.0, 2.0]
    assert shared.tolist() == [0.0, 1.0] and read_only.tolist() == [0.0, 0.0]


def test_step_skips_parameters_without_a_gradient():
    a, b = nn.Parameter(ag.ones(2)), nn.Parameter(ag.ones(2))
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = ag.ones(2)
    opt.step()
    assert b.tolist() == [1.0, 1.0] and b not in opt.state and a.tolist() != [1.0, 1.0]


def test_param_groups_have_their_own_options():
    a, b, c = (nn.Parameter(ag.zeros(1, dtype=ag.float64)) for _ in range(3))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 1.0}], lr=0.1, momentum=0.5)
    opt.add_param_group({"params": [c], "momentum": 0.0})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 1.0, 0.1]
    assert [g["momentum"] for g in opt.param_groups] == [0.5, 0.5, 0.0]
    for p in (a, b, c):
        p.grad = ag.ones(1, dtype=ag.float64)
    opt.step()
    assert [p.item() for p in (a, b, c)] == [-0.1, -1.0, -0.1]
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})


def test_zero_grad_and_closure():
    p = nn.Parameter(ag.ones(2))
    opt = optim.SGD([p], lr=0.1)
    p.grad = ag.ones(2)
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 2.0 and p.tolist() == pytest.approx([0.8, 0.8])


def test_training_a_module_with_backward_lowers_the_loss():
    ag.manual_seed(0)
    model = nn.Module()
    model.w = nn.Parameter(ag.randn(3, 1))
    x = ag.randn(20, 3)
    y = ag.matmul(x, ag.tensor([[1.0], [-2.0], [0.5]]))
    opt = optim.AdamW(model.parameters(), lr=0.1)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = ((ag.matmul(x, model.w) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.05 * losses[0]


def test_state_dict_round_trip_continues_identically():
    first = run(lambda ps: optim.Adam(ps, lr=0.05, amsgrad=True), steps=3)
    p = nn.Parameter(ag.tensor(START, dtype=ag.float64))
    opt = optim.Adam([p], lr=0.05, amsgrad=True)
    for _ in range(3):
        p.grad = ag.tensor(quadratic_grad(p.detach().numpy()))
        opt.step()
    np.testing.assert_array_equal(p.detach().numpy(), first)
    saved = opt.state_dict()
    assert saved["param_groups"][0]["params"] == [0] and saved["state"][0]["step"] == 3
    clone = nn.Parameter(ag.tensor(p.detach().numpy()))
    clone_opt = optim.Adam([clone], lr=1.0)
    clone_opt.load_state_dict(saved)
    assert clone_opt.param_groups[0]["lr"] == 0.05
    grad = quadratic_grad(p.detach().numpy())
    for q, o in ((p, opt), (clone, clone_opt)):
        q.grad = ag.tensor(grad)
        o.step()
    np.testing.assert_allclose(clone.detach().numpy(), p.detach().numpy(), rtol=1e-12)
    assert saved["state"][0]["step"] == 3
    with pytest.raises(ValueError, match="different number of parameter groups"):
        clone_opt.load_state_dict({"state": {}, "param_groups": []})


def test_repr_lists_each_groups_options():
    opt = optim.SGD([nn.Parameter(ag.ones(1))], lr=0.1)
    assert repr(opt).splitlines()[:3] == ["SGD (", "Parameter Group 0", "    dampening: 0"]
    assert "    lr: 0.1" in repr(opt)


def test_bad_options_are_refused():
    params = [nn.Parameter(ag.ones(1))]
    with pytest.raises(ValueError, match="Invalid learning rate: -0.1"):
        optim.SGD(params, lr=-0.1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 0: 1.0"):
        optim.Adam(params, betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: -0.1"):
        optim.AdamW(params, betas=(0.9, -0.1))
    with pytest.raises(ValueError, match="Invalid epsilon value: -1"):
        optim.Adam(params, eps=-1)
    with pytest.raises(ValueError, match="Invalid momentum value: -1"):
        optim.SGD(params, momentum=-1)
    with pytest.raises(ValueError, match="Invalid weight_decay value: -1"):
        optim.SGD(params, weight_decay=-1)
    with pytest.raises(ValueError, match="Invalid learning rate: nan"):
        optim.Adam(params, lr=math.nan)  # SGD, checking `lr < 0` as PyTorch's, takes it
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        optim.SGD(params, nesterov=True)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is float"):
        optim.SGD([1.0], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        optim.SGD(params[0])
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([params[0] * 2])
