"""torch.func's stack_module_state (ensembles with vmap and functional_call), replace_all_batch_norm_modules_ and
functionalize (f's outputs and input changes, on copies), and nn.utils' transfer_parametrizations_and_params and the
memory-format conversions."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
from actorgrad.func import functional_call, functionalize, replace_all_batch_norm_modules_, stack_module_state, vmap
from actorgrad.nn.utils import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from actorgrad.nn.utils import parametrize as P


def test_stack_module_state_stacks_parameters_as_new_leaves_and_buffers():
    models = [nn.BatchNorm1d(3) for _ in range(4)]
    for i, m in enumerate(models):
        with ag.no_grad():
            m.weight.fill_(i)
            m.running_mean.fill_(10 + i)
    params, buffers = stack_module_state(models)
    assert list(params) == ["weight", "bias"]
    assert list(buffers) == ["running_mean", "running_var", "num_batches_tracked"]
    assert params["weight"].shape == (4, 3) and params["weight"].is_leaf and params["weight"].requires_grad
    assert params["weight"][:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert buffers["running_mean"][:, 1].tolist() == [10.0, 11.0, 12.0, 13.0]
    assert buffers["num_batches_tracked"].dtype == ag.int64 and not buffers["running_var"].requires_grad
    params["weight"].sum().backward()
    assert models[0].weight.grad is None  # unrelated to the models' own parameters


def test_stacked_state_runs_an_ensemble_with_vmap_and_functional_call():
    models = [nn.Linear(3, 2).double() for _ in range(3)]
    params, buffers = stack_module_state(models)
    x = ag.tensor(np.random.default_rng(0).normal(size=(5, 3)))
    out = vmap(lambda p, b, x: functional_call(models[0], (p, b), (x,)), (0, 0, None))(params, buffers, x)
    want = np.stack([m(x).detach().numpy() for m in models])
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-12)


def test_stack_module_state_refuses_what_pytorch_refuses():
    with pytest.raises(RuntimeError, match="^stack_module_state: Expected at least one model, got 0.$"):
        stack_module_state([])
    with pytest.raises(RuntimeError, match="Expected all models to be of the same class"):
        stack_module_state([nn.Linear(2, 2), nn.ReLU()])
    with pytest.raises(RuntimeError, match="Expected all models to have the same training/eval mode"):
        stack_module_state([nn.Linear(2, 2), nn.Linear(2, 2).eval()])
    frozen = nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(RuntimeError, match="^Expected weight from each model to have the same .requires_grad$"):
        stack_module_state([frozen, nn.Linear(2, 2)])


def test_replace_all_batch_norm_modules_drops_running_statistics():
    root = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2), nn.InstanceNorm1d(2, track_running_stats=True))
    assert replace_all_batch_norm_modules_(root) is root
    bn = root[1]
    assert bn.running_mean is None and bn.running_var is None and bn.num_batches_tracked is None
    assert not bn.track_running_stats and root[2].track_running_stats  # instance norm untouched, as PyTorch's
    x = ag.tensor([[1.0, 2.0], [3.0, 6.0]])
    np.testing.assert_allclose(bn.eval()(x).detach().numpy(), [[-1.0, -1.0], [1.0, 1.0]], atol=1e-3)


def test_functionalize_gives_fs_outputs_and_input_changes_with_new_output_tensors():
    def f(a, b):
        a.add_(b)
        view = a[:1]
        view.mul_(2)
        return a * 3, b

    x, y = ag.tensor([1.0, 2.0]), ag.tensor([10.0, 20.0])
    out, same = functionalize(f)(x, y)
    assert x.tolist() == [22.0, 22.0] and y.tolist() == [10.0, 20.0]
    assert out.tolist() == [66.0, 66.0] and same is not y and same.tolist() == y.tolist()
    assert functionalize(f, remove="mutations_and_views").__name__ == "f"
    with pytest.raises(RuntimeError, match="received invalid argument for remove=x. Valid options are:"):
        functionalize(f, remove="x")


def test_functionalize_keeps_gradients_flowing_to_the_inputs():
    w = ag.tensor([1.0, 2.0], requires_grad=True)

    def f(w):
        t = w * 1
        t.pow_(2)
        return t.sum()

    functionalize(f)(w).backward()
    assert w.grad.tolist() == [2.0, 4.0]


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).t()


def test_transfer_parametrizations_and_params_shares_the_originals():
    source = nn.Linear(3, 3)
    P.register_parametrization(source, "weight", Symmetric())
    target = P.transfer_parametrizations_and_params(source, nn.Linear(3, 3))
    assert P.is_parametrized(target, "weight")
    np.testing.assert_array_equal(target.weight.detach().numpy(), source.weight.detach().numpy())
    with ag.no_grad():
        source.parametrizations.weight.original.add_(1)  # shared, as PyTorch's set_
    np.testing.assert_array_equal(target.weight.detach().numpy(), source.weight.detach().numpy())
    bare = P.transfer_parametrizations_and_params(source, nn.Module(), "weight")
    assert bare.weight.shape == (3, 3) and P.is_parametrized(bare, "weight")
    plain = nn.Linear(2, 2)
    assert P.transfer_parametrizations_and_params(nn.Linear(2, 2), plain) is plain and not P.is_parametrized(plain)


def test_memory_format_conversions_return_the_module_unchanged():
    m = nn.Sequential(nn.Conv2d(1, 2, 3))
    weight = m[0].weight.detach().numpy().copy()
    assert convert_conv2d_weight_memory_format(m, "channels_last") is m
    assert convert_conv3d_weight_memory_format(m, "channels_last_3d") is m
    np.testing.assert_array_equal(m[0].weight.detach().numpy(), weight)
