"""Raw kernels of an n-d convolution and its two adjoints, as im2col + batched BLAS matmul, in the array module
`xp` each takes (numpy, or CuPy on a GPU).

A geometry names as many spatial dims as the convolution has, except a 1-d one, which runs as 2-d with a unit
height (PyTorch's kernels do the same, and its messages show it). The three kernels are the bilinear maps that a
convolution's gradients need (forward, its adjoint in the input, its adjoint in the weight); each one's gradients
are again made of these three, so a recorded backward differentiates to any order. Windows are strided views
(`as_strided`), so the only Python loop is the one over the kernel's offsets in col2im.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, NamedTuple

import numpy as np


class ConvGeometry(NamedTuple):
    """Stride and dilation per spatial dim (depth, height, width; the last ones), padding as (before, after) per
    dim, and groups."""

    stride: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    dilation: tuple[int, ...]
    groups: int


def _lifted(x: np.ndarray, dims: int) -> np.ndarray:
    """An array with fewer spatial dims than its geometry (a 1-d signal (N, C, L) of a 2-d one) given unit dims
    in front of them, as a view; others pass through."""
    missing = dims - (x.ndim - 2)
    return x[(slice(None), slice(None), *(None,) * missing)] if missing else x


def output_size(size: int, kernel: int, stride: int, padding: tuple[int, int], dilation: int) -> int:
    return (size + padding[0] + padding[1] - dilation * (kernel - 1) - 1) // stride + 1


def _columns(xp: Any, x: np.ndarray, kernel: tuple[int, ...], out: tuple[int, ...], geo: ConvGeometry) -> np.ndarray:
    """im2col: (G, Cg*prod(kernel), N*prod(out)), the input patch under each output place in one column; one
    matrix per group, so each kernel is one BLAS call per group (numpy's stacked matmul over many small matrices
    was slow and erratic with OpenBLAS's threads)."""
    n, c, *sizes = x.shape
    if any(p for pair in geo.padding for p in pair):
        padded = xp.zeros((n, c, *(m + before + after for m, (before, after) in zip(sizes, geo.padding))), x.dtype)
        padded[(..., *(slice(before, before + m) for m, (before, _) in zip(sizes, geo.padding)))] = x
        x = padded
    s0, s1, *spatial = x.strides
    steps = (*(s * d for s, d in zip(spatial, geo.dilation)), s0, *(s * t for s, t in zip(spatial, geo.stride)))
    windows = xp.lib.stride_tricks.as_strided(x, (c, *kernel, n, *out), (s1, *steps))
    g = geo.groups
    return windows.reshape(g, (c // g) * math.prod(kernel), n * math.prod(out))


def _by_channel(g: np.ndarray, groups: int) -> np.ndarray:
    """An (N, O, ...) gradient as (G, Og, N*prod(...)) matrices (free when it is laid out channel-major)."""
    n, o = g.shape[:2]
    return g.swapaxes(0, 1).reshape(groups, o // groups, -1)


def convolution(xp: Any, x: np.ndarray, weight: np.ndarray, geo: ConvGeometry) -> np.ndarray:
    """y[n, o] = sum over c and the kernel's offsets k of x[n, c, (padded) at stride * p + dilation * k] *
    weight[o, c, k]. The result is a channel-major view (N, O, ...) of an (O, N, ...) array, as the matmul leaves
    it."""
    dims = len(geo.stride)
    x2, w2 = _lifted(x, dims), _lifted(weight, dims)
    o, _, *kernel = w2.shape
    out = tuple(output_size(*sizes) for sizes in zip(x2.shape[2:], kernel, geo.stride, geo.padding, geo.dilation))
    g = geo.groups
    y = w2.reshape(g, o // g, -1) @ _columns(xp, x2, kernel, out, geo)  # (G, Og, N*prod(out))
    return y.reshape(o, x.shape[0], *out[x2.ndim - x.ndim:]).swapaxes(0, 1)


def convolution_input_grad(
    xp: Any, g: np.ndarray, weight: np.ndarray, input_shape: tuple[int, ...], geo: ConvGeometry
) -> np.ndarray:
    """The adjoint of `convolution` in its input (a transposed convolution): col2im of weight^T @ g."""
    dims = len(geo.stride)
    g2, w2 = _lifted(g, dims), _lifted(weight, dims)
    o, cg, *kernel = w2.shape
    n, _, *out = g2.shape
    groups = geo.groups
    sizes = (*(1,) * (dims + 2 - len(input_shape)), *input_shape[2:])
    c = cg * groups
    cols = w2.reshape(groups, o // groups, -1).swapaxes(1, 2) @ _by_channel(g2, groups)
    cols = cols.reshape(c, *kernel, n, *out)
    padded = xp.zeros((c, n, *(m + before + after for m, (before, after) in zip(sizes, geo.padding))),
                      np.result_type(g.dtype, weight.dtype))
    reach = [(s * (m - 1) + 1, s, d) for s, m, d in zip(geo.stride, out, geo.dilation)]
    for offset in itertools.product(*map(range, kernel)):
        window = tuple(slice(i * d, i * d + span, s) for i, (span, s, d) in zip(offset, reach))
        padded[(slice(None), slice(None), *window)] += cols[(slice(None), *offset)]
    inside = tuple(slice(before, before + m) for m, (before, _) in zip(sizes, geo.padding))
    return padded[(slice(None), slice(None), *inside)].swapaxes(0, 1).reshape(input_shape)


def convolution_weight_grad(
    xp: Any, x: np.ndarray, g: np.ndarray, weight_shape: tuple[int, ...], geo: ConvGeometry
) -> np.ndarray:
    """The adjoint of `convolution` in its weight: g @ im2col(x)^T, the batch summed by the matmul."""
    dims = len(geo.stride)
    x2, g2 = _lifted(x, dims), _lifted(g, dims)
    kernel = (*(1,) * (dims + 2 - len(weight_shape)), *weight_shape[2:])
    cols = _columns(xp, x2, kernel, g2.shape[2:], geo)
    return (_by_channel(g2, geo.groups) @ cols.swapaxes(1, 2)).reshape(weight_shape)


def macs(output: Any, weight_shape: tuple[int, ...]) -> int:
    """Multiply-adds of one of the three kernels: each output element takes Cg*prod(kernel) of them."""
    return output.size * int(np.prod(weight_shape[1:]))
