"""logcumsumexp: the running log of the sum of exponentials along a dim, and its gradient rule."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import float16_in_float32
from actorgrad.ops.shape import single_dim
from actorgrad.tensor import Tensor

__all__ = ["logcumsumexp"]


def _logcumsumexp_grad(ops: Any, g: Any, self: Any, result: Any, dim: int, shift: Any, past_inf: Any) -> Any:
    """grad_i = sum over j >= i of g_j exp(x_i - r_j), written as exp(x_i - t) * sum g_j exp(t - r_j) for a constant
    t per row (`_shift`), so that neither exponential overflows unless the running values span more than the float
    range. The terms span as much as the running values do, so they are summed from the far end (reverse_cumsum),
    never as total - cumsum, which would cancel the small ones away. Where the running value is +inf, every term
    is 0 (PyTorch's 0, for an element other than the +inf itself). For complex inputs the exponentials are
    conjugated (PyTorch's conjugate-Wirtinger convention)."""
    if shift is None:  # a 0-dim input is its own logcumsumexp
        return g
    grad = ops.conj(ops.exp(self - shift)) * ops.reverse_cumsum(g * ops.conj(ops.exp(-(result - shift))), dim)
    return grad if past_inf is None else ops.where(past_inf, 0, grad)


def _shift(xp: Any, data: Any, dim: int) -> Any:
    """The gradient's constant per row: the total (the last running value, at least every x_i and r_j), or where a
    +inf makes the total infinite, the largest finite running value (0 where there is none): exp(x - inf) would
    make the elements before the +inf NaN where their gradient is finite."""
    total = data[(slice(None),) * dim + (slice(-1, None),)]
    if data.dtype.kind == "c":
        return total
    finite = xp.where(data < np.inf, data, -np.inf).max(axis=dim, keepdims=True)
    return xp.where(xp.isfinite(finite), finite, 0).astype(data.dtype, copy=False)


# float16 runs in float32, as PyTorch's: float16's exponentials overflow once the running values span about 11
LOGCUMSUMEXP = Rule(
    "LogcumsumexpBackward0", (("self", "result", "dim", "shift", "past_inf"), float16_in_float32(_logcumsumexp_grad))
)


def _complex_running_logaddexp(xp: Any, x: Any, dim: int) -> Any:
    """PyTorch's complex logcumsumexp, one step at a time: the running value with the larger real part plus
    log1p(exp(smaller - larger)). The imaginary parts run on past pi as PyTorch's do (a log of the cumsum would wrap
    them), so the steps cannot be regrouped into a parallel scan; numpy's logaddexp takes no complex numbers."""
    out = xp.moveaxis(x, dim, 0).copy()
    with np.errstate(invalid="ignore"):  # -inf - -inf: masked below
        for i in range(1, out.shape[0]):
            before, step = out[i - 1], out[i]
            later_larger = step.real > before.real
            high, low = xp.where(later_larger, step, before), xp.where(later_larger, before, step)
            out[i] = xp.where(low.real == -np.inf, high, high + xp.log1p(xp.exp(low - high)))
    return xp.moveaxis(out, 0, dim)


def logcumsumexp(input: Tensor, dim: int | None = None, *, axis: Any = None) -> Tensor:
    """log(cumsum(exp(input))) along `dim`, without overflow: a running logaddexp."""
    if axis is not None:  # numpy's name, which PyTorch takes too
        dim = axis
    if dim is None:  # required, as PyTorch's (optional here only so that `axis` can stand in for it)
        raise TypeError('logcumsumexp() missing 1 required positional arguments: "dim"')
    x = input._data
    if x.dtype.kind not in "fc":
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{SCALAR_NAMES[x.dtype]}'")
    d = single_dim(dim, x.ndim, "logcumsumexp")
    rows = x.reshape(x.shape or (1,))
    if x.dtype.kind == "c":
        data = _complex_running_logaddexp(input._device.xp, rows, d).reshape(x.shape)
    else:
        with np.errstate(invalid="ignore"):  # a nan runs on as nan, silently as in PyTorch
            if x.dtype == np.float16:  # run in float32, as PyTorch's: a float16 running sum stops growing early
                rows = rows.astype(np.float32)
            data = input._device.ops.accumulate("logaddexp", rows, d).astype(x.dtype, copy=False).reshape(x.shape)
    xp = input._device.xp
    shift = _shift(xp, data, d) if x.ndim else None
    past_inf = (data == np.inf) & (x != np.inf) if x.ndim and x.dtype.kind == "f" else None
    return record(LOGCUMSUMEXP, data, (input,), dim=d, shift=shift, past_inf=past_inf)


METHODS: dict[str, Any] = {"logcumsumexp": logcumsumexp}
