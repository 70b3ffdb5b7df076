"""max_unpool1d/2d/3d: the partial inverse of max pooling with return_indices, each value written back at the
place its flat index (into its plane or volume) names, zeros elsewhere. A `scatter` into zeros, so the input's
gradient is the output's read back at the indices, as PyTorch's; where an index repeats, the last value stays
(PyTorch's CPU kernel writes in order) and each of them gets that place's gradient.

The output size is worked out and checked as PyTorch's Python does, then the arguments as its kernels do, in their
order; max_unpool1d is max_unpool2d over a unit width, as in PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from actorgrad.ops.index_parsing import host_array
from actorgrad.ops.operands import SCALAR_NAMES, int_tuple, not_implemented
from actorgrad.ops.record import same_device
from actorgrad.ops.scatter import scatter
from actorgrad.tensor import Tensor


def repeated(value: Any, count: int) -> tuple:
    """PyTorch's `_single`/`_pair`/`_triple`: a sequence as it is (whatever its length), anything else `count`
    times."""
    return tuple(value) if isinstance(value, Iterable) else (value,) * count


def unpooled_size(input: Tensor, kernel: tuple, stride: tuple, padding: tuple, output_size: Any) -> list[int]:
    """The output's spatial size: (size - 1) * stride + kernel - 2 * padding per dim, or `output_size` (whose
    leading batch and channel sizes may be given too) within a stride of that."""
    dims = len(kernel)
    default = [(input.shape[-dims + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(dims)]
    if output_size is None:
        size = default
    else:
        if len(output_size) == dims + 2:
            output_size = output_size[2:]
        if len(output_size) != dims:
            raise ValueError(f"output_size should be a sequence containing {dims} or {dims + 2} elements, but it has "
                             f"a length of '{len(output_size)}'")
        for d in range(dims):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < output_size[d] < high:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {low} and {high})')
        size = output_size
    for d in range(dims):
        if size[d] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={size[d]}")
    return size


def _unpool(op: str, input: Tensor, indices: Tensor, size: Any, stride: tuple | None = None) -> Tensor:
    """PyTorch's max_unpool2d/3d kernel: its checks, then each plane's values scattered into zeros."""
    size = int_tuple(size, op, "output_size", 3)
    dims = 3 if op == "max_unpool3d" else 2
    if len(size) != dims:  # a kernel_size sequence of another length leads here, as in PyTorch
        names = "three elements (depth, height, width)" if dims == 3 else "two elements (height, width)"
        raise RuntimeError(f"There should be exactly {names} in output_size, but got {len(size)} elements.")
    kernel_name = f"max_unpooling{dims}d"
    if indices.dtype != np.int64:
        got = f" but got: {SCALAR_NAMES.get(indices.dtype, indices.dtype)}" if dims == 2 else ""
        raise RuntimeError(f"elements in indices should be type int64{got}")
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"Input to {kernel_name} should be a {dims + 1}d or {dims + 2}d Tensor, but got a tensor "
                           f"with {input.ndim} dimensions.")
    for dim in range(1, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError(f"{kernel_name}_forward_out_cpu(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got {list(input.shape)} with dimension {dim} being empty.")
    if indices.shape != input.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    if stride is not None and min(stride) <= 0:
        raise RuntimeError(f"strides should be greater than zero, but got stride: {list(stride)}")
    if input.dtype.kind != "f":
        raise not_implemented(f"max_unpool{dims}d", input.dtype)
    same_device(input, indices)
    lead = input.shape[:-dims]
    volume = math.prod(size)
    places = host_array(indices._data)
    outside = (places < 0) | (places >= volume)
    if outside.any():  # PyTorch's kernel writes in order and reports the last such index
        last = places.reshape(-1)[np.flatnonzero(outside)[-1]]
        raise RuntimeError(f"Found an invalid max index: {last} (output volumes are of size "
                           f"{'x'.join(map(str, size))})")
    planes, count = math.prod(lead), math.prod(input.shape[-dims:])
    zeros = Tensor(input._device.xp.zeros((planes, volume), input.dtype), device=input._device)
    unpooled = scatter(zeros, 1, indices.reshape(planes, count), input.reshape(planes, count))
    return unpooled.reshape(*lead, *size)


def _geometry(input: Tensor, dims: int, kernel_size: Any, stride: Any, padding: Any, output_size: Any) -> tuple:
    kernel = repeated(kernel_size, dims)
    strides = kernel if stride is None else repeated(stride, dims)
    size = unpooled_size(input, kernel, strides, repeated(padding, dims), output_size)
    return strides, size


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    _, size = _geometry(input, 1, kernel_size, stride, padding, output_size)
    return _unpool("max_unpool2d", input.unsqueeze(-1), indices.unsqueeze(-1), [*size, 1]).squeeze(-1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    _, size = _geometry(input, 2, kernel_size, stride, padding, output_size)
    return _unpool("max_unpool2d", input, indices, size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    strides, size = _geometry(input, 3, kernel_size, stride, padding, output_size)
    return _unpool("max_unpool3d", input, indices, size, strides)
