"""max_pool2d/3d and avg_pool2d/3d and their 1-d forms (the 2-d ops on a unit height); the adaptive poolings are
adaptive_pooling's.

The 2-d and 3-d ops check their arguments as PyTorch's own kernels do (in a different order, with different
messages), then share one n-d computation. Max pooling sends each window's gradient to one input element, the
first maximum in the window (as PyTorch picks on ties), through the flat indices (into each plane or volume) it
computes in the forward: a scatter-add whose own gradient is a gather at the same indices, both in the `ops`
interface. Average pooling is a depthwise convolution with a ones kernel divided by the window's count, so its
gradient is the convolution's input adjoint. The backward nodes, which take the input as PyTorch's do, are
pool_gradients'.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from actorgrad.devices.convolution import ConvGeometry
from actorgrad.ops.conv import int_argument, integer_value
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.operands import SCALAR_NAMES, type_name
from actorgrad.ops.pool_gradients import (
    gather_maxima,
    input_dependent,
    scatter_to_maxima,
    spread_means,
    window_means,
)
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import input_size
from actorgrad.ops.shape import squeeze, unsqueeze
from actorgrad.tensor import Tensor

# avg_pool2d/3d live in nn.functional only, as in PyTorch
__all__ = ["max_pool2d", "max_pool3d", "max_pool1d", "avg_pool1d"]


_MAX_SAVES = ("index", "self_shape", "slots")
MAX_POOL_2D = input_dependent("MaxPool2DWithIndices", _MAX_SAVES, scatter_to_maxima, gather_maxima, input_size)
MAX_POOL_3D = input_dependent("MaxPool3DWithIndices", _MAX_SAVES, scatter_to_maxima, gather_maxima, input_size)
GATHER = Rule(
    "GatherBackward0", (("index", "size"), lambda ops, g, index, size: ops.scatter_add_last(g, index, size))
)
SCATTER_ADD = Rule("ScatterAddBackward0", (("index",), lambda ops, g, index: ops.gather_last(g, index)))


# Where PyTorch's max poolings take each argument (its avg poolings' errors name none)
_POSITIONS = {"kernel_size": 2, "stride": 3, "padding": 4, "dilation": 5}


def _spatial(op: str, value: Any, name: str, dims: int, counts: str = "either be a single int") -> tuple[int, ...]:
    """An int or one or `dims` ints as one per spatial dim, with the pooling ops' error for another count."""
    parsed = int_argument(op, value, name, _POSITIONS[name] if op.startswith("max") else None)
    values = (parsed,) if isinstance(parsed, int) else tuple(parsed)
    if len(values) not in (1, dims):
        raise RuntimeError(f"{op}: {name} must {counts}, or a tuple of {('two', 'three')[dims - 2]} ints")
    return values * dims if len(values) == 1 else values


def _stride_omitted(stride: Any) -> bool:
    return stride is None or isinstance(stride, tuple | list) and len(stride) == 0


def _divisor(op: str, divisor_override: Any) -> int | None:
    """avg_pool2d/3d's optional divisor: an integer (numpy's too) as an int, else PyTorch's TypeError."""
    if divisor_override is None:
        return None
    value = integer_value(divisor_override)
    if value is None:
        raise TypeError(f"{op}(): argument 'divisor_override' must be int, not {type_name(divisor_override)}")
    return value


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
    kernel = _spatial(op, kernel_size, "kernel_size", 2)
    omitted = _stride_omitted(stride)
    stride2 = kernel if omitted else _spatial(op, stride, "stride", 2, "either be omitted, a single int")
    pad = _spatial(op, padding, "padding", 2)
    dil = _spatial(op, dilation, "dilation", 2, "be either a single int")
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
    if x.dtype.kind != "f" and (x.dtype.kind in "bc" or op == "avg_pool2d" and x.dtype != np.int64):
        raise NotImplementedError(f"\"{op}\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
    return kernel, stride2, pad, dil, out


def _geometry3d(op: str, x: np.ndarray, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                ceil_mode: bool, divisor_override: int | None = None) -> tuple:
    """max_pool3d's and avg_pool3d's checks, in PyTorch's order: the counts, the input's rank, each dim's output
    size, then its pool3d_shape_check (avg_pool3d also wants the input at least as large as the kernel)."""
    either = "either " if op == "max_pool3d" else ""
    kernel = _spatial(op, kernel_size, "kernel_size", 3, f"{either}be a single int")
    omitted = _stride_omitted(stride)
    stride3 = kernel if omitted else _spatial(op, stride, "stride", 3, f"{either}be omitted, a single int")
    pad = _spatial(op, padding, "padding", 3, f"{either}be a single int")
    dil = _spatial(op, dilation, "dilation", 3, "be either a single int")
    if x.ndim not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    if divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    sizes = x.shape[-3:]
    out = tuple(_pool_size(n, k, s, p, d, ceil_mode) for n, k, s, p, d in zip(sizes, kernel, stride3, pad, dil))
    for what, values, names in (("kernel size", kernel, "kT kH kW"), ("stride", stride3, "dT dH dW"),
                                ("dilation", dil, "dilationT dilationH dilationW")):
        if min(values) <= 0:
            named = " ".join(f"{name}: {v}" for name, v in zip(names.split(), values))
            raise RuntimeError(f"{what} should be greater than zero, but got {named}")
    for dim in range(x.ndim == 5, x.ndim):  # a batch may be empty
        if x.shape[dim] == 0:
            kernel_name = "avg_pool3d()" if op == "avg_pool3d" else "max_pool3d_with_indices_out_cpu_template()"
            raise RuntimeError(f"{kernel_name}: Expected input's non-batch dimensions to have positive length, but "
                               f"input has a shape of {list(x.shape)} and non-batch dimension 0 has length zero!")
    if op == "avg_pool3d" and any(n < k for n, k in zip(sizes, kernel)):
        raise RuntimeError(f"input image (T: {sizes[0]} H: {sizes[1]} W: {sizes[2]}) smaller than kernel size (kT: "
                           f"{kernel[0]} kH: {kernel[1]} kW: {kernel[2]})")
    if any(p > k // 2 for p, k in zip(pad, kernel)):
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got kT: {kernel[0]} kW: "
                           f"{kernel[2]} kH: {kernel[1]} padT: {pad[0]} padW: {pad[2]} padH: {pad[1]}")
    if min(out) <= 0:
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x.shape[-4:]))}). Calculated output size: "
                           f"({x.shape[-4]}x{'x'.join(map(str, out))}). Output size is too small")
    if x.dtype.kind != "f" and (x.dtype.kind in "bc" or op == "avg_pool3d" and x.dtype != np.int64):
        kernel_name = "avg_pool3d_out_frame" if op == "avg_pool3d" else op
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
    return kernel, stride3, pad, dil, out


def _flat(parts: list, sizes: tuple[int, ...]) -> Any:
    """The row-major flat index, into an array of `sizes`, of the places on the grid spanned by each dim's
    positions `parts` (one 1-d array per dim; may be negative or past a dim's end)."""
    flat = parts[0]
    for part, n in zip(parts[1:], sizes[1:]):
        flat = flat[..., None] * n + part
    return flat


def _max_pool(rule: Rule, input: Tensor, kernel: tuple[int, ...], stride: tuple[int, ...], pad: tuple[int, ...],
              dil: tuple[int, ...], out: tuple[int, ...], return_indices: bool) -> Any:
    """Max pooling over the last len(kernel) dims, with checked arguments; indices are flat in each plane or
    volume, as PyTorch's."""
    x = input._data
    dims = len(kernel)
    lead, sizes = x.shape[:-dims], x.shape[-dims:]
    reach = [(o - 1) * s + d * (k - 1) + 1 for o, s, d, k in zip(out, stride, dil, kernel)]
    xp = input._device.xp
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    if any(pad) or any(r > n for r, n in zip(reach, sizes)):  # pad with -inf so padding never wins a window
        padded = xp.full((*lead, *(max(r, n + p) for r, n, p in zip(reach, sizes, pad))), lowest, x.dtype)
        padded[(..., *(slice(p, p + n) for p, n in zip(pad, sizes)))] = x
    else:
        padded = x
    # A running max over the kernel's offsets (strided views, no window copies). A window's index moves to offset
    # k where the value beats the max so far (`>`: the first maximum stays); as k only grows, that is a maximum of
    # indices. (np.copyto with where= took 8x longer here.) A NaN wins its window, the last one, as in PyTorch.
    steps = (*padded.strides[:-dims], *(s * t for s, t in zip(stride, padded.strides[-dims:])))
    offsets = list(itertools.product(*map(range, kernel)))
    kind = np.min_scalar_type(len(offsets))
    views = [xp.lib.stride_tricks.as_strided(padded[(..., *(slice(i * d, None) for i, d in zip(offset, dil)))],
                                             (*lead, *out), steps) for offset in offsets]
    data, local = views[0].copy(), xp.zeros((*lead, *out), kind)
    for k, view in enumerate(views[1:], 1):
        better = view > data
        np.maximum(data, view, out=data)
        np.maximum(local, better.view(np.uint8) * kind.type(k), out=local)
    # Whether a NaN came is a host sync on a GPU, which queues the NaN pass for every float input instead.
    if x.dtype.kind == "f" and (xp is not np or np.isnan(data).any()):
        for k, view in enumerate(views):
            np.copyto(local, k, where=np.isnan(view))
    reaches = xp.asarray(_flat([np.arange(k) * d for k, d in zip(kernel, dil)], sizes).reshape(-1))
    starts = [np.arange(o) * s - p for o, s, p in zip(out, stride, pad)]
    index = xp.asarray(_flat(starts, sizes)) + reaches[local]
    if padded is not x:
        # PyTorch starts a window's index at its first place inside the input (which, past the right edge, names
        # the next row, or past the bottom, no element) and moves it only for a greater value, so a window that
        # holds nothing but -inf and padding keeps that start.
        # Worked out on the host from the geometry alone: whether one is past the plane costs a GPU no sync.
        first = _flat([np.where(a < 0, a % d, a) for a, d in zip(starts, dil)], sizes)
        index = xp.where(data == lowest, xp.asarray(first), index)
    # An index past the plane (a window's start past the input, so padding alone) scatters to one more slot.
    volume = math.prod(sizes)
    past = padded is not x and bool((first >= volume).any())
    saved = (xp.minimum(index, volume) if past else index).reshape(*lead, math.prod(out))
    result = record(rule, data, (input,), index=saved, self_shape=x.shape, slots=volume + past)
    return (result, Tensor(index, device=input._device)) if return_indices else result


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    if ceil_mode.__class__ is not bool:
        raise not_bool("max_pool2d", "ceil_mode", ceil_mode, 6)
    geometry = _geometry("max_pool2d", input._data, kernel_size, stride, padding, dilation, ceil_mode)
    return _max_pool(MAX_POOL_2D, input, *geometry, return_indices)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    if ceil_mode.__class__ is not bool:
        raise not_bool("max_pool3d", "ceil_mode", ceil_mode, 6)
    geometry = _geometry3d("max_pool3d", input._data, kernel_size, stride, padding, dilation, ceil_mode)
    return _max_pool(MAX_POOL_3D, input, *geometry, return_indices)


_AVG_POOL_SAVES = ("divisor", "kernel", "planes_shape", "self_shape", "geometry")
AVG_POOL_2D = input_dependent("AvgPool2D", _AVG_POOL_SAVES, spread_means, window_means, input_size)
AVG_POOL_3D = input_dependent("AvgPool3D", _AVG_POOL_SAVES, spread_means, window_means, input_size)


def _avg_pool(rule: Rule, input: Tensor, kernel: tuple[int, ...], stride: tuple[int, ...], pad: tuple[int, ...],
              out: tuple[int, ...], count_include_pad: bool, divisor_override: int | None) -> Tensor:
    """Average pooling over the last len(kernel) dims, with checked arguments. A window's divisor counts its
    places inside the padded input (count_include_pad) or inside the input; with ceil_mode, the last windows may
    run past the padding, and those places never count, as in PyTorch."""
    x = input._data
    dims = len(kernel)
    sizes = x.shape[-dims:]
    extra = [max(0, (o - 1) * s + k - (n + 2 * p)) for o, s, k, n, p in zip(out, stride, kernel, sizes, pad)]
    geo = ConvGeometry(stride, tuple((p, p + e) for p, e in zip(pad, extra)), (1,) * dims, 1)
    planes_shape = (math.prod(x.shape[:-dims]), 1, *sizes)
    ops = input._device.ops
    ones = ops.xp.ones((1, 1, *kernel), x.dtype)
    work = x.astype(np.float32) if x.dtype == np.float16 else x  # float16 summed in float32, as PyTorch's
    sums = ops.convolution(work.reshape(planes_shape), ones.astype(work.dtype, copy=False), geo)
    sums = sums.reshape(*x.shape[:-dims], *out)
    if divisor_override is not None:
        divisor: Any = divisor_override
    elif count_include_pad and any(extra):
        padded_ones = ops.xp.ones((1, 1, *(n + 2 * p for n, p in zip(sizes, pad))), x.dtype)
        divisor = ops.convolution(padded_ones, ones, geo._replace(padding=tuple((0, e) for e in extra)))[0, 0]
    elif count_include_pad or not any(pad) and not any(extra):
        divisor = math.prod(kernel)
    else:
        divisor = ops.convolution(ops.xp.ones((1, 1, *sizes), x.dtype), ones, geo)[0, 0]
    means = sums / divisor
    if means.dtype != x.dtype:  # float16 rounded once; int64 sums divided as C++ does, toward zero
        means = means.astype(x.dtype)
    return record(rule, means, (input,), divisor=divisor, kernel=Tensor(ones, device=input._device),
                  planes_shape=planes_shape, self_shape=x.shape, geometry=geo)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    if ceil_mode.__class__ is not bool:
        raise not_bool("avg_pool2d", "ceil_mode", ceil_mode)
    if count_include_pad.__class__ is not bool:
        raise not_bool("avg_pool2d", "count_include_pad", count_include_pad)
    divisor = _divisor("avg_pool2d", divisor_override)
    kernel, stride2, pad, _, out = _geometry(
        "avg_pool2d", input._data, kernel_size, stride, padding, 1, ceil_mode, divisor)
    return _avg_pool(AVG_POOL_2D, input, kernel, stride2, pad, out, count_include_pad, divisor)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    if ceil_mode.__class__ is not bool:
        raise not_bool("avg_pool3d", "ceil_mode", ceil_mode)
    if count_include_pad.__class__ is not bool:
        raise not_bool("avg_pool3d", "count_include_pad", count_include_pad)
    divisor = _divisor("avg_pool3d", divisor_override)
    kernel, stride3, pad, _, out = _geometry3d(
        "avg_pool3d", input._data, kernel_size, stride, padding, 1, ceil_mode, divisor)
    if input.dtype == np.float16 and input._device.type != "cuda":  # PyTorch's CUDA kernel has float16, its CPU one not
        raise NotImplementedError("\"avg_pool3d_out_frame\" not implemented for 'Half'")
    return _avg_pool(AVG_POOL_3D, input, kernel, stride3, pad, out, count_include_pad, divisor)


# -- 1-d pooling: the 2-d ops over a unit height --------------------------------------------------------------------
def single_size(op: str, value: Any, name: str, message: str) -> int:
    """An int or a one-int list, else PyTorch's error for `op`'s argument `name`."""
    parsed = int_argument(op, value, name, _POSITIONS.get(name, 2) if op.startswith(("max", "adaptive_max")) else None)
    values = [parsed] if isinstance(parsed, int) else parsed
    if len(values) != 1:
        raise RuntimeError(message.format(op=op, name=name, got=len(values)))
    return values[0]


ONE_INT = "{op}() argument '{name}' should contain one int (got {got})"


def check_1d_rank(op: str, x: Any) -> None:
    if x.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument #1 'self' "
                           f"(while checking arguments for {op})")


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """max_pool2d over a unit height, with max_pool1d's own checks first (PyTorch's kernel for inputs without
    gradients, whose messages users see)."""
    if ceil_mode.__class__ is not bool:
        raise not_bool("max_pool1d", "ceil_mode", ceil_mode, 6)
    x = input._data
    if x.ndim not in (2, 3) or 0 in x.shape[-2:]:
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(x.shape)}")
    size = "{op}() {name} must be an int, list of ints{comma} or tuple of ints of size 1 but got size {got}"
    k = single_size("max_pool1d", kernel_size, "kernel_size", size.replace("{comma}", ""))
    stride_size = size.replace("an int, list of ints{comma}", "None, an int, list of ints,")
    s = k if _stride_omitted(stride) else single_size("max_pool1d", stride, "stride", stride_size)
    p = single_size("max_pool1d", padding, "padding", size.replace("{comma}", ","))
    d = single_size("max_pool1d", dilation, "dilation", size.replace("{comma}", ""))
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


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """max_pool1d's output and indices, whatever return_indices says (PyTorch's name for that form)."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """max_pool2d's output and indices, whatever return_indices says."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """max_pool3d's output and indices, whatever return_indices says."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """avg_pool2d over a unit height."""
    if ceil_mode.__class__ is not bool:
        raise not_bool("avg_pool1d", "ceil_mode", ceil_mode)
    if count_include_pad.__class__ is not bool:
        raise not_bool("avg_pool1d", "count_include_pad", count_include_pad)
    k = single_size("avg_pool1d", kernel_size, "kernel_size", ONE_INT)
    s = k if _stride_omitted(stride) else single_size("avg_pool1d", stride, "stride", ONE_INT)
    p = single_size("avg_pool1d", padding, "padding", ONE_INT)
    check_1d_rank("avg_pool1d", input._data)
    return squeeze(avg_pool2d(unsqueeze(input, -2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad), -2)


# -- the gather / scatter-add pair behind max_pool2d's gradients, recorded for TensorOps ------------------------
def recorded_gather_last(x: Tensor, index: np.ndarray) -> Tensor:
    return record(GATHER, x._device.ops.gather_last(x._data, index), (x,), index=index, size=x.shape[-1])


def recorded_scatter_add_last(g: Tensor, index: np.ndarray, size: int) -> Tensor:
    return record(SCATTER_ADD, g._device.ops.scatter_add_last(g._data, index, size), (g,), index=index)


METHODS: dict[str, Any] = {}
