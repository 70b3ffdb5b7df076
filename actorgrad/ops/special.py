"""The error function (erf, erfc) and its gradient rules; the kernel is `actorgrad.devices.erf`."""

from __future__ import annotations

import math
from typing import Any

from actorgrad.devices.erf import erf as erf_kernel
from actorgrad.devices.erf import erfc as erfc_kernel
from actorgrad.ops.operands import floating
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor

__all__ = ["erf", "erfc"]

TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)

ERF = Rule("ErfBackward0", (("self",), lambda ops, g, self: g * TWO_OVER_SQRT_PI * ops.exp(-self * self)))
ERFC = Rule("ErfcBackward0", (("self",), lambda ops, g, self: -g * TWO_OVER_SQRT_PI * ops.exp(-self * self)))


def _apply(rule: Rule, kernel: Any, input: Tensor) -> Tensor:
    """The kernel runs in float64 whatever the input's dtype, then rounds to the op's floating dtype."""
    x = input._data
    return record(rule, kernel(input._device.xp, x).astype(floating(x.dtype), copy=False), (input,))


def erf(input: Tensor) -> Tensor:
    """The error function, 2 / sqrt(pi) times the integral of exp(-t**2) from 0 to input."""
    return _apply(ERF, erf_kernel, input)


def erfc(input: Tensor) -> Tensor:
    """1 - erf(input), without the cancellation for large inputs."""
    return _apply(ERFC, erfc_kernel, input)


METHODS = {"erf": erf, "erfc": erfc}
