"""max_pool2d and avg_pool2d.

max_pool2d sends each window's gradient to one input element, the first maximum in the window (as PyTorch picks
on ties), through the flat indices it computes in the forward: a scatter-add whose own gradient is a gather at the
same indices, both in the `ops` interface. avg_pool2d is a depthwise convolution with a ones kernel divided by the
window's count, so its gradient is the convolution's input adjoint.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices.convolution import ConvGeometry
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import input_size
from actorgrad.tensor import Tensor

__all__ = ["max_pool2d"]  # avg_pool2d lives in nn.functional only, as in PyTorch


def _unpool(ops: Any, g: Any, index: Any, self_shape: tuple, padding_won: Any) -> Any:
    """Each window's gradient to the element that won it; none from a window that only padding won."""
    flat = ops.reshape(g, index.shape)
    if padding_won is not None:
        flat = ops.where(padding_won, 0.0, flat)
    return ops.reshape(ops.scatter_add_last(flat, index, self_shape[-2] * self_shape[-1]), self_shape)


MAX_POOL = Rule(
    "MaxPool2DWithIndicesBackward0", (("index", "self_shape", "padding_won"), _unpool), cost=input_size
)
GATHER = Rule(
    "GatherBackward0", (("index", "size"), lambda ops, g, index, size: ops.scatter_add_last(g, index, size))
)
SCATTER_ADD = Rule("ScatterAddBackward0", (("index",), lambda ops, g, index: ops.gather_last(g, index)))


def _pair(value: Any, name: str) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) == 1:
        pair = pair * 2
    if len(pair) != 2:
        raise RuntimeError(f"{name} must either be a single int, or a tuple of two ints")
    return pair  # type: ignore[return-value]


def _pool_size(size: int, kernel: int, stride: int, pad: int, dilation: int, ceil_mode: bool) -> int:
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad:  # the last window must start inside the input
        out -= 1
    return out


def _geometry(op: str, x: np.ndarray, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: bool) -> tuple:
    if x.ndim not in (3, 4):
        raise RuntimeError(f"{op}: Expected 3D or 4D (batch mode) tensor for input, got shape {list(x.shape)}")
    kernel = _pair(kernel_size, "kernel_size")
    stride2 = kernel if stride is None or stride == [] else _pair(stride, "stride")
    pad, dil = _pair(padding, "padding"), _pair(dilation, "dilation")
    for what, pair in (("kernel size", kernel), ("stride", stride2), ("dilation", dil)):
        if min(pair) <= 0:  # numpy would divide by zero or index backwards
            raise RuntimeError(f"{op}: {what} should be greater than zero, but got {pair[0]} x {pair[1]}")
    if min(pad) < 0:
        raise RuntimeError(f"{op}: pad must be non-negative, but got pad: {min(pad)}")
    for p, k, d in zip(pad, kernel, dil):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    out = tuple(_pool_size(x.shape[-2 + i], kernel[i], stride2[i], pad[i], dil[i], ceil_mode) for i in (0, 1))
    if min(out) <= 0:
        raise RuntimeError(f"{op}: Given input size: {tuple(x.shape[-3:])}. Calculated output size: "
                           f"({x.shape[-3]}x{out[0]}x{out[1]}). Output size is too small")
    return kernel, stride2, pad, dil, out


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    x = input._data
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow) = _geometry(
        "max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode)
    *lead, h, w = x.shape
    reach_h, reach_w = (oh - 1) * sh + dh * (kh - 1) + 1, (ow - 1) * sw + dw * (kw - 1) + 1
    xp = input._device.xp
    if ph or pw or reach_h > h or reach_w > w:  # pad with -inf so padding never wins a window
        padded = xp.full((*lead, max(reach_h, h + ph), max(reach_w, w + pw)), -np.inf, x.dtype)
        padded[..., ph:ph + h, pw:pw + w] = x
    else:
        padded = x
    # A running max over the kernel's offsets (strided views, no window copies). A window's index moves to offset
    # k where the value beats the max so far (`>`: the first maximum stays); as k only grows, that is a maximum of
    # indices. (np.copyto with where= took 8x longer here.) A NaN wins its window, the last one, as in PyTorch.
    step = (sh * padded.strides[-2], sw * padded.strides[-1])
    kind = np.min_scalar_type(kh * kw)
    views = [xp.lib.stride_tricks.as_strided(padded[..., i * dh:, j * dw:], (*lead, oh, ow),
                                             (*padded.strides[:-2], *step)) for i in range(kh) for j in range(kw)]
    data, local = views[0].copy(), xp.zeros((*lead, oh, ow), kind)
    for k, view in enumerate(views[1:], 1):
        better = view > data
        np.maximum(data, view, out=data)
        np.maximum(local, better.view(np.uint8) * kind.type(k), out=local)
    if np.isnan(data).any():
        for k, view in enumerate(views):
            np.copyto(local, k, where=np.isnan(view))
    offsets = xp.asarray([(k // kw) * dh * w + (k % kw) * dw for k in range(kh * kw)])
    corners = (xp.arange(oh)[:, None] * sh - ph) * w + xp.arange(ow) * sw - pw
    index = (corners + offsets[local]).reshape(*lead, oh * ow)
    padding_won = None
    if padded is not x:  # a window over padding alone (all -inf) is won by a padded position: it sends nothing
        rows = xp.arange(oh)[:, None] * sh - ph + xp.asarray([(k // kw) * dh for k in range(kh * kw)])[local]
        cols = xp.arange(ow) * sw - pw + xp.asarray([(k % kw) * dw for k in range(kh * kw)])[local]
        outside = ((rows < 0) | (rows >= h) | (cols < 0) | (cols >= w)).reshape(*lead, oh * ow)
        if outside.any():
            padding_won = outside
            index = xp.where(outside, 0, index)
    out = record(MAX_POOL, data, (input,), index=index, self_shape=x.shape, padding_won=padding_won)
    return (out, Tensor(index.reshape(data.shape), device=input._device)) if return_indices else out


AVG_POOL = Rule(
    "AvgPool2DBackward0",
    (("divisor", "kernel", "planes_shape", "self_shape", "geometry"),
     lambda ops, g, divisor, kernel, planes_shape, self_shape, geo: ops.reshape(
         ops.convolution_input_grad(ops.reshape(g / divisor, (planes_shape[0], 1, *g.shape[-2:])), kernel,
                                    planes_shape, geo), self_shape)),
    cost=input_size,
)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """A window's divisor counts its places inside the padded input (count_include_pad) or inside the input;
    with ceil_mode, the last windows may run past the padding, and those places never count, as in PyTorch."""
    x = input._data
    kernel, stride2, pad, _, (oh, ow) = _geometry("avg_pool2d", x, kernel_size, stride, padding, 1, ceil_mode)
    sizes = zip((oh, ow), stride2, kernel, x.shape[-2:], pad)
    extra = [max(0, (o - 1) * s + k - (n + 2 * p)) for o, s, k, n, p in sizes]
    geo = ConvGeometry(stride2, ((pad[0], pad[0] + extra[0]), (pad[1], pad[1] + extra[1])), (1, 1), 1)
    planes_shape = (math.prod(x.shape[:-2]), 1, *x.shape[-2:])
    ops = input._device.ops
    ones = ops.xp.ones((1, 1, *kernel), x.dtype)
    sums = ops.convolution(x.reshape(planes_shape), ones, geo).reshape(*x.shape[:-2], oh, ow)
    if divisor_override is not None:
        divisor: Any = divisor_override
    elif count_include_pad and any(extra):
        padded_ones = ops.xp.ones((1, 1, x.shape[-2] + 2 * pad[0], x.shape[-1] + 2 * pad[1]), x.dtype)
        divisor = ops.convolution(padded_ones, ones, geo._replace(padding=((0, extra[0]), (0, extra[1]))))[0, 0]
    elif count_include_pad or not any(pad) and not any(extra):
        divisor = kernel[0] * kernel[1]
    else:
        divisor = ops.convolution(ops.xp.ones((1, 1, *x.shape[-2:]), x.dtype), ones, geo)[0, 0]
    return record(AVG_POOL, sums / divisor, (input,), divisor=divisor, kernel=Tensor(ones, device=input._device),
                  planes_shape=planes_shape, self_shape=x.shape, geometry=geo)


# -- the gather / scatter-add pair behind max_pool2d's gradients, recorded for TensorOps ------------------------
def recorded_gather_last(x: Tensor, index: np.ndarray) -> Tensor:
    return record(GATHER, x._device.ops.gather_last(x._data, index), (x,), index=index, size=x.shape[-1])


def recorded_scatter_add_last(g: Tensor, index: np.ndarray, size: int) -> Tensor:
    return record(SCATTER_ADD, g._device.ops.scatter_add_last(g._data, index, size), (g,), index=index)


METHODS: dict[str, Any] = {}
