"""interpolate, pixel_shuffle / pixel_unshuffle, unfold / fold and their layers as PyTorch's: values and gradients,
the source pixels each kernel picks, shapes, reprs and error texts.

Expected values and messages were read off torch 2.13 and are written out here (torch is not a test dependency).
"""

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
from actorgrad.ops.resampling import fold, interpolate, pixel_shuffle, pixel_unshuffle, unfold

X = np.random.default_rng(0).standard_normal((1, 2, 2, 3))
TOL = {"atol": 1e-6, "rtol": 1e-4}


def _raises(fn, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        fn()


def _leaf(array):
    return ag.tensor(array, dtype=ag.float64, requires_grad=True)


def _values_and_grad(fn, x):
    """fn(x)'s second channel and x's gradient under an upstream gradient of linspace(-1, 1), as the torch
    literals below were made."""
    leaf = _leaf(x)
    y = fn(leaf)
    y.backward(ag.tensor(np.linspace(-1, 1, y.numel()).reshape(y.shape)))
    return y.detach().numpy()[0, 1], leaf.grad.numpy()[0]


# -- interpolate: values and gradients -------------------------------------------------------------------------
INTERPOLATE_2D = [
    ("nearest", {"size": (3, 5)},
     [[1.30400005, 1.30400005, 0.94708096, 0.94708096, -0.70373524],
      [1.30400005, 1.30400005, 0.94708096, 0.94708096, -0.70373524],
      [-1.26542147, -1.26542147, -0.62327446, -0.62327446, 0.04132598]],
     [[[-3.17241379, -2.62068966, -1.10344828], [-0.55172414, -0.27586207, -0.03448276]],
      [[0.96551724, 1.51724138, 0.96551724], [1.51724138, 1.79310345, 1.0]]]),
    ("nearest-exact", {"size": (3, 5)},
     [[1.30400005, 1.30400005, 0.94708096, -0.70373524, -0.70373524],
      [-1.26542147, -1.26542147, -0.62327446, 0.04132598, 0.04132598],
      [-1.26542147, -1.26542147, -0.62327446, 0.04132598, 0.04132598]],
     [[[-1.93103448, -0.86206897, -1.51724138], [-1.79310345, -0.68965517, -0.96551724]],
      [[0.13793103, 0.17241379, 0.55172414], [2.34482759, 1.37931034, 3.17241379]]]),
    ("bilinear", {"size": (3, 5)},
     [[1.30400005, 1.16123241, 0.94708096, -0.04340876, -0.70373524],
      [0.01928929, 0.07633487, 0.16190325, -0.13396148, -0.33120463],
      [-1.26542147, -1.00856267, -0.62327446, -0.2245142, 0.04132598]],
     [[[-2.06206897, -2.01724138, -1.52413793], [-0.95862069, -0.77586207, -0.42068966]],
      [[0.42068966, 0.77586207, 0.95862069], [1.52413793, 2.01724138, 2.06206897]]]),
    ("bilinear", {"size": (3, 5), "align_corners": True},
     [[1.30400005, 1.1255405, 0.94708096, 0.12167286, -0.70373524],
      [0.01928929, 0.09059627, 0.16190325, -0.08465069, -0.33120463],
      [-1.26542147, -0.94434797, -0.62327446, -0.29097424, 0.04132598]],
     [[[-1.93965517, -2.24137931, -1.42241379], [-0.90517241, -0.86206897, -0.38793103]],
      [[0.38793103, 0.86206897, 0.90517241], [1.42241379, 2.24137931, 1.93965517]]]),
    ("bilinear", {"scale_factor": 1.5},
     [[1.30400005, 1.1255405, 0.67194493, -0.4285992],
      [0.01928929, 0.09059627, 0.0797186, -0.24901998],
      [-1.26542147, -0.94434797, -0.51250772, -0.06944076]],
     [[[-1.92391304, -1.64130435, -0.95652174], [-0.88043478, -0.59782609, -0.26086957]],
      [[0.42391304, 0.70652174, 0.60869565], [1.4673913, 1.75, 1.30434783]]]),
    ("bilinear", {"scale_factor": 1.5, "recompute_scale_factor": True},
     [[1.30400005, 1.08092562, 0.32802489, -0.70373524],
      [0.01928929, 0.10842301, -0.0230122, -0.33120463],
      [-1.26542147, -0.86407959, -0.3740493, 0.04132598]],
     [[[-1.77445652, -1.41304348, -1.33423913], [-0.81793478, -0.54347826, -0.37771739]],
      [[0.37771739, 0.54347826, 0.81793478], [1.33423913, 1.41304348, 1.77445652]]]),
    ("bicubic", {"size": (3, 5)},
     [[1.56962989, 1.48823652, 1.08339654, -0.08185182, -0.94618418],
      [0.00559835, 0.11012727, 0.16190325, -0.12961057, -0.37854298],
      [-1.5584332, -1.26798198, -0.75959004, -0.17736931, 0.18909821]],
     [[[-2.22890613, -2.04, -1.63387165], [-0.90474904, -0.64137931, -0.30971456]],
      [[0.30971456, 0.64137931, 0.90474904], [1.63387165, 2.04, 2.22890613]]]),
    ("bicubic", {"size": (3, 5), "align_corners": True},
     [[1.30400005, 1.28030452, 0.94708096, 0.0882117, -0.70373524],
      [0.01928929, 0.13682513, 0.16190325, -0.07128063, -0.33120463],
      [-1.26542147, -1.00665426, -0.62327446, -0.23077296, 0.04132598]],
     [[[-1.84428879, -2.45150862, -1.30765086], [-0.87446121, -0.94288793, -0.33782328]],
      [[0.33782328, 0.94288793, 0.87446121], [1.30765086, 2.45150862, 1.84428879]]]),
]


@pytest.mark.parametrize("mode, kwargs, values, grad", INTERPOLATE_2D)
def test_interpolate_2d_values_and_gradients_match_torch(mode, kwargs, values, grad):
    y, g = _values_and_grad(lambda x: interpolate(x, mode=mode, **kwargs), X)
    np.testing.assert_allclose(y, values, atol=1e-8)
    np.testing.assert_allclose(g, grad, atol=1e-8)


X1 = np.random.default_rng(1).standard_normal((1, 1, 5))


@pytest.mark.parametrize("mode, kwargs, values", [
    ("nearest", {"scale_factor": 1.7},
     [0.34558419, 0.34558419, 0.82161814, 0.82161814, 0.33043708, 0.33043708, -1.30315723, 0.90535587]),
    ("nearest-exact", {"scale_factor": 1.7},
     [0.34558419, 0.34558419, 0.82161814, 0.33043708, 0.33043708, -1.30315723, -1.30315723, 0.90535587]),
    ("linear", {"scale_factor": 0.6}, [0.50426218, 0.33043708, 0.16918483]),
    ("linear", {"size": 7, "align_corners": True},
     [0.34558419, 0.66294016, 0.65789112, 0.33043708, -0.7586258, -0.5669862, 0.90535587]),
])
def test_interpolate_1d_matches_torch(mode, kwargs, values):
    y = interpolate(ag.tensor(X1), mode=mode, **kwargs)
    np.testing.assert_allclose(y.numpy()[0, 0], values, atol=1e-8)


X3 = np.random.default_rng(2).standard_normal((1, 1, 2, 2, 2))


def test_interpolate_3d_matches_torch():
    trilinear = interpolate(ag.tensor(X3), size=(3, 2, 3), mode="trilinear").numpy()[0, 0]
    np.testing.assert_allclose(trilinear, [
        [[0.18905338, -0.16684753, -0.52274844], [-0.41306354, -1.42726546, -2.44146738]],
        [[0.99438038, 0.65254455, 0.31070872], [-0.36924319, -0.60153679, -0.8338304]],
        [[1.79970738, 1.47193663, 1.14416587], [-0.32542284, 0.22419187, 0.77380659]],
    ], atol=1e-8)
    nearest = interpolate(ag.tensor(X3), scale_factor=(1.5, 1, 2)).numpy()[0, 0]
    np.testing.assert_array_equal(nearest, X3[0, 0][[0, 0, 1]][:, :, [0, 0, 1, 1]])


@pytest.mark.parametrize("h_scale, w_indices", [
    (1.1, [0, 0, 1, 1, 2, 2, 3, 3]),  # an output of 39 + 76 pixels: PyTorch's kernel halves the index exactly
    (2.0, [0, 0, 0, 1, 1, 2, 2, 3]),  # 72 + 76 > 128: the other kernel, floor(i / 2.0078) in float32
])
def test_nearest_2d_picks_the_source_pixels_of_the_kernel_torch_picks(h_scale, w_indices):
    x = ag.tensor(np.arange(36 * 38, dtype=np.float32).reshape(1, 1, 36, 38)).expand(1, 2, 36, 38)
    y = interpolate(x, scale_factor=(h_scale, 2.007798098426743))
    assert y.shape == (1, 2, int(36 * h_scale), 76)
    np.testing.assert_array_equal(y.numpy()[0, 0, 0, :8] % 38, w_indices)


def test_nearest_keeps_uint8_and_float16():
    x = np.random.default_rng(3).integers(0, 255, (2, 3, 5, 6)).astype(np.uint8)
    y = interpolate(ag.tensor(x), size=(7, 4), mode="nearest-exact")
    assert y.dtype == ag.uint8
    np.testing.assert_array_equal(y.numpy(), x[:, :, [0, 1, 1, 2, 3, 3, 4]][:, :, :, [0, 2, 3, 5]])
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
def test_pixel_shuffle_and_unshuffle_match_torch():
    np.testing.assert_array_equal(pixel_shuffle(ag.arange(8).reshape(1, 8, 1, 1), 2).numpy(),
                                  [[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]])
    np.testing.assert_array_equal(pixel_shuffle(ag.arange(16).reshape(1, 4, 2, 2), 2).numpy(),
                                  [[[[0, 4, 1, 5], [8, 12, 9, 13], [2, 6, 3, 7], [10, 14, 11, 15]]]])
    unshuffled = pixel_unshuffle(ag.arange(16).reshape(1, 1, 4, 4), 2)
    assert unshuffled.dtype == ag.int64
    np.testing.assert_array_equal(unshuffled.numpy(), [[[[0, 2], [8, 10]], [[1, 3], [9, 11]], [[4, 6], [12, 14]],
                                                        [[5, 7], [13, 15]]]])


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
def test_unfold_matches_torch():
    cols = unfold(ag.arange(12.0).reshape(1, 1, 3, 4), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    np.testing.assert_array_equal(cols.numpy(), [[[0, 0, 0, 4], [0, 0, 5, 6], [0, 0, 7, 0], [0, 0, 0, 8],
                                                  [1, 2, 9, 10], [3, 0, 11, 0]]])
    assert unfold(ag.zeros(2, 3, 4), 2).shape == (8, 6)  # unbatched


def test_fold_matches_torch():
    image = fold(ag.arange(1.0, 17.0).reshape(1, 4, 4), (3, 3), 2, padding=1, stride=2)
    np.testing.assert_array_equal(image.numpy(), [[[[13, 10, 14], [7, 4, 8], [15, 12, 16]]]])
    overlapping = fold(ag.ones(1, 4, 4), (3, 3), 2)
    np.testing.assert_array_equal(overlapping.numpy(), [[[[1, 2, 1], [2, 4, 2], [1, 2, 1]]]])
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
def test_resampling_on_cuda_gives_the_cpu_numbers_and_gradients():
    cupy = pytest.importorskip("cupy")
    if not cupy.cuda.is_available():
        pytest.skip("no CUDA device")
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
