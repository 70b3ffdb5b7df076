"""Rounding ops (floor, ceil, round, trunc, frac) and their gradient rules.

floor, ceil, round and trunc are flat wherever they are differentiable: PyTorch records a node whose gradient is
zeros, and so do these. frac (x - trunc(x)) passes the gradient on unchanged.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.ops.operands import not_implemented
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor, bool_

__all__ = ["ceil", "fix", "floor", "frac", "round", "trunc"]

_FLAT = ((), lambda ops, g: ops.zeros_like(g))
FLOOR = Rule("FloorBackward0", _FLAT)
CEIL = Rule("CeilBackward0", _FLAT)
TRUNC = Rule("TruncBackward0", _FLAT)
ROUND = Rule("RoundBackward0", _FLAT)
ROUND_DECIMALS = Rule("RoundBackward1", _FLAT)
FRAC = Rule("FracBackward0", ((), None))


def _to_whole(op: str, rule: Rule, input: Tensor) -> Tensor:
    """An integer input is already whole: a copy, in its own dtype, as in PyTorch."""
    x = input._data
    if x.dtype == bool_:
        raise not_implemented(f"{op}_vml_cpu", x.dtype)
    if x.dtype.kind == "c":
        if op == "round":
            raise not_implemented("round_vml_cpu", x.dtype)
        raise NotImplementedError(f"{op} is not supported for complex inputs")
    data = x.copy() if x.dtype.kind != "f" else getattr(input._device.xp, "rint" if op == "round" else op)(x)
    return record(rule, data, (input,))


def floor(input: Tensor) -> Tensor:
    return _to_whole("floor", FLOOR, input)


def ceil(input: Tensor) -> Tensor:
    return _to_whole("ceil", CEIL, input)


def trunc(input: Tensor) -> Tensor:
    """Rounds toward zero."""
    return _to_whole("trunc", TRUNC, input)


def fix(input: Tensor) -> Tensor:
    """Alias of trunc."""
    return trunc(input)


def round(input: Tensor, *, decimals: int | None = None) -> Tensor:
    """Rounds half to even; with `decimals`, to that many decimal places (negative: to tens, hundreds, ...),
    scaling by 10 ** |decimals| in the input's dtype (float32 for float16) as PyTorch's kernel does. Giving
    `decimals`, even 0, picks PyTorch's other overload (RoundBackward1, floating inputs only)."""
    x = input._data
    if decimals is None:
        return _to_whole("round", ROUND, input)
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise TypeError(f"round(): argument 'decimals' must be int, not {type(decimals).__name__}")
    if x.dtype.kind != "f":  # PyTorch's kernel names differ by overload
        raise not_implemented("round_cpu" if decimals else "round_vml_cpu", x.dtype)
    xp = input._device.xp
    work = x.astype(np.float32) if x.dtype == np.float16 else x  # float16 scales in float32, as PyTorch's opmath
    scale = xp.asarray(_power_of_ten(abs(decimals)), dtype=work.dtype)
    with np.errstate(invalid="ignore", over="ignore"):  # an infinite scale gives NaN, as PyTorch's kernel does
        data = xp.rint(work * scale) / scale if decimals >= 0 else xp.rint(work / scale) * scale
    return record(ROUND_DECIMALS, data.astype(x.dtype, copy=False), (input,))


def _power_of_ten(exponent: int) -> float:
    """10 ** exponent as a double, inf past the double range (PyTorch's std::pow) rather than Python's error."""
    try:
        return 10.0**exponent
    except OverflowError:
        return math.inf


def special_round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """torch.special.round: round with `decimals` always given (0 by default), so PyTorch's decimals overload
    (RoundBackward1, floating inputs only) even without it."""
    return round(input, decimals=decimals)


def frac(input: Tensor) -> Tensor:
    """The fractional part, input - trunc(input), with input's sign."""
    x = input._data
    if x.dtype.kind != "f":
        raise not_implemented("frac_cpu", x.dtype)
    return record(FRAC, x - input._device.xp.trunc(x), (input,))


METHODS: dict[str, Any] = {
    "floor": floor, "ceil": ceil, "trunc": trunc, "fix": fix, "round": round, "frac": frac,
}
