"""Autograd corners where actorgrad must do what PyTorch does; each expected value or message was taken from
torch 2.13 (CPU) running the same code."""

import functools
import math

import numpy as np
import pytest
import trio

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import Function

MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace operation: "


def leaf(values, dtype=ag.float64):
    return ag.tensor(values, dtype=dtype, requires_grad=True)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's warnings for the 0 / 0 in the loss value
def test_cross_entropy_with_every_target_ignored_has_a_zero_gradient():
    for label_smoothing in (0.0, 0.1):
        x = leaf([[1.0, 2.0], [3.0, 4.0]])
        loss = F.cross_entropy(x, ag.tensor([-100, -100]), label_smoothing=label_smoothing)
        loss.backward()
        assert math.isnan(loss.item())
        assert x.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    # Kept targets whose weights sum to zero still divide by it, as in PyTorch; only ignored rows get zeros.
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    F.cross_entropy(x, ag.tensor([0, -100]), weight=ag.tensor([0.0, 1.0], dtype=ag.float64),
                    label_smoothing=0.1).backward()
    assert np.isnan(x.grad.numpy()[0]).all() and x.grad.tolist()[1] == [0.0, 0.0]
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    F.nll_loss(x, ag.tensor([0, 1]), weight=ag.tensor([1.0, -1.0], dtype=ag.float64)).backward()
    assert x.grad.tolist() == [[-math.inf, 0.0], [0.0, math.inf]]


def test_setitem_drops_the_values_leading_size_one_dims_and_its_gradient_keeps_them():
    y = ag.zeros(3)
    y[1] = ag.ones(1)
    assert y.tolist() == [0.0, 1.0, 0.0]
    y[0:2] = ag.ones(1, 2) * 2
    y[ag.tensor([1, 2])] = ag.ones(1, 2) * 3
    assert y.tolist() == [2.0, 3.0, 3.0]
    with pytest.raises(RuntimeError, match=r"value tensor of shape \[3\] cannot be broadcast to indexing result of "
                                           r"shape \[2\]"):
        y[ag.tensor([0, 1])] = ag.ones(1, 3)

    weights = ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64)
    for index, value, expected in (
        (ag.tensor([0, 1]), [[2.0, 3.0]], [[1.0, 2.0]]),
        (slice(0, 2), [[[2.0]]], [[[3.0]]]),
        (1, [5.0], [2.0]),
    ):
        v = leaf(value)
        x = ag.zeros(3, dtype=ag.float64, requires_grad=True).clone()
        x[index] = v * 1
        (x * weights).sum().backward()
        assert v.grad.tolist() == expected


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class ExpInPlace(Function):
    """Changes its input in place and saves it: the saved version is the one forward leaves."""

    @staticmethod
    def forward(ctx, x):
        x.copy_(x.exp())
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, g):
        (result,) = ctx.saved_tensors
        return g * result


def test_a_tensor_a_function_saved_is_refused_once_changed_in_place():
    x = leaf([1.0, 2.0])
    y = x * 1
    z = Square.apply(y)
    y.add_(1)
    with pytest.raises(RuntimeError) as error:
        z.sum().backward()
    assert str(error.value).startswith(MODIFIED + "[actorgrad.float64 [2]], which is output 0 of Add, is at version "
                                                  "1; expected version 0 instead.")

    out = ExpInPlace.apply(x * 1)
    out.sum().backward()  # its own change, marked dirty, is no change to what it saved
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]))
    out = ExpInPlace.apply(x * 1)
    out.add_(1)
    with pytest.raises(RuntimeError, match=MODIFIED):
        out.sum().backward()


def test_grad_materializes_zeros_for_unused_inputs_and_refuses_allow_unused_false():
    x = ag.ones(2, 3, dtype=ag.float64, requires_grad=True)
    y = ag.ones(2, requires_grad=True)
    gx, gy = ag.autograd.grad((y * 2).sum(), (x, y), materialize_grads=True)
    assert gx.tolist() == [[0.0] * 3] * 2 and gx.dtype == ag.float64 and not gx.requires_grad
    assert gy.tolist() == [2.0, 2.0]
    gx, _ = trio.run(functools.partial(ag.grad, (y * 2).sum(), (x, y), materialize_grads=True, create_graph=True))
    assert gx.shape == (2, 3) and gx.requires_grad
    message = "Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False."
    with pytest.raises(ValueError, match=message):
        ag.autograd.grad((y * 2).sum(), (x, y), materialize_grads=True, allow_unused=False)
    with pytest.raises(RuntimeError, match="index 0 appears to not have been used in the graph"):
        trio.run(ag.grad, (y * 2).sum(), (x, y))


def test_a_post_accumulate_grad_hook_may_not_return_a_value():
    for returned, error, message in (
        (5, TypeError, "expected Variable, but hook returned 'int'"),
        (ag.zeros(2), RuntimeError, "Tensor post accumulate grad hooks should return None."),
    ):
        x = ag.ones(2, requires_grad=True)
        x.register_post_accumulate_grad_hook(lambda t, returned=returned: returned)
        with pytest.raises(error, match=message):
            (x * 2).sum().backward()
        with pytest.raises(error, match=message):
            trio.run(ag.backward, (x * 2).sum())
