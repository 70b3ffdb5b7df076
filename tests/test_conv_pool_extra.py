"""Transposed convolutions, Conv1d/ConvTranspose modules, 1-d pooling and the adaptive poolings as PyTorch's.

Expected values, shapes and messages were read off torch 2.13 and are written out here (torch is not a test
dependency); gradients are also checked against finite differences in float64.
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
def test_conv_transpose1d_values_and_gradients_match_torch():
    x = ag.tensor([[[0.0012, 0.2987, -0.2741, -0.8906], [-0.4547, -0.9916, 0.0601, 1.3402]]], requires_grad=True,
                  dtype=ag.float64)
    w = ag.tensor([[[-0.4922, -0.6205, 0.4898], [0.3569, 0.1054, -0.9305]],
                   [[-0.0293, 0.6953, -1.3442], [-0.4576, -1.9012, -1.2895]]], requires_grad=True, dtype=ag.float64)
    b = ag.tensor([-1.8417, -0.2351, -1.2674, 0.2713], requires_grad=True, dtype=ag.float64)
    y = conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1, groups=2)
    np.testing.assert_allclose(y.detach().numpy(), [[
        [-1.8424446, -1.98813238, -2.02704335, -1.56048472, -1.67162095, -1.53760086, -1.2890827, -2.27791588],
        [-0.23497352, -0.12961057, -0.20361702, -0.61086664, -0.26399014, -0.29790509, -0.32896924, 0.5936033],
        [-1.58355291, -0.62713838, -1.95685948, 0.06374779, -1.22561247, -1.38745428, -0.33555894, -3.06889684],
        [1.13577564, 1.31139181, 2.15652992, 1.52246644, 0.15703788, -0.41947447, -2.27668824, -1.4568879]]],
        atol=1e-8)
    gx, gw, gb = ag.autograd.grad((y * ag.arange(32.0, dtype=ag.float64).reshape(1, 4, 8)).sum(), (x, w, b))
    np.testing.assert_allclose(gx.numpy(), [[[-7.0415, -6.2332, -8.4154, -10.5976],
                                             [-89.5929, -109.2102, -117.8632, -126.5162]]], atol=1e-8)
    np.testing.assert_allclose(gw.numpy(), [[[-4.9766, -5.8426, -6.7074], [-11.9046, -12.761, -13.6258]],
                                            [[12.4289, 5.5624, 5.5164], [15.6985, 5.1944, 5.1484]]], atol=1e-8)
    np.testing.assert_allclose(gb.numpy(), [28.0, 92.0, 156.0, 220.0])
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


def test_max_pool1d_values_and_indices_match_torch():
    values, index = P.max_pool1d(ag.tensor(X1, dtype=ag.float64), 2, 1, 1, 2, ceil_mode=True, return_indices=True)
    np.testing.assert_allclose(values.numpy(), [[[-1.2, 2.0, 0.5, 2.0, 0.5], [0.0, 1.1, 2.2, 1.3, 2.2]],
                                                [[0.9, 0.9, 0.9, 0.9, -0.1], [0.6, 0.6, 1.0, -0.3, 1.0]]])
    assert index.tolist() == [[[1, 2, 3, 2, 3], [1, 0, 3, 4, 3]], [[1, 2, 1, 2, 3], [1, 0, 3, 4, 3]]]
    x = _leaf((2, 3, 9), 9)
    assert gradcheck(lambda t: P.max_pool1d(t, 3, 2, 1), [x], **TOL)


def test_avg_pool1d_values_match_torch():
    y = P.avg_pool1d(ag.tensor(X1, dtype=ag.float64), 3, 2, 1, ceil_mode=True, count_include_pad=False)
    np.testing.assert_allclose(y.numpy(), [[[-0.45, 0.43333333333333335, -0.1], [0.55, 0.6, 1.75]],
                                           [[-0.55, 0.5666666666666667, 0.15], [0.6, 0.03333333333333333, 0.35]]])
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


def test_adaptive_avg_pool_values_match_torch():
    expected = [[[-0.45, 0.43333333333333335, -0.1], [0.55, 0.6, 1.75]],
                [[-0.55, 0.5666666666666667, 0.15], [0.6, 0.03333333333333333, 0.35]]]
    np.testing.assert_allclose(AP.adaptive_avg_pool1d(ag.tensor(X1, dtype=ag.float64), 3).numpy(), expected)
    np.testing.assert_allclose(AP.adaptive_avg_pool2d(ag.tensor(X1, dtype=ag.float64), (None, 3)).numpy(), expected)
    assert AP.adaptive_avg_pool2d(ag.ones(2, 3, 7, 5), 9).shape == (2, 3, 9, 9)
    assert AP.adaptive_avg_pool2d(ag.ones(2, 3, 7, 5), (0, 2)).shape == (2, 3, 0, 2)


def test_adaptive_max_pool_values_indices_and_gradient_match_torch():
    values, index = AP.adaptive_max_pool1d(ag.tensor(X1, dtype=ag.float64), 3, return_indices=True)
    np.testing.assert_allclose(values.numpy(), [[[0.3, 2.0, 0.5], [1.1, 2.2, 2.2]], [[0.9, 0.9, 0.4], [0.6, 1.0, 1.0]]])
    assert index.tolist() == [[[0, 2, 3], [0, 3, 3]], [[1, 1, 4], [0, 3, 3]]]  # a tie goes to the first maximum
    x = ag.tensor(X2, dtype=ag.float64, requires_grad=True)
    y, index = AP.adaptive_max_pool2d(x[None], (2, 3), return_indices=True)
    np.testing.assert_allclose(y.detach().numpy(), [[[1.1, 2.2, 2.2], [1.1, 2.2, 2.2]]])
    assert index.tolist() == [[[5, 8, 8], [5, 8, 8]]]
    (g,) = ag.autograd.grad((y * ag.arange(1.0, 7.0, dtype=ag.float64).reshape(1, 2, 3)).sum(), x)
    assert g.tolist() == [[0, 0, 0, 0, 0], [5, 0, 0, 16, 0], [0, 0, 0, 0, 0]]


def test_adaptive_max_pool2d_names_the_last_nan_of_a_bin():
    x = np.arange(30.0).reshape(1, 1, 5, 6)
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = np.nan
    values, index = AP.adaptive_max_pool2d(ag.tensor(x), 2, return_indices=True)
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
