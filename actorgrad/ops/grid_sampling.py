"""Spatial transformers: affine_grid (a sampling grid from affine matrices) and grid_sample (the input read at a
grid's points: bilinear or trilinear, nearest, bicubic; zeros, border or reflection padding).

Both are composites of differentiable ops, so their gradients in the input, the grid and theta (and gradients of
those, for `create_graph`) come from the ops they are made of. grid_sample follows PyTorch's CPU kernels: a grid
point is unnormalized to a source position, which the padding clips or reflects (bicubic pads each tap's index
instead), and each output is the weighted sum of its taps, gathered for the whole batch in one `gather`. The tap
indices are integers worked out from the positions' values; the weights are Tensors of the positions, so the grid's
gradient flows through them. A tap outside the input weighs 0, as PyTorch's zeros padding reads it.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.joining import stack
from actorgrad.ops.linalg import matmul
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.selection import where
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

__all__: list[str] = []

ALIGN_CORNERS_DEFAULT = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please specify "
    "align_corners=True if the old behavior is desired. See the documentation of grid_sample for details."
)
UNIT_SIZE_GRID = (
    "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when align_corners=True. This is not "
    "an intended use case of affine_grid. See the documentation of affine_grid for details."
)
_CUBIC_A = -0.75  # PyTorch's bicubic convolution parameter, as interpolate's


# -- affine_grid ----------------------------------------------------------------------------------------------
def _steps(n: int, align_corners: bool) -> np.ndarray:
    """linspace_from_neg_one: n points over [-1, 1], pulled in to the pixel centres without align_corners."""
    if n <= 1:
        return np.zeros(n)
    points = np.linspace(-1.0, 1.0, n)
    return points if align_corners else points * ((n - 1) / n)


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The (N, H, W, 2) or (N, D, H, W, 3) grid of the points theta maps the output's normalized pixel centres
    (or corners, with align_corners) to: grid_sample's second argument."""
    if align_corners is not None and align_corners.__class__ is not bool:
        raise not_bool("affine_grid_generator", "align_corners", align_corners, 3)
    if align_corners is None:
        warn(ALIGN_CORNERS_DEFAULT)
        align_corners = False
    if theta.dtype.kind != "f":
        raise ValueError(f"Expected theta to have floating point type, but got actorgrad.{theta.dtype}")
    size = tuple(size)
    if len(size) not in (4, 5):
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    dims = len(size) - 2
    if theta.ndim != 3 or theta.shape[-2:] != (dims, dims + 1):
        raise ValueError(f"Expected a batch of {dims}D affine matrices of shape Nx{dims}x{dims + 1} for size {size}. "
                         f"Got actorgrad.Size({list(theta.shape)}).")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warn(UNIT_SIZE_GRID)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{size[0]}, {dims + 1}] "
                           f"but got: [{theta.shape[0]}, {dims + 1}].")
    # The base grid's last dim holds (x, y[, z], 1): x runs along the last spatial dim.
    axes = np.meshgrid(*(_steps(n, align_corners) for n in spatial), indexing="ij")
    base = np.stack([*axes[::-1], np.ones(spatial)], -1).reshape(-1, dims + 1).astype(theta.dtype)
    points = matmul(Tensor(theta._device.asarray(base), device=theta._device), theta.mT)
    return points.reshape(size[0], *spatial, dims)


# -- grid_sample: checks --------------------------------------------------------------------------------------
def _check(input: Tensor, grid: Tensor, mode: str, padding_mode: str) -> None:
    """F.grid_sample's checks of its options, then grid_sampler's of the shapes and dtypes, in PyTorch's order."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    sizes = f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
    if input.shape[:1] != grid.shape[:1]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got {sizes}")
    if grid.shape[-1:] != (input.ndim - 2,):
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    for dim in range(2, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError("grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {dim} being empty")
    rank = 4 if input.ndim == 4 else 5
    if input.ndim != rank or grid.ndim != rank:
        raise RuntimeError(f"grid_sampler(): expected {rank}D input and grid with same number of dimensions, but got "
                           f"{sizes}")
    if mode == "bicubic" and rank != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype.kind != "f":
        kernel = "grid_sampler_2d_cpu_kernel_impl" if rank == 4 else "grid_sampler3d_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{SCALAR_NAMES.get(input.dtype, input.dtype)}'")
    if grid.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {SCALAR_NAMES[input.dtype]} but found {SCALAR_NAMES[grid.dtype]}")


# -- grid_sample: positions and taps --------------------------------------------------------------------------
def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """[-1, 1] to a source position: -1 and 1 are the corner pixels' centres with align_corners, their outer
    edges without."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(x: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """x mirrored into [twice_low / 2, twice_high / 2] as often as it takes (reflect_coordinates)."""
    if twice_low == twice_high:
        return x * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = (x - low).abs()
    extra = distance.fmod(span)
    flips = (distance.detach() / span).floor()
    return where(flips.fmod(2) == 0, extra + low, span - extra + low)


def _padded(x: Tensor, size: int, padding_mode: str, align_corners: bool, volumetric: bool) -> Tensor:
    """compute_coordinates: a position as the padding moves it (zeros leaves it; taps outside then read 0)."""
    if padding_mode == "zeros":
        return x
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
    # PyTorch's clip passes no gradient at the limits themselves (clamp's would), where an identity affine_grid
    # with align_corners puts the corner points. A NaN position clips to 0 in its 2-d kernel, to the last pixel in
    # its 3-d one (min(size - 1, max(x, 0)) there keeps the NaN to the last comparison).
    clipped = x.detach().nan_to_num(size - 1.0 if volumetric else 0.0).clamp(0, size - 1)
    return where((x > 0) & (x < size - 1), x, clipped)


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """The four taps' weights of the cubic convolution at offset t in [0, 1) from the second tap."""
    a = _CUBIC_A

    def near(x: Tensor) -> Tensor:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Tensor) -> Tensor:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _floor(x: Tensor) -> Any:
    """x's floor as an integer array (a NaN or infinite position as a place far outside every input)."""
    xp = x._device.xp
    values = x._data
    finite = xp.isfinite(values)
    return xp.floor(xp.clip(xp.where(finite, values, -8), -8, 2.0**40)).astype(np.int64)


def _taps(position: Tensor, size: int, mode: str, padding_mode: str, align_corners: bool, volumetric: bool) -> list:
    """One dim's taps: (index array, weight Tensor) pairs whose weighted sum is the value along that dim."""
    if mode == "bilinear":
        position = _padded(position, size, padding_mode, align_corners, volumetric)
        low = _floor(position)
        high_weight = position - Tensor(low.astype(position.dtype), device=position._device)
        return [(low, 1 - high_weight), (low + 1, high_weight)]
    if mode == "nearest":
        position = _padded(position, size, padding_mode, align_corners, volumetric)
        rounded = position.round()
        # weight 1, with round's zero gradient: the grid gets a gradient of zeros, as PyTorch gives it
        return [(_floor(rounded), rounded - rounded.detach() + 1)]
    low = _floor(position)
    t = position - position.floor()  # not from the clipped `low`: a far position's offset stays in [0, 1)
    taps = []
    for offset, weight in zip(range(-1, 3), _cubic_weights(t)):
        index = Tensor((low + offset).astype(position.dtype), device=position._device)
        index = _floor(_padded(index, size, padding_mode, align_corners, volumetric).trunc())
        taps.append((index, weight))
    return taps


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """The input (N, C, [D,] H, W) read at the grid's (N, [D_out,] H_out, W_out, 2 or 3) points, normalized to
    [-1, 1] (x along W first): the output (N, C, [D_out,] H_out, W_out)."""
    if align_corners is not None and align_corners.__class__ is not bool:
        raise not_bool("grid_sampler", "align_corners", align_corners, 5)
    if autocast_state.get() is not None:
        return autocast_call(grid_sample, "grid_sample", input, grid, mode, padding_mode, align_corners)
    _check(input, grid, mode, padding_mode)
    if align_corners is None:
        warn(ALIGN_CORNERS_DEFAULT)
        align_corners = False
    n, c, *sizes = input.shape
    out = grid.shape[1:-1]
    dims = len(sizes)
    xp = input._device.xp
    per_dim = [_taps(_unnormalize(grid[..., dims - 1 - d], size, align_corners), size, mode, padding_mode,
                     align_corners, dims == 3) for d, size in enumerate(sizes)]
    indices, weights, raw_weights = [], [], []
    for taps in itertools.product(*per_dim):
        flat = xp.zeros((n, *out), np.int64)
        inside = xp.ones((n, *out), bool)
        for (index, _), size in zip(taps, sizes):
            inside &= (index >= 0) & (index < size)
            flat = flat * size + xp.clip(index, 0, size - 1)
        weight = math.prod(w for _, w in taps)
        raw_weights.append(weight)
        indices.append(flat)
        weights.append(where(Tensor(inside, device=input._device), weight, 0.0))
    places = len(indices) * math.prod(out)
    index = Tensor(xp.stack(indices, 1).reshape(n, 1, places), device=input._device)
    picked = input.reshape(n, c, math.prod(sizes)).gather(2, index.expand(n, c, places))
    picked = picked.reshape(n, c, len(indices), *out)
    result = (picked * stack(weights, 1).unsqueeze(1)).sum(2)
    if padding_mode == "zeros" and mode != "nearest" and dims == 2:
        # PyTorch's 2-d kernel reads a tap outside as 0 times its weight: a NaN or infinite grid point gives NaN,
        # not 0 (its 3-d one skips such taps). The weights times 0 carry that NaN, and no gradient, to the output.
        result = result + (stack(raw_weights, 1) * 0).sum(1).unsqueeze(1)
    return result
