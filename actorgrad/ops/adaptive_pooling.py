"""The adaptive poolings (1-d, 2-d, 3-d; average and max): output sizes instead of windows.

An adaptive pooling's bin i covers [floor(i * n / out), ceil((i + 1) * n / out)) of each dim, as PyTorch's. Its
mean is an averaging matrix applied along each dim (matmuls, so differentiable to any order); its max is a gather
at each bin's first maximum (the last NaN, if any), whose gradient is the scatter-add max pooling uses.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.ops.linalg import matmul
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.pooling import ONE_INT, check_1d_rank, recorded_gather_last, single_size
from actorgrad.ops.shape import squeeze, unsqueeze
from actorgrad.tensor import Tensor


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


def _averaging(size: int, out: int, input: Tensor) -> Tensor:
    """The (out, size) matrix whose row i averages bin i."""
    starts, ends = _bins(size, out)
    places = np.arange(size)
    inside = (places >= starts[:, None]) & (places < ends[:, None])
    matrix = (inside / (ends - starts)[:, None]).astype(input._data.dtype)
    return Tensor(input._device.xp.asarray(matrix), device=input._device)


def _average_plane(input: Tensor, oh: int, ow: int) -> Tensor:
    h, w = input.shape[-2:]
    return matmul(matmul(_averaging(h, oh, input), input), _averaging(w, ow, input).mT)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    oh, ow = _adaptive_sizes("adaptive_avg_pool2d", input._data, output_size,
                             "adaptive_avg_pool2d: output_size must be 2")
    return _average_plane(input, oh, ow)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """The depth averaged on a (..., D, H*W) view, then each plane."""
    od, oh, ow = _adaptive_sizes3d("adaptive_avg_pool3d", input._data, output_size)
    *lead, d, h, w = input.shape
    depth = matmul(_averaging(d, od, input), input.reshape(*lead, d, h * w))
    return _average_plane(depth.reshape(*lead, od, h, w), oh, ow)


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
    flat = recorded_gather_last(input.reshape(*lead, math.prod(sizes)), index.reshape(*lead, math.prod(outs)))
    out = flat.reshape(*lead, *outs)
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
