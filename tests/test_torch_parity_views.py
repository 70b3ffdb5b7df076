"""PyTorch parity for views and their in-place rules (no_grad views, pieces of split/unbind, view vs reshape),
double backward through relu and leaky_relu, and small Tensor APIs. Expected values and errors are PyTorch
2.13's."""

from __future__ import annotations

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

F = ag.nn.functional
MULTI_OUTPUT_TAIL = (
    "This view is the output of a function that returns multiple views. Such functions do not allow the output "
    "views to be modified inplace. You should replace the inplace operation by an out-of-place one."
)


def leaf64(values):
    return ag.tensor(values, dtype=ag.float64, requires_grad=True)


# -- 1. double backward through relu and leaky_relu ------------------------------------------------------------------
@pytest.mark.parametrize(
    "op, node, first",
    [
        (lambda x: x.relu(), "ThresholdBackwardBackward0", [1.0, 0.0, 0.0]),
        (lambda x: F.leaky_relu(x, 0.1), "LeakyReluBackwardBackward0", [1.0, 0.1, 0.1]),
    ],
)
def test_relu_gradient_is_recorded_and_differentiates_to_zero(op, node, first):
    x = leaf64([1.0, -2.0, 0.0])
    (g,) = ag.autograd.grad(op(x).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn.name() == node
    np.testing.assert_allclose(g.detach().numpy(), first)
    (gg,) = ag.autograd.grad(g.sum(), x)
    np.testing.assert_array_equal(gg.numpy(), [0.0, 0.0, 0.0])
    away_from_kinks = leaf64([0.7, -1.3, 2.1])
    assert gradgradcheck(lambda t: op(t) * t, (away_from_kinks,))


# -- 2. a view made under no_grad, changed in place with grad on -----------------------------------------------------
def test_inplace_on_a_no_grad_view_of_a_tensor_that_requires_grad_is_refused():
    base = ag.ones(3, requires_grad=True)
    with ag.no_grad():
        view = base[:2]
    with pytest.raises(RuntimeError) as error:
        view.mul_(2)
    assert str(error.value) == (
        "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this "
        "use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view "
        "and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both "
        "outside (if you want the inplace to be tracked)."
    )
    np.testing.assert_array_equal(base.detach().numpy(), [1.0, 1.0, 1.0])
    with ag.no_grad():
        view.mul_(2)  # both in no_grad: allowed
    np.testing.assert_array_equal(base.detach().numpy(), [2.0, 2.0, 1.0])


# -- 3. in-place on the pieces of split, chunk and unbind --------------------------------------------------------------
@pytest.mark.parametrize(
    "pieces, name",
    [
        (lambda t: t.unbind(), "Unbind"),
        (lambda t: t.unbind(1), "Unbind"),
        (lambda t: t.split(1), "Split"),
        (lambda t: t.chunk(2), "Split"),
        (lambda t: t.split([1, 1]), "SplitWithSizes"),
    ],
)
def test_inplace_on_a_piece_of_a_multi_output_view_op_is_refused(pieces, name):
    x = ag.ones((2, 3), requires_grad=True)
    with pytest.raises(RuntimeError) as error:
        pieces(x.clone())[1].mul_(2)
    assert str(error.value) == f"Output 1 of {name} is a view and is being modified inplace. {MULTI_OUTPUT_TAIL}"
    with pytest.raises(RuntimeError) as error:  # a view of a piece, named by its own node
        pieces(x.clone())[0].view(-1).add_(1)
    assert str(error.value) == f"Output 0 of View is a view and is being modified inplace. {MULTI_OUTPUT_TAIL}"
    pieces(x.detach().clone())[0].add_(1)  # nothing to record: allowed


def test_a_piece_is_unusable_in_backward_after_its_base_changed_in_place():
    x = ag.ones((2, 3), requires_grad=True)
    base = x.clone()
    first, _ = base.unbind()
    base.mul_(2)
    with pytest.raises(RuntimeError) as error:
        (first * 2).sum().backward()
    assert str(error.value) == (
        f"Output 0 of Unbind is a view and its base or another view of its base has been modified inplace. "
        f"{MULTI_OUTPUT_TAIL}"
    )
    base.sum().backward()  # the base itself still differentiates
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))


# -- 4. view refuses what needs a copy -----------------------------------------------------------------------------
def test_view_of_a_non_contiguous_tensor_is_refused_where_reshape_copies():
    t = ag.arange(6.0).reshape(2, 3).t()
    with pytest.raises(RuntimeError) as error:
        t.view(6)
    assert str(error.value) == (
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
        "contiguous subspaces). Use .reshape(...) instead."
    )
    np.testing.assert_array_equal(t.reshape(6).numpy(), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0])
    assert t.view(1, 3, 2).shape == (1, 3, 2)  # size-1 dims need no copy
    assert ag.arange(24.0).reshape(2, 3, 4).permute(1, 0, 2).view(3, 2, 2, 2).shape == (3, 2, 2, 2)


# -- 5. small APIs ----------------------------------------------------------------------------------------------------
def test_t_mT_and_is_contiguous():
    x = leaf64(np.arange(6.0).reshape(2, 3))
    assert x.t().shape == (3, 2) and x.t().grad_fn.name() == "TBackward0"
    assert ag.ones(3).t().shape == (3,) and ag.tensor(1.0).t().shape == ()
    with pytest.raises(RuntimeError, match=r"^t\(\) expects a tensor with <= 2 dimensions, but self is 3D$"):
        ag.ones((2, 3, 4)).t()
    assert ag.ones((2, 3, 4)).mT.shape == (2, 4, 3)
    with pytest.raises(RuntimeError) as error:
        _ = ag.ones(3).mT
    assert str(error.value) == "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor."
    assert gradcheck(lambda t: t.t() * t.mT, (x,))
    assert ag.ones((3, 4)).is_contiguous() and ag.ones((3, 1)).t().is_contiguous()
    assert not ag.ones((3, 4)).t().is_contiguous() and not ag.ones((3, 4))[:, :2].is_contiguous()


@pytest.mark.parametrize(
    "method, node, expected",
    [
        ("relu_", "ReluBackward0", lambda a: np.maximum(a, 0)),
        ("exp_", "ExpBackward0", np.exp),
        ("sigmoid_", "SigmoidBackward0", lambda a: 1 / (1 + np.exp(-a))),
        ("tanh_", "TanhBackward0", np.tanh),
    ],
)
def test_unary_inplace_ops(method, node, expected):
    values = np.array([-1.3, 0.4, 2.2])
    x = leaf64(values)
    y = x * 1
    assert getattr(y, method)() is y and y.grad_fn.name() == node
    np.testing.assert_allclose(y.detach().numpy(), expected(values))
    assert gradcheck(lambda t: getattr(t * 1, method)(), (x,))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        getattr(x, method)()


def test_inplace_float_op_on_an_integer_tensor_is_refused():
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired output type Long$"):
        ag.tensor([1, 2]).exp_()
    relu = ag.tensor([-1, 2]).relu_()
    assert relu.dtype == ag.int64 and relu.tolist() == [0, 2]


def test_detach_():
    x = ag.ones(3, requires_grad=True)
    y = x * 2
    assert y.detach_() is y and y.grad_fn is None and not y.requires_grad and y.is_leaf
    with pytest.raises(RuntimeError, match=r"^Can't detach views in-place. Use detach\(\) instead. If you are using"):
        (x * 1)[:2].detach_()


def test_bool_alias():
    assert ag.bool is ag.bool_
    assert ag.tensor([1, 0], dtype=ag.bool).tolist() == [True, False]


def test_sum_and_mean_with_dtype():
    ints = ag.tensor([1, 2, 3])
    assert ints.sum(dtype=ag.float32).dtype == ag.float32
    assert ints.mean(dtype=ag.float64).item() == 2.0
    assert ag.tensor([1.5, 2.5]).sum(dtype=ag.int64).item() == 3  # cast first, then summed
    with pytest.raises(RuntimeError) as error:
        ints.mean(dtype=ag.int64)
    assert str(error.value) == (
        "mean(): could not infer output dtype. Optional dtype must be either a floating point or complex dtype. "
        "Got: Long"
    )
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    total = x.sum(dtype=ag.float64)
    assert total.dtype == ag.float64 and total.grad_fn.name() == "SumBackward0"
    x.mean(0, dtype=ag.float64).backward()
    assert x.grad.dtype == ag.float32 and x.grad.tolist() == [0.5, 0.5]
    assert ag.ones((2, 3)).sum(1, dtype=ag.float64, keepdim=True).shape == (2, 1)


def test_add_and_sub_with_alpha():
    ones = ag.ones(2)
    assert ag.add(ones, ones, alpha=3).tolist() == [4.0, 4.0]
    assert ones.sub(ones, alpha=3).tolist() == [-2.0, -2.0]
    assert ag.add(ones, 2, alpha=3).tolist() == [7.0, 7.0]
    with pytest.raises(RuntimeError, match="^For integral input tensors, argument alpha must not be a floating"):
        ag.add(ag.tensor([1, 2]), 1, alpha=0.5)
    a, b = leaf64([1.0, 2.0]), leaf64([0.5, -1.0])
    assert ag.sub(a, b, alpha=2).grad_fn.name() == "SubBackward0"
    assert gradcheck(lambda p, q: ag.sub(p, q, alpha=2) * p.add(q, alpha=-1.5), (a, b))


def test_data_setter():
    x = ag.ones(3, requires_grad=True)
    replacement = ag.zeros(5, dtype=ag.float64)
    x.data = replacement
    assert x.shape == (5,) and x.dtype == ag.float64 and x.requires_grad and x.is_leaf and x._version == 0
    replacement.add_(1)  # the array is shared, as in PyTorch
    assert x.tolist() == [1.0] * 5
    y = x * 2
    y.data = ag.ones(2)
    assert y.tolist() == [1.0, 1.0] and y.grad_fn.name() == "MulBackward0"
    with pytest.raises(TypeError, match="^Variable data has to be a tensor, but got int$"):
        x.data = 5


def test_reshape_infers_a_size_from_the_other_dims_of_an_empty_tensor():
    assert ag.zeros(2, 0, 3).reshape(-1, 3).shape == (0, 3)
    assert ag.zeros(0, 1, 2).flatten(1).shape == (0, 2)
    assert ag.nn.functional.linear(ag.zeros(1, 1, 0), ag.zeros(3, 0)).shape == (1, 1, 3)
    with pytest.raises(RuntimeError, match=r"cannot reshape tensor of 0 elements into shape \[0, -1\]"):
        ag.zeros(0, 2).reshape(0, -1)


def test_bce_with_logits_target_gradient_is_finite_for_very_negative_logits():
    """d/dt = -x + (pos_weight - 1) softplus(-x): finite where log(sigmoid(x)) underflows."""
    x = ag.tensor([-120.0, 3.0, -800.0], dtype=ag.float64, requires_grad=True)
    t = ag.tensor([0.3, 0.5, 0.1], dtype=ag.float64, requires_grad=True)
    pos_weight = ag.tensor([2.0, 2.0, 2.0], dtype=ag.float64)
    ag.nn.functional.binary_cross_entropy_with_logits(x, t, pos_weight=pos_weight).backward()
    xs = x.detach().numpy()
    softplus_of_minus_x = np.logaddexp(0.0, -xs)  # finite in numpy too: log(1 + e^-x) without forming sigmoid
    np.testing.assert_allclose(t.grad.numpy(), (-xs + softplus_of_minus_x) / 3, rtol=1e-12)  # pos_weight 2, mean of 3
    t.grad = None
    ag.nn.functional.binary_cross_entropy_with_logits(x, t).backward()
    np.testing.assert_allclose(t.grad.numpy(), -xs / 3, rtol=1e-12)  # pos_weight 1: -x


def test_a_max_pool_window_over_padding_alone_sends_no_gradient():
    x = ag.ones(1, 1, 1, 1, dtype=ag.float64, requires_grad=True)
    y = ag.nn.functional.max_pool2d(x, (3, 2), (3, 3), (1, 1), (1, 2), True)
    y.sum().backward()
    assert y.tolist() == [[[[-np.inf]]]] and x.grad.tolist() == [[[[0.0]]]]
