"""Worker limits: how many kernels of a device may run at once, and the process settings held while they do.

A kernel goes to a worker thread only when its node's estimated cost is at least `HEAVY_NODE_NS` and there is
other work to overlap it with: a thread round trip through trio costs about 170 µs here, so only kernels of
about half a millisecond or more gain from it. A kernel that spreads over the cores itself (BLAS with several
threads) stays on the event loop: in W2 with free BLAS that ran in 90 ms against 117 ms for two workers of one
BLAS thread each.
"""

from __future__ import annotations

import os
import sys
import threading
from contextvars import ContextVar

from threadpoolctl import ThreadpoolController

HEAVY_NODE_NS = 500_000

_CORES = os.cpu_count() or 1
_num_workers = _CORES


def set_num_workers(n: int) -> None:
    """How many kernels of one CPU pass may run at once (1: no parallelism, every node on the event loop)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"set_num_workers() expects a positive int, got {n!r}")
    global _num_workers
    _num_workers = n


def get_num_workers() -> int:
    return _num_workers


# False inside `actorgrad.autograd.set_multithreading_enabled(False)`: a pass started there sends no kernel to a
# worker thread (and a sync call runs it on the calling thread), whatever its nodes cost. A ContextVar, so it holds
# for the thread (and the trio tasks) that set it, as PyTorch's flag holds for its thread.
multithreading_enabled: ContextVar[bool] = ContextVar("multithreading_enabled", default=True)


_blas_libraries: ThreadpoolController | None = None


def _blas() -> ThreadpoolController:
    """The BLAS libraries loaded in this process (looked up once: scanning them costs milliseconds)."""
    global _blas_libraries
    if _blas_libraries is None:
        _blas_libraries = ThreadpoolController().select(user_api="blas")
    return _blas_libraries


def blas_threads() -> int:
    """How many threads BLAS runs a kernel on right now (1 when none is loaded)."""
    return max((lib.get_num_threads() or 1 for lib in _blas().lib_controllers), default=1)


class OverlapSettings:
    """Process-wide settings held while kernels run on worker threads, restored when the last one stops.

    - BLAS is held at `cores // workers` threads, so overlapping kernels do not oversubscribe the cores.
    - The GIL switch interval is shortened to `SWITCH_INTERVAL_S`. A worker that finishes a kernel wakes the
      event loop (a socket write, which drops the GIL) and then must win the GIL back to start its next
      kernel; at Python's default 5 ms it waited a median 0.4 ms here (W2), at 0.2 ms that wait mostly goes.

    Reference-counted, because both settings are process-wide: concurrent passes (and sync calls from several
    threads) share them.
    """

    SWITCH_INTERVAL_S = 0.0002

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._limiter = None
        self._switch_interval = 0.0

    def acquire(self, workers: int) -> None:
        with self._lock:
            if self._users == 0:
                self._limiter = _blas().limit(limits=max(1, _CORES // workers))
                self._switch_interval = sys.getswitchinterval()
                sys.setswitchinterval(min(self._switch_interval, self.SWITCH_INTERVAL_S))
            self._users += 1

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0:
                self._limiter.restore_original_limits()
                self._limiter = None
                sys.setswitchinterval(self._switch_interval)


overlap_settings = OverlapSettings()


class WorkerSlots:
    """The worker threads of one device: at most `get_num_workers()` kernels at once, shared by all passes.

    While any kernel runs on a worker, the overlap settings (BLAS threads, GIL switch interval) are held.
    """

    __slots__ = ("busy",)

    def __init__(self) -> None:
        self.busy: set[int] = set()

    def try_acquire(self) -> int | None:
        for slot in range(1, get_num_workers() + 1):
            if slot not in self.busy:
                if not self.busy:
                    overlap_settings.acquire(get_num_workers())
                self.busy.add(slot)
                return slot
        return None

    def release(self, slot: int) -> None:
        self.busy.discard(slot)
        if not self.busy:
            overlap_settings.release()
