"""Optimizer behaviours found to differ from PyTorch's by fuzzing random hyperparameters, groups, gradients and state
dicts against it, each checked against an independent computation: a 0-d complex parameter is updated as its
(re, im) pair step after step; a parameter keeps its layout (transposed, channels-last); `fused=True` is taken (the
same update, with PyTorch's checks of it); SGD checks `value < 0` (so takes a NaN); every optimizer reads a Tensor
weight_decay as its number; ASGD's `eta` follows a Tensor lr's dtype; Adam refuses Tensor betas in a foreach group at
the step."""

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn, optim

rng = np.random.default_rng(11)
GRADS = [complex(*rng.normal(size=2)) for _ in range(5)]
START = complex(*rng.normal(size=2))

COMPLEX_RUNS = [
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("Adam", dict(lr=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.1)),
    ("Adamax", dict(lr=0.1)),
    ("NAdam", dict(lr=0.1)),
    ("RAdam", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1)),
    ("Adadelta", dict(lr=0.5)),
    ("RMSprop", dict(lr=0.1, momentum=0.5, centered=True)),
    ("Rprop", dict(lr=0.1)),
    ("ASGD", dict(lr=0.1, t0=2)),
]


def run(name, options, start, grads, device=None):
    p = nn.Parameter(ag.tensor(start, device=device))
    opt = getattr(optim, name)([p], **options)
    for g in grads:
        p.grad = ag.tensor(g, device=device)
        opt.step()
    return p, opt


@pytest.mark.parametrize("name, options", COMPLEX_RUNS)
def test_a_zero_dim_complex_parameter_is_updated_as_its_real_pair_at_every_step(name, options):
    # PyTorch updates a complex parameter as its (re, im) view: the same run on a real pair is the reference.
    p, opt = run(name, options, np.array(START), [np.array(g) for g in GRADS])
    pair, _ = run(name, options, np.array([START.real, START.imag]), [np.array([g.real, g.imag]) for g in GRADS])
    assert p.shape == ()
    np.testing.assert_array_equal(p.detach().numpy(), pair.detach().numpy()[0] + 1j * pair.detach().numpy()[1])
    assert all(v.shape == () for v in opt.state[p].values())


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "LBFGS"])
def test_a_transposed_or_channels_last_parameter_keeps_its_layout_through_the_update(name):
    base = np.arange(6.0).reshape(3, 2)
    grad = np.array([[1.0, -2.0, 3.0], [0.5, 0.25, -1.0]])
    p = nn.Parameter(ag.tensor(base).t())
    opt = getattr(optim, name)([p], lr=0.1)
    p.grad = ag.tensor(grad)
    opt.step(lambda: 1.0) if name == "LBFGS" else opt.step()
    assert p.stride() == (1, 2) and not p.is_contiguous()
    assert all(v.stride() == (1, 2) for v in opt.state[p].values() if isinstance(v, ag.Tensor) and v.dim() == 2)
    if name == "SGD":
        np.testing.assert_array_equal(p.detach().numpy(), base.T - 0.1 * grad)
    x = nn.Parameter(ag.randn(2, 3, 4, 5).to(memory_format=ag.channels_last))
    opt = getattr(optim, name)([x], lr=0.1)
    x.grad = ag.ones(2, 3, 4, 5)
    opt.step(lambda: 1.0) if name == "LBFGS" else opt.step()
    assert x.is_contiguous(memory_format=ag.channels_last)


# -- fused=True: PyTorch's CPU and CUDA kernels, the same update here --------------------------------------------------
def one_step(name, **options):
    p = nn.Parameter(ag.tensor([1.0, -2.0], dtype=ag.float64))
    opt = getattr(optim, name)([p], lr=0.1, **options)
    p.grad = ag.tensor([0.5, 0.25], dtype=ag.float64)
    opt.step()
    return p.detach().numpy()


# AdamW's first step: p (1 - lr wd) - lr g / (|g| + eps).
ADAMW_STEP = [1.0 * (1 - 0.1 * 0.01) - 0.1 * 0.5 / (0.5 + 1e-8), -2.0 * (1 - 0.1 * 0.01) - 0.1 * 0.25 / (0.25 + 1e-8)]


@pytest.mark.parametrize("name, expected", [
    ("SGD", [1.0 - 0.1 * 0.5, -2.0 - 0.1 * 0.25]),
    # Adam's first step moves each coordinate by lr * g / (|g| + eps).
    ("Adam", [1.0 - 0.1 * 0.5 / (0.5 + 1e-8), -2.0 - 0.1 * 0.25 / (0.25 + 1e-8)]),
    ("AdamW", ADAMW_STEP),
    # Adagrad's first step: lr * g / (sqrt(g^2) + eps).
    ("Adagrad", [1.0 - 0.1 * 0.5 / (0.5 + 1e-10), -2.0 - 0.1 * 0.25 / (0.25 + 1e-10)]),
])
def test_fused_is_taken_and_runs_the_same_update(name, expected):
    np.testing.assert_allclose(one_step(name, fused=True), expected, rtol=1e-14)
    assert optim.Adam([nn.Parameter(ag.ones(1))], fused=True).param_groups[0]["fused"] is True


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_gets_pytorchs_checks(name):
    params = [nn.Parameter(ag.ones(2))]
    with pytest.raises(RuntimeError, match="^`fused` and `foreach` cannot be `True` together.$"):
        getattr(optim, name)(params, fused=True, foreach=True)
    with pytest.raises(RuntimeError, match="^`fused` does not support `differentiable`$"):
        getattr(optim, name)(params, fused=True, differentiable=True)
    # A group's own foreach does not clash with the constructor's fused: PyTorch runs the fused kernel.
    getattr(optim, name)([{"params": params, "foreach": True}], fused=True)
    z = nn.Parameter(ag.ones(2, dtype=ag.complex64))
    opt = getattr(optim, name)([params[0], z], fused=True)
    params[0].grad, z.grad = ag.ones(2), ag.ones(2, dtype=ag.complex64)
    with pytest.raises(RuntimeError, match="^`fused=True` requires all the params to be floating point Tensors"):
        opt.step()
    assert params[0].tolist() == [1.0, 1.0]  # refused before any update


def test_capturable_and_differentiable_are_still_refused():
    for option in ("capturable", "differentiable"):
        with pytest.raises(ValueError, match=f"do not support {option}=True"):
            optim.Adam([nn.Parameter(ag.ones(1))], **{option: True})


# -- SGD's own checks and a Tensor weight_decay ------------------------------------------------------------------------
def test_sgd_takes_a_nan_as_pytorchs_sgd_does_and_refuses_negative_values():
    p = nn.Parameter(ag.tensor([1.0, 2.0]))
    opt = optim.SGD([p], lr=math.nan)
    p.grad = ag.ones(2)
    opt.step()
    assert np.isnan(p.detach().numpy()).all()
    optim.SGD([p], lr=0.1, momentum=math.nan, weight_decay=math.nan)
    for name, text in [("lr", "learning rate"), ("momentum", "momentum value"), ("weight_decay", "weight_decay value")]:
        with pytest.raises(ValueError, match=f"^Invalid {text}: -0.5$"):
            optim.SGD([p], **{"lr": 0.1, name: -0.5})
    with pytest.raises(ValueError, match="^Invalid learning rate: nan$"):
        optim.Adam([p], lr=math.nan)


ETA = float(np.float32(0.1))


@pytest.mark.parametrize("name, expected", [
    # With g' = g + wd p = (1, -0.75): SGD p - lr g'; Adam's first step p - lr g' / (|g'| + eps); RMSprop's
    # p - lr g' / (sqrt((1 - alpha) g'^2) + eps).
    ("SGD", [1.0 - 0.1 * 1.0, -2.0 + 0.1 * 0.75]),
    ("Adam", [1.0 - 0.1 * 1.0 / (1.0 + 1e-8), -2.0 + 0.1 * 0.75 / (0.75 + 1e-8)]),
    ("RMSprop", [1.0 - 0.1 * 1.0 / (math.sqrt(0.01 * 1.0) + 1e-8),
                 -2.0 + 0.1 * 0.75 / (math.sqrt(0.01 * 0.5625) + 1e-8)]),
    # ASGD: p (1 - lambd eta) - eta g', eta the lr kept as a float32 tensor.
    ("ASGD", [1.0 * (1 - 1e-4 * ETA) - ETA * 1.0, -2.0 * (1 - 1e-4 * ETA) + ETA * 0.75]),
    # Adafactor decays p itself, p (1 - lr wd), and its first step on a vector is lr rms(p) sign(g).
    ("Adafactor", [1.0 * 0.95 - 0.1 * math.sqrt(2.5), -2.0 * 0.95 - 0.1 * math.sqrt(2.5)]),
])
def test_a_tensor_weight_decay_is_read_as_its_number(name, expected):
    got = one_step(name, weight_decay=ag.tensor(0.5, dtype=ag.float64))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


# -- ASGD's eta with a Tensor lr -------------------------------------------------------------------------------------
def test_asgd_eta_follows_a_float64_tensor_lr_once_loaded_for_a_float64_parameter():
    lr, lambd, alpha = 0.3, 0.1, 0.75
    p = nn.Parameter(ag.tensor([1.0, -1.0], dtype=ag.float64))
    options = dict(lr=ag.tensor(lr, dtype=ag.float64), lambd=lambd, alpha=alpha)
    opt = optim.ASGD([p], **options)
    p.grad = ag.ones(2, dtype=ag.float64)
    opt.step()
    fresh = optim.ASGD([p], **options)
    fresh.load_state_dict(opt.state_dict())  # state made float64, as the parameter
    fresh.step()
    # Computed from a float64 Tensor, eta is not rounded to float32 (as it is from a Python lr).
    assert fresh.state[p]["eta"].item() == lr / (1 + lambd * lr * 2) ** alpha
    number_lr = optim.ASGD([p], lr=lr, lambd=lambd, alpha=alpha)
    number_lr.load_state_dict(fresh.state_dict())
    number_lr.param_groups[0]["lr"] = lr  # the loaded group's lr was the Tensor
    number_lr.step()
    assert number_lr.state[p]["eta"].item() == float(np.float32(lr / (1 + lambd * lr * 3) ** alpha))


# -- Adam: Tensor betas in a foreach group -----------------------------------------------------------------------------
def test_adam_refuses_tensor_betas_in_a_foreach_group_at_the_step_unless_fused():
    first, added = nn.Parameter(ag.ones(2)), nn.Parameter(ag.ones(2))
    opt = optim.Adam([first], foreach=True)
    opt.add_param_group({"params": [added], "betas": (ag.tensor(0.9), ag.tensor(0.999))})
    first.grad, added.grad = ag.ones(2), ag.ones(2)
    with pytest.raises(ValueError, match="^beta1 as a Tensor is not supported for capturable=False and foreach=True$"):
        opt.step()
    assert added.tolist() == [1.0, 1.0]
    fused = optim.Adam([first], fused=True)
    fused.add_param_group({"params": [added], "betas": (ag.tensor(0.9), ag.tensor(0.999)), "foreach": True})
    fused.step()
    np.testing.assert_allclose(added.detach().numpy(), 1.0 - 1e-3, rtol=1e-6)


@pytest.mark.gpu
def test_a_zero_dim_complex_parameter_on_cuda_and_fused_adam(cupy):
    for name, options in COMPLEX_RUNS[:2]:
        on_cpu, _ = run(name, options, np.array(START), [np.array(g) for g in GRADS])
        on_gpu, opt = run(name, options, np.array(START), [np.array(g) for g in GRADS], device="cuda:0")
        assert on_gpu.shape == () and opt.state[on_gpu]["exp_avg" if name == "Adam" else "momentum_buffer"].shape == ()
        np.testing.assert_allclose(on_gpu.detach().cpu().numpy(), on_cpu.detach().numpy(), rtol=1e-12)
    p = nn.Parameter(ag.tensor([1.0, -2.0], dtype=ag.float64, device="cuda:0"))
    opt = optim.AdamW([p], lr=0.1, fused=True)
    p.grad = ag.tensor([0.5, 0.25], dtype=ag.float64, device="cuda:0")
    opt.step()
    np.testing.assert_allclose(p.detach().cpu().numpy(), ADAMW_STEP, rtol=1e-14)
