"""cupy.cuda for the stand-in: one device, streams as context managers, events that complete a millisecond after
they are recorded (so the awaiting paths run), host functions called from a timer thread."""

from __future__ import annotations

import threading
import time
from typing import Any

_current = threading.local()


def _stack() -> list:
    if not hasattr(_current, "stack"):
        _current.stack = []
    return _current.stack


def is_available() -> bool:
    return True


class runtime:  # noqa: N801 - CuPy's name
    @staticmethod
    def getDeviceCount() -> int:  # noqa: N802 - CuPy's name
        return 1

    @staticmethod
    def getDevice() -> int:  # noqa: N802 - CuPy's name
        return getattr(_current, "device", 0)

    @staticmethod
    def getDeviceProperties(device: int) -> dict:  # noqa: N802 - CuPy's name
        return {"name": b"CuPy stand-in"}


class Device:
    def __init__(self, device: int = 0) -> None:
        self.id = device

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def use(self) -> Device:
        _current.device = self.id
        return self


class Stream:
    null: Stream

    def __init__(self, null: bool = False, non_blocking: bool = False, ptr: int = 0) -> None:
        self.non_blocking = non_blocking
        self.ptr = 0 if null else id(self)

    def __enter__(self) -> Stream:  # as CuPy: a per-thread stack, whose top is current again at exit
        _stack().append(self)
        _current.stream = self
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = _stack()
        stack.pop()
        _current.stream = stack[-1] if stack else None

    def use(self) -> Stream:  # as CuPy: current now, the stack untouched
        _current.stream = self
        return self

    def wait_event(self, event: Event) -> None:
        if not isinstance(event, Event):
            raise TypeError(f"wait_event takes a cupy.cuda.Event, got {type(event).__name__}")

    def synchronize(self) -> None:
        pass

    def launch_host_func(self, callback: Any, arg: Any) -> None:
        threading.Timer(0.0002, callback, (arg,)).start()


Stream.null = Stream(null=True)


def get_current_stream(device_id: int = -1) -> Stream:
    return getattr(_current, "stream", None) or Stream.null


class Event:
    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False) -> None:
        self._recorded = None

    def record(self, stream: Stream | None = None) -> None:
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"record takes a cupy.cuda.Stream, got {type(stream).__name__}")
        self._recorded = time.perf_counter()

    @property
    def done(self) -> bool:
        return self._recorded is not None and time.perf_counter() - self._recorded > 0.001

    def synchronize(self) -> None:
        pass
