"""The public engine entry points: `await backward(...)` and `await grad(...)`, and their sync mirrors.

Each call builds one GraphTask from a GraphRoot seeded with the output gradients, runs it through the
scheduler, and then either commits the staged leaf gradients (all at once, only if the whole pass
succeeded) or returns the captured ones.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Generator, Sequence
from typing import Any

import trio

from actorgrad.autograd.anomaly_mode import is_anomaly_check_nan_enabled, note_forward_stack
from actorgrad.autograd.function import BackwardCFunction
from actorgrad.autograd.graph import GradientEdge
from actorgrad.backward_arguments import (
    allows_unused,
    as_inputs,
    as_outputs,
    graph_root,
    input_edges,
    renamed_grad_tensors,
    seed_grads,
    unbatched_grad_outputs,
    warn_create_graph_cycle,
)
from actorgrad.devices.float_errors import FLOAT_ERRORS_IGNORED, float_errors
from actorgrad.formula_node import FormulaNode
from actorgrad.grad_commit import commit_or_stage, commit_sync, owned, post_accumulate_leaves
from actorgrad.grad_mode import grad_mode_on
from actorgrad.hooks import has_post_accumulate_hooks, run_post_accumulate_hooks_async
from actorgrad.node import GraphRoot
from actorgrad.ops.joining import stack
from actorgrad.scheduler import (
    GraphTask,
    active_trace,
    get_num_workers,
    reentrant_depth,
    run_graph_task,
    run_graph_task_inline,
)
from actorgrad.tensor import Tensor
from actorgrad.tensor_ops import tensor_ops

TensorOrTensors = Tensor | Sequence[Tensor]
Inputs = Tensor | GradientEdge | Sequence[Tensor | GradientEdge]


async def backward(
    tensors: TensorOrTensors,
    grad_tensors: TensorOrTensors | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables: TensorOrTensors | None = None,
    inputs: Inputs | None = None,
) -> None:
    """Accumulate d(tensors)/d(leaf) into each leaf's `.grad`, leaves committed only if the pass succeeds.
    `grad_variables` is PyTorch's deprecated name for `grad_tensors`."""
    if grad_variables is not None:
        grad_tensors = renamed_grad_tensors(grad_tensors, grad_variables)
    task = _backward_task(tensors, grad_tensors, retain_graph, create_graph, inputs)
    await _run(task)
    if commit_or_stage(task):
        leaves = post_accumulate_leaves(task)
        if has_post_accumulate_hooks(leaves):
            await run_post_accumulate_hooks_async(leaves, create_graph)


async def grad(
    outputs: TensorOrTensors,
    inputs: Inputs,
    grad_outputs: TensorOrTensors | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """d(outputs)/d(inputs), returned as a tuple; `.grad` of every leaf is left alone (a non-leaf that retains its
    gradient gets it, as in PyTorch). An input may be a
    GradientEdge (`actorgrad.autograd.graph.get_gradient_edge`): the gradient flowing into that edge. An unused
    input gets None where allow_unused is True, zeros where materialize_grads is (which implies allow_unused).
    With is_grads_batched, the first dimension of each grad_output is a batch: the result has it too.
    `only_inputs` is PyTorch's deprecated no-op."""
    passes = _grad_passes(outputs, inputs, grad_outputs, retain_graph, create_graph, only_inputs, allow_unused,
                          is_grads_batched, materialize_grads)
    task = next(passes)  # there is always one
    while True:
        try:
            await _run(task)
        except BaseException:
            passes.close()  # a batch that fails part way frees the graph it kept, unless asked to retain it
            raise
        try:
            task = next(passes)
        except StopIteration as done:
            return done.value


def _grad_passes(
    outputs: Any, inputs: Any, grad_outputs: Any, retain_graph: Any, create_graph: bool, only_inputs: bool,
    allow_unused: bool | None, is_grads_batched: bool, materialize_grads: bool,
) -> Generator[GraphTask, None, tuple]:
    """A grad() call as the passes it runs, each yielded for the caller to run (sync or awaited), and its result:
    one pass, or with is_grads_batched one per element of the batch, each but the last keeping the graph for the
    next, their gradients stacked (PyTorch runs one pass under vmap)."""
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate gradient for "
            "other parts of the graph, please use torch.autograd.backward.",
            FutureWarning,
            stacklevel=3,
        )
    allow_unused = allows_unused(allow_unused, materialize_grads)
    ins = as_inputs(inputs, "inputs")
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    outs = as_outputs(outputs, "outputs")
    seeds = unbatched_grad_outputs(outs, grad_outputs) if is_grads_batched else [grad_outputs]
    results, tasks = [], []
    for k, seed in enumerate(seeds):
        kept = k + 1 < len(seeds)  # for the next element's pass
        task = _grad_task(outs, ins, seed, True if kept else retain_graph, create_graph)
        try:
            yield task
            results.append(_placed(_captured_grads(task, create_graph, allow_unused), ins))
        except BaseException:  # the pass failed or was cancelled, or left an input unused
            if kept and not (create_graph if retain_graph is None else retain_graph):
                _free_graph(task)
            raise
        tasks.append(task)
    for task in tasks:  # after the last pass: a batch that fails part way commits nothing
        commit_or_stage(task)  # the gradients of non-leaves that retain theirs
    grads = _stacked(results, create_graph) if is_grads_batched else results[0]
    return _materialized(grads, ins, create_graph) if materialize_grads else grads


def _free_graph(task: GraphTask) -> None:
    """Free the saved values of the nodes of a failed pass that kept the graph for a later pass that will not
    run, as a failed plain pass frees those it ran: the nodes on the way to the inputs (all of them, where the
    pass failed part way: which of them ran is not recorded)."""
    for node in task.run:
        if isinstance(node, BackwardCFunction):
            node._saved = None
        elif isinstance(node, FormulaNode) and node.versions:  # as FormulaNode.apply frees
            node.saved = None
            node.versions = ()


def _stacked(results: list[tuple], create_graph: bool) -> tuple:
    """The gradients of a batch's passes, each input's stacked along a new first dimension (None stays None:
    an input unused by one pass is unused by all)."""
    def stacked(grads: tuple) -> Tensor | None:
        return None if grads[0] is None else grad_mode_on(stack, grads) if create_graph else stack(grads)

    return tuple(map(stacked, zip(*results)))


def _backward_task(tensors: Any, grad_tensors: Any, retain_graph: Any, create_graph: bool, inputs: Any) -> GraphTask:
    outputs = as_outputs(tensors, "tensors")
    root = graph_root(outputs, seed_grads(outputs, grad_tensors, create_graph))
    targets = None
    if inputs is not None:
        chosen = as_inputs(inputs, "inputs")
        if not chosen:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for t in chosen:  # first, as PyTorch: an input that does not require grad is refused by retain_grad
            if isinstance(t, Tensor):  # an edge has no tensor: only a leaf's accumulator keeps its gradient
                t.retain_grad()
        targets = {node: [] for node, _ in input_edges(chosen, "inputs")}
    if create_graph:  # once the call is accepted, as PyTorch's engine warns when it starts the pass
        warn_create_graph_cycle()
    return _graph_task(root, retain_graph, create_graph, targets, accumulate=True)


def _grad_task(outs: tuple, ins: tuple, grad_outputs: Any, retain_graph: Any, create_graph: bool) -> GraphTask:
    root = graph_root(outs, seed_grads(outs, grad_outputs, create_graph))
    captures: dict = {}
    for index, (node, input_nr) in enumerate(input_edges(ins, "inputs")):
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
            results.append(value if create_graph else Tensor(owned(value)))
    return tuple(results)


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
    """Run a pass on the event loop, with numpy's floating-point warnings off."""
    fp_errors = float_errors.set(FLOAT_ERRORS_IGNORED)
    try:
        await run_graph_task(task)
    except Exception as error:
        _explain(task, error)
        _release_error(task)
        raise
    finally:
        float_errors.reset(fp_errors)


def _explain(task: GraphTask, error: BaseException) -> None:
    """Anomaly mode: the error of a node that kept its forward stack tells where that node was made."""
    if error is task.error and task.error_node is not None:
        note_forward_stack(error, task.error_node)


def _release_error(task: GraphTask) -> None:
    """Let go of the pass's error: its traceback holds the frames that hold the task, a cycle that would keep
    the whole graph (nodes, saved arrays, staged gradients) alive until the garbage collector runs."""
    task.error = task.error_node = None


def refuse_inside_trio(name: str, async_name: str) -> None:
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
    on an event loop that must not be waited on), else in a trio run of its own. numpy's floating-point
    warnings are off for the pass."""
    fp_errors = float_errors.set(FLOAT_ERRORS_IGNORED)
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
    finally:
        float_errors.reset(fp_errors)


def _named(qualname: str) -> Callable:
    """Give a sync mirror its public name, which Python's own errors for its arguments print (`grad() got an
    unexpected keyword argument ...`, not `grad_sync()`), as do tracebacks."""

    def rename(fn: Callable) -> Callable:
        name = qualname.rpartition(".")[2]
        fn.__code__ = fn.__code__.replace(co_name=name, co_qualname=qualname)
        fn.__name__, fn.__qualname__ = name, qualname
        return fn

    return rename


@_named("backward")
def backward_sync(
    tensors: TensorOrTensors,
    grad_tensors: TensorOrTensors | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables: TensorOrTensors | None = None,
    inputs: Inputs | None = None,
) -> None:
    """`actorgrad.autograd.backward`: the sync form of `await actorgrad.backward(...)`."""
    refuse_inside_trio("backward", "actorgrad.backward")
    if grad_variables is not None:
        grad_tensors = renamed_grad_tensors(grad_tensors, grad_variables)
    task = _backward_task(tensors, grad_tensors, retain_graph, create_graph, inputs)
    _run_sync(task)
    commit_sync(task, create_graph)


def backward_collecting(tensors: TensorOrTensors, grad_tensors: Sequence[Tensor], collect: Sequence[Tensor]) -> list:
    """A sync backward whose gradients for the leaves `collect` (made for this pass) are returned, not kept:
    how a recomputing checkpoint gets its inputs' gradients while the rest go to the leaves as usual."""
    task = _backward_task(tensors, grad_tensors, None, False, None)
    _run_sync(task)
    collected = [task.staged.pop(t, None) for t in collect]
    commit_sync(task, False)
    return collected


@_named("grad")
def grad_sync(
    outputs: TensorOrTensors,
    inputs: Inputs,
    grad_outputs: TensorOrTensors | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """`actorgrad.autograd.grad`: the sync form of `await actorgrad.grad(...)`."""
    refuse_inside_trio("grad", "actorgrad.grad")
    passes = _grad_passes(outputs, inputs, grad_outputs, retain_graph, create_graph, only_inputs, allow_unused,
                          is_grads_batched, materialize_grads)
    task = next(passes)  # there is always one
    while True:
        try:
            _run_sync(task)
        except BaseException:
            passes.close()  # a batch that fails part way frees the graph it kept, unless asked to retain it
            raise
        try:
            task = next(passes)
        except StopIteration as done:
            return done.value


@_named("Tensor.backward")
def tensor_backward(
    self: Tensor,
    gradient: Tensor | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Inputs | None = None,
) -> None:
    """`Tensor.backward`: sync, for scripts; in a trio app use `await actorgrad.backward(t)`."""
    backward_sync(self, gradient, retain_graph, create_graph, None, inputs)


Tensor.backward = tensor_backward
