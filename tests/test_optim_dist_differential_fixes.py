"""Behaviours found to differ from PyTorch's by differential testing, each checked against an independent
computation: complex parameters updated as their real (re, im) view, tensor learning rates that schedulers fill in
place, `named_parameters()` groups ("param_names"), and PyTorch's RuntimeError for parameters that do not
broadcast in distributions."""

import math
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn, optim
from actorgrad.distributions import Categorical, MultivariateNormal, Normal
from actorgrad.distributions.transforms import AffineTransform
from actorgrad.optim import lr_scheduler

rng = np.random.default_rng(11)
START = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
GRADS = [rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3)) for _ in range(5)]


def pairs(z: np.ndarray) -> np.ndarray:
    """A complex array as (re, im) pairs along a new last dim."""
    return np.stack([z.real, z.imag], axis=-1)


def run_complex(name, options, device=None, steps=5):
    p = nn.Parameter(ag.tensor(START, device=device))
    opt = getattr(optim, name)([p], **options)
    for g in GRADS[:steps]:
        p.grad = ag.tensor(g, device=device)
        opt.step()
    return p, opt


def run_pairs(name, options, steps=5):
    """The same run on a real parameter holding the (re, im) pairs: what PyTorch's view_as_real update does."""
    p = nn.Parameter(ag.tensor(pairs(START)))
    opt = getattr(optim, name)([p], **options)
    for g in GRADS[:steps]:
        p.grad = ag.tensor(pairs(g))
        opt.step()
    return p, opt


# -- complex parameters ---------------------------------------------------------------------------------------------
def test_adam_updates_a_complex_parameter_as_its_real_and_imaginary_parts():
    """Adam's documented rule run on (re, im) pairs in numpy: v averages re^2 and im^2, not the complex g*g."""
    lr, (b1, b2), eps = 0.01, (0.9, 0.999), 1e-8
    theta, m, v = pairs(START), np.zeros((2, 3, 2)), np.zeros((2, 3, 2))
    for t, g in enumerate(GRADS, 1):
        g = pairs(g)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        theta = theta - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    p, opt = run_complex("Adam", dict(lr=lr))
    np.testing.assert_allclose(p.detach().numpy(), theta[..., 0] + 1j * theta[..., 1], rtol=1e-12, atol=1e-13)
    state = opt.state[p]
    assert state["exp_avg_sq"].dtype == ag.complex128 and state["exp_avg_sq"].shape == (2, 3)
    np.testing.assert_allclose(state["exp_avg_sq"].numpy(), v[..., 0] + 1j * v[..., 1], rtol=1e-12)


@pytest.mark.parametrize("name, options", [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, decoupled_weight_decay=True, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.6))),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1)),
    ("Adadelta", dict(lr=0.5, rho=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True)),
    ("Rprop", dict(lr=0.01)),
    ("ASGD", dict(lr=0.01, t0=2)),
])
def test_a_complex_parameter_follows_the_run_on_its_real_pairs(name, options):
    p, opt = run_complex(name, options)
    on_pairs, opt_on_pairs = run_pairs(name, options)
    expected = on_pairs.detach().numpy()
    np.testing.assert_allclose(p.detach().numpy(), expected[..., 0] + 1j * expected[..., 1], rtol=1e-12, atol=1e-13)
    expected_state = opt_on_pairs.state[on_pairs]
    assert set(opt.state[p]) == set(expected_state)
    for key, value in opt.state[p].items():  # per-element state stays complex, in the parameter's shape
        if isinstance(value, ag.Tensor) and value.ndim:
            assert value.dtype == ag.complex128 and value.shape == p.shape
            want = expected_state[key].numpy()
            np.testing.assert_allclose(value.numpy(), want[..., 0] + 1j * want[..., 1], rtol=1e-12, atol=1e-13)


def test_adagrad_starts_both_parts_of_a_complex_sum_at_the_initial_value():
    lr, init, eps = 0.1, 0.5, 1e-10
    p, opt = run_complex("Adagrad", dict(lr=lr, initial_accumulator_value=init), steps=1)
    g = pairs(GRADS[0])
    expected = pairs(START) - lr * g / (np.sqrt(init + g * g) + eps)
    np.testing.assert_allclose(p.detach().numpy(), expected[..., 0] + 1j * expected[..., 1], rtol=1e-12)
    fresh = optim.Adagrad([nn.Parameter(ag.tensor(START))], initial_accumulator_value=init)
    np.testing.assert_array_equal(next(iter(fresh.state.values()))["sum"].numpy(), np.full((2, 3), init + init * 1j))


def test_state_held_by_the_caller_follows_complex_steps():
    p, opt = run_complex("SGD", dict(lr=0.1, momentum=0.5), steps=1)
    buffer = opt.state[p]["momentum_buffer"]
    p.grad = ag.tensor(GRADS[1])
    opt.step()
    np.testing.assert_allclose(buffer.numpy(), 0.5 * GRADS[0] + GRADS[1], rtol=1e-14)
    assert opt.state[p]["momentum_buffer"] is buffer


def test_lbfgs_minimises_over_a_complex_parameter_as_over_its_real_pairs():
    """The loss sum((x - t)^4) over every real number: once on a complex parameter's parts, once on the pairs."""
    target = rng.normal(size=3) + 1j * rng.normal(size=3)

    def minimise(start, loss_of):
        p = nn.Parameter(ag.tensor(start))
        opt = optim.LBFGS([p], lr=0.5, max_iter=4)

        def closure():
            opt.zero_grad()
            loss = loss_of(p)
            loss.backward()
            return loss

        for _ in range(2):
            opt.step(closure)
        return p.detach().numpy()

    goal, goal_pairs = ag.tensor(target), ag.tensor(pairs(target))
    on_pairs = minimise(pairs(START[0]), lambda p: ((p - goal_pairs) ** 4).sum())
    on_parts = minimise(START[0], lambda p: ((ag.real(p) - ag.real(goal)) ** 4).sum()
                        + ((ag.imag(p) - ag.imag(goal)) ** 4).sum())
    np.testing.assert_allclose(on_parts, on_pairs[..., 0] + 1j * on_pairs[..., 1], rtol=1e-10, atol=1e-12)


def test_adafactor_refuses_complex_parameters_before_updating_the_group():
    real = nn.Parameter(ag.ones(2, dtype=ag.float64))
    cplx = nn.Parameter(ag.tensor(START))
    opt = optim.Adafactor([real, cplx])
    real.grad, cplx.grad = ag.ones(2, dtype=ag.float64), ag.tensor(GRADS[0])
    with pytest.raises(RuntimeError, match="^Adafactor does not support complex parameters$"):
        opt.step()
    np.testing.assert_array_equal(real.detach().numpy(), np.ones(2))


@pytest.mark.gpu
def test_a_complex_parameter_steps_on_cuda_as_on_the_cpu(cupy):
    on_gpu, opt = run_complex("Adam", dict(lr=0.01, amsgrad=True), device="cuda:0")
    on_cpu, _ = run_complex("Adam", dict(lr=0.01, amsgrad=True))
    assert opt.state[on_gpu]["exp_avg"].device == ag.device("cuda:0")
    np.testing.assert_allclose(on_gpu.detach().cpu().numpy(), on_cpu.detach().numpy(), rtol=1e-12)


# -- tensor learning rates under schedulers -----------------------------------------------------------------------
def sgd_with_tensor_lr(lr=0.1):
    lr_tensor = ag.tensor(lr, dtype=ag.float64)
    opt = optim.SGD([nn.Parameter(ag.zeros(2))], lr=lr_tensor, momentum=0.9)
    return opt, lr_tensor


@pytest.mark.parametrize("make, step, lr_after_two", [
    (lambda o: lr_scheduler.StepLR(o, step_size=1, gamma=0.5), (), 0.1 * 0.25),
    (lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="linear"), (),
     0.04 + 2 * (1.0 - 0.04) / 2),  # linear warm-up from max_lr / 25 to max_lr over pct_start * 10 - 1 = 2 steps
    (lambda o: lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4), (), 0.01 + 0.09 * 2 / 4),
    (lambda o: lr_scheduler.ReduceLROnPlateau(o, patience=0, factor=0.5), (1.0,), 0.1 * 0.5),
    (lambda o: lr_scheduler.SequentialLR(o, [lr_scheduler.ConstantLR(o, factor=0.5, total_iters=1),
                                            lr_scheduler.ExponentialLR(o, gamma=0.5)], milestones=[1]), (), 0.1 * 0.5),
])
def test_a_scheduler_fills_a_tensor_lr_in_place(make, step, lr_after_two):
    opt, lr = sgd_with_tensor_lr()
    scheduler = make(opt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ReduceLROnPlateau's first value counts as no improvement
        for _ in range(2):
            opt.step()
            scheduler.step(*step)
    assert opt.param_groups[0]["lr"] is lr
    assert math.isclose(lr.item(), lr_after_two, rel_tol=1e-12)


def test_scheduler_records_do_not_alias_the_tensor_lr():
    opt, lr = sgd_with_tensor_lr()
    scheduler = lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    initial, base, last = opt.param_groups[0]["initial_lr"], scheduler.base_lrs[0], scheduler.get_last_lr()[0]
    assert initial is not lr and base is not lr and last is not lr
    opt.step()
    scheduler.step()
    assert (initial.item(), base.item(), last.item()) == (0.1, 0.1, 0.1)
    assert lr.item() == 0.05 and scheduler.get_last_lr()[0].item() == 0.05


# -- named parameters ---------------------------------------------------------------------------------------------
def test_named_parameters_give_groups_their_param_names():
    model = nn.Linear(2, 1)
    opt = optim.Adam(model.named_parameters(), lr=0.1)
    group = opt.param_groups[0]
    assert list(group)[:3] == ["params", "param_names", "lr"]
    assert group["param_names"] == ["weight", "bias"] and group["params"] == [model.weight, model.bias]
    saved = opt.state_dict()["param_groups"][0]
    assert saved["param_names"] == ["weight", "bias"] and list(saved)[-1] == "params" and saved["params"] == [0, 1]
    opt.add_param_group({"params": [("extra", nn.Parameter(ag.zeros(1)))], "lr": 0.5})
    assert opt.param_groups[1]["param_names"] == ["extra"] and opt.param_groups[1]["lr"] == 0.5


def test_groups_with_and_without_names_do_not_mix():
    opt = optim.SGD(nn.Linear(2, 1).named_parameters(), lr=0.1)
    with pytest.raises(ValueError, match="^all optimizer param groups should be with/without names. cannot add "
                                         "param group without names to the optimizer$"):
        opt.add_param_group({"params": [nn.Parameter(ag.zeros(1))]})
    with pytest.raises(ValueError, match="^all optimizer params should be with/without names. Some param names "
                                         "are missing$"):
        opt.add_param_group({"params": [("a", nn.Parameter(ag.zeros(1))), nn.Parameter(ag.zeros(1))]})
    unnamed = optim.SGD([nn.Parameter(ag.zeros(1))], lr=0.1)
    with pytest.raises(ValueError, match="cannot add param group with names to the optimizer$"):
        unnamed.add_param_group({"params": [("a", nn.Parameter(ag.zeros(1)))]})


def test_loading_keeps_the_current_names_where_the_saved_groups_have_none():
    model = nn.Linear(2, 1)
    named = optim.Adam(model.named_parameters(), lr=0.2)
    named.load_state_dict(optim.Adam(model.parameters(), lr=0.3).state_dict())
    assert named.param_groups[0]["param_names"] == ["weight", "bias"] and named.param_groups[0]["lr"] == 0.3
    unnamed = optim.Adam(model.parameters(), lr=0.2)
    unnamed.load_state_dict(optim.Adam(model.named_parameters(), lr=0.3).state_dict())
    assert unnamed.param_groups[0]["param_names"] == ["weight", "bias"]


def test_a_group_added_after_loading_gets_differentiable():
    opt = optim.Adafactor([nn.Parameter(ag.zeros(2))])
    assert "differentiable" not in opt.param_groups[0]
    opt.load_state_dict(opt.state_dict())
    opt.add_param_group({"params": [nn.Parameter(ag.zeros(1))]})
    assert opt.param_groups[1]["differentiable"] is False


# -- distributions: parameters and values that do not broadcast ---------------------------------------------------
def test_distribution_parameters_that_do_not_broadcast_raise_pytorchs_runtime_error():
    message = "^The size of tensor a \\(3\\) must match the size of tensor b \\(2\\) at non-singleton dimension 0$"
    with pytest.raises(RuntimeError, match=message):
        Normal(ag.zeros(3), ag.ones(2))
    with pytest.raises(RuntimeError, match="^The size of tensor a \\(3\\) must match the size of tensor b \\(2\\)"):
        Categorical(ag.full((2, 2), 0.5), validate_args=False).log_prob(ag.tensor([1, 0, 1]))


def test_batch_shapes_that_do_not_broadcast_raise_pytorchs_broadcast_shapes_error():
    with pytest.raises(RuntimeError, match="^Attempting to broadcast a dimension of length 3 at -1! Mismatching "
                                           "argument at index 1 had \\(3,\\); but expected shape should be "
                                           "broadcastable to \\[2\\]$"):
        MultivariateNormal(ag.zeros(3, 2), ag.eye(2).expand(2, 2, 2))
    with pytest.raises(RuntimeError, match="^Attempting to broadcast a dimension of length 3 at -1!"):
        AffineTransform(ag.zeros(3), ag.ones(3)).forward_shape((4,))


# -- optimizer hooks ----------------------------------------------------------------------------------------------
def test_step_hooks_run_in_pytorchs_order_and_can_replace_the_arguments():
    calls = []
    p = nn.Parameter(ag.ones(2, dtype=ag.float64))
    opt = optim.SGD([p], lr=0.1)
    p.grad = ag.ones(2, dtype=ag.float64)
    global_pre = optim.optimizer.register_optimizer_step_pre_hook(lambda o, args, kwargs: calls.append("global pre"))
    global_post = optim.optimizer.register_optimizer_step_post_hook(lambda o, args, kwargs: calls.append("global post"))
    try:
        opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
        post = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", o is opt, len(args))))
        opt.step()
        assert calls == ["global pre", "pre", ("post", True, 1), "global post"]
        post.remove()
        opt.register_step_pre_hook(lambda o, args, kwargs: (args, {"closure": lambda: 5.0}))
        assert opt.step() == 5.0 and calls[-1] == "global post" and ("post", True, 1) not in calls[4:]
    finally:
        global_pre.remove()
        global_post.remove()
    np.testing.assert_array_equal(p.detach().numpy(), [0.8, 0.8])  # two steps of lr * grad
    opt.register_step_pre_hook(lambda o, args, kwargs: 3)
    with pytest.raises(RuntimeError, match="must return None or a tuple of \\(new_args, new_kwargs\\), but got 3.$"):
        opt.step()


def test_lbfgs_own_step_runs_the_hooks_too():
    seen = []
    p = nn.Parameter(ag.ones(2, dtype=ag.float64))
    opt = optim.LBFGS([p], max_iter=1)
    opt.register_step_post_hook(lambda o, args, kwargs: seen.append(len(args)))

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    opt.step(closure)
    assert seen == [2]


def test_state_dict_hooks_see_and_may_replace_what_is_saved_and_loaded():
    calls = []
    p = nn.Parameter(ag.ones(2, dtype=ag.float64))
    opt = optim.Adam([p], lr=0.1)
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_state_dict_pre_hook(lambda o: calls.append("first"), prepend=True)
    opt.register_state_dict_post_hook(lambda o, saved: {**saved, "extra": 1})
    saved = opt.state_dict()
    assert calls == ["first", "pre"] and set(saved) == {"state", "param_groups", "extra"}

    def drop_extra(o, state_dict):
        calls.append(sorted(state_dict))
        return {k: v for k, v in state_dict.items() if k != "extra"}

    opt.register_load_state_dict_pre_hook(drop_extra)
    opt.register_load_state_dict_post_hook(lambda o: calls.append(("loaded", o.param_groups[0]["lr"])))
    saved["param_groups"][0]["lr"] = 0.7
    opt.load_state_dict(saved)
    assert calls[2:] == [["extra", "param_groups", "state"], ("loaded", 0.7)] and "extra" in saved


@pytest.mark.parametrize("make", [optim.Adam, optim.AdamW])
def test_adam_refuses_a_tensor_lr_with_foreach_as_pytorch_does(make):
    p = nn.Parameter(ag.zeros(2))
    with pytest.raises(ValueError, match="^lr as a Tensor is not supported for capturable=False and foreach=True$"):
        make([p], lr=ag.tensor([0.1, 0.2]), foreach=True)  # checked before the lr's size, as in PyTorch
    assert make([p], lr=ag.tensor(0.1), foreach=False).param_groups[0]["foreach"] is False


def test_adam_refuses_tensor_betas_with_foreach_and_a_tensor_lr_group_added_later():
    p, q = nn.Parameter(ag.zeros(2)), nn.Parameter(ag.zeros(2))
    with pytest.raises(ValueError, match="^betas\\[0\\] as a Tensor is not supported for capturable=False and "
                                         "foreach=True$"):
        optim.Adam([p], betas=(ag.tensor(0.9), ag.tensor(0.99)), foreach=True)
    opt = optim.Adam([p], foreach=True)
    opt.add_param_group({"params": [q], "lr": ag.tensor(0.1)})
    q.grad = ag.ones(2)
    with pytest.raises(RuntimeError, match="^lr as a Tensor is not supported for capturable=False and foreach=True$"):
        opt.step()


def test_a_param_that_is_no_tensor_is_named_with_its_module():
    p = nn.Parameter(ag.zeros(2))
    with pytest.raises(TypeError, match="^optimizer can only optimize Tensors, but one of the params is "
                                        "numpy.ndarray$"):
        optim.SGD([p, np.zeros(1)])
    with pytest.raises(TypeError, match="but one of the params is int$"):
        optim.SGD([p, 3])
