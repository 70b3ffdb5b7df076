"""Chrome trace / Perfetto JSON of a profile.

One process (pid) per device, one thread (tid) per track on it: 0 is the device's dispatcher (the event loop),
1..n its worker thread slots. Each executed node is a complete slice ("ph": "X"); each pass is a slice on the
"passes" process, one track per graph task, so nested (reentrant) passes sit on their own rows; gradients that
cross devices are flow arrows from the producer's slice to the consumer's; event waits are slices of category
"wait" on the track that waited. Ranges labelled by `record_function` are slices of category "user_annotation" on
a "host threads" process, one track per thread.
"""

from __future__ import annotations

import json
from typing import Any

PASSES_PID = 0  # device processes are numbered from 1


def _us(ns: int, origin: int) -> float:
    return (ns - origin) / 1000


def track_name(worker: int) -> str:
    return "dispatcher" if worker == 0 else f"worker {worker}"


def chrome_trace(prof: Any) -> dict[str, Any]:
    """The trace as a Chrome trace JSON object (`traceEvents` plus `displayTimeUnit`)."""
    nodes, passes, waits = list(prof.events), list(prof.passes), list(prof.waits)
    ranges = list(getattr(prof, "ranges", ()))
    starts = [e.start_ns for e in nodes] + [p.start_ns for p in passes] + [w.start_ns for w in waits]
    starts += [r.start_ns for r in ranges]
    origin = min(starts, default=0)
    devices = sorted({e.device for e in nodes} | {w.device for w in waits})
    pids = {device: index for index, device in enumerate(devices, 1)}
    out: list[dict[str, Any]] = [_meta("process_name", PASSES_PID, 0, "passes")]
    tracks = {(e.device, e.worker) for e in nodes} | {(w.device, w.worker) for w in waits}
    for device, pid in pids.items():
        out.append(_meta("process_name", pid, 0, f"device {device}"))
    for device, worker in sorted(tracks):
        out.append(_meta("thread_name", pids[device], worker, track_name(worker)))
    for p in passes:
        out.append(_meta("thread_name", PASSES_PID, p.graph_task, f"graph task {p.graph_task}"))
        out.append({"ph": "X", "cat": "pass", "name": f"backward pass {p.graph_task}", "pid": PASSES_PID,
                    "tid": p.graph_task, "ts": _us(p.start_ns, origin), "dur": (p.end_ns - p.start_ns) / 1000,
                    "args": {"graph_task": p.graph_task, "reentrant_depth": p.depth}})
    for e in nodes:
        out.append({"ph": "X", "cat": "node", "name": e.name, "pid": pids[e.device], "tid": e.worker,
                    "ts": _us(e.start_ns, origin), "dur": (e.end_ns - e.start_ns) / 1000,
                    "args": {"name": e.name, "sequence_nr": e.sequence_nr, "graph_task": e.graph_task,
                             "reentrant_depth": e.depth}})
    for w in waits:
        out.append({"ph": "X", "cat": "wait", "name": f"wait {w.what}", "pid": pids[w.device], "tid": w.worker,
                    "ts": _us(w.start_ns, origin), "dur": (w.end_ns - w.start_ns) / 1000,
                    "args": {"graph_task": w.graph_task}})
    if ranges:
        host = len(pids) + 1
        out.append(_meta("process_name", host, 0, "host threads"))
        for thread in sorted({r.thread for r in ranges}):
            out.append(_meta("thread_name", host, thread, f"thread {thread}"))
        out += [{"ph": "X", "cat": "user_annotation", "name": r.name, "pid": host, "tid": r.thread,
                 "ts": _us(r.start_ns, origin), "dur": (r.end_ns - r.start_ns) / 1000} for r in ranges]
    out += _flows(nodes, pids, origin)
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def _flows(nodes: list, pids: dict, origin: int) -> list[dict[str, Any]]:
    """One arrow per gradient sent to another device: from the end of the sender to the start of the receiver."""
    by_id = {(e.graph_task, e.node_id): e for e in nodes}
    flows: list[dict[str, Any]] = []
    for e in nodes:
        for consumer_id in e.sends:
            consumer = by_id.get((e.graph_task, consumer_id))
            if consumer is None:
                continue
            flow = {"cat": "gradient", "name": "gradient", "id": len(flows) // 2 + 1}
            flows.append({**flow, "ph": "s", "pid": pids[e.device], "tid": e.worker,
                          "ts": _us(e.end_ns, origin) - 0.001})
            flows.append({**flow, "ph": "f", "bp": "e", "pid": pids[consumer.device], "tid": consumer.worker,
                          "ts": _us(consumer.start_ns, origin)})
    return flows


def _meta(kind: str, pid: int, tid: int, name: str) -> dict[str, Any]:
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": {"name": name}}


def write_chrome_trace(prof: Any, path: str) -> None:
    with open(path, "w") as f:
        json.dump(chrome_trace(prof), f)
