"""interpolate's antialiased taps (bilinear and bicubic with antialias=True on 4-D input): when shrinking, each
output pixel averages every source pixel under its filter stretched by the scale, not only the 2 or 4 nearest, so
that fine detail is low-pass filtered instead of aliased. Follows PyTorch's CPU kernel (_compute_index_ranges_weights):
the filter is centred on the output pixel's source position, and its weights are normalised to sum to 1.
"""

from __future__ import annotations

import numpy as np

from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.resampling import _check_sizes, _resample_dim, _scale
from actorgrad.tensor import Tensor

_CUBIC_A = -0.5  # PyTorch's antialiased bicubic uses Keys' a = -0.5 (Pillow's), not the -0.75 of plain bicubic


def _triangle(x: np.ndarray) -> np.ndarray:
    return np.maximum(1 - np.abs(x), 0)


def _cubic(x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    a = _CUBIC_A
    inner = ((a + 2) * x - (a + 3)) * x * x + 1
    outer = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, inner, np.where(x < 2, outer, 0))


def _check_dtype(input: Tensor) -> None:
    """Only float32/float64 resample with antialiasing here (PyTorch also takes uint8, rounding its results)."""
    dtype = input.dtype
    if dtype == np.uint8:
        raise NotImplementedError("interpolate(): antialias=True on a uint8 input is not supported by actorgrad; "
                                  "convert it to a floating dtype first")
    if dtype not in (np.float32, np.float64):
        name = SCALAR_NAMES.get(dtype, dtype)
        raise NotImplementedError(f"\"compute_index_ranges_weights\" not implemented for '{name}'")


def _taps(mode: str, opmath: type, in_size: int, out_size: int, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Source indices and weights (taps, out_size) of one dim; `step` is source pixels per output pixel. Outputs
    with fewer taps than the widest get index 0 at weight 0."""
    width, kernel = (1.0, _triangle) if mode == "bilinear" else (2.0, _cubic)
    step = opmath(step)
    support = opmath(width) * step if step >= 1 else opmath(width)
    invscale = opmath(1) / step if step >= 1 else opmath(1)
    center = step * (np.arange(out_size, dtype=opmath) + opmath(0.5))
    # PyTorch truncates these bounds toward zero (a C cast), before clamping them to the input
    first = np.maximum(np.trunc(center - support + opmath(0.5)).astype(np.int64), 0)
    count = np.minimum(np.trunc(center + support + opmath(0.5)).astype(np.int64), in_size) - first
    offsets = np.arange(max(int(count.max()), 1))[:, None]
    indices = first[None] + offsets
    weights = kernel((indices - center[None] + opmath(0.5)) * invscale).astype(opmath)
    weights = np.where(offsets < count[None], weights, opmath(0))
    total = weights.sum(0)
    weights = weights / np.where(total == 0, opmath(1), total)
    return np.where(offsets < count[None], indices, 0), weights


def antialiased(input: Tensor, mode: str, sizes: list[int], scales: list, align_corners: bool) -> Tensor:
    """interpolate(input, sizes, mode=mode, antialias=True), separable like the other modes: dim by dim, from the
    last, the taps gathered and weighted."""
    _check_sizes(input, sizes)
    _check_dtype(input)
    opmath = input.dtype.type
    out = input
    for d in reversed(range(len(sizes))):
        if input.shape[2 + d] == sizes[d]:  # PyTorch's kernel leaves a dim of unchanged size alone, whatever its scale
            continue
        step = _scale(opmath, input.shape[2 + d], sizes[d], scales[d], align_corners)
        out = _resample_dim(out, 2 + d, *_taps(mode, opmath, input.shape[2 + d], sizes[d], step))
    return input.clone() if out is input else out
