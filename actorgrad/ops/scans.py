"""Running products and extremes along a dim (cumprod, cummax, cummin) and their gradient rules; cumsum is with
the reductions."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.devices.float_errors import quiet_float_errors
from actorgrad.ops.operands import not_implemented, refuse_complex
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import float16_in_float32, input_size, refuse_integer_result
from actorgrad.ops.shape import single_dim
from actorgrad.tensor import Tensor, int64

__all__ = ["cummax", "cummin", "cumprod"]

# The (values, indices) pairs, named as torch.return_types names them.
CummaxResult = namedtuple("cummax", ["values", "indices"])
CumminResult = namedtuple("cummin", ["values", "indices"])


def _cumprod_grad(ops: Any, g: Any, self: Any, result: Any, dim: int) -> Any:
    # a 0-d input, or one of one element along dim, is its own running product: the gradient passes as it is,
    # not depending on the input (so, as PyTorch's, a double backward finds no graph)
    return ops.cumprod_grad(g, self, result, dim) if self.ndim and self.shape[dim] > 1 else g


# float16 runs in float32, as PyTorch's
CUMPROD = Rule("CumprodBackward0", (("self", "result", "dim"), float16_in_float32(_cumprod_grad)))


def _put_back(ops: Any, g: Any, self: Any, indices: Any, dim: int, rows_shape: tuple, self_shape: tuple) -> Any:
    """Each running extreme's gradient goes to the element it came from (added up: many positions share one); an
    empty input is its own gradient, as PyTorch's cummaxmin_backward returns it."""
    if 0 in self_shape:
        return self
    return ops.reshape(ops.put_along(ops.reshape(g, rows_shape), indices, dim, rows_shape), self_shape)


_PUT_BACK = (("self", "indices", "dim", "rows_shape", "self_shape"), _put_back)
CUMMAX = Rule("CummaxBackward0", _PUT_BACK, cost=input_size)
CUMMIN = Rule("CumminBackward0", _PUT_BACK, cost=input_size)


def cumprod(input: Tensor, dim: int | None = None, *, dtype: Any = None, axis: Any = None) -> Tensor:
    """The running product along `dim`; integer and bool inputs give int64 unless `dtype` says otherwise, as
    cumsum's."""
    if autocast_state.get() is not None and dtype is None:
        return autocast_call(cumprod, "cumprod", input, dim, dtype=dtype, axis=axis)
    if axis is not None:  # numpy's name, which PyTorch takes too
        dim = axis
    x = input._data
    d = single_dim(dim, x.ndim, "cumprod")
    if dtype is None:
        dtype = int64 if x.dtype.kind in "biu" else x.dtype
    elif np.dtype(dtype) == np.bool_:
        raise not_implemented("cumprod_out_cpu", np.dtype(dtype))
    elif input.requires_grad and x.dtype != dtype:
        refuse_integer_result(input, dtype)
        input = input.to(dtype)  # the gradient needs the values as multiplied (complex ones cast to real)
    rows = x.reshape(x.shape or (1,)).astype(dtype, copy=False)
    with quiet_float_errors():  # 0 * inf is NaN, quietly as in PyTorch
        if rows.dtype == np.float16:  # multiplied in float32 and rounded once, as PyTorch's (in float16 it drifts)
            data = input._device.xp.cumprod(rows, axis=d, dtype=np.float32).astype(np.float16).reshape(x.shape)
        else:  # numpy's own dtype widens narrow ints
            data = input._device.xp.cumprod(rows, axis=d, dtype=dtype).reshape(x.shape)
    return record(CUMPROD, data, (input,), dim=d)


def _running(op: str, rule: Rule, result: Any, input: Tensor, dim: int) -> Any:
    """The running extreme along `dim` and the index of the last element that set it; NaN is an extreme that
    stays, as in PyTorch."""
    x = input._data
    refuse_complex(x.dtype, f"{op}_cpu")
    device = input._device
    xp = device.xp
    d = single_dim(dim, x.ndim, op)
    rows = x.reshape(x.shape or (1,))
    values = device.ops.accumulate("maximum" if op == "cummax" else "minimum", rows, d)
    positions = xp.arange(rows.shape[d]).reshape((-1,) + (1,) * (rows.ndim - 1 - d))
    sets = (rows == values) | (xp.isnan(rows) if rows.dtype.kind == "f" else False)
    indices = device.ops.accumulate("maximum", xp.where(sets, positions, 0), d)
    out = record(rule, values.reshape(x.shape), (input,), indices=indices, dim=d, rows_shape=rows.shape,
                 self_shape=x.shape)
    return result(out, Tensor(indices.reshape(x.shape).astype(int64, copy=False), device=device))


def cummax(input: Tensor, dim: int | None = None, *, axis: Any = None) -> CummaxResult:
    """The running maximum along `dim`, and where each came from."""
    if axis is not None:  # numpy's name, which PyTorch takes too
        dim = axis
    return _running("cummax", CUMMAX, CummaxResult, input, dim)


def cummin(input: Tensor, dim: int | None = None, *, axis: Any = None) -> CumminResult:
    """The running minimum along `dim`, and where each came from."""
    if axis is not None:  # numpy's name, which PyTorch takes too
        dim = axis
    return _running("cummin", CUMMIN, CumminResult, input, dim)


METHODS: dict[str, Any] = {"cumprod": cumprod, "cummax": cummax, "cummin": cummin}
