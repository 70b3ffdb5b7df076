"""grid_sample at NaN, infinite and far grid points, and the int arguments of channel_shuffle and one_hot, as
PyTorch 2.13's CPU kernels treat them (found by a differential review against torch; torch is not a test
dependency). Expected values come from plain per-pixel formulas written out here."""

import re

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F

NAN, INF = float("nan"), float("inf")


def _plane(h, w):
    return np.arange(1.0, h * w + 1).reshape(1, 1, h, w)


def _rows_at(plane, row):
    """plane (H, W) read at a fractional row: the linear mix of the two rows around it."""
    low = int(np.floor(row))
    t = row - low
    return plane[low] * (1 - t) + plane[low + 1] * t


def _sample(x, points, *, device="cpu", **options):
    grid = ag.tensor(np.array(points, dtype=np.float64).reshape(1, 1, len(points), 2), device=device)
    return F.grid_sample(ag.tensor(x, device=device), grid, **options).cpu().numpy().ravel()


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # numpy's, on inf - inf
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_2d_zeros_padding_turns_nan_and_infinite_grid_points_into_nan(mode, align_corners):
    x = _plane(4, 5)
    out = _sample(x, [(NAN, 0.0), (0.0, NAN), (INF, 0.0), (0.0, -INF), (3.0, 0.0)], mode=mode,
                  padding_mode="zeros", align_corners=align_corners)
    assert np.isnan(out[:4]).all()
    assert out[4] == 0.0  # a finite point outside still reads 0


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_2d_zeros_padding_nan_point_passes_no_nan_into_the_input_gradient(mode):
    x = ag.tensor(_plane(4, 5), requires_grad=True)
    grid = ag.tensor(np.array([NAN, 0.0, 0.0, -0.1]).reshape(1, 1, 2, 2))
    F.grid_sample(x, grid, mode=mode, padding_mode="zeros", align_corners=False)[..., 1].sum().backward()
    gradient = x.grad.numpy()
    assert np.isfinite(gradient).all()
    np.testing.assert_allclose(gradient.sum(), 1.0, rtol=1e-12)  # the finite point's weights sum to 1


@pytest.mark.parametrize("padding_mode", ["border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_2d_border_and_reflection_clip_a_nan_position_to_the_first_pixel(padding_mode, align_corners):
    x = _plane(4, 5)
    plane = x[0, 0]
    # y = 0 is row 1.5 for both align_corners on a 4-row plane; x = NaN clips to column 0
    out = _sample(x, [(NAN, 0.0), (0.0, NAN), (NAN, NAN)], mode="bilinear", padding_mode=padding_mode,
                  align_corners=align_corners)
    # x = 0 is column 2 on a 5-column plane with or without align_corners; y = NaN clips to row 0
    np.testing.assert_allclose(out, [_rows_at(plane, 1.5)[0], plane[0, 2], plane[0, 0]], rtol=1e-12)
    nearest = _sample(x, [(NAN, 0.6)], mode="nearest", padding_mode=padding_mode, align_corners=align_corners)
    row = (0.6 + 1) * 3 / 2 if align_corners else ((0.6 + 1) * 4 - 1) / 2
    np.testing.assert_array_equal(nearest, [plane[int(np.rint(row)), 0]])


@pytest.mark.parametrize("align_corners", [False, True])
def test_2d_reflection_of_an_infinite_position_lands_on_the_first_pixel(align_corners):
    x = _plane(4, 5)
    out = _sample(x, [(INF, -1.0), (-INF, -1.0)], mode="bilinear", padding_mode="reflection",
                  align_corners=align_corners)
    # y = -1 is row 0 with align_corners, row -0.5 (reflected onto itself, then clipped to 0) without
    np.testing.assert_allclose(out, [x[0, 0, 0, 0]] * 2, rtol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_3d_kernel_reads_nan_positions_as_pytorch_3d_kernel(mode, padding_mode):
    x = np.arange(1.0, 25.0).reshape(1, 1, 2, 3, 4)
    grid = ag.tensor(np.array([NAN, -1.0, -1.0]).reshape(1, 1, 1, 1, 3))
    out = F.grid_sample(ag.tensor(x), grid, mode=mode, padding_mode=padding_mode, align_corners=True).numpy()
    # zeros skips the taps (0); border and reflection clip NaN to the last pixel along its dim
    expected = 0.0 if padding_mode == "zeros" else x[0, 0, 0, 0, 3]
    np.testing.assert_array_equal(out.ravel(), [expected])


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_bicubic_far_grid_point_keeps_a_bounded_offset(padding_mode):
    x = _plane(4, 5)
    # y = -1 with align_corners is exactly row 0, so the bicubic weights along y are (0, 1, 0, 0)
    out = _sample(x, [(1e30, -1.0), (-1e30, -1.0)], mode="bicubic", padding_mode=padding_mode, align_corners=True)
    expected = {"zeros": [0.0, 0.0], "border": [x[0, 0, 0, 4], x[0, 0, 0, 0]]}
    if padding_mode in expected:
        np.testing.assert_allclose(out, expected[padding_mode], rtol=1e-12)
    else:  # PyTorch's reflection loses the position of 1e30 to rounding: only the value's bounds are shared
        assert (np.abs(out) <= np.abs(x).max()).all()


@pytest.mark.parametrize("groups", [np.int64(2), ag.tensor(2), np.int32(4)])
def test_channel_shuffle_takes_numpy_and_tensor_integers(groups):
    x = np.arange(2 * 8 * 3.0).reshape(2, 8, 3)
    g = int(groups)
    expected = x.reshape(2, g, 8 // g, 3).transpose(0, 2, 1, 3).reshape(x.shape)
    np.testing.assert_array_equal(F.channel_shuffle(ag.tensor(x), groups).numpy(), expected)
    np.testing.assert_array_equal(ag.nn.ChannelShuffle(groups)(ag.tensor(x)).numpy(), expected)


@pytest.mark.parametrize("groups", [2.0, True, ag.tensor(2.0)])
def test_channel_shuffle_refuses_non_integer_groups(groups):
    kind = {float: "float", bool: "bool"}.get(type(groups), "Tensor")
    message = f"channel_shuffle(): argument 'groups' (position 2) must be int, not {kind}"
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        F.channel_shuffle(ag.zeros(1, 4, 2), groups)


@pytest.mark.parametrize("num_classes, kind", [(5.0, "float"), (True, "bool"), (None, "NoneType"),
                                               (np.float64(5), "numpy.float64")])
def test_one_hot_refuses_non_integer_num_classes(num_classes, kind):
    message = f"one_hot(): argument 'num_classes' (position 2) must be int, not {kind}"
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        F.one_hot(ag.tensor([1, 2]), num_classes)


@pytest.mark.parametrize("num_classes", [np.int64(4), ag.tensor(4)])
def test_one_hot_takes_numpy_and_tensor_integers(num_classes):
    out = F.one_hot(ag.tensor([1, 3]), num_classes)
    np.testing.assert_array_equal(out.numpy(), np.eye(4, dtype=np.int64)[[1, 3]])
    assert out.dtype == ag.int64


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_nan_grid_points_on_cuda_read_as_on_cpu(cupy):
    x = _plane(4, 5)
    points = [(NAN, 0.0), (INF, 0.3), (1e30, -1.0), (0.2, 0.3)]
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding_mode in ("zeros", "border"):
            results = [_sample(x, points, device=device, mode=mode, padding_mode=padding_mode, align_corners=True)
                       for device in ("cpu", "cuda")]
            # NaN where the cpu has NaN; the finite point to float64 rounding (a GPU fuses multiply-adds)
            np.testing.assert_allclose(*results, rtol=1e-12, atol=0)


def test_native_channel_shuffle_is_channel_shuffle_under_aten_name():
    x = np.arange(2 * 6 * 2.0).reshape(2, 6, 2)
    expected = x.reshape(2, 3, 2, 2).transpose(0, 2, 1, 3).reshape(x.shape)
    np.testing.assert_array_equal(ag.native_channel_shuffle(ag.tensor(x), 3).numpy(), expected)
    message = "native_channel_shuffle(): argument 'groups' (position 2) must be int, not float"
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        ag.native_channel_shuffle(ag.tensor(x), 3.0)
