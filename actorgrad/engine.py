"""The public engine entry points: `await backward(...)` and `await grad(...)`, and their sync mirrors.

Each call builds one GraphTask from a GraphRoot seeded with the output gradients, runs it through the
scheduler, and then either commits the staged leaf gradients (all at once, only if the whole pass
succeeded) or returns the captured ones.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import trio

from actorgrad.accumulate_grad import gradient_edge
from actorgrad.autograd.anomaly_mode import is_anomaly_check_nan_enabled, note_forward_stack
from actorgrad.autograd.graph import GradientEdge
from actorgrad.devices import cpu, is_writeable
from actorgrad.grad_mode import enable_grad
from actorgrad.hooks import has_post_accumulate_hooks, run_post_accumulate_hooks, run_post_accumulate_hooks_async
from actorgrad.node import Edge, GraphRoot
from actorgrad.scheduler import (
    GraphTask,
    active_trace,
    get_num_workers,
    reentrant_depth,
    run_graph_task,
    run_graph_task_inline,
)
from actorgrad.tensor import Tensor, bump_version
from actorgrad.tensor_ops import tensor_ops

TensorOrTensors = Tensor | Sequence[Tensor]
Inputs = Tensor | GradientEdge | Sequence[Tensor | GradientEdge]

# Sync calls from several threads commit into shared leaves; this makes each commit one atomic step.
_commit_lock = threading.Lock()


def _sequence(value: Any, what: str, kinds: str) -> tuple:
    """`value` as a tuple; None or a non-sequence is refused (PyTorch's TypeError) naming the argument."""
    try:
        return tuple(value)
    except TypeError:
        raise TypeError(f"{what} must be {kinds} or a sequence of them, got {type(value).__name__}") from None


def _as_tuple(value: Any, what: str, kinds: type | tuple = Tensor, named: str = "a Tensor") -> tuple:
    """`value` (one of `kinds`, or a sequence of them) as a tuple, each checked, naming the argument."""
    if isinstance(value, kinds):
        return (value,)
    values = _sequence(value, what, named)
    for i, v in enumerate(values):
        if not isinstance(v, kinds):
            raise TypeError(f"{what}[{i}] must be {named}, got {type(v).__name__}")
    return values


def _as_inputs(value: Any, what: str) -> tuple:
    """The tensors (or gradient edges) whose gradients a call asks for."""
    return _as_tuple(value, what, (Tensor, GradientEdge), "a Tensor or a GradientEdge")


def _seed_grads(outputs: tuple, grad_outputs: Any, create_graph: bool) -> list:
    """One starting gradient per output: the given one (checked against the output), or ones for a scalar."""
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        given = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    else:
        given = list(_sequence(grad_outputs, "grad_tensors", "a Tensor or None"))
    for i, grad in enumerate(given):
        if grad is not None and not isinstance(grad, Tensor):
            raise TypeError(f"grad_tensors[{i}] must be a Tensor or None, got {type(grad).__name__}")
    if len(given) != len(outputs):
        raise RuntimeError(
            f"grad_tensors should have the same length as tensors: got {len(given)} gradients for "
            f"{len(outputs)} tensors (give a Tensor, or None for a scalar, per tensor)"
        )
    seeds = []
    for i, (out, grad) in enumerate(zip(outputs, given)):
        if grad is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            where = out._device
            if where is cpu:
                ones = np.empty(out.shape, out.dtype)
                ones.fill(1)
            else:
                ones = where.xp.ones(out.shape, out.dtype)
            seeds.append(Tensor(ones, device=where) if create_graph else ones)
            continue
        if grad.shape != out.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {grad.shape} and output[{i}] has a shape of "
                f"{out.shape}."
            )
        if grad._device is not out._device:
            raise RuntimeError(
                f"invalid gradient at index {i} - expected device {out._device} but got {grad._device}"
            )
        if grad.dtype != out.dtype:
            grad = Tensor(grad._data.astype(out.dtype), device=grad._device)
        seeds.append(grad if create_graph else grad._data)
    return seeds


def _root(outputs: tuple, seeds: list) -> GraphRoot:
    edges = []
    for i, out in enumerate(outputs):
        edge = gradient_edge(out)
        if edge[0] is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append(edge)
    return GraphRoot(tuple(edges), seeds, outputs[0].device if outputs else cpu)  # no outputs: nothing to do


def _input_edges(inputs: tuple, what: str) -> list[Edge]:
    edges = []
    for i, t in enumerate(inputs):
        if isinstance(t, GradientEdge):
            edges.append((t.node, t.output_nr))
            continue
        if not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors does not require grad ({what}[{i}])")
        edges.append(gradient_edge(t))
    return edges


async def backward(
    tensors: TensorOrTensors,
    grad_tensors: TensorOrTensors | None = None,
    *,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Inputs | None = None,
) -> None:
    """Accumulate d(tensors)/d(leaf) into each leaf's `.grad`, leaves committed only if the pass succeeds."""
    task = _backward_task(tensors, grad_tensors, retain_graph, create_graph, inputs)
    await _run(task)
    if _commit_or_stage(task, create_graph) and has_post_accumulate_hooks(task.staged):
        await run_post_accumulate_hooks_async(task.staged)


async def grad(
    outputs: TensorOrTensors,
    inputs: Inputs,
    grad_outputs: TensorOrTensors | None = None,
    *,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """d(outputs)/d(inputs), returned as a tuple; `.grad` of every leaf is left alone (a non-leaf that retains its
    gradient gets it, as in PyTorch). An input may be a
    GradientEdge (`actorgrad.autograd.graph.get_gradient_edge`): the gradient flowing into that edge. An unused
    input gets None where allow_unused is True, zeros where materialize_grads is (which implies allow_unused)."""
    allow_unused = _allows_unused(allow_unused, materialize_grads)
    ins = _as_inputs(inputs, "inputs")
    task = _grad_task(outputs, ins, grad_outputs, retain_graph, create_graph)
    await _run(task)
    _commit_or_stage(task, create_graph)  # the gradients of non-leaves that retain theirs
    grads = _placed(_captured_grads(task, create_graph, allow_unused), ins)
    return _materialized(grads, ins, create_graph) if materialize_grads else grads


def _backward_task(tensors: Any, grad_tensors: Any, retain_graph: Any, create_graph: bool, inputs: Any) -> GraphTask:
    outputs = _as_tuple(tensors, "tensors")
    root = _root(outputs, _seed_grads(outputs, grad_tensors, create_graph))
    targets = None
    if inputs is not None:
        chosen = _as_inputs(inputs, "inputs")
        if not chosen:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        targets = {node: [] for node, _ in _input_edges(chosen, "inputs")}
        for t in chosen:
            if isinstance(t, Tensor):  # an edge has no tensor: only a leaf's accumulator keeps its gradient
                t.retain_grad()
    return _graph_task(root, retain_graph, create_graph, targets, accumulate=True)


def _grad_task(outputs: Any, ins: tuple, grad_outputs: Any, retain_graph: Any, create_graph: bool) -> GraphTask:
    outs = _as_tuple(outputs, "outputs")
    if not ins:
        raise RuntimeError("grad requires non-empty inputs.")
    root = _root(outs, _seed_grads(outs, grad_outputs, create_graph))
    captures: dict = {}
    for index, (node, input_nr) in enumerate(_input_edges(ins, "inputs")):
        captures.setdefault(node, []).append((input_nr, index))
    return _graph_task(root, retain_graph, create_graph, captures, accumulate=False)


def _captured_grads(task: GraphTask, create_graph: bool, allow_unused: bool) -> tuple[Tensor | None, ...]:
    results = []
    for index, value in enumerate(task.captured):
        if value is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {index} appears to not have been used in the graph. "
                    f"Set allow_unused=True if this is the desired behavior."
                )
            results.append(None)
        else:
            results.append(value if create_graph else Tensor(_owned(value)))
    return tuple(results)


def _allows_unused(allow_unused: bool | None, materialize_grads: bool) -> bool:
    """PyTorch's rule: allow_unused defaults to materialize_grads, and an explicit False beside it is refused."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False."
        )
    return materialize_grads if allow_unused is None else allow_unused


def _materialized(grads: tuple, inputs: tuple, create_graph: bool) -> tuple:
    """Zeros of the input's shape, dtype and device for each unused input (materialize_grads=True); an edge has
    no tensor to take them from."""
    if any(g is None and isinstance(t, GradientEdge) for g, t in zip(grads, inputs)):
        raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
    return tuple(
        Tensor(t._device.xp.zeros(t.shape, t.dtype), create_graph, device=t._device) if g is None else g
        for g, t in zip(grads, inputs)
    )


def _placed(grads: tuple, inputs: tuple) -> tuple:
    """Each returned gradient on its input's device (a gradient edge's: the device of its node)."""
    for g, t in zip(grads, inputs):
        if g is not None and g._grad_fn is None:
            g._device = t._device if isinstance(t, Tensor) else t.node.input_metadata[t.output_nr].device
    return grads


def _graph_task(root: GraphRoot, retain_graph: bool | None, create_graph: bool, captures: Any, accumulate: bool):
    return GraphTask(
        root,
        keep_graph=create_graph if retain_graph is None else retain_graph,
        ops=tensor_ops if create_graph else None,
        captures=captures,
        accumulate=accumulate,
        trace=active_trace.get(),
        check_nan=is_anomaly_check_nan_enabled(),
    )


async def _run(task: GraphTask) -> None:
    """Run a pass on the event loop."""
    try:
        await run_graph_task(task)
    except Exception as error:
        _explain(task, error)
        _release_error(task)
        raise


def _explain(task: GraphTask, error: BaseException) -> None:
    """Anomaly mode: the error of a node that kept its forward stack tells where that node was made."""
    if error is task.error and task.error_node is not None:
        note_forward_stack(error, task.error_node)


def _release_error(task: GraphTask) -> None:
    """Let go of the pass's error: its traceback holds the frames that hold the task, a cycle that would keep
    the whole graph (nodes, saved arrays, staged gradients) alive until the garbage collector runs."""
    task.error = task.error_node = None


def _owned(array: Any) -> Any:
    """A gradient array the caller may write to (rules may hand out broadcast views or shared arrays)."""
    if not isinstance(array, np.ndarray | np.generic):
        return array.copy()  # a GPU array: its own copy
    array = np.asarray(array)
    return array if array.flags.writeable and array.base is None else array.copy()


# References to a staged gradient that nothing else holds: the staged dict, _commit's `grad`, _as_new_grad's
# parameter and getrefcount's argument.
_UNSHARED_REFS = 4


def _as_new_grad(grad: Any, dtype: Any, device: Any) -> Any:
    """The staged array itself when nothing else refers to it (PyTorch steals an unshared gradient buffer too),
    else a copy: a formula may pass one array to several leaves, or hand out a view."""
    if (
        type(grad) is device.xp.ndarray
        and grad.dtype == dtype
        and grad.base is None
        and is_writeable(grad)
        and sys.getrefcount(grad) <= _UNSHARED_REFS
    ):
        return grad
    return device.xp.array(grad, dtype=dtype)


def _commit_or_stage(task: GraphTask, create_graph: bool) -> bool:
    """Commit a finished pass's leaf gradients (True); a pass nested in a backward pass hands them to the outer
    pass instead (False), so that the outermost pass commits the whole nest at once, or nothing if any part of
    it fails, and runs the post-accumulate hooks then. (Nested in a `grad()` pass, which commits nothing, they
    are committed now, as PyTorch does.)"""
    outer = task.outer
    if outer is None or not outer.accumulate:
        _commit(task.staged, create_graph)
        return True
    recorded = outer.ops is not None
    for tensor, grad in task.staged.items():
        if recorded and not isinstance(grad, Tensor):
            grad = Tensor(grad, device=tensor._device)
        elif not recorded and isinstance(grad, Tensor):
            grad = grad._data
        outer.stage(tensor, grad)
    return False


def _commit_sync(task: GraphTask, create_graph: bool) -> None:
    """`_commit_or_stage`, then the post-accumulate hooks when this pass committed (a sync call's)."""
    if _commit_or_stage(task, create_graph) and has_post_accumulate_hooks(task.staged):
        run_post_accumulate_hooks(task.staged)


def _commit(staged: dict, create_graph: bool) -> None:
    """Add every staged gradient into its tensor's `.grad`, all in one step."""
    if not staged:
        return
    # `_grad` directly: staged gradients have their tensor's shape and dtype, and `.grad =` refuses any other
    # shape, so a held gradient always matches too.
    with _commit_lock:
        if create_graph:
            # A first gradient is cloned, as PyTorch does under grad mode: the staged Tensor may be the caller's
            # grad_tensors or another leaf's gradient, which a later pass would otherwise add into in place.
            with enable_grad():
                for tensor, grad in staged.items():
                    tensor._grad = grad.clone() if tensor._grad is None else tensor._grad + grad
            return
        for tensor in staged:
            grad = staged[tensor]
            held = tensor._grad
            if held is None:
                tensor._grad = Tensor(_as_new_grad(grad, tensor.dtype, tensor._device), device=tensor._device)
            elif held._grad_fn is None and not held._requires_grad and is_writeable(held._data):
                held._data += grad
                bump_version(held)
            else:
                tensor._grad = Tensor(held._data + grad, device=tensor._device)


def _refuse_inside_trio(name: str, async_name: str) -> None:
    if reentrant_depth.get():  # nested in a node's backward: runs inline, never waiting on the loop
        return
    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        return
    raise RuntimeError(
        f"{name}() was called inside a running trio event loop, where it would block the loop; "
        f"use `await {async_name}(...)` there instead"
    )


def _run_sync(task: GraphTask) -> None:
    """Run a pass for a sync call: on this thread when it needs no worker thread (starting a trio run costs
    0.2 to 0.6 ms here, many times a small backward) or is nested in a node's backward (which may be running
    on an event loop that must not be waited on), else in a trio run of its own."""
    try:
        if task.depth or (
            len(task.devices) == 1 and task.streamed is None and not (task.worker_devices and get_num_workers() > 1)
        ):
            run_graph_task_inline(task)
        else:
            trio.run(run_graph_task, task)
    except Exception as error:
        _explain(task, error)
        _release_error(task)
        raise


def backward_sync(
    tensors: TensorOrTensors,
    grad_tensors: TensorOrTensors | None = None,
    *,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Inputs | None = None,
) -> None:
    """`actorgrad.autograd.backward`: the sync form of `await actorgrad.backward(...)`."""
    _refuse_inside_trio("backward", "actorgrad.backward")
    task = _backward_task(tensors, grad_tensors, retain_graph, create_graph, inputs)
    _run_sync(task)
    _commit_sync(task, create_graph)


def backward_collecting(tensors: TensorOrTensors, grad_tensors: Sequence[Tensor], collect: Sequence[Tensor]) -> list:
    """A sync backward whose gradients for the leaves `collect` (made for this pass) are returned, not kept:
    how a recomputing checkpoint gets its inputs' gradients while the rest go to the leaves as usual."""
    task = _backward_task(tensors, grad_tensors, None, False, None)
    _run_sync(task)
    collected = [task.staged.pop(t, None) for t in collect]
    _commit_sync(task, False)
    return collected


def grad_sync(
    outputs: TensorOrTensors,
    inputs: Inputs,
    grad_outputs: TensorOrTensors | None = None,
    *,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """`actorgrad.autograd.grad`: the sync form of `await actorgrad.grad(...)`."""
    _refuse_inside_trio("grad", "actorgrad.grad")
    allow_unused = _allows_unused(allow_unused, materialize_grads)
    ins = _as_inputs(inputs, "inputs")
    task = _grad_task(outputs, ins, grad_outputs, retain_graph, create_graph)
    _run_sync(task)
    _commit_or_stage(task, create_graph)  # the gradients of non-leaves that retain theirs
    grads = _placed(_captured_grads(task, create_graph, allow_unused), ins)
    return _materialized(grads, ins, create_graph) if materialize_grads else grads


def tensor_backward(
    self: Tensor,
    gradient: Tensor | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Inputs | None = None,
) -> None:
    """`Tensor.backward`: sync, for scripts; in a trio app use `await actorgrad.backward(t)`."""
    backward_sync(self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)


Tensor.backward = tensor_backward
