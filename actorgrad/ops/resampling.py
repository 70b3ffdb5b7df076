"""Resampling: interpolate (nearest, nearest-exact, linear, bilinear, trilinear, bicubic, area; and its deprecated
names upsample, upsample_nearest, upsample_bilinear), pixel_shuffle and pixel_unshuffle.

All are composites of differentiable ops, so their gradients (and gradients of those, for `create_graph`) come
from the ops they are made of. interpolate is separable: along each resized dim, from the last, it gathers the
source taps with one `index_select` and sums them with precomputed weights; the indices and weights follow
PyTorch's CPU kernels (their float precision, their shortcuts) so that the same source pixels are picked.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.operands import SCALAR_NAMES, type_name
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

__all__ = ["interpolate", "pixel_shuffle", "pixel_unshuffle"]

_LINEAR_MODES = {"linear": 3, "bilinear": 4, "trilinear": 5}
_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) bicubic convolution parameter


# -- interpolate ----------------------------------------------------------------------------------------------
def _output_plan(input: Tensor, size: Any, scale_factor: Any, recompute_scale_factor: bool | None,
                 ) -> tuple[list[int], list[float | None]]:
    """F.interpolate's checks of size and scale_factor, in its order; the output size and the scale per dim that
    the kernels see (None where the size alone sets it)."""
    dims = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dims:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got input with spatial "
                    f"dimensions of {list(input.shape[2:])} and output size of {size}. Please provide input tensor "
                    "in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format."
                )
            if not all(isinstance(n, (int, np.integer)) for n in size):
                raise TypeError(
                    "expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, int], but "
                    f"got size with types {[type(n) for n in size]}"
                )
            sizes = [int(n) for n in size]
        else:
            sizes = [int(size)] * dims
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return sizes, [None] * dims
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != dims:
            raise ValueError(
                "Input and scale_factor must have the same number of spatial dimensions, but got input with "
                f"spatial dimensions of {list(input.shape[2:])} and scale_factor of shape {scale_factor}. Please "
                "provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
            )
        scales = [float(s) for s in scale_factor]
    else:
        scales = [float(scale_factor)] * dims
    sizes = [math.trunc(n * s) for n, s in zip(input.shape[2:], scales)]
    # Recomputing makes the kernels derive the scale from the sizes alone.
    return sizes, [None] * dims if recompute_scale_factor else scales


def _check_sizes(input: Tensor, sizes: list[int]) -> None:
    """The kernels' checks: positive sizes, then a non-empty sample."""
    names = "DHW"[3 - len(sizes):]
    shown = [", ".join(f"{n}: {v}" for n, v in zip(names, values)) for values in (input.shape[2:], sizes)]
    if min(*input.shape[2:], *sizes) <= 0:
        link = " and" if len(sizes) == 1 else ""
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({shown[0]}){link} "
                           f"output ({shown[1]})")
    if 0 in input.shape[1:]:
        raise RuntimeError(f"Non-empty {input.ndim}D data tensor expected but got a tensor with sizes "
                           f"{list(input.shape)}")


def _scale(opmath: type, in_size: int, out_size: int, scale: float | None, align_corners: bool) -> Any:
    """area_pixel_compute_scale: source step per output step, in the kernel's compute precision."""
    if align_corners:
        return opmath((in_size - 1) / (out_size - 1)) if out_size > 1 else opmath(0)
    if scale is not None and scale > 0:
        return opmath(1.0 / scale)
    return opmath(in_size) / opmath(out_size)


def _floorf(values: np.ndarray) -> np.ndarray:
    """C's floorf, which the kernels apply to a source position whatever its precision."""
    return np.floor(values.astype(np.float32)).astype(np.int64)


def _taps(mode: str, opmath: type, in_size: int, out_size: int, scale: float | None, align_corners: bool,
          vectorized: bool) -> tuple[np.ndarray, np.ndarray | None] | None:
    """The source indices (taps, out_size) and weights (taps, out_size) of one dim, None where it is copied.
    In PyTorch's `vectorized` 2-d kernel the nearest modes (nearest_idx, nearest_exact_idx) compute in float32,
    and nearest copies or halves where the output is the same size or twice it."""
    dst = np.arange(out_size)
    last = in_size - 1
    if mode == "nearest" and vectorized:
        if out_size == in_size:
            return None
        if out_size == 2 * in_size:
            return (dst >> 1)[None], None
        step = _scale(np.float32, in_size, out_size, scale, False)
        return np.minimum(_floorf(dst.astype(np.float32) * step), last)[None], None
    if mode == "nearest-exact" and vectorized:
        step = _scale(np.float32, in_size, out_size, scale, False)
        return np.minimum(_floorf((dst + 0.5) * np.float64(step)), last)[None], None
    step = _scale(opmath, in_size, out_size, scale, align_corners and mode not in ("nearest", "nearest-exact"))
    if mode == "nearest":
        return np.minimum(_floorf(step * dst.astype(opmath)), last)[None], None
    source = step * (dst.astype(opmath) + opmath(0.5)) - opmath(0.5)
    if mode == "nearest-exact":
        return np.minimum(_floorf(np.maximum(source, opmath(0)) + opmath(0.5)), last)[None], None
    if mode == "bicubic":
        source = step * dst.astype(opmath) if align_corners else source
        first = np.minimum(_floorf(source), last)
        t = np.clip(source - first.astype(opmath), 0, 1)
        a = opmath(_CUBIC_A)
        near = [t, 1 - t]
        far = [t + 1, 2 - t]
        inner = [((a + 2) * x - (a + 3)) * x * x + 1 for x in near]
        outer = [((a * x - 5 * a) * x + 8 * a) * x - 4 * a for x in far]
        weights = np.stack([outer[0], inner[0], inner[1], outer[1]])
        indices = np.clip(first[None] + np.arange(-1, 3)[:, None], 0, last)
        return indices, weights
    if out_size == in_size:  # compute_source_index_and_lambda copies
        return None
    source = step * dst.astype(opmath) if align_corners else np.maximum(source, opmath(0))
    first = np.minimum(_floorf(source), last)
    far = np.clip(source - first.astype(opmath), 0, 1)
    return np.stack([first, first + (first < last)]), np.stack([1 - far, far])


def _check_dtype(input: Tensor, mode: str, vectorized: bool) -> None:
    """Floating inputs resample in every mode, uint8 ones only in the nearest modes; the others fail in the
    kernel PyTorch would pick, named as it names it."""
    dtype = input.dtype
    nearest = mode in ("nearest", "nearest-exact")
    if dtype.kind == "f" or nearest and dtype == np.uint8:
        return
    if dtype == np.uint8 and input.ndim == 4:
        raise NotImplementedError(f"interpolate(): mode={mode!r} on a uint8 input is not supported by actorgrad; "
                                  "convert it to a floating dtype first")
    kernel = "nearest" if nearest else "cubic" if mode == "bicubic" else "linear"
    if vectorized and mode != "bicubic":
        name = f"upsample_{'nearest' if nearest else 'bilinear'}2d_channels_last"
    else:
        name = f"compute_indices_weights_{kernel}"
    raise NotImplementedError(f'"{name}" not implemented for \'{SCALAR_NAMES.get(dtype, dtype)}\'')


def _resample_dim(x: Tensor, dim: int, indices: np.ndarray, weights: np.ndarray | None) -> Tensor:
    """x resampled along `dim`: the taps gathered in one index_select, then summed with their weights."""
    taps, out_size = indices.shape
    picked = x.index_select(dim, indices.reshape(-1))
    if weights is None:
        return picked
    shape = x.shape[:dim] + (taps, out_size) + x.shape[dim + 1:]
    weights = weights.astype(x.dtype).reshape((taps, out_size) + (1,) * (x.ndim - dim - 1))
    w = Tensor(x._device.asarray(weights), device=x._device)
    return (picked.reshape(shape) * w).sum(dim)


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    if align_corners is not None and align_corners.__class__ is not bool:
        raise not_bool("interpolate", "align_corners", align_corners)
    if autocast_state.get() is not None:
        return autocast_call(
            interpolate, "interpolate", input, size, scale_factor, mode, align_corners, recompute_scale_factor,
            antialias
        )
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear "
                             "| bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    sizes, scales = _output_plan(input, size, scale_factor, recompute_scale_factor)
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if mode == "area" and input.ndim in (3, 4, 5) and not antialias:  # PyTorch's area is the adaptive average pool
        from actorgrad.ops import adaptive_pooling  # it needs shape ops, whose family exports this module's names

        pools = (adaptive_pooling.adaptive_avg_pool1d, adaptive_pooling.adaptive_avg_pool2d,
                 adaptive_pooling.adaptive_avg_pool3d)
        return pools[input.ndim - 3](input, sizes)
    if mode == "lanczos":
        raise NotImplementedError("interpolate(): mode='lanczos' is not supported by actorgrad; use 'nearest', "
                                  "'nearest-exact', the linear modes, 'bicubic' or 'area'")
    if antialias:
        from actorgrad.ops.antialias import antialiased  # it resamples with this module's helpers

        return antialiased(input, mode, sizes, scales, bool(align_corners))
    if mode in _LINEAR_MODES and input.ndim in (3, 4, 5) and input.ndim != _LINEAR_MODES[mode]:
        wanted = _LINEAR_MODES[mode]
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {wanted}D input")
    if input.ndim not in (3, 4, 5) or mode not in ("nearest", "nearest-exact", "bicubic", *_LINEAR_MODES) or (
            mode == "bicubic" and input.ndim != 4):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: {_MODES} (got {mode})")
    _check_sizes(input, sizes)
    # PyTorch's 2-d kernels take a vectorized path for a small output (height + width <= 128) or a channels-last
    # input of more than 3 channels (for a contiguous one: a 1x1 image); its nearest modes differ (see _taps).
    vectorized = input.ndim == 4 and (sum(sizes) <= 128 or input.shape[1] > 3 and input.shape[2] * input.shape[3] == 1)
    _check_dtype(input, mode, vectorized)
    opmath = np.float64 if input.dtype == np.float64 else np.float32
    out = input
    for d in reversed(range(len(sizes))):
        taps = _taps(mode, opmath, input.shape[2 + d], sizes[d], scales[d], bool(align_corners), vectorized)
        if taps is not None:
            out = _resample_dim(out, 2 + d, *taps)
    return out if out is not input else input.clone()


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """interpolate's deprecated name, with PyTorch's warning; upsample_nearest and upsample_bilinear (corners
    aligned) fix the mode."""
    warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)

# -- pixel_shuffle, pixel_unshuffle -------------------------------------------------------------------------
def _check_factor(op: str, input: Tensor, factor: int, name: str) -> int:
    """The factor as an int (anything with __index__ but a bool, as PyTorch's int arguments take)."""
    if isinstance(factor, bool) or not hasattr(type(factor), "__index__"):
        raise TypeError(f"{op}(): argument '{name}' (position 2) must be int, not {type_name(factor)}")
    factor = operator.index(factor)
    if input.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input with {input.ndim} "
                           "dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {factor}")
    return factor


def _fresh(out: Tensor) -> Tensor:
    """The shuffle's result in memory of its own: the reshape returns a view of the input where it can (a factor
    of 1, size-1 dims), but PyTorch's kernels always write a new tensor, which in-place ops then change alone."""
    return out.clone() if out._base is not None else out


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r): each channel block of r*r becomes an r-by-r patch."""
    r = _check_factor("pixel_shuffle", input, upscale_factor, "upscale_factor")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    b = len(batch)
    blocks = input.reshape(*batch, c // (r * r), r, r, h, w)
    order = (*range(b), b, b + 3, b + 1, b + 4, b + 2)
    return _fresh(blocks.permute(*order).reshape(*batch, c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), pixel_shuffle's inverse."""
    r = _check_factor("pixel_unshuffle", input, downscale_factor, "downscale_factor")
    *batch, c, h, w = input.shape
    for name, n, dim in (("height", h, -2), ("width", w, -1)):
        if n % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({dim})={n} is not divisible by {r}")
    b = len(batch)
    blocks = input.reshape(*batch, c, h // r, r, w // r, r)
    order = (*range(b), b, b + 2, b + 4, b + 1, b + 3)
    return _fresh(blocks.permute(*order).reshape(*batch, c * r * r, h // r, w // r))
