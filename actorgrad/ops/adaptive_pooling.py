"""The adaptive poolings (1-d, 2-d, 3-d; average and max): output sizes instead of windows.

An adaptive pooling's bin i covers [floor(i * n / out), ceil((i + 1) * n / out)) of each dim, as PyTorch's. Its
mean is one node (AdaptiveAvgPool2D/3DBackward0) whose forward and gradient apply each dim's averaging matrix or its
transpose (matmuls, so differentiable to any order); an input holding a NaN or an infinity, which a matrix would
spread to every bin through 0 * inf, is averaged from each bin's own places instead (as on a GPU, where asking would
cost a host sync). float16 is averaged in float32 and rounded once, as PyTorch's. Its max is a gather at each bin's
first maximum (the last NaN, if any), whose gradient is the scatter-add max pooling uses. Their nodes take the input,
as PyTorch's (pool_gradients).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.pool_gradients import gather_maxima, input_dependent, scatter_to_maxima
from actorgrad.ops.pooling import ONE_INT, check_1d_rank, single_size
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import input_size
from actorgrad.ops.shape import squeeze, unsqueeze
from actorgrad.tensor import Tensor


def _adaptive_sizes(op: str, x: Any, output_size: Any, count_error: str) -> tuple[int, int]:
    """The output's (height, width): an int for both, or a pair whose None keeps the input's size; checked, with
    the input, in PyTorch's order."""
    sizes = _with_defaults(output_size, x.shape)
    sizes = [sizes] * 2 if isinstance(sizes, int) else list(sizes)
    if len(sizes) != 2:
        raise RuntimeError(count_error)
    if x.ndim not in (3, 4):
        raise RuntimeError(f"{op}(): Expected 3D or 4D tensor, but got{':' if 'max' in op else ''} {list(x.shape)}")
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


def _with_defaults(output_size: Any, shape: tuple[int, ...]) -> Any:
    """nn.functional's _list_with_default: an output size's None keeps the input's size of that dim."""
    if isinstance(output_size, int):
        return output_size
    if len(shape) <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
    return [n if v is None else v for v, n in zip(output_size, shape[-len(output_size):])]


def _adaptive_sizes3d(op: str, x: Any, output_size: Any) -> tuple[int, int, int]:
    """The output's (depth, height, width), checked with the input in the order of PyTorch's 3-d kernels: the
    mean's checks its sizes first, the max's the input first."""
    sizes = _with_defaults(output_size, x.shape)
    sizes = [sizes] * 3 if isinstance(sizes, int) else sizes
    average = op == "adaptive_avg_pool3d"
    if not average:
        _check_volumes(op, x)
    if len(sizes) != 3:
        raise RuntimeError(f"{op}: output_size must be 3" if average else
                           f"{op}(): internal error: output_size.size() must be 3")
    if min(sizes) < 0:
        if average:
            raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                               f"{{{sizes[0]}, {sizes[1]},{sizes[2]}}}")
        raise RuntimeError(f"Trying to create tensor with negative dimension {next(n for n in sizes if n < 0)}: "
                           f"{[*x.shape[:-3], *sizes]}")
    if average:
        _check_volumes(op, x)
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
    return sizes[0], sizes[1], sizes[2]


def _check_volumes(op: str, x: Any) -> None:
    """A 4-d or 5-d input whose dims after the first are not empty, checked in the order of PyTorch's `op`."""
    rank = f"{op}(): Expected 4D or 5D tensor, but got{'' if op == 'adaptive_avg_pool3d' else ':'} {list(x.shape)}"
    if op == "adaptive_max_pool3d" and x.ndim not in (4, 5):
        raise RuntimeError(rank)
    for dim in range(1, x.ndim):
        if x.shape[dim] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                               f"sizes {list(x.shape)} with dimension {dim} being empty")
    if x.ndim not in (4, 5):
        raise RuntimeError(rank)


def _bins(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """Each output place's [start, end) along a dim of `size`, as PyTorch computes them."""
    i = np.arange(out)
    return i * size // out, -(-(i + 1) * size // out)


def _bin_sums(xp: Any, x: Any, dim: int, out: int) -> Any:
    """Each bin's sum along `dim` of the array `x`: a reshape where the bins are equal, else a gather of each
    bin's places padded to the longest bin by a zero appended to the dim."""
    shape, n = x.shape, x.shape[dim]
    if out and n % out == 0:
        return x.reshape(*shape[:dim], out, n // out, *shape[dim + 1:]).sum(dim + 1)
    starts, ends = _bins(n, out)
    longest = int(max(ends - starts, default=0))
    places = np.where(np.arange(longest) < (ends - starts)[:, None], starts[:, None] + np.arange(longest), n)
    padded = xp.concatenate((x, xp.zeros((*shape[:dim], 1, *shape[dim + 1:]), x.dtype)), dim)
    windows = padded.take(xp.asarray(places.reshape(-1)), dim).reshape(*shape[:dim], out, longest, *shape[dim + 1:])
    return windows.sum(dim + 1)


def _averaging(size: int, out: int, dtype: np.dtype) -> np.ndarray:
    """The (out, size) matrix whose row i averages bin i."""
    starts, ends = _bins(size, out)
    places = np.arange(size)
    inside = (places >= starts[:, None]) & (places < ends[:, None])
    return (inside / np.maximum(ends - starts, 1)[:, None]).astype(dtype)


def _plane_grad(ops: Any, g: Any, rows: Any, cols: Any) -> Any:
    return rows @ g @ cols


def _volume_grad(ops: Any, g: Any, depths: Any, rows: Any, cols: Any) -> Any:
    planes = rows @ g @ cols
    *lead, od, h, w = planes.shape
    return ops.reshape(depths @ ops.reshape(planes, (*lead, od, h * w)), (*lead, depths.shape[0], h, w))


def _plane_means(ops: Any, gg: Any, rows: Any, cols: Any, grad_shape: tuple) -> Any:
    return _plane_grad(ops, gg, rows.T, cols.T)  # the gradient's adjoint: the forward's matrices


def _volume_means(ops: Any, gg: Any, depths: Any, rows: Any, cols: Any, grad_shape: tuple) -> Any:
    return _volume_grad(ops, gg, depths.T, rows.T, cols.T)


ADAPTIVE_AVG_POOL_2D = input_dependent("AdaptiveAvgPool2D", ("rows", "cols"), _plane_grad, _plane_means, input_size)
ADAPTIVE_AVG_POOL_3D = input_dependent(
    "AdaptiveAvgPool3D", ("depths", "rows", "cols"), _volume_grad, _volume_means, input_size
)
_MAX_SAVES = ("index", "self_shape", "slots")
ADAPTIVE_MAX_POOL = {
    dims: input_dependent(f"AdaptiveMaxPool{dims}D", _MAX_SAVES, scatter_to_maxima, gather_maxima, input_size)
    for dims in (2, 3)
}


def _adaptive_average(rule: Rule, input: Tensor, outs: tuple[int, ...]) -> Tensor:
    """The means over the last len(outs) dims. The forward applies the averaging matrices A (out, size) as
    A_d (A_h x A_w^T) and the gradient their transposes, as A_d^T (A_h^T g A_w): one formula for both."""
    if all(n == 1 for n in outs):  # global pooling: PyTorch's kernel takes the mean (its node MeanBackward1)
        return input.mean(tuple(range(-len(outs), 0)), keepdim=True)
    x = input._data
    device = input._device
    data = x.astype(np.float32) if x.dtype == np.float16 else x
    sizes = x.shape[-len(outs):]
    *lead, last = (_averaging(n, o, data.dtype) for n, o in zip(sizes, outs))
    product = _plane_grad if len(outs) == 2 else _volume_grad
    # BLAS on the host (float16's rounding once needs exact sums; a device's reductions are fast enough)
    if device.xp is np and x.dtype != np.float16 and np.isfinite(data).all():
        data = product(device.ops, data, *lead, last.T)
    else:  # each bin's sum over its count, divided once (float16's sums are exact in float32), as PyTorch's
        counts = np.ones(())
        for i, (n, size) in enumerate(zip(sizes, outs)):
            data = _bin_sums(device.xp, data, x.ndim - len(outs) + i, size)
            starts, ends = _bins(n, size)
            counts = np.multiply.outer(counts, ends - starts)
        data = data / device.xp.asarray(counts.astype(data.dtype))
    spreads = [Tensor(device.xp.asarray(m.T.astype(x.dtype)), device=device) for m in lead]
    grad_cols = Tensor(device.xp.asarray(last.astype(x.dtype)), device=device)
    return record(rule, data.astype(x.dtype, copy=False), (input,), cols=grad_cols, self_shape=x.shape,
                  **dict(zip(("depths", "rows")[-len(spreads):], spreads)))


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    oh, ow = _adaptive_sizes("adaptive_avg_pool2d", input._data, output_size,
                             "adaptive_avg_pool2d: output_size must be 2")
    return _adaptive_average(ADAPTIVE_AVG_POOL_2D, input, (oh, ow))


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    outs = _adaptive_sizes3d("adaptive_avg_pool3d", input._data, output_size)
    return _adaptive_average(ADAPTIVE_AVG_POOL_3D, input, outs)


def _adaptive_max(input: Tensor, outs: tuple[int, ...], return_indices: bool) -> Any:
    """Each bin's first maximum in row-major order (the last NaN, if any) over the last len(outs) dims, gathered;
    indices are flat in each plane or volume, as PyTorch's."""
    x = input._data
    dims = len(outs)
    lead, sizes = x.shape[:-dims], x.shape[-dims:]
    xp = input._device.xp
    # Each bin's places along each dim, padded to the longest bin by repeating its last one: a repeat comes after
    # the place it repeats, so the first maximum in row-major order is still a real place.
    places = []
    for n, o in zip(sizes, outs):
        starts, ends = _bins(n, o)
        longest = int(max(ends - starts, default=1))
        places.append(xp.asarray(np.minimum(starts[:, None] + np.arange(longest), ends[:, None] - 1)))
    kernel = [p.shape[1] for p in places]
    # dim d's places spread over axes d (its bins) and dims + d (the places in a bin) of a (*outs, *kernel) grid
    grid = [p.reshape([p.shape[0] if a == d else p.shape[1] if a == dims + d else 1 for a in range(2 * dims)])
            for d, p in enumerate(places)]
    windows = x[(..., *grid)].reshape(*lead, *outs, math.prod(kernel))
    local = windows.argmax(-1) if windows.size else xp.zeros((*lead, *outs), np.int64)
    nan = xp.isnan(windows)
    if windows.size:  # PyTorch's kernel moves to each NaN it meets, so the last one wins
        local = xp.where(nan.any(-1), windows.shape[-1] - 1 - nan[..., ::-1].argmax(-1), local)
    chosen = []  # per dim, the place of each bin's winner
    for d in reversed(range(dims)):
        local, offset = local // kernel[d], local % kernel[d]
        chosen.insert(0, places[d][xp.arange(outs[d]).reshape(-1, *(1,) * (dims - 1 - d)), offset])
    index = chosen[0]
    for place, n in zip(chosen[1:], sizes[1:]):
        index = index * n + place
    saved = index.reshape(*lead, math.prod(outs))
    values = input._device.ops.gather_last(x.reshape(*lead, math.prod(sizes)), saved).reshape(*lead, *outs)
    out = record(ADAPTIVE_MAX_POOL[dims], values, (input,), index=saved, self_shape=x.shape, slots=math.prod(sizes))
    return (out, Tensor(index.astype(np.int64), device=input._device)) if return_indices else out


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    sizes = _adaptive_sizes("adaptive_max_pool2d", input._data, output_size,
                            "adaptive_max_pool2d(): internal error: output_size.size() must be 2")
    return _adaptive_max(input, sizes, return_indices)


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive_max(input, _adaptive_sizes3d("adaptive_max_pool3d", input._data, output_size), return_indices)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    n = single_size("adaptive_avg_pool1d", output_size, "output_size", ONE_INT)
    check_1d_rank("adaptive_avg_pool1d", input._data)
    return squeeze(adaptive_avg_pool2d(unsqueeze(input, -2), (1, n)), -2)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    n = single_size("adaptive_max_pool1d", output_size, "output_size", ONE_INT)
    check_1d_rank("adaptive_max_pool1d", input._data)
    for dim in range(1, input.ndim):  # its own check, before the 2-d op's on a unit height
        if input.shape[dim] == 0:
            raise RuntimeError("adaptive_max_pool1d(): Expected input to have non-zero size for non-batch dimensions, "
                               f"but input has sizes {list(input.shape)} with dimension {dim} being empty")
    out, index = adaptive_max_pool2d(unsqueeze(input, -2), (1, n), return_indices=True)
    return (squeeze(out, -2), squeeze(index, -2)) if return_indices else squeeze(out, -2)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False,
                                     ) -> tuple[Tensor, Tensor]:
    """adaptive_max_pool1d's output and indices, whatever return_indices says (PyTorch's name for that form)."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False,
                                     ) -> tuple[Tensor, Tensor]:
    """adaptive_max_pool2d's output and indices, whatever return_indices says."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False,
                                     ) -> tuple[Tensor, Tensor]:
    """adaptive_max_pool3d's output and indices, whatever return_indices says."""
    return adaptive_max_pool3d(input, output_size, True)


# The 2-d and 3-d forms and adaptive_max_pool1d live in nn.functional only (torch.adaptive_max_pool1d always
# returns the indices too), as in PyTorch.
__all__ = ["adaptive_avg_pool1d"]
METHODS: dict[str, Any] = {}
