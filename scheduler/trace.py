"""The execution trace: which node ran when, where, and for which pass.

`with actorgrad.profile() as prof:` records every node the engine runs inside the block, and each pass's span.
The recording list is picked up once per pass; with profiling off the engine pays one `is not None` check per
node. `prof.export_chrome_trace(path)` writes it for chrome://tracing and Perfetto. Labelled ranges that user
code opens with `actorgrad.profiler.record_function(name)` are kept beside the nodes (the engine never looks
at them), and `prof.key_averages()` sums both up by name.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, NamedTuple


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


class RangeEvent(NamedTuple):
    """A range labelled by `record_function`, on the host thread that opened it (`thread`: 1, 2 ... in order of
    first appearance in the trace)."""

    name: str
    thread: int
    start_ns: int
    end_ns: int


class TraceLog(list):
    """What the engine records: the node events (the list itself, as TraceEvent's fields in a plain tuple with the
    device not yet a string), with the passes and event waits beside them, and the user's labelled ranges."""

    def __init__(self) -> None:
        super().__init__()
        self.passes: list[PassEvent] = []
        self.waits: list[WaitEvent] = []
        self.ranges: list[RangeEvent] = []
        self.threads: dict[int, int] = {}  # threading.get_ident() -> the thread's number among the ranges'


active_trace: ContextVar[TraceLog | None] = ContextVar("actorgrad_active_trace", default=None)


class profile:
    """Context manager that records the nodes the engine runs inside it; `events` lists them as TraceEvents.
    With `enabled=False` it records nothing (PyTorch's switch, for code that profiles on a flag)."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._log = TraceLog()
        self.passes = self._log.passes
        self.waits = self._log.waits
        self.ranges = self._log.ranges
        self._token = None

    @property
    def events(self) -> list[TraceEvent]:
        return [TraceEvent(r[0], r[1], str(r[2]), *r[3:]) for r in self._log]

    def __enter__(self) -> profile:
        if self.enabled:
            self._token = active_trace.set(self._log)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.enabled:
            active_trace.reset(self._token)

    def key_averages(self) -> Any:
        """The nodes and labelled ranges summed up by name: an EventList, whose `table()` prints them."""
        from actorgrad.profiler.events import key_averages

        return key_averages(self)

    def export_chrome_trace(self, path: str) -> None:
        """Write the trace as Chrome trace / Perfetto JSON: one track per device and worker."""
        from actorgrad.profiler.chrome import write_chrome_trace

        write_chrome_trace(self, path)
