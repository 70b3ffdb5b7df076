"""PyTorch's older per-device autocast state functions (`torch.is_autocast_cpu_enabled()` ...): deprecated there
with a DeprecationWarning that names the `device_type` form to use instead, which each one calls here.

As `get_autocast_dtype("cpu")`, `get_autocast_cpu_dtype()` is None until a dtype is set: PyTorch's CPU default,
bfloat16, has no counterpart in actorgrad."""

from __future__ import annotations

from typing import Any

from actorgrad.amp.autocast import (
    get_autocast_dtype,
    is_autocast_enabled,
    is_dtype,
    set_autocast_dtype,
    set_autocast_enabled,
)
from actorgrad.user_warnings import warn

__all__ = [
    "get_autocast_cpu_dtype", "get_autocast_gpu_dtype", "is_autocast_cpu_enabled", "set_autocast_cpu_dtype",
    "set_autocast_cpu_enabled", "set_autocast_gpu_dtype",
]


def _deprecated(old: str, new: str) -> None:
    warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning)


def _checked_bool(enabled: Any) -> bool:
    if enabled.__class__ is not bool:
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    return enabled


def _checked_dtype(dtype: Any) -> Any:
    if not is_dtype(dtype):
        raise TypeError(f"dtype must be a torch.dtype (got {type(dtype).__name__})")
    return dtype


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _checked_bool(enabled)
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> Any:
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype: Any) -> None:
    _checked_dtype(dtype)
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype() -> Any:
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype: Any) -> None:
    _checked_dtype(dtype)
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)
