"""Floor division and remainder of floats on an array module whose own kernels round otherwise (CuPy's)."""

from __future__ import annotations

from typing import Any


def python_division(xp: Any, want_remainder: bool, x: Any, y: Any) -> Any:
    """Float floor division or remainder from fmod, as PyTorch (c10 div_floor_floating) and numpy (npy_divmod)
    compute them: CuPy's kernels take floor(x / y) and x - floor(x / y) * y (cupy/_core/_routines_math.pyx,
    _floor_divide and _remainder; include/cupy/carray.cuh, _floor_divide), so 1.0 // 0.1 is 10 there, not 9,
    -5.0 // inf is -0.0, not -1, and 5.0 % inf is NaN, not 5."""
    x, y = xp.asarray(x), xp.asarray(y)  # a scalar keeps its dtype, as beside a device array
    mod = xp.fmod(x, y)
    other_sign = (mod != 0) & ((y < 0) != (mod < 0))
    if want_remainder:
        return xp.where(other_sign, mod + y, mod)
    div = (x - mod) / y
    div = xp.where(other_sign, div - 1, div)
    floor = xp.floor(div)
    floor = xp.where(div - floor > 0.5, floor + 1, floor)  # (x - mod) / y is an integer, up to rounding
    floor = xp.where(div != 0, floor, xp.copysign(xp.zeros_like(div), x / y))
    return xp.where(y == 0, x / y, floor)
