"""`actorgrad.cuda.amp`: PyTorch's older CUDA names, deprecated there with a FutureWarning that names the
`torch.amp` call to use instead; they behave as that call. (`torch.cpu.amp` is left out: actorgrad has no
`actorgrad.cpu` module to hold it.)"""

from __future__ import annotations

import sys
import types
import warnings
from typing import Any

from actorgrad import cuda
from actorgrad.amp.autocast import autocast as _autocast
from actorgrad.amp.autocast import custom_bwd as _custom_bwd
from actorgrad.amp.autocast import custom_fwd as _custom_fwd
from actorgrad.amp.grad_scaler import GradScaler as _GradScaler
from actorgrad.tensor import float16


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"`{old}(args...)` is deprecated. Please use `{new}` instead.", FutureWarning, stacklevel=3)


class CudaAutocast(_autocast):
    """`actorgrad.cuda.amp.autocast(enabled, dtype, cache_enabled)`: `actorgrad.amp.autocast("cuda", ...)`."""

    def __init__(self, enabled: bool = True, dtype: Any = float16, cache_enabled: bool = True):
        _deprecated("torch.cuda.amp.autocast", "torch.amp.autocast('cuda', args...)")
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class CudaGradScaler(_GradScaler):
    """`actorgrad.cuda.amp.GradScaler(...)`: `actorgrad.amp.GradScaler("cuda", ...)`."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        _deprecated("torch.cuda.amp.GradScaler", "torch.amp.GradScaler('cuda', args...)")
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


def custom_fwd(fwd: Any = None, **kwargs: Any) -> Any:
    _deprecated("torch.cuda.amp.custom_fwd", "torch.amp.custom_fwd(args..., device_type='cuda')")
    return _custom_fwd(fwd, device_type="cuda", **kwargs)


def custom_bwd(bwd: Any = None) -> Any:
    _deprecated("torch.cuda.amp.custom_bwd", "torch.amp.custom_bwd(args..., device_type='cuda')")
    return _custom_bwd(bwd, device_type="cuda")


def _module(name: str, **members: Any) -> types.ModuleType:
    """A module object `name` holding `members`, importable by name (`from actorgrad.cuda.amp import ...`)."""
    module = types.ModuleType(name, __doc__)
    for public, value in members.items():
        setattr(module, public, value)
    module.__all__ = list(members)
    sys.modules[name] = module
    return module


cuda.amp = _module("actorgrad.cuda.amp", autocast=CudaAutocast, GradScaler=CudaGradScaler, custom_fwd=custom_fwd,
                   custom_bwd=custom_bwd)
