"""C's fmod, fmax and fmin, elementwise with broadcasting and PyTorch's promotion, with their gradient rules.

fmod's remainder has the dividend's sign (remainder's has the divisor's); fmax and fmin ignore a NaN when the
other operand is a number. Their gradients use masks and quotients taken in the forward, which are piecewise
constant, so they enter a recorded backward as constants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops.operands import common_dtype, data_as, kernel_operands, require_tensors
from actorgrad.ops.pointwise import _broadcast_kernel
from actorgrad.ops.record import Rule, as_tensor_operand, common_device, record
from actorgrad.tensor import Tensor

__all__ = ["fmax", "fmin", "fmod"]

_MASKED = (("mask",), lambda ops, g, mask: g * mask)
FMOD_NUMBER = Rule("FmodBackward0", ((), None))
FMOD_TENSOR = Rule(  # the quotient from the inputs, so a recorded gradient stays connected to them
    "FmodBackward1", ((), None), (("self", "other"), lambda ops, g, self, other: -g * ops.trunc(self / other)),
    broadcasts=True,
)
FMAX = Rule("FmaxBackward0", _MASKED, (("other_mask",), lambda ops, g, other_mask: g * other_mask), broadcasts=True)
FMIN = Rule("FminBackward0", *FMAX.grads, broadcasts=True)


def fmod(input: Tensor, other: Tensor | float) -> Tensor:
    """input - trunc(input / other) * other; an integer division by zero raises, as in PyTorch."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fmod(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    number = not isinstance(other, Tensor)
    other_t = as_tensor_operand(other, input)
    device = common_device((input, other_t))
    dtype = common_dtype(input, other)
    xp = device.xp
    if dtype.kind == "b":
        raise NotImplementedError("\"fmod_cpu\" not implemented for 'Bool'")
    x, y = kernel_operands(data_as(input, dtype), data_as(other_t, dtype))
    if dtype.kind in "biu" and bool((y == 0).any()):
        raise RuntimeError("ZeroDivisionError")
    with np.errstate(invalid="ignore", divide="ignore"):
        data = xp.asarray(_broadcast_kernel("fmod", xp.fmod, x, y), dtype=dtype)
        if number:
            return record(FMOD_NUMBER, data, (input,))
    return record(FMOD_TENSOR, data, (input, other_t))


def _choose(op: str, rule: Rule, kernel: str, input: Tensor, other: Tensor) -> Tensor:
    require_tensors(op, input=input, other=other)
    device = common_device((input, other))
    dtype = common_dtype(input, other)
    xp = device.xp
    x, y = kernel_operands(data_as(input, dtype), data_as(other, dtype))
    data = xp.asarray(_broadcast_kernel(op, getattr(xp, kernel), x, y), dtype=dtype)
    if dtype.kind != "f":
        return record(rule, data, (input, other), mask=None, other_mask=None)
    # The input's value was taken where it won, tied, or faced a NaN (PyTorch's masks).
    mask = ((x >= y) if kernel == "fmax" else (x <= y)) | xp.isnan(y)
    return record(rule, data, (input, other), mask=mask, other_mask=~mask)


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise maximum, where a NaN loses to a number."""
    return _choose("fmax", FMAX, "fmax", input, other)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise minimum, where a NaN loses to a number."""
    return _choose("fmin", FMIN, "fmin", input, other)


METHODS: dict[str, Any] = {"fmod": fmod, "fmax": fmax, "fmin": fmin}
