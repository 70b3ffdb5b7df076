"""The part of a pass that runs on streamed devices (CUDA, async_cpu): kernels queued on streams, events that
travel with the gradients they make, and the waits that keep a consumer from reading a gradient early.

A node on a streamed device is not run by its dispatcher: its kernel is queued on the stream its forward ran on
(the device's current stream when it was recorded; for other nodes, the current stream at backward),
and the dispatcher gets back at once the arrays the kernel will fill (allocated now, as CUDA's caching allocator
does), with an event recorded after the kernel. Each of those arrays carries the event (`task.events`, keyed by
the array's id) until a consumer takes it: a consumer on another stream waits for it device-side
(`stream.wait_event`), a host consumer awaits it from trio. A gradient that several producers send to one slot is
summed by its consumer after the waits (a `PendingSum`), never on the host while its parts may be unwritten.

Passes on the CPU alone never come here: the dispatcher tests `task.streamed` once per node it pops.
"""

from __future__ import annotations

from contextlib import contextmanager
from time import perf_counter_ns
from typing import Any

import trio

from actorgrad.devices.events import wait_async
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


def _carried(task: Any, grads: list) -> list:
    """The events of the gradients in `grads` that still carry one (each given out once)."""
    events = task.events
    found = []
    for g in grads:
        for part in (g if g.__class__ is PendingSum else (g,)):
            entry = events.pop(id(part), None)
            if entry is not None:
                found.append(entry[1])
    return found


async def run_streamed(task: Any, node: Any, grads: list, device: Any) -> None:
    """Run (or, on a streamed device, queue) one node of a pass that uses streams, and pass on its gradients."""
    try:
        outputs = await streamed_outputs(task, node, grads, device)
        task.finish_node(node, outputs)
    except Exception as error:
        task.fail(node, error)


async def streamed_outputs(task: Any, node: Any, grads: list, device: Any) -> Any:
    """Run one node of a pass that uses streams, after awaiting the events its gradients carry; on a streamed
    device, queue its kernel instead. Its outputs: on a stream, the arrays the kernel will fill."""
    if device.streams is not None and task.ops is None:
        return _launch(task, node, grads, device)
    start = perf_counter_ns()  # the host (a recorded backward runs there too)
    await _await_events(task, _carried(task, grads), device)
    grads = resolved(grads)
    hooks = node.hooks
    if hooks is not None and hooks.awaits:
        outputs = await task.apply_node_async(node, grads)
    else:
        outputs = task.apply_node(node, grads)
    if task.trace is not None and outputs is not None:
        _record_node(task, node, device, start)
    return outputs


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
    """Queue `node`'s kernel on its stream (the forward's, else the device's current one); return the arrays it
    will fill, each carrying the event recorded after it."""
    stream = getattr(node, "stream", None) or device.current_stream()  # the forward's stream, where recorded
    task.streams_used.add(stream)
    if waits_enabled[0]:
        for event in _carried(task, grads):
            if event.stream is not stream:
                stream.wait_event(event) if task.trace is None else _traced_wait(task, stream, event)
    else:
        _carried(task, grads)
    runs = task.run is None or node in task.run
    outputs = [_empty_for(target, slot) if runs else None for target, slot in node.next_functions]
    token = trio.lowlevel.current_trio_token()

    def kernel() -> None:
        if task.finished and task.error is not None:
            return
        began = getattr(stream, "started_ns", None) or perf_counter_ns()  # an injected delay counts as work
        try:
            results = task.apply_node(node, resolved(grads))
            for out, result in zip(outputs, results or ()):
                if out is not None:
                    out[...] = 0 if result is None else result
        except Exception as error:  # noqa: BLE001 - reported to the pass, on the event loop
            token.run_sync_soon(task.fail, node, error)
            return
        finally:
            stream.started_ns = None
        if task.trace is not None and results is not None:
            _record_node(task, node, device, began)

    stream.launch(kernel)
    event = stream.record_event()
    events = task.events
    for out in outputs:
        if out is not None:
            events[id(out)] = (out, event)
    return outputs if runs else None


def _record_node(task: Any, node: Any, device: Any, start: int) -> None:
    from actorgrad.scheduler.dispatch import _trace  # dispatch imports this module

    _trace(task, node, device, 0, start, perf_counter_ns())


def _empty_for(target: Any, slot: int) -> Any:
    """The array a kernel fills with its gradient for `target`'s `slot`, on the target's device."""
    if target is None:
        return None
    meta = target.input_metadata[slot]
    where = meta.device
    if where.type == "cuda":  # no fill: a memset queued on the host's stream could land after the kernel's write
        return where.xp.empty(meta.shape, meta.dtype)
    return where.xp.zeros(meta.shape, meta.dtype)  # host memory: zeros make an early read plain to see


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
    """Wait (from trio) until every stream this pass queued kernels on has run them: its gradients are written."""
    for stream in task.streams_used:
        await wait_async(stream.record_event())
