"""histogram and histogramdd: counts (or summed weights, or densities) of values in bins, as PyTorch's.

Bins are given by number (edges evenly spaced over `range`, or over the data's min and max, as `linspace` in the
input's dtype places them) or by their edges. A value falls in the bin whose edges hold it, the left edge included
and the right one not, except the last bin, which holds its right edge too; values outside every bin are not
counted. As in PyTorch the results record a node that has no derivative: a backward through them raises.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.ops.arithmetic import _no_derivative
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import record, same_device
from actorgrad.tensor import Tensor

__all__ = ["histogram", "histogramdd"]

# The results, named as torch.return_types names them.
HistogramResult = namedtuple("histogram", ["hist", "bin_edges"])
HistogramddResult = namedtuple("histogramdd", ["hist", "bin_edges"])
HISTOGRAM = _no_derivative("histogram")
HISTOGRAMDD = _no_derivative("histogramdd")
ERROR = "torch.histogramdd: "


def _c_name(dtype: np.dtype) -> str:
    """The C++ name PyTorch's histogram errors give a dtype."""
    return {np.float64: "double", np.float32: "float", np.int64: "long int"}.get(dtype.type, dtype.name)


def _edges(x: Any, d: int, bins: Any, low: float | None, high: float | None, input: Tensor) -> Any:
    """Dimension d's bin edges: `bins` itself when it is a tensor of edges, else `bins` + 1 points from low to high
    (the data's min and max when no range is given, widened by 0.5 each way when they are equal)."""
    if isinstance(bins, Tensor):
        if bins.ndim != 1:
            raise RuntimeError(f"{ERROR}bins tensor should have one dimension, but got {bins.ndim} dimensions in the "
                               f"bins tensor for dimension {d}")
        if bins.shape[0] == 0:
            raise RuntimeError(f"{ERROR}bins tensor should have at least 1 element, but got 0 elements in the bins "
                               f"tensor for dimension {d}")
        if bins.shape[0] == 1:  # one edge makes no bin
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got 0 for dimension {d}")
        same_device(input, bins)
        if bins.dtype != x.dtype:
            raise RuntimeError(f"{ERROR}input tensor and bins tensors should have the same dtype, but got input with "
                               f"dtype {_c_name(x.dtype)} and bins for dimension {d} with dtype {_c_name(bins.dtype)}")
        return bins._data
    if isinstance(bins, bool) or not isinstance(bins, int | np.integer):
        raise TypeError(f"histogram(): argument 'bins' must be int or Tensor, not {type(bins).__name__}")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension {d}")
    if low is None:
        column = x[:, d]
        low, high = (float(column.min()), float(column.max())) if column.size else (0.0, 1.0)
    if low > high:
        raise RuntimeError(f"{ERROR}min should not exceed max, but got min {low:g} max {high:g} for dimension {d}")
    if not (np.isfinite(low) and np.isfinite(high)):
        raise RuntimeError(f"{ERROR}dimension {d}'s range [{low:g}, {high:g}] is not finite")
    if low == high:
        low, high = low - 0.5, high + 0.5
    from actorgrad.creation import linspace  # creation imports the ops package: at call time, not import time

    return linspace(low, high, int(bins) + 1, dtype=x.dtype, device=input.device)._data


def _bin_index(xp: Any, values: Any, edges: Any) -> tuple[Any, Any]:
    """Each value's bin along one dimension, and whether it lies in any."""
    n = edges.shape[0] - 1
    index = xp.searchsorted(edges, values, side="right") - 1
    index = xp.where(values == edges[-1], n - 1, index)
    inside = (values >= edges[0]) & (values <= edges[-1]) & (index >= 0) & (index < n)
    return xp.where(inside, index, 0), inside


def _histogramdd(
    input: Tensor, bins: Any, range: Any, weight: Tensor | None, density: bool, rule: Any
) -> tuple[Tensor, list[Tensor]]:
    """The histogram of input's rows (its last dim holds each point's coordinates) and each dim's edges."""
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{SCALAR_NAMES.get(x.dtype, x.dtype)}'")
    if x.ndim < 2:
        raise RuntimeError(f"{ERROR}input tensor should have at least 2 dimensions")
    dims = x.shape[-1]
    points = x.reshape(-1, dims)
    bins = list(bins) if isinstance(bins, list | tuple) else [bins] * dims
    if len(bins) != dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if range is not None and len(range) != 2 * dims:
        raise RuntimeError(f"{ERROR}for a {dims}-dimensional histogram range should have {2 * dims} elements, but "
                           f"got {len(range)}")
    if weight is not None and weight.shape != x.shape[:-1]:
        raise RuntimeError(
            f"{ERROR}if weight tensor is provided it should have the same shape as the input tensor excluding its "
            f"innermost dimension, but got input with shape {list(x.shape)} and weight with shape {list(weight.shape)}"
        )
    if weight is not None and weight.dtype != x.dtype:
        raise RuntimeError(f"{ERROR}if weight tensor is provided, input tensor and weight tensor should have the same "
                           f"dtype, but got input({_c_name(x.dtype)}), and weight({_c_name(weight.dtype)})")
    xp = input._device.xp
    edges = [_edges(points, d, b, *((None, None) if range is None else (float(range[2 * d]), float(range[2 * d + 1]))),
                    input) for d, b in enumerate(bins)]
    sizes = tuple(e.shape[0] - 1 for e in edges)
    flat = xp.zeros(points.shape[0], np.int64)
    inside = xp.ones(points.shape[0], np.bool_)
    for d, e in enumerate(edges):
        index, within = _bin_index(xp, points[:, d], e)
        flat = flat * sizes[d] + index
        inside &= within
    counted = xp.where(inside, 1, 0).astype(x.dtype) if weight is None else xp.where(
        inside, weight._data.reshape(-1).astype(x.dtype, copy=False), 0)
    hist = xp.bincount(flat, weights=counted, minlength=int(np.prod(sizes))).astype(x.dtype).reshape(sizes)
    if density:
        volume = xp.ones(sizes, x.dtype)
        for d, e in enumerate(edges):
            volume = volume * (e[1:] - e[:-1]).reshape((-1,) + (1,) * (dims - 1 - d))
        with np.errstate(invalid="ignore"):  # nothing counted: 0 / 0, NaN as PyTorch's (without numpy's warning)
            hist = hist / (hist.sum() * volume)
    inputs = (input,) if weight is None else (input, weight)
    return record(rule, hist, inputs), [record(rule, e.copy(), inputs) for e in edges]


def histogram(
    input: Tensor, bins: int | Tensor = 100, *, range: tuple[float, float] | None = None,
    weight: Tensor | None = None, density: bool = False,
) -> HistogramResult:
    """The histogram of input's values (flattened) and the bin edges."""
    check_flags("histogram", density=density)
    hist, (edges,) = _histogramdd(input.reshape(-1, 1), bins, range, None if weight is None else weight.reshape(-1),
                                  density, HISTOGRAM)
    return HistogramResult(hist, edges)


def histogramdd(
    input: Tensor, bins: int | list[int] | list[Tensor] = 10, *, range: list[float] | None = None,
    weight: Tensor | None = None, density: bool = False,
) -> HistogramddResult:
    """The histogram of input's rows as points in as many dimensions as its last dim, and each dim's edges."""
    check_flags("histogramdd", density=density)
    hist, edges = _histogramdd(input, bins, range, weight, density, HISTOGRAMDD)
    return HistogramddResult(hist, tuple(edges))


METHODS: dict[str, Any] = {"histogram": histogram}
