"""Dispatch: each device's dispatcher runs the ready actors of its queue, one trio nursery per device.

A dispatcher pops the best entry of its device's ReadyQueue (whichever pass it belongs to) and runs it on
the event loop, or, when the node is heavy and there is other work to overlap with, on a worker thread
started in the owning pass's nursery for that device (a pass opens one on each device where it has heavy
nodes). A node that awaits (an async backward, or hooks that await) runs as a task of its own pass, so that
no dispatcher waits on it. It checkpoints every `CHECKPOINT_INTERVAL_S` of work, never once per node.
"""

from __future__ import annotations

import functools
import math
from heapq import heappop, heappush
from time import perf_counter, perf_counter_ns
from typing import Any

import trio

from actorgrad.scheduler.graph_task import GraphTask
from actorgrad.scheduler.input_buffer import InputBuffer
from actorgrad.scheduler.ready_queue import DeviceState, ReadyQueue, device_state
from actorgrad.scheduler.streams import run_streamed, streamed_outputs, synchronize_streams
from actorgrad.scheduler.trace import PassEvent
from actorgrad.scheduler.workers import HEAVY_NODE_NS, get_num_workers

# A checkpoint costs about 10 µs here; every 0.5 ms of work keeps cancellation within a millisecond.
CHECKPOINT_INTERVAL_S = 0.0005
# Inside a chain the clock is read every this many nodes (a read costs about as much as a light node's bookkeeping).
CHAIN_CLOCK_EVERY = 16


async def run_graph_task(task: GraphTask) -> None:
    """Run a pass to completion on every device it touches; re-raise the first node error as is."""
    devices = task.devices
    start = perf_counter_ns()
    try:
        if len(devices) == 1:  # the common case, without building dicts
            (device,) = devices
            state = device_state(device)
            task.queues = {device: state.queue}
            await _dispatch_device(task, device, state, True)
        else:
            states = {device: device_state(device) for device in devices}
            task.queues = {device: state.queue for device, state in states.items()}
            async with trio.open_nursery() as nursery:
                task.cancel_scope = nursery.cancel_scope
                for device, state in states.items():
                    await nursery.start(_dispatch_device, task, device, state, False)
                task.queues[task.root.device].push(task, task.root, [])
        if task.streamed is not None and not task.stopped:  # its kernels write its gradients: a cancel skips the rest
            await synchronize_streams(task)
    except BaseException:
        task.stopped = True
        raise
    finally:
        task.finished = True
        if task.streamed is not None and task.stopped:  # each kernel it queued has run or skipped when we return
            with trio.CancelScope(shield=True):
                await synchronize_streams(task)
        if task.remaining:  # stopped early: drop what it still had queued, and end its async backwards
            task.cancel_async()
            for queue in task.queues.values():
                queue.discard(task)
            await task.wait_async_stopped()
        if task.trace is not None:
            _trace_pass(task, start)
    if task.error is not None:
        raise task.error


def _trace(owner: GraphTask, node: Any, device: Any, worker: int, start: int, end: int) -> None:
    """Record a TraceEvent's fields as a plain tuple (the device not yet a string): a named tuple costs more. The
    node's id and its sends to other devices are only needed, and only recorded, when the pass spans several."""
    record = (node.name(), node.sequence_nr, device, owner.depth, owner.id, worker, start, end)
    if len(owner.devices) > 1:
        record += (id(node), _sends(node, device))
    owner.trace.append(record)


def _sends(node: Any, device: Any) -> tuple[int, ...]:
    return tuple(id(next_node) for next_node, _ in node.next_functions
                 if next_node is not None and next_node.device != device)


def _trace_pass(task: GraphTask, start: int) -> None:
    task.trace.passes.append(PassEvent(task.id, task.depth, start, perf_counter_ns()))


async def _dispatch_device(
    task: GraphTask, device: Any, state: DeviceState, push_root: bool, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """One device's part of a pass, inside the pass's nursery for the device's worker kernels."""
    if device not in task.worker_devices:
        # Every node of the pass here runs on the event loop: no worker tasks, so no nursery to hold them.
        await _serve(task, device, state, push_root, task_status)
        return
    async with trio.open_nursery() as kernels:
        task.nurseries[device] = kernels
        if task.cancel_scope is None:  # one device: its nursery's scope is the pass's
            task.cancel_scope = kernels.cancel_scope
        await _serve(task, device, state, push_root, task_status)


async def _serve(task: GraphTask, device: Any, state: DeviceState, push_root: bool, task_status: Any) -> None:
    """The dispatch loop proper: run ready actors until `task` has finished."""
    queue = state.queue
    task_status.started()
    queue.awake += 1
    try:
        if push_root:
            queue.push(task, task.root, [])
        heap = queue.heap
        workers = state.workers
        heavy = HEAVY_NODE_NS
        now = perf_counter
        # Yield once with the root queued, so passes started together are ordered by priority from the start.
        await trio.lowlevel.checkpoint()
        next_checkpoint = perf_counter() + CHECKPOINT_INTERVAL_S
        while not task.finished:
            if queue.waiting_heavy and (slot := workers.try_acquire()) is not None:
                _, _, _, owner, node, grads = heappop(queue.waiting_heavy)
                if owner.finished:  # stopped: its nursery may be closed already, and its kernel is not wanted
                    workers.release(slot)
                else:
                    owner.nurseries[device].start_soon(_run_on_worker, owner, node, grads, device, state, slot)
                continue
            if not heap:
                await queue.sleep(task, device)
                next_checkpoint = now() + CHECKPOINT_INTERVAL_S
                continue
            entry = heappop(heap)
            _, _, _, owner, node, grads = entry
            if owner.finished:
                continue
            if node.cost >= heavy and _may_use_worker(owner, node, device) and queue.can_overlap(workers):
                slot = workers.try_acquire()
                if slot is not None:  # a pass that uses streams awaits a host node's events in the worker's task
                    run = _run_on_worker if owner.streamed is None else _run_streamed_on_worker
                    owner.nurseries[device].start_soon(run, owner, node, grads, device, state, slot)
                    continue
                if owner.streamed is None:  # a worker takes it when one is free (one would not await its events)
                    heappush(queue.waiting_heavy, entry)
                    continue
            del entry  # its gradients go with the node: nothing here may keep them alive across an await
            if owner.streamed is not None:
                if owner is task:
                    await run_streamed(owner, node, grads, device)
                else:  # another pass's node may await its events
                    _start_in_own_task(owner, node, functools.partial(streamed_outputs, owner, node, grads, device))
                del grads
            else:
                awaiting = _run_chain(owner, node, grads, device, queue, next_checkpoint)
                del grads
                if awaiting is not None:
                    _start_awaiting(owner, *awaiting, device)
            if now() >= next_checkpoint:
                await trio.lowlevel.checkpoint()
                next_checkpoint = now() + CHECKPOINT_INTERVAL_S
    except BaseException:
        # Cancelled or failed: stop workers from taking more of this pass's kernels right away.
        task.finished = True
        raise
    finally:
        queue.awake -= 1
        if queue.heap or queue.waiting_heavy:
            queue.wake_one()  # leave the rest to another pass's dispatcher


def _run_chain(
    owner: GraphTask, node: Any, grads: list, device: Any, queue: Any, yield_at: float
) -> tuple[Any, list] | None:
    """Run a node on this thread, then each node it completes while that one is the best work here, else the
    best work of its pass in the heap (a leaf's AccumulateGrad, say), without a round trip through the dispatcher.

    Stops at a heavy node that may go to a worker, and, once the clock passes `yield_at`, so that the
    dispatcher can checkpoint; either way the node goes back to the queue. Stops too at a node whose hooks
    await, and returns it with its gradients for the caller to run.
    """
    heap = queue.heap
    trace = owner.trace
    plain = owner.plain  # apply_node only adds hooks, capture, retain_grad and NaN checks
    countdown = CHAIN_CLOCK_EVERY
    # The heap's best entry when last looked at, and the sequence_nr a node of this pass must reach to go before
    # it: worked out again only when the best entry changes (a heap of other passes' work rarely does mid-chain).
    depth_key, best, bar = -owner.depth, None, 0
    if trace is not None:
        # A traced node's slice runs from the end of the one before it in the chain to the end of its own delivery:
        # one clock read per node (a read costs 0.1 us here, 4% of a W1 node), and the common single-device record
        # written inline (a call per node cost 7% more on W1).
        single, depth, task_id, record = len(owner.devices) == 1, owner.depth, owner.id, trace.append
        start = perf_counter_ns()
    while True:
        try:
            direct = plain and node.hooks is None and node.retained is None  # apply_node would add nothing
            if direct and trace is None:
                held = owner.finish_node(node, node.apply(grads, owner), True)
            elif node.hooks is not None and node.hooks.awaits:
                return node, grads
            elif trace is not None:
                outputs = node.apply(grads, owner) if direct else owner.apply_node(node, grads)
                held = owner.finish_node(node, outputs, True)
                end = perf_counter_ns()
                if outputs is not None:  # None: only visited to capture
                    if single:
                        rule = node._rule
                        name = node.name() if rule is None else rule.name
                        record((name, node.sequence_nr, device, depth, task_id, 0, start, end))
                    else:
                        _trace(owner, node, device, 0, start, end)
                start = end
            else:
                held = owner.finish_node(node, owner.apply_node(node, grads), True)
        except Exception as error:
            owner.fail(node, error)
            return None
        if held is not None and heap:
            if heap[0] is not best:
                best = heap[0]
                bar = _bar(best, depth_key)
            if held[0].sequence_nr < bar:  # outranked: back to the queue
                queue.push(owner, *held)
                held = None
        if held is None:  # nothing it completed is the best work here: go on with what is, if it is this pass's
            if not heap or heap[0][3] is not owner or queue.waiting_heavy or owner.finished:
                return None
            entry = heappop(heap)
            held = entry[4], entry[5]
            del entry
        node, grads = held
        countdown -= 1
        if (node.cost >= HEAVY_NODE_NS and _may_use_worker(owner, node, device)) or (
            not countdown and perf_counter() >= yield_at
        ):
            queue.push(owner, node, grads)
            return None
        if not countdown:
            countdown = CHAIN_CLOCK_EVERY


def _bar(entry: tuple, depth_key: int) -> float:
    """The sequence_nr a node of a pass at depth `-depth_key` must reach to run before heap entry `entry`: a
    deeper pass's entry goes first whatever its number, a shallower one's after, and at one depth the higher
    sequence_nr first (ties to the node at hand)."""
    if entry[0] == depth_key:
        return -entry[1]
    return math.inf if entry[0] < depth_key else -1


def run_graph_task_inline(task: GraphTask) -> None:
    """Run a pass on this thread without an event loop: for sync calls whose pass uses no worker thread, and
    for a sync backward nested in a node's backward (which must not wait on the loop it may be running on).

    Starting a trio run costs 0.2 to 0.6 ms here, many times a small backward; this path costs nothing of
    the kind. No workers: nothing to overlap, so nothing to wait for, and one queue serves every device.
    """
    queue = ReadyQueue()
    task.queues = dict.fromkeys(task.devices, queue)
    task.inline = True
    # Every node runs here, one after another: no gradient needs an event, and mailboxes may sum at once.
    task.streamed = None
    task.buffer_type = InputBuffer
    queue.push(task, task.root, [])
    heap = queue.heap
    start = perf_counter_ns()
    try:
        while heap and not task.finished:
            _, _, _, owner, node, grads = heappop(heap)
            awaiting = _run_chain(owner, node, grads, node.device, queue, math.inf)
            if awaiting is not None:  # apply_node gives its async hooks trio runs of their own
                node, grads = awaiting
                began = perf_counter_ns()
                try:
                    outputs = owner.apply_node(node, grads)
                except Exception as error:
                    owner.fail(node, error)
                    continue
                _deliver(owner, node, outputs, node.device, 0, began, perf_counter_ns())
    finally:
        task.finished = True
        if task.trace is not None:
            _trace_pass(task, start)
    if task.error is not None:
        raise task.error


def _may_use_worker(owner: GraphTask, node: Any, device: Any) -> bool:
    """May this heavy node run on a worker thread? Not when its kernel already uses every core (BLAS with
    several threads) or its hooks await, and only for a pass with a nursery on the device to hold the worker."""
    return (
        (not node.multithreaded or owner.multithreaded_on_workers)
        and device in owner.nurseries
        and get_num_workers() > 1
        and (node.hooks is None or not node.hooks.awaits)
    )


def _start_awaiting(owner: GraphTask, node: Any, grads: list, device: Any) -> None:
    """Start a node whose hooks await (the other ready actors need not wait for them)."""

    async def run() -> Any:
        start = perf_counter_ns()
        outputs = await owner.apply_node_async(node, grads)
        if owner.trace is not None and not owner.finished:
            _trace(owner, node, device, 0, start, perf_counter_ns())
        return outputs

    _start_in_own_task(owner, node, run)


def _start_in_own_task(owner: GraphTask, node: Any, run: Any) -> None:
    """Run a node that awaits as a task of its own pass (as an async backward runs), not in this dispatcher:
    the dispatcher may be another pass's, whose cancellation would drop the node mid-await and leave its pass
    waiting forever. `run()` returns the node's outputs."""
    owner.run_async(node, run)
    owner.finish_node(node, ())


async def _run_on_worker(owner: GraphTask, node: Any, grads: list, device: Any, state: DeviceState, slot: int):
    token = trio.lowlevel.current_trio_token()
    try:
        await trio.to_thread.run_sync(_work, owner, node, grads, device, state.queue, token, slot)
    finally:
        state.workers.release(slot)
        state.queue.wake_one()


async def _run_streamed_on_worker(
    owner: GraphTask, node: Any, grads: list, device: Any, state: DeviceState, slot: int
) -> None:
    """A heavy host node of a pass that uses streams: it awaits the events its gradients carry here, not in the
    dispatcher, then runs on a worker thread. (Not through `waiting_heavy`: a worker would run it unawaited.)"""
    try:
        await run_streamed(owner, node, grads, device, slot)
    finally:
        state.workers.release(slot)
        state.queue.wake_one()


def _work(owner: GraphTask, node: Any, grads: list, device: Any, queue: Any, token: Any, slot: int) -> None:
    """On a worker thread: run heavy nodes of one pass back to back.

    Each result is handed to the event loop without waiting (`run_sync_soon`), and the pass's next waiting
    heavy node is taken straight from the device's queue, so a busy worker never waits on a trio round trip.
    Heap operations on tuples of ints are atomic under the GIL, so popping here is safe.
    """
    while True:
        start = perf_counter_ns()
        try:
            outputs = owner.apply_node(node, grads)
        except Exception as error:
            token.run_sync_soon(owner.fail, node, error)
            return
        token.run_sync_soon(_deliver, owner, node, outputs, device, slot, start, perf_counter_ns())
        del grads, outputs
        waiting = queue.waiting_heavy
        if owner.finished or not waiting or waiting[0][3] is not owner:
            return
        entry = heappop(waiting)
        if entry[3] is not owner:
            heappush(waiting, entry)
            return
        node, grads = entry[4], entry[5]


def _deliver(owner: GraphTask, node: Any, outputs: Any, device: Any, slot: int, start: int, end: int) -> None:
    """On the event loop: pass on what a worker computed."""
    if owner.finished:
        return
    if owner.trace is not None:
        _trace(owner, node, device, slot, start, end)
    try:
        owner.finish_node(node, outputs)
    except Exception as error:
        owner.fail(node, error)
