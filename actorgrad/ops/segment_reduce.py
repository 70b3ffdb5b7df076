"""`torch.segment_reduce`: one reduction per run of consecutive elements along `axis`, the runs given by their
lengths or by their offsets.

It is scatter_reduce with each element's run as its index, so its gradient is scatter_reduce's (max and min share
it among ties, prod's is exact at zeros): elements no run covers go to one more run, dropped at the end. An empty
run gives `initial`, else the reduction's identity (0, 1, -inf, inf; NaN for mean). As PyTorch's, `initial` takes
part in every run, and a mean divides the run's sum plus `initial` by the run's length. (PyTorch's own backward
shares only a positive gradient among tied maxima or minima, giving a negative one whole to each, and leaves
`initial` out of a tie; actorgrad shares every gradient evenly among all the tied values, as its amax does.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops.operands import SCALAR_NAMES, dim_in_range
from actorgrad.tensor import Tensor

__all__ = ["segment_reduce"]
METHODS: dict[str, Any] = {}

_SCATTER_NAMES = {"sum": "sum", "prod": "prod", "mean": "sum", "max": "amax", "amax": "amax", "min": "amin",
                  "amin": "amin"}
_IDENTITIES = {"sum": 0.0, "prod": 1.0, "mean": np.nan, "amax": -np.inf, "amin": np.inf}


def _checked_counts(name: str, counts: Any) -> np.ndarray:
    """`lengths` or `offsets` as an int64 array, after PyTorch's type checks."""
    if not isinstance(counts, Tensor):
        raise TypeError(f"segment_reduce(): argument '{name}' must be Tensor, not {type(counts).__name__}")
    if counts.dtype not in (np.int32, np.int64):
        raise NotImplementedError(f'"_segment_reduce_{name}_cpu_kernel1" not implemented for '
                                  f"'{SCALAR_NAMES.get(counts.dtype, counts.dtype)}'")
    return np.asarray(counts.cpu()._data, dtype=np.int64)


def _offsets(data: Tensor, lengths: Tensor | None, offsets: Tensor | None, axis: int,
             unsafe: bool) -> np.ndarray:
    """Each row's run boundaries (shape data.shape[:axis] + (runs + 1,)), after PyTorch's checks."""
    given = offsets if offsets is not None else lengths
    if given.ndim > data.ndim:
        raise RuntimeError("Expected data.dim() >= lengths_value.dim() to be true, but got false.  (Could this error "
                           "message be improved?  If so, please report an enhancement request to PyTorch.)")
    if axis != given.ndim - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of lengths but got {axis}.")
    if given.shape[:-1] != data.shape[:axis]:
        raise RuntimeError(f"segment_reduce(): expected lengths or offsets of shape {[*data.shape[:axis], '*']} "
                           f"(one row per slice before axis {axis}), got {list(given.shape)}")
    if offsets is not None:
        bounds = _checked_counts("offsets", offsets)
        if (np.diff(bounds, axis=-1) < 0).any():
            raise RuntimeError("Expected segment_length >= 0 to be true, but got false.  (Could this error message be "
                               "improved?  If so, please report an enhancement request to PyTorch.)")
        return bounds
    counts = _checked_counts("lengths", lengths)
    if counts.size == 0:
        raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           "reduction dim with the 'dim' argument.")
    if not unsafe:
        if (counts < 0).any():
            raise RuntimeError("lengths contains negative value!")
        if (counts.sum(axis=-1) != data.shape[axis]).any():
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                               "data.size(lengths.dim()-1) when !unsafe.")
    zeros = np.zeros((*counts.shape[:-1], 1), np.int64)
    return np.concatenate([zeros, np.cumsum(counts, axis=-1)], axis=-1)


def _run_index(bounds: np.ndarray, size: int) -> np.ndarray:
    """For each row of `bounds`, the run of each of `size` positions; positions outside every run get the
    extra run `runs`."""
    runs = bounds.shape[-1] - 1
    positions = np.arange(size)
    rows = bounds.reshape(-1, runs + 1)
    index = np.empty((rows.shape[0], size), np.int64)
    for row, edges in zip(index, rows, strict=True):
        run = np.searchsorted(edges[1:], positions, side="right")
        row[...] = np.where((positions >= edges[0]) & (run < runs), run, runs)
    return index.reshape(*bounds.shape[:-1], size)


def segment_reduce(data: Tensor, reduce: str, *, lengths: Tensor | None = None, indices: Tensor | None = None,
                   offsets: Tensor | None = None, axis: int = 0, unsafe: bool = False,
                   initial: float | None = None) -> Tensor:
    """`reduce` ('sum', 'mean', 'prod', 'max' or 'min') over each run of `data` along `axis`: runs of `lengths`
    (whose rows sum to data's size along axis, unless `unsafe`) or between consecutive `offsets`."""
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if reduce not in _SCATTER_NAMES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    axis = dim_in_range(axis, data.ndim)
    bounds = _offsets(data, lengths, offsets, axis, unsafe)
    if data.dtype.kind != "f":
        raise NotImplementedError(f"\"_segment_reduce_cpu\" not implemented for "
                                  f"'{SCALAR_NAMES.get(data.dtype, data.dtype)}'")
    runs = bounds.shape[-1] - 1
    trailing = data.shape[axis + 1:]
    index = _run_index(bounds, data.shape[axis]).reshape(*data.shape[:axis + 1], *(1,) * len(trailing))
    index = Tensor(data._device.xp.asarray(np.ascontiguousarray(np.broadcast_to(index, data.shape))),
                   device=data._device)
    scatter = _SCATTER_NAMES[reduce]
    start = _IDENTITIES[scatter] if initial is None else float(initial)
    shape = (*data.shape[:axis], runs + 1, *trailing)
    out = data.new_full(shape, start).scatter_reduce(axis, index, data, scatter, include_self=initial is not None)
    out = out.narrow(axis, 0, runs)
    if reduce != "mean":
        return out
    counts = np.diff(bounds, axis=-1).reshape(*bounds.shape[:-1], runs, *(1,) * len(trailing))
    counts = data.new_tensor(counts)
    empty_run = np.nan if initial is None else float(initial)
    return (out / counts.clamp(min=1)).where(counts > 0, empty_run)
