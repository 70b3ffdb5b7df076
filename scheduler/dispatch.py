"""Dispatch: each device's dispatcher runs the ready actors of its queue, one trio nursery per device.

A dispatcher pops the best entry of its device's ReadyQueue (whichever pass it belongs to) and runs it on
the event loop, or, when the node is heavy and there is other work to overlap with, on a worker thread
started in the owning pass's nursery for that device. It checkpoints every `CHECKPOINT_INTERVAL_S` of
work, never once per node.
"""

from __future__ import annotations

from heapq import heappop
from time import perf_counter, perf_counter_ns
from typing import Any

import trio

from actorgrad.scheduler.graph_task import GraphTask
from actorgrad.scheduler.ready_queue import DeviceState, WorkerSlots, device_state
from actorgrad.scheduler.trace import TraceEvent
from actorgrad.scheduler.workers import HEAVY_NODE_NS, get_num_workers

# A checkpoint costs about 10 µs here; every 0.5 ms of work keeps cancellation within a millisecond.
CHECKPOINT_INTERVAL_S = 0.0005


async def run_graph_task(task: GraphTask) -> None:
    """Run a pass to completion on every device it touches; re-raise the first node error as is."""
    states = {device: device_state(device) for device in task.devices}
    task.queues = {device: state.queue for device, state in states.items()}
    try:
        with trio.CancelScope() as task.cancel_scope:
            if len(states) == 1:
                ((device, state),) = states.items()
                await _dispatch_device(task, device, state, True)
            else:
                async with trio.open_nursery() as nursery:
                    for device, state in states.items():
                        await nursery.start(_dispatch_device, task, device, state, False)
                    task.queues[task.root.device].push(task, task.root, [])
    finally:
        task.finished = True
        for queue in task.queues.values():
            queue.discard(task)
    if task.error is not None:
        raise task.error


def _trace(owner: GraphTask, node: Any, device: Any, worker: int, start: int, end: int) -> None:
    owner.trace.append(
        TraceEvent(node.name(), node.sequence_nr, str(device), owner.depth, owner.id, worker, start, end)
    )


async def _dispatch_device(
    task: GraphTask, device: Any, state: DeviceState, push_root: bool, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    queue = state.queue
    heap = queue.heap
    workers = state.workers
    heavy = HEAVY_NODE_NS
    now = perf_counter
    async with trio.open_nursery() as kernels:
        task.nurseries[device] = kernels
        task_status.started()
        if push_root:
            queue.push(task, task.root, [])
        # Yield once with the root queued, so passes started together are ordered by priority from the start.
        await trio.lowlevel.checkpoint()
        next_checkpoint = perf_counter() + CHECKPOINT_INTERVAL_S
        while not task.finished:
            if not heap:
                await queue.wait_changed()
                next_checkpoint = perf_counter() + CHECKPOINT_INTERVAL_S
                continue
            _, _, _, owner, node, grads = heappop(heap)
            if owner.finished:
                continue
            if node.cost >= heavy and get_num_workers() > 1 and (heap or workers.busy):
                slot = await workers.acquire()
                if owner.finished:
                    workers.release(slot)
                    continue
                owner.nurseries[device].start_soon(_run_on_worker, owner, node, grads, device, workers, slot)
                continue
            # Run on the event loop, following the chain while its next node is the best work here.
            while True:
                trace = owner.trace
                start = perf_counter_ns() if trace is not None else 0
                try:
                    # apply_node only adds capture and retain_grad handling; skip the call when neither applies.
                    if owner.captures is None and node.retained is None:
                        outputs = node.apply(grads, owner)
                    else:
                        outputs = owner.apply_node(node, grads)
                    if trace is not None:
                        _trace(owner, node, device, 0, start, perf_counter_ns())
                    held = owner.finish_node(node, outputs, heap)
                except Exception as error:
                    owner.fail(node, error)
                    break
                if held is None:
                    break
                node, grads = held
                if (node.cost >= heavy and get_num_workers() > 1) or now() >= next_checkpoint:
                    queue.push(owner, node, grads)
                    break
            del grads
            if now() >= next_checkpoint:
                await trio.lowlevel.checkpoint()
                next_checkpoint = now() + CHECKPOINT_INTERVAL_S


def _timed_apply(owner: GraphTask, node: Any, grads: list) -> tuple:
    start = perf_counter_ns()
    outputs = owner.apply_node(node, grads)
    return outputs, start, perf_counter_ns()


async def _run_on_worker(
    owner: GraphTask, node: Any, grads: list, device: Any, workers: WorkerSlots, slot: int
) -> None:
    try:
        outputs, start, end = await trio.to_thread.run_sync(_timed_apply, owner, node, grads)
        del grads
        if owner.trace is not None:
            _trace(owner, node, device, slot, start, end)
        owner.finish_node(node, outputs)
    except Exception as error:
        owner.fail(node, error)
    finally:
        workers.release(slot)
