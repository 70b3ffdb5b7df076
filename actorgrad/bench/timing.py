"""Timing helpers: wall time with the collector off, inside or outside trio, and a gradient check."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import trio

import actorgrad as ag

CORES = os.cpu_count() or 1
DEFAULT_WORKERS = ag.get_num_workers()  # read when the workloads load: after `--threads` has set it
Engines = dict[str, Callable[[], float]]
Workload = tuple[Engines, Callable[[], float]]  # timed engines, and a gradient check returning its max error


class Timer:
    """Wall time of a region, with the garbage collector off inside it."""

    def __enter__(self) -> Timer:
        gc.collect()
        gc.disable()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = time.perf_counter() - self.start
        gc.enable()


def timed(fn: Callable[[], Any]) -> float:
    """Seconds of one call of `fn`."""
    with Timer() as t:
        fn()
    return t.elapsed


def timed_trio(body: Callable[[], Awaitable[Any]]) -> float:
    """Seconds of `await body()`, measured inside trio.run (starting the loop is not counted)."""

    async def main() -> float:
        with Timer() as t:
            await body()
        return t.elapsed

    return trio.run(main)


def check(what: str, got: np.ndarray, ref: np.ndarray, tol: float = 1e-6) -> float:
    """Max |got - ref| / max |ref|; exits loudly when actorgrad's gradient does not match the floor."""
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    err = float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300))
    if got.shape != ref.shape or not np.all(np.isfinite(got)) or not np.any(ref) or err > tol:
        raise SystemExit(f"GRADIENT MISMATCH in {what}: shape {got.shape} vs {ref.shape}, error {err:.3g}")
    return err



def foreign_cpu() -> float:
    """CPU seconds the whole machine spent busy minus this process's own (Linux; 0 elsewhere)."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:9]]
    except OSError:
        return 0.0
    own = os.times()
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK") - own.user - own.system

