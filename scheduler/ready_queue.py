"""ReadyQueue: the actors of one device whose mailboxes are complete, in priority order.

One queue per device per trio run, shared by every pass running there, so priority holds across concurrent
passes: the deeper reentrant depth first (a nested backward's caller is waiting on it), then the higher
sequence_nr (the later op) first. The queue lives in a RunVar: it belongs to the run, not to any task.
"""

from __future__ import annotations

import collections
import heapq
import itertools
from typing import Any

import trio

from actorgrad.scheduler.workers import WorkerSlots

_states: trio.lowlevel.RunVar = trio.lowlevel.RunVar("actorgrad_device_states")


class ReadyQueue:
    """Entries are `(-depth, -sequence_nr, tie, graph_task, node, grads)`; a heap pops the best first.

    `waiting_heavy` holds ready heavy nodes that found every worker busy; a worker that finishes takes the best
    of them next without a trip through the dispatcher.

    Dispatchers of every pass on the device share the queue. One awake dispatcher is enough: on one event loop
    a second brings no parallelism, so new work wakes a sleeping one only when none is awake, and a pass that
    finishes wakes just its own dispatchers (so that 64 concurrent passes do not wake each other 64 times).
    """

    __slots__ = ("heap", "waiting_heavy", "awake", "_tie", "_sleeping")

    def __init__(self) -> None:
        self.heap: list = []
        self.waiting_heavy: list = []
        self.awake = 0
        self._tie = itertools.count()
        self._sleeping: collections.deque = collections.deque()

    def push(self, task: Any, node: Any, grads: list) -> None:
        heapq.heappush(self.heap, (-task.depth, -node.sequence_nr, next(self._tie), task, node, grads))
        if not self.awake:
            self.wake_one()

    def wake_one(self) -> None:
        """Wake a sleeping dispatcher to look at the queue, unless one is awake already."""
        if not self.awake and self._sleeping:
            self.awake += 1
            self._sleeping.popleft().set()

    async def sleep(self, task: Any, device: Any) -> None:
        """Wait until there may be work here (`wake_one`) or `task` has finished."""
        event = trio.Event()
        self._sleeping.append(event)
        task.sleeping[device] = event
        self.awake -= 1
        try:
            await event.wait()
        finally:
            del task.sleeping[device]
            if event in self._sleeping:  # not woken by wake_one, which counts the dispatcher awake itself
                self._sleeping.remove(event)
                self.awake += 1

    def can_overlap(self, workers: WorkerSlots) -> bool:
        """Is there other work a heavy kernel could run beside: kernels running or waiting for a worker, or
        ready nodes that lead on to more? (Leaf accumulators alone do not count.)"""
        return bool(workers.busy or self.waiting_heavy or any(entry[4].next_functions for entry in self.heap))

    def discard(self, task: Any) -> None:
        """Drop the entries of a pass that stopped early (error or cancellation)."""
        for heap in (self.heap, self.waiting_heavy):
            kept = [entry for entry in heap if entry[3] is not task]
            if len(kept) != len(heap):
                heapq.heapify(kept)
                heap[:] = kept


class DeviceState:
    """What all passes on one device share within a trio run."""

    __slots__ = ("queue", "workers")

    def __init__(self) -> None:
        self.queue = ReadyQueue()
        self.workers = WorkerSlots()


def device_state(device: Any) -> DeviceState:
    try:
        states = _states.get()
    except LookupError:
        states = {}
        _states.set(states)
    state = states.get(device)
    if state is None:
        state = states[device] = DeviceState()
    return state
