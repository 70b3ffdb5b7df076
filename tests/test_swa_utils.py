"""`optim.swa_utils` (AveragedModel and its averaging functions, update_bn, SWALR) and `lr_scheduler.MultiplicativeLR`,
against the formulas of PyTorch's documentation computed in plain numpy / Python."""

import math
import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn, optim
from actorgrad.optim import lr_scheduler as L
from actorgrad.optim import swa_utils

rng = np.random.default_rng(3)
WEIGHTS = [rng.normal(size=(3, 2)) for _ in range(4)]
BATCHES = [rng.normal(size=(5, 2)) for _ in range(3)]


def model_at(model, weights):
    """Give the Linear of `model` these weights (and a bias from them), and run a batch so BatchNorm's buffers move."""
    with ag.no_grad():
        model[0].weight.copy_(ag.tensor(weights))
        model[0].bias.copy_(ag.tensor(weights[:, 0]))
    model(ag.tensor(BATCHES[0]))


def network():
    return nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)).double()


def averaged_over_weights(**options):
    model = network()
    averaged = swa_utils.AveragedModel(model, **options)
    for weights in WEIGHTS:
        model_at(model, weights)
        averaged.update_parameters(model)
    return model, averaged


# The multi-tensor function lerps by 1 / (n + 1) as a float32 tensor, as PyTorch's does: a mean to float32 rounding.
@pytest.mark.parametrize(("options", "rtol"), [
    ({}, 1e-14), ({"multi_avg_fn": swa_utils.get_swa_multi_avg_fn()}, 1e-7), ({"avg_fn": swa_utils.get_swa_avg_fn()},
                                                                             1e-14),
])
def test_the_default_average_is_the_mean_of_the_weights_seen(options, rtol):
    model, averaged = averaged_over_weights(**options)
    np.testing.assert_allclose(averaged.module[0].weight.detach().numpy(), np.mean(WEIGHTS, axis=0), rtol=rtol)
    np.testing.assert_allclose(averaged.module[0].bias.detach().numpy(), np.mean(WEIGHTS, axis=0)[:, 0], rtol=rtol)
    assert averaged.n_averaged.item() == 4 and averaged.n_averaged.dtype == ag.int64
    # Buffers are the model's latest, not averaged; the model itself is untouched.
    np.testing.assert_array_equal(averaged.module[1].running_mean.numpy(), model[1].running_mean.numpy())
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), WEIGHTS[-1])
    assert list(averaged.state_dict())[:2] == ["n_averaged", "module.0.weight"]


@pytest.mark.parametrize("multi", [True, False])
def test_ema_follows_its_recursion(multi):
    decay = 0.7
    make = swa_utils.get_ema_multi_avg_fn if multi else swa_utils.get_ema_avg_fn
    _, averaged = averaged_over_weights(**{"multi_avg_fn" if multi else "avg_fn": make(decay)})
    expected = WEIGHTS[0]
    for weights in WEIGHTS[1:]:
        expected = decay * expected + (1 - decay) * weights
    np.testing.assert_allclose(averaged.module[0].weight.detach().numpy(), expected, rtol=1e-14)


def test_use_buffers_averages_the_buffers_too():
    model = network()
    averaged = swa_utils.AveragedModel(model, use_buffers=True)
    means = []
    for weights in WEIGHTS:
        model_at(model, weights)
        means.append(model[1].running_mean.numpy().copy())
        averaged.update_parameters(model)
    np.testing.assert_allclose(averaged.module[1].running_mean.numpy(), np.mean(means, axis=0), rtol=1e-14)


def test_a_custom_average_and_calling_the_averaged_model():
    model = network().eval()
    averaged = swa_utils.AveragedModel(model, avg_fn=lambda avg, new, n: ag.maximum(avg, new))
    for weights in WEIGHTS:
        model_at(model, weights)
        averaged.update_parameters(model)
    np.testing.assert_array_equal(averaged.module[0].weight.detach().numpy(), np.max(WEIGHTS, axis=0))
    averaged.eval()
    x = ag.tensor(BATCHES[1])
    np.testing.assert_array_equal(averaged(x).detach().numpy(), averaged.module(x).detach().numpy())


def test_update_bn_recomputes_statistics_as_an_equal_weight_average_over_the_batches():
    model = network()
    _, averaged = averaged_over_weights()
    averaged.eval()
    swa_utils.update_bn([(ag.tensor(b), "label") for b in BATCHES], averaged)
    weight, bias = (t.detach().numpy() for t in (averaged.module[0].weight, averaged.module[0].bias))
    outputs = [b @ weight.T + bias for b in BATCHES]
    bn = averaged.module[1]
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([o.mean(0) for o in outputs], axis=0), rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), np.mean([o.var(0, ddof=1) for o in outputs], axis=0),
                               rtol=1e-12)
    assert bn.momentum == 0.1 and not averaged.training and bn.num_batches_tracked.item() == 3
    swa_utils.update_bn([ag.ones(2, 2)], nn.Linear(2, 2))  # no BatchNorm: nothing to do
    assert model[1].num_batches_tracked.item() == 0


def schedule(make, steps=12):
    p = nn.Parameter(ag.ones(1))
    opt = optim.SGD([{"params": [p]}, {"params": [nn.Parameter(ag.ones(1))], "lr": 0.05}], lr=0.1)
    scheduler = make(opt)
    lrs = [scheduler.get_last_lr()]
    for _ in range(steps):
        opt.step()
        scheduler.step()
        lrs.append(scheduler.get_last_lr())
    return lrs


@pytest.mark.parametrize(("strategy", "anneal"), [
    ("cos", lambda t: (1 - math.cos(math.pi * t)) / 2), ("linear", lambda t: t),
])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 5])
def test_swalr_anneals_from_the_starting_lr_to_swa_lr(strategy, anneal, anneal_epochs):
    swa_lrs = [0.01, 0.3]
    lrs = schedule(lambda opt: swa_utils.SWALR(opt, swa_lrs, anneal_epochs, strategy))
    for t, got in enumerate(lrs):
        steps = max(t, 1) if anneal_epochs == 0 else t
        alpha = anneal(min(1, steps / max(1, anneal_epochs)))
        expected = [s * alpha + lr0 * (1 - alpha) for s, lr0 in zip(swa_lrs, (0.1, 0.05))]
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_swalr_state_dict_round_trip_keeps_its_annealing():
    p = nn.Parameter(ag.ones(1))
    opt = optim.SGD([p], lr=0.1)
    scheduler = swa_utils.SWALR(opt, 0.01, anneal_epochs=4, anneal_strategy="linear")
    saved = scheduler.state_dict()
    assert "anneal_func" not in saved and saved["_anneal_strategy"] == "linear"
    other = swa_utils.SWALR(optim.SGD([nn.Parameter(ag.ones(1))], lr=0.1), 0.01)
    other.load_state_dict(saved)
    assert other.anneal_func(0.5) == 0.5


@pytest.mark.parametrize(("make", "error", "text"), [
    (lambda opt: swa_utils.SWALR(opt, 0.1, anneal_strategy="exp"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
    (lambda opt: swa_utils.SWALR(opt, 0.1, anneal_epochs=-1), ValueError,
     "anneal_epochs must be equal or greater than 0, got -1"),
    (lambda opt: swa_utils.SWALR(opt, [0.1, 0.2]), ValueError,
     "swa_lr must have the same length as optimizer.param_groups. swa_lr has 2 values, param_groups has 1."),
    (lambda opt: swa_utils.get_ema_avg_fn(1.5), ValueError,
     "Invalid decay value 1.5 provided. Please provide a value in [0,1] range."),
    (lambda opt: swa_utils.get_ema_multi_avg_fn(-0.1), ValueError, "Invalid decay value -0.1 provided."),
    (lambda opt: swa_utils.AveragedModel(nn.Linear(1, 1), avg_fn=max, multi_avg_fn=max), AssertionError,
     "Only one of avg_fn and multi_avg_fn should be provided"),
    (lambda opt: L.MultiplicativeLR(opt, 0.5), TypeError, "lr_lambda should be a function, but got float"),
    (lambda opt: L.MultiplicativeLR(opt, [abs, abs]), ValueError, "Expected 1 lr_lambdas, but got 2"),
])
def test_argument_errors(make, error, text):
    with pytest.raises(error, match=re.escape(text)):
        make(optim.SGD([nn.Parameter(ag.ones(1))], lr=0.1))


def test_multiplicative_lr_multiplies_by_each_epochs_factor():
    factors = [lambda e: 0.9 + 0.01 * e, lambda e: 1.1]
    lrs = schedule(lambda opt: L.MultiplicativeLR(opt, factors))
    for t, got in enumerate(lrs):
        expected = [lr0 * math.prod(f(e) for e in range(1, t + 1)) for f, lr0 in zip(factors, (0.1, 0.05))]
        np.testing.assert_allclose(got, expected, rtol=1e-13)


def test_multiplicative_lr_saves_a_callable_objects_state_but_not_a_function():
    class Factor:
        def __init__(self, value):
            self.value = value

        def __call__(self, epoch):
            return self.value

    opt = optim.SGD([{"params": [nn.Parameter(ag.ones(1))]}, {"params": [nn.Parameter(ag.ones(1))]}], lr=0.1)
    saved = L.MultiplicativeLR(opt, [Factor(0.5), lambda e: 0.9]).state_dict()
    assert saved["lr_lambdas"] == [{"value": 0.5}, None]
    other = L.MultiplicativeLR(opt, [Factor(0.7), lambda e: 0.9])
    other.load_state_dict(saved)
    assert other.lr_lambdas[0].value == 0.5


def test_get_lr_outside_step_warns():
    opt = optim.SGD([nn.Parameter(ag.ones(1))], lr=0.1)
    for scheduler in (L.MultiplicativeLR(opt, lambda e: 0.5), swa_utils.SWALR(opt, 0.01)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scheduler.get_lr()
        assert "please use `get_last_lr()`" in str(caught[0].message)


@pytest.mark.gpu
def test_an_averaged_model_on_cuda_averages_a_cpu_model():
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    model = network()
    averaged = swa_utils.AveragedModel(model, device=cuda)
    for weights in WEIGHTS:
        model_at(model, weights)
        averaged.update_parameters(model)
    assert averaged.module[0].weight.device == cuda and averaged.n_averaged.device == cuda
    np.testing.assert_allclose(averaged.module[0].weight.detach().cpu().numpy(), np.mean(WEIGHTS, axis=0),
                               rtol=1e-7)
