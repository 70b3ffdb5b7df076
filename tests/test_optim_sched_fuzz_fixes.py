"""Optimizer and scheduler behaviours found to differ from PyTorch's by generating random hyperparameters, parameter
groups, gradients, schedules and resumptions against it, each checked against an independent computation:
LinearLR's closed form (`step(epoch)`) rounds as PyTorch's formula does, and ASGD's step size after an integer Tensor
lr divides to a float rather than truncating to 0."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn, optim
from actorgrad.optim import lr_scheduler


def linear_closed_form(base_lr, start, end, total, epoch):
    """PyTorch's documented closed form: base_lr * (start + (end - start) * min(total, epoch) / total)."""
    return base_lr * (start + (end - start) * min(total, epoch) / total)


def test_linear_lr_closed_form_matches_the_documented_formula_to_the_last_bit():
    # With start 1/3 the change times the epochs, divided by total_iters, rounds differently from the change times
    # the fraction of epochs in about one epoch of seven; step(epoch) must give the formula's value exactly.
    start, total = 1 / 3, 7
    differs = [m for m in range(total + 1) if (1 - start) * m / total != (1 - start) * (m / total)]
    assert differs  # the test exercises epochs where the two orders of operations disagree
    p = nn.Parameter(ag.zeros(1))
    opt = optim.SGD([p], lr=0.1)
    sched = lr_scheduler.LinearLR(opt, start_factor=start, total_iters=total)
    for epoch in [*range(total + 3), 3, 0, 5]:
        opt.step()
        with pytest.warns(UserWarning, match="The epoch parameter"):
            sched.step(epoch)
        assert opt.param_groups[0]["lr"] == linear_closed_form(0.1, start, 1.0, total, epoch)
        assert sched.get_last_lr() == [opt.param_groups[0]["lr"]]


def test_linear_lr_closed_form_with_no_iterations_divides_floats_by_zero():
    opt = optim.SGD([nn.Parameter(ag.zeros(1))], lr=0.1)
    sched = lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=0)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter"), pytest.raises(
        ZeroDivisionError, match="^float division by zero$"
    ):
        sched.step(1)


def asgd_reference(start, grads, lr, lambd=1e-4, alpha=0.75):
    """ASGD's closed form in numpy: p *= 1 - lambd * eta; p -= eta * g; then eta = lr / (1 + lambd * lr * t)^alpha,
    kept as a float32 number (PyTorch's scalar state)."""
    p, eta = start.astype(np.float64), np.float32(lr)
    for t, g in enumerate(grads, start=1):
        p = p * (1 - lambd * float(eta)) - float(eta) * g
        eta = np.float32(lr / (1 + lambd * lr * t) ** alpha)
    return p, eta


@pytest.mark.parametrize("lr_dtype", [ag.int64, ag.float32])
def test_asgd_with_a_tensor_lr_keeps_a_float_step_size(lr_dtype):
    start = np.array([0.5, -1.0, 2.0], np.float32)
    grads = [np.array([0.3, -0.2, 0.1]) * k for k in (1, 2, 3)]
    p = nn.Parameter(ag.tensor(start))
    opt = optim.ASGD([p], lr=ag.tensor(1, dtype=lr_dtype))
    for g in grads:
        p.grad = ag.tensor(g.astype(np.float32))
        opt.step()
    expected, eta = asgd_reference(start, grads, 1.0)
    np.testing.assert_allclose(p.detach().numpy(), expected, rtol=1e-6, atol=1e-6)
    assert opt.state[p]["eta"].dtype == ag.float32
    np.testing.assert_allclose(opt.state[p]["eta"].item(), eta, rtol=1e-7)


@pytest.mark.gpu
def test_asgd_with_an_integer_tensor_lr_on_cuda(cupy):
    start = np.array([0.5, -1.0, 2.0], np.float32)
    grads = [np.array([0.3, -0.2, 0.1]) * k for k in (1, 2)]
    p = nn.Parameter(ag.tensor(start, device="cuda:0"))
    opt = optim.ASGD([p], lr=ag.tensor(1))
    for g in grads:
        p.grad = ag.tensor(g.astype(np.float32), device="cuda:0")
        opt.step()
    expected, _ = asgd_reference(start, grads, 1.0)
    np.testing.assert_allclose(p.detach().cpu().numpy(), expected, rtol=1e-6, atol=1e-6)
