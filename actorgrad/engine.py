"""The public engine entry points: `await backward(...)` and `await grad(...)`, and their sync mirrors.

Each call builds one GraphTask from a GraphRoot seeded with the output gradients, runs it through the
scheduler, and then either commits the staged leaf gradients (all at once, only if the whole pass
succeeded) or returns the captured ones.
"""

from __future__ import annotations

import operator
import sys
import threading
import warnings
from collections.abc import Callable, Generator, Sequence
from contextvars import ContextVar
from typing import Any

import numpy as np
import trio

from actorgrad.accumulate_grad import grad_accumulator, gradient_edge
from actorgrad.autograd.anomaly_mode import is_anomaly_check_nan_enabled, note_forward_stack
from actorgrad.autograd.function import BackwardCFunction
from actorgrad.autograd.graph import GradientEdge
from actorgrad.devices import cpu, is_writeable
from actorgrad.grad_mode import grad_mode_on
from actorgrad.hooks import has_post_accumulate_hooks, run_post_accumulate_hooks, run_post_accumulate_hooks_async
from actorgrad.node import Edge, GraphRoot
from actorgrad.ops.joining import stack
from actorgrad.ops.record import FormulaNode
from actorgrad.scheduler import (
    GraphTask,
    active_trace,
    get_num_workers,
    reentrant_depth,
    run_graph_task,
    run_graph_task_inline,
)
from actorgrad.tensor import Tensor, bump_version, grad_dtypes
from actorgrad.tensor_ops import tensor_ops

TensorOrTensors = Tensor | Sequence[Tensor]
Inputs = Tensor | GradientEdge | Sequence[Tensor | GradientEdge]

# Sync calls from several threads commit into shared leaves; this makes each commit one atomic step.
_commit_lock = threading.Lock()

# A pass runs with numpy's floating-point warnings off: PyTorch's backward gives none (a 1/0 is just inf).
# numpy >= 2 holds that setting in a ContextVar, which every task and worker thread of a pass inherits; setting
# it directly costs a few hundred instructions, where `with np.errstate(all="ignore")` cost 10,000 (6% of a
# small backward call), mostly its Python.
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _fp_errors
except ImportError:  # numpy 1.x keeps it per thread, not per task: its warnings stay on
    _fp_errors = ContextVar("actorgrad_fp_errors_unused", default=None)
with np.errstate(all="ignore"):
    _FP_ERRORS_IGNORED = _fp_errors.get()


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
    """The tensors (or gradient edges) whose gradients a call asks for (PyTorch's error for any other value)."""
    if isinstance(value, Tensor | GradientEdge):
        return (value,)
    values = _sequence(value, what, "a Tensor or a GradientEdge")
    for v in values:
        if not isinstance(v, Tensor | GradientEdge):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(v).__name__}")
    return values


def _seed_grads(outputs: tuple, grad_outputs: Any, create_graph: bool) -> list:
    """One starting gradient per output: the given one (checked against the output), or ones for a scalar."""
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        given = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    else:
        # PyTorch pairs them with the outputs and ignores any extra gradients
        given = list(_sequence(grad_outputs, "grad_tensors", "a Tensor or None"))[:len(outputs)]
    for i, grad in enumerate(given):
        if grad is not None and not isinstance(grad, Tensor):
            raise TypeError(f"grad_tensors[{i}] must be a Tensor or None, got {type(grad).__name__}")
    if len(given) != len(outputs):
        raise RuntimeError(
            f"got {len(outputs)} tensors and {len(given)} gradients: grad_tensors should have the same length as "
            f"tensors (give a Tensor, or None for a scalar, per tensor)"
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
        edge = gradient_edge(t)  # a view made under no_grad has none: its own accumulator, which no op feeds
        edges.append((grad_accumulator(t), 0) if edge[0] is None else edge)
    return edges


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
        grad_tensors = _renamed_grad_tensors(grad_tensors, grad_variables)
    task = _backward_task(tensors, grad_tensors, retain_graph, create_graph, inputs)
    await _run(task)
    if _commit_or_stage(task) and has_post_accumulate_hooks(task.staged):
        await run_post_accumulate_hooks_async(task.staged, create_graph)


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


def _renamed_grad_tensors(grad_tensors: Any, grad_variables: Any) -> Any:
    """`backward(grad_variables=...)`: PyTorch's deprecated name, warned about as PyTorch does."""
    warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=3)
    if grad_tensors is not None:
        raise RuntimeError(
            "`grad_tensors` and `grad_variables` (deprecated) arguments both passed to `backward()`. Please only "
            "use `grad_tensors`."
        )
    return grad_variables


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
    allow_unused = _allows_unused(allow_unused, materialize_grads)
    ins = _as_inputs(inputs, "inputs")
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    outs = _as_tuple(outputs, "outputs")
    seeds = _unbatched(outs, grad_outputs) if is_grads_batched else [grad_outputs]
    results, tasks = [], []
    for k, seed in enumerate(seeds):
        kept = k + 1 < len(seeds)  # for the next element's pass
        task = _grad_task(outs, ins, seed, True if kept else retain_graph, create_graph)
        try:
            yield task
        except GeneratorExit:  # the pass failed or was cancelled
            if kept and not (create_graph if retain_graph is None else retain_graph):
                _free_graph(task)
            raise
        tasks.append(task)
        results.append(_placed(_captured_grads(task, create_graph, allow_unused), ins))
    for task in tasks:  # after the last pass: a batch that fails part way commits nothing
        _commit_or_stage(task)  # the gradients of non-leaves that retain theirs
    grads = _stacked(results, create_graph) if is_grads_batched else results[0]
    return _materialized(grads, ins, create_graph) if materialize_grads else grads


def _free_graph(task: GraphTask) -> None:
    """Free the saved values of the nodes of a failed pass that kept the graph for a later pass that will not
    run, as a failed plain pass frees those it ran. (All it would reach: which of them ran is not recorded.)"""
    for node in task.pending:
        if isinstance(node, BackwardCFunction):
            node._saved = None
        elif isinstance(node, FormulaNode) and node.versions:  # as FormulaNode.apply frees
            node.saved = None
            node.versions = ()


def _unbatched(outputs: tuple, grad_outputs: Any) -> list[list[Tensor]]:
    """is_grads_batched: the grad_outputs of each pass, one list per element of the batch (the first dimension
    of every grad_output), checked against the outputs as PyTorch checks them."""
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        given = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    else:
        given = list(_sequence(grad_outputs, "grad_outputs", "a Tensor"))[:len(outputs)]
    for i, (out, grad) in enumerate(zip(outputs, given)):
        if not isinstance(grad, Tensor) or not grad.ndim:
            got = f"a shape of {grad.shape}" if isinstance(grad, Tensor) else type(grad).__name__
            raise RuntimeError(
                f"If `is_grads_batched=True`, each grad_output needs a batch dimension first: grad_output[{i}] has "
                f"{got} and output[{i}] has a shape of {out.shape}"
            )
        if grad.shape[1:] != out.shape:
            raise RuntimeError(
                f"If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                f"dimension. The sizes of the remaining dimensions are expected to match the shape of corresponding "
                f"output, but a mismatch was detected: grad_output[{i}] has a shape of {grad.shape[1:]} and "
                f"output[{i}] has a shape of {out.shape}. If you only want some tensors in `grad_output` to be "
                f"considered batched, consider using vmap."
            )
    sizes = [grad.shape[0] for grad in given]
    if len(set(sizes)) > 1 or 0 in sizes:
        raise ValueError(
            f"is_grads_batched=True needs one batch of at least one element: every grad_output the same size in "
            f"its first dimension, got sizes {sizes}"
        )
    return [[grad[k] for grad in given] for k in range(sizes[0] if sizes else 1)]


def _stacked(results: list[tuple], create_graph: bool) -> tuple:
    """The gradients of a batch's passes, each input's stacked along a new first dimension (None stays None:
    an input unused by one pass is unused by all)."""
    def stacked(grads: tuple) -> Tensor | None:
        return None if grads[0] is None else grad_mode_on(stack, grads) if create_graph else stack(grads)

    return tuple(map(stacked, zip(*results)))


def _backward_task(tensors: Any, grad_tensors: Any, retain_graph: Any, create_graph: bool, inputs: Any) -> GraphTask:
    outputs = _as_tuple(tensors, "tensors")
    root = _root(outputs, _seed_grads(outputs, grad_tensors, create_graph))
    targets = None
    if inputs is not None:
        chosen = _as_inputs(inputs, "inputs")
        if not chosen:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for t in chosen:  # first, as PyTorch: an input that does not require grad is refused by retain_grad
            if isinstance(t, Tensor):  # an edge has no tensor: only a leaf's accumulator keeps its gradient
                t.retain_grad()
        targets = {node: [] for node, _ in _input_edges(chosen, "inputs")}
    return _graph_task(root, retain_graph, create_graph, targets, accumulate=True)


def _grad_task(outs: tuple, ins: tuple, grad_outputs: Any, retain_graph: Any, create_graph: bool) -> GraphTask:
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
    """Run a pass on the event loop, with numpy's floating-point warnings off."""
    fp_errors = _fp_errors.set(_FP_ERRORS_IGNORED)
    try:
        await run_graph_task(task)
    except Exception as error:
        _explain(task, error)
        _release_error(task)
        raise
    finally:
        _fp_errors.reset(fp_errors)


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


def _commit_or_stage(task: GraphTask) -> bool:
    """Commit a finished pass's leaf gradients (True); a pass nested in a backward pass hands them to the outer
    pass instead (False), so that the outermost pass commits the whole nest at once, or nothing if any part of
    it fails, and runs the post-accumulate hooks then. (Nested in a `grad()` pass, which commits nothing, they
    are committed now, as PyTorch does.)"""
    outer = task.outer
    if outer is None or not outer.accumulate:
        _commit(task.staged)
        return True
    recorded = outer.ops is not None
    for tensor, grad in task.staged.items():
        if recorded:
            if not isinstance(grad, Tensor):
                grad = Tensor(grad, device=tensor._device)
        elif isinstance(grad, Tensor) and grad._grad_fn is None and not grad._requires_grad:
            grad = grad._data  # no graph to keep (a create_graph pass's gradient keeps its own, as PyTorch's)
        outer.stage(tensor, grad)
    return False


def _commit_sync(task: GraphTask, create_graph: bool) -> None:
    """`_commit_or_stage`, then the post-accumulate hooks when this pass committed (a sync call's)."""
    if _commit_or_stage(task) and has_post_accumulate_hooks(task.staged):
        run_post_accumulate_hooks(task.staged, create_graph)


def _as_grad_dtype(tensor: Tensor, grad: Any) -> Any:
    """`grad` in the dtype `tensor.grad` takes: its `grad_dtype` where one was set (None: the gradient's own),
    else its dtype."""
    dtype = grad_dtypes.get(id(tensor), tensor.dtype)
    if dtype is None or grad.dtype == dtype:
        return grad
    return grad.to(dtype) if isinstance(grad, Tensor) else grad.astype(dtype)


def _commit(staged: dict) -> None:
    """Add every staged gradient into its tensor's `.grad`, all in one step: a Tensor (a create_graph pass's)
    with its graph, an array in place where it can."""
    if not staged:
        return
    # `_grad` directly: staged gradients have their tensor's shape and dtype, and `.grad =` refuses any other
    # shape, so a held gradient always matches too.
    with _commit_lock:
        for tensor in staged:
            grad = staged[tensor]
            held = tensor._grad
            if grad_dtypes:
                grad = _as_grad_dtype(tensor, grad)
            if isinstance(grad, Tensor):
                # A first gradient is cloned, as PyTorch does under grad mode: the staged Tensor may be the caller's
                # grad_tensors or another leaf's gradient, which a later pass would otherwise add into in place.
                tensor._grad = grad_mode_on(grad.clone) if held is None else grad_mode_on(operator.add, held, grad)
            elif held is None:
                dtype = grad.dtype if grad_dtypes else tensor.dtype  # cast to the tensor's grad dtype already
                tensor._grad = Tensor(_as_new_grad(grad, dtype, tensor._device), device=tensor._device)
            elif held._grad_fn is None and not held._requires_grad and is_writeable(held._data):
                held._data += grad
                bump_version(held)
            else:
                tensor._grad = Tensor(held._data + grad, device=tensor._device)


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
    fp_errors = _fp_errors.set(_FP_ERRORS_IGNORED)
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
        _fp_errors.reset(fp_errors)


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
        grad_tensors = _renamed_grad_tensors(grad_tensors, grad_variables)
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
