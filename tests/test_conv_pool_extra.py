"""Transposed convolutions, Conv1d/ConvTranspose modules, 1-d pooling and the adaptive poolings as PyTorch's.

Values are checked against numpy loops over output positions written from the documented formulas, gradients
against finite differences in float64; shapes, reprs and messages were read off torch 2.13 (not a test dependency).
"""

import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.nn.layers import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from actorgrad.nn.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    MaxPool1d,
)
from actorgrad.ops import adaptive_pooling as AP
from actorgrad.ops import pooling as P
from actorgrad.ops.conv import conv_transpose1d, conv_transpose2d

TOL = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-4}


def _raises(fn, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        fn()


def _leaf(shape, seed):
    return ag.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


# -- conv_transpose ----------------------------------------------------------------------------------------------------
def _numpy_conv_transpose1d(x, w, b, stride, padding, output_padding, groups, dilation=1):
    """The documented scatter form: input element i of channel c adds x * w[c, o, k] at output position
    i * stride - padding + k * dilation of channel (c's group) * out_per_group + o; plus the bias."""
    n, c_in, length = x.shape
    out_per_group, size = w.shape[1], w.shape[2]
    in_per_group = c_in // groups
    out_len = (length - 1) * stride - 2 * padding + dilation * (size - 1) + output_padding + 1
    y = np.zeros((n, out_per_group * groups, out_len)) + b[None, :, None]
    for c in range(c_in):
        for o in range(out_per_group):
            for i in range(length):
                for k in range(size):
                    pos = i * stride - padding + k * dilation
                    if 0 <= pos < out_len:
                        y[:, c // in_per_group * out_per_group + o, pos] += x[:, c, i] * w[c, o, k]
    return y


def test_conv_transpose1d_values_and_gradients_match_a_numpy_loop(numpy_gradient):
    rng = np.random.default_rng(12)
    arrays = [rng.standard_normal((1, 2, 4)), rng.standard_normal((2, 2, 3)), rng.standard_normal(4)]
    kw = {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}
    x, w, b = (ag.tensor(a, requires_grad=True) for a in arrays)
    y = conv_transpose1d(x, w, b, **kw)
    np.testing.assert_allclose(y.detach().numpy(), _numpy_conv_transpose1d(*arrays, **kw), atol=1e-12)
    upstream = np.arange(32.0).reshape(1, 4, 8)
    grads = ag.autograd.grad((y * ag.tensor(upstream)).sum(), (x, w, b))
    for k, got in enumerate(grads):
        def loss(a, k=k):
            return (_numpy_conv_transpose1d(*arrays[:k], a, *arrays[k + 1:], **kw) * upstream).sum()
        np.testing.assert_allclose(got.numpy(), numpy_gradient(loss, arrays[k]), atol=1e-6)
    assert grads[2].tolist() == [28.0, 92.0, 156.0, 220.0]  # each channel's row of the upstream summed: 8 * 3.5 + 64 j
    assert y.grad_fn.name() == "ConvolutionBackward0"


@pytest.mark.parametrize("kw, out_hw", [
    ({}, (7, 6)),
    ({"stride": 2, "output_padding": 1}, (12, 10)),
    ({"stride": (2, 1), "padding": (1, 0), "dilation": 2}, (11, 8)),
    ({"dilation": 2, "output_padding": 1, "padding": (0, 1)}, (10, 7)),  # output_padding past the stride
    ({"groups": 2, "stride": 3, "output_padding": (2, 0)}, (17, 12)),
])
def test_conv_transpose2d_shapes_and_gradients_to_second_order(kw, out_hw):
    groups = kw.get("groups", 1)
    x, w, b = _leaf((2, 4, 5, 4), 0), _leaf((4, 6 // groups, 3, 3), 1), _leaf((6,), 2)
    y = conv_transpose2d(x, w, b, **kw)
    assert y.shape == (2, 6, *out_hw)
    f = lambda *t: conv_transpose2d(*t, **kw)  # noqa: E731
    assert gradcheck(f, [x, w, b], **TOL)
    assert gradgradcheck(f, [x, w, b], **TOL)


def test_conv_transpose_is_the_adjoint_of_conv_in_its_input():
    x, w = _leaf((2, 4, 5), 3), _leaf((4, 3, 3), 4)
    h = _leaf((2, 3, 9), 5)  # conv1d of this with w, stride 2, padding 1 gives length 5
    y = conv_transpose1d(x, w, stride=2, padding=1)
    lhs = (y * h).sum().item()
    rhs = (ag.nn.functional.conv1d(h, w, stride=2, padding=1) * x).sum().item()
    assert y.shape == (2, 3, 9) and lhs == pytest.approx(rhs, rel=1e-12)


def test_conv_transpose_takes_unbatched_input_and_casts_the_bias():
    x, w = _leaf((4, 5), 6), _leaf((4, 3, 2), 7)
    y = conv_transpose1d(x, w, ag.ones(3, dtype=ag.float32))
    assert y.shape == (3, 6) and y.dtype == ag.float64
    np.testing.assert_allclose(y.detach().numpy(), conv_transpose1d(x[None], w)[0].detach().numpy() + 1)


@pytest.mark.parametrize("fn, x_shape, w_shape, kw, error, message", [
    (conv_transpose2d, (1, 5, 5, 5), (4, 3, 3, 3), {}, RuntimeError,
     "Given transposed=1, weight of size [4, 3, 3, 3], expected input[1, 5, 5, 5] to have 4 channels, but got 5 "
     "channels instead"),
    (conv_transpose2d, (1, 4, 5, 5), (4, 3, 3, 3), {"output_padding": 1}, RuntimeError,
     "output padding must be smaller than either stride or dilation, but got output_padding_height: 1 "
     "output_padding_width: 1 stride_height: 1 stride_width: 1 dilation_height: 1 dilation_width: 1"),
    (conv_transpose1d, (2, 4, 5), (4, 3, 3), {"output_padding": 1}, RuntimeError,
     "output padding must be smaller than either stride or dilation, but got output_padding_height: 0 "
     "output_padding_width: 1 stride_height: 1 stride_width: 1 dilation_height: 1 dilation_width: 1"),
    (conv_transpose2d, (1, 4, 5, 5), (4, 3, 3, 3), {"groups": 3}, RuntimeError,
     "Given groups=3, expected weight to be divisible by 3 at dimension 0, but got weight of size [[4, 3, 3, 3]] "
     "instead"),
    (conv_transpose2d, (1, 4, 5, 5), (4, 3, 3, 3), {"bias": ag.ones(4)}, RuntimeError,
     "Given transposed=1, weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 3 elements, but got "
     "bias of size [4] instead"),
    (conv_transpose2d, (1, 4, 5, 5), (4, 3, 3, 3), {"padding": 4}, RuntimeError,
     "Given input size per channel: (5 x 5). Calculated output size per channel: (-1 x -1). Output size is too "
     "small"),
    (conv_transpose1d, (2, 4, 5), (4, 3, 3), {"padding": 4}, RuntimeError,
     "Given input size per channel: (1 x 5). Calculated output size per channel: (1 x -1). Output size is too "
     "small"),
    (conv_transpose2d, (1, 4, 5, 5), (4, 3, 3, 3), {"output_padding": -1}, RuntimeError,
     "negative output_padding is not supported"),
    (conv_transpose2d, (1, 4, 5, 5), (4, 3, 3, 3), {"output_padding": (1, 2, 3)}, RuntimeError,
     "expected output_padding to be a single integer value or a list of 2 values to match the convolution "
     "dimensions, but got output_padding=[1, 2, 3]"),
    (conv_transpose2d, (1, 4, 5, 5), (4, 3, 3, 3), {"dilation": 0}, RuntimeError,
     "dilation should be greater than zero, but got dilation_height: 0, dilation_width: 0"),
    (conv_transpose2d, (5, 5), (4, 3, 3, 3), {}, RuntimeError,
     "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of size: [5, 5]"),
    (conv_transpose2d, (1, 4, 5, 5), (4, 3, 3, 3), {"padding": "same"}, TypeError,
     "conv_transpose2d(): argument 'padding' must be tuple of ints, not str"),
])
def test_conv_transpose_errors(fn, x_shape, w_shape, kw, error, message):
    _raises(lambda: fn(ag.ones(*x_shape), ag.ones(*w_shape), **kw), error, message)


def test_conv_transpose_refuses_int32_and_mixed_dtypes():
    _raises(lambda: conv_transpose2d(ag.ones(1, 4, 5, 5, dtype=ag.int32), ag.ones(4, 3, 3, 3, dtype=ag.int32)),
            NotImplementedError, "\"slow_conv_transpose2d_out_cpu\" not implemented for 'Int'")
    _raises(lambda: conv_transpose2d(ag.ones(1, 4, 5, 5), ag.ones(4, 3, 3, 3, dtype=ag.float64)), RuntimeError,
            "expected scalar type Float but found Double")


# -- conv modules ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, args, kw, weight_shape, text", [
    (Conv1d, (4, 6, 3), {}, (6, 4, 3), "Conv1d(4, 6, kernel_size=(3,), stride=(1,))"),
    (Conv1d, (4, 6, 3), {"padding": "same", "padding_mode": "circular"}, (6, 4, 3),
     "Conv1d(4, 6, kernel_size=(3,), stride=(1,), padding=same, padding_mode=circular)"),
    (ConvTranspose1d, (4, 6, 3), {"stride": 2, "output_padding": 1}, (4, 6, 3),
     "ConvTranspose1d(4, 6, kernel_size=(3,), stride=(2,), output_padding=(1,))"),
    (ConvTranspose2d, (4, 6, 3), {"groups": 2, "bias": False}, (4, 3, 3, 3),
     "ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(1, 1), groups=2, bias=False)"),
])
def test_conv_modules_parameters_and_repr(cls, args, kw, weight_shape, text):
    m = cls(*args, **kw)
    assert repr(m) == text
    assert list(m.state_dict()) == (["weight"] if kw.get("bias") is False else ["weight", "bias"])
    assert m.weight.shape == weight_shape
    fan_in = weight_shape[1] * int(np.prod(weight_shape[2:]))  # PyTorch bounds both by 1/sqrt(fan_in)
    assert np.abs(m.weight.detach().numpy()).max() <= 1 / np.sqrt(fan_in)
    if m.bias is not None:
        assert m.bias.shape == (6,) and np.abs(m.bias.detach().numpy()).max() <= 1 / np.sqrt(fan_in)


def test_conv1d_module_with_reflect_padding_pads_before_convolving():
    m = Conv1d(2, 3, 3, padding=2, padding_mode="reflect", dtype=ag.float64)
    x = _leaf((1, 2, 6), 8)
    y = m(x)
    padded = ag.nn.functional.pad(x, [2, 2], mode="reflect")
    np.testing.assert_allclose(y.detach().numpy(),
                               ag.nn.functional.conv1d(padded, m.weight, m.bias).detach().numpy())
    assert y.shape == (1, 3, 8)


def test_conv2d_module_with_same_replicate_padding_keeps_the_size():
    m = Conv2d(2, 2, (2, 3), padding="same", padding_mode="replicate")
    assert m._reversed_padding_repeated_twice == [1, 1, 0, 1]
    assert m(ag.ones(1, 2, 5, 4)).shape == (1, 2, 5, 4)


def test_conv_transpose_module_output_size_picks_the_output_padding():
    m = ConvTranspose1d(4, 6, 3, stride=2)
    x = ag.ones(1, 4, 5)
    assert m(x, output_size=[12]).shape == (1, 6, 12)
    assert m(x, output_size=[1, 6, 11]).shape == (1, 6, 11)
    _raises(lambda: m(x, output_size=[13]), ValueError,
            "requested an output size of [13], but valid sizes range from [11] to [12] (for an input of [5])")
    _raises(lambda: m(x, output_size=[1, 2, 3, 4]), ValueError,
            "ConvTranspose1D: for 3D input, output_size must have 1 or 3 elements (got 4)")


def test_conv_module_errors():
    _raises(lambda: ConvTranspose1d(4, 6, 3, padding_mode="reflect"), ValueError,
            'Only "zeros" padding mode is supported for ConvTranspose1d')
    _raises(lambda: Conv1d(4, 6, 3, padding_mode="edge"), ValueError,
            "padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got padding_mode='edge'")
    _raises(lambda: Conv1d(4, 6, 3, groups=4), ValueError, "out_channels must be divisible by groups")


# -- 1-d pooling -------------------------------------------------------------------------------------------------------
X1 = [[[0.3, -1.2, 2.0, 0.5, -0.7], [1.1, 0.0, -0.4, 2.2, 1.3]],
      [[-2.0, 0.9, 0.9, -0.1, 0.4], [0.6, 0.6, -1.5, 1.0, -0.3]]]


def _pool_windows(length, size, stride, padding, dilation=1, ceil_mode=False):
    """Each output position's input positions inside the input, from the documented output length
    floor-or-ceil((L + 2 padding - dilation (size - 1) - 1) / stride) + 1; in ceil mode a window that would
    start in the right padding is dropped."""
    rounded = np.ceil if ceil_mode else np.floor
    count = int(rounded((length + 2 * padding - dilation * (size - 1) - 1) / stride)) + 1
    if ceil_mode and (count - 1) * stride >= length + padding:
        count -= 1
    starts = [o * stride - padding for o in range(count)]
    return [[p for p in range(s, s + dilation * size, dilation) if 0 <= p < length] for s in starts]


def _numpy_pool1d(x, windows, reduce):
    """`reduce(row_values, positions)` over every (batch, channel) row and window."""
    x = np.asarray(x, dtype=np.float64)
    return np.array([[[reduce(row[w], w) for w in windows] for row in plane] for plane in x])


def _first_max(values, positions):
    return positions[int(np.argmax(values))]  # argmax: the first of equal maxima


def test_max_pool1d_values_and_indices_match_a_numpy_loop():
    windows = _pool_windows(5, 2, 1, 1, dilation=2, ceil_mode=True)
    values, index = P.max_pool1d(ag.tensor(X1, dtype=ag.float64), 2, 1, 1, 2, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(values.numpy(), _numpy_pool1d(X1, windows, lambda v, w: v.max()))
    assert index.tolist() == _numpy_pool1d(X1, windows, _first_max).astype(int).tolist()
    x = _leaf((2, 3, 9), 9)
    assert gradcheck(lambda t: P.max_pool1d(t, 3, 2, 1), [x], **TOL)


def test_avg_pool1d_values_match_a_numpy_loop():
    windows = _pool_windows(5, 3, 2, 1, ceil_mode=True)  # count_include_pad=False: the mean of what is inside
    y = P.avg_pool1d(ag.tensor(X1, dtype=ag.float64), 3, 2, 1, ceil_mode=True, count_include_pad=False)
    np.testing.assert_allclose(y.numpy(), _numpy_pool1d(X1, windows, lambda v, w: v.mean()), rtol=1e-14)
    assert gradcheck(lambda t: P.avg_pool1d(t, 3, 2, 1), [_leaf((3, 7), 10)], **TOL)


@pytest.mark.parametrize("fn, shape, args, message", [
    (P.max_pool1d, (2, 3, 7), ((2, 2),),
     "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but got size 2"),
    (P.max_pool1d, (2, 3, 7), (2, (1, 1)),
     "max_pool1d() stride must be None, an int, list of ints, or tuple of ints of size 1 but got size 2"),
    (P.max_pool1d, (2, 3, 7), (2, None, (1, 1)),
     "max_pool1d() padding must be an int, list of ints, or tuple of ints of size 1 but got size 2"),
    (P.max_pool1d, (2, 3, 7), (2, None, 2),
     "max_pool1d() padding should be at most half of kernel size, but got padding=2 and kernel_size=2"),
    (P.max_pool1d, (2, 3, 7), (0,), "max_pool1d() kernel_size must be greater than zero, but got 0"),
    (P.max_pool1d, (2, 3, 7), (2, None, 0, 0), "max_pool1d() dilation must be greater than zero, but got 0"),
    (P.max_pool1d, (2, 3, 7), (9,), "max_pool1d() Invalid computed output size: 0"),
    (P.max_pool1d, (7,), (2,),
     "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:[7]"),
    (P.avg_pool1d, (2, 3, 7), ((2, 2),), "avg_pool1d() argument 'kernel_size' should contain one int (got 2)"),
    (P.avg_pool1d, (2, 3, 7), (9,),
     "Given input size: (3x1x7). Calculated output size: (3x1x0). Output size is too small"),
    (P.avg_pool1d, (7,), (2,), "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' "
                               "(while checking arguments for avg_pool1d)"),
])
def test_pool1d_errors(fn, shape, args, message):
    _raises(lambda: fn(ag.ones(*shape), *args), RuntimeError, message)


def test_pool1d_modules():
    assert repr(MaxPool1d(3)) == "MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)"
    m = AvgPool1d(3)
    assert repr(m) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert m(ag.ones(2, 3, 7)).shape == (2, 3, 2)
    values, index = MaxPool1d(2, return_indices=True)(ag.tensor(X1, dtype=ag.float64))
    assert values.shape == index.shape == (2, 2, 2)


# -- adaptive pooling -------------------------------------------------------------------------------------------------
X2 = [[0.3, -1.2, 2.0, 0.5, -0.7], [1.1, 0.0, -0.4, 2.2, 1.3], [-2.0, 0.9, 0.9, -0.1, 0.4]]


def _adaptive_bins(length, out):
    """PyTorch's documented adaptive bins: output i reads [floor(i L / out), ceil((i + 1) L / out))."""
    return [list(range(i * length // out, -(-(i + 1) * length // out))) for i in range(out)]


def test_adaptive_avg_pool_values_match_a_numpy_loop():
    expected = _numpy_pool1d(X1, _adaptive_bins(5, 3), lambda v, w: v.mean())
    np.testing.assert_allclose(AP.adaptive_avg_pool1d(ag.tensor(X1, dtype=ag.float64), 3).numpy(), expected,
                               rtol=1e-14)
    np.testing.assert_allclose(AP.adaptive_avg_pool2d(ag.tensor(X1, dtype=ag.float64), (None, 3)).numpy(), expected,
                               rtol=1e-14)
    assert AP.adaptive_avg_pool2d(ag.ones(2, 3, 7, 5), 9).shape == (2, 3, 9, 9)
    assert AP.adaptive_avg_pool2d(ag.ones(2, 3, 7, 5), (0, 2)).shape == (2, 3, 0, 2)


def test_adaptive_max_pool_values_indices_and_gradient_match_a_numpy_loop():
    bins = _adaptive_bins(5, 3)
    values, index = AP.adaptive_max_pool1d(ag.tensor(X1, dtype=ag.float64), 3, return_indices=True)
    np.testing.assert_array_equal(values.numpy(), _numpy_pool1d(X1, bins, lambda v, w: v.max()))
    assert index.tolist() == _numpy_pool1d(X1, bins, _first_max).astype(int).tolist()  # a tie: the first maximum
    x = ag.tensor(X2, dtype=ag.float64, requires_grad=True)
    y, index = AP.adaptive_max_pool2d(x[None], (2, 3), return_indices=True)
    flat = np.ravel(X2)
    cells = [[[r * 5 + c for r in rows for c in cols] for cols in bins] for rows in _adaptive_bins(3, 2)]
    expected_index = [[_first_max(flat[cell], cell) for cell in row] for row in cells]
    np.testing.assert_array_equal(y.detach().numpy(), [flat[expected_index]])
    assert index.tolist() == [expected_index]
    upstream = np.arange(1.0, 7.0).reshape(2, 3)
    (g,) = ag.autograd.grad((y * ag.tensor(upstream[None])).sum(), x)
    expected_grad = np.zeros(15)
    np.add.at(expected_grad, np.ravel(expected_index), upstream.ravel())  # each output's gradient to its argmax
    np.testing.assert_array_equal(g.numpy(), expected_grad.reshape(3, 5))


def test_adaptive_max_pool2d_names_the_last_nan_of_a_bin():
    x = np.arange(30.0).reshape(1, 1, 5, 6)
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = np.nan
    values, index = AP.adaptive_max_pool2d(ag.tensor(x), 2, return_indices=True)
    # bins rows [0, 3) and [2, 5), columns [0, 3) and [3, 6) of arange(30) in rows of 6: the NaNs are 7 and 8 (the
    # last, 8, is named), the other bins' maxima their last cells 2 * 6 + 5, 4 * 6 + 2 and 4 * 6 + 5
    assert index.tolist() == [[[[8, 17], [26, 29]]]]
    assert np.isnan(values.numpy()[0, 0, 0, 0])


@pytest.mark.parametrize("out", [(3, 2), (4, 7), (1, None)])
def test_adaptive_poolings_gradcheck(out):
    x = _leaf((2, 3, 5), 11)  # distinct values: no ties
    assert gradgradcheck(lambda t: AP.adaptive_avg_pool2d(t, out), [x], **TOL)
    assert gradgradcheck(lambda t: AP.adaptive_max_pool2d(t, out), [x], **TOL)


@pytest.mark.parametrize("fn, shape, size, error, message", [
    (AP.adaptive_avg_pool2d, (2, 3, 7, 5), (3, 2, 1), RuntimeError, "adaptive_avg_pool2d: output_size must be 2"),
    (AP.adaptive_avg_pool2d, (2, 3, 7, 5), (-1, 2), RuntimeError,
     "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {-1, 2}"),
    (AP.adaptive_avg_pool2d, (7, 5), 2, RuntimeError,
     "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [7, 5]"),
    (AP.adaptive_max_pool2d, (7, 5), 2, RuntimeError,
     "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [7, 5]"),
    (AP.adaptive_max_pool2d, (2, 3, 7, 5), (3, 2, 1), RuntimeError,
     "adaptive_max_pool2d(): internal error: output_size.size() must be 2"),
    (AP.adaptive_avg_pool2d, (2, 3, 0, 3), 2, RuntimeError,
     "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
     "[2, 3, 0, 3] with dimension 2 being empty"),
    (AP.adaptive_avg_pool1d, (2, 3, 7), (3, 2), RuntimeError,
     "adaptive_avg_pool1d() argument 'output_size' should contain one int (got 2)"),
    (AP.adaptive_max_pool1d, (7,), 2, RuntimeError,
     "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' (while checking arguments for "
     "adaptive_max_pool1d)"),
])
def test_adaptive_pool_errors(fn, shape, size, error, message):
    _raises(lambda: fn(ag.ones(*shape), size), error, message)


def test_adaptive_pools_refuse_integers():
    _raises(lambda: AP.adaptive_max_pool2d(ag.ones(2, 3, 4, dtype=ag.int64), 2), NotImplementedError,
            "\"adaptive_max_pool2d\" not implemented for 'Long'")


def test_adaptive_pool_modules():
    assert repr(AdaptiveAvgPool2d((3, None))) == "AdaptiveAvgPool2d(output_size=(3, None))"
    m = AdaptiveMaxPool2d(3, True)
    assert repr(m) == "AdaptiveMaxPool2d(output_size=3)" and m.return_indices
    values, index = m(ag.ones(2, 3, 7, 5))
    assert values.shape == index.shape == (2, 3, 3, 3) and index.dtype == ag.int64
    assert AdaptiveAvgPool1d(2)(ag.ones(2, 3, 7)).shape == (2, 3, 2)
    assert AdaptiveMaxPool1d(4)(ag.ones(3, 7)).shape == (3, 4)
    assert list(AdaptiveAvgPool1d(2).state_dict()) == []
