"""Muon: each step against a numpy Muon written from the algorithm's description (momentum, Nesterov, the quintic
Newton-Schulz iteration in bfloat16 with Keller Jordan's coefficients, decoupled weight decay, the two learning-rate
adjustments), closed forms for the adjustments and the decay, the optimizer protocol (groups, state_dict, closures,
schedulers, Tensor lr), and PyTorch's refusals."""

import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn, optim

RNG = np.random.default_rng(17)
COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def _bfloat16(values):
    """Round to 8 significant bits (bfloat16's precision), ties to even, by frexp: m in [0.5, 1) has 8 bits in
    m * 256."""
    mantissa, exponent = np.frexp(np.asarray(values, np.float64))
    return np.ldexp(np.round(mantissa * 256) / 256, exponent).astype(np.float32)


def _newton_schulz(u, coefficients=COEFFICIENTS, steps=5, eps=1e-7):
    """X = u / max(|u|_F, eps) on u's wide orientation, then X <- a X + (b A + c A^2) X with A = X X^T, each
    kernel's result rounded to bfloat16 (products summed in float32)."""
    a, b, c = coefficients
    x = _bfloat16(u)
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    norm = _bfloat16(np.sqrt(np.sum(x * x, dtype=np.float32)))
    x = _bfloat16(x / _bfloat16(max(norm, eps)))
    for _ in range(steps):
        gram = _bfloat16(x @ x.T)
        x = _bfloat16(a * x + _bfloat16(b * gram + c * (gram @ gram)) @ x)
    return x.T if tall else x


def _numpy_muon(p, grads, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True, adjust_lr_fn=None, **ns):
    """The parameter after each step, from the algorithm's description."""
    rows, cols = p.shape
    ratio = {None: max(1, rows / cols) ** 0.5, "original": max(1, rows / cols) ** 0.5,
             "match_rms_adamw": 0.2 * max(rows, cols) ** 0.5}[adjust_lr_fn]
    buf = np.zeros_like(p)
    history = []
    for g in grads:
        buf = momentum * buf + (1 - momentum) * g
        update = g + momentum * (buf - g) if nesterov else buf
        p = p * (1 - lr * weight_decay) - lr * ratio * _newton_schulz(update, **ns).astype(p.dtype)
        history.append(p)
    return history


def _run(p0, grads, **options):
    param = nn.Parameter(ag.tensor(p0))
    opt = optim.Muon([param], **options)
    history = []
    for g in grads:
        param.grad = ag.tensor(g)
        opt.step()
        history.append(param.detach().numpy().copy())
    return history, param, opt


CASES = [
    ((4, 6), {}),
    ((6, 4), {}),
    ((16, 9), {"lr": 0.02, "weight_decay": 0.0}),
    ((5, 8), {"nesterov": False, "lr": 0.1, "weight_decay": 0.01, "adjust_lr_fn": "match_rms_adamw"}),
    ((8, 5), {"momentum": 0.3, "lr": 0.05, "ns_steps": 3, "ns_coefficients": (2.0, -1.5, 0.5), "eps": 1e-3}),
    ((1, 7), {"momentum": 0.0, "adjust_lr_fn": "original"}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, options", CASES)
def test_steps_follow_the_algorithm(dtype, shape, options):
    p0 = RNG.standard_normal(shape).astype(dtype)
    grads = [RNG.standard_normal(shape).astype(dtype) for _ in range(4)]
    got, param, _ = _run(p0, grads, **options)
    ns = {key: options[key] for key in ("ns_coefficients", "ns_steps", "eps") if key in options}
    if "ns_coefficients" in ns:
        ns["coefficients"] = ns.pop("ns_coefficients")
    if "ns_steps" in ns:
        ns["steps"] = ns.pop("ns_steps")
    rest = {key: value for key, value in options.items() if key not in ("ns_coefficients", "ns_steps", "eps")}
    for step, (actual, expected) in enumerate(zip(got, _numpy_muon(p0, grads, **rest, **ns))):
        np.testing.assert_allclose(actual, expected, rtol=1e-6 if dtype == np.float32 else 1e-13, err_msg=str(step))
    assert param.dtype == dtype


def test_the_orthogonalized_update_has_bfloat16_values_and_singular_values_near_one():
    """The quintic pushes every singular value into about [0.7, 1.2] (not exactly to 1, by design)."""
    g = RNG.standard_normal((12, 20))  # singular values from about 1 to 8
    param = nn.Parameter(ag.zeros(12, 20, dtype=ag.float64))
    opt = optim.Muon([param], lr=1.0, weight_decay=0.0, momentum=0.0)
    param.grad = ag.tensor(g)
    opt.step()
    update = -param.detach().numpy()
    np.testing.assert_array_equal(update, _bfloat16(update))
    singular = np.linalg.svd(update, compute_uv=False)
    assert 0.6 < singular.min() and singular.max() < 1.25


@pytest.mark.parametrize("shape, adjust_lr_fn, ratio", [
    ((8, 2), None, 2.0),  # sqrt(max(1, 8 / 2))
    ((2, 8), "original", 1.0),
    ((8, 2), "match_rms_adamw", 0.2 * 8**0.5),
    ((2, 8), "match_rms_adamw", 0.2 * 8**0.5),
])
def test_the_learning_rate_adjustments_scale_the_update(shape, adjust_lr_fn, ratio):
    g = RNG.standard_normal(shape)
    steps = {}
    for fn in (adjust_lr_fn, "none"):
        param = nn.Parameter(ag.zeros(shape, dtype=ag.float64))
        opt = optim.Muon([param], lr=0.5, weight_decay=0.0, momentum=0.0)
        opt.param_groups[0]["adjust_lr_fn"] = fn  # an unknown name in a group scales by 1, as in PyTorch
        param.grad = ag.tensor(g)
        opt.step()
        steps[fn] = param.detach().numpy()
    np.testing.assert_allclose(steps[adjust_lr_fn], ratio * steps["none"], rtol=1e-15)


def test_weight_decay_is_decoupled():
    """A zero gradient orthogonalizes to zero (its norm is clamped to eps), so only p *= 1 - lr * decay is left."""
    p0 = RNG.standard_normal((3, 4))
    got, _, _ = _run(p0, [np.zeros((3, 4))] * 2, lr=0.1, weight_decay=0.5)
    np.testing.assert_allclose(got[-1], p0 * 0.95 * 0.95, rtol=1e-15)


def test_groups_keep_their_own_options_and_state_dict_round_trips():
    a, b = (nn.Parameter(ag.tensor(RNG.standard_normal(s))) for s in ((3, 5), (4, 2)))
    opt = optim.Muon([{"params": [a]}, {"params": [b], "lr": 0.1, "nesterov": False}], lr=0.01)
    grads = [(RNG.standard_normal((3, 5)), RNG.standard_normal((4, 2))) for _ in range(4)]
    for ga, gb in grads[:2]:
        a.grad, b.grad = ag.tensor(ga), ag.tensor(gb)
        opt.step()
    saved = opt.state_dict()
    assert set(saved["state"][0]) == {"momentum_buffer"}
    assert [group["lr"] for group in saved["param_groups"]] == [0.01, 0.1]
    assert list(saved["param_groups"][0]) == [
        "lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps", "ns_steps", "adjust_lr_fn", "params",
    ]
    twins = [nn.Parameter(p.detach().clone()) for p in (a, b)]
    twin_opt = optim.Muon([{"params": [twins[0]]}, {"params": [twins[1]]}])
    twin_opt.load_state_dict(saved)
    for ga, gb in grads[2:]:
        for params, o in (((a, b), opt), (twins, twin_opt)):
            params[0].grad, params[1].grad = ag.tensor(ga), ag.tensor(gb)
            o.step()
    for p, twin in zip((a, b), twins):
        np.testing.assert_array_equal(twin.detach().numpy(), p.detach().numpy())


def test_closures_schedulers_and_tensor_learning_rates():
    p0, g = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3))
    param = nn.Parameter(ag.tensor(p0))
    opt = optim.Muon([param], lr=ag.tensor(0.2, dtype=ag.float64), weight_decay=0.0, momentum=0.0)
    scheduler = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

    def closure():
        param.grad = ag.tensor(g)
        return 7.0

    assert opt.step(closure) == 7.0
    scheduler.step()
    assert opt.step(closure) == 7.0
    direction = _newton_schulz(g).astype(np.float64)
    np.testing.assert_allclose(param.detach().numpy(), p0 - (0.2 + 0.1) * direction, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("make, text", [
    (lambda ps: optim.Muon(ps, lr=-1.0), "Learning rate should be >= 0 but is: -1.0"),
    (lambda ps: optim.Muon(ps, momentum=-0.5), "momentum should be >= 0 but is: -0.5"),
    (lambda ps: optim.Muon(ps, weight_decay=-0.1), "weight decay should be >= 0 but is: -0.1"),
    (lambda ps: optim.Muon(ps, adjust_lr_fn="rms"), "Adjust learning rate function rms is not supported"),
    (lambda ps: optim.Muon(ps, lr=ag.ones(2)), "Tensor lr must be 1-element"),
    (lambda ps: optim.Muon([nn.Parameter(ag.ones(3))]),
     "Muon only supports 2D parameters whereas we found a parameter with size: (3,)"),
])
def test_bad_options_and_parameters_are_refused(make, text):
    with pytest.raises(ValueError, match=re.escape(text)):
        make([nn.Parameter(ag.ones(2, 2))])


@pytest.mark.parametrize("options, error, text", [
    ({"ns_steps": 100}, ValueError, "Number of steps must be less than 100 for computational efficiency"),
    ({"ns_coefficients": (1.0, 2.0)}, ValueError, "Coefficients must be a tuple of exactly 3 values"),
])
def test_iteration_settings_are_checked_at_the_step(options, error, text):
    param = nn.Parameter(ag.ones(2, 2))
    opt = optim.Muon([param], **options)
    param.grad = ag.ones(2, 2)
    with pytest.raises(error, match=re.escape(text)):
        opt.step()


def test_complex_and_later_non_matrix_parameters_are_refused_at_the_step():
    z = nn.Parameter(ag.ones(2, 2, dtype=ag.complex128))
    opt = optim.Muon([z])
    z.grad = ag.ones(2, 2, dtype=ag.complex128)
    with pytest.raises(RuntimeError, match="Muon does not support complex parameters"):
        opt.step()
    vector = nn.Parameter(ag.ones(3))
    opt = optim.Muon([nn.Parameter(ag.ones(2, 2))])
    opt.add_param_group({"params": [vector]})  # as in PyTorch, only the constructor looks at shapes
    vector.grad = ag.ones(3)
    with pytest.raises(ValueError, match="Param gradient must be a 2D matrix"):
        opt.step()


@pytest.mark.gpu
def test_cuda_parameters_step_as_cpu_ones(cupy):
    p0 = RNG.standard_normal((5, 7)).astype(np.float32)
    grads = [RNG.standard_normal((5, 7)).astype(np.float32) for _ in range(3)]
    cuda = ag.device("cuda:0")
    param = nn.Parameter(ag.tensor(p0, device=cuda))
    opt = optim.Muon([param], lr=0.02)
    for g in grads:
        param.grad = ag.tensor(g, device=cuda)
        opt.step()
    assert opt.state[param]["momentum_buffer"].device == cuda
    expected, _, _ = _run(p0, grads, lr=0.02)
    np.testing.assert_allclose(param.detach().cpu().numpy(), expected[-1], rtol=1e-6)
