"""interpolate, pixel_shuffle / pixel_unshuffle, unfold / fold and their layers as PyTorch's: values and gradients,
the source pixels each kernel picks, shapes, reprs and error texts.

Expected values come from numpy written out of the documented definitions: each interpolation mode as one matrix per
spatial dim built from PyTorch's source-index formula (`_weights`), so a gradient is the same matrices transposed;
pixel_shuffle, unfold and fold by index arithmetic. Error texts and reprs are PyTorch's.
"""

import math
import re
import time

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.nn.resampling import (
    Fold,
    PixelShuffle,
    PixelUnshuffle,
    Unfold,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
from actorgrad.ops.resampling import interpolate, pixel_shuffle, pixel_unshuffle
from actorgrad.ops.sliding_blocks import fold, unfold

X = np.random.default_rng(0).standard_normal((1, 2, 2, 3))
TOL = {"atol": 1e-6, "rtol": 1e-4}
CUBIC_A = -0.75  # PyTorch's bicubic convolution coefficient


def _raises(fn, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        fn()


def _leaf(array):
    return ag.tensor(array, dtype=ag.float64, requires_grad=True)


def _cubic(x):
    """The cubic convolution kernel (Keys) with a = CUBIC_A, for |x| < 2."""
    x = abs(x)
    if x <= 1:
        return ((CUBIC_A + 2) * x - (CUBIC_A + 3)) * x * x + 1
    return ((CUBIC_A * x - 5 * CUBIC_A) * x + 8 * CUBIC_A) * x - 4 * CUBIC_A


def _weights(n_in, n_out, mode, align_corners=False, scale_factor=None):
    """The (n_out, n_in) matrix of one dim: row i holds the weights output pixel i gives each input pixel.
    The step is (n_in - 1) / (n_out - 1) with align_corners, else 1 / scale_factor when one was given and used,
    else n_in / n_out; output pixel i sits at source position step * i (nearest, align_corners) or
    step * (i + 0.5) - 0.5 (half-pixel centres; nearest-exact rounds it, linear clamps it at 0)."""
    m = np.zeros((n_out, n_in))
    if mode == "area":  # the adaptive average: pixel i averages [floor(i n_in / n_out), ceil((i + 1) n_in / n_out))
        for i in range(n_out):
            start, end = i * n_in // n_out, -(-(i + 1) * n_in // n_out)
            m[i, start:end] = 1 / (end - start)
        return m
    if align_corners:
        step = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        step = 1 / scale_factor if scale_factor else n_in / n_out
    last = n_in - 1
    for i in range(n_out):
        centre = step * i if align_corners else step * (i + 0.5) - 0.5
        if mode == "nearest":
            m[i, min(math.floor(step * i), last)] = 1
        elif mode == "nearest-exact":
            m[i, min(math.floor(step * (i + 0.5)), last)] = 1
        elif mode == "bicubic":  # four taps around floor(centre), clamped to the border
            first = math.floor(centre)
            for tap in range(-1, 3):
                m[i, min(max(first + tap, 0), last)] += _cubic(centre - first - tap)
        else:  # linear: two taps, the second clamped to the border
            centre = max(centre, 0.0)
            first = min(math.floor(centre), last)
            m[i, first] += 1 - (centre - first)
            m[i, min(first + 1, last)] += centre - first
    return m


def _resampled(x, shape, mode, align_corners=False, scale_factors=None, transpose=False):
    """x (N, C, *spatial) through _weights along each spatial dim to `shape`; transposed: a gradient of that
    shape back to x's."""
    dims = x.ndim - 2
    scale_factors = scale_factors or [None] * dims
    for d in range(dims):
        n_in, n_out = (shape[d], x.shape[2 + d]) if transpose else (x.shape[2 + d], shape[d])
        m = _weights(n_in, n_out, mode, align_corners, scale_factors[d])
        x = np.moveaxis(np.tensordot(m.T if transpose else m, x, axes=(1, 2 + d)), 0, 2 + d)
    return x


def _expected(x, mode, size=None, scale_factor=None, align_corners=False, recompute_scale_factor=None):
    """interpolate's output by _resampled, with its output size floor(n * scale_factor) when no size is given, and
    the scale factor passed on to the kernels unless recomputed from the sizes."""
    dims = x.ndim - 2
    if size is not None:
        return _resampled(x, size if isinstance(size, tuple) else (size,) * dims, mode, align_corners), None
    factors = scale_factor if isinstance(scale_factor, tuple) else (scale_factor,) * dims
    shape = tuple(math.floor(n * f) for n, f in zip(x.shape[2:], factors))
    used = None if recompute_scale_factor else factors
    return _resampled(x, shape, mode, align_corners, used), used


# -- interpolate: values and gradients -------------------------------------------------------------------------
@pytest.mark.parametrize("mode, kwargs", [
    ("nearest", {"size": (3, 5)}),
    ("nearest-exact", {"size": (3, 5)}),
    ("bilinear", {"size": (3, 5)}),
    ("bilinear", {"size": (3, 5), "align_corners": True}),
    ("bilinear", {"scale_factor": 1.5}),
    ("bilinear", {"scale_factor": 1.5, "recompute_scale_factor": True}),
    ("bicubic", {"size": (3, 5)}),
    ("bicubic", {"size": (3, 5), "align_corners": True}),
])
def test_interpolate_2d_values_and_gradients_follow_the_source_index_formula(mode, kwargs):
    leaf = _leaf(X)
    y = interpolate(leaf, mode=mode, **kwargs)
    expected, used = _expected(X, mode, **kwargs)
    np.testing.assert_allclose(y.detach().numpy(), expected, rtol=1e-12, atol=1e-14)
    upstream = np.linspace(-1, 1, y.numel()).reshape(y.shape)
    y.backward(ag.tensor(upstream))
    grad = _resampled(upstream, X.shape[2:], mode, kwargs.get("align_corners", False), used, transpose=True)
    np.testing.assert_allclose(leaf.grad.numpy(), grad, rtol=1e-12, atol=1e-14)


X1 = np.random.default_rng(1).standard_normal((1, 1, 5))


@pytest.mark.parametrize("mode, kwargs", [
    ("nearest", {"scale_factor": 1.7}),
    ("nearest-exact", {"scale_factor": 1.7}),
    ("linear", {"scale_factor": 0.6}),
    ("linear", {"size": 7, "align_corners": True}),
])
def test_interpolate_1d_follows_the_source_index_formula(mode, kwargs):
    y = interpolate(ag.tensor(X1), mode=mode, **kwargs)
    np.testing.assert_allclose(y.numpy(), _expected(X1, mode, **kwargs)[0], rtol=1e-12, atol=1e-14)


X3 = np.random.default_rng(2).standard_normal((1, 1, 2, 2, 2))


def test_interpolate_3d_follows_the_source_index_formula():
    trilinear = interpolate(ag.tensor(X3), size=(3, 2, 3), mode="trilinear").numpy()
    np.testing.assert_allclose(trilinear, _expected(X3, "linear", (3, 2, 3))[0], rtol=1e-12, atol=1e-14)
    nearest = interpolate(ag.tensor(X3), scale_factor=(1.5, 1, 2)).numpy()[0, 0]
    np.testing.assert_array_equal(nearest, X3[0, 0][[0, 0, 1]][:, :, [0, 0, 1, 1]])


SF = 2.007798098426743  # 38 -> 76 pixels, where floor(i / SF) and i // 2 part at i = 2


@pytest.mark.parametrize("h_scale, w_indices", [
    (1.1, np.arange(8) // 2),  # an output of 39 + 76 pixels: PyTorch's kernel halves the index exactly
    (2.0, np.floor(np.arange(8, dtype=np.float32) * np.float32(1 / SF))),  # 72 + 76 > 128: the other kernel, float32
])
def test_nearest_2d_picks_the_source_pixels_of_the_kernel_torch_picks(h_scale, w_indices):
    x = ag.tensor(np.arange(36 * 38, dtype=np.float32).reshape(1, 1, 36, 38)).expand(1, 2, 36, 38)
    y = interpolate(x, scale_factor=(h_scale, SF))
    assert y.shape == (1, 2, int(36 * h_scale), 76)
    np.testing.assert_array_equal(y.numpy()[0, 0, 0, :8] % 38, w_indices)


def test_nearest_keeps_uint8_and_float16():
    x = np.random.default_rng(3).integers(0, 255, (2, 3, 5, 6)).astype(np.uint8)
    y = interpolate(ag.tensor(x), size=(7, 4), mode="nearest-exact")
    assert y.dtype == ag.uint8
    rows, columns = (_weights(n, m, "nearest-exact").argmax(1) for n, m in ((5, 7), (6, 4)))
    np.testing.assert_array_equal(y.numpy(), x[:, :, rows][:, :, :, columns])
    assert interpolate(ag.ones(1, 1, 2, 2, dtype=ag.float16), scale_factor=2, mode="bilinear").dtype == ag.float16


def test_linear_with_an_unchanged_size_copies_the_input():
    # PyTorch copies a dim whose size does not change, whatever its scale_factor (here 1.1: 5 -> 5).
    x = _leaf(X1)
    y = interpolate(x, scale_factor=1.1, mode="linear")
    np.testing.assert_array_equal(y.detach().numpy(), X1)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones_like(X1))


@pytest.mark.parametrize("mode, shape, kwargs", [
    ("nearest", (1, 2, 3), {"scale_factor": 1.7}),
    ("nearest", (1, 1, 2, 3), {"size": (3, 5)}),
    ("nearest-exact", (1, 1, 2, 2, 3), {"size": (3, 1, 4)}),
    ("linear", (2, 1, 4), {"size": 7}),
    ("linear", (2, 1, 4), {"size": 3, "align_corners": True}),
    ("bilinear", (1, 2, 3, 3), {"scale_factor": (1.5, 0.7)}),
    ("bilinear", (1, 2, 3, 3), {"size": (4, 2), "align_corners": True}),
    ("trilinear", (1, 1, 2, 3, 2), {"size": (3, 2, 3)}),
    ("bicubic", (1, 1, 3, 3), {"size": (4, 2)}),
    ("bicubic", (1, 1, 3, 3), {"size": (5, 4), "align_corners": True}),
])
def test_interpolate_gradients_pass_gradcheck(mode, shape, kwargs):
    x = _leaf(np.random.default_rng(4).standard_normal(shape))
    assert gradcheck(lambda t: interpolate(t, mode=mode, **kwargs), [x], **TOL)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolate_second_derivatives_pass_gradgradcheck(mode):
    x = _leaf(np.random.default_rng(5).standard_normal((1, 1, 3, 3)))
    assert gradgradcheck(lambda t: interpolate(t, size=(4, 5), mode=mode) ** 2, [x], **TOL)


def test_interpolate_backward_of_a_feature_map_is_fast():
    # A composite of gather-style ops: its backward scatters once per dim, not per output pixel.
    x = ag.tensor(np.random.default_rng(6).standard_normal((8, 16, 32, 32)).astype(np.float32), requires_grad=True)
    start = time.perf_counter()
    interpolate(x, scale_factor=2, mode="bilinear").sum().backward()
    unfold(x, 3, padding=1).sum().backward()
    assert time.perf_counter() - start < 5.0
    assert x.grad.shape == (8, 16, 32, 32)


# -- interpolate: errors -------------------------------------------------------------------------------------
MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


@pytest.mark.parametrize("shape, kwargs, error, message", [
    ((2, 3, 4, 5), {"size": 3, "scale_factor": 2}, ValueError, "only one of size or scale_factor should be defined"),
    ((2, 3, 4, 5), {}, ValueError, "either size or scale_factor should be defined"),
    ((2, 3, 4, 5), {"size": (3,)}, ValueError,
     "Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of "
     "[4, 5] and output size of (3,). Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size "
     "in (o1, o2, ...,oK) format."),
    ((2, 3, 4, 5), {"size": (3.0, 4)}, TypeError,
     "expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, int], but got size with "
     "types [<class 'float'>, <class 'int'>]"),
    ((2, 3, 4, 5), {"scale_factor": (2, 3, 4)}, ValueError,
     "Input and scale_factor must have the same number of spatial dimensions, but got input with spatial dimensions "
     "of [4, 5] and scale_factor of shape (2, 3, 4). Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
     "scale_factor in (s1, s2, ...,sK) format."),
    ((2, 3, 4, 5), {"size": 3, "recompute_scale_factor": True}, ValueError,
     "recompute_scale_factor is not meaningful with an explicit size."),
    ((2, 3, 4, 5), {"size": 3, "align_corners": True}, ValueError,
     "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear"),
    ((2, 3, 4, 5), {"size": 3, "mode": "nearest-exact", "align_corners": False}, ValueError,
     "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear"),
    ((2, 3, 4, 5), {"size": 3, "mode": "linear"}, NotImplementedError, "Got 4D input, but linear mode needs 3D input"),
    ((2, 3, 4), {"size": 3, "mode": "bilinear"}, NotImplementedError, "Got 3D input, but bilinear mode needs 4D input"),
    ((2, 3, 4, 5), {"size": 3, "mode": "trilinear"}, NotImplementedError,
     "Got 4D input, but trilinear mode needs 5D input"),
    ((2, 3), {"size": 3}, NotImplementedError,
     f"Input Error: Only 3D, 4D and 5D input Tensors supported (got 2D) for the modes: {MODES} (got nearest)"),
    ((2, 3, 4), {"size": 3, "mode": "bicubic"}, NotImplementedError,
     f"Input Error: Only 3D, 4D and 5D input Tensors supported (got 3D) for the modes: {MODES} (got bicubic)"),
    ((2, 3, 4, 5), {"size": 3, "mode": "foo"}, NotImplementedError,
     f"Input Error: Only 3D, 4D and 5D input Tensors supported (got 4D) for the modes: {MODES} (got foo)"),
    ((2, 3, 4, 5), {"size": 3, "antialias": True}, ValueError,
     "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D tensor as input"),
    ((2, 3, 4, 5), {"size": 0}, RuntimeError,
     "Input and output sizes should be greater than 0, but got input (H: 4, W: 5) output (H: 0, W: 0)"),
    ((2, 3, 4, 5), {"scale_factor": -1.0}, RuntimeError,
     "Input and output sizes should be greater than 0, but got input (H: 4, W: 5) output (H: -4, W: -5)"),
    ((1, 1, 4), {"size": 0, "mode": "linear"}, RuntimeError,
     "Input and output sizes should be greater than 0, but got input (W: 4) and output (W: 0)"),
    ((1, 1, 0, 4, 5), {"size": 3, "mode": "trilinear"}, RuntimeError,
     "Input and output sizes should be greater than 0, but got input (D: 0, H: 4, W: 5) output (D: 3, H: 3, W: 3)"),
    ((1, 0, 4, 5), {"size": 3}, RuntimeError,
     "Non-empty 4D data tensor expected but got a tensor with sizes [1, 0, 4, 5]"),
])
def test_interpolate_errors_match_torch(shape, kwargs, error, message):
    _raises(lambda: interpolate(ag.zeros(shape), **kwargs), error, message)


def test_area_mode_averages_each_output_cells_source_window():
    x = np.arange(2 * 6 * 4, dtype=np.float64).reshape(1, 2, 6, 4)
    out = interpolate(ag.tensor(x), size=(3, 2), mode="area")  # each output cell: the mean of a 2 x 2 window
    np.testing.assert_allclose(out.numpy(), x.reshape(1, 2, 3, 2, 2, 2).mean(axis=(3, 5)))
    uneven = interpolate(ag.tensor(x[0]), size=4, mode="area")  # 3-D: windows [0,1), [1,2), [2,3), [3,4) of 4
    np.testing.assert_allclose(uneven.numpy(), x[0])
    shrink = interpolate(ag.tensor(np.arange(5.0).reshape(1, 1, 5)), size=2, mode="area")  # [0, 3) and [2, 5)
    np.testing.assert_allclose(shrink.numpy(), [[[1.0, 3.0]]])
    leaf = _leaf(np.random.default_rng(0).normal(size=(1, 2, 5, 7)))
    assert gradcheck(lambda t: interpolate(t, size=(3, 4), mode="area"), (leaf,))
    volume = np.arange(2 * 4 * 6 * 2, dtype=np.float64).reshape(1, 2, 4, 6, 2)  # 5-D: 2 x 2 x 2 windows
    np.testing.assert_allclose(interpolate(ag.tensor(volume), scale_factor=0.5, mode="area").numpy(),
                               volume.reshape(1, 2, 2, 2, 3, 2, 1, 2).mean(axis=(3, 5, 7)))
    _raises(lambda: interpolate(ag.zeros(1, 1, 2, 2, 2, 2), size=1, mode="area"), NotImplementedError,
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got 6D) for the modes: {MODES} (got area)")


def test_interpolate_takes_an_empty_batch():
    assert interpolate(ag.zeros(0, 3, 4, 5), size=3, mode="bilinear").shape == (0, 3, 3, 3)


@pytest.mark.parametrize("shape, size, mode, dtype, message", [
    ((2, 3, 4, 5), 3, "nearest", ag.int64, "\"upsample_nearest2d_channels_last\" not implemented for 'Long'"),
    ((2, 3, 100, 100), 90, "nearest", ag.int64, "\"compute_indices_weights_nearest\" not implemented for 'Long'"),
    ((2, 3, 4, 5), 3, "bilinear", ag.bool, "\"upsample_bilinear2d_channels_last\" not implemented for 'Bool'"),
    ((2, 3, 5), 3, "linear", ag.uint8, "\"compute_indices_weights_linear\" not implemented for 'Byte'"),
    ((2, 3, 5, 5), 3, "bicubic", ag.int32, "\"compute_indices_weights_cubic\" not implemented for 'Int'"),
])
def test_interpolate_refuses_the_dtypes_torch_refuses(shape, size, mode, dtype, message):
    _raises(lambda: interpolate(ag.zeros(shape, dtype=dtype), size=size, mode=mode), NotImplementedError, message)


# -- pixel_shuffle, pixel_unshuffle ----------------------------------------------------------------------------
def _pixel_shuffle_ref(x, r):
    """out[..., c, h * r + i, w * r + j] = x[..., c * r * r + i * r + j, h, w]."""
    *lead, channels, height, width = x.shape
    out = np.zeros((*lead, channels // (r * r), height * r, width * r), dtype=x.dtype)
    for c, i, j, h, w in np.ndindex(channels // (r * r), r, r, height, width):
        out[..., c, h * r + i, w * r + j] = x[..., c * r * r + i * r + j, h, w]
    return out


def test_pixel_shuffle_and_unshuffle_move_each_element_by_the_index_formula():
    for shape in ((1, 8, 1, 1), (1, 4, 2, 2), (2, 3, 18, 2, 3)):
        x = np.arange(math.prod(shape)).reshape(shape)
        r = 3 if shape[-3] == 18 else 2
        expected = _pixel_shuffle_ref(x, r)
        np.testing.assert_array_equal(pixel_shuffle(ag.tensor(x), r).numpy(), expected)
        unshuffled = pixel_unshuffle(ag.tensor(expected), r)  # the inverse map
        assert unshuffled.dtype == ag.int64
        np.testing.assert_array_equal(unshuffled.numpy(), x)


def test_pixel_shuffle_takes_any_leading_dims_and_unshuffle_inverts_it():
    x = ag.tensor(np.random.default_rng(7).standard_normal((3, 2, 8, 2, 3)))
    y = pixel_shuffle(x, 2)
    assert y.shape == (3, 2, 2, 4, 6)
    np.testing.assert_array_equal(pixel_unshuffle(y, 2).numpy(), x.numpy())
    assert pixel_shuffle(ag.zeros(4, 2, 2), 2).shape == (1, 4, 4)


def test_pixel_shuffle_gradients_pass_gradcheck():
    x = _leaf(np.random.default_rng(8).standard_normal((2, 8, 2, 3)))
    assert gradcheck(lambda t: pixel_shuffle(t, 2), [x], **TOL)
    assert gradcheck(lambda t: pixel_unshuffle(t, 2), [_leaf(np.ones((1, 2, 4, 6)))], **TOL)


@pytest.mark.parametrize("fn, shape, factor, message", [
    (pixel_shuffle, (2, 8, 4, 4), 3, "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
                                     "square of upscale_factor, but input.size(-3)=8 is not divisible by 9"),
    (pixel_shuffle, (4, 4), 2, "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 "
                               "dimension(s)"),
    (pixel_shuffle, (2, 8, 4, 4), 0, "pixel_shuffle expects a positive upscale_factor, but got 0"),
    (pixel_unshuffle, (2, 8, 4, 4), 3, "pixel_unshuffle expects height to be divisible by downscale_factor, but "
                                       "input.size(-2)=4 is not divisible by 3"),
    (pixel_unshuffle, (1, 1, 4, 5), 2, "pixel_unshuffle expects width to be divisible by downscale_factor, but "
                                       "input.size(-1)=5 is not divisible by 2"),
    (pixel_unshuffle, (2, 8, 4, 4), -1, "pixel_unshuffle expects a positive downscale_factor, but got -1"),
])
def test_pixel_shuffle_errors_match_torch(fn, shape, factor, message):
    _raises(lambda: fn(ag.zeros(shape), factor), RuntimeError, message)


# -- unfold, fold ---------------------------------------------------------------------------------------------
def _blocks(size, kernel_size, dilation, padding, stride):
    """Each sliding block's (row, column) input positions, blocks in row-major order, then kernel offsets."""
    k, d, p, s = ([v, v] if isinstance(v, int) else list(v) for v in (kernel_size, dilation, padding, stride))
    counts = [(n + 2 * pi - di * (ki - 1) - 1) // si + 1 for n, pi, di, ki, si in zip(size, p, d, k, s)]
    return [[(bh * s[0] - p[0] + i * d[0], bw * s[1] - p[1] + j * d[1]) for i, j in np.ndindex(*k)]
            for bh, bw in np.ndindex(*counts)], k[0] * k[1]


def _unfold_ref(x, kernel_size, dilation=1, padding=0, stride=1):
    """cols[n, c * K + k, b] = the padded input at block b's k-th kernel offset in channel c (zero in the padding)."""
    blocks, taps = _blocks(x.shape[2:], kernel_size, dilation, padding, stride)
    cols = np.zeros((x.shape[0], x.shape[1] * taps, len(blocks)))
    for b, spots in enumerate(blocks):
        for k, (h, w) in enumerate(spots):
            if 0 <= h < x.shape[2] and 0 <= w < x.shape[3]:
                cols[:, k::taps, b] = x[:, :, h, w]
    return cols


def _fold_ref(cols, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The sum, at each output pixel, of the columns' entries unfold would take from it."""
    blocks, taps = _blocks(output_size, kernel_size, dilation, padding, stride)
    out = np.zeros((cols.shape[0], cols.shape[1] // taps, *output_size))
    for b, spots in enumerate(blocks):
        for k, (h, w) in enumerate(spots):
            if 0 <= h < output_size[0] and 0 <= w < output_size[1]:
                out[:, :, h, w] += cols[:, k::taps, b]
    return out


def test_unfold_takes_each_blocks_pixels_by_the_index_formula():
    x = np.arange(24.0).reshape(1, 2, 3, 4)
    settings = {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1, "stride": (2, 1)}
    np.testing.assert_array_equal(unfold(ag.tensor(x), **settings).numpy(), _unfold_ref(x, **settings))
    np.testing.assert_array_equal(unfold(ag.tensor(x[0]), 2).numpy(), _unfold_ref(x, 2)[0])  # unbatched


def test_fold_sums_each_blocks_columns_into_its_pixels():
    cols = np.arange(1.0, 33.0).reshape(2, 4, 4)
    settings = {"kernel_size": 2, "padding": 1, "stride": 2}
    np.testing.assert_array_equal(fold(ag.tensor(cols), (3, 3), **settings).numpy(),
                                  _fold_ref(cols, (3, 3), **settings))
    overlapping = fold(ag.ones(1, 4, 4), (3, 3), 2)  # each pixel: the number of 2 x 2 blocks that cover it
    np.testing.assert_array_equal(overlapping.numpy(), _fold_ref(np.ones((1, 4, 4)), (3, 3), 2))
    assert overlapping.numpy().max() == 4
    assert fold(ag.zeros(12, 4), (3, 3), 2).shape == (3, 3, 3)  # unbatched
    assert fold(ag.zeros(0, 12, 4), (3, 3), 2).shape == (0, 3, 3, 3)


def test_fold_is_the_adjoint_of_unfold():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 5, 6))
    settings = {"kernel_size": (2, 3), "dilation": (2, 1), "padding": (1, 2), "stride": (1, 2)}
    cols = unfold(ag.tensor(x), **settings)
    c = rng.standard_normal(cols.shape)
    back = fold(ag.tensor(c), (5, 6), **settings)
    np.testing.assert_allclose((cols.numpy() * c).sum(), (x * back.numpy()).sum(), rtol=1e-12)


def test_unfold_and_fold_gradients_pass_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(10)
    x = _leaf(rng.standard_normal((2, 2, 4, 5)))
    settings = {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1, "stride": (2, 1)}
    assert gradcheck(lambda t: unfold(t, **settings), [x], **TOL)
    c = _leaf(rng.standard_normal((2, 12, 9)))
    assert gradcheck(lambda t: fold(t, (4, 5), **settings), [c], **TOL)
    assert gradgradcheck(lambda t: unfold(t, **settings) ** 2, [x], **TOL)


@pytest.mark.parametrize("shape, kwargs, error, message", [
    ((3, 4), {"kernel_size": 2}, IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ((1, 2, 3, 4, 5), {"kernel_size": 2}, RuntimeError,
     "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but "
     "got: [1, 2, 3, 4, 5]"),
    ((1, 0, 3, 4), {"kernel_size": 2}, RuntimeError,
     "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but "
     "got: [1, 0, 3, 4]"),
    ((1, 2, 3, 4), {"kernel_size": 5}, RuntimeError,
     "Given input with spatial size (3, 4), kernel_size=(5, 5), dilation=(1, 1), padding=(0, 0), calculated shape of "
     "the array of sliding blocks as (-1, 0), but its components must be at least one."),
    ((1, 1, 2, 1), {"kernel_size": (2, 3), "dilation": 2, "stride": 2}, RuntimeError,  # blocks round down
     "Given input with spatial size (2, 1), kernel_size=(2, 3), dilation=(2, 2), padding=(0, 0), calculated shape of "
     "the array of sliding blocks as (0, -1), but its components must be at least one."),
    ((1, 2, 3, 4), {"kernel_size": 2, "stride": 0}, RuntimeError,
     "stride should be greater than zero, but got stride_height: 0 stride_width: 0"),
    ((1, 2, 3, 4), {"kernel_size": 2, "padding": -1}, RuntimeError,
     "padding should be non-negative, but got pad_height: -1 pad_width: -1"),
    ((1, 2, 3, 4), {"kernel_size": 2, "dilation": 0}, RuntimeError,
     "dilation should be greater than zero, but got dilation_height: 0 dilation_width: 0"),
    ((1, 2, 3, 4), {"kernel_size": 0}, RuntimeError,
     "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 0"),
    ((1, 2, 3, 4), {"kernel_size": (2, 2, 2)}, RuntimeError, "It is expected kernel_size equals to 2, but got size 3"),
    ((1, 2, 3, 4), {"kernel_size": [2]}, RuntimeError, "It is expected kernel_size equals to 2, but got size 1"),
    ((1, 2, 3, 4), {"kernel_size": 2.0}, TypeError,
     "im2col(): argument 'kernel_size' (position 2) must be tuple of ints, but found element of type float at pos 0"),
])
def test_unfold_errors_match_torch(shape, kwargs, error, message):
    _raises(lambda: unfold(ag.zeros(shape), **kwargs), error, message)


@pytest.mark.parametrize("shape, args, kwargs, message", [
    ((1, 12, 6), ((3, 3), 2), {},
     "Given output_size=(3, 3), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), expected size of "
     "input's dimension 2 to match the calculated number of sliding blocks 2 * 2 = 4, but got input.size(2)=6."),
    ((1, 13, 4), ((3, 3), 2), {},
     "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=13 "
     "and kernel_size=(2, 2)."),
    ((2, 1, 12, 4), ((3, 3), 2), {},
     "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, "
     "but got: [2, 1, 12, 4]"),
    ((1, 12, 0), ((3, 3), 2), {},
     "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, "
     "but got: [1, 12, 0]"),
    ((1, 12, 4), ((3, 3, 3), 2), {}, "It is expected output_size equals to 2, but got size 3"),
    ((1, 12, 4), ((3, 3), 2), {"stride": 0}, "stride should be greater than zero, but got stride_height: 0 "
                                             "stride_width: 0"),
    ((1, 12, 4), ((1, 1), 2), {},
     "Given output_size=(1, 1), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), expected size of "
     "input's dimension 2 to match the calculated number of sliding blocks 0 * 0 = 0, but got input.size(2)=4."),
])
def test_fold_errors_match_torch(shape, args, kwargs, message):
    _raises(lambda: fold(ag.zeros(shape), *args, **kwargs), RuntimeError, message)


@pytest.mark.parametrize("fn, message", [
    (lambda: unfold(ag.zeros(1, 2, 3, 4, dtype=ag.int64), 2), "\"im2col_out_cpu\" not implemented for 'Long'"),
    (lambda: fold(ag.zeros(1, 8, 4, dtype=ag.int64), 3, 2), "\"col2im_out_cpu\" not implemented for 'Long'"),
])
def test_unfold_and_fold_refuse_integer_inputs(fn, message):
    _raises(fn, NotImplementedError, message)


# -- layers ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layer, text", [
    (Upsample(scale_factor=2), "Upsample(scale_factor=2.0, mode='nearest')"),
    (Upsample(size=3, mode="bilinear", align_corners=True), "Upsample(size=3, mode='bilinear')"),
    (Upsample(scale_factor=(2, 3), mode="bilinear"), "Upsample(scale_factor=(2.0, 3.0), mode='bilinear')"),
    (Upsample(size=[2, 3]), "Upsample(size=[2, 3], mode='nearest')"),
    (Upsample(), "Upsample(size=None, mode='nearest')"),
    (UpsamplingNearest2d(scale_factor=2), "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"),
    (UpsamplingBilinear2d(size=(3, 4)), "UpsamplingBilinear2d(size=(3, 4), mode='bilinear')"),
    (PixelShuffle(2), "PixelShuffle(upscale_factor=2)"),
    (PixelUnshuffle(3), "PixelUnshuffle(downscale_factor=3)"),
    (Unfold(3), "Unfold(kernel_size=3, dilation=1, padding=0, stride=1)"),
    (Fold((4, 5), 2, dilation=1, padding=1, stride=(2, 1)),
     "Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=1, stride=(2, 1))"),
])
def test_layer_reprs_match_torch(layer, text):
    assert repr(layer) == text
    assert layer.state_dict() == {} and list(layer.parameters()) == []


def test_layers_run_their_functional_forms():
    x = ag.tensor(X)
    np.testing.assert_array_equal(UpsamplingBilinear2d(scale_factor=2)(x).numpy(),
                                  interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=True).numpy())
    np.testing.assert_array_equal(UpsamplingNearest2d(size=(3, 5))(x).numpy(), interpolate(x, size=(3, 5)).numpy())
    np.testing.assert_array_equal(Upsample(scale_factor=1.5, mode="bilinear", recompute_scale_factor=True)(x).numpy(),
                                  interpolate(x, scale_factor=1.5, mode="bilinear",
                                              recompute_scale_factor=True).numpy())
    y = ag.tensor(np.random.default_rng(11).standard_normal((1, 8, 2, 2)))
    np.testing.assert_array_equal(PixelUnshuffle(2)(PixelShuffle(2)(y)).numpy(), y.numpy())
    cols = Unfold(2, padding=1)(ag.tensor(X))
    assert cols.shape == (1, 8, 12)
    np.testing.assert_array_equal(Fold((2, 3), 2, padding=1)(cols).numpy(),
                                  fold(cols, (2, 3), 2, padding=1).numpy())
    _raises(lambda: Upsample(scale_factor=2, align_corners=True)(x), ValueError, "align_corners option can only be "
            "set with the interpolating modes: linear | bilinear | bicubic | trilinear")


@pytest.mark.gpu
def test_resampling_on_cuda_gives_the_cpu_numbers_and_gradients(cupy):
    x = np.random.default_rng(12).standard_normal((2, 4, 3, 5))
    for fn in (lambda t: interpolate(t, size=(4, 7), mode="bicubic"),
               lambda t: interpolate(t, scale_factor=2, mode="nearest"),
               lambda t: pixel_shuffle(t, 2),
               lambda t: fold(unfold(t, 2, padding=1, stride=(1, 2)), (3, 5), 2, padding=1, stride=(1, 2))):
        results = []
        for device in ("cpu", "cuda"):
            leaf = ag.tensor(x, device=device, requires_grad=True)
            y = fn(leaf)
            (y * y).sum().backward()
            assert y.device is ag.device(device)
            results.append((y.detach().cpu().numpy(), leaf.grad.cpu().numpy()))
        for got, expected in zip(*results):
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
