"""Training on cuda:0: optimizers, their state and its saving, module state dicts and casts, initialisation,
layers built on the device and checkpointing give what the cpu gives, and their tensors stay on the device.
Skipped when cupy or a CUDA device is missing."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
from actorgrad.utils.checkpoint import checkpoint

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
if not cupy.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

RNG = np.random.default_rng(23)
W, B, X = RNG.normal(size=(2, 3)), RNG.normal(size=2), RNG.normal(size=(4, 3))

OPTIMIZERS = {
    "sgd with momentum, dampening and weight decay": lambda p: ag.optim.SGD(
        p, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01),
    "sgd nesterov, maximize": lambda p: ag.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, maximize=True),
    "adam amsgrad with weight decay": lambda p: ag.optim.Adam(p, lr=0.1, weight_decay=0.1, amsgrad=True),
    "adamw": lambda p: ag.optim.AdamW(p, lr=0.1),
}


def params(where):
    return [ag.tensor(a, dtype=ag.float64, device=where, requires_grad=True) for a in (W, B)]


def train(make, where, steps=3, opt=None, ps=None):
    ps = params(where) if ps is None else ps
    opt = make(ps) if opt is None else opt
    x = ag.tensor(X, dtype=ag.float64, device=where)
    for _ in range(steps):
        opt.zero_grad()
        ((x @ ps[0].T + ps[1]).tanh() ** 2).sum().backward()
        opt.step()
    return ps, opt


def host(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("make", OPTIMIZERS.values(), ids=OPTIMIZERS)
def test_an_optimizer_steps_on_cuda_as_on_the_cpu_and_keeps_its_state_there(make):
    want, want_opt = train(make, "cpu")
    got, got_opt = train(make, "cuda:0")
    for g, w in zip(got, want):
        assert g.device is ag.device("cuda:0")
        np.testing.assert_allclose(host(g), host(w), rtol=1e-10, atol=1e-12)
    for p, q in zip(got, want):
        for key, value in got_opt.state[p].items():
            if isinstance(value, ag.Tensor):  # Adam's step count stays a cpu scalar, as torch's
                assert value.device is ag.device("cpu" if key == "step" else "cuda:0"), key
                np.testing.assert_allclose(host(value), host(want_opt.state[q][key]), rtol=1e-10, atol=1e-12,
                                           err_msg=key)


@pytest.mark.parametrize("saved_on, loaded_on", [("cuda:0", "cpu"), ("cpu", "cuda:0")])
def test_optimizer_state_moves_to_the_parameters_it_is_loaded_for(saved_on, loaded_on):
    make = OPTIMIZERS["adam amsgrad with weight decay"]
    trained, saved = train(make, saved_on)
    state = saved.state_dict()
    ps = [ag.tensor(host(t), device=loaded_on, requires_grad=True) for t in trained]
    opt = make(ps)
    opt.load_state_dict(state)
    for p in ps:
        assert all(v.device is (ag.device("cpu") if k == "step" else p.device)
                   for k, v in opt.state[p].items() if isinstance(v, ag.Tensor))
    got, _ = train(make, loaded_on, steps=1, opt=opt, ps=ps)
    want, _ = train(make, saved_on, steps=4)
    for g, w in zip(got, want):
        np.testing.assert_allclose(host(g), host(w), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("source, target", [("cpu", "cuda:0"), ("cuda:0", "cpu"), ("cuda:0", "cuda:0")])
def test_a_module_state_dict_loads_onto_the_modules_device(source, target):
    ag.manual_seed(1)
    saved = nn.Linear(3, 2, dtype=ag.float64, device=source).state_dict()
    model = nn.Linear(3, 2, dtype=ag.float64, device=target)
    model.load_state_dict(saved)
    for name, p in model.named_parameters():
        assert p.device is ag.device(target)
        np.testing.assert_array_equal(host(p), host(saved[name]))
    model(ag.ones(1, 3, dtype=ag.float64, device=target)).sum().backward()


def test_casting_a_module_on_cuda_keeps_its_gradients_there():
    model = nn.Linear(2, 2, dtype=ag.float64, device="cuda")
    model(ag.ones(1, 2, dtype=ag.float64, device="cuda")).sum().backward()
    model.float()
    assert model.weight.grad.device is ag.device("cuda:0") and model.weight.grad.dtype == ag.float32
    assert (model.weight.detach() - model.weight.grad).device is ag.device("cuda:0")


@pytest.mark.parametrize("make", [
    lambda d: nn.Linear(5, 3, device=d), lambda d: nn.Conv2d(2, 3, 3, device=d),
    lambda d: nn.Embedding(6, 4, padding_idx=1, device=d),
])
def test_layers_built_on_cuda_draw_the_cpus_initial_weights(make):
    ag.manual_seed(7)
    want = make("cpu")
    ag.manual_seed(7)
    got = make("cuda:0")
    for (name, g), w in zip(got.named_parameters(), want.parameters()):
        assert g.device is ag.device("cuda:0"), name
        np.testing.assert_array_equal(host(g), host(w), err_msg=name)


@pytest.mark.parametrize("set_to_none", [False, True])
def test_zero_grad_on_cuda(set_to_none):
    (w, b) = params("cuda")
    opt = ag.optim.SGD([w, b], lr=0.1)
    (w.sum() + b.sum()).backward()
    opt.zero_grad(set_to_none=set_to_none)
    if set_to_none:
        assert w.grad is None
    else:
        assert w.grad.device is ag.device("cuda:0")
        np.testing.assert_array_equal(host(w.grad), 0)


def test_checkpointing_on_cuda_gives_the_gradients_of_the_plain_model():
    def block(h, w):
        return (h @ w).tanh() @ w.T

    def grads(use_checkpoint):
        w = ag.tensor(W.T, dtype=ag.float64, device="cuda", requires_grad=True)
        x = ag.tensor(X, dtype=ag.float64, device="cuda", requires_grad=True)
        out = checkpoint(block, x, w, use_reentrant=True) if use_checkpoint else block(x, w)
        (out ** 2).sum().backward()
        return [host(x.grad), host(w.grad)]

    for got, want in zip(grads(True), grads(False)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("grad_on, tensor_on, message", [
    ("cpu", "cuda", "with device type 'cpu' to a tensor with device type 'cuda'"),
    ("cuda", "cpu", "with device type 'cuda' to a tensor with device type 'cpu'"),
])
def test_a_gradient_assigned_from_another_device_is_refused(grad_on, tensor_on, message):
    t = ag.zeros(3, device=tensor_on, requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        t.grad = ag.ones(3, device=grad_on)
