"""`autograd.set_multithreading_enabled`, as PyTorch's: backward passes without worker threads.

actorgrad's passes send heavy kernels to worker threads (see `actorgrad.scheduler.workers`); with multithreading
off, every node of a pass runs on the event loop, and a sync call (`loss.backward()`) runs on the calling thread
without a trio run of its own, as PyTorch's engine then runs on the calling thread.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from actorgrad.scheduler.workers import multithreading_enabled

F = TypeVar("F", bound=Callable[..., Any])


def is_multithreading_enabled() -> bool:
    """Whether backward passes started here may run kernels on worker threads."""
    return multithreading_enabled.get()


class set_multithreading_enabled:  # noqa: N801 (PyTorch's name)
    """Turn worker threads for backward passes on or off: as a function call (at once, for this thread and the
    tasks it starts afterwards), as a context manager (the previous mode restored on exit) or as a decorator."""

    def __init__(self, mode: bool) -> None:
        self.prev = multithreading_enabled.get()
        multithreading_enabled.set(mode)
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        multithreading_enabled.set(self.prev)

    def clone(self) -> set_multithreading_enabled:
        return type(self)(self.mode)

    def __call__(self, fn: F) -> F:
        """Each call of `fn` runs with the mode set. As in PyTorch, building the decorator set it already, and
        that stays until changed."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
