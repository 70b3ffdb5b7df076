"""Reductions, scans, sorting and searching on special values (NaN, ±inf, ±0, ties), found by a generated comparison
with PyTorch. The inf-norm's gradient counts a NaN as one of the extreme elements, as PyTorch's mask does: a norm
that is NaN gives its elements sign(NaN) = 0 instead of spreading 0 / 0 = NaN over all of them."""

import math

import numpy as np
import pytest

import actorgrad as ag

NAN = math.nan


def inf_norm_grad(x, g, axis, largest=True):
    """The expected gradient, in numpy: per reduced slice, zeros where the slice holds a NaN, else g * sign(x)
    shared evenly by the elements of extreme magnitude."""
    magnitude = np.abs(x)
    extreme = (magnitude.max if largest else magnitude.min)(axis=axis, keepdims=True)
    mask = (magnitude == extreme).astype(x.dtype)
    with np.errstate(invalid="ignore"):
        share = np.expand_dims(g, axis) if axis is not None else g
        out = share * np.sign(x) * mask / mask.sum(axis=axis, keepdims=True)
    has_nan = np.isnan(x).any(axis=axis, keepdims=True)
    return np.where(has_nan, 0.0, out)


X = np.array([[1.5, NAN, -2.0], [-2.5, 3.0, 2.0], [0.5, -1.0, 1.0]])


@pytest.mark.parametrize("p", [math.inf, -math.inf])
def test_inf_norm_gradient_over_a_dim_is_zero_for_a_nan_slice(p):
    x = ag.tensor(X, requires_grad=True)
    g = np.array([0.7, -1.3, 2.1])
    out = ag.linalg.vector_norm(x, p, dim=0)
    (out * ag.tensor(g)).sum().backward()
    assert np.isnan(out.detach().numpy()[1])
    expected = inf_norm_grad(X, g, 0, largest=p > 0)
    assert np.array_equal(expected[:, 1], np.zeros(3))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-15)
    assert not np.isnan(x.grad.numpy()).any()


def test_inf_norm_gradient_over_all_elements_with_a_nan_is_zero():
    x = ag.tensor(X, requires_grad=True)
    ag.norm(x, math.inf).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 3)))


def test_inf_norm_gradient_with_a_nan_under_create_graph():
    x = ag.tensor(X, requires_grad=True)
    out = ag.linalg.vector_norm(x, math.inf, dim=1)
    (grad,) = ag.autograd.grad(out.sum(), x, create_graph=True)
    np.testing.assert_allclose(grad.detach().numpy(), inf_norm_grad(X, np.ones(3), 1), rtol=1e-15)
    assert grad.requires_grad


def test_inf_norm_ties_still_share_the_gradient_and_match_finite_differences():
    tied = np.array([[3.0, -3.0, 1.0], [0.5, 2.0, -1.0]])
    x = ag.tensor(tied, requires_grad=True)
    ag.linalg.vector_norm(x, math.inf, dim=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), inf_norm_grad(tied, np.ones(2), 1), rtol=1e-15)
    untied = ag.tensor([[0.3, -1.7, 0.9], [2.2, 0.4, -0.6]], dtype=ag.float64, requires_grad=True)
    assert ag.autograd.gradcheck(lambda t: ag.linalg.vector_norm(t, math.inf, dim=1), (untied,))


def test_pairwise_inf_distance_gradient_is_zero_for_a_nan_row():
    a = ag.tensor([[1.0, NAN], [0.0, 2.0]], requires_grad=True)
    b = ag.tensor([[0.0, 0.0], [1.0, -1.0]])
    out = ag.nn.functional.pairwise_distance(a, b, p=math.inf, eps=0.0)
    out.sum().backward()
    diff = a.detach().numpy() - b.numpy()
    np.testing.assert_allclose(a.grad.numpy(), inf_norm_grad(diff, np.ones(2), 1), rtol=1e-15)
    assert np.array_equal(a.grad.numpy()[0], [0.0, 0.0])


@pytest.mark.gpu
def test_inf_norm_gradient_with_a_nan_on_cuda(cupy):
    x = ag.tensor(X, device="cuda", requires_grad=True)
    g = np.array([0.7, -1.3, 2.1])
    (ag.linalg.vector_norm(x, math.inf, dim=0) * ag.tensor(g, device="cuda")).sum().backward()
    assert x.grad.device == ag.device("cuda:0")
    np.testing.assert_allclose(x.grad.cpu().numpy(), inf_norm_grad(X, g, 0), rtol=1e-15)
