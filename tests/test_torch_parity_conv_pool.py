"""conv1d/conv2d, max/avg pooling and linear as PyTorch's: the dtypes they refuse to mix, the parameters they take,
which element a max-pooling window over -inf or padding names, and their error texts and order.

Values are computed in numpy from the documented formulas or are small closed forms (the comments say how); which
element a window names, and the messages, were read off torch 2.13 (torch is not a test dependency).
"""

import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad import user_warnings

f32, f64 = ag.float32, ag.float64


def _raises(fn, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        fn()


# -- mixed dtypes --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("conv_fn, dims", [(F.conv1d, 1), (F.conv2d, 2)])
@pytest.mark.parametrize("x_dtype, w_dtype, b_dtype, message", [
    (f32, f64, None, "expected scalar type Float but found Double"),
    (f64, f32, None, "expected scalar type Double but found Float"),
    (f64, ag.int64, None, "expected scalar type Double but found Long"),
    (f32, f32, f64, "Input type (float) and bias type (double) should be the same"),
    (f64, f64, f32, "Input type (double) and bias type (float) should be the same"),
    (f32, f64, f64, "Input type (float) and bias type (double) should be the same"),  # the bias is checked first
    (f64, f32, f64, "expected scalar type Double but found Float"),
    (f32, f32, ag.int64, "Input type (float) and bias type (long int) should be the same"),
    (f32, f32, ag.float16, "Input type (float) and bias type (c10::Half) should be the same"),
])
def test_conv_refuses_mixed_dtypes(conv_fn, dims, x_dtype, w_dtype, b_dtype, message):
    x, w = ag.ones(1, 1, *(3,) * dims, dtype=x_dtype), ag.ones(1, 1, *(2,) * dims, dtype=w_dtype)
    b = None if b_dtype is None else ag.ones(1, dtype=b_dtype)
    _raises(lambda: conv_fn(x, w, b), RuntimeError, message)


def test_conv_with_a_padding_string_casts_a_bias_of_another_dtype():
    x = ag.tensor(np.arange(16.0).reshape(1, 1, 4, 4), dtype=f32)
    w = ag.tensor([[[[1.0, -1.0], [2.0, 0.5]]]], dtype=f32)
    b = ag.tensor([0.25], dtype=f64, requires_grad=True)
    y = F.conv2d(x, w, b, padding="valid")
    assert y.dtype == f32
    # x[i, j] = 4 i + j: x[0, j] - x[0, j + 1] + 2 x[1, j] + 0.5 x[1, j + 1] + 0.25 = 9.75 + 2.5 j
    np.testing.assert_allclose(y.detach().numpy()[0, 0, 0], [9.75, 12.25, 14.75])
    (gb,) = ag.autograd.grad(y.sum(), b)
    assert gb.dtype == f64 and gb.tolist() == [9.0]  # one for each of the 3 x 3 outputs


@pytest.mark.parametrize("x_shape", [(3, 4), (5, 3, 4), (4,)])
@pytest.mark.parametrize("x_dtype, w_dtype, b_dtype, message", [
    (f32, f64, None, "expected m1 and m2 to have the same dtype, but got: float != double"),
    (f64, f32, None, "expected m1 and m2 to have the same dtype, but got: double != float"),
    (f32, ag.int64, None, "expected m1 and m2 to have the same dtype, but got: float != long int"),
    (f32, f32, f64, "self and mat2 must have the same dtype, but got Double and Float"),
    (f64, f64, f32, "self and mat2 must have the same dtype, but got Float and Double"),
    (f32, f64, f64, "mat1 and mat2 must have the same dtype, but got Float and Double"),
    (f32, f64, f32, "self and mat2 must have the same dtype, but got Float and Double"),
    (f32, ag.float16, ag.float16, "mat1 and mat2 must have the same dtype, but got Float and Half"),
])
def test_linear_refuses_mixed_dtypes(x_shape, x_dtype, w_dtype, b_dtype, message):
    x, w = ag.ones(*x_shape, dtype=x_dtype), ag.ones(2, 4, dtype=w_dtype)
    b = None if b_dtype is None else ag.ones(2, dtype=b_dtype)
    _raises(lambda: F.linear(x, w, b), RuntimeError, message)


def test_linear_with_a_bias_checks_dtypes_before_shapes():
    _raises(lambda: F.linear(ag.ones(3, 5), ag.ones(2, 4), ag.ones(2, dtype=f64)), RuntimeError,
            "self and mat2 must have the same dtype, but got Double and Float")
    _raises(lambda: F.linear(ag.ones(3, 5), ag.ones(2, 4, dtype=f64)), RuntimeError,
            "mat1 and mat2 shapes cannot be multiplied (3x5 and 4x2)")


# -- linear with a 1-D weight, and linear's other errors ----------------------------------------------------------
def test_linear_takes_a_1d_weight_as_a_vector():
    x = ag.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]], requires_grad=True)
    w = ag.tensor([0.5, -1.0, 2.0, 1.0], requires_grad=True)
    y = F.linear(x, w)
    xs, ws, upstream = x.detach().numpy(), w.detach().numpy(), np.array([1.0, -2.0])
    assert y.tolist() == (xs @ ws).tolist()
    gx, gw = ag.autograd.grad(y, (x, w), ag.tensor(upstream))
    assert gx.tolist() == np.outer(upstream, ws).tolist()  # d(u . x w)/dx = u w^T, d/dw = u x
    assert gw.tolist() == (upstream @ xs).tolist()
    assert F.linear(ag.ones(2, 3, 4), ag.ones(4)).tolist() == [[4.0] * 3] * 2


def test_linear_with_a_1d_weight_takes_a_bias_only_off_the_fused_path():
    x, w = ag.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True), ag.tensor([0.5, -1.0, 2.0, 1.0], requires_grad=True)
    y = F.linear(x, w, ag.tensor(0.5))
    assert y.item() == 9.0  # 0.5 - 2 + 6 + 4 + 0.5
    gx, gw = ag.autograd.grad(y, (x, w))
    assert gx.tolist() == [0.5, -1.0, 2.0, 1.0] and gw.tolist() == [1.0, 2.0, 3.0, 4.0]
    for x_shape, b_shape in (((2, 4), ()), ((4,), (1,)), ((2, 3, 4), (3,))):
        x, b = ag.ones(size=x_shape), ag.ones(size=b_shape)
        _raises(lambda: F.linear(x, ag.ones(4), b), RuntimeError, "mat2 must be a matrix, got 1-D tensor")  # noqa: B023


def test_linear_adds_a_2d_bias_to_a_batched_input_after_the_matmul():
    y = F.linear(ag.ones(5, 3, 4), ag.ones(2, 4), ag.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    assert y.shape == (5, 3, 2) and y[4].tolist() == [[5.0, 6.0], [7.0, 8.0], [9.0, 10.0]]  # 4 + the bias


@pytest.mark.parametrize("x_shape, w_shape, message", [
    ((), (2, 4), "both arguments to linear need to be at least 1D, but they are 0D and 2D"),
    ((3, 4), (), "both arguments to linear need to be at least 1D, but they are 2D and 0D"),
    ((3, 4), (1, 2, 4), "t() expects a tensor with <= 2 dimensions, but self is 3D"),
])
def test_linear_rank_errors(x_shape, w_shape, message):
    _raises(lambda: F.linear(ag.ones(size=x_shape), ag.ones(size=w_shape)), RuntimeError, message)


# -- conv parameters -------------------------------------------------------------------------------------------
def _numpy_conv2d_pad1_stride2(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """One plane, one 2x2 filter, padding 1 and stride 2 (so dilation 1): the documented cross-correlation."""
    padded = np.pad(x, 1)
    size = (padded.shape[0] - 2) // 2 + 1
    return np.array([[np.sum(padded[2 * i:2 * i + 2, 2 * j:2 * j + 2] * w) for j in range(size)]
                     for i in range(size)])


def test_conv_expands_a_single_value_tuple_to_every_dim(numpy_gradient):
    xs, ws = np.arange(9.0).reshape(3, 3), np.array([[1.0, -2.0], [3.0, 0.5]])
    upstream = np.array([[1.0, 2.0], [-1.0, 3.0]])
    x = ag.tensor(xs[None, None], requires_grad=True)
    w = ag.tensor(ws[None, None], requires_grad=True)
    y = F.conv2d(x, w, padding=(1,), stride=(2,), dilation=(1,))
    assert y.tolist() == [[_numpy_conv2d_pad1_stride2(xs, ws).tolist()]]
    gx, gw = ag.autograd.grad(y, (x, w), ag.tensor(upstream[None, None]))
    np.testing.assert_allclose(gx.numpy()[0, 0], numpy_gradient(
        lambda a: (_numpy_conv2d_pad1_stride2(a, ws) * upstream).sum(), xs), atol=1e-8)
    np.testing.assert_allclose(gw.numpy()[0, 0], numpy_gradient(
        lambda a: (_numpy_conv2d_pad1_stride2(xs, a) * upstream).sum(), ws), atol=1e-8)
    assert F.conv2d(ag.zeros(1, 1, 5, 5), ag.zeros(1, 1, 2, 2), padding=[1]).shape == (1, 1, 6, 6)


def test_conv_same_padding_with_an_odd_total_warns_once(monkeypatch):
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F.conv2d(ag.zeros(1, 1, 4, 4), ag.zeros(1, 1, 3, 3), padding="same")  # even totals: no copy, no warning
        assert caught == []
        y = F.conv1d(ag.zeros(1, 1, 4), ag.zeros(1, 1, 2), padding="same")
        F.conv2d(ag.zeros(1, 1, 4, 4), ag.zeros(1, 1, 2, 3), padding="same")
    assert y.shape == (1, 1, 4)
    assert [(w.category, str(w.message), w.filename) for w in caught] == [(
        UserWarning, "Using padding='same' with even kernel lengths and odd dilation may require a zero-padded copy "
        "of the input be created", __file__)]


X, W = (1, 2, 5, 5), (3, 2, 2, 2)


@pytest.mark.parametrize("x_shape, w_shape, kw, message", [
    (X, W, dict(stride=0), "non-positive stride is not supported"),
    (X, W, dict(padding=-1), "negative padding is not supported"),
    (X, W, dict(padding=-1, stride=0), "negative padding is not supported"),
    (X, W, dict(groups=0), "non-positive groups is not supported"),
    (X, W, dict(groups=0, stride=(1, 1, 1)), "non-positive groups is not supported"),
    (X, W, dict(dilation=-1), "dilation should be greater than zero"),
    (X, W, dict(dilation=0), "dilation should be greater than zero, but got [0, 0]"),
    (X, W, dict(dilation=(2, 0)), "dilation should be greater than zero, but got [2, 0]"),
    ((1, 2, 5), (3, 2, 2), dict(dilation=0), "dilation should be greater than zero, but got [1, 0]"),
    (X, W, dict(stride=(1, 1, 1)), "expected stride to be a single integer value or a list of 2 values to match "
                                   "the convolution dimensions, but got stride=[1, 1, 1]"),
    (X, W, dict(padding=()), "expected padding to be a single integer value or a list of 2 values to match the "
                             "convolution dimensions, but got padding=[]"),
    ((1, 2, 5), (3, 2, 2), dict(dilation=(1, 1)), "expected dilation to be a single integer value or a list of "
                                                  "1 values to match the convolution dimensions, but got "
                                                  "dilation=[1, 1]"),
    (X, (3, 2, 2), {}, "expected stride to be a single integer value or a list of 1 values to match the convolution "
                       "dimensions, but got stride=[1, 1]"),
    (X, (3, 2, 2), dict(stride=(1,), padding=(0,), dilation=(1,)), "expected output_padding to be a single integer "
     "value or a list of 1 values to match the convolution dimensions, but got output_padding=[0, 0]"),
    (X, (3, 2), {}, "weight should have at least three dimensions"),
    ((1, 2, 5), W, {}, "Expected 4-dimensional input for 4-dimensional weight [3, 2, 2, 2], but got 3-dimensional "
                       "input of size [1, 2, 5] instead"),
    (X, (0, 2, 2, 2), {}, "Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of size "
                          "[0, 2, 2, 2] instead"),
    (X, (1, 1, 2, 2), dict(groups=2), "Given groups=2, expected weight to be at least 2 at dimension 0, but got "
                                      "weight of size [1, 1, 2, 2] instead"),
    (X, W, dict(padding="foo"), "Invalid padding string: 'foo'"),
    (X, W, dict(padding="foo", stride=0), "Invalid padding string: 'foo'"),
    (X, W, dict(padding="same", stride=2), "padding='same' is not supported for strided convolutions"),
    (X, W, dict(padding="same", stride=(1, 1, 1)), "stride cannot broadcast to 2 dimensions"),
    (X, W, dict(padding="same", stride=2, dilation=(1, 1, 1)), "dilation cannot broadcast to 2 dimensions"),
    (X, (3, 2, 2, 2, 2), dict(padding="same"), "Expected 5-dimensional input for 5-dimensional weight[3, 2, 2, 2, "
                                               "2], but got 4-dimensional input of size [1, 2, 5, 5] instead"),
    (X, W, dict(padding="valid", stride=()), "expected stride to be a single integer value or a list of 2 values to "
                                             "match the convolution dimensions, but got stride=[]"),
])
def test_conv_errors_are_pytorchs_in_its_order(x_shape, w_shape, kw, message):
    x, w = ag.ones(*x_shape), ag.ones(*w_shape)
    _raises(lambda: (F.conv1d if len(x_shape) == 3 else F.conv2d)(x, w, **kw), RuntimeError, message)


@pytest.mark.parametrize("b_shape", [(4,), (3, 1), ()])
def test_conv_bias_shape_error(b_shape):
    _raises(lambda: F.conv2d(ag.ones(*X), ag.ones(*W), ag.ones(size=b_shape)), RuntimeError,
            f"Given weight of size [3, 2, 2, 2], expected bias to be 1-dimensional with 3 elements, but got bias of "
            f"size {list(b_shape)} instead")


# -- max_pool2d: which element a window names ------------------------------------------------------------------
def test_max_pool2d_window_over_padding_alone_names_its_first_place_inside_the_input():
    x = ag.tensor([[[1.0], [2.0], [3.0], [4.0], [5.0]]], requires_grad=True)
    y, i = F.max_pool2d(x, kernel_size=(3, 2), stride=2, padding=1, dilation=2, return_indices=True)
    assert y.tolist() == [[[-np.inf], [-np.inf]]] and i.tolist() == [[[2], [2]]]
    u = ag.tensor([[[1.0], [2.0]]], requires_grad=True)
    (g,) = ag.autograd.grad(y, x, u, create_graph=True)
    assert g.tolist() == [[[0.0], [0.0], [3.0], [0.0], [0.0]]]
    (gu,) = ag.autograd.grad((g * ag.tensor([[[1.0], [2.0], [3.0], [4.0], [5.0]]])).sum(), u)
    assert gu.tolist() == [[[3.0], [3.0]]]


def test_max_pool2d_all_minus_inf_windows_name_their_first_place_inside_the_input():
    x = ag.full((1, 1, 3, 3), -np.inf, requires_grad=True)
    y, i = F.max_pool2d(x, 2, 1, 1, return_indices=True)
    assert i.tolist() == [[[[0, 0, 1, 2], [0, 0, 1, 2], [3, 3, 4, 5], [6, 6, 7, 8]]]]
    (g,) = ag.autograd.grad(y, x, ag.tensor(np.arange(16.0).reshape(1, 1, 4, 4)))
    named = np.bincount(np.ravel(i.tolist()), weights=np.arange(16.0), minlength=9)  # each output's to its index
    assert g.tolist() == [[named.reshape(3, 3).tolist()]]


def test_max_pool2d_index_past_the_plane_sends_no_gradient():
    x = ag.tensor([[[1.0], [2.0], [3.0], [4.0]]], requires_grad=True)
    y, i = F.max_pool2d(x, (1, 2), stride=1, padding=(0, 1), dilation=2, return_indices=True)
    assert i.tolist() == [[[1], [2], [3], [4]]]  # the last names no element of the 4x1 plane
    (g,) = ag.autograd.grad(y, x, ag.tensor([[[1.0], [2.0], [3.0], [4.0]]]))
    assert g.tolist() == [[[0.0], [1.0], [2.0], [3.0]]]


# -- pooling errors --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("shape, kw, message", [
    ((1, 1, 4, 4), dict(kernel_size=0), "stride should not be zero"),
    ((1, 1, 4, 4), dict(kernel_size=2, stride=(1, 0)), "stride should not be zero"),
    ((1, 1, 4, 4), dict(kernel_size=-1), "kernel size should be greater than zero, but got kH: -1 kW: -1"),
    ((1, 1, 4, 4), dict(kernel_size=2, stride=-1), "stride should be greater than zero, but got dH: -1 dW: -1"),
    ((1, 1, 4, 4), dict(kernel_size=2, padding=(0, -1)), "pad must be non-negative, but got pad: -1"),
    ((1, 1, 4, 4), dict(kernel_size=2, padding=2),
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and dilation=1"),
    ((1, 4, 1), dict(kernel_size=3),
     "Given input size: (1x4x1). Calculated output size: (1x1x0). Output size is too small"),
    ((2, 3, 4, 1), dict(kernel_size=3),
     "Given input size: (3x4x1). Calculated output size: (3x1x0). Output size is too small"),
    ((2, 0, 4, 4), dict(kernel_size=2),
     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[2, 0, 4, 4]"),
    ((0, 4, 4), dict(kernel_size=2),
     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[0, 4, 4]"),
    ((2, 0, 4, 4), dict(kernel_size=2, padding=2),
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and dilation=1"),
])
def test_pooling_errors_are_pytorchs_in_its_order(op, shape, kw, message):
    _raises(lambda: getattr(F, op)(ag.ones(*shape), **kw), RuntimeError, message)


@pytest.mark.parametrize("op", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("kw, message", [
    (dict(kernel_size=(2, 2, 2)), "kernel_size must either be a single int, or a tuple of two ints"),
    (dict(kernel_size=2, stride=(1, 1, 1)), "stride must either be omitted, a single int, or a tuple of two ints"),
    (dict(kernel_size=2, padding=()), "padding must either be a single int, or a tuple of two ints"),
])
def test_pooling_tuple_length_errors_name_the_op(op, kw, message):
    _raises(lambda: getattr(F, op)(ag.ones(1, 1, 4, 4), **kw), RuntimeError, f"{op}: {message}")


@pytest.mark.parametrize("kw, message", [
    (dict(kernel_size=2, dilation=(1, 1, 1)), "max_pool2d: dilation must be either a single int, or a tuple of two "
                                             "ints"),
    (dict(kernel_size=2, dilation=(1, 0)), "dilation should be greater than zero, but got dilationH: 1 dilationW: 0"),
    (dict(kernel_size=3, padding=2, dilation=2),
     "pad should be smaller than or equal to half of kernel size, but got padW = 2, padH = 2, kW = 3, kH = 3"),
])
def test_max_pool2d_dilation_errors(kw, message):
    _raises(lambda: F.max_pool2d(ag.zeros(1, 1, 7, 7), **kw), RuntimeError, message)


def test_pooling_takes_an_empty_stride_and_single_value_tuples():
    x = ag.tensor(np.arange(16.0).reshape(1, 1, 4, 4))
    assert F.max_pool2d(x, 2, stride=()).tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
    assert F.avg_pool2d(x, (2,), stride=(1,), padding=(1,)).shape == (1, 1, 5, 5)


@pytest.mark.parametrize("shape, error, message", [
    ((4, 4), RuntimeError, "non-empty 3D or 4D (batch mode) tensor expected for input"),
    ((1, 1, 1, 4, 4), RuntimeError, "non-empty 3D or 4D (batch mode) tensor expected for input"),
])
def test_max_pool2d_rank_errors(shape, error, message):
    _raises(lambda: F.max_pool2d(ag.ones(*shape), 2), error, message)


@pytest.mark.parametrize("shape, error, message", [
    ((4, 4), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    ((4,), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got -3)"),
    ((), IndexError, "Dimension specified as -3 but tensor has no dimensions"),
    ((1, 1, 1, 4, 4), RuntimeError,
     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 1, 1, 4, 4]"),
])
def test_avg_pool2d_rank_errors(shape, error, message):
    _raises(lambda: F.avg_pool2d(ag.ones(size=shape), 2), error, message)


def test_avg_pool2d_refuses_a_zero_divisor_and_takes_a_negative_one():
    _raises(lambda: F.avg_pool2d(ag.ones(1, 1, 2, 2), 2, divisor_override=0), RuntimeError, "divisor must be not zero")
    assert F.avg_pool2d(ag.ones(1, 1, 2, 2), 2, divisor_override=-2).tolist() == [[[[-2.0]]]]


def test_avg_pool2d_of_int64_divides_toward_zero():
    x = ag.tensor(-np.arange(16).reshape(1, 1, 4, 4))
    y = F.avg_pool2d(x, 3, stride=1, padding=1)
    assert y.dtype == ag.int64
    padded = np.pad(-np.arange(16).reshape(4, 4), 1)
    sums = np.array([[padded[i:i + 3, j:j + 3].sum() for j in range(4)] for i in range(4)])
    assert y.tolist() == [[[[int(v / 9) for v in row] for row in sums.tolist()]]]  # the padding counted: over 9


@pytest.mark.parametrize("op, dtype, name", [
    ("max_pool2d", ag.bool, "Bool"), ("avg_pool2d", ag.bool, "Bool"), ("avg_pool2d", ag.int32, "Int"),
])
def test_pooling_dtypes_pytorch_does_not_implement(op, dtype, name):
    _raises(lambda: getattr(F, op)(ag.ones(1, 1, 4, 4, dtype=dtype), 2), NotImplementedError,
            f'"{op}" not implemented for \'{name}\'')


def test_matmul_of_two_dtypes_names_them_as_torch():
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        ag.ones(3, 4) @ ag.ones(4, 2, dtype=ag.float64)
