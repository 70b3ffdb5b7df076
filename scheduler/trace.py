"""The execution trace: which node ran when, where, and for which pass.

`with actorgrad.profile() as prof:` records every node the engine runs inside the block. The recording list
is picked up once per pass; with profiling off the engine pays one `is not None` check per node.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import NamedTuple


class TraceEvent(NamedTuple):
    name: str
    sequence_nr: int
    device: str
    depth: int
    graph_task: int
    worker: int  # 0: run on the device's dispatcher (the event loop); 1..n: a worker thread slot
    start_ns: int
    end_ns: int


active_trace: ContextVar[list | None] = ContextVar("actorgrad_active_trace", default=None)


class profile:
    """Context manager that records the nodes the engine runs inside it into `events`."""

    def __init__(self) -> None:
        self.events: list[TraceEvent] = []
        self._token = None

    def __enter__(self) -> profile:
        self._token = active_trace.set(self.events)
        return self

    def __exit__(self, *exc_info: object) -> None:
        active_trace.reset(self._token)
