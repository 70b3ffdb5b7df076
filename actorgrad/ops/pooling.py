"""max_pool2d and avg_pool2d, their 1-d forms (the 2-d ops on a unit height), and the adaptive poolings.

max_pool2d sends each window's gradient to one input element, the first maximum in the window (as PyTorch picks
on ties), through the flat indices it computes in the forward: a scatter-add whose own gradient is a gather at the
same indices, both in the `ops` interface. avg_pool2d is a depthwise convolution with a ones kernel divided by the
window's count, so its gradient is the convolution's input adjoint.

An adaptive pooling's bin i covers [floor(i * n / out), ceil((i + 1) * n / out)) of each dim, as PyTorch's. Its
mean is an averaging matrix on each side of the plane (matmuls, so differentiable to any order); its max is a
gather at each bin's first maximum (the last NaN, if any), whose gradient is the scatter-add max_pool2d uses.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices.convolution import ConvGeometry
from actorgrad.ops.linalg import matmul
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import input_size
from actorgrad.ops.shape import squeeze, unsqueeze
from actorgrad.tensor import Tensor

# avg_pool2d and the 2-d adaptive poolings live in nn.functional only, as in PyTorch; torch.adaptive_max_pool1d
# always returns the indices too, so nn.functional's form is not exported at the top level
__all__ = ["max_pool2d", "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d"]


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


# -- 1-d pooling: the 2-d ops over a unit height --------------------------------------------------------------------
def _single(op: str, value: Any, name: str, message: str) -> int:
    """An int or a one-int list, else PyTorch's error for `op`'s argument `name`."""
    values = [value] if isinstance(value, int) else list(value)
    if len(values) != 1:
        raise RuntimeError(message.format(op=op, name=name, got=len(values)))
    return values[0]


_ONE_INT = "{op}() argument '{name}' should contain one int (got {got})"


def _check_1d_rank(op: str, x: Any) -> None:
    if x.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument #1 'self' "
                           f"(while checking arguments for {op})")


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """max_pool2d over a unit height, with max_pool1d's own checks first (PyTorch's kernel for inputs without
    gradients, whose messages users see)."""
    x = input._data
    if x.ndim not in (2, 3) or 0 in x.shape[-2:]:
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(x.shape)}")
    size = "{op}() {name} must be an int, list of ints{comma} or tuple of ints of size 1 but got size {got}"
    k = _single("max_pool1d", kernel_size, "kernel_size", size.replace("{comma}", ""))
    omitted = stride is None or not isinstance(stride, int) and len(stride) == 0
    s = k if omitted else _single("max_pool1d", stride, "stride", size.replace("an int, list of ints{comma}",
                                                                               "None, an int, list of ints,"))
    p = _single("max_pool1d", padding, "padding", size.replace("{comma}", ","))
    d = _single("max_pool1d", dilation, "dilation", size.replace("{comma}", ""))
    for name, value, least in (("kernel_size", k, 1), ("stride", s, 1), ("padding", p, 0)):
        if value < least:
            rule = "be non-negative" if least == 0 else "be greater than zero"
            raise RuntimeError(f"max_pool1d() {name} must {rule}, but got {value}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and "
                           f"kernel_size={k}")
    if d < 1:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    out = _pool_size(x.shape[-1], k, s, p, d, ceil_mode)
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"max_pool1d_impl\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
    pooled = max_pool2d(unsqueeze(input, -2), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    if return_indices:
        return squeeze(pooled[0], -2), squeeze(pooled[1], -2)
    return squeeze(pooled, -2)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """avg_pool2d over a unit height."""
    k = _single("avg_pool1d", kernel_size, "kernel_size", _ONE_INT)
    omitted = stride is None or not isinstance(stride, int) and len(stride) == 0
    s = k if omitted else _single("avg_pool1d", stride, "stride", _ONE_INT)
    p = _single("avg_pool1d", padding, "padding", _ONE_INT)
    _check_1d_rank("avg_pool1d", input._data)
    return squeeze(avg_pool2d(unsqueeze(input, -2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad), -2)


# -- adaptive pooling -------------------------------------------------------------------------------------------------
def _adaptive_sizes(op: str, x: Any, output_size: Any, count_error: str) -> tuple[int, int]:
    """The output's (height, width): an int for both, or a pair whose None keeps the input's size; checked, with
    the input, in PyTorch's order."""
    sizes = [output_size] * 2 if isinstance(output_size, int) else list(output_size)
    if len(sizes) != 2:
        raise RuntimeError(count_error)
    if x.ndim not in (3, 4):
        raise RuntimeError(f"{op}(): Expected 3D or 4D tensor, but got{':' if 'max' in op else ''} {list(x.shape)}")
    sizes = [x.shape[-2 + i] if n is None else n for i, n in enumerate(sizes)]
    if min(sizes) < 0:
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{sizes[0]}, {sizes[1]}}}")
    for dim in (x.ndim - 2, x.ndim - 1):
        if x.shape[dim] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                               f"sizes {list(x.shape)} with dimension {dim} being empty")
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"{op}\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
    return sizes[0], sizes[1]


def _bins(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """Each output place's [start, end) along a dim of `size`, as PyTorch computes them."""
    i = np.arange(out)
    return i * size // out, -(-(i + 1) * size // out)


def _averaging(size: int, out: int, input: Tensor) -> Tensor:
    """The (out, size) matrix whose row i averages bin i."""
    starts, ends = _bins(size, out)
    places = np.arange(size)
    inside = (places >= starts[:, None]) & (places < ends[:, None])
    matrix = (inside / (ends - starts)[:, None]).astype(input._data.dtype)
    return Tensor(input._device.xp.asarray(matrix), device=input._device)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    x = input._data
    oh, ow = _adaptive_sizes("adaptive_avg_pool2d", x, output_size, "adaptive_avg_pool2d: output_size must be 2")
    h, w = x.shape[-2:]
    return matmul(matmul(_averaging(h, oh, input), input), _averaging(w, ow, input).mT)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    x = input._data
    oh, ow = _adaptive_sizes("adaptive_max_pool2d", x, output_size,
                             "adaptive_max_pool2d(): internal error: output_size.size() must be 2")
    *lead, h, w = x.shape
    xp = input._device.xp
    # Each bin's rows and columns, padded to the longest bin by repeating its last one: a repeat comes after the
    # place it repeats, so the first maximum in row-major order is still a real place.
    (top, bottom), (left, right) = _bins(h, oh), _bins(w, ow)
    kh, kw = int(max(bottom - top, default=1)), int(max(right - left, default=1))
    rows = xp.asarray(np.minimum(top[:, None] + np.arange(kh), bottom[:, None] - 1))
    cols = xp.asarray(np.minimum(left[:, None] + np.arange(kw), right[:, None] - 1))
    windows = x[..., rows[:, None, :, None], cols[None, :, None, :]].reshape(*lead, oh, ow, kh * kw)
    local = windows.argmax(-1) if windows.size else xp.zeros((*lead, oh, ow), np.int64)
    nan = xp.isnan(windows)
    if windows.size:  # PyTorch's kernel moves to each NaN it meets, so the last one wins
        local = xp.where(nan.any(-1), kh * kw - 1 - nan[..., ::-1].argmax(-1), local)
    index = rows[xp.arange(oh)[:, None], local // kw] * w + cols[xp.arange(ow), local % kw]
    flat = recorded_gather_last(input.reshape(*lead, h * w), index.reshape(*lead, oh * ow))
    out = flat.reshape(*lead, oh, ow)
    return (out, Tensor(index.astype(np.int64), device=input._device)) if return_indices else out


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    n = _single("adaptive_avg_pool1d", output_size, "output_size", _ONE_INT)
    _check_1d_rank("adaptive_avg_pool1d", input._data)
    return squeeze(adaptive_avg_pool2d(unsqueeze(input, -2), (1, n)), -2)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    n = _single("adaptive_max_pool1d", output_size, "output_size", _ONE_INT)
    _check_1d_rank("adaptive_max_pool1d", input._data)
    out, index = adaptive_max_pool2d(unsqueeze(input, -2), (1, n), return_indices=True)
    return (squeeze(out, -2), squeeze(index, -2)) if return_indices else squeeze(out, -2)


# -- the gather / scatter-add pair behind max_pool2d's gradients, recorded for TensorOps ------------------------
def recorded_gather_last(x: Tensor, index: np.ndarray) -> Tensor:
    return record(GATHER, x._device.ops.gather_last(x._data, index), (x,), index=index, size=x.shape[-1])


def recorded_scatter_add_last(g: Tensor, index: np.ndarray, size: int) -> Tensor:
    return record(SCATTER_ADD, g._device.ops.scatter_add_last(g._data, index, size), (g,), index=index)


METHODS: dict[str, Any] = {}
