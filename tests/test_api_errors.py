"""The public API's rules and its errors, with PyTorch's texts where PyTorch has them."""

import numpy as np
import pytest

import actorgrad as ag


async def test_output_that_does_not_require_grad():
    x = ag.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        await ag.backward(x.sum())


async def test_non_scalar_output_needs_an_explicit_gradient():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        await ag.backward(x * 2)


async def test_gradient_of_the_wrong_shape_names_both_shapes():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    expected = r"grad_output\[0\] has a shape of \(3,\) and output\[0\] has a shape of \(2,\)"
    with pytest.raises(RuntimeError, match=expected):
        await ag.backward(x * 2, ag.tensor([1.0, 1.0, 1.0]))


async def test_second_backward_through_a_freed_graph():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    await ag.backward(loss)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        await ag.backward(loss)


async def test_retain_graph_allows_a_second_backward_and_keeps_saved_tensors():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    await ag.backward(y.sum(), retain_graph=True)
    assert y.grad_fn.saved is not None
    await ag.backward(y.sum())
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])


async def test_each_node_frees_its_saved_tensors_once_it_has_run():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x.tanh()
    z = y * x
    await ag.backward(z.sum())
    assert y.grad_fn.saved is None
    assert z.grad_fn.saved is None


async def test_a_node_saves_only_what_the_needed_formulas_use():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    c = ag.tensor([3.0, 4.0])
    node = (x * c).grad_fn
    (only_call,) = node.saved  # x needs `other`; c needs nothing, so x itself is not saved
    index, _, values, _, _, _ = only_call
    assert index == 0 and len(values) == 1 and values[0] is c._data


def test_sync_forms_refuse_to_run_inside_trio():
    import trio

    async def main():
        x = ag.tensor(1.0, requires_grad=True)
        with pytest.raises(RuntimeError, match="await actorgrad.backward"):
            (x * 2).backward()
        with pytest.raises(RuntimeError, match="await actorgrad.grad"):
            ag.autograd.grad(x * 2, x)

    trio.run(main)


async def test_grad_of_an_input_that_does_not_require_grad():
    x = ag.tensor(1.0, requires_grad=True)
    c = ag.tensor(1.0)
    with pytest.raises(RuntimeError, match="does not require grad"):
        await ag.grad(x * c, c)


async def test_backward_with_empty_inputs():
    x = ag.tensor(1.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        await ag.backward(x * 2, inputs=[])


def test_requires_grad_cannot_be_set_on_a_non_leaf():
    x = ag.tensor(1.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf variables"):
        (x * 2).requires_grad = False


def test_set_num_workers_rejects_nonsense():
    with pytest.raises(ValueError, match="positive int"):
        ag.set_num_workers(0)


async def test_profile_records_every_node_with_its_fields():
    x = ag.tensor(np.ones(3), requires_grad=True)
    loss = (x.tanh() * 2).sum()
    with ag.profile() as prof:
        await ag.backward(loss)
    assert [e.name for e in prof.events] == [
        "torch::autograd::GraphRoot", "SumBackward0", "MulBackward0", "TanhBackward0", "torch::autograd::AccumulateGrad"
    ]
    first = prof.events[1]
    assert first.device == "cpu" and first.depth == 0 and first.worker == 0
    assert first.end_ns >= first.start_ns > 0
    assert len({e.graph_task for e in prof.events}) == 1


async def test_without_profile_nothing_is_recorded():
    x = ag.tensor(np.ones(3), requires_grad=True)
    with ag.profile() as prof:
        pass
    await ag.backward(x.sum())
    assert prof.events == []
