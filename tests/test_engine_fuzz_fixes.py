"""Engine rules a fuzz-differential review against PyTorch found broken: what a failed batched grad() frees, the
non-leaf `.grad` warning, how a retained non-leaf gradient accumulates, and when create_graph's once-per-process
warning is given. Expected values are closed forms."""

import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings


def leaf(values, dtype=ag.float64):
    return ag.tensor(values, dtype=dtype, requires_grad=True)


# -- a batched grad() that fails its unused-input check frees what its passes ran -----------------------------
def test_a_batched_grad_failing_on_an_unused_input_frees_the_graph_it_ran():
    x, unused = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    y = (x * x).sin()  # both nodes save their inputs
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not have been used"):
        ag.autograd.grad(y, [x, unused], ag.ones((2, 2), dtype=ag.float64), is_grads_batched=True)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.sum().backward()


def test_a_batched_grad_failing_on_an_unused_input_keeps_the_nodes_it_did_not_run():
    x, z, unused = leaf([1.0, 2.0]), leaf([0.5, 0.25]), leaf([3.0])
    y = (x * x).sin() + z  # the pass for z runs only AddBackward0: the product and the sine keep their values
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not have been used"):
        ag.autograd.grad(y, [z, unused], ag.ones((2, 2), dtype=ag.float64), is_grads_batched=True)
    y.sum().backward()
    values = np.array([1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), np.cos(values * values) * 2 * values, rtol=1e-15)
    assert z.grad.tolist() == [1.0, 1.0]


def test_a_batched_grad_failing_on_an_unused_input_keeps_the_graph_when_asked_to():
    x, unused = leaf([1.0, 2.0]), leaf([3.0])
    y = (x * x).sin()
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        ag.autograd.grad(y, [x, unused], ag.ones((2, 2), dtype=ag.float64), is_grads_batched=True,
                         retain_graph=True)
    y.sum().backward()
    assert x.grad is not None


# -- reading .grad of a non-leaf -------------------------------------------------------------------------------
def test_reading_the_grad_a_non_leaf_was_given_does_not_warn():
    y = leaf([1.0, 2.0]) * 2
    with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf Tensor"):
        assert y.grad is None
    y.grad = ag.ones(2, dtype=ag.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.grad.tolist() == [1.0, 1.0]


# -- a retained non-leaf gradient accumulates into a new tensor ------------------------------------------------
def test_a_retained_gradient_is_replaced_by_the_sum_and_an_old_reference_keeps_its_values():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    y.retain_grad()
    loss = (y * y).sum()  # d loss / d y = 2 y = 4 x
    loss.backward(retain_graph=True)
    first, first_leaf_grad = y.grad, x.grad
    loss.backward()
    assert first.tolist() == [4.0, 8.0, 12.0]
    assert y.grad is not first and y.grad.tolist() == [8.0, 16.0, 24.0]
    assert x.grad is first_leaf_grad and x.grad.tolist() == [16.0, 32.0, 48.0]  # a leaf's: in place


def test_a_plain_pass_after_a_create_graph_pass_leaves_a_retained_gradient_without_a_graph():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    loss = (y * y).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_graph's reference-cycle warning
        loss.backward(retain_graph=True, create_graph=True)
    recorded = y.grad
    assert recorded.requires_grad
    loss.backward()
    assert not y.grad.requires_grad and y.grad.grad_fn is None
    assert y.grad.tolist() == [12.0, 24.0] and recorded.tolist() == [6.0, 12.0]


def test_a_retained_zero_dim_gradient_stays_a_zero_dim_tensor_as_it_accumulates():
    x = leaf(2.0)
    y = x * x
    y.retain_grad()
    loss = y * 5
    loss.backward(retain_graph=True)
    loss.backward()
    assert type(y.grad._data) is np.ndarray and y.grad.shape == () and y.grad.item() == 10.0
    y.grad.add_(1.0)  # an array, so it can be changed in place
    assert y.grad.item() == 11.0


@pytest.mark.gpu
def test_a_retained_gradient_on_cuda_accumulates_into_a_new_device_tensor(cupy):
    x = ag.tensor([1.0, 2.0], dtype=ag.float64, device="cuda:0", requires_grad=True)
    y = x * x
    y.retain_grad()
    scalar = y.sum()
    scalar.retain_grad()
    loss = scalar * 3
    loss.backward(retain_graph=True)
    first = y.grad
    loss.backward()
    assert isinstance(y.grad._data, cupy.ndarray) and y.grad.device == x.device
    assert y.grad is not first and y.grad.tolist() == [6.0, 6.0] and first.tolist() == [3.0, 3.0]
    assert isinstance(scalar.grad._data, cupy.ndarray) and scalar.grad.shape == () and scalar.grad.item() == 6.0


# -- create_graph's once-per-process warning -------------------------------------------------------------------
def test_a_refused_create_graph_backward_does_not_use_up_the_reference_cycle_warning(monkeypatch):
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    x = leaf([1.0, 2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
            (x * 2).sum().backward(create_graph=True, inputs=[ag.ones(2)])
        with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty"):
            (x * 2).sum().backward(create_graph=True, inputs=[])
    assert caught == []
    with pytest.warns(UserWarning, match="Using backward\\(\\) with create_graph=True will create a reference cycle"):
        (x * 2).sum().backward(create_graph=True)
