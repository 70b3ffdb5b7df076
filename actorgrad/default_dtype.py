"""The default floating dtype (`get_default_dtype`, `set_default_dtype`), as PyTorch's: what creation functions
give when no dtype is named and none is inferred from data (`zeros(3)`, `tensor(1.5)`, `arange(0.5, 2)`), and what
a Python float or a floating op (sqrt, true division) makes of integer tensors.

A module global read through `default_float()`, not a ContextVar: the setting is process-wide in PyTorch too, and
the per-op path reads it only where a Python float or an integer input meets a floating result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["get_default_dtype", "set_default_dtype"]

_default_float = np.dtype(np.float32)
_ALLOWED = (np.dtype(np.float32), np.dtype(np.float64))


def default_float() -> np.dtype:
    """The current default floating dtype (float32 unless set)."""
    return _default_float


def default_complex() -> np.dtype:
    """The dtype of a Python complex number: the complex dtype of the default float dtype, as in PyTorch."""
    return np.result_type(_default_float, np.complex64)


def get_default_dtype() -> np.dtype:
    """The dtype of a tensor made from Python floats, or by a creation function given no dtype."""
    return _default_float


def set_default_dtype(d: Any) -> None:
    """Make `d` (float32 or float64) the default floating dtype, for this whole process, as PyTorch's."""
    global _default_float
    if isinstance(d, type) and issubclass(d, np.generic):  # np.float64 names the dtype too
        d = np.dtype(d)
    if not isinstance(d, np.dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the default type")
    if d.kind != "f":
        raise TypeError("only floating-point types are supported as the default type")
    if d not in _ALLOWED:
        raise TypeError(f"only float32 and float64 are supported as the default type in actorgrad (it has no "
                        f"complex counterpart of {d}), got {d}")
    _default_float = d
