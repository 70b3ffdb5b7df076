"""Backward hooks: the functions users attach to tensors and nodes, and how a pass runs them.

A node with hooks carries a NodeHooks (`node.hooks`); a node without has None there, which is the one check
the scheduler's fast path pays. A leaf keeps its NodeHooks on the tensor (`_hooks`), since its AccumulateGrad
lives only while a graph holds it; each new accumulator of the leaf shares it.

Around one run of a node, the hooks run in PyTorch's order: tensor hooks (per slot), the pass's capture and
retain_grad of the slot's gradient, node prehooks, the node, node post hooks. `NodeHooks.steps` spells this
order once, as a generator that yields each hook call; `run_steps` drives it with sync calls (an async hook
gets a trio run of its own: there is no event loop), `run_steps_async` awaits the hooks that are async.
As in PyTorch, every hook runs with grad mode on only when its pass records (create_graph).
"""

from __future__ import annotations

import inspect
import itertools
import sys
import weakref
from collections.abc import Callable, Generator, Iterable
from contextlib import nullcontext
from contextvars import ContextVar
from typing import Any

import numpy as np
import trio

from actorgrad.grad_mode import _grad_enabled, enable_grad
from actorgrad.tensor import Tensor

_handle_ids = itertools.count()

# The pass whose hook is running (for hooks that keep per-pass state, such as register_multi_grad_hook's).
current_graph_task: ContextVar[Any] = ContextVar("actorgrad_current_graph_task", default=None)

TENSOR_PRE, PRE, POST, POST_ACCUMULATE = "tensor_pre", "pre", "post", "post_accumulate"

HookCall = tuple[Callable, tuple]
Steps = Generator[HookCall, Any, Any]


class RemovableHandle:
    """What registering a hook returns: `.remove()` (or leaving a `with handle:` block) unregisters it."""

    __slots__ = ("_hooks", "id")

    def __init__(self, hooks: dict) -> None:
        self._hooks = hooks
        self.id = next(_handle_ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()


class MultiHandle:
    """One handle over several hooks (register_multi_grad_hook's)."""

    __slots__ = ("handles",)

    def __init__(self, handles: Iterable[RemovableHandle]) -> None:
        self.handles = tuple(handles)

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __enter__(self) -> MultiHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()


def _add(hooks: dict, fn: Callable) -> RemovableHandle:
    if not callable(fn):
        raise TypeError(f"a hook must be callable, got {type(fn).__name__}")
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


def _hook_name(fn: Callable) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


class NodeHooks:
    """The hooks of one node, each kind a dict from handle id to function, in registration order."""

    __slots__ = ("tensor_pre", "pre", "post", "post_accumulate")

    def __init__(self) -> None:
        self.tensor_pre: dict[int, dict[int, Callable]] = {}  # slot -> the hooks of the tensor of that slot
        self.pre: dict[int, Callable] = {}
        self.post: dict[int, Callable] = {}
        self.post_accumulate: dict[int, Callable] = {}  # a leaf's: they run when the pass commits `.grad`

    def add(self, kind: str, fn: Callable) -> RemovableHandle:
        return _add(getattr(self, kind), fn)

    def add_tensor_pre(self, slot: int, fn: Callable) -> RemovableHandle:
        return _add(self.tensor_pre.setdefault(slot, {}), fn)

    @property
    def awaits(self) -> bool:
        """Does running this node await a hook? Such a node runs on the event loop, never on a worker."""
        tensor_hooks = (fn for hooks in self.tensor_pre.values() for fn in hooks.values())
        hooks = itertools.chain(tensor_hooks, self.pre.values(), self.post.values())
        return any(map(inspect.iscoroutinefunction, hooks))

    def steps(self, task: Any, node: Any, grads: list) -> Steps:
        """One run of `node` on `grads` with its hooks around it; returns its output gradients, or None when the
        pass only visits the node to capture what it receives (`task.receive`)."""
        raw = task.ops is None  # raw arrays (a plain pass) rather than Tensors (create_graph)
        received_on = _received_devices(node) if raw else None  # the raw arrays' devices
        for slot, hooks in list(self.tensor_pre.items()):
            value = grads[slot]
            device = None if received_on is None else received_on[slot]
            for fn in list(hooks.values()):
                value = yield from _replace(fn, value, slot, device)
            grads[slot] = value
        if not task.receive(node, grads):
            return None
        if self.pre:
            grads = yield from _replace_all(self.pre, lambda fn, values: (fn, (values,)), grads, received_on)
        outputs = node.apply(grads, task)
        if self.post:
            received = _as_tensors(grads, received_on)
            sent_on = _sent_devices(node) if raw else None
            outputs = yield from _replace_all(self.post, lambda fn, values: (fn, (values, received)), outputs, sent_on)
        return outputs


def _received_devices(node: Any) -> tuple:
    """The device of the gradient arriving in each of the node's slots."""
    return tuple(node.device if meta is None else meta.device for meta in node.input_metadata)


def _sent_devices(node: Any) -> tuple:
    """The device of the gradient the node hands on along each edge: that of the forward input it is for."""
    return tuple(node.device if to is None else to.input_metadata[nr].device for to, nr in node.next_functions)


def grad_tensor(array: Any, device: Any) -> Tensor:
    """A raw gradient as the Tensor a hook or a custom backward gets. numpy's 0-d results are scalars
    (np.float64), which an in-place change (`grad.mul_(2)`) could not write to: those become 0-d arrays."""
    return Tensor(np.asarray(array) if isinstance(array, np.generic) else array, device=device)


def _as_tensors(values: Iterable, devices: tuple | None) -> tuple:
    """Raw gradient arrays as Tensors on their `devices`; None: they are Tensors already (create_graph)."""
    if devices is None:
        return tuple(values)
    return tuple(None if v is None else grad_tensor(v, d) for v, d in zip(values, devices))


def _checked(result: Any, before: Any, index: int, fn: Callable) -> Any:
    """A hook's replacement for the gradient `before` (a Tensor or None) at `index`, as PyTorch checks it."""
    if result is not None and not isinstance(result, Tensor):
        raise TypeError(f"expected Tensor, but hook '{_hook_name(fn)}' returned '{type(result).__name__}'")
    if before is None:
        if result is not None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
        return None
    if result is None:
        return before
    if result.shape != before.shape:
        raise RuntimeError(
            f"hook '{_hook_name(fn)}' has changed the size of value (was {before.shape}, got {result.shape})"
        )
    if result.dtype != before.dtype:
        raise RuntimeError(
            f"hook '{_hook_name(fn)}' has changed the type of value (was {before.dtype} got {result.dtype})"
        )
    if result._device is not before._device:
        raise RuntimeError(
            f"hook '{_hook_name(fn)}' returned an invalid gradient at index {index} - expected device "
            f"{before._device} but got {result._device}"
        )
    return result


def _replace(fn: Callable, grad: Any, slot: int, device: Any) -> Steps:
    """A tensor hook's call on the gradient of one slot: `fn(grad)` may return a replacement. `device` is the
    raw gradient's, or None when it is a Tensor already (create_graph)."""
    raw = device is not None
    before = grad_tensor(grad, device) if raw and grad is not None else grad
    after = _checked((yield fn, (before,)), before, slot, fn)
    return after._data if raw and after is not None else after


def _replace_all(hooks: dict, call: Callable, grads: Any, devices: tuple | None) -> Steps:
    """Node hooks' calls on a sequence of gradients: each may return a replacement sequence of the same length.
    `devices` are the raw gradients', or None when they are Tensors already (create_graph)."""
    values = _as_tensors(grads, devices)
    for fn in list(hooks.values()):
        result = yield call(fn, values)
        if result is None:
            continue
        if not isinstance(result, tuple):
            raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
        if len(result) != len(values):
            raise RuntimeError(
                f"hook '{_hook_name(fn)}' has returned an incorrect number of values (got {len(result)}, but "
                f"expected {len(values)})"
            )
        # a None in the tuple drops that gradient, as in PyTorch (a tensor hook's None keeps its gradient instead)
        values = tuple(None if new is None else _checked(new, old, i, fn)
                       for i, (new, old) in enumerate(zip(result, values)))
    return [v._data if devices is not None and v is not None else v for v in values]


def node_hooks(node: Any) -> NodeHooks:
    """The node's NodeHooks, made on first use."""
    if node.hooks is None:
        node.hooks = NodeHooks()
    return node.hooks


def leaf_hooks(leaf: Tensor) -> NodeHooks:
    """A leaf's NodeHooks, shared with its accumulator (now and whenever a new one is made)."""
    hooks = leaf._hooks
    if hooks is None:
        accumulator = leaf._accumulator() if leaf._accumulator is not None else None
        hooks = node_hooks(accumulator) if accumulator is not None else NodeHooks()
        leaf._hooks = hooks
    return hooks


# Per pass: how many of its staged gradients (in the staged dict's order) `own_staged_grads` has seen to.
_owned_upto: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# References to a staged array that nothing else holds: the staged dict, `own_staged_grads`'s `grad`, getrefcount's
# argument.
_UNSHARED_REFS = 3


def own_staged_grads(task: Any) -> None:
    """Before a hook runs in a pass: give the pass its own copy of each gradient it staged that something else
    still holds. PyTorch's AccumulateGrad and retain_grad take their gradient as they run (a copy where it is
    shared), so a hook that then changes that array in place, for another consumer, leaves `.grad` alone; here the
    array waits in `task.staged` until the pass commits. Each entry is seen to once: a new one comes after the
    count, and one already seen is only ever replaced by a new sum. A pass without hooks never gets here."""
    staged = task.staged
    upto, end = _owned_upto.get(task, 0), len(staged)
    if end == upto:
        return
    for tensor in list(itertools.islice(staged, upto, end)):
        grad = staged[tensor]
        if isinstance(grad, Tensor):  # create_graph: PyTorch clones under grad mode
            with enable_grad():
                own = grad.clone()
        elif getattr(grad, "base", None) is not None or sys.getrefcount(grad) > _UNSHARED_REFS:
            own = grad.copy()
        else:
            continue
        task.replace_staged(tensor, grad, own)  # a hook may run on a worker thread while others stage sums
    _owned_upto[task] = end


def _call(call: HookCall, task: Any, recording: bool) -> Any:
    """A hook's call, with grad mode on only when the pass records (create_graph), as PyTorch's engine runs
    hooks; during a pass, a backward the hook starts is nested in it (as in a node's backward)."""
    fn, args = call
    if task is not None:
        own_staged_grads(task)
    token, mode = current_graph_task.set(task), _grad_enabled.set(recording)
    try:
        with nullcontext() if task is None else task.nested():
            result = fn(*args)
            if inspect.isawaitable(result):  # an async hook, here where no event loop runs: give it one
                result = trio.run(_awaited, result)  # (a hook that is not `async def` may not return an awaitable)
        return result
    finally:
        _grad_enabled.reset(mode)
        current_graph_task.reset(token)


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


async def _call_async(call: HookCall, task: Any, recording: bool) -> Any:
    fn, args = call
    if task is not None:
        own_staged_grads(task)
    token, mode = current_graph_task.set(task), _grad_enabled.set(recording)
    try:
        with nullcontext() if task is None else task.nested():
            result = fn(*args)
            return await result if inspect.isawaitable(result) else result
    finally:
        _grad_enabled.reset(mode)
        current_graph_task.reset(token)


def run_steps(steps: Steps, task: Any) -> Any:
    """Drive `steps` to its result, calling each hook on this thread."""
    recording = task.ops is not None
    try:
        call = next(steps)
        while True:
            call = steps.send(_call(call, task, recording))
    except StopIteration as done:
        return done.value


async def run_steps_async(steps: Steps, task: Any) -> Any:
    """Drive `steps` to its result on the event loop, awaiting the hooks that are async."""
    recording = task.ops is not None
    try:
        call = next(steps)
        while True:
            call = steps.send(await _call_async(call, task, recording))
    except StopIteration as done:
        return done.value


def _post_accumulate_calls(tensors: Iterable[Tensor]) -> list[HookCall]:
    return [(fn, (t,)) for t in tensors if t._hooks is not None for fn in list(t._hooks.post_accumulate.values())]


def has_post_accumulate_hooks(tensors: Iterable[Tensor]) -> bool:
    for t in tensors:  # a loop, not any(): every pass asks, and a generator cost more than the common answer
        if t._hooks is not None and t._hooks.post_accumulate:
            return True
    return False


def run_post_accumulate_hooks(tensors: Iterable[Tensor], create_graph: bool) -> None:
    """After a pass has committed `.grad`: each leaf's post-accumulate-grad hooks, `fn(leaf)`, with grad mode on
    only for a pass that recorded (so that a hook may update its leaf in place, as an optimizer step does)."""
    for call in _post_accumulate_calls(tensors):
        _returned_nothing(_call(call, None, create_graph), call)


async def run_post_accumulate_hooks_async(tensors: Iterable[Tensor], create_graph: bool) -> None:
    for call in _post_accumulate_calls(tensors):
        _returned_nothing(await _call_async(call, None, create_graph), call)


def _returned_nothing(result: Any, call: HookCall) -> None:
    """A post-accumulate-grad hook may not return a value (it would be ignored), as PyTorch checks it; its leaf
    itself counts as nothing (what `leaf.sub_(...)` returns)."""
    if result is None or result is call[1][0]:
        return
    if not isinstance(result, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
    raise RuntimeError("Tensor post accumulate grad hooks should return None.")


# -- registering on tensors ------------------------------------------------------------------------------------
def register_hook(self: Tensor, hook: Callable) -> RemovableHandle:
    """`hook(grad)` runs each time a gradient for this tensor is computed, before it is used (for a leaf:
    before it is accumulated into `.grad`); it may return a Tensor to use instead. It may be `async def`."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._grad_fn is not None:
        return node_hooks(self._grad_fn).add_tensor_pre(self._output_nr, hook)
    return leaf_hooks(self).add_tensor_pre(0, hook)


def register_post_accumulate_grad_hook(self: Tensor, hook: Callable) -> RemovableHandle:
    """`hook(leaf)` runs after a backward pass has updated this leaf's `.grad` (when the pass commits)."""
    if self._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    return leaf_hooks(self).add(POST_ACCUMULATE, hook)


Tensor.register_hook = register_hook
Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
