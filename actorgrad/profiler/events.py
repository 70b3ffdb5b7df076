"""Labelled ranges (`record_function`) and a profile's events summed up by name (`key_averages`), as PyTorch's
profiler shows them.

A range costs nothing when no profile is active: entering it reads one ContextVar. Times are host times, in
microseconds as PyTorch prints them. A node's self time is its span less the spans of the events that run
inside it on the same track (the nodes of a pass nested in it, a checkpoint's rerun); a range's self time is its
span less the ranges nested in it on the same thread.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from contextlib import ContextDecorator
from time import perf_counter_ns
from typing import Any

from actorgrad.scheduler.trace import RangeEvent, TraceLog, active_trace

__all__ = ["EventList", "FunctionEventAvg", "key_averages", "record_function"]


class record_function(ContextDecorator):
    """Label what runs inside (a block, or each call of a decorated function) in the active profile: the range
    shows in the exported Chrome trace and in `key_averages()`. `args` is kept as PyTorch's, for its callers."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._open: list[tuple[TraceLog, int]] = []

    def __enter__(self) -> record_function:
        log = active_trace.get()
        if log is not None:
            self._open.append((log, perf_counter_ns()))
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._open:
            log, start = self._open.pop()
            threads = log.threads
            thread = threads.setdefault(threading.get_ident(), len(threads) + 1)
            log.ranges.append(RangeEvent(self.name, thread, start, perf_counter_ns()))

    def __call__(self, fn: Callable) -> Callable:  # a fresh instance per call: calls may overlap on threads
        @functools.wraps(fn)
        def labelled(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return labelled


class FunctionEventAvg:
    """One name's events: how many, their total and self times and the average (microseconds)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time:.3f}us count={self.count}>")


SORT_KEYS = ("count", "cpu_time", "cpu_time_total", "self_cpu_time_total")


class EventList(list):
    """FunctionEventAvg rows, the most self time first."""

    def table(self, sort_by: str | None = None, row_limit: int = 100, header: str | None = None) -> str:
        """The rows as PyTorch's table (Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg,
        # of Calls), the largest `sort_by` (one of SORT_KEYS) first, at most `row_limit` of them (-1: all)."""
        rows = list(self)
        if sort_by is not None:
            if sort_by not in SORT_KEYS:
                raise AttributeError(f"'FunctionEventAvg' object has no attribute '{sort_by}'")
            rows.sort(key=lambda e: getattr(e, sort_by), reverse=True)
        if row_limit >= 0:
            rows = rows[:row_limit]
        total = sum(e.self_cpu_time_total for e in self) or 1.0
        width = max([len("Name"), *(len(e.key) for e in rows)]) + 2
        titles = ("Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls")
        rule = "-" * width + "  " + "  ".join("-" * 12 for _ in titles) + "  "
        lines = [header] if header else []
        lines += [rule, "Name".rjust(width) + "  " + "  ".join(t.rjust(12) for t in titles) + "  ", rule]
        for e in rows:
            cells = (f"{100 * e.self_cpu_time_total / total:.2f}%", _time(e.self_cpu_time_total),
                     f"{100 * e.cpu_time_total / total:.2f}%", _time(e.cpu_time_total), _time(e.cpu_time),
                     str(e.count))
            lines.append(e.key.rjust(width) + "  " + "  ".join(c.rjust(12) for c in cells) + "  ")
        lines += [rule, f"Self CPU time total: {_time(sum(e.self_cpu_time_total for e in self))}", ""]
        return "\n".join(lines)


def _time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def key_averages(prof: Any) -> EventList:
    """`prof`'s nodes and ranges summed up by name."""
    spans = [(e.name, ("node", e.device, e.worker), e.start_ns, e.end_ns) for e in prof.events]
    spans += [(r.name, ("range", r.thread), r.start_ns, r.end_ns) for r in prof.ranges]
    by_name: dict[str, FunctionEventAvg] = {}
    for name, _, start, end, inner in _with_inner_time(spans):
        row = by_name.get(name)
        if row is None:
            row = by_name[name] = FunctionEventAvg(name)
        row.count += 1
        row.cpu_time_total += (end - start) / 1e3
        row.self_cpu_time_total += (end - start - inner) / 1e3
    return EventList(sorted(by_name.values(), key=lambda e: e.self_cpu_time_total, reverse=True))


def _with_inner_time(spans: list[tuple]) -> list[tuple]:
    """Each span with the time of its direct children on its track (spans that lie inside it, not in a child)."""
    out = []
    spans = sorted(spans, key=lambda s: (s[1], s[2], -s[3]))
    open_spans: list[list] = []  # the enclosing spans on the current track: [span, inner time]
    track = None
    for span in spans:
        if span[1] != track:
            out += [(*s, inner) for s, inner in open_spans]
            open_spans, track = [], span[1]
        while open_spans and open_spans[-1][0][3] <= span[2]:
            s, inner = open_spans.pop()
            out.append((*s, inner))
        if open_spans:
            open_spans[-1][1] += span[3] - span[2]
        open_spans.append([span, 0])
    out += [(*s, inner) for s, inner in open_spans]
    return out
