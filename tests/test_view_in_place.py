"""The in-place view methods (squeeze_, unsqueeze_, transpose_, t_, swapaxes_, swapdims_): the tensor takes its
view's shape, its history gains the view's node, its version goes up; leaves that require grad are refused."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(11)
CHANGES = {
    "squeeze_": (lambda t: t.squeeze_(), (2, 1, 3), (2, 3)),
    "squeeze_ one dim": (lambda t: t.squeeze_(1), (2, 1, 1), (2, 1)),
    "unsqueeze_": (lambda t: t.unsqueeze_(-1), (2, 3), (2, 3, 1)),
    "transpose_": (lambda t: t.transpose_(0, 2), (2, 3, 4), (4, 3, 2)),
    "t_": (lambda t: t.t_(), (2, 3), (3, 2)),
    "swapaxes_": (lambda t: t.swapaxes_(0, 1), (2, 3), (3, 2)),
    "swapdims_": (lambda t: t.swapdims_(1, 0), (2, 3), (3, 2)),
}


@pytest.mark.parametrize("name", list(CHANGES))
def test_the_tensor_becomes_its_view(name):
    change, before, after = CHANGES[name]
    data = RNG.standard_normal(before)
    x = ag.tensor(data)
    kept = x[0]  # a view made before keeps its shape
    assert change(x) is x
    assert x.shape == after and x._version == 1 and kept.shape == before[1:]
    expected = data.transpose(2, 1, 0) if name == "transpose_" else data.T if data.ndim == 2 and "squeeze" not in name \
        else data.reshape(after)
    np.testing.assert_array_equal(x.numpy(), expected)
    assert np.shares_memory(x.numpy(), kept.numpy())


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_non_leaf_gets_the_views_history(name):
    change, before, _ = CHANGES[name]
    leaf = ag.tensor(RNG.standard_normal(before), requires_grad=True)

    def f(t):
        y = t * 2
        change(y)
        return y * y

    assert gradcheck(f, (leaf,))
    assert gradgradcheck(f, (leaf,))
    y = leaf * 2
    old = y.grad_fn
    change(y)
    assert y.grad_fn is not old and y.grad_fn.next_functions[0][0] is old


def test_a_view_changed_in_place_keeps_its_base():
    leaf = ag.tensor(RNG.standard_normal((2, 1)), requires_grad=True)
    y = leaf * 1
    v = y.view(2, 1)
    v.squeeze_()
    assert v.shape == (2,) and v._base is y and y.shape == (2, 1)
    v.mul_(3)  # a write through the changed view still reaches the base
    y.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [[3.0], [3.0]])


def test_leaves_that_require_grad_are_refused_unless_grad_mode_is_off():
    x = ag.ones(2, 1, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x.squeeze_()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x.view(2, 1).t_()
    with ag.no_grad():
        x.unsqueeze_(0)
    assert x.shape == (1, 2, 1) and x.is_leaf


def test_errors():
    with pytest.raises(RuntimeError, match=r"t_\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        ag.ones(2, 3, 4).t_()
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)"):
        ag.ones(2, 3).transpose_(0, 5)
    one = ag.ones(3)
    assert one.t_() is one and one.shape == (3,)


@pytest.mark.gpu
def test_on_cuda_the_view_changes_are_the_cpus(cupy):
    data = RNG.standard_normal((2, 1, 3))
    grads = []
    for device in ("cpu", "cuda"):
        leaf = ag.tensor(data, requires_grad=True, device=device)
        y = leaf * 2
        y.squeeze_().t_().unsqueeze_(0)
        assert y.shape == (1, 3, 2) and y.device == leaf.device
        (y * y).sum().backward()
        grads.append(leaf.grad.cpu().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
