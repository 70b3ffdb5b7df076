"""Committing a finished pass's leaf gradients into `.grad`: all of them in one step, after the whole pass
succeeded (or handed to the outer pass of a nest), so that an error or a cancellation leaves no `.grad`
half-updated."""

from __future__ import annotations

import operator
import sys
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

from actorgrad.devices import is_writeable
from actorgrad.grad_mode import grad_mode_on
from actorgrad.hooks import has_post_accumulate_hooks, run_post_accumulate_hooks
from actorgrad.scheduler import GraphTask
from actorgrad.tensor import Tensor, grad_dtypes
from actorgrad.version_counter import bump_version

# Sync calls from several threads commit into shared leaves; this makes each commit one atomic step.
_commit_lock = threading.Lock()


def owned(array: Any) -> Any:
    """A gradient array the caller may write to (rules may hand out broadcast views or shared arrays)."""
    if not isinstance(array, np.ndarray | np.generic):
        return array.copy()  # a GPU array: its own copy
    array = np.asarray(array)
    return array if array.flags.writeable and array.base is None else array.copy()


# References to a staged gradient that nothing else holds: the staged dict, commit's `grad`, _as_new_grad's
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


def commit_or_stage(task: GraphTask) -> bool:
    """Commit a finished pass's leaf gradients (True); a pass nested in a backward pass hands them to the outer
    pass instead (False), so that the outermost pass commits the whole nest at once, or nothing if any part of
    it fails, and runs the post-accumulate hooks then. (Nested in a `grad()` pass, which commits nothing, they
    are committed now, as PyTorch does.)"""
    outer = task.outer
    if outer is None or not outer.accumulate:
        commit(task.staged)
        return True
    recorded = outer.ops is not None
    for tensor, grad in task.staged.items():
        if recorded:
            if not isinstance(grad, Tensor):
                grad = Tensor(grad, device=tensor._device)
        elif isinstance(grad, Tensor) and grad._grad_fn is None and not grad._requires_grad:
            grad = grad._data  # no graph to keep (a create_graph pass's gradient keeps its own, as PyTorch's)
        outer.stage(tensor, grad)
    for leaf in task.reached_without_grad or ():
        outer.reach_without_grad(leaf)
    return False


def post_accumulate_leaves(task: GraphTask) -> Iterable[Tensor]:
    """The leaves whose post-accumulate-grad hooks a pass that committed runs: those it staged a gradient for,
    then those it reached without one."""
    staged, reached = task.staged, task.reached_without_grad
    if reached is None:
        return staged
    return [*staged, *(leaf for leaf in dict.fromkeys(reached) if leaf not in staged)]


def commit_sync(task: GraphTask, create_graph: bool) -> None:
    """`commit_or_stage`, then the post-accumulate hooks when this pass committed (a sync call's)."""
    if commit_or_stage(task):
        leaves = post_accumulate_leaves(task)
        if has_post_accumulate_hooks(leaves):
            run_post_accumulate_hooks(leaves, create_graph)


def _as_grad_dtype(tensor: Tensor, grad: Any) -> Any:
    """`grad` in the dtype `tensor.grad` takes: its `grad_dtype` where one was set (None: the gradient's own),
    else its dtype."""
    dtype = grad_dtypes.get(id(tensor), tensor.dtype)
    if dtype is None or grad.dtype == dtype:
        return grad
    return grad.to(dtype) if isinstance(grad, Tensor) else grad.astype(dtype)


def commit(staged: dict) -> None:
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
            elif tensor._grad_fn is None and is_writeable(held._data):
                # A leaf's: in place even into a gradient with a graph (create_graph's), as PyTorch's AccumulateGrad
                # adds without grad mode: it keeps its history and `.grad` stays the same tensor. A retained
                # non-leaf's is replaced by the sum, as PyTorch's retain_grad hook does (an old reference keeps
                # the old gradient).
                held._data += grad
                bump_version(held)
            else:  # asarray: numpy sums two zero-dim arrays into a scalar
                tensor._grad = Tensor(tensor._device.xp.asarray(held._data + grad), device=tensor._device)
