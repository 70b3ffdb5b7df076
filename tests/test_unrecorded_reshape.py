"""A tensor reshaped in place without being recorded (unsqueeze_, t_ under no_grad) after the op that made it:
its node then gets a gradient of the new shape. As PyTorch's engine, actorgrad sums such a gradient back to the
recorded shape where that broadcasts to it, and refuses it where it does not, so no leaf's `.grad` and no input's
gradient from grad() has a shape other than its tensor's."""

from __future__ import annotations

import numpy as np
import pytest

import actorgrad as ag

X = np.random.default_rng(3).uniform(-1.0, 1.0, (2, 3))


def _reshaped_product(reshape: str, *args: int) -> tuple[ag.Tensor, ag.Tensor]:
    a = ag.tensor(X, requires_grad=True)
    b = a * 2
    with ag.no_grad():
        getattr(b, reshape)(*args)
    return a, b


@pytest.mark.parametrize(("reshape", "args"), [("unsqueeze_", (0,)), ("squeeze_", ())])
def test_a_gradient_of_a_broadcastable_shape_is_summed_to_the_leaf(reshape, args):
    a, b = _reshaped_product(reshape, *args)
    (b * b).sum().backward()
    assert a.grad.shape == (2, 3)
    np.testing.assert_allclose(a.grad.numpy(), 8 * X, rtol=1e-15)


@pytest.mark.parametrize("create_graph", [False, True])
def test_the_gradient_grad_returns_has_its_inputs_shape(create_graph):
    a, b = _reshaped_product("unsqueeze_", 0)
    (g,) = ag.autograd.grad((b * b).sum(), a, create_graph=create_graph)
    assert g.shape == (2, 3)
    np.testing.assert_allclose(g.detach().numpy(), 8 * X, rtol=1e-15)


@pytest.mark.parametrize(("reshape", "args", "got"), [("t_", (), "3, 2"), ("transpose_", (0, 1), "3, 2"),
                                                      ("unsqueeze_", (1,), "2, 1, 3")])
def test_a_gradient_of_an_incompatible_shape_is_refused_and_nothing_is_written(reshape, args, got):
    a, b = _reshaped_product(reshape, *args)
    with pytest.raises(RuntimeError, match=rf"of shape \[2, 3\]: got \[{got}\], which is not shape compatible"):
        (b * b).sum().backward()
    assert a.grad is None
    a, b = _reshaped_product(reshape, *args)
    with pytest.raises(RuntimeError, match="reshaped in place"):
        ag.autograd.grad((b * b).sum(), a)
