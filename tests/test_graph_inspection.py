"""Looking at the backward graph: node names and edges, per-node metadata, and gradient edges that stand for
tensors among the inputs of grad() and backward()."""

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.autograd.graph import GradientEdge, Node, get_gradient_edge


def leaf(values=(1.0, 2.0, 3.0)):
    return ag.tensor(np.array(values), requires_grad=True)


def test_nodes_name_themselves_and_list_their_edges():
    x = leaf()
    y = x * ag.tensor(np.ones(3))
    assert isinstance(y.grad_fn, Node)
    assert y.grad_fn.name() == "MulBackward0"
    (accumulator, slot), (nothing, _) = y.grad_fn.next_functions
    assert accumulator.name() == "torch::autograd::AccumulateGrad" and accumulator.variable is x and slot == 0
    assert nothing is None


def test_metadata_is_a_dict_per_node_made_on_first_use():
    x = leaf()
    y = x * 2
    z = y * 2
    assert y.grad_fn._metadata is None
    y.grad_fn.metadata["layer"] = "first"
    assert y.grad_fn.metadata == {"layer": "first"}
    assert y.grad_fn.metadata is y.grad_fn.metadata
    assert z.grad_fn.metadata == {}
    z.sum().backward(retain_graph=True)
    assert z.grad_fn.next_functions[0][0].metadata["layer"] == "first"  # the same node, reached from z


def test_get_gradient_edge_names_the_node_and_slot_a_gradient_enters():
    x = leaf()
    y = x * 2
    edge = get_gradient_edge(y)
    assert isinstance(edge, GradientEdge)
    assert edge == (y.grad_fn, 0) and edge.node is y.grad_fn and edge.output_nr == 0
    leaf_edge = get_gradient_edge(x)
    assert leaf_edge.node.name() == "torch::autograd::AccumulateGrad" and leaf_edge.node.variable is x
    with pytest.raises(RuntimeError, match="It is not possible to get the gradient edge for a Tensor that does not "
                                           "require gradients"):
        get_gradient_edge(ag.tensor([1.0]))


@pytest.mark.parametrize("run", ["sync", "async"])
def test_a_gradient_edge_as_an_input_of_grad_returns_the_gradient_flowing_into_it(run):
    x = leaf()
    y = x * x
    loss = (y * ag.tensor(np.array([1.0, 2.0, 3.0]))).sum()
    edges = [get_gradient_edge(y), get_gradient_edge(x)]
    del y  # the edge keeps its node: the tensor itself is not needed
    if run == "sync":
        got = ag.autograd.grad(loss, edges, retain_graph=True)
    else:
        got = trio.run(lambda: ag.grad(loss, edges, retain_graph=True))
    np.testing.assert_array_equal(got[0].numpy(), [1, 2, 3])
    np.testing.assert_array_equal(got[1].numpy(), [2, 8, 18])
    (single,) = ag.autograd.grad(loss, edges[0], retain_graph=True)
    mixed = ag.autograd.grad(loss, [edges[0], x])
    np.testing.assert_array_equal(single.numpy(), got[0].numpy())
    np.testing.assert_array_equal(mixed[1].numpy(), got[1].numpy())


def test_a_gradient_edge_outside_the_graph_is_reported_like_an_unused_tensor():
    x, other = leaf(), leaf()
    edge = get_gradient_edge(other * 2)
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not have been used"):
        ag.autograd.grad((x * 2).sum(), [x, edge])
    assert ag.autograd.grad((x * 2).sum(), [edge], allow_unused=True) == (None,)


def test_backward_with_a_leaf_edge_as_input_accumulates_only_into_that_leaf():
    a, b = leaf(), leaf()
    (a * b).sum().backward(inputs=[get_gradient_edge(a)])
    np.testing.assert_array_equal(a.grad.numpy(), [1, 2, 3])
    assert b.grad is None


def test_inputs_must_be_tensors_or_gradient_edges():
    x = leaf()
    with pytest.raises(RuntimeError, match="all inputs have to be Tensors or GradientEdges, but got int"):
        ag.autograd.grad((x * 2).sum(), [x, 3])
