"""Runs backward graphs: graph tasks, actor mailboxes, per-device ready queues and dispatch, worker limits, and
the execution trace. Knows nothing of individual ops: a node is anything with `next_functions`,
`input_metadata`, `sequence_nr`, `device`, `cost`, `multithreaded`, `retained`, `hooks` (None, or what
`actorgrad.hooks` runs around the node) and `apply(grads, task)`.
"""

from actorgrad.scheduler.dispatch import run_graph_task, run_graph_task_inline
from actorgrad.scheduler.graph_task import GraphTask, reentrant_depth
from actorgrad.scheduler.input_buffer import InputBuffer
from actorgrad.scheduler.ready_queue import ReadyQueue
from actorgrad.scheduler.trace import TraceEvent, active_trace, profile
from actorgrad.scheduler.workers import get_num_workers, set_num_workers

__all__ = [
    "GraphTask",
    "InputBuffer",
    "ReadyQueue",
    "TraceEvent",
    "active_trace",
    "get_num_workers",
    "profile",
    "reentrant_depth",
    "run_graph_task",
    "run_graph_task_inline",
    "set_num_workers",
]
