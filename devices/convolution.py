"""Raw kernels of a 2-d convolution and its two adjoints, as im2col + batched BLAS matmul, in the array module
`xp` each takes (numpy, or CuPy on a GPU).

1-d convolutions run here too, with a unit height. The three kernels are the bilinear maps that a convolution's
gradients need (forward, its adjoint in the input, its adjoint in the weight); each one's gradients are again
made of these three, so a recorded backward differentiates to any order. Windows are strided views
(`as_strided`), so the only Python loop is the one over the kernel's offsets in col2im.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class ConvGeometry(NamedTuple):
    """Stride and dilation per spatial dim (height, width), padding as (before, after) per dim, and groups."""

    stride: tuple[int, int]
    padding: tuple[tuple[int, int], tuple[int, int]]
    dilation: tuple[int, int]
    groups: int


def _planar(x: np.ndarray) -> np.ndarray:
    """A 1-d signal (N, C, L) as a unit-height image (N, C, 1, L); images pass through."""
    return x[:, :, None, :] if x.ndim == 3 else x


def output_size(size: int, kernel: int, stride: int, padding: tuple[int, int], dilation: int) -> int:
    return (size + padding[0] + padding[1] - dilation * (kernel - 1) - 1) // stride + 1


def _columns(xp: Any, x: np.ndarray, kernel: tuple[int, int], out: tuple[int, int], geo: ConvGeometry) -> np.ndarray:
    """im2col: (G, Cg*kh*kw, N*OH*OW), the input patch under each output pixel in one column; one matrix per
    group, so each kernel is one BLAS call per group (numpy's stacked matmul over many small matrices was
    slow and erratic with OpenBLAS's threads)."""
    (pt, pb), (pl, pr) = geo.padding
    n, c, h, w = x.shape
    if pt or pb or pl or pr:
        padded = xp.zeros((n, c, h + pt + pb, w + pl + pr), x.dtype)
        padded[:, :, pt:pt + h, pl:pl + w] = x
        x = padded
    s0, s1, s2, s3 = x.strides
    (sh, sw), (dh, dw) = geo.stride, geo.dilation
    windows = xp.lib.stride_tricks.as_strided(x, (c, *kernel, n, *out), (s1, s2 * dh, s3 * dw, s0, s2 * sh, s3 * sw))
    g = geo.groups
    return windows.reshape(g, (c // g) * kernel[0] * kernel[1], n * out[0] * out[1])


def _by_channel(g: np.ndarray, groups: int) -> np.ndarray:
    """An (N, O, OH, OW) gradient as (G, Og, N*OH*OW) matrices (free when it is laid out channel-major)."""
    n, o = g.shape[:2]
    return g.swapaxes(0, 1).reshape(groups, o // groups, -1)


def convolution(xp: Any, x: np.ndarray, weight: np.ndarray, geo: ConvGeometry) -> np.ndarray:
    """y[n, o] = sum over c, i, j of x[n, c, (padded) at stride * p + dilation * (i, j)] * weight[o, c, i, j].
    The result is a channel-major view (N, O, ...) of an (O, N, ...) array, as the matmul leaves it."""
    x2, w2 = _planar(x), _planar(weight)
    o, _, kh, kw = w2.shape
    out = tuple(output_size(x2.shape[2 + d], w2.shape[2 + d], geo.stride[d], geo.padding[d], geo.dilation[d])
                for d in (0, 1))
    g = geo.groups
    y = w2.reshape(g, o // g, -1) @ _columns(xp, x2, (kh, kw), out, geo)  # (G, Og, N*OH*OW)
    return y.reshape(o, x.shape[0], *(out[1:] if x.ndim == 3 else out)).swapaxes(0, 1)


def convolution_input_grad(
    xp: Any, g: np.ndarray, weight: np.ndarray, input_shape: tuple[int, ...], geo: ConvGeometry
) -> np.ndarray:
    """The adjoint of `convolution` in its input (a transposed convolution): col2im of weight^T @ g."""
    g2, w2 = _planar(g), _planar(weight)
    o, cg, kh, kw = w2.shape
    n, _, oh, ow = g2.shape
    groups = geo.groups
    h, w = (1, input_shape[2]) if len(input_shape) == 3 else input_shape[2:]
    c = cg * groups
    cols = w2.reshape(groups, o // groups, -1).swapaxes(1, 2) @ _by_channel(g2, groups)
    cols = cols.reshape(c, kh, kw, n, oh, ow)
    (pt, pb), (pl, pr) = geo.padding
    (sh, sw), (dh, dw) = geo.stride, geo.dilation
    padded = xp.zeros((c, n, h + pt + pb, w + pl + pr), np.result_type(g.dtype, weight.dtype))
    for i in range(kh):
        for j in range(kw):
            padded[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw] += cols[:, i, j]
    return padded[:, :, pt:pt + h, pl:pl + w].swapaxes(0, 1).reshape(input_shape)


def convolution_weight_grad(
    xp: Any, x: np.ndarray, g: np.ndarray, weight_shape: tuple[int, ...], geo: ConvGeometry
) -> np.ndarray:
    """The adjoint of `convolution` in its weight: g @ im2col(x)^T, the batch summed by the matmul."""
    x2, g2 = _planar(x), _planar(g)
    oh, ow = g2.shape[2:]
    kernel = (1, weight_shape[2]) if len(weight_shape) == 3 else weight_shape[2:]
    cols = _columns(xp, x2, kernel, (oh, ow), geo)
    return (_by_channel(g2, geo.groups) @ cols.swapaxes(1, 2)).reshape(weight_shape)


def macs(output: Any, weight_shape: tuple[int, ...]) -> int:
    """Multiply-adds of one of the three kernels: each output element takes Cg*kh*kw of them."""
    return output.size * int(np.prod(weight_shape[1:]))
