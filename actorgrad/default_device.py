"""The default device (`set_default_device`, `get_default_device`), as PyTorch's: where a creation function puts
its tensor when no `device=` is named (`zeros(3)`, `tensor([1.0])`, `randn(2)`, the windows). Ops on existing
tensors follow their inputs and never read it, so the per-op path does not pay for it; `from_numpy` stays on the
cpu, sharing the array's memory, as in PyTorch.

A module global, process-wide (PyTorch's is per thread; actorgrad's creation functions run on the caller's thread
and its backward passes never create leaves).
"""

from __future__ import annotations

from typing import Any

from actorgrad.devices import Device, cpu
from actorgrad.devices import device as as_device

__all__ = ["get_default_device", "set_default_device"]

_default_device: Device = cpu


def default_device() -> Device:
    return _default_device


def get_default_device() -> Device:
    """The device creation functions use when given none (the cpu unless set)."""
    return _default_device


def set_default_device(device: Any) -> None:
    """Make `device` (a Device, a name such as 'cuda:0', or None for the cpu) the default for creation
    functions."""
    global _default_device
    _default_device = cpu if device is None else as_device(device)
