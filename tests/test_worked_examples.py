"""The issue's worked examples, through both the async API and the sync mirrors."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.ops.record import Rule, record


async def test_mul_add_sum_gives_each_leaf_the_other_factor():
    x = ag.tensor(2.0, requires_grad=True)
    w = ag.tensor(3.0, requires_grad=True)
    await ag.backward((x * w + 1).sum())
    assert x.grad.item() == 3.0
    assert w.grad.item() == 2.0


def test_two_paths_to_one_leaf_are_summed():
    x = ag.tensor(1.5, requires_grad=True)
    (x * 3 + x * 2).backward()
    assert x.grad.item() == 5.0


def test_same_tensor_twice_in_one_op_is_summed():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    (x + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


async def test_grad_returns_gradients_and_leaves_dot_grad_alone():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    z = (x * x).sum()
    (gx,) = await ag.grad(z, x)
    np.testing.assert_allclose(gx.numpy(), [2.0, 4.0])
    assert x.grad is None


def test_sync_grad_mirror_matches_async():
    x = ag.tensor([1.0, -2.0], requires_grad=True)
    (gx,) = ag.autograd.grad((x * x * x).sum(), [x])
    np.testing.assert_allclose(gx.numpy(), [3.0, 12.0])


async def test_later_passes_add_into_grad():
    x = ag.tensor(2.0, requires_grad=True)
    await ag.backward(x * 3)
    await ag.backward(x * 4)
    assert x.grad.item() == 7.0


async def test_retain_grad_keeps_a_non_leaf_gradient():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    assert y.retains_grad
    await ag.backward((y * y).sum())
    np.testing.assert_allclose(y.grad.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), [18.0, 36.0])


async def test_non_leaf_without_retain_grad_keeps_no_grad():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    await ag.backward(y.sum())
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert y.grad is None


async def test_explicit_gradient_for_a_non_scalar_output():
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    await ag.backward(x * 2, ag.tensor([1.0, 0.0, -1.0]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 0.0, -2.0])


async def test_create_graph_gives_second_derivatives():
    x = ag.tensor(np.array([0.5, -1.0]), requires_grad=True)
    (g,) = await ag.grad((x * x * x).sum(), x, create_graph=True)
    assert g.grad_fn is not None
    (gg,) = await ag.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * np.array([0.5, -1.0]))


async def test_backward_with_create_graph_leaves_a_differentiable_grad():
    x = ag.tensor(np.array([2.0]), requires_grad=True)
    await ag.backward((x * x * x).sum(), create_graph=True)
    assert x.grad.grad_fn is not None
    (gg,) = await ag.grad(x.grad.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [12.0])


@pytest.mark.parametrize("workers", [1, 2])
async def test_mlp_gradient_matches_hand_written_numpy(workers, num_workers):
    with num_workers(workers):
        rng = np.random.default_rng(0)
        xs, w1, w2 = rng.normal(size=(4, 5)), rng.normal(size=(5, 6)), rng.normal(size=(6, 3))
        onehot = np.eye(3)[[0, 2, 1, 0]]
        x, a, b = ag.tensor(xs), ag.tensor(w1, requires_grad=True), ag.tensor(w2, requires_grad=True)
        loss = -((x @ a).relu() @ b).log_softmax(1).mul(ag.tensor(onehot)).sum() / 4
        await ag.backward(loss)
        h = np.maximum(xs @ w1, 0)
        logits = h @ w2
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        dlogits = (p - onehot) / 4
        np.testing.assert_allclose(b.grad.numpy(), h.T @ dlogits, rtol=1e-10)
        np.testing.assert_allclose(a.grad.numpy(), xs.T @ ((dlogits @ w2.T) * (h > 0)), rtol=1e-10)


async def test_leaves_given_one_shared_gradient_array_get_independent_grads():
    x = ag.tensor(np.ones(3), requires_grad=True)
    y = ag.tensor(np.ones(3), requires_grad=True)
    await ag.backward((x + y).sum())  # AddBackward0 hands the same array to both leaves
    x.grad.numpy()[0] = 42.0
    assert y.grad.numpy()[0] == 1.0


async def test_a_missing_gradient_flows_on_as_none_without_error():
    x = ag.tensor(np.ones(3), requires_grad=True)
    y = record(Rule("NoGradBackward0", ((), lambda ops, g: None)), x._data * 2, (x,))
    await ag.backward((y.tanh() * 3).sum())
    assert x.grad is None
