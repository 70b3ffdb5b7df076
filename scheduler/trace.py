"""The execution trace: which node ran when, where, and for which pass.

`with actorgrad.profile() as prof:` records every node the engine runs inside the block, and each pass's span.
The recording list is picked up once per pass; with profiling off the engine pays one `is not None` check per
node. `prof.export_chrome_trace(path)` writes it for chrome://tracing and Perfetto.
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
    # On the dispatcher a node's span covers its run and the delivery of its gradients to the next nodes' mailboxes,
    # and starts where the node before it in the same chain ended; on a worker, the kernel alone.
    start_ns: int
    end_ns: int
    node_id: int = 0  # id() of the node: tells apart nodes with one sequence_nr (AccumulateGrad)
    # node_id of each consumer on ANOTHER device this node sent a gradient to: drawn as flow arrows. Filled only
    # for passes that span several devices, so single-device tracing pays nothing for it.
    sends: tuple[int, ...] = ()


class PassEvent(NamedTuple):
    """One backward pass (GraphTask) from the start of its dispatch to its end."""

    graph_task: int
    depth: int
    start_ns: int
    end_ns: int


class WaitEvent(NamedTuple):
    """A wait on a cross-device event (a stream or copy) on one track; exported as its own slice."""

    what: str
    device: str
    worker: int
    graph_task: int
    start_ns: int
    end_ns: int


class TraceLog(list):
    """What the engine records: the node events (the list itself, as TraceEvent's fields in a plain tuple with the
    device not yet a string), with the passes and event waits beside them."""

    def __init__(self) -> None:
        super().__init__()
        self.passes: list[PassEvent] = []
        self.waits: list[WaitEvent] = []


active_trace: ContextVar[TraceLog | None] = ContextVar("actorgrad_active_trace", default=None)


class profile:
    """Context manager that records the nodes the engine runs inside it; `events` lists them as TraceEvents."""

    def __init__(self) -> None:
        self._log = TraceLog()
        self.passes = self._log.passes
        self.waits = self._log.waits
        self._token = None

    @property
    def events(self) -> list[TraceEvent]:
        return [TraceEvent(r[0], r[1], str(r[2]), *r[3:]) for r in self._log]

    def __enter__(self) -> profile:
        self._token = active_trace.set(self._log)
        return self

    def __exit__(self, *exc_info: object) -> None:
        active_trace.reset(self._token)

    def export_chrome_trace(self, path: str) -> None:
        """Write the trace as Chrome trace / Perfetto JSON: one track per device and worker."""
        from actorgrad.profiler.chrome import write_chrome_trace

        write_chrome_trace(self, path)
