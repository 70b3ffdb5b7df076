"""affine_grid and grid_sample as PyTorch's: values against a plain per-pixel reading of PyTorch's kernels written
out here, gradients in the input, the grid and theta against finite differences in float64 (grid points kept away
from pixel centres, half-pixels and the padding's edges, where the sampling has kinks), warnings and error texts.

Messages were read off torch 2.13 (torch is not a test dependency).
"""

import itertools
import math
import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck

TOL = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-4}
MODES_2D = list(itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [False, True]))
MODES_3D = list(itertools.product(["bilinear", "nearest"], ["zeros", "border", "reflection"], [False, True]))


def _raises(fn, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        fn()


# -- a plain reference: one output pixel at a time ---------------------------------------------------------------
def _source(coord, size, align_corners):
    return (coord + 1) / 2 * (size - 1) if align_corners else ((coord + 1) * size - 1) / 2


def _pad(x, size, padding_mode, align_corners):
    """A position moved by the padding: clipped (border), or mirrored at the edges then clipped (reflection)."""
    if padding_mode == "zeros":
        return x
    if padding_mode == "reflection":
        low, high = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        if high == low:
            x = 0.0
        else:
            while not low <= x <= high:
                x = 2 * low - x if x < low else 2 * high - x
    return min(max(x, 0.0), size - 1.0)


def _read(plane, index, padding_mode, align_corners):
    """plane at an integer tap `index` (one int per dim), 0 outside it; bicubic pads the tap itself."""
    index = [int(_pad(float(i), n, padding_mode, align_corners)) for i, n in zip(index, plane.shape)]
    if all(0 <= i < n for i, n in zip(index, plane.shape)):
        return plane[tuple(index)]
    return 0.0


def _cubic(t):
    a = -0.75
    near = [((a + 2) * x - (a + 3)) * x * x + 1 for x in (t, 1 - t)]
    far = [((a * x - 5 * a) * x + 8 * a) * x - 4 * a for x in (t + 1, 2 - t)]
    return [far[0], near[0], near[1], far[1]]


def _sample_point(plane, point, mode, padding_mode, align_corners):
    """One output value: `plane` (one channel's [D,] H, W) read at `point` (x, y[, z])."""
    sizes = plane.shape
    position = [_source(c, n, align_corners) for c, n in zip(point[::-1], sizes)]
    if mode == "bicubic":
        lows = [math.floor(p) for p in position]
        weights = [_cubic(p - low) for p, low in zip(position, lows)]
        return sum(weights[0][i] * weights[1][j] * _read(plane, (lows[0] - 1 + i, lows[1] - 1 + j), padding_mode,
                                                         align_corners) for i in range(4) for j in range(4))
    position = [_pad(p, n, padding_mode, align_corners) for p, n in zip(position, sizes)]
    if mode == "nearest":
        return _read(plane, [round(p) for p in position], "zeros", align_corners)
    total = 0.0
    for corner in itertools.product((0, 1), repeat=len(sizes)):
        weight, index = 1.0, []
        for p, up in zip(position, corner):
            low = math.floor(p)
            weight *= p - low if up else 1 - (p - low)
            index.append(low + up)
        total += weight * _read(plane, index, "zeros", align_corners)
    return total


def _reference(x, grid, mode, padding_mode, align_corners):
    n, c = x.shape[:2]
    out = np.zeros((n, c, *grid.shape[1:-1]))
    for b, ch in itertools.product(range(n), range(c)):
        for place in np.ndindex(*grid.shape[1:-1]):
            out[(b, ch, *place)] = _sample_point(x[b, ch], grid[(b, *place)], mode, padding_mode, align_corners)
    return out


def _grid(rng, shape, sizes, align_corners):
    """Grid points whose source positions (x along the last size) lie in or around the input, each at least 0.1
    from a whole or half pixel: away from every kink of the sampling and of the padding's edges."""
    whole = rng.integers(-2, max(sizes) + 2, shape)
    frac = rng.choice([0.15, 0.3, 0.38, 0.62, 0.7, 0.85], shape)
    position = whole + frac
    size = np.array(sizes[::-1], float)
    return position * 2 / (size - 1) - 1 if align_corners else (2 * position + 1) / size - 1


# -- grid_sample: values and gradients ------------------------------------------------------------------------
@pytest.mark.parametrize("mode, padding_mode, align_corners", MODES_2D)
def test_grid_sample_2d_reads_what_the_per_pixel_reference_reads(mode, padding_mode, align_corners):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 2, 3, 4))
    grid = rng.uniform(-1.7, 1.7, (2, 3, 5, 2))
    got = F.grid_sample(ag.tensor(x), ag.tensor(grid), mode, padding_mode, align_corners)
    np.testing.assert_allclose(got.numpy(), _reference(x, grid, mode, padding_mode, align_corners), atol=1e-12)


@pytest.mark.parametrize("mode, padding_mode, align_corners", MODES_3D)
def test_grid_sample_3d_reads_what_the_per_pixel_reference_reads(mode, padding_mode, align_corners):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 2, 3, 4))
    grid = rng.uniform(-1.7, 1.7, (1, 2, 3, 2, 3))
    got = F.grid_sample(ag.tensor(x), ag.tensor(grid), mode, padding_mode, align_corners)
    np.testing.assert_allclose(got.numpy(), _reference(x, grid, mode, padding_mode, align_corners), atol=1e-12)


def test_grid_sample_keeps_float32_and_takes_empty_batches_and_channels():
    x = ag.tensor(np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4))
    y = F.grid_sample(x, ag.zeros(1, 2, 2, 2), align_corners=True)
    assert y.dtype == ag.float32
    np.testing.assert_allclose(y.numpy(), np.full((1, 1, 2, 2), 5.5))  # the middle of the 3 x 4 image
    assert F.grid_sample(ag.zeros(0, 3, 4, 5), ag.zeros(0, 6, 7, 2), align_corners=False).shape == (0, 3, 6, 7)
    assert F.grid_sample(ag.zeros(2, 0, 4, 5), ag.zeros(2, 6, 7, 2), align_corners=False).shape == (2, 0, 6, 7)


@pytest.mark.parametrize("mode, padding_mode, align_corners", MODES_2D)
def test_grid_sample_2d_gradients_in_input_and_grid_pass_gradcheck(mode, padding_mode, align_corners):
    rng = np.random.default_rng(2)
    x = ag.tensor(rng.standard_normal((1, 2, 3, 4)), requires_grad=True)
    grid = ag.tensor(_grid(rng, (1, 2, 3, 2), (3, 4), align_corners), requires_grad=True)
    assert gradcheck(lambda a, g: F.grid_sample(a, g, mode, padding_mode, align_corners), [x, grid], **TOL)


@pytest.mark.parametrize("mode, padding_mode, align_corners", MODES_3D)
def test_grid_sample_3d_gradients_in_input_and_grid_pass_gradcheck(mode, padding_mode, align_corners):
    rng = np.random.default_rng(3)
    x = ag.tensor(rng.standard_normal((1, 1, 2, 3, 3)), requires_grad=True)
    grid = ag.tensor(_grid(rng, (1, 2, 1, 2, 3), (2, 3, 3), align_corners), requires_grad=True)
    assert gradcheck(lambda a, g: F.grid_sample(a, g, mode, padding_mode, align_corners), [x, grid], **TOL)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_second_derivatives_pass_gradgradcheck(mode):
    rng = np.random.default_rng(4)
    x = ag.tensor(rng.standard_normal((1, 1, 3, 3)), requires_grad=True)
    grid = ag.tensor(_grid(rng, (1, 1, 2, 2), (3, 3), False), requires_grad=True)
    assert gradgradcheck(lambda a, g: F.grid_sample(a, g, mode, "reflection", False) ** 2, [x, grid], **TOL)


def test_nearest_gives_the_grid_a_gradient_of_zeros():
    x = ag.randn(1, 2, 3, 4, requires_grad=True)
    grid = ag.tensor(np.random.default_rng(5).uniform(-1, 1, (1, 2, 2, 2)), dtype=ag.float32, requires_grad=True)
    F.grid_sample(x, grid, "nearest", align_corners=False).sum().backward()
    np.testing.assert_array_equal(grid.grad.numpy(), np.zeros((1, 2, 2, 2)))
    assert x.grad.numpy().sum() == 2 * 4  # each output reads one pixel


@pytest.mark.parametrize("padding_mode, align_corners", itertools.product(["border", "reflection"], [False, True]))
def test_a_grid_point_on_the_clip_limit_gets_no_gradient_along_it(padding_mode, align_corners):
    # PyTorch's clip_coordinates_set_grad passes nothing at the limit itself: x at the first or last pixel centre.
    edge = 1.0 if align_corners else 1 - 1 / 4
    x = ag.tensor(np.arange(12.0).reshape(1, 1, 3, 4) ** 1.5)
    grid = ag.tensor([[[[-edge, 0.3], [edge, 0.3], [0.2, 0.3]]]], dtype=ag.float64, requires_grad=True)
    F.grid_sample(x, grid, padding_mode=padding_mode, align_corners=align_corners).sum().backward()
    along_x = grid.grad.numpy()[0, 0, :, 0]
    np.testing.assert_array_equal(along_x[:2], [0.0, 0.0])
    assert along_x[2] > 1  # inside, the slope of the rising rows is felt

def test_a_grid_point_at_nan_reads_nan_with_zeros_padding():
    # PyTorch's 2-d kernel reads the (outside) taps as 0 times their NaN weights
    grid = ag.tensor([[[[float("nan"), 0.0], [0.0, 0.0]]]])
    y = F.grid_sample(ag.ones(1, 1, 2, 2), grid, align_corners=False)
    np.testing.assert_array_equal(y.numpy(), [[[[float("nan"), 1.0]]]])


# -- affine_grid ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_maps_each_pixel_centre_by_theta(align_corners):
    rng = np.random.default_rng(6)
    theta = rng.standard_normal((2, 2, 3))
    got = F.affine_grid(ag.tensor(theta), (2, 5, 3, 4), align_corners).numpy()
    for n, i, j in np.ndindex(2, 3, 4):
        if align_corners:
            x, y = -1 + 2 * j / 3, -1 + 2 * i / 2
        else:
            x, y = (2 * j + 1) / 4 - 1, (2 * i + 1) / 3 - 1
        np.testing.assert_allclose(got[n, i, j], theta[n] @ [x, y, 1.0], atol=1e-12)
    theta3 = rng.standard_normal((1, 3, 4))
    got3 = F.affine_grid(ag.tensor(theta3), (1, 1, 2, 3, 2), align_corners).numpy()
    z, y, x = 1, 2, 0
    point = [(2 * x + 1) / 2 - 1, (2 * y + 1) / 3 - 1, (2 * z + 1) / 2 - 1, 1.0]
    if align_corners:
        point = [-1.0, 1.0, 1.0, 1.0]
    np.testing.assert_allclose(got3[0, z, y, x], theta3[0] @ point, atol=1e-12)


def test_affine_grid_of_a_unit_size_puts_its_point_in_the_middle():
    with pytest.warns(UserWarning, match="unit-size grids"):
        got = F.affine_grid(ag.tensor([[[1.0, 0, 0], [0, 1, 0]]]), (1, 1, 1, 3), True)
    np.testing.assert_array_equal(got.numpy(), [[[[-1.0, 0.0], [0.0, 0.0], [1.0, 0.0]]]])


def test_affine_grid_then_grid_sample_gradients_in_theta_pass_gradcheck():
    x = ag.tensor(np.random.default_rng(7).standard_normal((1, 1, 4, 4)))
    theta = ag.tensor([[[0.83, 0.11, 0.07], [-0.13, 0.91, 0.05]]], dtype=ag.float64, requires_grad=True)
    assert gradcheck(lambda t: F.affine_grid(t, (1, 1, 3, 3), False), [theta], **TOL)
    assert gradcheck(lambda t: F.grid_sample(x, F.affine_grid(t, (1, 1, 3, 3), False), align_corners=False), [theta],
                     **TOL)


def test_identity_theta_resamples_an_image_to_itself():
    x = ag.tensor(np.random.default_rng(8).standard_normal((2, 3, 4, 5)))
    theta = ag.tensor(np.tile(np.eye(2, 3), (2, 1, 1)))
    for align_corners in (False, True):
        grid = F.affine_grid(theta, (2, 3, 4, 5), align_corners)
        np.testing.assert_allclose(F.grid_sample(x, grid, align_corners=align_corners).numpy(), x.numpy(), atol=1e-12)


# -- warnings and errors ------------------------------------------------------------------------------------------
def test_leaving_align_corners_out_warns_as_torch_and_means_false():
    x, grid = ag.randn(1, 1, 3, 3), ag.rand(1, 2, 2, 2)
    with pytest.warns(UserWarning, match=r"^Default grid_sample and affine_grid behavior has changed to "
                                         r"align_corners=False since 1\.3\.0\."):
        y = F.grid_sample(x, grid)
    np.testing.assert_array_equal(y.numpy(), F.grid_sample(x, grid, align_corners=False).numpy())
    with pytest.warns(UserWarning, match="^Default grid_sample"):
        F.affine_grid(ag.randn(1, 2, 3), (1, 1, 2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.grid_sample(x, grid, align_corners=True)


G = ag.rand(2, 6, 7, 2)
GRID_SAMPLE_ERRORS = [
    ((2, 3, 4, 5), G, {"mode": "area"}, ValueError,
     "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'area'"),
    ((2, 3, 4, 5), G, {"padding_mode": "circular"}, ValueError,
     "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: "
     "'circular'"),
    ((2, 3, 4, 5), G[:1], {}, RuntimeError, "grid_sampler(): expected grid and input to have same batch size, but "
     "got input with sizes [2, 3, 4, 5] and grid with sizes [1, 6, 7, 2]"),
    ((2, 3, 4, 5), G[..., :1], {}, RuntimeError, "grid_sampler(): expected grid to have size 2 in last dimension, "
     "but got grid with sizes [2, 6, 7, 1]"),
    ((2, 3, 0, 5), G, {}, RuntimeError, "grid_sampler(): expected input to have non-empty spatial dimensions, but "
     "input has sizes [2, 3, 0, 5] with dimension 2 being empty"),
    ((2, 3, 4, 5), G.reshape(2, 6, 7, 1, 2), {}, RuntimeError, "grid_sampler(): expected 4D input and grid with same "
     "number of dimensions, but got input with sizes [2, 3, 4, 5] and grid with sizes [2, 6, 7, 1, 2]"),
    ((2, 3, 4, 5, 6, 7), ag.rand(2, 4, 2, 2, 2, 4), {}, RuntimeError, "grid_sampler(): expected 5D input and grid "
     "with same number of dimensions, but got input with sizes [2, 3, 4, 5, 6, 7] and grid with sizes [2, 4, 2, 2, 2, "
     "4]"),
    ((2, 3, 4, 5, 1), ag.rand(2, 1, 2, 3, 3), {"mode": "bicubic"}, RuntimeError,
     "grid_sampler(): bicubic interpolation only supports 4D input"),
    ((2, 3, 4, 5), G.double(), {}, RuntimeError, "expected scalar type Float but found Double"),
]


@pytest.mark.parametrize("shape, grid, kwargs, error, message", GRID_SAMPLE_ERRORS)
def test_grid_sample_errors_match_torch(shape, grid, kwargs, error, message):
    _raises(lambda: F.grid_sample(ag.zeros(*shape), grid, align_corners=False, **kwargs), error, message)


def test_grid_sample_refuses_integer_inputs_as_torch():
    _raises(lambda: F.grid_sample(ag.zeros(2, 3, 4, 5, dtype=ag.int32), G.int(), align_corners=False),
            NotImplementedError, "\"grid_sampler_2d_cpu_kernel_impl\" not implemented for 'Int'")
    _raises(lambda: F.grid_sample(ag.zeros(1, 1, 2, 2, 2, dtype=ag.int32), ag.zeros(1, 1, 1, 1, 3),
                                  align_corners=False), NotImplementedError,
            "\"grid_sampler3d_cpu\" not implemented for 'Int'")


@pytest.mark.parametrize("theta, size, error, message", [
    (ag.zeros(2, 2, 3, dtype=ag.int32), (2, 3, 4, 5), ValueError,
     "Expected theta to have floating point type, but got actorgrad.int32"),
    (ag.zeros(2, 2, 3), (2, 3, 4), NotImplementedError, "affine_grid only supports 4D and 5D sizes, for 2D and 3D "
     "affine transforms, respectively. Got size (2, 3, 4)."),
    (ag.zeros(2, 3, 4), (2, 3, 4, 5), ValueError, "Expected a batch of 2D affine matrices of shape Nx2x3 for size "
     "(2, 3, 4, 5). Got actorgrad.Size([2, 3, 4])."),
    (ag.zeros(2, 2, 3), (2, 3, 0, 5), ValueError, "Expected non-zero, positive output size. Got (2, 3, 0, 5)"),
    (ag.zeros(2, 2, 3), (3, 3, 4, 5), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [3, 3] but got: [2, 3]."),
])
def test_affine_grid_errors_match_torch(theta, size, error, message):
    _raises(lambda: F.affine_grid(theta, size, align_corners=False), error, message)


@pytest.mark.gpu
def test_grid_sampling_on_cuda_gives_the_cpu_numbers_and_gradients(cupy):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 4, 5))
    grid = rng.uniform(-1.5, 1.5, (2, 3, 2, 2))
    theta = rng.standard_normal((2, 2, 3))
    cases = [lambda a, g, t, mode=mode, padding=padding: F.grid_sample(a, g, mode, padding, False)
             for mode, padding in (("bilinear", "zeros"), ("nearest", "border"), ("bicubic", "reflection"))]
    cases.append(lambda a, g, t: F.grid_sample(a, F.affine_grid(t, (2, 3, 3, 2), True), align_corners=True))
    for fn in cases:
        results = []
        for device in ("cpu", "cuda"):
            leaves = [ag.tensor(v, device=device, requires_grad=True) for v in (x, grid, theta)]
            y = fn(*leaves)
            (y * y).sum().backward()
            assert y.device is ag.device(device)
            results.append([y.detach().cpu().numpy()] + [
                np.zeros(v.shape) if v.grad is None else v.grad.cpu().numpy() for v in leaves])
        for got, expected in zip(*results):
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
