"""Automatic mixed precision (`torch.amp`): `autocast` regions and `GradScaler`."""

from actorgrad.amp import device_amp  # noqa: F401  (registers actorgrad.cuda.amp)
from actorgrad.amp.autocast import (
    autocast,
    clear_autocast_cache,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from actorgrad.amp.grad_scaler import GradScaler, OptState

__all__ = [
    "GradScaler", "OptState", "autocast", "clear_autocast_cache", "custom_bwd", "custom_fwd", "get_autocast_dtype",
    "is_autocast_available", "is_autocast_cache_enabled", "is_autocast_enabled", "set_autocast_cache_enabled",
    "set_autocast_dtype", "set_autocast_enabled",
]
