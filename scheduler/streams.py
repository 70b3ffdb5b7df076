"""The part of a pass that runs on streamed devices (CUDA, async_cpu): kernels queued on streams, events that
travel with the gradients they make, and the waits that keep a consumer from reading a gradient early.

A node on a streamed device is not run by its dispatcher: its kernel is queued on the stream its forward ran on
(the device's current stream when it was recorded; for other nodes, the current stream at backward). On CUDA the
node's Python runs at once and its CuPy kernels queue on the stream, so the arrays it returns are its outputs, to
be written in stream order, as in PyTorch. On a stream with its own thread (async_cpu) the dispatcher gets back at
once arrays the kernel will fill. Each output carries its producer's stream (`task.events`, keyed by the array's
id) until each consumer has taken it, and an event recorded after the kernel when a consumer on another stream or the
host is expected: a consumer on another stream waits for it device-side (`stream.wait_event`), a host consumer
awaits it from trio; one on the same stream needs nothing, stream order keeps it right. A consumer that meets an
output with no event but is not on its stream records one on the producer's stream then (later than needed, never
too early). A gradient that several producers send to one slot is summed by its consumer after the waits (a
`PendingSum`), never on the host while its parts may be unwritten.

Passes on the CPU alone never come here: the dispatcher tests `task.streamed` once per node it pops.
"""

from __future__ import annotations

from contextlib import contextmanager
from time import perf_counter_ns
from typing import Any

import trio

from actorgrad.devices.events import wait_async
from actorgrad.grad_mode import grad_mode_on
from actorgrad.scheduler.input_buffer import InputBuffer
from actorgrad.scheduler.trace import WaitEvent

# Test-only switch: with waits off, a consumer reads a cross-stream gradient without waiting for its event.
waits_enabled = [True]


@contextmanager
def waits_disabled():
    """Skip every cross-stream wait inside the block: for the test that proves the waits matter."""
    waits_enabled[0] = False
    try:
        yield
    finally:
        waits_enabled[0] = True


class PendingSum(list):
    """The gradients several producers sent to one slot, in sender order, summed only when their consumer runs."""

    __slots__ = ()

    def total(self) -> Any:
        out = self[0] + self[1]
        for grad in self[2:]:
            out = out + grad
        return out


class DeferredInputBuffer(InputBuffer):
    """A mailbox of a pass that uses streams: several messages to one slot come out as a PendingSum."""

    __slots__ = ()

    def grads(self) -> list:
        out = []
        for held in self.messages:
            if held is None or held.__class__ is tuple:
                out.append(held if held is None else held[1])
            else:
                held.sort(key=lambda message: message[0])
                out.append(PendingSum(grad for _, grad in held))
        return out


def resolved(grads: list) -> list:
    return [g.total() if g.__class__ is PendingSum else g for g in grads]


def _carried(task: Any, grads: list, consumer: Any) -> list:
    """The events `consumer` (a stream, or None for the host) must wait for before reading `grads`: one per
    gradient still carried from another stream (given out once per consumer edge)."""
    events = task.events
    found = []
    for g in grads:
        for part in (g if g.__class__ is PendingSum else (g,)):
            entry = events.get(id(part))
            if entry is None:
                continue
            entry[3] -= 1  # one consumer fewer to give it to (a node may send one array along several edges)
            if not entry[3]:
                del events[id(part)]
            if entry[1] is not consumer:
                found.append(entry[2] or entry[1].record_event())
                task.crossed.append(part)  # until the pass ends: see synchronize_streams
    return found


async def run_streamed(task: Any, node: Any, grads: list, device: Any, worker: int = 0) -> None:
    """Run (or, on a streamed device, queue) one node of a pass that uses streams, and pass on its gradients."""
    try:
        outputs = await streamed_outputs(task, node, grads, device, worker)
        task.finish_node(node, outputs)
    except Exception as error:
        task.fail(node, error)


async def streamed_outputs(task: Any, node: Any, grads: list, device: Any, worker: int = 0) -> Any:
    """Run one node of a pass that uses streams, after awaiting the events its gradients carry; on a streamed
    device, queue its kernel instead. Its outputs: on a stream, the arrays the kernel will fill. A host node
    given a `worker` slot runs on a worker thread (the caller holds the slot)."""
    hooks = node.hooks
    awaits = hooks is not None and hooks.awaits
    if device.streams is not None and task.ops is None:
        if not (awaits or node.async_backward):
            return _launch(task, node, grads, device)
        _follow_forward_stream(node, device)  # a node that awaits runs here, on the event loop
    start = perf_counter_ns()  # the host (a recorded backward runs there too)
    await _await_events(task, _carried(task, grads, None), device)
    grads = resolved(grads) if task.ops is None else grad_mode_on(resolved, grads)
    if awaits:
        outputs = await task.apply_node_async(node, grads)
    elif worker:
        outputs = await trio.to_thread.run_sync(task.apply_node, node, grads)
    else:
        outputs = task.apply_node(node, grads)
    if outputs:  # an async custom backward delivers later, through carry_outputs too
        carry_outputs(task, node, outputs)
    if task.trace is not None and outputs is not None:
        _record_node(task, node, device, start, worker)
    return outputs


def _follow_forward_stream(node: Any, device: Any) -> None:
    """A node whose backward awaits runs on the event loop, so its kernels queue on the device's current stream
    (CuPy's is one per thread), not on its forward's: that stream waits for the forward's first."""
    stream = getattr(node, "stream", None)
    current = device.current_stream()
    if stream is not None and stream is not current and stream.issues_inline:
        current.wait_event(stream.record_event())


def carry_outputs(task: Any, node: Any, outputs: Any) -> None:
    """Outputs computed on the host for a node of a streamed device whose kernels queue as they are issued (CUDA):
    they are written on the device's current stream, and carry it (and an event, where it crosses) like a
    launched node's."""
    device = node.device
    if device.streams is not None and device.streams.issues_inline and task.ops is None:
        _carry(task, node, outputs, device.current_stream())


async def _await_events(task: Any, events: list, device: Any) -> None:
    if not waits_enabled[0]:
        return
    for event in events:
        if event.query():
            continue
        start = perf_counter_ns()
        await wait_async(event)
        if task.trace is not None:
            task.trace.waits.append(
                WaitEvent(f"event of {event.stream.device}", str(device), 0, task.id, start, perf_counter_ns())
            )


def _launch(task: Any, node: Any, grads: list, device: Any) -> list | None:
    """Queue `node`'s kernel on its stream (the forward's, else the device's current one); return its outputs,
    each carrying the stream that writes it."""
    stream = _stream_of(node, device)
    task.streams_used.add(stream)
    carried = _carried(task, grads, stream)
    if waits_enabled[0]:
        for event in carried:
            stream.wait_event(event) if task.trace is None else _traced_wait(task, stream, event)
    runs = task.run is None or node in task.run  # else it is only visited, to capture a gradient
    if stream.issues_inline:
        outputs = _issue(task, node, grads, stream, device)
    else:
        outputs = _queue(task, node, grads, stream, device, runs)
    if not runs or outputs is None:
        return None
    _carry(task, node, outputs, stream)
    return outputs


def _carry(task: Any, node: Any, outputs: Any, stream: Any) -> None:
    """Each output carries the stream that writes it, and an event after it where a consumer reads elsewhere,
    until each of the consumers it is sent to has taken it."""
    event = None
    events = task.events
    for out, (target, _) in zip(outputs, node.next_functions):
        if out is not None and target is not None:
            if event is None and _crosses(target, stream):
                event = stream.record_event()
            entry = events.get(id(out))
            if entry is not None and entry[0] is out:
                entry[2] = entry[2] or event
                entry[3] += 1
            else:
                events[id(out)] = [out, stream, event, 1]


def _stream_of(node: Any, device: Any) -> Any:
    return getattr(node, "stream", None) or device.current_stream()


def _crosses(target: Any, stream: Any) -> bool:
    """Will `target` read this gradient anywhere but on `stream` (another stream, or the host)?"""
    return target is not None and (target.device.streams is None or _stream_of(target, target.device) is not stream)


def _issue(task: Any, node: Any, grads: list, stream: Any, device: Any) -> list | None:
    """Run the node's Python now with `stream` current (CUDA): its kernels queue there, its outputs are its results."""
    start = perf_counter_ns()
    outputs = stream.launch(lambda: task.apply_node(node, resolved(grads)))
    if task.trace is not None and outputs is not None:
        _record_node(task, node, device, start)
    return outputs


def _queue(task: Any, node: Any, grads: list, stream: Any, device: Any, runs: bool) -> list:
    """Queue the node on a stream with a thread of its own; return the arrays its kernel will fill."""
    outputs = [_empty_for(target, slot) if runs else None for target, slot in node.next_functions]
    token = trio.lowlevel.current_trio_token()

    def kernel() -> None:
        if task.stopped:  # failed or cancelled: its kernels not yet run are not wanted
            return
        began = getattr(stream, "started_ns", None) or perf_counter_ns()  # an injected delay counts as work
        try:
            results = task.apply_node(node, resolved(grads))
            for out, result in zip(outputs, results or ()):
                if out is not None:
                    out[...] = 0 if result is None else result
        except Exception as error:  # noqa: BLE001 - kept by the pass now, which stops on the event loop
            task.record_error(node, error)
            token.run_sync_soon(task.stop)
            return
        finally:
            stream.started_ns = None
        if task.trace is not None and results is not None:
            _record_node(task, node, device, began)

    stream.launch(kernel)
    return outputs


def _record_node(task: Any, node: Any, device: Any, start: int, worker: int = 0) -> None:
    from actorgrad.scheduler.dispatch import _trace  # dispatch imports this module

    _trace(task, node, device, worker, start, perf_counter_ns())


def _empty_for(target: Any, slot: int) -> Any:
    """The array a queued kernel fills with its gradient for `target`'s `slot` (zeros: an early read is plain to
    see)."""
    if target is None:
        return None
    meta = target.input_metadata[slot]
    return meta.device.xp.zeros(meta.shape, meta.dtype)


def _traced_wait(task: Any, stream: Any, event: Any) -> None:
    """A device-side wait that records how long the stream stood still."""

    def wait() -> None:
        start = perf_counter_ns()
        event.synchronize()
        task.trace.waits.append(
            WaitEvent(f"event of {event.stream.device}", str(stream.device), 0, task.id, start, perf_counter_ns())
        )

    stream.enqueue(wait)


async def synchronize_streams(task: Any) -> None:
    """Make the pass's gradients complete from the caller's point of view. On CUDA, as in PyTorch, the caller's
    current stream waits device-side for every stream the pass queued kernels on (the host runs ahead; a read
    on the host syncs). A stream with a thread of its own writes host memory: trio waits until it is done.

    A gradient read on another stream than the one that wrote it is kept alive until then, and such a pass ends
    with trio waiting for its streams: CuPy's memory pool hands a freed block to the next allocation on the
    stream that made it, which could overwrite it before the other stream's read has run (PyTorch's
    `record_stream` problem)."""
    for stream in task.streams_used:
        if not stream.issues_inline or task.crossed:
            await wait_async(stream.record_event())
            continue
        current = stream.device.current_stream()
        if current is not stream:
            current.wait_event(stream.record_event())
    task.crossed.clear()
