"""Grad mode: whether ops record the backward graph.

Held in a ContextVar so that `with no_grad()` in one trio task (or thread) never changes another.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

_grad_enabled: ContextVar[bool] = ContextVar("actorgrad_grad_enabled", default=True)

F = TypeVar("F", bound=Callable)


def is_grad_enabled() -> bool:
    return _grad_enabled.get()


def grad_mode_on(fn: Callable, *args: Any) -> Any:
    """`fn(*args)` with grad mode on: a recorded pass's sums are ops of the graph it records, whatever mode its
    caller is in (PyTorch's engine runs a create_graph pass with grad mode on)."""
    token = _grad_enabled.set(True)
    try:
        return fn(*args)
    finally:
        _grad_enabled.reset(token)


class _GradMode:
    """Context manager and decorator: `mode` holds inside, and the mode from before comes back on the way out."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._tokens: list = []

    def __enter__(self) -> None:
        self._tokens.append(_grad_enabled.set(self.mode))

    def __exit__(self, *exc_info: object) -> None:
        _grad_enabled.reset(self._tokens.pop())

    def __call__(self, fn: F) -> F:
        mode = self.mode  # each call gets its own guard: calls may overlap in several tasks
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args, **kwargs):
                with _GradMode(mode):
                    return await fn(*args, **kwargs)

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _GradMode(mode):
                return fn(*args, **kwargs)

        return wrapper


class set_grad_enabled(_GradMode):
    """Turns graph recording on or off: at once when called alone (`set_grad_enabled(False)` holds until
    `set_grad_enabled(True)`), or only inside when used as a context manager or decorator, as in PyTorch."""

    def __init__(self, mode: bool) -> None:
        super().__init__(mode)
        self._before = _grad_enabled.get()
        _grad_enabled.set(self.mode)

    def __enter__(self) -> None:
        _grad_enabled.set(self.mode)

    def __exit__(self, *exc_info: object) -> None:
        _grad_enabled.set(self._before)  # the mode from before set_grad_enabled(...) switched it

    def __call__(self, fn: F) -> F:
        _grad_enabled.set(self._before)  # a decorator switches the mode only around each call
        return super().__call__(fn)


class no_grad(_GradMode):
    """Ops inside do not record the graph (`with no_grad():` or `@no_grad()`)."""

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(_GradMode):
    """Ops inside record the graph even within `no_grad`."""

    def __init__(self) -> None:
        super().__init__(True)
