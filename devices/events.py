"""Waiting for a device event from trio without blocking the event loop.

A device event (a point on a stream) completes on another thread (a stream's worker, or the GPU). Three ways to
await one, measured by `benchmarks/event_wait.py`:

- `callback` (the default): the event calls back on completion, and the callback wakes the trio task through
  `TrioToken.run_sync_soon`. No thread and no spinning; the wake-up is one write to trio's wakeup socket.
- `thread`: a trio worker thread blocks on the event (`trio.to_thread.run_sync`); costs a thread hand-off.
- `poll`: the task sleeps and checks `query()` every `POLL_INTERVAL_S`; latency up to the interval, and CPU
  spent on every check.
"""

from __future__ import annotations

from typing import Any

import trio

POLL_INTERVAL_S = 0.0002
WAIT_MODES = ("callback", "thread", "poll")
wait_mode = ["callback"]


async def wait_async(event: Any, mode: str | None = None) -> None:
    """Return once `event` (with `query()`, `synchronize()` and `add_done_callback(fn)`) has completed."""
    if event.query():
        return
    mode = mode or wait_mode[0]
    if mode == "callback":
        done = trio.Event()
        token = trio.lowlevel.current_trio_token()
        event.add_done_callback(lambda: token.run_sync_soon(done.set, idempotent=True))
        await done.wait()
    elif mode == "thread":
        await trio.to_thread.run_sync(event.synchronize, abandon_on_cancel=True)
    elif mode == "poll":
        while not event.query():
            await trio.sleep(POLL_INTERVAL_S)
    else:
        raise ValueError(f"unknown event wait mode {mode!r}; expected one of {WAIT_MODES}")
