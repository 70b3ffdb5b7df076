"""PyTorch's rules for three things a port meets: a saved tensor detached in place, the double backward through
the poolings (their backward takes the input, so a second gradient is zeros, not an error), and the size, dim and
number arguments of the shape methods and creation functions."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck

DETACHED = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is not supported, "
    "please use out-of-place `.detach()` instead"
)


# -- detach_() on a tensor a node saved --------------------------------------------------------------------------
def _leaf() -> ag.Tensor:
    return ag.tensor([1.0, 2.0, 3.0], requires_grad=True)


def _detached_after_saving(op):
    """x, and the loss of `op` on y = 2x after y was detached in place."""
    x = _leaf()
    y = x * 2
    z = op(y, x)
    y.detach_()
    return x, z.sum()


@pytest.mark.parametrize("op", [lambda y, x: y * y, lambda y, x: y * x, lambda y, x: y.sin()])
def test_a_saved_input_detached_in_place_is_refused_at_backward(op):
    x, loss = _detached_after_saving(op)
    with pytest.raises(RuntimeError) as error:
        loss.backward()
    assert str(error.value) == DETACHED
    assert x.grad is None
    x, loss = _detached_after_saving(op)
    with pytest.raises(RuntimeError) as error:
        ag.autograd.grad(loss, x)
    assert str(error.value) == DETACHED


def test_only_an_input_detached_after_it_was_saved_is_refused():
    x = _leaf()
    y = x * 2
    y.detach_()  # before the op saves it: a constant of the op
    (y * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])  # d(sum(y * x))/dx = y = 2x
    x = _leaf()
    y = x.exp()  # ExpBackward0 saved its own output, which PyTorch reads through the node
    s = y.sum()
    y.detach_()
    s.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0, 3.0]), rtol=1e-6)
    x, a = _leaf(), ag.tensor([4.0, 5.0, 6.0], requires_grad=True)
    z, w = x * a, x * 2
    doubled = w + w  # add saves nothing
    a.detach_()  # a leaf: its node never had a history to lose
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 5.0, 6.0])
    assert a.grad is None
    before = w._version
    w.detach_()
    assert w._version == before and w.grad_fn is None and not w.requires_grad
    doubled.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 9.0, 10.0])
    _, loss = _detached_after_saving(lambda y, x: y * y)
    with pytest.raises(RuntimeError, match="detached in-place"):
        loss.backward()


# -- double backward through the poolings ------------------------------------------------------------------------
def _input(shape: tuple[int, ...]) -> ag.Tensor:
    rng = np.random.default_rng(sum(shape))
    n = int(np.prod(shape))
    values = rng.permutation(n) * 0.1 + rng.random(n) * 0.01  # distinct values: no ties in a window
    return ag.tensor(values.reshape(shape), dtype=ag.float64, requires_grad=True)


POOLS = {
    "max_pool1d": ((2, 2, 9), lambda a: F.max_pool1d(a, 3, 2, 1), "MaxPool2DWithIndicesBackwardBackward0"),
    "max_pool2d": ((1, 2, 5, 5), lambda a: F.max_pool2d(a, 3, 2, 1), "MaxPool2DWithIndicesBackwardBackward0"),
    "max_pool2d_ceil": ((2, 1, 5, 6), lambda a: F.max_pool2d(a, 2, ceil_mode=True),
                        "MaxPool2DWithIndicesBackwardBackward0"),
    "max_pool3d": ((1, 1, 4, 4, 4), lambda a: F.max_pool3d(a, 2, 1, 1), "MaxPool3DWithIndicesBackwardBackward0"),
    "avg_pool1d": ((2, 2, 7), lambda a: F.avg_pool1d(a, 3, 2, 1), "AvgPool2DBackwardBackward0"),
    "avg_pool2d": ((1, 2, 5, 5), lambda a: F.avg_pool2d(a, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                   "AvgPool2DBackwardBackward0"),
    "avg_pool2d_divisor": ((1, 2, 4, 4), lambda a: F.avg_pool2d(a, 2, divisor_override=3),
                           "AvgPool2DBackwardBackward0"),
    "avg_pool3d": ((1, 1, 4, 4, 4), lambda a: F.avg_pool3d(a, 2, 1, 1), "AvgPool3DBackwardBackward0"),
    "adaptive_avg_pool1d": ((2, 2, 7), lambda a: F.adaptive_avg_pool1d(a, 3), "AdaptiveAvgPool2DBackwardBackward0"),
    "adaptive_avg_pool2d": ((2, 1, 5, 7), lambda a: F.adaptive_avg_pool2d(a, (3, 4)),
                            "AdaptiveAvgPool2DBackwardBackward0"),
    "adaptive_avg_pool3d": ((1, 1, 5, 4, 6), lambda a: F.adaptive_avg_pool3d(a, (2, 3, 4)),
                            "AdaptiveAvgPool3DBackwardBackward0"),
    "adaptive_max_pool1d": ((2, 2, 7), lambda a: F.adaptive_max_pool1d(a, 3), "AdaptiveMaxPool2DBackwardBackward0"),
    "adaptive_max_pool2d": ((2, 1, 5, 7), lambda a: F.adaptive_max_pool2d(a, (3, 4)),
                            "AdaptiveMaxPool2DBackwardBackward0"),
    "adaptive_max_pool3d": ((1, 1, 5, 4, 6), lambda a: F.adaptive_max_pool3d(a, (2, 3, 4)),
                            "AdaptiveMaxPool3DBackwardBackward0"),
    "fractional_max_pool2d": ((1, 2, 6, 6), lambda a: F.fractional_max_pool2d(
        a, 2, output_size=(3, 3), _random_samples=ag.tensor([[[0.3, 0.6], [0.5, 0.2]]], dtype=ag.float64)),
        "FractionalMaxPool2DBackwardBackward0"),
    "fractional_max_pool3d": ((1, 1, 5, 5, 5), lambda a: F.fractional_max_pool3d(
        a, 2, output_size=(2, 2, 2), _random_samples=ag.tensor([[[0.3, 0.6, 0.8]]], dtype=ag.float64)),
        "FractionalMaxPool3DBackwardBackward0"),
}


def _backward_node(g: ag.Tensor):
    """The pooling's own double-backward node (the 1-d forms end in a squeeze's view)."""
    node = g.grad_fn
    while node is not None and "Pool" not in node.name():
        node = node.next_functions[0][0]
    return node


@pytest.mark.parametrize("name", sorted(POOLS))
def test_a_pooling_gradient_depends_on_the_input_with_a_zero_derivative(name):
    shape, pool, node_name = POOLS[name]
    a = _input(shape)
    (g,) = ag.autograd.grad(pool(a).sum(), a)
    assert not g.requires_grad and g.grad_fn is None  # a first-order gradient records nothing
    (g,) = ag.autograd.grad(pool(a).sum(), a, create_graph=True)
    assert g.requires_grad and _backward_node(g).name() == node_name
    (second,) = ag.autograd.grad(g.sum(), a)
    assert second.shape == a.shape and not second.numpy().any()
    assert gradcheck(pool, (a,))
    assert gradgradcheck(pool, (a,))  # the BackwardBackward node's gradient for g, against finite differences


def test_changing_a_pooled_input_in_place_before_backward_is_refused():
    x = _input((1, 1, 4, 4))
    a = x * 1
    out = F.avg_pool2d(a, 2)
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_global_adaptive_average_pooling_is_a_mean():
    a = _input((2, 3, 4, 5))
    out = F.adaptive_avg_pool2d(a, 1)
    assert out.grad_fn.name() == "MeanBackward1"
    np.testing.assert_allclose(out.detach().numpy(), a.detach().numpy().mean((2, 3), keepdims=True), rtol=1e-14)
    assert F.adaptive_avg_pool3d(_input((1, 2, 3, 4, 5)), (1, 1, 1)).grad_fn.name() == "MeanBackward1"


# -- size, dim and number arguments ------------------------------------------------------------------------------
@pytest.mark.parametrize("sizes", [(3,), (2, 3), (np.int64(3),), (ag.tensor(3),)])
def test_broadcast_to_takes_sizes_as_the_method_does(sizes):
    one = ag.tensor([5.0])
    out = one.broadcast_to(*sizes)
    expected = tuple(int(n) for n in sizes)
    assert out.shape == expected and (out.numpy() == 5.0).all()


@pytest.mark.parametrize(
    ("dtype", "value", "expected"),
    [
        ("float32", 3.0, 3.0),
        ("float64", 3, 3.0),
        ("int64", 2.7, 2),  # cast toward zero, as C casts
        ("uint8", 300, 300 % 256),
        ("bool", 2, True),
        ("float32", 1 + 3j, 1.0),  # a complex number's real part
        ("complex64", 1 + 3j, 1 + 3j),
        ("int64", np.int8(-3), -3),
        ("float32", np.float32(2.5), 2.5),
    ],
)
def test_copy_from_a_number_fills(dtype, value, expected):
    x = ag.zeros(3, dtype=getattr(ag, dtype))
    assert x.copy_(value) is x
    assert x.dtype == getattr(ag, dtype)
    np.testing.assert_array_equal(x.numpy(), np.full(3, expected, dtype=np.dtype(dtype)))
    assert x._version == 1


def test_copy_from_a_number_records_a_copy_and_checks_its_argument():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.copy_(1.5)
    assert y.grad_fn.name() == "torch::autograd::CopyBackwards"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])  # the filled values do not depend on x
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.copy_(1.0)
    with pytest.raises(TypeError) as error:
        ag.zeros(2).copy_(np.ones(2))
    assert str(error.value) == "copy_(): argument 'other' (position 1) must be Tensor, not numpy.ndarray"
    with pytest.raises(OverflowError, match="int too big to convert"):
        ag.zeros(2).copy_(2**70)


VIEW_NO_ARGUMENTS = (
    "view() received an invalid combination of arguments - got (), but expected one of:\n * (torch.dtype dtype)\n"
    " * (tuple of ints size)\n"
)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: x.view(), VIEW_NO_ARGUMENTS),
        (lambda x: x.reshape(), 'reshape() missing 1 required positional arguments: "shape"'),
        (lambda x: x.expand(), 'expand() missing 1 required positional arguments: "size"'),
        (lambda x: x.repeat(), 'repeat() missing 1 required positional arguments: "repeats"'),
        (lambda x: x.permute(), 'permute() missing 1 required positional arguments: "dims"'),
        (lambda x: x.tile(), 'tile() missing 1 required positional arguments: "dims"'),
        (lambda x: x.reshape(6.0), "reshape(): argument 'shape' (position 1) must be tuple of ints, not float"),
        (lambda x: x.reshape((2.0, 3)),
         "reshape(): argument 'shape' (position 1) must be tuple of ints, but found element of type float at pos 0"),
        (lambda x: x.reshape((True, 6)),
         "reshape(): argument 'shape' (position 1) must be tuple of ints, but found element of type bool at pos 0"),
        (lambda x: x.reshape(None), "reshape(): argument 'shape' (position 1) must be tuple of ints, not NoneType"),
        (lambda x: x.reshape(shape=6), "reshape(): argument 'shape' must be tuple of ints, not int"),
        (lambda x: x.expand(size=3), "expand(): argument 'size' must be tuple of ints, not int"),
        (lambda x: x.repeat(True), "repeat(): argument 'repeats' (position 1) must be tuple of ints, not bool"),
        (lambda x: x.tile(2.0), "tile(): argument 'dims' (position 1) must be tuple of ints, not float"),
        (lambda x: x.permute(np.array([1, 0])),
         "permute(): argument 'dims' (position 1) must be tuple of ints, not numpy.ndarray"),
        (lambda x: x.unflatten(1, 3), "unflatten(): argument 'sizes' must be tuple of ints, not int"),
    ],
)
def test_size_arguments_are_refused_with_pytorchs_type_errors(call, message):
    with pytest.raises(TypeError) as error:
        call(ag.arange(6.0).reshape(2, 3))
    assert str(error.value) == message


def test_no_sizes_are_refused_but_an_empty_size_list_is_a_zero_dim_shape():
    x = ag.tensor([7.0])
    with pytest.raises(TypeError, match="missing 1 required positional arguments"):
        x.reshape()
    assert x.reshape(()).shape == () and x.view([]).shape == () and ag.tensor(2.0).permute(()).shape == ()
    np.testing.assert_array_equal(ag.kron(ag.tensor(2.0), ag.tensor(3.0)).numpy(), 6.0)  # reshapes to ()
    t = ag.tensor(2.0, requires_grad=True)
    assert ag.autograd.functional.jacobian(lambda v: v * v, t).item() == 4.0  # permutes a 0-d block


def test_view_names_both_of_its_forms_for_bad_sizes():
    with pytest.raises(TypeError) as error:
        ag.arange(6.0).view(2.0, 3)
    assert str(error.value) == VIEW_NO_ARGUMENTS.replace("got ()", "got (float, int)")


@pytest.mark.parametrize("negative", [np.int64(-2), ag.tensor(-2)])
def test_a_negative_size_of_any_integer_kind_is_refused(negative):
    x = ag.arange(6.0)
    for method in (x.reshape, x.view):
        with pytest.raises(RuntimeError, match=r"invalid shape dimension -2 at index 0 of shape \[-2\]"):
            method(negative)


def test_sizes_and_dims_take_numpy_integers_and_integer_zero_dim_tensors():
    x = ag.arange(6.0).reshape(2, 3)
    data = np.arange(6.0).reshape(2, 3)
    assert x.reshape(np.int64(3), ag.tensor(2)).shape == (3, 2)
    assert x.reshape(6, True).shape == (6, 1)  # a bool past the first size is an int to PyTorch's parser
    assert x.view((np.int32(6),)).shape == (6,)
    assert x.permute(ag.tensor(1), np.int64(0)).shape == (3, 2)
    assert x.expand(np.int64(2), ag.tensor(-1)).shape == (2, 3)
    np.testing.assert_array_equal(x.repeat(repeats=(2, 1)).numpy(), np.concatenate([data, data]))
    np.testing.assert_array_equal(x.tile(dims=(np.int64(2),)).numpy(), np.concatenate([data, data], 1))
    np.testing.assert_array_equal(x.movedim(np.int64(1), ag.tensor(0)).numpy(), data.T)
    np.testing.assert_array_equal(x.roll(np.int64(1), ag.tensor(0)).numpy(), data[::-1])
    np.testing.assert_array_equal(x.roll(ag.tensor(1), 1).numpy(), data[:, [2, 0, 1]])
    assert x.unflatten(np.int64(1), (ag.tensor(3), np.int64(1))).shape == (2, 3, 1)
    assert x.size(ag.tensor(1)) == 3 and x.stride(ag.tensor(0)) == 3


def test_linspace_and_logspace_take_an_integer_zero_dim_tensor_of_steps():
    np.testing.assert_allclose(ag.linspace(0, 1, ag.tensor(3)).numpy(), [0.0, 0.5, 1.0])
    np.testing.assert_allclose(ag.logspace(0, 2, ag.tensor(3, dtype=ag.uint8)).numpy(), [1.0, 10.0, 100.0])
    with pytest.raises(TypeError, match="argument 'steps' must be int, not Tensor"):
        ag.linspace(0, 1, ag.tensor(3.0))


# -- on a device --------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_pooling_double_backward_and_copy_from_a_number_on_cuda(cupy):
    a = ag.tensor(np.random.default_rng(0).permutation(16).reshape(1, 1, 4, 4) * 1.0, device="cuda",
                  requires_grad=True)
    pools = (lambda t: F.max_pool2d(t, 3, 2, 1), lambda t: F.avg_pool2d(t, 2),
             lambda t: F.adaptive_max_pool2d(t, 3), lambda t: F.adaptive_avg_pool2d(t, 3))
    for pool in pools:
        (g,) = ag.autograd.grad(pool(a).sum(), a, create_graph=True)
        (second,) = ag.autograd.grad(g.sum(), a)
        assert second.device == a.device and not second.cpu().numpy().any()
    x = ag.zeros(3, device="cuda", dtype=ag.int64)
    x.copy_(2.7)
    assert x.device.type == "cuda"
    np.testing.assert_array_equal(x.cpu().numpy(), [2, 2, 2])
