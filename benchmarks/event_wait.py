"""Awaiting a device event from trio: wake-up latency and CPU use of each way (actorgrad.devices.events).

Latency: a kernel on an async_cpu stream stamps the time it completes; the awaiting trio task stamps the time it
wakes; the median and 95th percentile of the difference over many events. CPU: the process's CPU time while
awaiting one event that completes after `LONG_WAIT_S` (a stand-in for a GPU at work), as a share of one core.
Run with `python benchmarks/event_wait.py`.
"""

from __future__ import annotations

import statistics
import time

import trio

from actorgrad.devices import device
from actorgrad.devices.events import WAIT_MODES, wait_async

EVENTS = 300
LONG_WAIT_S = 0.3


async def latencies(stream, mode: str) -> list[float]:
    out = []
    for _ in range(EVENTS):
        done: list[int] = []
        stream.launch(lambda done=done: (time.sleep(0.0005), done.append(time.perf_counter_ns())))
        await wait_async(stream.record_event(), mode)
        woke = time.perf_counter_ns()
        out.append((woke - done[0]) / 1000)
    return out


async def cpu_share(stream, mode: str) -> float:
    stream.launch(lambda: time.sleep(LONG_WAIT_S))
    event = stream.record_event()
    cpu, wall = time.process_time(), time.perf_counter()
    await wait_async(event, mode)
    return (time.process_time() - cpu) / (time.perf_counter() - wall)


async def main() -> None:
    stream = device("async_cpu:0").new_stream()
    print(f"{'mode':<10}{'median us':>12}{'p95 us':>10}{'cpu (cores)':>14}")
    for mode in WAIT_MODES:
        await latencies(stream, mode)  # warm up (thread pools, code paths)
        lat = sorted(await latencies(stream, mode))
        share = await cpu_share(stream, mode)
        print(f"{mode:<10}{statistics.median(lat):>12.1f}{lat[int(0.95 * len(lat))]:>10.1f}{share:>14.3f}")


if __name__ == "__main__":
    trio.run(main)
