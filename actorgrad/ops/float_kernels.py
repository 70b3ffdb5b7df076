"""Float kernels where numpy's rounding differs from PyTorch's: float16 computed in float32 and rounded once (as
PyTorch's opmath), the float16 scalar operands PyTorch takes in float32, and the sign of a zero remainder."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from actorgrad.devices.floor_division import python_division
from actorgrad.ops.operands import kernel_operands, number_array
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.saved_tensors import WrappedNumber
from actorgrad.tensor import Tensor

FLOAT16, FLOAT32 = np.dtype(np.float16), np.dtype(np.float32)
FLOAT16_SCALAR_OPS = frozenset(("mul", "div", "floor_divide"))  # their kernels take a scalar operand in float32


def remainder(x: Any, y: Any) -> Any:
    """numpy's remainder, but a float zero keeps the dividend's sign (fmod's) as in PyTorch's kernel: -3.0 % 1 is
    -0.0 there, 0.0 in numpy. Named as the device function `_binary` looks up (CuPy's floats take the same
    python_division there)."""
    if x.dtype.kind == "f":
        return python_division(np, True, x, y)
    return np.remainder(x, y)


def sigmoid(ops: Any, x: Any) -> Any:
    """float16 computes in float32 and rounds once, as PyTorch's kernel (two roundings are off by up to 2 ulp)."""
    if x.dtype.kind == "c":
        return 1 / (1 + ops.xp.exp(-x))
    return ops.sigmoid(x.astype(FLOAT32)).astype(FLOAT16) if x.dtype is FLOAT16 else ops.sigmoid(x)


def float16_by_scalar(rule: Rule, kernel: Any, a: Tensor, b: Any) -> Tensor:
    """A float16 tensor times, over or floor-divided by (`kernel`, a numpy ufunc) a scalar (a Python number, or a
    zero-dim tensor of another floating dtype) as PyTorch's kernels compute it: in float32, with the scalar in
    float32 (not first rounded to float16), rounded to float16 once. A number is saved in float16 for the
    backward. (Remainder, fmod and pow round the scalar to float16 first, in PyTorch's kernels as in numpy's.)"""
    xp = a._device.xp
    if kernel is np.floor_divide and xp is not np:
        kernel = partial(python_division, xp, False)
    elif xp is not np:
        kernel = getattr(xp, kernel.__name__)
    if b.__class__ is Tensor:
        common_device((a, b))
        scalar = b._data.astype(FLOAT32)
    else:
        scalar, b = np.float32(b), WrappedNumber(number_array(b, FLOAT16))
    data = kernel(*kernel_operands(a._data.astype(FLOAT32), scalar)).astype(FLOAT16)
    return record(rule, data, (a, b))


def float16_scalar_divisor(a: Any, b: Any) -> Any:
    """`b` as PyTorch's float16 kernels take a scalar divisor of the tensor `a` (see float16_by_scalar): in float32,
    unrounded, where `b` is a Python number, or a zero-dim floating tensor beside an n-d `a`; else None."""
    if a.__class__ is not Tensor or a._data.dtype is not FLOAT16:
        return None
    if b.__class__ in (float, int):
        return np.float32(b)
    if b.__class__ is Tensor and a.ndim and not b.ndim and b._data.dtype.kind == "f":
        return b._data.astype(FLOAT32)
    return None
