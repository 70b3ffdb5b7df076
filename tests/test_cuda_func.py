"""actorgrad.func's transforms on CUDA: the cpu's numbers, with every result on cuda:0. Skipped when cupy or a
CUDA device is missing."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import func

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
if not cupy.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

RNG = np.random.default_rng(3)
X, W, T = RNG.uniform(0.5, 1.5, (4, 3)), RNG.uniform(0.5, 1.5, (3, 2)), RNG.uniform(0.5, 1.5, (4, 3))


def _f(x, w):
    return ag.tanh(x @ w).exp()


def _loss(w, xi):
    return (_f(xi.unsqueeze(0), w) ** 2).sum()


def _transforms(device):
    x, w, t = (ag.tensor(a, device=device) for a in (X, W, T))
    return {
        "grad": func.grad(lambda w: _f(x, w).sum())(w),
        "vjp": func.vjp(_f, x, w)[1](ag.ones(4, 2, dtype=ag.float64, device=device)),
        "jvp": func.jvp(lambda x: _f(x, w), (x,), (t,)),
        "jacrev": func.jacrev(_f, argnums=(0, 1))(x, w),
        "jacfwd": func.jacfwd(_f, argnums=1)(x, w),
        "hessian": func.hessian(lambda w: _f(x, w).sum())(w),
        "per_sample": func.vmap(func.grad(_loss), in_dims=(None, 0))(w, x),
    }


def test_transforms_give_the_cpus_numbers_on_cuda():
    on_cuda, on_cpu = _transforms("cuda"), _transforms("cpu")
    for name in on_cpu:
        got, expected = func.pytree.tree_flatten(on_cuda[name])[0], func.pytree.tree_flatten(on_cpu[name])[0]
        assert len(got) == len(expected), name
        for g, e in zip(got, expected):
            assert g.device is ag.device("cuda:0"), name
            np.testing.assert_allclose(g.cpu().numpy(), e.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
