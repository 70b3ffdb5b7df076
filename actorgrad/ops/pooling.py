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
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import input_size
from actorgrad.tensor import Tensor

__all__ = ["max_pool2d"]  # avg_pool2d lives in nn.functional only, as in PyTorch


def _unpool(ops: Any, g: Any, index: Any, self_shape: tuple, slots: int) -> Any:
    """Each window's gradient to the element its index names. A window over padding alone can name one past the
    plane (PyTorch writes there out of bounds): that gradient lands in an extra slot, dropped."""
    size = self_shape[-2] * self_shape[-1]
    flat = ops.scatter_add_last(ops.reshape(g, index.shape), index, slots)
    if slots > size:
        flat = ops.index(flat, (slice(None),) * (index.ndim - 1) + (slice(0, size),), None)
    return ops.reshape(flat, self_shape)


MAX_POOL = Rule(
    "MaxPool2DWithIndicesBackward0", (("index", "self_shape", "slots"), _unpool), cost=input_size
)
GATHER = Rule(
    "GatherBackward0", (("index", "size"), lambda ops, g, index, size: ops.scatter_add_last(g, index, size))
)
SCATTER_ADD = Rule("ScatterAddBackward0", (("index",), lambda ops, g, index: ops.gather_last(g, index)))


def _pair(op: str, value: Any, name: str, counts: str = "either be a single int") -> tuple[int, int]:
    """An int or one or two ints as (height, width), with the pooling ops' error for another count."""
    pair = (value,) if isinstance(value, int) else tuple(value)
    if len(pair) not in (1, 2):
        raise RuntimeError(f"{op}: {name} must {counts}, or a tuple of two ints")
    return (pair[0], pair[-1])


def _pool_size(size: int, kernel: int, stride: int, pad: int, dilation: int, ceil_mode: bool) -> int:
    """PyTorch's output size of one dim, with its checks on the stride and padding of that dim."""
    if stride == 0:
        raise RuntimeError("stride should not be zero")
    if pad < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {pad}")
    effective = (kernel - 1) * dilation + 1
    if pad > int(effective / 2):  # C++'s division, toward zero
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pad}, "
                           f"kernel_size={kernel} and dilation={dilation}")
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:  # the last window must start inside the input
        out -= 1
    return out


def _geometry(op: str, x: np.ndarray, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: bool, divisor_override: int | None = None) -> tuple:
    """The checked kernel, stride, padding, dilation and output size as (height, width) pairs, in the order
    PyTorch checks them (the count of each, the input's rank, each dim's stride and padding, then the rest)."""
    kernel = _pair(op, kernel_size, "kernel_size")
    omitted = stride is None or not isinstance(stride, int) and len(stride) == 0
    stride2 = kernel if omitted else _pair(op, stride, "stride", "either be omitted, a single int")
    pad = _pair(op, padding, "padding")
    dil = _pair(op, dilation, "dilation", "be either a single int")
    if divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if op == "max_pool2d" and x.ndim not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    if x.ndim < 3:  # avg_pool2d reads the channel count first
        raise IndexError("Dimension specified as -3 but tensor has no dimensions" if x.ndim == 0 else
                         f"Dimension out of range (expected to be in range of [{-x.ndim}, {x.ndim - 1}], but got -3)")
    out = tuple(_pool_size(x.shape[-2 + i], kernel[i], stride2[i], pad[i], dil[i], ceil_mode) for i in (0, 1))
    for what, pair, names in (("kernel size", kernel, "kH kW"), ("stride", stride2, "dH dW"),
                              ("dilation", dil, "dilationH dilationW")):
        if min(pair) <= 0:
            h, w = names.split()
            raise RuntimeError(f"{what} should be greater than zero, but got {h}: {pair[0]} {w}: {pair[1]}")
    if x.ndim not in (3, 4) or 0 in x.shape[-3:]:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                           f"got:{list(x.shape)}")
    if pad[0] > kernel[0] // 2 or pad[1] > kernel[1] // 2:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padW = {pad[1]}, "
                           f"padH = {pad[0]}, kW = {kernel[1]}, kH = {kernel[0]}")
    if min(out) <= 0:
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[-3:]))}). Calculated output size: "
                           f"({x.shape[-3]}x{out[0]}x{out[1]}). Output size is too small")
    if x.dtype == np.bool_ or op == "avg_pool2d" and x.dtype.kind in "iu" and x.dtype != np.int64:
        raise NotImplementedError(f"\"{op}\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
    return kernel, stride2, pad, dil, out


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    x = input._data
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow) = _geometry(
        "max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode)
    *lead, h, w = x.shape
    reach_h, reach_w = (oh - 1) * sh + dh * (kh - 1) + 1, (ow - 1) * sw + dw * (kw - 1) + 1
    xp = input._device.xp
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    if ph or pw or reach_h > h or reach_w > w:  # pad with -inf so padding never wins a window
        padded = xp.full((*lead, max(reach_h, h + ph), max(reach_w, w + pw)), lowest, x.dtype)
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
    # Whether a NaN came is a host sync on a GPU, which queues the NaN pass for every float input instead.
    if x.dtype.kind == "f" and (xp is not np or np.isnan(data).any()):
        for k, view in enumerate(views):
            np.copyto(local, k, where=np.isnan(view))
    offsets = xp.asarray([(k // kw) * dh * w + (k % kw) * dw for k in range(kh * kw)])
    corners = (xp.arange(oh)[:, None] * sh - ph) * w + xp.arange(ow) * sw - pw
    index = corners + offsets[local]
    if padded is not x:
        # PyTorch starts a window's index at its first place inside the input (which, past the right edge, names
        # the next row, or past the bottom, no element) and moves it only for a greater value, so a window that
        # holds nothing but -inf and padding keeps that start.
        # Worked out on the host from the geometry alone: whether one is past the plane costs a GPU no sync.
        rows, cols = np.arange(oh) * sh - ph, np.arange(ow) * sw - pw
        first = np.where(rows < 0, rows % dh, rows)[:, None] * w + np.where(cols < 0, cols % dw, cols)
        index = xp.where(data == lowest, xp.asarray(first), index)
    # An index past the plane (a window's start past the input, so padding alone) scatters to one more slot.
    past = padded is not x and bool((first >= h * w).any())
    saved = (xp.minimum(index, h * w) if past else index).reshape(*lead, oh * ow)
    out = record(MAX_POOL, data, (input,), index=saved, self_shape=x.shape, slots=h * w + past)
    return (out, Tensor(index, device=input._device)) if return_indices else out


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
    kernel, stride2, pad, _, (oh, ow) = _geometry(
        "avg_pool2d", x, kernel_size, stride, padding, 1, ceil_mode, divisor_override)
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
    means = sums / divisor
    if x.dtype.kind == "i":  # PyTorch divides int64 sums in C++, toward zero
        means = means.astype(x.dtype)
    return record(AVG_POOL, means, (input,), divisor=divisor, kernel=Tensor(ones, device=input._device),
                  planes_shape=planes_shape, self_shape=x.shape, geometry=geo)


# -- the gather / scatter-add pair behind max_pool2d's gradients, recorded for TensorOps ------------------------
def recorded_gather_last(x: Tensor, index: np.ndarray) -> Tensor:
    return record(GATHER, x._device.ops.gather_last(x._data, index), (x,), index=index, size=x.shape[-1])


def recorded_scatter_add_last(g: Tensor, index: np.ndarray, size: int) -> Tensor:
    return record(SCATTER_ADD, g._device.ops.scatter_add_last(g._data, index, size), (g,), index=index)


METHODS: dict[str, Any] = {}
