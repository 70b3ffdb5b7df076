"""Selective execution: grad() and backward(inputs=...) run only the nodes on a path to what was asked for."""

import numpy as np
import pytest

import actorgrad as ag


def names_by_node(events):
    return {(e.name, e.sequence_nr) for e in events}


async def test_grad_runs_neither_the_other_branch_nor_its_accumulator():
    x = ag.tensor(1.0, requires_grad=True)
    y = ag.tensor(2.0, requires_grad=True)
    x2 = x * 2
    y3 = y * 3
    with ag.profile() as prof:
        (gx,) = await ag.grad(x2 + y3, x)
    ran = names_by_node(prof.events)
    assert gx.item() == 2.0
    assert ("MulBackward0", x2.grad_fn.sequence_nr) in ran
    assert ("MulBackward0", y3.grad_fn.sequence_nr) not in ran
    assert not any(name == "AccumulateGrad" for name, _ in ran)
    assert x.grad is None and y.grad is None


async def test_backward_with_inputs_accumulates_only_into_them():
    x = ag.tensor(1.0, requires_grad=True)
    y = ag.tensor(2.0, requires_grad=True)
    y3 = y * 3
    with ag.profile() as prof:
        await ag.backward(x * 2 + y3, inputs=[x])
    assert x.grad.item() == 2.0
    assert y.grad is None
    assert ("MulBackward0", y3.grad_fn.sequence_nr) not in names_by_node(prof.events)


async def test_backward_with_a_non_leaf_input_fills_its_grad_and_stops_there():
    x = ag.tensor(3.0, requires_grad=True)
    h = x * x
    await ag.backward(h * 2, inputs=[h])
    assert h.grad.item() == 2.0
    assert x.grad is None


async def test_grad_with_respect_to_a_non_leaf_and_a_leaf_behind_it():
    x = ag.tensor(3.0, requires_grad=True)
    h = x * x
    gh, gx = await ag.grad(h * 2, [h, x])
    assert gh.item() == 2.0
    assert gx.item() == 12.0


async def test_same_input_twice_gets_the_same_gradient_twice():
    x = ag.tensor(3.0, requires_grad=True)
    g1, g2 = await ag.grad(x * 5, [x, x])
    assert g1.item() == g2.item() == 5.0


async def test_unused_input_is_an_error_unless_allowed():
    x = ag.tensor(1.0, requires_grad=True)
    unused = ag.tensor(1.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not have been used"):
        await ag.grad(x * 2, [x, unused], retain_graph=True)
    gx, gu = await ag.grad(x * 2, [x, unused], allow_unused=True)
    assert gx.item() == 2.0 and gu is None


async def test_pruning_skips_nodes_that_cannot_reach_the_inputs():
    # y's long chain is behind the requested non-leaf h's node only through h; asking for h must not run it.
    y = ag.tensor(np.ones(3), requires_grad=True)
    deep = y
    for _ in range(10):
        deep = deep.tanh()
    h = deep * 2
    with ag.profile() as prof:
        (gh,) = await ag.grad((h * h).sum(), h)
    np.testing.assert_allclose(gh.numpy(), 2 * h.detach().numpy())
    assert not any(e.name == "TanhBackward0" for e in prof.events)


def test_grad_fills_the_gradient_of_a_non_leaf_that_retains_it():
    """As PyTorch's retain_grad hook: also in a grad() pass, and also when the pass only captures at it."""
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    ag.autograd.grad((y * y).sum(), y)
    assert y.grad.tolist() == [4.0, 8.0]
    y.grad = None
    z = y * 3
    z.retain_grad()
    ag.autograd.grad((z * z).sum(), x)
    assert y.grad.tolist() == [36.0, 72.0] and z.grad.tolist() == [12.0, 24.0] and x.grad is None
