"""The graph API and activation checkpointing: the defects a generated comparison against PyTorch found.

nn.Linear's AddmmBackward0 has its edges in PyTorch's order (bias, input, weight), so the tutorials' walk
`out.grad_fn.next_functions[0][0]` reaches the bias's AccumulateGrad; EmbeddingBackward0 has one edge, the
weight's (the indices have none). `grad()` and `backward()` take gradient edges among their outputs. A node hook
(pre or post) that returns None in its tuple drops that gradient (a tensor hook's None still keeps it). A node's
repr names CopySlices by its type's name. `register_multi_grad_hook` in mode "any" leaves out the tensors that do
not require grad (mode "all" refuses them with PyTorch's AssertionError). A non-reentrant checkpoint refuses to
rerun its segment on an input changed in place after the call, instead of giving the gradient of the new values.
A view whose shape an in-place view method (t_, unsqueeze_ ...) changed in no_grad mode reads its history afresh
out of its base's (AsStridedBackward0), as PyTorch regenerates it, instead of sending its gradient to the places
of its old shape.
"""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import graph
from actorgrad.utils.checkpoint import checkpoint

X = np.array([[0.3, -0.7, 1.1], [0.9, 0.2, -0.4]])
W = np.array([[0.5, -0.2, 0.8], [0.1, 0.6, -0.3], [-0.7, 0.4, 0.2]])


def test_multi_grad_hook_any_leaves_out_a_tensor_that_does_not_require_grad():
    x = ag.tensor(X, requires_grad=True)
    constant = ag.tensor(X)
    seen = []
    graph.register_multi_grad_hook([constant, x], lambda g: seen.append(g.numpy().copy()), mode="any")
    (x * 3.0 + constant).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], np.full(X.shape, 3.0))


def test_multi_grad_hook_all_refuses_a_tensor_that_does_not_require_grad():
    x = ag.tensor(X, requires_grad=True)
    with pytest.raises(AssertionError, match="^Expected gradient function to be set$"):
        graph.register_multi_grad_hook([x, ag.tensor(X)], print, mode="all")


def test_linear_with_bias_has_addmm_edges_bias_input_weight():
    lin = ag.nn.Linear(3, 2).double()
    x = ag.tensor(X, requires_grad=True)
    h = x * 1.0
    node = lin(h).grad_fn
    assert node.name() == "AddmmBackward0"
    (bias_edge, input_edge, weight_edge) = node.next_functions
    assert bias_edge[0].variable is lin.bias
    assert input_edge == (h.grad_fn, 0)
    assert weight_edge[0].variable is lin.weight
    assert lin(ag.tensor(X)).grad_fn.next_functions[1] == (None, 0)


def test_linear_gradients_with_reordered_edges():
    x = ag.tensor(X, requires_grad=True)
    w = ag.tensor(W[:2], requires_grad=True)
    b = ag.tensor([0.25, -0.5], dtype=ag.float64, requires_grad=True)
    g = np.array([[1.0, -2.0], [0.5, 3.0]])
    (ag.nn.functional.linear(x, w, b) * ag.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), g @ W[:2], rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), g.T @ X, rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), g.sum(0), rtol=1e-12)
    assert ag.autograd.gradgradcheck(ag.nn.functional.linear, (x, w, b))


def test_embedding_node_has_only_the_weight_edge():
    weight = ag.tensor(W, requires_grad=True)
    out = ag.nn.functional.embedding(ag.tensor([2, 0, 2]), weight)
    ((accumulator, nr),) = out.grad_fn.next_functions
    assert accumulator.variable is weight and nr == 0
    out.sum().backward()
    np.testing.assert_array_equal(weight.grad.numpy(), np.array([[1.0] * 3, [0.0] * 3, [2.0] * 3]))
    assert ag.autograd.gradgradcheck(lambda w: ag.nn.functional.embedding(ag.tensor([2, 0, 2]), w), (weight,))


def test_grad_takes_a_gradient_edge_as_an_output():
    x = ag.tensor(X[0], requires_grad=True)
    edge = graph.get_gradient_edge(x * x)
    (g,) = ag.autograd.grad(edge, x, grad_outputs=ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64))
    np.testing.assert_allclose(g.numpy(), 2 * X[0] * [1.0, 2.0, 3.0], rtol=1e-15)
    # a scalar edge needs no grad_output; an edge beside a tensor
    (g,) = ag.autograd.grad(graph.get_gradient_edge((x * x).sum()), x)
    np.testing.assert_allclose(g.numpy(), 2 * X[0], rtol=1e-15)
    h = x * 3.0
    (g,) = ag.autograd.grad([graph.get_gradient_edge(h), h.sum()], x, grad_outputs=[ag.ones(3, dtype=ag.float64), None])
    np.testing.assert_array_equal(g.numpy(), np.full(3, 6.0))


def test_a_gradient_edge_output_is_checked_as_a_tensor_output():
    x = ag.tensor(X[0], requires_grad=True)
    edge = graph.get_gradient_edge(x * 2.0)
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar outputs$"):
        ag.autograd.grad(edge, x)
    shapes = r"grad_output\[0\] has a shape of \(2,\) and output\[0\] has a shape of \(3,\)"
    with pytest.raises(RuntimeError, match=shapes):
        ag.autograd.grad(edge, x, grad_outputs=ag.ones(2, dtype=ag.float64))


def test_backward_from_a_gradient_edge_accumulates_into_the_leaves():
    x = ag.tensor(X[0], requires_grad=True)
    ag.autograd.backward(graph.get_gradient_edge(x.exp()), grad_tensors=ag.full((3,), 2.0, dtype=ag.float64))
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(X[0]), rtol=1e-15)
    ag.autograd.backward(graph.get_gradient_edge(x), grad_tensors=ag.ones(3, dtype=ag.float64))  # the leaf's own
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(X[0]) + 1, rtol=1e-15)


def test_a_post_hook_returning_none_drops_that_input_gradient():
    x = ag.tensor(X[0], requires_grad=True)
    w = ag.tensor(X[1], requires_grad=True)
    y = x * w
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (None, grad_inputs[1]))
    y.sum().backward()
    assert x.grad is None
    np.testing.assert_array_equal(w.grad.numpy(), X[0])


def test_a_prehook_returning_none_drops_the_gradient_into_its_node():
    x = ag.tensor(X[0], requires_grad=True)
    y = x.exp()
    y.grad_fn.register_prehook(lambda grad_outputs: (None,))
    (y.sum() + (x * 2.0).sum()).backward()  # only the other path reaches x
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 2.0))
    z = x.exp()
    z.grad_fn.register_prehook(lambda grad_outputs: (None,))
    assert ag.autograd.grad(z.sum(), x, allow_unused=True, retain_graph=True) == (None,)
    with pytest.raises(RuntimeError, match="index 0 appears to not have been used in the graph"):
        ag.autograd.grad(z.sum(), x)


def test_a_tensor_hook_returning_none_keeps_the_gradient():
    x = ag.tensor(X[0], requires_grad=True)
    y = x.exp()
    y.register_hook(lambda grad: None)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(X[0]), rtol=1e-15)


def test_copy_slices_repr_is_its_type_name():
    x = ag.tensor(X[0], requires_grad=True)
    y = x * 1.0
    y[0].mul_(2.0)
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    assert repr(y.grad_fn).startswith("<CopySlices object at 0x")


@pytest.mark.parametrize("grad_mode", [ag.no_grad, ag.inference_mode])
def test_a_view_transposed_in_place_without_grad_mode_sends_its_gradient_to_its_elements(grad_mode):
    x = ag.tensor(W, requires_grad=True)
    y = (x * 1.0).t()
    with grad_mode():
        y.t_()  # y is x's layout again: y[i, j] is x[i, j]
    assert y.grad_fn.name() == "AsStridedBackward0"
    g = np.arange(9.0).reshape(3, 3)
    (y * ag.tensor(g)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), g)


def test_columns_transposed_in_place_without_grad_mode_send_their_gradient_to_their_elements():
    x = ag.tensor(W, requires_grad=True)
    columns = (x * 2.0)[:, :2]
    with ag.no_grad():
        columns.t_()  # columns[i, j] is 2 x[j, i]
    g = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    (columns * ag.tensor(g)).sum().backward()
    expected = np.zeros((3, 3))
    expected[:, :2] = 2 * g.T
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def segment(w):
    return lambda a: (a @ w).tanh()


def expected_input_grad(x):
    """d/dx of tanh(x @ W).sum(): (1 - tanh²) @ Wᵀ, by hand."""
    return (1 - np.tanh(x @ W) ** 2) @ W.T


def test_non_reentrant_checkpoint_refuses_an_input_changed_in_place_after_the_call():
    x = ag.tensor(X, requires_grad=True)
    w = ag.tensor(W, requires_grad=True)
    z = x * 1.0
    y = checkpoint(segment(w), z, use_reentrant=False)
    z.mul_(2)  # the rerun would see 2x and give that gradient
    with pytest.raises(
        RuntimeError,
        match=r"modified by an inplace operation: \[actorgrad.float64 \[2, 3\]\], which is output 0 of Mul, is at "
        r"version 1; expected version 0 instead",
    ):
        y.sum().backward()
    assert x.grad is None


def test_non_reentrant_checkpoint_refuses_a_leaf_input_changed_under_no_grad():
    x = ag.tensor(X, requires_grad=True)
    y = checkpoint(segment(ag.tensor(W)), x, use_reentrant=False)
    with ag.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match=r"\[actorgrad.float64 \[2, 3\]\] is at version 1; expected version 0"):
        y.sum().backward()


def test_non_reentrant_checkpoint_of_unchanged_inputs_gives_the_gradient():
    x = ag.tensor(X, requires_grad=True)
    z = x * 1.0
    y = checkpoint(lambda a, scale: segment(ag.tensor(W))(a) * scale, z, 2.0, use_reentrant=False)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * expected_input_grad(X), rtol=1e-12)
    z.mul_(2)  # after backward: nothing left to rerun on it


@pytest.mark.gpu
def test_gpu_non_reentrant_checkpoint_refuses_an_input_changed_in_place(cupy):
    x = ag.tensor(X, device="cuda", requires_grad=True)
    z = x * 1.0
    y = checkpoint(segment(ag.tensor(W, device="cuda")), z, use_reentrant=False)
    z.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    z2 = x * 1.0
    checkpoint(segment(ag.tensor(W, device="cuda")), z2, use_reentrant=False).sum().backward()
    np.testing.assert_allclose(cupy.asnumpy(x.grad._data), expected_input_grad(X), rtol=1e-12)


@pytest.mark.gpu
def test_gpu_a_view_transposed_in_place_without_grad_mode(cupy):
    x = ag.tensor(W, device="cuda", requires_grad=True)
    y = (x * 1.0).t()
    with ag.no_grad():
        y.t_()
    g = np.arange(9.0).reshape(3, 3)
    (y * ag.tensor(g, device="cuda")).sum().backward()
    np.testing.assert_array_equal(cupy.asnumpy(x.grad._data), g)
