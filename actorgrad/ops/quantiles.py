"""Order statistics beyond sorting: quantile and nanquantile (composites of sort, gather and lerp, as in PyTorch, so
the gradient reaches the one or two elements each quantile interpolates), mode, unique_consecutive and histc.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.operands import not_implemented, refuse_complex, type_name
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import input_size, numpy_names
from actorgrad.ops.searching import refused_derivative, unique
from actorgrad.ops.selection import where
from actorgrad.ops.shape import single_dim
from actorgrad.ops.sorting import _put_back, sort
from actorgrad.tensor import Tensor, float32, int64

__all__ = ["histc", "mode", "nanquantile", "quantile", "unique_consecutive"]

ModeResult = namedtuple("mode", ["values", "indices"])

# PyTorch's quantile ends with an in-place squeeze_(-1), whose node this is.
SQUEEZE_LAST = Rule("SqueezeBackward4", (("self_shape",), lambda ops, g, self_shape: ops.reshape(g, self_shape)))
MODE = Rule("ModeBackward0", (("indices", "dim", "kept_shape", "self_shape"), _put_back), cost=input_size)
INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


# -- quantile, nanquantile --------------------------------------------------------------------------------------
def _q_array(op: str, input: Tensor, q: Any) -> Any:
    """q as an array of input's dtype, checked as PyTorch checks it."""
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        values = q._data
        if not bool(((values >= 0) & (values <= 1)).all()):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
        return values
    if not isinstance(q, int | float | np.integer | np.floating) or isinstance(q, bool):
        raise TypeError(f"{op}(): argument 'q' (position 2) must be float or Tensor, not {type_name(q)}")
    if not 0 <= q <= 1:
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q:g}")
    return input._device.xp.asarray(q, dtype=input.dtype)


def _quantile(op: str, input: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str) -> Tensor:
    # The checks' errors name quantile() for nanquantile too, as PyTorch's shared checks do; a number q is checked
    # first, as PyTorch's overload for numbers does before it calls the one for tensors.
    check_flags(op, keepdim=keepdim)
    qs = None if isinstance(q, Tensor) else _q_array(op, input, q)
    if interpolation not in INTERPOLATIONS:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, but "
                           f"got {interpolation}")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if isinstance(q, Tensor) and q.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.dtype not in (float32, np.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if qs is None:
        qs = _q_array(op, input, q)
    xp = input._device.xp
    # The sorted values as (*rest, n): `rest` is the output's shape without q's dim.
    if dim is None:
        rest = (1,) * input.ndim if keepdim else ()
        rows = input.reshape(*rest, -1)
    else:
        d = single_dim(dim, input.ndim, op)
        rest = input.shape[:d] + ((1,) if keepdim else ()) + input.shape[d + 1:] if input.ndim else ()
        rows = input.reshape(1) if not input.ndim else input.movedim(d, -1)
        rows = rows.reshape(*rest, rows.shape[-1])
    ordered = sort(rows).values
    data = ordered._data
    last = data.shape[-1] - 1
    nans = xp.isnan(data)
    shape = qs.shape + rest + (1,)  # q's dim (if any) first, as in PyTorch
    qs = qs.reshape(qs.shape + (1,) * (len(rest) + 1))
    # ranks = qs * scale, except where PyTorch fills in a fixed rank (which cuts q's gradient there)
    if op == "nanquantile":  # ranks among the non-NaN values; a row of NaNs takes rank 0, so its quantile is NaN
        scale = (~nans).sum(-1, keepdims=True).astype(data.dtype) - 1
        filled = qs * scale < 0
        ranks = xp.where(filled, data.dtype.type(0), qs * scale)
    else:  # a row holding NaN takes the last rank, so its quantile is NaN
        scale = data.dtype.type(last)
        filled = nans.any(-1, keepdims=True)
        ranks = xp.where(filled, scale, qs * scale)
    ranks = xp.broadcast_to(ranks, shape)
    if interpolation in ("lower", "higher", "nearest"):
        ranks = {"lower": xp.floor, "higher": xp.ceil, "nearest": xp.round}[interpolation](ranks)
    below = xp.floor(ranks)
    if qs.ndim > len(rest) + 1:  # a q tensor: one row of sorted values per q
        ordered = ordered.unsqueeze(0).expand(*shape[:-1], data.shape[-1])
    out = ordered.take_along_dim(Tensor(below.astype(int64), device=input._device), -1)
    if interpolation in ("linear", "midpoint"):
        above = ordered.take_along_dim(Tensor(xp.ceil(ranks).astype(int64), device=input._device), -1)
        weights = xp.full(shape, 0.5, data.dtype) if interpolation == "midpoint" else ranks - below
        weights = Tensor(weights.astype(data.dtype), device=input._device)
        if interpolation == "linear" and isinstance(q, Tensor) and q.requires_grad:
            slope = _rank_slope(q, qs) * Tensor(xp.asarray(scale), device=input._device)
            weights = weights + where(Tensor(filled, device=input._device), 0.0, slope)
        out = out.lerp(above, weights)
    return record(SQUEEZE_LAST, out._data.reshape(shape[:-1]), (out,), self_shape=shape)


def _rank_slope(q: Tensor, qs: Any) -> Tensor:
    """Zero in value with q's gradient: times the ranks' scale and added to a linear quantile's weights, it gives
    q (a tensor requiring grad) its gradient as in PyTorch while the weights stay bit for bit the array path's."""
    q = q.reshape(qs.shape)
    return q - q.detach()


def quantile(
    input: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear",
    axis: Any = None, keepdims: bool | None = None,
) -> Tensor:
    """The q-th quantiles of all elements or along `dim` (NaN where a NaN is among them); a q tensor puts its dim
    first. Between two elements, `interpolation` says which value: linear, lower, higher, midpoint or nearest."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _quantile("quantile", input, q, dim, keepdim, interpolation)


def nanquantile(
    input: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear",
    axis: Any = None, keepdims: bool | None = None,
) -> Tensor:
    """quantile over the non-NaN elements (NaN where all are NaN)."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation)


# -- mode -------------------------------------------------------------------------------------------------------
def mode(
    input: Tensor, dim: int = -1, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None
) -> ModeResult:
    """The most frequent value along `dim` and its index. As PyTorch's cpu kernel: of equally frequent values the
    smallest, at its last position; each NaN counts as its own value."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    check_flags("mode", keepdim=keepdim)
    x = input._data
    xp = input._device.xp
    refuse_complex(x.dtype, "mode_cpu")
    d = single_dim(dim, x.ndim, "mode")
    if x.ndim and x.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    rows = xp.moveaxis(x.reshape(x.shape or (1,)), d, -1)
    kept_shape = rows.shape[:-1] + (1,)
    flat = rows.reshape(-1, rows.shape[-1])
    n_rows, n = flat.shape
    if n_rows * n:
        order = xp.argsort(flat, axis=-1, kind="stable")
        ranked = xp.take_along_axis(flat, order, axis=-1)
        starts = xp.ones(flat.shape, bool)
        starts[:, 1:] = ranked[:, 1:] != ranked[:, :-1]  # NaN != NaN: each NaN starts a run of its own
        run = xp.cumsum(starts, axis=-1) - 1
        # each row's run lengths, by run number; the first longest run holds the smallest most frequent value
        lengths = xp.bincount((run + n * xp.arange(n_rows)[:, None]).reshape(-1), minlength=n_rows * n)
        lengths = lengths.reshape(n_rows, n)
        best = xp.argmax(lengths, axis=-1)[:, None]
        end = xp.take_along_axis(xp.cumsum(lengths, axis=-1), best, axis=-1) - 1
        index = xp.take_along_axis(order, end, axis=-1)
    else:
        index = xp.zeros((n_rows, 1), int64)
    index = xp.moveaxis(index.reshape(kept_shape), -1, d) if x.ndim else index.reshape(())
    values = xp.take_along_axis(x.reshape(x.shape or (1,)), index.reshape(index.shape or (1,)), axis=d)
    out_shape = index.shape if keepdim or not x.ndim else index.shape[:d] + index.shape[d + 1:]
    out = record(MODE, values.reshape(out_shape), (input,), indices=index.reshape(index.shape or (1,)), dim=d,
                 kept_shape=index.shape or (1,), self_shape=x.shape)
    return ModeResult(out, Tensor(index.reshape(out_shape).astype(int64, copy=False), device=input._device))


# -- unique_consecutive -----------------------------------------------------------------------------------------
# PyTorch records a node for unique_consecutive that refuses its backward.
UNIQUE_CONSECUTIVE = Rule("UniqueConsecutiveBackward0", ((), refused_derivative("unique_consecutive")))


def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> Any:
    """The input with each run of equal consecutive elements (along `dim`: slices) kept once; with return_inverse,
    which run each element went to, with return_counts, each run's length."""
    check_flags("unique_consecutive", return_inverse=return_inverse, return_counts=return_counts)
    xp = input._device.xp
    x = input._data
    refuse_complex(x.dtype, "unique")
    if dim is None:
        flat = x.reshape(-1)
        rows = flat.reshape(flat.shape[0], 1)
        inverse_shape = x.shape
    else:
        if x.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        d = single_dim(dim, x.ndim, "unique_consecutive")
        if x.size == 0:
            unique(input, dim=d)  # PyTorch's errors for zero-sized dims, as unique's
        moved = xp.moveaxis(x, d, 0)
        rows = moved.reshape(moved.shape[0], math.prod(moved.shape[1:]))
        inverse_shape = (x.shape[d],)
    n = rows.shape[0]
    starts = xp.ones(n, bool)
    starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)  # NaN != NaN: each NaN is a run of its own
    first = xp.nonzero(starts)[0]
    if dim is None:
        values = flat[first]
    else:
        values = xp.moveaxis(xp.take(moved, first, axis=0), 0, d)
    out = [record(UNIQUE_CONSECUTIVE, values, (input,))]
    if return_inverse:
        inverse = xp.cumsum(starts, dtype=int64) - 1
        out.append(Tensor(inverse.reshape(inverse_shape), device=input._device))
    if return_counts:
        out.append(Tensor(xp.diff(xp.append(first, n)).astype(int64, copy=False), device=input._device))
    return out[0] if len(out) == 1 else tuple(out)


# -- histc ------------------------------------------------------------------------------------------------------
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """The counts of input's elements in `bins` equal bins over [min, max] (the elements' own range when both are
    0; elements outside are left out), in input's dtype, without a gradient."""
    x = input._data
    xp = input._device.xp
    if not isinstance(bins, int | np.integer) or isinstance(bins, bool):
        raise TypeError(f"histc(): argument 'bins' (position 1) must be int, not {type_name(bins)}")
    if x.dtype.kind != "f":
        raise not_implemented("histogram_cpu", x.dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    low, high = float(min), float(max)
    if low == high and x.size:
        low, high = float(x.min()), float(x.max())
    if low == high:  # PyTorch widens an empty range by one on each side
        low, high = low - 1, high + 1
    if not (np.isfinite(low) and np.isfinite(high)):
        raise RuntimeError(f"torch.histc: range of [{low:g}, {high:g}] is not finite")
    if low > high:
        raise RuntimeError("torch.histc: max must be larger than min")
    kept = x[(x >= low) & (x <= high)]
    # bin of each element as PyTorch computes it, in input's dtype: the top edge belongs to the last bin
    low, high = x.dtype.type(low), x.dtype.type(high)
    position = ((kept - low) * x.dtype.type(bins) / (high - low)).astype(int64)
    counts = xp.bincount(xp.minimum(position, bins - 1), minlength=bins)
    return Tensor(counts.astype(x.dtype), device=input._device)


METHODS: dict[str, Any] = {
    "quantile": quantile, "nanquantile": nanquantile, "mode": mode, "unique_consecutive": unique_consecutive,
    "histc": histc,
}
