"""conv3d, conv_transpose3d, the 3-d poolings, their modules, BatchNorm3d/InstanceNorm3d and interpolate's area mode
on 5-D input, as PyTorch's.

Expected values, indices and messages were read off torch 2.13 and are written out here (torch is not a test
dependency). Inputs are fixed formulas (`_wave`), so the numbers need no stored inputs. Gradients are checked
against finite differences in float64, conv3d's and conv_transpose3d's to second order.
"""

import re

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad import nn
from actorgrad.autograd import gradcheck, gradgradcheck

TOL = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-4}


def _wave(shape, phase=0.0):
    return np.sin(0.7 * np.arange(int(np.prod(shape))) + phase).reshape(shape) * 1.3


def _t(shape, phase=0.0, requires_grad=True):
    return ag.tensor(_wave(shape, phase), requires_grad=requires_grad)


def _leaf(shape, seed):
    return ag.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def _close(t, expected, shape=None):
    if shape is not None:
        assert t.shape == shape
    np.testing.assert_allclose(t.detach().numpy().ravel(), expected, rtol=1e-8, atol=1e-9)


def _raises(fn, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        fn()


# -- conv3d -----------------------------------------------------------------------------------------------------------
def test_conv3d_values_and_gradients_match_torch():
    x, w, b = _t((1, 2, 2, 3, 3)), _t((2, 2, 2, 2, 2), 1.0), _t((2,), 2.0)
    y = F.conv3d(x, w, b)
    _close(y, [0.8941139171, 2.497956196, 3.385772766, 2.252193052, 2.287696899, 2.310520151, 0.2575087942,
               -0.8527624947], (1, 2, 1, 2, 2))
    assert y.grad_fn.name() == "ConvolutionBackward0"
    gx, gw, gb = ag.autograd.grad((y * ag.arange(8.0, dtype=ag.float64).reshape(y.shape)).sum(), (x, w, b))
    _close(gx, [-1.862792268, 0.4682890292, 3.417748108, 3.861277596, 16.74834765, 13.31558279, 8.457666425,
                18.25760996, 9.141789458, 3.381496769, 3.472864258, -1.219028458, 0.1632598886, -9.361414416,
                -10.62236468, -7.274214227, -17.90003033, -10.41311054, -4.509451333, -7.01270961, -1.120556413,
                -4.168931825, 0.8927199552, 6.701675846, 5.250187886, 15.474007, 10.48114131, 5.116314812,
                9.742199068, 3.330655031, 7.692861516, 7.679133044, -2.00657272, -2.619474411, -11.25987985,
                -9.338020463])
    _close(gw, [4.388281132, 0.7839992514, -5.662177602, -5.472334877, 4.320523353, 0.6850058421, -5.691174249,
                -5.433019702, 4.251544043, 0.5858187629, -5.718561845, -5.392168464, 4.181362706, 0.4864660569,
                -5.744332648, -5.349792713, 13.96884019, 9.176135418, -9.072498117, -13.94580938, 13.92751175,
                8.993430984, -9.254090586, -13.98543686, 13.88224563, 8.808183862, -9.433066671, -14.02111028,
                13.83305461, 8.620446426, -9.609375771, -14.05281955])
    _close(gb, [6.0, 22.0])


@pytest.mark.parametrize("x_shape, w_shape, bias, kw, out_shape, expected", [
    ((1, 4, 4, 4, 5), (4, 2, 3, 3, 3), True, {"groups": 2, "stride": (2, 1, 2), "padding": (1, 0, 1),
                                              "dilation": (1, 1, 2)}, (1, 4, 2, 2, 2),
     [9.928766054, 4.727217324, -4.781838119, -1.251021394, -7.342360675, -2.2316761, 10.2650371, 4.776391837,
      9.749440005, 5.026244211, -5.710752084, -2.506602831, -8.411114832, -3.765321193, 10.116523, 5.121861277,
      10.20118153, 5.534147643, -12.06630683, -6.880439706, -1.495685878, -1.07961654, 4.22076502, 2.276667527,
      9.758452601, 5.718079994, -13.11755652, -8.63020208, -2.243599873, -1.899899534, 3.602609247, 1.93169952]),
    ((2, 2, 3, 2), (3, 2, 3, 1, 3), False, {"padding": "same", "dilation": 2}, (3, 2, 3, 2),  # unbatched
     [-0.9027721329, -1.003232496, -0.6318569402, 0.03669080752, 0.6879822952, 1.015704959, 0.8657257104,
      0.3085821324, -0.3936924441, -0.9108073126, -0.9995552702, -0.6181967658, -0.9401667318, -1.045773042,
      -0.6595359505, 0.03689120447, 0.7159678495, 1.058313628, 0.9029179701, 0.3228658827, -0.4090350742,
      -0.9485604444, -1.041963016, -0.6453140999, -0.9764981629, -1.087130998, -0.6864691384, 0.03704988378,
      0.7431437667, 1.099725524, 0.9390891839, 0.3367845268, -0.4239151556, -0.9852409165, -1.08319248,
      -0.6717016941]),
    ((1, 3, 3, 4, 5), (3, 1, 2, 2, 3), True, {"groups": 3, "stride": 2, "padding": "valid"}, (1, 3, 1, 2, 2),
     [1.675484251, 6.61505784, 5.120242589, 5.564710651, 3.009304922, 4.098614499, 4.489496218, 1.992304662,
      0.06228370751, 2.725783917, 1.959220686, 2.056736169]),
])
def test_conv3d_strides_padding_dilation_and_groups_match_torch(x_shape, w_shape, bias, kw, out_shape, expected):
    b = _t((w_shape[0],), 2.0) if bias else None
    _close(F.conv3d(_t(x_shape), _t(w_shape, 1.0), b, **kw), expected, out_shape)


@pytest.mark.parametrize("kw", [
    {},
    {"stride": (2, 1, 2), "padding": 1},
    {"dilation": (2, 1, 1), "padding": (1, 0, 1), "groups": 2},
    {"padding": "same"},
])
def test_conv3d_gradients_to_second_order(kw):
    groups = kw.get("groups", 1)
    x, w, b = _leaf((2, 4, 4, 3, 4), 0), _leaf((4, 4 // groups, 3, 1, 3), 1), _leaf((4,), 2)
    f = lambda *t: F.conv3d(*t, **kw)  # noqa: E731
    assert gradcheck(f, [x, w, b], **TOL)
    assert gradgradcheck(f, [x, w, b], **TOL)


# -- conv_transpose3d -------------------------------------------------------------------------------------------------
def test_conv_transpose3d_values_and_gradients_match_torch():
    x, w, b = _t((1, 2, 2, 2, 2)), _t((2, 1, 2, 2, 2), 1.0), _t((2,), 2.0)
    y = F.conv_transpose3d(x, w, b, stride=(2, 1, 1), output_padding=(1, 0, 0), padding=(0, 1, 0), groups=2)
    _close(y, [2.583480884, 4.796568719, 2.674020938, 0.163092378, -2.300336417, -0.6510075279, 0.3250309348,
               -2.052621537, -0.4890689712, 1.583180562, 3.949917573, 3.026766746, 1.182086655, 1.182086655,
               1.182086655, -0.1539870526, 1.340945896, 1.994665267, 1.629604795, 0.8090425285, -0.5131532408,
               1.791543352, 1.056757408, -0.351214684, -0.8764896913, -0.8874888861, 1.012766973, 0.5555938443,
               0.5555938443, 0.5555938443], (1, 2, 5, 1, 3))
    assert y.grad_fn.name() == "ConvolutionBackward0"
    gx, gw, gb = ag.autograd.grad((y * ag.arange(30.0, dtype=ag.float64).reshape(y.shape)).sum(), (x, w, b))
    _close(gx, [-5.335576953, -6.037950674, -6.180238133, -5.86336601, -9.549819278, -10.252193, -4.279005397,
                -3.962133274, -11.4953307, -11.76060991, 8.904638226, 9.634825814, -13.08700594, -13.35228515,
                13.28576376, 14.01595135])
    _close(gw, [-14.61643762, -14.6234177, 0.2582631926, 1.075212585, -14.63737785, -14.64435792, 2.70911137,
                3.526060763, -1.799041024, -1.280367098, 20.49679305, 21.22381094, -0.243019245, 0.2756546814,
                22.67784672, 23.40486462])
    _close(gb, [105.0, 330.0])


@pytest.mark.parametrize("kw, out_shape", [
    ({}, (2, 3, 4, 4, 5)),
    ({"stride": (2, 1, 3), "output_padding": (1, 0, 2)}, (2, 3, 7, 4, 13)),
    ({"dilation": 2, "output_padding": (1, 1, 0), "padding": (0, 1, 1)}, (2, 3, 6, 4, 4)),  # output_padding > stride
    ({"groups": 3, "stride": 2, "padding": 1}, (2, 3, 4, 4, 6)),
])
def test_conv_transpose3d_shapes_and_gradients_to_second_order(kw, out_shape):
    groups = kw.get("groups", 1)
    x, w, b = _leaf((2, 3, 3, 3, 4), 3), _leaf((3, 3 // groups, 2, 2, 2), 4), _leaf((3,), 5)
    y = F.conv_transpose3d(x, w, b, **kw)
    assert y.shape == out_shape
    f = lambda *t: F.conv_transpose3d(*t, **kw)  # noqa: E731
    assert gradcheck(f, [x, w, b], **TOL)
    assert gradgradcheck(f, [x, w, b], **TOL)


def test_conv_transpose3d_is_the_adjoint_of_conv3d_and_takes_unbatched_input():
    x, w, h = _leaf((2, 2, 3, 2, 3), 6), _leaf((2, 3, 2, 3, 2), 7), _leaf((2, 3, 5, 6, 5), 8)
    y = F.conv_transpose3d(x, w, stride=2, padding=(1, 0, 1), output_padding=1)
    lhs = (y * h).sum().item()
    rhs = (F.conv3d(h, w, stride=2, padding=(1, 0, 1)) * x).sum().item()
    assert y.shape == h.shape and lhs == pytest.approx(rhs, rel=1e-12)
    np.testing.assert_allclose(F.conv_transpose3d(x[0], w, stride=2).detach().numpy(),
                               F.conv_transpose3d(x, w, stride=2)[0].detach().numpy())


_X = (2, 4, 5, 6, 7)
_W = (6, 2, 2, 3, 3)
_WT = (4, 3, 2, 3, 3)


@pytest.mark.parametrize("fn, x_shape, w_shape, kw, dtype, error, message", [
    (F.conv3d, (4, 5), _W, {}, "float64", RuntimeError,
     "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: [4, 5]"),
    (F.conv3d, _X, (6, 4, 3, 3), {}, "float64", RuntimeError,
     "expected stride to be a single integer value or a list of 2 values to match the convolution dimensions, but got "
     "stride=[1, 1, 1]"),
    (F.conv3d, _X, _W, {"groups": 2, "stride": (1, 2)}, "float64", RuntimeError,
     "expected stride to be a single integer value or a list of 3 values to match the convolution dimensions, but got "
     "stride=[1, 2]"),
    (F.conv3d, _X, _W, {}, "float64", RuntimeError,
     "Given groups=1, weight of size [6, 2, 2, 3, 3], expected input[2, 4, 5, 6, 7] to have 2 channels, but got 4 "
     "channels instead"),
    (F.conv3d, _X, (6, 2, 9, 3, 3), {"groups": 2}, "float64", RuntimeError,
     "Calculated padded input size per channel: (5 x 6 x 7). Kernel size: (9 x 3 x 3). Kernel size can't be greater "
     "than actual input size"),
    (F.conv3d, _X, _W, {"groups": 2, "dilation": (1, 0, 1)}, "float64", RuntimeError,
     "dilation should be greater than zero, but got [1, 0, 1]"),
    (F.conv3d, _X, _W, {"groups": 2, "padding": "same", "stride": 2}, "float64", RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    (F.conv3d, (1, 4, 3, 3, 3), (4, 4, 2, 2, 2), {}, "bool", NotImplementedError,
     "\"compute_columns3d\" not implemented for 'Bool'"),
    (F.conv_transpose3d, _X, _WT, {"stride": 2, "output_padding": 2}, "float64", RuntimeError,
     "output padding must be smaller than either stride or dilation, but got output_padding_depth: 2 "
     "output_padding_height: 2 output_padding_width: 2 stride_depth: 2 stride_height: 2 stride_width: 2 "
     "dilation_depth: 1 dilation_height: 1 dilation_width: 1"),
    (F.conv_transpose3d, _X, _WT, {"dilation": (1, 0, 1)}, "float64", RuntimeError,
     "dilation should be greater than zero, but got dilation_depth: 1, dilation_height: 0, dilation_width: 1"),
    (F.conv_transpose3d, _X, _WT, {"padding": 4}, "float64", RuntimeError,
     "Given input size per channel: (5 x 6 x 7). Calculated output size per channel: (-2 x 0 x 1). Output size is "
     "too small"),
    (F.conv_transpose3d, _X, (3, 3, 2, 2, 2), {}, "float64", RuntimeError,
     "Given transposed=1, weight of size [3, 3, 2, 2, 2], expected input[2, 4, 5, 6, 7] to have 3 channels, but got "
     "4 channels instead"),
    (F.conv_transpose3d, (4, 5, 6), _WT, {}, "float64", RuntimeError,
     "Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got input of size: [4, 5, 6]"),
    (F.conv_transpose3d, _X, _WT, {"padding": "same"}, "float64", TypeError,
     "conv_transpose3d(): argument 'padding' must be tuple of ints, not str"),
    (F.conv_transpose3d, (1, 4, 3, 3, 3), (4, 4, 2, 2, 2), {}, "int32", NotImplementedError,
     "\"slow_conv_transpose3d_out_cpu\" not implemented for 'Int'"),
])
def test_conv3d_errors_match_torch(fn, x_shape, w_shape, kw, dtype, error, message):
    dtype = getattr(ag, dtype)
    _raises(lambda: fn(ag.zeros(x_shape, dtype=dtype), ag.zeros(w_shape, dtype=dtype), **kw), error, message)


# -- max_pool3d -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, out_shape, expected, indices", [
    ({"kernel_size": 2}, (1, 2, 1, 2, 2),
     [1.282803554, 1.289164254, 1.286165721, 1.274992222, 1.26057506, 1.249179359, 1.19603385, 1.242950912],
     [20, 2, 11, 38, 5, 23, 31, 32]),
    ({"kernel_size": (2, 3, 3), "stride": (1, 2, 2), "padding": 1, "dilation": (1, 1, 2)}, (1, 2, 4, 2, 2),
     [1.09391228, 1.09391228, 1.286165721, 1.286165721, 1.127937331, 1.127937331, 1.286165721, 1.286165721,
      1.149031551, 1.149031551, 1.274992222, 1.274992222, 1.149031551, 1.149031551, 1.265739092, 1.265739092,
      0.7594555597, 0.7594555597, 1.17822953, 1.17822953, 1.249179359, 1.249179359, 1.19603385, 1.19603385,
      1.249179359, 1.249179359, 1.220198499, 1.220198499, 1.236371049, 1.236371049, 1.220198499, 1.220198499],
     [1, 1, 11, 11, 28, 28, 11, 11, 46, 46, 38, 38, 46, 46, 56, 56, 6, 6, 13, 13, 23, 23, 31, 31, 23, 23, 58, 58,
      41, 41, 58, 58]),
    ({"kernel_size": (2, 2, 3), "stride": 2, "ceil_mode": True}, (1, 2, 2, 2, 2),
     [1.289164254, 1.289164254, 1.286165721, 1.274992222, 1.270545266, 1.270545266, 1.265739092, 0.777088477,
      1.26057506, 1.249179359, 1.242950912, 1.255054628, 1.236371049, 1.212485659, 1.229441631, 1.222164616],
     [2, 2, 11, 38, 47, 47, 56, 57, 5, 23, 32, 14, 41, 49, 50, 59]),
    ({"kernel_size": 3, "stride": (2, 1, 2), "padding": 1, "ceil_mode": True, "dilation": (2, 1, 1)}, (1, 2, 1, 4, 3),
     [1.282803554, 1.127937331, 1.279078703, 1.282803554, 1.127937331, 1.279078703, 0.828649375, 1.274992222,
      1.279078703, 0.828649375, 1.274992222, 1.274992222, 0.5670141818, 1.249179359, 1.249179359, 1.19603385,
      1.249179359, 1.249179359, 1.19603385, 1.242950912, 0.7052887387, 1.19603385, 1.242950912, 0.7052887387],
     [20, 28, 29, 20, 28, 29, 30, 38, 29, 30, 38, 38, 21, 23, 23, 31, 23, 23, 31, 32, 33, 31, 32, 33]),
])
def test_max_pool3d_values_indices_and_gradient_match_torch(kw, out_shape, expected, indices):
    x = _t((1, 2, 3, 4, 5), 0.3)
    y, index = F.max_pool3d(x, return_indices=True, **kw)
    _close(y, expected, out_shape)
    assert index.dtype == ag.int64 and index.shape == out_shape
    np.testing.assert_array_equal(index.numpy().ravel(), indices)
    assert y.grad_fn.name() == "MaxPool3DWithIndicesBackward0"
    upstream = np.arange(1.0, y.numel() + 1).reshape(y.shape)
    (grad,) = ag.autograd.grad((y * ag.tensor(upstream)).sum(), (x,))
    expected_grad = np.zeros((2, 60))  # each window's gradient lands on the element its index names
    np.add.at(expected_grad, (np.arange(2)[:, None], np.reshape(indices, (2, -1))), upstream.reshape(2, -1))
    np.testing.assert_allclose(grad.numpy().reshape(2, 60), expected_grad)
    leaf = _leaf((2, 2, 3, 4, 5), 9)
    assert gradcheck(lambda t: F.max_pool3d(t, **kw), [leaf], **TOL)
    assert gradgradcheck(lambda t: F.max_pool3d(t, **kw), [leaf], **TOL)


def test_max_pool3d_takes_unbatched_input_and_names_the_last_nan_of_a_window():
    x = np.arange(16.0).reshape(1, 2, 2, 4)
    x[0, 0, 1, 0], x[0, 1, 0, 1] = np.nan, np.nan
    y, index = F.max_pool3d(ag.tensor(x), 2, return_indices=True)
    assert y.shape == (1, 1, 1, 2) and np.isnan(y.numpy()[0, 0, 0, 0])
    np.testing.assert_array_equal(index.numpy().ravel(), [9, 15])


# -- avg_pool3d -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, out_shape, expected", [
    ({"kernel_size": 2}, (1, 1, 1, 2, 2), [-0.004065719233, 0.1609744827, 0.1047151588, 0.1423103949]),
    ({"kernel_size": (2, 3, 3), "stride": (1, 2, 2), "padding": (1, 1, 1)}, (1, 1, 4, 2, 3),
     [-0.03267310346, 0.01976993327, 0.04728450579, -0.1159875561, -0.1057308456, 0.03784485822, -0.001806986326,
      0.08394824318, 0.06385077469, -0.1556150432, -0.001914873592, 0.1541998139, 0.07198031458, 0.06195950377,
      -0.02618778584, 0.06552296428, 0.2379378319, 0.1103302034, 0.04111419745, -0.002218806138, -0.04275405474,
      0.1051504514, 0.13412186, -0.006024752282]),
    ({"kernel_size": (2, 3, 3), "stride": (1, 2, 2), "padding": (1, 1, 1), "count_include_pad": False},
     (1, 1, 4, 2, 3),
     [-0.1470289656, 0.05930979981, 0.212780276, -0.3479626683, -0.2114616911, 0.1135345747, -0.004065719233,
      0.1259223648, 0.143664243, -0.2334225648, -0.001914873592, 0.2312997209, 0.1619557078, 0.09293925566,
      -0.05892251813, 0.09828444642, 0.2379378319, 0.1654953052, 0.1850138885, -0.006656418415, -0.1923932463,
      0.3154513542, 0.26824372, -0.01807425685]),
    ({"kernel_size": (2, 2, 3), "stride": 2, "padding": (0, 1, 1), "ceil_mode": True}, (1, 1, 2, 3, 3),
     [0.3005221912, 0.2739471927, -0.09805551648, -0.03582633735, -0.1447343406, -0.07114274811, -0.1975962275,
      0.1418620302, 0.302442469, -0.1493477232, -0.5423361696, -0.251477705, -0.08868730035, 0.07473415029,
      0.1439212115, 0.4041386546, 0.3276314296, -0.1619954683]),
    ({"kernel_size": (2, 2, 3), "stride": 2, "padding": (0, 1, 1), "ceil_mode": True, "count_include_pad": False},
     (1, 1, 2, 3, 3),
     [0.9015665737, 0.5478943854, -0.2941665494, -0.05373950602, -0.1447343406, -0.1067141222, -0.5927886825,
      0.2837240605, 0.9073274071, -0.4480431696, -1.084672339, -0.7544331151, -0.1330309505, 0.07473415029,
      0.2158818172, 1.212415964, 0.6552628593, -0.485986405]),
    ({"kernel_size": (3, 2, 2), "stride": (1, 3, 3), "padding": (1, 0, 1), "divisor_override": 5}, (1, 1, 3, 1, 2),
     [-0.05115965387, 0.2575591724, 0.03958995672, 0.19230997, 0.1218377546, 0.08576283571]),
])
def test_avg_pool3d_values_and_gradients_match_torch(kw, out_shape, expected):
    y = F.avg_pool3d(_t((1, 1, 3, 4, 5), 0.3), **kw)
    _close(y, expected, out_shape)
    assert y.grad_fn.name() == "AvgPool3DBackward0"
    assert gradcheck(lambda t: F.avg_pool3d(t, **kw), [_leaf((2, 2, 3, 4, 5), 10)], **TOL)
    assert gradgradcheck(lambda t: F.avg_pool3d(t, **kw), [_leaf((1, 2, 3, 4, 5), 11)], **TOL)


def test_avg_pool3d_divides_int64_sums_toward_zero_on_unbatched_input():
    x = ag.tensor((_wave((1, 3, 4, 5)) * 40).astype(np.int64))
    y = F.avg_pool3d(x, (2, 2, 3), stride=(1, 2, 2), padding=(0, 1, 1))
    assert y.dtype == ag.int64 and y.shape == (1, 2, 3, 3)
    np.testing.assert_array_equal(y.numpy().ravel(), [10, 13, 0, 0, -5, -3, -10, 0, 10, 7, -6, -12, -4, -3, 1, 5,
                                                      16, 6])


# -- adaptive 3-d pooling and interpolate's area mode ----------------------------------------------------------------
ADAPTIVE = [
    ((2, 3, 2), (1, 2, 2, 3, 2),
     [0.05728231971, -0.1337644702, -0.1714333971, -0.2365061093, -0.1541922251, 6.948979078e-05, -0.1364190077,
      -0.09872726198, -0.231894709, 0.09958279759, 0.005330814352, 0.1550206077, 0.1105512163, 0.1279247842,
      0.2614343571, -0.02745679775, 0.03723549987, -0.1434458887, 0.1248223625, -0.07178092963, -0.03652050882,
      -0.271248191, -0.1454671092, -0.08155346711],
     [1.282803554, 1.289164254, 1.279078703, 1.286165721, 1.138645404, 1.274992222, 1.282803554, 1.270545266,
      1.279078703, 1.270545266, 1.265739092, 1.274992222, 1.26057506, 1.249179359, 1.26057506, 1.255054628,
      1.242950912, 1.255054628, 1.236371049, 1.249179359, 1.242950912, 1.229441631, 1.242950912, 1.222164616],
     [20, 2, 29, 11, 37, 38, 20, 47, 29, 47, 56, 38, 5, 23, 5, 14, 32, 14, 41, 23, 32, 50, 32, 59]),
    ((None, 2, 3), (1, 2, 3, 2, 3),
     [0.1092820434, 0.304573917, 0.3566199184, -0.1317922889, 0.1150343821, 0.3077585858, 0.3547577399,
      0.2318111286, -0.0001598786262, 0.3138660125, 0.3536760625, 0.2271467339, -0.01226487036, -0.2411794992,
      -0.3566636411, 0.2176266198, -0.01831302029, -0.2456397608, -0.3581118685, -0.2977675563, -0.09737850962,
      -0.2543506953, -0.3586842054, -0.2943229291, -0.08566957104, 0.1597476846, 0.3300331081, -0.2871850328,
      -0.07977794063, 0.1651499636, 0.3346834308, 0.3414544643, 0.1876341278, 0.1758129303, 0.336866978,
      0.3394872223],
     [1.09391228, 1.289164254, 1.289164254, 0.8618599991, 1.105567607, 1.286165721, 1.282803554, 1.279078703,
      0.828649375, 1.279078703, 1.279078703, 1.274992222, 0.7945016901, 1.149031551, 1.270545266, 1.265739092,
      0.777088477, 1.159092835, 1.26057506, 1.26057506, 0.7594555597, 1.17822953, 1.255054628, 1.255054628,
      0.723550615, 1.187299531, 1.249179359, 1.242950912, 0.7052887387, 1.19603385, 1.236371049, 1.236371049,
      1.229441631, 1.212485659, 1.229441631, 1.229441631],
     [1, 2, 2, 12, 10, 11, 20, 29, 30, 29, 29, 38, 48, 46, 47, 56, 57, 55, 5, 5, 6, 13, 14, 14, 24, 22, 23, 32, 33,
      31, 41, 41, 50, 49, 50, 50]),
    (1, (1, 2, 1, 1, 1), [0.04562232653, 0.00623140152], [1.289164254, 1.26057506], [2, 5]),
]


@pytest.mark.parametrize("size, out_shape, means, maxima, indices", ADAPTIVE)
def test_adaptive_pool3d_values_and_indices_match_torch(size, out_shape, means, maxima, indices):
    x = _t((1, 2, 3, 5, 4), 0.3)
    _close(F.adaptive_avg_pool3d(x, size), means, out_shape)
    y, index = F.adaptive_max_pool3d(x, size, return_indices=True)
    _close(y, maxima, out_shape)
    np.testing.assert_array_equal(index.numpy().ravel(), indices)
    _close(F.adaptive_max_pool3d(x[0], size), maxima)  # unbatched


@pytest.mark.parametrize("size", [(2, 3, 2), (4, 1, 3), (None, 2, None)])
def test_adaptive_pool3d_gradcheck(size):
    x = _leaf((2, 2, 3, 5, 4), 12)
    assert gradcheck(lambda t: F.adaptive_avg_pool3d(t, size), [x], **TOL)
    assert gradgradcheck(lambda t: F.adaptive_avg_pool3d(t, size), [x], **TOL)
    assert gradcheck(lambda t: F.adaptive_max_pool3d(t, size), [x], **TOL)


def test_adaptive_max_pool3d_names_the_last_nan_of_a_bin_and_takes_an_empty_output():
    x = np.arange(8.0).reshape(1, 1, 2, 2, 2)
    x[0, 0, 0, 1, 0], x[0, 0, 1, 0, 1] = np.nan, np.nan
    y, index = F.adaptive_max_pool3d(ag.tensor(x), 1, return_indices=True)
    assert np.isnan(y.item()) and index.item() == 5
    assert F.adaptive_avg_pool3d(ag.zeros(2, 3, 4, 4, 4), (0, 2, 2)).shape == (2, 3, 0, 2, 2)


def test_interpolate_area_on_5d_input_is_the_adaptive_average_pool():
    x = _t((1, 1, 3, 5, 4), 0.3)
    y = F.interpolate(x, size=(2, 3, 2), mode="area")
    _close(y, ADAPTIVE[0][2][:12], (1, 1, 2, 3, 2))
    assert gradcheck(lambda t: F.interpolate(t, scale_factor=0.5, mode="area"), [_leaf((1, 2, 4, 3, 5), 13)], **TOL)


_P = (2, 3, 5, 6, 7)


@pytest.mark.parametrize("fn, shape, kw, error, message", [
    (F.max_pool3d, _P, {"kernel_size": (2, 2)}, RuntimeError,
     "max_pool3d: kernel_size must either be a single int, or a tuple of three ints"),
    (F.avg_pool3d, _P, {"kernel_size": (2, 2)}, RuntimeError,
     "avg_pool3d: kernel_size must be a single int, or a tuple of three ints"),
    (F.avg_pool3d, _P, {"kernel_size": 2, "stride": (1, 1)}, RuntimeError,
     "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints"),
    (F.max_pool3d, _P, {"kernel_size": 2, "dilation": (1, 1)}, RuntimeError,
     "max_pool3d: dilation must be either a single int, or a tuple of three ints"),
    (F.max_pool3d, (5, 6, 7), {"kernel_size": 2}, RuntimeError,
     "non-empty 4D or 5D (batch mode) tensor expected for input"),
    (F.avg_pool3d, (1, *_P), {"kernel_size": 2}, RuntimeError,
     "non-empty 4D or 5D (batch mode) tensor expected for input"),
    (F.max_pool3d, _P, {"kernel_size": 2, "stride": -1}, RuntimeError,
     "stride should be greater than zero, but got dT: -1 dH: -1 dW: -1"),
    (F.avg_pool3d, _P, {"kernel_size": (2, 0, 2), "stride": 1}, RuntimeError,
     "kernel size should be greater than zero, but got kT: 2 kH: 0 kW: 2"),
    (F.max_pool3d, _P, {"kernel_size": 2, "dilation": (1, 0, 1)}, RuntimeError,
     "dilation should be greater than zero, but got dilationT: 1 dilationH: 0 dilationW: 1"),
    (F.max_pool3d, _P, {"kernel_size": 2, "padding": 2}, RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and dilation=1"),
    (F.max_pool3d, _P, {"kernel_size": 3, "stride": 2, "padding": 2, "dilation": 2}, RuntimeError,
     "pad should be smaller than or equal to half of kernel size, but got kT: 3 kW: 3 kH: 3 padT: 2 padW: 2 padH: 2"),
    (F.max_pool3d, _P, {"kernel_size": (6, 2, 2)}, RuntimeError,
     "Given input size: (3x5x6x7). Calculated output size: (3x0x3x3). Output size is too small"),
    (F.avg_pool3d, _P, {"kernel_size": (6, 2, 2), "padding": (1, 0, 0)}, RuntimeError,
     "input image (T: 5 H: 6 W: 7) smaller than kernel size (kT: 6 kH: 2 kW: 2)"),
    (F.max_pool3d, (2, 3, 0, 6, 7), {"kernel_size": 2}, RuntimeError,
     "max_pool3d_with_indices_out_cpu_template(): Expected input's non-batch dimensions to have positive length, but "
     "input has a shape of [2, 3, 0, 6, 7] and non-batch dimension 0 has length zero!"),
    (F.avg_pool3d, _P, {"kernel_size": 2, "divisor_override": 0}, RuntimeError, "divisor must be not zero"),
    (F.adaptive_avg_pool3d, _P, {"output_size": (2, 2)}, RuntimeError, "adaptive_avg_pool3d: output_size must be 3"),
    (F.adaptive_max_pool3d, _P, {"output_size": (2, 2)}, RuntimeError,
     "adaptive_max_pool3d(): internal error: output_size.size() must be 3"),
    (F.adaptive_avg_pool3d, _P, {"output_size": (2, -1, 2)}, RuntimeError,
     "adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but received {2, -1,2}"),
    (F.adaptive_max_pool3d, _P, {"output_size": (2, -1, 2)}, RuntimeError,
     "Trying to create tensor with negative dimension -1: [2, 3, 2, -1, 2]"),
    (F.adaptive_avg_pool3d, (5, 6, 7), {"output_size": 2}, RuntimeError,
     "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got [5, 6, 7]"),
    (F.adaptive_max_pool3d, (5, 6, 7), {"output_size": 2}, RuntimeError,
     "adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: [5, 6, 7]"),
    (F.adaptive_avg_pool3d, (2, 0, 5, 6, 7), {"output_size": 2}, RuntimeError,
     "adaptive_avg_pool3d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
     "[2, 0, 5, 6, 7] with dimension 1 being empty"),
    (F.adaptive_max_pool3d, (3, 5, 6, 7), {"output_size": (2, 2, 2, 2)}, ValueError,
     "Input dimension should be at least 5"),
])
def test_pool3d_errors_match_torch(fn, shape, kw, error, message):
    _raises(lambda: fn(ag.zeros(shape, dtype=ag.float64), **kw), error, message)


@pytest.mark.parametrize("fn, dtype, message", [
    (F.max_pool3d, "bool", "\"max_pool3d\" not implemented for 'Bool'"),
    (F.avg_pool3d, "int32", "\"avg_pool3d_out_frame\" not implemented for 'Int'"),
    (F.adaptive_avg_pool3d, "int64", "\"adaptive_avg_pool3d_cpu\" not implemented for 'Long'"),
    (F.adaptive_max_pool3d, "int64", "\"adaptive_max_pool3d_cpu\" not implemented for 'Long'"),
])
def test_pool3d_refuses_dtypes_as_torch(fn, dtype, message):
    _raises(lambda: fn(ag.zeros(1, 2, 2, 2, 2, dtype=getattr(ag, dtype)), 2), NotImplementedError, message)


def test_max_pool3d_takes_integers():
    x = ag.tensor(np.arange(16).reshape(1, 2, 2, 4))
    np.testing.assert_array_equal(F.max_pool3d(x, 2).numpy().ravel(), [13, 15])


# -- modules ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, args, kw, weight_shape, text", [
    (nn.Conv3d, (4, 6, 3), {}, (6, 4, 3, 3, 3), "Conv3d(4, 6, kernel_size=(3, 3, 3), stride=(1, 1, 1))"),
    (nn.Conv3d, (4, 6, (1, 2, 3), 2, 1, 2, 2, False, "reflect"), {}, (6, 2, 1, 2, 3),
     "Conv3d(4, 6, kernel_size=(1, 2, 3), stride=(2, 2, 2), padding=(1, 1, 1), dilation=(2, 2, 2), groups=2, "
     "bias=False, padding_mode=reflect)"),
    (nn.ConvTranspose3d, (4, 6, 3), {"groups": 2}, (4, 3, 3, 3, 3),
     "ConvTranspose3d(4, 6, kernel_size=(3, 3, 3), stride=(1, 1, 1), groups=2)"),
    (nn.ConvTranspose3d, (4, 6, (1, 2, 3), 2, 1, 1, 2, False, 2), {}, (4, 3, 1, 2, 3),
     "ConvTranspose3d(4, 6, kernel_size=(1, 2, 3), stride=(2, 2, 2), padding=(1, 1, 1), dilation=(2, 2, 2), "
     "output_padding=(1, 1, 1), groups=2, bias=False)"),
])
def test_conv3d_modules_parameters_and_repr(cls, args, kw, weight_shape, text):
    m = cls(*args, **kw)
    assert m.weight.shape == weight_shape and repr(m) == text
    assert (m.bias is None) == ("bias=False" in text)
    bound = 1 / np.sqrt(np.prod(weight_shape[1:]))  # PyTorch's init: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    assert np.abs(m.weight.detach().numpy()).max() <= bound


@pytest.mark.parametrize("cls", [nn.Conv3d, nn.ConvTranspose3d])
def test_conv3d_modules_defaults(cls):
    m = cls(4, 6, 3)
    assert (m.kernel_size, m.stride, m.padding, m.dilation, m.output_padding) == ((3, 3, 3), (1, 1, 1), (0, 0, 0),
                                                                                  (1, 1, 1), (0, 0, 0))
    assert (m.groups, m.padding_mode, m.bias.shape) == (1, "zeros", (6,))
    assert nn.Conv3d(4, 6, (1, 2, 3), padding="same")._reversed_padding_repeated_twice == [1, 1, 0, 1, 0, 0]


def test_conv3d_modules_run_their_functions():
    x = _leaf((2, 4, 3, 4, 5), 14)
    conv = nn.Conv3d(4, 6, (3, 2, 3), stride=(1, 2, 1), padding=1, groups=2, dtype=ag.float64)
    np.testing.assert_allclose(conv(x).detach().numpy(), F.conv3d(x, conv.weight, conv.bias, (1, 2, 1), 1, 1, 2)
                               .detach().numpy())
    reflect = nn.Conv3d(4, 2, 3, padding=(1, 0, 1), padding_mode="reflect", bias=False, dtype=ag.float64)
    padded = F.pad(x, [1, 1, 0, 0, 1, 1], mode="reflect")
    np.testing.assert_allclose(reflect(x).detach().numpy(), F.conv3d(padded, reflect.weight).detach().numpy())
    up = nn.ConvTranspose3d(4, 2, 3, stride=2, dtype=ag.float64)
    assert up(x, output_size=(8, 10, 12)).shape == (2, 2, 8, 10, 12)
    _raises(lambda: up(x, output_size=(8, 10)), ValueError,
            "ConvTranspose3D: for 5D input, output_size must have 3 or 5 elements (got 2)")


def test_pool3d_modules():
    x = _t((2, 2, 3, 4, 5), 0.3)
    m = nn.MaxPool3d((2, 3, 2), 1, 1, 2, True, True)
    assert repr(m) == "MaxPool3d(kernel_size=(2, 3, 2), stride=1, padding=1, dilation=2, ceil_mode=True)"
    y, index = m(x)
    ref, ref_index = F.max_pool3d(x, (2, 3, 2), 1, 1, 2, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(y.detach().numpy(), ref.detach().numpy())
    np.testing.assert_array_equal(index.numpy(), ref_index.numpy())
    assert repr(nn.MaxPool3d(2)) == "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    avg = nn.AvgPool3d(2, padding=1, count_include_pad=False, divisor_override=3)
    assert repr(avg) == "AvgPool3d(kernel_size=2, stride=2, padding=1)"
    assert (avg.ceil_mode, avg.count_include_pad, avg.divisor_override) == (False, False, 3)
    np.testing.assert_array_equal(avg(x).detach().numpy(), F.avg_pool3d(x, 2, 2, 1, False, False, 3).detach().numpy())
    mean, top = nn.AdaptiveAvgPool3d((2, None, 3)), nn.AdaptiveMaxPool3d(2, return_indices=True)
    assert repr(mean) == "AdaptiveAvgPool3d(output_size=(2, None, 3))"
    assert repr(top) == "AdaptiveMaxPool3d(output_size=2)"
    assert mean(x).shape == (2, 2, 2, 4, 3) and top(x)[1].shape == (2, 2, 2, 2, 2)


def test_batch_norm3d_normalises_each_channel_and_updates_its_running_statistics():
    x = _t((2, 2, 2, 1, 3), 0.5)
    bn = nn.BatchNorm3d(2, dtype=ag.float64)
    assert repr(bn) == "BatchNorm3d(2, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    _close(bn(x), [0.7711711256, 1.450797662, 1.472211417, 0.8253411648, -0.1855799059, -1.08509982, -1.67502373,
                   -1.356205741, -0.5272941521, 0.4218609632, 1.044857124, 1.0486895, 0.8035977977, -0.2104774081,
                   -1.101441773, -1.450260834, -1.092879537, -0.1973798895, 0.4422792822, 1.052851045, 1.040499358,
                   0.4110334124, -0.5394991214, -1.364047941])
    _close(bn.running_mean, [-0.00444006123, 0.02515970008])
    _close(bn.running_var, [0.9817681012, 0.9935930463])
    assert bn.num_batches_tracked.item() == 1
    assert gradcheck(lambda t: bn(t), [_leaf((2, 2, 2, 1, 3), 15)], **TOL)
    _raises(lambda: bn(x[0]), ValueError, "expected 5D input (got 4D input)")


def test_instance_norm3d_takes_unbatched_input_and_tracks_statistics():
    x = _t((2, 2, 2, 1, 3), 0.5)
    norm = nn.InstanceNorm3d(2, affine=True, track_running_stats=True, dtype=ag.float64)
    _close(norm(x), [0.251598059, 0.9960236793, 1.019479131, 0.3109329479, -0.796374528, -1.781659289, -1.378904872,
                     -1.086053717, -0.3246546593, 0.5471944258, 1.119449291, 1.122969531, 1.765971651, 0.4345716534,
                     -0.7351936129, -1.193165265, -0.7239520789, 0.4517676524, 0.3090573399, 1.012049063,
                     0.9978277473, 0.2730819, -0.8213291826, -1.770686868])
    _close(norm.running_mean, [-0.00444006123, 0.02515970008])
    _close(norm.running_var, [0.9635732811, 0.9998406054])
    norm.eval()
    _close(norm(x[0]), [0.6394444735, 1.238857633, 1.257744014, 0.6872210576, -0.2043853763, -0.9977388496,
                        -1.325158924, -1.029830462, -0.2619905264, 0.6172337638, 1.194329486, 1.197879505])
    plain = nn.InstanceNorm3d(2)
    assert repr(plain) == "InstanceNorm3d(2, eps=1e-05, momentum=0.1, affine=False, bias=False, " \
                          "track_running_stats=False)"
    assert gradcheck(lambda t: plain(t), [_leaf((2, 2, 3, 2), 16)], **TOL)
    _raises(lambda: plain(x[0, 0]), ValueError, "expected 4D or 5D input (got 3D input)")
    _raises(lambda: nn.InstanceNorm3d(4, affine=True)(x), ValueError,
            "expected input's size at dim=1 to match num_features (4), but got: 2.")


# -- the CUDA path ----------------------------------------------------------------------------------------------------
DEVICE_CASES = {
    "conv3d": lambda x, p: F.conv3d(x, p((4, 2, 2, 3, 2), 1.0), p((4,), 2.0), stride=(1, 2, 1), padding=1, groups=2),
    "conv_transpose3d": lambda x, p: F.conv_transpose3d(x, p((4, 2, 2, 2, 3), 1.0), p((4,), 2.0), stride=2,
                                                        output_padding=(1, 0, 1), groups=2),
    "max_pool3d": lambda x, p: F.max_pool3d(x, (2, 3, 3), (1, 2, 2), 1, (1, 1, 2), ceil_mode=True),
    "avg_pool3d": lambda x, p: F.avg_pool3d(x, (2, 2, 3), 2, (0, 1, 1), ceil_mode=True, count_include_pad=False),
    "adaptive_avg_pool3d": lambda x, p: F.adaptive_avg_pool3d(x, (2, 3, 2)),
    "adaptive_max_pool3d": lambda x, p: F.adaptive_max_pool3d(x, (2, 3, 2)),
    "interpolate_area": lambda x, p: F.interpolate(x, size=(2, 2, 3), mode="area"),
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(DEVICE_CASES))
def test_the_3d_ops_give_the_cpus_values_and_gradients_on_cuda(name):
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    results = []
    for device in (None, cuda):
        leaves = []

        def parameter(shape, phase, device=device, leaves=leaves):
            leaves.append(ag.tensor(_wave(shape, phase), device=device, requires_grad=True))
            return leaves[-1]

        x = parameter((2, 4, 3, 5, 4), 0.3)
        y = DEVICE_CASES[name](x, parameter)
        (y * y).sum().backward()
        assert y.device == x.device and all(leaf.grad.device == x.device for leaf in leaves)
        results.append([y.detach().cpu().numpy(), *(leaf.grad.cpu().numpy() for leaf in leaves)])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
