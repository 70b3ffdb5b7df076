"""Fractional max pooling (2-d and 3-d): max pooling over windows whose starts are drawn at random per plane, so
that the output may be any size up to the input's less the kernel's (Graham, "Fractional Max-Pooling").

Each plane's window starts along a dim come from one uniform sample u as PyTorch's `generate_intervals` makes
them (in the input's precision): start i = int((i + u) * alpha) - int(u * alpha), alpha = (in - k) / (out - 1),
and the last window ends at the input's end. A window's winner is its first maximum (its last NaN, if any); the
output gathers the winners, and the gradient scatters back to them, as max pooling's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.pool_gradients import gather_maxima, input_dependent, scatter_to_maxima
from actorgrad.ops.record import Rule, record
from actorgrad.random_tensors import rand
from actorgrad.tensor import Tensor

__all__: list[str] = []

_SAVES = ("index", "self_shape", "slots")
FRACTIONAL_MAX_POOL_2D = input_dependent("FractionalMaxPool2D", _SAVES, scatter_to_maxima, gather_maxima)
FRACTIONAL_MAX_POOL_3D = input_dependent("FractionalMaxPool3D", _SAVES, scatter_to_maxima, gather_maxima)
_DIM_NAMES = ("time", "height", "width")


def _sizes(value: Any, dims: int, message: str) -> tuple[int, ...]:
    """An int for every spatial dim, or one int per dim."""
    values = (value,) * dims if isinstance(value, (int, np.integer)) else tuple(value)
    if len(values) != dims:
        raise RuntimeError(message)
    return tuple(int(v) for v in values)


def _check_input(input: Tensor, dims: int, kernel: tuple[int, ...], out: tuple[int, ...]) -> None:
    """The kernel's checks of the input's rank and sizes, and that the windows fit, in PyTorch's words."""
    op = "fractional_max_pool2d()" if dims == 2 else "fractional_max_pool3d_out()"
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"{op}: Expected {dims + 1}D or {dims + 2}D tensor, but got: {list(input.shape)}")
    for dim in range(1, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError(f"{op}: Expected input to have non-zero size for non-batch dimensions, but got"
                               f"{list(input.shape)} with dimension {dim} being empty.")
    if min(out) < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: "
                           f"{[*input.shape[:-dims], *out]}")
    names = _DIM_NAMES[3 - dims:]
    for name, n, k, o in zip(names, input.shape[-dims:], kernel, out):
        # the 2-d kernel lets the last window end at the input's end, the 3-d kernel only before it
        if not (o + k - 1 <= n if dims == 2 else o + k - 1 < n):
            raise RuntimeError(f"{op}: pool {name} {k} too large relative to input {name} {n}")


def _check_samples(input: Tensor, samples: Tensor, dims: int) -> None:
    if input.dtype.kind != "f":
        raise NotImplementedError(f"\"fractional_max_pool{dims}d_out_frame\" not implemented for "
                                  f"'{SCALAR_NAMES.get(input.dtype, input.dtype)}'")
    if samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to be 3D tensor, got: {samples.ndim}")
    batch = input.shape[0] if input.ndim == dims + 2 else 1
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != input.shape[-dims - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != dims:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {dims}; got {samples.shape[2]}.")


def _starts(xp: Any, samples: Any, size: int, out: int, kernel: int) -> Any:
    """generate_intervals for every plane at once: (..., out) window starts from (...) samples."""
    starts = xp.full((*samples.shape, out), size - kernel, np.int64)
    if out > 1:
        dtype = samples.dtype.type
        alpha = dtype(size - kernel) / dtype(out - 1)
        u = samples[..., None]
        steps = (xp.arange(out - 1).astype(samples.dtype) + u) * alpha
        starts[..., :-1] = steps.astype(np.int64) - (u * alpha).astype(np.int64)
    # PyTorch does not check the samples: ones outside [0, 1) would move windows off the input
    return starts.clip(0, max(size - kernel, 0))


def _fractional_max(rule: Rule, input: Tensor, samples: Tensor, kernel: tuple[int, ...],
                    out: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    dims = len(kernel)
    x = input._data if input.ndim == dims + 2 else input._data[None]
    n, c, *sizes = x.shape
    xp = input._device.xp
    # samples[..., 0] drives the width in 2-d, the time in 3-d (PyTorch's order)
    order = (1, 0) if dims == 2 else (0, 1, 2)
    planes = samples._data[:n, :, :]
    # flat index of every (plane, output place, window offset): dim d's positions on axes 2 + d and 2 + dims + d
    flat = xp.zeros((n, c) + (1,) * 2 * dims, np.int64)
    starts_flat = xp.zeros((n, c) + (1,) * dims, np.int64)
    for d, (size, k, o) in enumerate(zip(sizes, kernel, out)):
        starts = _starts(xp, planes[:, :, order[d]], size, o, k)  # (n, c, o)
        shape = [n, c] + [o if a == d else 1 for a in range(dims)]
        positions = starts.reshape(shape + [1] * dims) + xp.arange(max(k, 0)).reshape(
            [1] * (2 + dims) + [max(k, 0) if a == d else 1 for a in range(dims)])
        flat = flat * size + positions
        starts_flat = starts_flat * size + starts.reshape(shape)
    window = math.prod(max(k, 0) for k in kernel)
    flat = xp.broadcast_to(flat, (n, c, *out, *(max(k, 0) for k in kernel))).reshape(n, c, math.prod(out), window)
    data = x.reshape(n, c, math.prod(sizes))
    lead = input.shape[:-dims]
    if window == 0 or flat.shape[2] == 0:  # empty windows: -inf at each window's start, as PyTorch's kernel
        index = xp.broadcast_to(starts_flat, (n, c, *out)).reshape(lead + (math.prod(out),)).copy()
        result = Tensor(xp.full(lead + out, -np.inf, x.dtype), device=input._device)
        if window:  # no output: still a node, whose gradient is zeros, as PyTorch's (its kernel's own)
            result = record(rule, result._data, (input,), index=index, self_shape=input.shape, slots=math.prod(sizes))
    else:
        windows = xp.take_along_axis(data, flat.reshape(n, c, flat.shape[2] * window), 2).reshape(flat.shape)
        local = windows.argmax(-1)
        nan = xp.isnan(windows)
        local = xp.where(nan.any(-1), window - 1 - nan[..., ::-1].argmax(-1), local)
        index = xp.take_along_axis(flat, local[..., None], -1)[..., 0]
        values = xp.take_along_axis(data, index, 2).reshape(lead + out)
        index = index.reshape(lead + (math.prod(out),))
        result = record(rule, values, (input,), index=index, self_shape=input.shape, slots=math.prod(sizes))
    return result, Tensor(index.reshape(lead + out), device=input._device)


def _fractional_max_pool(dims: int, input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any,
                         samples: Tensor | None) -> tuple[Tensor, Tensor]:
    op = f"fractional_max_pool{dims}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if dims == 2 and len(output_ratio) > 2:
            raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = tuple(output_ratio) if isinstance(output_ratio, (list, tuple)) else (output_ratio,) * dims
        output_size = [int(input.shape[-dims + d] * ratio[d]) for d in range(dims)]
    if samples is None:
        batch = 1 if input.ndim == dims + 1 else input.shape[0]
        samples = rand(batch, input.shape[-dims - 1], dims, dtype=input.dtype, device=input._device)
    ints = "Int or tuple of Ints" if dims == 2 else "Int or tuple of three Ints"
    kernel = _sizes(kernel_size, dims, f"{op}: kernel_size must either be a single {ints}")
    out = _sizes(output_size, dims, f"{op}: output_size must either be a single {ints}")
    _check_input(input, dims, kernel, out)
    _check_samples(input, samples, dims)
    rule = FRACTIONAL_MAX_POOL_2D if dims == 2 else FRACTIONAL_MAX_POOL_3D
    return _fractional_max(rule, input, samples, kernel, out)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The pooled (N, C, oH, oW) or (C, oH, oW) input and each output's flat index in its plane."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    """Fractional max pooling over (H, W): an output_size, or an output_ratio of the input's, and one uniform
    sample per plane and dim (drawn from actorgrad's generator unless `_random_samples` gives them)."""
    pooled = _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return pooled if return_indices else pooled[0]


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The pooled (N, C, oT, oH, oW) or (C, oT, oH, oW) input and each output's flat index in its volume."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    """Fractional max pooling over (T, H, W), as fractional_max_pool2d."""
    pooled = _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, _random_samples)
    return pooled if return_indices else pooled[0]
