"""Anomaly mode: nodes remember the forward call that made them, and a backward pass checks gradients for NaN.

The mode is a ContextVar, like grad mode, so turning it on in one trio task (or thread) leaves the others
alone. While it is off, recording a node costs one ContextVar read. This module imports nothing else of
actorgrad: `actorgrad.node` reads the mode when it makes each node.
"""

from __future__ import annotations

import os
import traceback
import warnings
from contextvars import ContextVar
from typing import Any, NamedTuple


class AnomalyMode(NamedTuple):
    check_nan: bool


# None while off.
_anomaly_mode: ContextVar[AnomalyMode | None] = ContextVar("actorgrad_anomaly_mode", default=None)

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FORWARD_STACK_KEY = "traceback_"  # PyTorch's key in `Node.metadata`


def is_anomaly_enabled() -> bool:
    return _anomaly_mode.get() is not None


def is_anomaly_check_nan_enabled() -> bool:
    mode = _anomaly_mode.get()
    return mode is not None and mode.check_nan


def _warn_enabled() -> None:
    warnings.warn(
        "Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled for "
        "debugging.",
        stacklevel=3,
    )


class detect_anomaly:
    """Context manager that turns anomaly mode on for the code inside it, in this task only.

    Nodes recorded inside keep the stack of the forward call that made them, and any error in their backward
    carries it; with `check_nan`, a pass started inside raises as soon as a node returns a NaN gradient.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self._tokens: list = []
        _warn_enabled()

    def __enter__(self) -> None:
        self._tokens.append(_anomaly_mode.set(AnomalyMode(self.check_nan)))

    def __exit__(self, *exc_info: object) -> None:
        _anomaly_mode.reset(self._tokens.pop())


def _mode(enabled: bool, check_nan: bool) -> AnomalyMode | None:
    """The mode `set_anomaly_enabled(enabled, check_nan)` sets, after PyTorch's checks of its arguments."""
    for position, (name, value) in enumerate((("enabled", enabled), ("check_nan", check_nan)), 1):
        if value.__class__ is not bool:
            raise TypeError(f"set_anomaly_enabled(): argument '{name}' (position {position}) must be bool, not "
                            f"{type(value).__name__}")
    return AnomalyMode(check_nan) if enabled else None


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly mode on or off in this context from the call on (`torch.set_anomaly_enabled`)."""
    _anomaly_mode.set(_mode(enabled, check_nan))


class set_detect_anomaly:
    """Turns anomaly mode on or off, from the call on (as PyTorch's does) or for a `with` block."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._token = _anomaly_mode.set(_mode(mode, check_nan))

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info: object) -> None:
        _anomaly_mode.reset(self._token)


def forward_stack() -> list[str]:
    """The Python stack of the op being recorded, formatted as `traceback.format_stack` does, without the
    frames inside actorgrad at its end (the user's call is the last frame)."""
    frames = traceback.extract_stack()
    end = len(frames)
    while end > 1 and frames[end - 1].filename.startswith(_PACKAGE_DIR):
        end -= 1
    return traceback.format_list(frames[:end])


def note_forward_stack(error: BaseException, node: Any) -> None:
    """With anomaly mode on during backward (as PyTorch checks): warn with the forward stack of the node whose
    backward failed, before the error is raised, and add it to the error; or say that the node kept none because
    its forward ran outside anomaly mode."""
    if _anomaly_mode.get() is None:
        return
    metadata = node._metadata
    if metadata is not None and FORWARD_STACK_KEY in metadata:
        stack = "".join(metadata[FORWARD_STACK_KEY])
        message = f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
        warnings.warn(message + stack, UserWarning, stacklevel=2)
        error.add_note(message + stack.rstrip())
    else:
        warnings.warn(f"Error detected in {node.name()}. No forward pass information available. Enable detect "
                      "anomaly during forward pass for more information.", UserWarning, stacklevel=2)
