"""A custom Function's outputs that alias its inputs, as PyTorch 2.13 treats them: an input returned as is, or a view
made in forward, is a view of the input (it shares the version counter), and changing it in place would bypass the
Function's backward, so that is refused; inputs marked dirty are rebased instead. Errors and numbers are
PyTorch's, written as literals."""

import re

import numpy as np
import pytest

import actorgrad as ag

CUSTOM = ("This view was created inside a custom Function (or because an input was returned as-is) and the autograd "
          "logic to handle view+inplace would override the custom backward associated with the custom Function, "
          "leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the "
          "custom Function.")
MULTIPLE = ("This view is the output of a function that returns multiple views. Such functions do not allow the "
            "output views to be modified inplace. You should replace the inplace operation by an out-of-place one.")
CHANGED = "is a view and its base or another view of its base has been modified inplace. "
MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace operation"


def _exact(text):
    return "^" + re.escape(text) + "$"


def _at_backward(text):
    """The engine adds the node that raised on a line of its own."""
    return "^" + re.escape(text) + "\n"


class Id(ag.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a

    @staticmethod
    def backward(ctx, g):
        return g


class Head(ag.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a[0:1]

    @staticmethod
    def backward(ctx, g):
        return ag.cat([g, ag.zeros(1, dtype=g.dtype)])


class Column(ag.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a.view(2, 1)

    @staticmethod
    def backward(ctx, g):
        return g.view(2)


class Dup(ag.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a, a

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 + g2


class AndDouble(ag.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a, a * 2

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 + 2 * g2


class DoubleInPlace(ag.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        a.mul_(2)
        ctx.mark_dirty(a)
        return a

    @staticmethod
    def backward(ctx, g):
        return 2 * g


def _nonleaf(values=(1.0, 2.0)):
    x = ag.tensor(list(values), dtype=ag.float64, requires_grad=True)
    return x, x * 1


def test_input_returned_as_is_shares_its_version_counter():
    x, h = _nonleaf()
    z = h.sin()
    y = Id.apply(h)
    assert y is not h and y._is_view() and y._base is h
    with ag.no_grad():
        y.mul_(2)
    assert h._version == y._version == 1
    with pytest.raises(RuntimeError, match=MODIFIED):
        z.sum().backward()


def test_inplace_change_of_input_returned_as_is_is_refused():
    x, h = _nonleaf()
    y = Id.apply(h)
    for change in (lambda: y.mul_(2), lambda: y.add_(ag.ones(2, requires_grad=True)), lambda: y.zero_(),
                   lambda: y.__setitem__(ag.tensor([0]), 5.0)):
        with pytest.raises(RuntimeError, match=_exact("Output 0 of Id is a view and is being modified inplace. "
                                                      + CUSTOM)):
            change()
    assert h._version == 0
    with pytest.raises(RuntimeError, match=_exact("Output 0 of Slice is a view and is being modified inplace. "
                                                  + CUSTOM)):
        y[0:1].mul_(2)  # a view of such a view too


def test_inplace_change_of_leaf_returned_as_is_names_the_function():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = Id.apply(x)
    assert y._base is x
    with pytest.raises(RuntimeError, match="^Output 0 of Id is a view and is being modified inplace"):
        y.mul_(2)


@pytest.mark.parametrize("fn, name", [(Head, "Head"), (Column, "Column")])
def test_view_made_in_forward_is_a_view_that_refuses_inplace_changes(fn, name):
    x, h = _nonleaf()
    y = fn.apply(h)
    assert y._base is h
    with pytest.raises(RuntimeError, match=_exact(f"Output 0 of {name} is a view and is being modified inplace. "
                                                  + CUSTOM)):
        y.mul_(2)
    with ag.no_grad():
        y.mul_(2)
    assert h._version == 1


def test_several_differentiable_outputs_name_multiple_views():
    x, h = _nonleaf()
    a, b = Dup.apply(h)
    assert a._base is h and b._base is h
    with pytest.raises(RuntimeError, match=_exact("Output 1 of Dup is a view and is being modified inplace. "
                                                  + MULTIPLE)):
        b.mul_(2)
    a, b = AndDouble.apply(h)
    with pytest.raises(RuntimeError, match=_exact("Output 0 of AndDouble is a view and is being modified inplace. "
                                                  + MULTIPLE)):
        a.mul_(2)
    b.mul_(2)  # a new tensor, no view
    b.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0])


def test_view_used_after_a_change_in_no_grad_mode_raises_at_backward():
    x, h = _nonleaf()
    y = Id.apply(h)
    before = (y * 3).sum()
    with ag.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match=_at_backward("Output 0 of Id " + CHANGED + CUSTOM)):
        (y * 2).sum().backward()
    before.backward()  # recorded before the change: its graph still holds the Function's node, as in PyTorch
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


@pytest.mark.parametrize("change", ["base", "other view", "detached"])
def test_view_used_after_its_base_changed_raises_at_backward(change):
    x, h = _nonleaf()
    y = Id.apply(h)
    if change == "base":
        h.mul_(2)
    elif change == "other view":
        h[0:1].mul_(2)
    else:
        h.detach().mul_(2)
    with pytest.raises(RuntimeError, match=_at_backward("Output 0 of Id " + CHANGED + CUSTOM)):
        (y * 2).sum().backward()
    with pytest.raises(RuntimeError, match=_exact("Output 0 of Id is a view and is being modified inplace. "
                                                  + CUSTOM)):
        y.mul_(2)


def test_multiple_views_used_after_their_base_changed_raise_at_backward():
    x, h = _nonleaf()
    a, _ = Dup.apply(h)
    h.mul_(2)
    with pytest.raises(RuntimeError, match=_at_backward("Output 0 of Dup " + CHANGED + MULTIPLE)):
        (a * 2).sum().backward()


def test_split_piece_used_after_a_change_in_no_grad_mode_raises_at_backward():
    x, h = _nonleaf()
    a, _ = h.split(1)
    with ag.no_grad():
        h.mul_(2)
    with pytest.raises(RuntimeError, match=_at_backward("Output 0 of Split " + CHANGED + MULTIPLE)):
        (a * 2).sum().backward()


def test_input_returned_without_a_graph_is_an_alias_without_history():
    x, h = _nonleaf()
    with ag.no_grad():
        y = Id.apply(h)
    assert y is not h and not y.requires_grad and y.grad_fn is None
    y.mul_(2)
    assert h._version == 1


def test_non_differentiable_input_returned_shares_its_version_counter():
    class Marked(ag.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.mark_non_differentiable(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return g

    x, h = _nonleaf()
    z = h.sin()
    y = Marked.apply(h)
    assert y is not h and not y.requires_grad
    y.mul_(2)  # allowed, as in PyTorch
    with pytest.raises(RuntimeError, match=MODIFIED):
        z.sum().backward()


def test_gradient_through_returned_input_is_the_functions():
    x, h = _nonleaf((0.5, -1.5))
    (Id.apply(h) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -3.0])
    x, h = _nonleaf((0.5, -1.5))
    (Head.apply(h) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 0.0])


def test_input_marked_dirty_is_returned_itself_and_rebased():
    x, h = _nonleaf()
    y = DoubleInPlace.apply(h)
    assert y is h and not y._is_view() and y.grad_fn.name() == "DoubleInPlaceBackward"
    y.mul_(3)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])


def test_view_marked_dirty_rebases_its_base():
    x, h = _nonleaf((1.0, 2.0, 3.0))
    squares = h**2
    v, w = squares[1:3], squares[0:2]
    y = DoubleInPlace.apply(v)
    assert y is v and y.grad_fn.name() == "AsStridedBackward0" and w.grad_fn.name() == "AsStridedBackward0"
    (squares * ag.tensor([1.0, 10.0, 100.0], dtype=ag.float64)).sum().backward(retain_graph=True)
    # squares is [x0^2, 2 x1^2, 2 x2^2] after the doubling: weighted 1, 10, 100 the gradient is 2 x0, 40 x1, 400 x2
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 80.0, 1200.0])
    x.grad = None
    (w * ag.tensor([1.0, 10.0], dtype=ag.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 80.0, 0.0])
    x, h = _nonleaf((1.0, 2.0, 3.0))
    y = DoubleInPlace.apply(h[0:2])
    y.mul_(3)
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0, 1.0])


def test_view_marked_dirty_is_refused_where_pytorch_refuses_it():
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=_exact("a view of a leaf Variable that requires grad is being used in an "
                                                  "in-place operation.")):
        DoubleInPlace.apply(x[0:2])

    class AndTriple(ag.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            ctx.mark_dirty(a)
            return a, a * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return 2 * g1 + 6 * g2

    with pytest.raises(RuntimeError, match="^If your Function modifies inplace an input that is a view of another "
                                           "Tensor, your Function cannot return more than one Tensor."):
        AndTriple.apply((x * 1)[0:2])
