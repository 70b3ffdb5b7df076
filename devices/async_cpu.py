"""A CPU device with asynchronous streams, for testing the stream and event path without a GPU.

Each stream is a worker thread that runs its queued kernels (callables) in order, as a CUDA stream does; an
Event marks a point on a stream and completes when the stream gets there. `stream.wait_event(e)` makes a stream
wait for another stream's event before its later kernels (device-side: the host does not wait). A stream's
`delay_s` sleeps before each kernel, which widens the window in which a missing wait reads unwritten data.
Arrays are numpy arrays; a kernel's output arrays are allocated when it is queued and filled when it runs.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np


class AsyncEvent:
    """A point on a stream: complete once the stream has run every kernel queued before `record()`."""

    __slots__ = ("_done", "_callbacks", "_lock", "stream")

    def __init__(self) -> None:
        self._done = threading.Event()
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self.stream: AsyncStream | None = None

    def record(self, stream: AsyncStream) -> AsyncEvent:
        self.stream = stream
        stream.enqueue(self._complete)
        return self

    def _complete(self) -> None:
        with self._lock:
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def query(self) -> bool:
        return self._done.is_set()

    def synchronize(self) -> None:
        """Block this thread until the event completes."""
        self._done.wait()

    def add_done_callback(self, callback: Callable[[], None]) -> None:
        """Call `callback` (on the stream's thread) once the event completes; now if it already has."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback()


class AsyncStream:
    """An in-order kernel queue run by a daemon thread of its own."""

    issues_inline = False  # launch() returns before the kernel runs: its outputs must be allocated up front

    def __init__(self, device: Any, delay_s: float = 0.0, default: bool = False) -> None:
        self.device = device
        self.delay_s = delay_s
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self.error: BaseException | None = None
        self.started_ns: int | None = None  # when the running kernel started, its injected delay included
        self._thread = threading.Thread(target=self._run, name=f"stream {device}", daemon=True)
        self._thread.start()

    def enqueue(self, kernel: Callable[[], None]) -> None:
        self._queue.put(kernel)

    def launch(self, kernel: Callable[[], None]) -> None:
        """Queue a compute kernel: it runs after the injected delay, if any."""
        delay = self.delay_s
        if delay:
            def delayed() -> None:
                self.started_ns = time.perf_counter_ns()  # the delay stands for the kernel's work: it counts
                time.sleep(delay)
                kernel()

            self._queue.put(delayed)
        else:
            self._queue.put(kernel)

    def wait_event(self, event: AsyncEvent) -> None:
        """Later kernels of this stream wait until `event` has completed (the host does not wait)."""
        self._queue.put(event.synchronize)

    def record_event(self) -> AsyncEvent:
        return AsyncEvent().record(self)

    def synchronize(self) -> None:
        self.record_event().synchronize()

    def _run(self) -> None:
        get = self._queue.get
        with np.errstate(all="ignore"):  # as PyTorch's kernels, a 1/0 gives inf without a warning
            while True:
                kernel = get()
                try:
                    kernel()
                except BaseException as error:  # noqa: BLE001 - a kernel reports its own errors; keep it alive
                    self.error = error

    def __repr__(self) -> str:
        return f"<AsyncStream {self.device} at {id(self):#x}>"
