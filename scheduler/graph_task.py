"""GraphTask: the state of one backward pass (PyTorch's graph_task.h).

It counts each node's dependencies over the graph reachable from the root, works out which nodes must run
when only some inputs are asked for (execution info), holds the mailboxes of nodes still waiting for
messages, and stages leaf gradients, which the caller commits only once the whole pass has succeeded.
"""

from __future__ import annotations

import contextvars
import itertools
import operator
import threading
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

import trio

from actorgrad.grad_mode import grad_mode_on
from actorgrad.hooks import run_steps, run_steps_async
from actorgrad.scheduler.graph_walks import count_dependencies, nodes_on_paths, on_the_callers_stream
from actorgrad.scheduler.input_buffer import InputBuffer
from actorgrad.scheduler.streams import DeferredInputBuffer, carry_outputs
from actorgrad.scheduler.workers import blas_threads, multithreading_enabled

_task_ids = itertools.count(1)

reentrant_depth: ContextVar[int] = ContextVar("actorgrad_reentrant_depth", default=0)
# The pass whose node's backward is running here: a backward started inside it is nested in it.
enclosing_task: ContextVar[Any] = ContextVar("actorgrad_enclosing_task", default=None)

# PyTorch's limit on reentrant backward nesting (its engine's max_recursion_depth_).
MAX_REENTRANT_DEPTH = 60
_staging = threading.Lock()  # GraphTask.stage's read-add-store, across threads
_first_error = threading.Lock()  # GraphTask.record_error, from the event loop and streams' threads


class NestedIn:
    """While a node's backward or a hook runs: a backward started there nests one level deeper than `task`
    (PyTorch's reentrant backward): a sync one runs at once on this thread, an async one's actors go first."""

    __slots__ = ("task", "tokens")

    def __init__(self, task: Any) -> None:
        self.task = task

    def __enter__(self) -> None:
        self.tokens = (reentrant_depth.set(self.task.depth + 1), enclosing_task.set(self.task))

    def __exit__(self, *exc_info: object) -> None:
        depth, task = self.tokens
        enclosing_task.reset(task)
        reentrant_depth.reset(depth)


class GraphTask:
    """One backward call's pass over the graph.

    `captures` maps a node to the `(slot, output index)` pairs whose incoming gradient `grad()` returns.
    `accumulate` is False for `grad()`, whose captured nodes are visited but not run unless they lie on the
    way to another requested input. `ops` is None for a plain backward (each device's raw array helpers) or
    the Tensor helpers when the backward is recorded. `check_nan` (anomaly mode) fails the pass at the first
    node that returns a NaN gradient.
    """

    # Slots: a pass sets all of these as it starts, and every backward call starts one.
    __slots__ = (
        "id", "root", "depth", "outer", "keep_graph", "ops", "accumulate", "trace", "pending", "devices",
        "multithreaded_on_workers", "worker_devices", "streamed", "buffer_type", "events", "streams_used", "crossed",
        "captures", "check_nan", "plain", "captured", "visit", "run", "remaining", "staged", "queues", "nurseries",
        "sleeping", "error", "error_node", "finished", "stopped", "cancel_scope", "inline", "async_scopes",
        "async_stopped", "reached_without_grad", "__weakref__",
    )

    def __init__(
        self,
        root: Any,
        *,
        keep_graph: bool,
        ops: Any,
        captures: dict | None,
        accumulate: bool,
        trace: list | None,
        check_nan: bool = False,
    ) -> None:
        self.id = next(_task_ids)
        self.root = root
        self.depth = reentrant_depth.get()
        if self.depth > MAX_REENTRANT_DEPTH:
            raise RuntimeError(
                f"reentrant backward depth {self.depth} exceeds the limit of {MAX_REENTRANT_DEPTH}: a backward "
                f"started inside a node's backward nests one level deeper; look for a custom Function whose "
                f"backward starts a backward pass through itself"
            )
        self.outer = enclosing_task.get()  # the pass this one is nested in, which commits its leaf gradients
        self.keep_graph = keep_graph
        self.ops = ops
        self.accumulate = accumulate
        self.trace = trace
        # Per node: the count of messages still expected, replaced by its mailbox when the first arrives.
        self.pending, self.devices, heavy_devices, multithreaded_devices = count_dependencies(root)
        # A multithreaded kernel (BLAS) already uses every core; it goes to a worker only when BLAS runs on one
        # thread. Devices where some kernel may go to a worker get a nursery to hold those workers.
        self.multithreaded_on_workers = bool(multithreaded_devices) and blas_threads() == 1
        self.worker_devices = (
            heavy_devices | multithreaded_devices if self.multithreaded_on_workers else heavy_devices
        )
        if not multithreading_enabled.get():
            self.worker_devices = set()
        # Devices that queue kernels on streams (None: none, the pass runs as a CPU pass): their gradients carry
        # events until consumed, mailboxes sum on the consumer's side, and the pass ends by syncing the streams.
        self.streamed = (
            None if len(self.devices) == 1 and root.device.streams is None  # a cpu pass: no comprehension to run
            else [device for device in self.devices if device.streams is not None] or None
        )
        if self.streamed is not None:
            self.worker_devices = {device for device in self.worker_devices if device.streams is None}
            if on_the_callers_stream(self.devices, self.pending):
                self.streamed = None  # one CUDA stream, the caller's: stream order alone keeps every gradient right
        self.buffer_type = InputBuffer if self.streamed is None else DeferredInputBuffer
        self.events: dict = {}  # id(gradient array) -> [the array, its stream, an event after it, consumers left]
        self.streams_used: set = set()
        self.crossed: list = []  # gradients read on another stream than their producer's, kept to the pass's end
        self.captures = captures
        self.check_nan = check_nan
        # Nodes without hooks or a retained gradient run by a bare `node.apply` in such a pass.
        self.plain = captures is None and not check_nan
        if captures is None:
            self.captured: list = []
            self.visit = self.run = None
            self.remaining = len(self.pending) + 1
        else:
            self.captured = [None] * sum(len(v) for v in captures.values())
            targets = set(captures)
            on_path = nodes_on_paths(root, targets)
            self.visit = on_path | targets
            self.run = self.visit if accumulate else on_path
            self.remaining = 1 + sum(1 for node in self.pending if node in self.visit)
        self.staged: dict = {}
        self.reached_without_grad: list | None = None  # leaves with post-accumulate hooks, no gradient
        self.queues: dict = {}
        self.nurseries: dict = {}
        self.sleeping: dict = {}  # device -> the event its dispatcher sleeps on, while it does
        self.error: BaseException | None = None
        self.error_node: Any = None
        self.finished = False
        self.stopped = False  # failed or cancelled before it finished
        self.cancel_scope: Any = None
        self.inline = False  # run on the caller's thread without an event loop (run_graph_task_inline)
        self.async_scopes: set = set()  # the cancel scopes of this pass's async backwards still running
        self.async_stopped: Any = None  # set when the last of them has ended, while a stopped pass waits for it

    # -- running one node (may run on a worker thread) ----------------------------------------------------
    def apply_node(self, node: Any, grads: list) -> Any:
        """Run a node on its gathered gradients, with its hooks; None when it is only visited to capture them.
        Hooks that are async get a trio run of their own here: on the event loop, use `apply_node_async`."""
        hooks = node.hooks
        if hooks is not None:
            outputs = run_steps(hooks.steps(self, node, grads), self)
        elif self.receive(node, grads):
            outputs = node.apply(grads, self)
        else:
            return None
        if self.check_nan and outputs and node is not self.root:  # the seeds are the caller's: PyTorch checks
            _check_nan(node, outputs)  # what the nodes they reach return
        return outputs

    async def apply_node_async(self, node: Any, grads: list) -> Any:
        """`apply_node` for a node whose hooks await, on the event loop."""
        outputs = await run_steps_async(node.hooks.steps(self, node, grads), self)
        if self.check_nan and outputs:
            _check_nan(node, outputs)
        return outputs

    def receive(self, node: Any, grads: list) -> bool:
        """Capture and retain the gradients a node receives; False when the node is only visited to capture."""
        if node.retained is not None:  # in a grad() pass too, as PyTorch's retain_grad hooks
            for slot, ref in node.retained.items():
                tensor = ref()
                if tensor is not None and grads[slot] is not None:
                    self.stage(tensor, grads[slot])
        captures = self.captures
        if captures is not None:
            for slot, index in captures.get(node, ()):
                grad = grads[slot]
                if grad is not None and grad.shape != node.input_metadata[slot][0]:
                    grad = node.fitted_gradient(slot, grad, self.ops)
                self.captured[index] = grad
            if node not in self.run:
                return False
        return True

    def nested(self) -> NestedIn:
        """The block a hook of this pass runs in: a backward it starts is nested in this pass."""
        return NestedIn(self)

    def will_execute(self, node: Any) -> bool:
        """Does this pass reach `node` (PyTorch's `_will_engine_execute_node`)?"""
        return node in self.pending and (self.visit is None or node in self.visit)

    def stage(self, tensor: Any, grad: Any) -> None:
        """Hold a gradient for `tensor.grad` until the pass commits. Nested passes on worker threads stage into
        their outer pass at once, and a large sum lets other threads run: one at a time, or a sum is lost."""
        with _staging:
            held = self.staged.get(tensor)
            # A sum is recorded: a nested create_graph pass's gradient keeps its graph, even in a plain pass.
            self.staged[tensor] = grad if held is None else grad_mode_on(operator.add, held, grad)

    def reach_without_grad(self, tensor: Any) -> None:
        """Note a leaf with post-accumulate-grad hooks that the pass reached with no gradient (None, from a custom
        Function's backward, say): PyTorch runs its hooks all the same, `.grad` left as it is."""
        if self.reached_without_grad is None:
            self.reached_without_grad = []
        self.reached_without_grad.append(tensor)

    def replace_staged(self, tensor: Any, held: Any, new: Any) -> None:
        """Hold `new` for `tensor` in place of `held`, unless a sum has replaced `held` meanwhile."""
        with _staging:
            if self.staged.get(tensor) is held:
                self.staged[tensor] = new

    def run_async(self, node: Any, backward: Callable[[], Awaitable[Any]]) -> Any:
        """Run a node whose backward awaits, without holding up the other ready actors.

        On an event loop it runs as a task of its own: the node counts as one more outstanding step, so the
        pass waits for it, and its outputs are delivered when it finishes; `()` is returned for now. A pass
        run inline (no event loop on this thread) has nothing to overlap it with and runs it to completion.
        The task is a system task under a cancel scope the pass holds (cancelled when the pass stops early, and
        waited for then, so that it does not outlive the call): a pass has a nursery only on devices with heavy
        nodes, and opening one for every pass would cost all passes for the few with async nodes.
        """
        if self.inline:
            try:
                trio.lowlevel.current_task()
            except RuntimeError:
                return trio.run(backward)
            raise RuntimeError(
                f"{node.name()} has an async backward, which cannot run in a sync backward called on a running "
                f"trio event loop; start the pass with `await actorgrad.backward(...)` instead"
            )
        self.remaining += 1
        scope = trio.CancelScope()  # held from now, so that stopping the pass before the task starts cancels it
        self.async_scopes.add(scope)
        trio.lowlevel.spawn_system_task(
            self._run_async_node, node, backward, scope, name=node.name(), context=contextvars.copy_context()
        )
        return ()

    async def _run_async_node(self, node: Any, backward: Callable[[], Awaitable[Any]], scope: Any) -> None:
        try:
            with scope:
                outputs = await backward()
                if not self.finished:
                    if self.streamed is not None and outputs:
                        carry_outputs(self, node, outputs)
                    self.finish_node(node, outputs)
        except Exception as error:
            self.fail(node, error)
        finally:
            self.async_scopes.discard(scope)
            if not self.async_scopes and self.async_stopped is not None:
                self.async_stopped.set()

    def cancel_async(self) -> None:
        """Stop the async backwards still running for a pass that stopped early."""
        for scope in self.async_scopes:
            scope.cancel()

    async def wait_async_stopped(self) -> None:
        """Wait until the async backwards stopped by `cancel_async` have ended, so that none outlives the call.
        Shielded: the pass may be stopping because its caller was cancelled."""
        if self.async_scopes:
            self.async_stopped = trio.Event()
            with trio.CancelScope(shield=True):
                await self.async_stopped.wait()

    # -- delivering its results (on the event loop) ------------------------------------------------------
    def finish_node(self, node: Any, outputs: Any, hold: bool = False) -> tuple | None:
        """Send a node's output gradients to the mailboxes of its next nodes and queue those now complete.

        With `hold`, the first completed node on the same device is returned, with its gradients, instead of
        queued: the dispatcher runs it next unless its queue holds better work (see `_run_chain`).
        """
        held = None
        if outputs:
            pending = self.pending
            visit = self.visit
            for (target, slot), grad in zip(node.next_functions, outputs):
                if target is None or (visit is not None and target not in visit):
                    continue
                waiting = pending[target]
                if waiting.__class__ is int:
                    if waiting > 1:
                        buffer = pending[target] = self.buffer_type(len(target.input_metadata), waiting - 1)
                        if grad is not None:
                            buffer.add(slot, grad, node.sequence_nr)
                        continue
                    # The only message this node gets: no mailbox needed.
                    grads = [None] * len(target.input_metadata)
                    grads[slot] = grad
                else:
                    if grad is not None:
                        waiting.add(slot, grad, node.sequence_nr)
                    waiting.left -= 1
                    if waiting.left:
                        continue
                    pending[target] = 0  # drop the mailbox: its actor consumes the sums now
                    grads = waiting.grads() if self.ops is None else grad_mode_on(waiting.grads)
                if held is None and hold and target.device is node.device:
                    held = (target, grads)
                else:
                    self.queues[target.device].push(self, target, grads)
        remaining = self.remaining - 1
        self.remaining = remaining
        if not remaining:
            self.finish()
        return held

    def finish(self) -> None:
        self.finished = True
        for event in list(self.sleeping.values()):
            event.set()

    def fail(self, node: Any, error: BaseException) -> None:
        """Stop the pass: the first error wins and is re-raised to the caller, naming the node."""
        self.record_error(node, error)
        self.stop()

    def record_error(self, node: Any, error: BaseException) -> None:
        """Keep the pass's first error, naming the node. A stream's thread calls this as its kernel fails: the
        pass may reach its end (its streams synchronized) before the event loop runs the `stop` it is sent."""
        with _first_error:
            if self.error is None:
                error.add_note(f"raised by {node.name()} (sequence_nr={node.sequence_nr}) during backward")
                self.error = error
                self.error_node = node

    def stop(self) -> None:
        """Stop the pass early, on the event loop: no more of its nodes run, its async backwards are cancelled."""
        self.stopped = True
        self.finish()
        self.cancel_async()
        if self.cancel_scope is not None:  # None: no kernels on workers to stop, the dispatcher stops itself
            self.cancel_scope.cancel()


def _check_nan(node: Any, outputs: Any) -> None:
    """Anomaly mode's check of the gradients a node returned."""
    for i, grad in enumerate(outputs):
        if grad is not None:
            data = getattr(grad, "_data", grad)
            if (data != data).any():
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
