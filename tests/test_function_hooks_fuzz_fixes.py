"""Custom Functions and backward hooks: the defects a generated comparison against PyTorch found.

A zero-dim gradient reaches a hook or a custom backward as a tensor it may change in place (`g.mul_(2)`),
as it does for any other shape; a custom backward returning something that is not a tensor gets PyTorch's error;
a Function applied under no_grad returns an input it changed in place (mark_dirty) as a tensor without history
when the input requires grad; a node's post hooks see the gradient a custom backward returned for an input that
needs none.
"""

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import graph


def scalar_leaf(value=0.75):
    return ag.tensor(value, dtype=ag.float64, requires_grad=True)


class DoubleInPlace(ag.autograd.Function):
    """Identity forward; backward doubles its gradient in place and returns it."""

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        g.mul_(2)
        return g


@pytest.mark.parametrize("shape", [(), (3,)])
def test_a_custom_backward_may_change_its_gradient_in_place_whatever_its_shape(shape):
    x = ag.tensor(np.full(shape, 0.5), requires_grad=True)
    (DoubleInPlace.apply(x.exp()) * 0.25).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(shape, 2 * 0.25 * math.exp(0.5)))


def test_a_tensor_hook_may_double_a_zero_dim_gradient_in_place():
    x = scalar_leaf()
    y = x.exp()
    y.register_hook(lambda g: g.mul_(2))
    (y * 0.5).backward()
    np.testing.assert_allclose(x.grad.numpy(), math.exp(0.75))  # 0.5 * 2 * exp(x)


def test_a_leaf_hook_may_clamp_a_zero_dim_gradient_in_place():
    x = scalar_leaf()
    x.register_hook(lambda g: g.clamp_(max=1.0))
    (x * 3).backward()
    assert x.grad.item() == 1.0


def test_a_node_prehook_may_change_a_zero_dim_gradient_in_place():
    x = scalar_leaf()
    y = x.exp()
    y.grad_fn.register_prehook(lambda grads: grads[0].mul_(3) and None)
    (y * 2).backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * math.exp(0.75))


def test_a_multi_grad_hook_gets_zero_dim_gradients_as_writable_tensors():
    x = scalar_leaf()
    y, z = x.exp(), x * 4
    seen = []
    graph.register_multi_grad_hook([y, z], lambda grads: seen.append([g.add_(0).item() for g in grads]))
    (y * 2 + z * 3).backward()
    np.testing.assert_allclose(seen, [[2.0, 3.0]])
    np.testing.assert_allclose(x.grad.numpy(), 2 * math.exp(0.75) + 12)


def test_a_zero_dim_gradient_doubled_in_place_doubles_only_its_path():
    x = ag.tensor(0.4, dtype=ag.float64, requires_grad=True)
    (DoubleInPlace.apply(x.sin()) * x).backward()
    h = 1e-6
    central = ((math.sin(0.4 + h) * (0.4 + h)) - (math.sin(0.4 - h) * (0.4 - h))) / (2 * h)
    # d/dx [sin(x) x] = cos(x) x + sin(x); the custom backward doubles the first term, which runs through it
    np.testing.assert_allclose(x.grad.numpy(), central + math.cos(0.4) * 0.4, rtol=1e-6)


@pytest.mark.parametrize("bad", [[1.0], 3, "g"])
def test_a_custom_backward_returning_a_non_tensor_gets_pytorchs_error(bad):
    class Bad(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x + 1

        @staticmethod
        def backward(ctx, g):
            return bad

    x = ag.tensor([1.0, 2.0], requires_grad=True)
    kind = type(bad).__name__
    with pytest.raises(RuntimeError, match=rf"^expected Variable or None \(got {kind}\): .*BadBackward"):
        Bad.apply(x).sum().backward()
    assert x.grad is None


@pytest.mark.parametrize("bad", [7, "g"])
def test_a_non_tensor_gradient_for_an_input_that_needs_none_is_refused_too(bad):
    class Bad(ag.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g, bad

    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=rf"^expected Variable or None \(got {type(bad).__name__}\)"):
        Bad.apply(x, ag.tensor([3.0, 4.0])).sum().backward()


@pytest.mark.parametrize("leaf", [True, False])
def test_under_no_grad_a_dirty_input_that_requires_grad_comes_back_without_history(leaf, doubled):
    a = ag.ones(3, requires_grad=True)
    x = a if leaf else a.clone()
    history = x.grad_fn
    with ag.no_grad():
        y = doubled.apply(x)
    assert y is not x and not y.requires_grad and y.grad_fn is None and y.is_leaf
    assert x.grad_fn is history and x.requires_grad  # the input keeps its own history
    np.testing.assert_array_equal(y.numpy(), [2.0, 2.0, 2.0])
    assert y._version == x._version == 2  # one counter: the alias sees later changes to x
    x.detach().add_(1)
    np.testing.assert_array_equal(y.numpy(), [3.0, 3.0, 3.0])


def test_a_dirty_input_that_needs_no_grad_comes_back_as_itself(doubled):
    x = ag.ones(3)
    assert doubled.apply(x) is x
    with ag.no_grad():
        assert doubled.apply(x) is x
    np.testing.assert_array_equal(x.numpy(), [4.0, 4.0, 4.0])


class Weighted(ag.autograd.Function):
    """x * y, whose backward computes both gradients whatever needs_input_grad says."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, g * x


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
@pytest.mark.parametrize("create_graph", [False, True])
def test_post_hooks_see_the_gradient_returned_for_an_input_that_needs_none(create_graph):
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    c = ag.tensor([3.0, 5.0])
    out = Weighted.apply(x, c)
    seen = []
    out.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append([g.tolist() for g in grad_inputs]))
    out.backward(ag.tensor([1.0, 10.0]), create_graph=create_graph)
    assert seen == [[[3.0, 50.0], [1.0, 20.0]]]  # d/dx = g * c, d/dc = g * x (which goes nowhere)
    np.testing.assert_array_equal(x.grad.detach().numpy(), [3.0, 50.0])
    assert c.grad is None


def test_a_post_hook_may_replace_the_gradient_of_an_input_that_needs_none_without_effect():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    c = ag.tensor([3.0, 5.0])
    out = Weighted.apply(c, x)
    out.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * 100, grad_inputs[1] * 2))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 10.0])
    assert c.grad is None


@pytest.mark.gpu
def test_gpu_a_custom_backward_and_a_hook_change_a_zero_dim_gradient_in_place(cupy):
    x = ag.tensor(0.5, dtype=ag.float64, device="cuda", requires_grad=True)
    y = x.exp()
    y.register_hook(lambda g: g.mul_(2))
    (DoubleInPlace.apply(y) * 0.25).backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 4 * 0.25 * math.exp(0.5))
