"""Reductions that look past NaN or pick a middle element: nansum, nanmean, median and nanmedian, with their
gradient rules; and std_mean / var_mean, the spread and the mean from one call.

A median over all elements shares its gradient evenly among the elements equal to it (PyTorch's
evenly_distribute_backward); along a dim the gradient goes to the element whose index is returned.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.devices.float_errors import quiet_float_errors
from actorgrad.ops.extrema import _extreme_all_grad, _select_grad
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.operands import SCALAR_NAMES, not_implemented
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import (
    MEAN,
    _spread,
    accumulation_dtype,
    input_size,
    kept,
    numpy_names,
    one_dim,
    reduced_dims,
    refuse_integer_result,
    sum,
)
from actorgrad.ops.shape import single_dim
from actorgrad.ops.statistics import STD, VAR, _variance
from actorgrad.tensor import Tensor, int64

__all__ = ["median", "nanmean", "nanmedian", "nansum", "std_mean", "var_mean"]

MedianResult = namedtuple("median", ["values", "indices"])
NanmedianResult = namedtuple("nanmedian", ["values", "indices"])

NANSUM = Rule(
    "NansumBackward0",
    # A product with the mask, not a choice, as PyTorch's: an infinite gradient (nanmean of an all-NaN row divides
    # by a zero count) makes NaN at the NaN elements.
    (("self", "kept_shape", "self_shape"),
     lambda ops, g, self, kept_shape, self_shape: _spread(ops, g, kept_shape, self_shape) * (self == self)),
    cost=input_size,
)
_EVENLY = (("self", "result", "dim", "kept_shape"), _extreme_all_grad)
_SELECT = (("indices", "dim", "rows_shape", "self_shape"), _select_grad)
MEDIAN_ALL = Rule("MedianBackward0", _EVENLY, cost=input_size)
MEDIAN_DIM = Rule("MedianBackward1", _SELECT, cost=input_size)
NANMEDIAN_ALL = Rule("NanmedianBackward0", _EVENLY, cost=input_size)
NANMEDIAN_DIM = Rule("NanmedianBackward1", _SELECT, cost=input_size)
# std_mean's and var_mean's two results each get the rule of std (var) and of mean, under PyTorch's one node name.
STD_MEAN = (Rule("StdMeanBackward0", *STD.grads, cost=input_size), Rule("StdMeanBackward0", *MEAN.grads))
VAR_MEAN = (Rule("VarMeanBackward0", *VAR.grads, cost=input_size), Rule("VarMeanBackward0", *MEAN.grads))


def nansum(
    input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: bool | None = None,
) -> Tensor:
    """The sum over `dim` with NaNs counted as zero; integers and bools sum in int64, as sum's."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    if keepdim.__class__ is not bool:
        raise not_bool("nansum", "keepdim", keepdim)
    x = input._data
    if x.dtype.kind == "c":
        raise RuntimeError("nansum on CPU does not support complex inputs")
    if dtype is not None:
        if np.dtype(dtype).kind == "c" and x.dtype.kind == "f" and x.size:  # PyTorch's kernel has no complex form
            raise not_implemented("nansum_cpu", np.dtype(dtype))  # (integers it sums as sum does)
        refuse_integer_result(input, dtype)
        x = x.astype(dtype, copy=False)
    elif x.dtype.kind in "biu":
        x = x.astype(int64)
    dims = reduced_dims(dim, x.ndim, "nansum") if x.ndim else one_dim(dim or 0, 0, "nansum")
    kernel = input._device.xp.nansum if x.dtype.kind == "f" else input._device.xp.sum
    with quiet_float_errors():  # inf - inf is NaN, quietly as in PyTorch
        data = kernel(x, axis=dims, keepdims=keepdim, dtype=accumulation_dtype(x.dtype))
    return record(NANSUM, data.astype(x.dtype, copy=False), (input,), kept_shape=kept(x.shape, dims),
                  self_shape=x.shape)


def nanmean(
    input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: bool | None = None,
) -> Tensor:
    """The mean of the non-NaN elements over `dim` (NaN where there are none), as PyTorch's: nansum / count."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    if keepdim.__class__ is not bool:
        raise not_bool("nanmean", "keepdim", keepdim)
    if input._data.dtype.kind == "c":
        raise RuntimeError("nansum on CPU does not support complex inputs")  # nanmean is nansum / count
    if input._data.dtype.kind != "f":
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{SCALAR_NAMES[input._data.dtype]}")
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        raise RuntimeError("nanmean(): could not infer output dtype. Optional dtype must be either a floating point "
                           f"or complex dtype. Got: {SCALAR_NAMES.get(np.dtype(dtype), dtype)}")
    counted = sum(~input.isnan(), dim, keepdim)
    with np.errstate(invalid="ignore"):  # an all-NaN row is 0 / 0: NaN, without numpy's warning
        return nansum(input, dim, keepdim, dtype=dtype) / counted


def _lower_middle(xp: Any, rows: Any, d: int, ignore_nan: bool) -> tuple[Any, Any]:
    """The indices (dim d kept) and values of the lower middle element of each row in stable sorted order: the
    first NaN where a row holds one (median), or the middle of the non-NaN elements (nanmedian, NaN where all are)."""
    order = xp.argsort(rows, axis=d, kind="stable")  # NaN sorts last
    n = rows.shape[d]
    if rows.dtype.kind == "f":
        nans = xp.isnan(rows).sum(axis=d, keepdims=True)
    else:
        nans = xp.zeros(kept(rows.shape, (d,)), dtype=np.int64)
    if ignore_nan:
        position = xp.maximum((n - nans - 1) // 2, 0)
    else:
        position = xp.where(nans > 0, n - nans, (n - 1) // 2)
    indices = xp.take_along_axis(order, position.astype(order.dtype), axis=d)
    return indices, xp.take_along_axis(rows, indices, axis=d)


def _median(op: str, all_rule: Rule, dim_rule: Rule, result: Any, input: Tensor, dim: int | None,
            keepdim: bool) -> Any:
    if keepdim.__class__ is not bool:
        raise not_bool(op, "keepdim", keepdim)
    x = input._data
    xp = input._device.xp
    if x.dtype.kind in "bc":
        raise not_implemented("median_cpu" if dim is None else "median_out", x.dtype)
    if dim is None:
        if x.size == 0:
            return record(all_rule, xp.full((), np.nan, x.dtype), (input,), dim=(), kept_shape=(), self_shape=x.shape)
        _, value = _lower_middle(xp, x.reshape(-1), 0, op == "nanmedian")
        dims = tuple(range(x.ndim))
        return record(all_rule, value.reshape(()), (input,), dim=dims, kept_shape=(1,) * x.ndim, self_shape=x.shape)
    d = single_dim(dim, x.ndim, op)
    rows = x.reshape(x.shape or (1,))
    if rows.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")  # nanmedian's too
    indices, values = _lower_middle(xp, rows, d, op == "nanmedian")
    shape = kept(x.shape, (d,)) if keepdim else x.shape[:d] + x.shape[d + 1:]
    out = record(dim_rule, values.reshape(shape), (input,), indices=indices, dim=d, rows_shape=rows.shape,
                 self_shape=x.shape)
    return result(out, Tensor(indices.reshape(shape).astype(int64, copy=False), device=input._device))


def median(
    input: Tensor, dim: int | None = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None
) -> Any:
    """The lower median of all elements (NaN if any is), or along `dim` the named tuple (values, indices)."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _median("median", MEDIAN_ALL, MEDIAN_DIM, MedianResult, input, dim, keepdim)


def nanmedian(
    input: Tensor, dim: int | None = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None
) -> Any:
    """median over the non-NaN elements (NaN where all are NaN)."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _median("nanmedian", NANMEDIAN_ALL, NANMEDIAN_DIM, NanmedianResult, input, dim, keepdim)


def _moments(op: str, rules: tuple[Rule, Rule], input: Tensor, dim: Any, unbiased: bool | None, keepdim: bool,
             correction: Any) -> tuple[Tensor, Tensor]:
    x = input._data
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"{op} only support floating point and complex dtypes")
    data, params = _variance(op, input, dim, unbiased, keepdim, correction)
    if rules is STD_MEAN:
        data = np.sqrt(data)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = x.sum(axis=params["dims"], keepdims=keepdim, dtype=accumulation_dtype(x.dtype))
        mean = total / np.float64(params["count"])
    spread = record(rules[0], data, (input,), **params)
    return spread, record(rules[1], mean.astype(x.dtype, copy=False), (input,), **params)


def std_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: Any = None, axis: Any = None, keepdims: bool | None = None) -> tuple[Tensor, Tensor]:
    """(std, mean) over `dim`, with std's arguments."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _moments("std_mean", STD_MEAN, input, dim, unbiased, keepdim, correction)


def var_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: Any = None, axis: Any = None, keepdims: bool | None = None) -> tuple[Tensor, Tensor]:
    """(var, mean) over `dim`, with var's arguments."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _moments("var_mean", VAR_MEAN, input, dim, unbiased, keepdim, correction)


METHODS: dict[str, Any] = {"nansum": nansum, "nanmean": nanmean, "median": median, "nanmedian": nanmedian}
