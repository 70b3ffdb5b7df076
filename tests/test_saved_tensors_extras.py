"""The contexts built on saved-tensor hooks (`save_on_cpu`, `allow_mutation_on_saved_tensors`),
`disable_saved_tensors_hooks` and `increment_version`, as torch.autograd.graph's."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import graph

A0 = "async_cpu:0"


def packed_values(node):
    """What the hooks kept for `node`'s saved values (the packed objects, in the order they were saved)."""
    return [v.packed for _, _, values, _, _, _ in node.saved for v in values.values]


def sin_of_leaf(device):
    w = ag.tensor(np.linspace(0.1, 0.9, 6).reshape(2, 3), dtype=ag.float64, requires_grad=True)
    with graph.save_on_cpu():
        y = w.to(device).sin()
    return w, y


@pytest.mark.parametrize("device", [A0, "cpu"])
def test_save_on_cpu_keeps_saved_values_on_the_cpu_and_backward_gets_them_back(device):
    w, y = sin_of_leaf(device)
    ((own_device, kept),) = packed_values(y.grad_fn)
    assert kept.device == ag.device("cpu") and own_device == ag.device(device)
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.cos(w.detach().numpy()), rtol=1e-12)


def test_save_on_cpu_gives_a_recorded_backward_its_saved_value_on_the_device():
    w, y = sin_of_leaf(A0)
    (g,) = ag.autograd.grad(y.sum(), w, create_graph=True)
    (gg,) = ag.autograd.grad(g.sum(), w)
    np.testing.assert_allclose(gg.numpy(), -np.sin(w.detach().numpy()), rtol=1e-12)


@pytest.mark.gpu
def test_save_on_cpu_moves_cuda_saved_values_to_the_cpu():
    pytest.importorskip("cupy")
    w, y = sin_of_leaf("cuda:0")
    ((own_device, kept),) = packed_values(y.grad_fn)
    assert kept.device == ag.device("cpu") and own_device == ag.device("cuda:0")
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.cos(w.detach().numpy()), rtol=1e-12)


def test_disable_saved_tensors_hooks_refuses_hooks_inside_with_its_message():
    with graph.disable_saved_tensors_hooks("no packing here"):
        with pytest.raises(RuntimeError, match="^no packing here$"):
            with graph.save_on_cpu():
                pass
        with graph.disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="^inner$"):
                with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
        with pytest.raises(RuntimeError, match="^no packing here$"):  # the outer message is back
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t):  # and hooks are allowed again after it
        with pytest.raises(RuntimeError, match="^too late$"):  # entering it under hooks raises as well
            with graph.disable_saved_tensors_hooks("too late"):
                pass


def mutated_after_saving():
    x = ag.tensor([0.3, -1.2, 2.0], dtype=ag.float64, requires_grad=True)
    a = x * 1.0
    y = a.sin()  # saves a
    a.mul_(2.0)
    return x, y


def test_allow_mutation_on_saved_tensors_backward_uses_the_values_before_the_change():
    with graph.allow_mutation_on_saved_tensors() as ctx:
        assert isinstance(ctx, graph.allow_mutation_on_saved_tensors)
        x, y = mutated_after_saving()
        y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.3, -1.2, 2.0]), rtol=1e-12)


def test_a_mutated_saved_tensor_is_refused_without_the_context():
    x, y = mutated_after_saving()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_allow_mutation_on_saved_tensors_refuses_backward_after_the_block():
    with graph.allow_mutation_on_saved_tensors():
        _, y = mutated_after_saving()
    with pytest.raises(AssertionError, match="^Trying to backward outside of the 'allow_mutation_on_saved_tensors'"):
        y.sum().backward()


def test_increment_version_makes_nodes_that_saved_the_tensor_refuse_backward():
    x = ag.tensor([0.5, 1.5], requires_grad=True)
    a = x * 1.0
    y = a.sin()  # saves a
    b = a.detach()
    graph.increment_version(b)  # b shares a's version counter
    assert a._version == 1
    graph.increment_version([b, b])
    assert a._version == 3
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_increment_version_refuses_what_is_not_tensors():
    with pytest.raises(RuntimeError, match=r"^increment_version expect a Iterable\[Tensor\] as input$"):
        graph.increment_version(3)
    with pytest.raises(RuntimeError, match="^increment_version expects each element of the iterable to be a tensor$"):
        graph.increment_version([ag.ones(1), 3])


def test_values_packed_by_hooks_are_not_checked_for_in_place_changes_as_in_pytorch():
    x = ag.tensor([0.3, -1.2, 2.0], dtype=ag.float64, requires_grad=True)
    a = x * 1.0
    with graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = a.sin()
    a.mul_(2.0)  # the hooks kept a copy: backward may use it
    y.sum().backward(retain_graph=False)
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.3, -1.2, 2.0]), rtol=1e-12)
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        y.sum().backward()  # the packed values were still freed by the first pass
