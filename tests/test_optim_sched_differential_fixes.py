"""Optimizer and scheduler behaviours found to differ from PyTorch's by differential testing, each checked against an
independent computation: `load_state_dict` maps the saved ids to the parameters in order (keeping state under ids no
group names), shares no Tensor option with the dict it loads, and keeps a complex parameter's real counters real;
a copy or pickle of an optimizer leaves out a scheduler's `step` wrapper and the hooks, as PyTorch's `__getstate__`;
`lr_scheduler._LRScheduler` and `optimizer.required` are there for schedulers and optimizers written against
PyTorch's older API."""

import copy
import pickle

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn, optim
from actorgrad.optim import lr_scheduler
from actorgrad.optim.optimizer import required

rng = np.random.default_rng(5)
START = rng.normal(size=3) + 1j * rng.normal(size=3)
GRADS = [rng.normal(size=3) + 1j * rng.normal(size=3) for _ in range(6)]


def complex_run(name, options, device=None, reload_after=None):
    """Step a complex parameter through GRADS; with `reload_after`, continue in a fresh optimizer loaded from the
    first one's state dict after that many steps."""
    p = nn.Parameter(ag.tensor(START, device=device))
    opt = getattr(optim, name)([p], **options)
    for k, g in enumerate(GRADS):
        if k == reload_after:
            saved = opt.state_dict()
            opt = getattr(optim, name)([p], **options)
            opt.load_state_dict(saved)
        p.grad = ag.tensor(g, device=device)
        opt.step()
    return p, opt


@pytest.mark.parametrize("name, options, counters", [
    ("NAdam", dict(lr=0.05), ("step", "mu_product")),
    ("ASGD", dict(lr=0.05, t0=2), ("step", "eta", "mu")),
])
def test_a_complex_parameter_resumes_from_a_loaded_state_dict_as_if_never_interrupted(name, options, counters):
    """Loading casts state to a floating-point parameter's dtype only: a complex parameter's counters (NAdam's
    mu_product, ASGD's eta and mu) stay real 0-d tensors, so the run goes on exactly as the uninterrupted one."""
    straight, _ = complex_run(name, options)
    resumed, opt = complex_run(name, options, reload_after=3)
    np.testing.assert_array_equal(resumed.detach().numpy(), straight.detach().numpy())
    for key in counters:
        assert opt.state[resumed][key].dtype == ag.float32 and opt.state[resumed][key].shape == ()


def momentum_state(grads):
    """SGD(momentum) state after one step: each buffer is the gradient it was given."""
    params = [nn.Parameter(ag.zeros(len(g), dtype=ag.float64)) for g in grads]
    opt = optim.SGD(params, lr=0.1, momentum=0.9)
    for p, g in zip(params, grads):
        p.grad = ag.tensor(g)
    opt.step()
    return opt.state_dict()


def test_loading_maps_the_saved_ids_to_the_parameters_in_order_whatever_the_ids_are():
    grads = [np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])]
    saved = momentum_state(grads)
    saved["param_groups"][0]["params"] = [5, 7]
    saved["state"] = {5: saved["state"][0], 7: saved["state"][1]}
    params = [nn.Parameter(ag.zeros(2, dtype=ag.float64)), nn.Parameter(ag.zeros(3, dtype=ag.float64))]
    opt = optim.SGD(params, lr=0.1, momentum=0.9)
    opt.load_state_dict(saved)
    for p, g in zip(params, grads):
        np.testing.assert_array_equal(opt.state[p]["momentum_buffer"].numpy(), g)
    assert opt.state_dict()["param_groups"][0]["params"] == [0, 1]


def test_state_under_an_id_no_group_names_is_kept_as_it_is():
    saved = momentum_state([np.array([1.0, 2.0])])
    stray = {"note": "from elsewhere"}
    saved["state"]["extra"] = stray
    p = nn.Parameter(ag.zeros(2, dtype=ag.float64))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    opt.load_state_dict(saved)
    assert opt.state["extra"] is stray
    assert opt.state_dict()["state"]["extra"] is stray
    np.testing.assert_array_equal(opt.state[p]["momentum_buffer"].numpy(), [1.0, 2.0])
    p.grad = ag.tensor([1.0, 1.0], dtype=ag.float64)
    opt.step()  # the stray entry is no parameter and is left alone
    np.testing.assert_allclose(p.detach().numpy(), -0.1 * (0.9 * np.array([1.0, 2.0]) + 1.0), rtol=1e-15)


def test_a_loaded_tensor_lr_is_the_optimizers_own():
    """Two optimizers loaded from one state dict: a scheduler filling one's Tensor lr in place changes neither the
    other's nor the dict's."""
    source = optim.Adam([nn.Parameter(ag.ones(2))], lr=ag.tensor(0.5))
    saved = source.state_dict()
    first = optim.Adam([nn.Parameter(ag.ones(2))], lr=ag.tensor(0.1))
    second = optim.Adam([nn.Parameter(ag.ones(2))], lr=ag.tensor(0.1))
    first.load_state_dict(saved)
    second.load_state_dict(saved)
    scheduler = lr_scheduler.StepLR(first, step_size=1, gamma=0.25)
    first.step()
    scheduler.step()
    assert first.param_groups[0]["lr"].item() == 0.5 * 0.25
    assert second.param_groups[0]["lr"].item() == 0.5
    assert saved["param_groups"][0]["lr"].item() == 0.5
    assert source.param_groups[0]["lr"].item() == 0.5


def test_a_scheduler_written_against_the_older_name_LRScheduler_runs():
    class Halving(lr_scheduler._LRScheduler):
        def get_lr(self):
            return [base_lr * 0.5**self.last_epoch for base_lr in self.base_lrs]

    opt = optim.SGD([nn.Parameter(ag.ones(2))], lr=0.8)
    scheduler = Halving(opt)
    assert isinstance(scheduler, lr_scheduler.LRScheduler)
    for epoch in range(1, 4):
        opt.step()
        scheduler.step()
        assert scheduler.get_last_lr() == [0.8 / 2**epoch]
        assert opt.param_groups[0]["lr"] == 0.8 / 2**epoch


def test_a_copy_of_an_optimizer_a_scheduler_watches_steps_its_own_parameters():
    """The scheduler's wrapper of `step` belongs to the original: a deep copy steps its own parameters (p - lr g)
    and leaves the original's alone; the original's step having run is not copied either, so a scheduler made for
    the copy warns when it steps first."""
    p = nn.Parameter(ag.tensor([1.0, 2.0], dtype=ag.float64))
    opt = optim.SGD([p], lr=0.1)
    lr_scheduler.StepLR(opt, step_size=1)
    opt.step()
    twin = copy.deepcopy(opt)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        lr_scheduler.StepLR(twin, step_size=10).step()
    q = twin.param_groups[0]["params"][0]
    q.grad = ag.tensor([3.0, -1.0], dtype=ag.float64)
    twin.step()
    np.testing.assert_allclose(q.detach().numpy(), [1.0 - 0.3, 2.0 + 0.1], rtol=1e-15)
    np.testing.assert_array_equal(p.detach().numpy(), [1.0, 2.0])


def test_a_copied_optimizer_keeps_no_hooks_as_in_pytorch():
    calls = []
    opt = optim.SGD([nn.Parameter(ag.ones(2))], lr=0.1)
    opt.register_step_post_hook(lambda *args: calls.append("step"))
    opt.register_state_dict_pre_hook(lambda *args: calls.append("state_dict"))
    twin = copy.deepcopy(opt)
    twin.step()
    twin.state_dict()
    assert calls == []
    opt.step()
    assert calls == ["step"]


def test_a_scheduler_and_its_optimizer_pickle_and_go_on():
    opt = optim.SGD([nn.Parameter(ag.ones(2))], lr=0.8, momentum=0.5)
    scheduler = lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(3):
        opt.step()
        scheduler.step()
    restored = pickle.loads(pickle.dumps(scheduler))
    restored_opt = restored.optimizer
    assert restored_opt is not opt and restored.last_epoch == 3
    for _ in range(3):
        restored_opt.step()
        restored.step()
    assert restored.get_last_lr() == [0.8 * 0.5 ** (6 // 2)]
    assert restored_opt.param_groups[0]["lr"] == 0.8 * 0.5 ** (6 // 2)


def test_an_optimizer_written_with_required_options_refuses_a_group_without_them():
    """`optim.optimizer.required`, the default older custom optimizers give an option every group must set."""

    class PlainSGD(optim.Optimizer):
        def __init__(self, params, lr=required):
            super().__init__(params, dict(lr=lr))

        def step(self, closure=None):
            with ag.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        p -= group["lr"] * p.grad

    message = "parameter group didn't specify a value of required optimization parameter lr"
    with pytest.raises(ValueError, match=message):
        PlainSGD([nn.Parameter(ag.ones(2))])
    opt = PlainSGD([{"params": [nn.Parameter(ag.ones(2))], "lr": 0.5}])
    with pytest.raises(ValueError, match=message):
        opt.add_param_group({"params": [nn.Parameter(ag.ones(2))]})
    p = opt.param_groups[0]["params"][0]
    p.grad = ag.tensor([1.0, -2.0])
    opt.step()
    assert p.tolist() == [0.5, 2.0]
    assert repr(required) == "<required parameter>"


@pytest.mark.gpu
def test_a_complex_parameter_on_cuda_resumes_as_on_the_cpu(cupy):
    on_cpu, _ = complex_run("NAdam", dict(lr=0.05))
    on_gpu, opt = complex_run("NAdam", dict(lr=0.05), device="cuda:0", reload_after=3)
    assert opt.state[on_gpu]["exp_avg"].device == ag.device("cuda:0")
    assert opt.state[on_gpu]["mu_product"].dtype == ag.float32
    np.testing.assert_allclose(on_gpu.detach().cpu().numpy(), on_cpu.detach().numpy(), rtol=1e-12)
