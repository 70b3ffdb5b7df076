"""Device: where a tensor's data lives, which array module computes on it, and its raw array helpers."""

from __future__ import annotations

from types import ModuleType

import numpy as np

from actorgrad.devices.array_ops import ArrayOps


class Device:
    """A place that holds arrays and runs kernels. One instance per device, so identity is equality and a
    device can key per-device scheduling state cheaply."""

    __slots__ = ("type", "index", "xp", "ops")

    def __init__(self, type: str, index: int | None, xp: ModuleType) -> None:
        self.type = type
        self.index = index
        self.xp = xp
        self.ops = ArrayOps(xp)

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"


cpu = Device("cpu", None, np)
