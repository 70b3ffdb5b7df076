"""Grad mode: whether ops record the backward graph.

Held in a ContextVar so that `with no_grad()` in one trio task (or thread) never changes another.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from typing import TypeVar

_grad_enabled: ContextVar[bool] = ContextVar("actorgrad_grad_enabled", default=True)

F = TypeVar("F", bound=Callable)


def is_grad_enabled() -> bool:
    return _grad_enabled.get()


class set_grad_enabled:
    """Context manager and decorator that turns graph recording on or off."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._tokens: list = []

    def __enter__(self) -> None:
        self._tokens.append(_grad_enabled.set(self.mode))

    def __exit__(self, *exc_info: object) -> None:
        _grad_enabled.reset(self._tokens.pop())

    def __call__(self, fn: F) -> F:
        mode = self.mode
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args, **kwargs):
                with set_grad_enabled(mode):
                    return await fn(*args, **kwargs)

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


class no_grad(set_grad_enabled):
    """Ops inside do not record the graph (`with no_grad():` or `@no_grad()`)."""

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """Ops inside record the graph even within `no_grad`."""

    def __init__(self) -> None:
        super().__init__(True)
