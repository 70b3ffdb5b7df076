"""`actorgrad.autograd.graph`: looking at and hooking into the backward graph, as in `torch.autograd.graph`.

`Node` (with `name()`, `next_functions`, `metadata`, `register_hook`, `register_prehook`), `GradientEdge` and
`get_gradient_edge` (an edge can stand for a tensor among the `inputs` of `grad()`), `saved_tensors_hooks`
(pack what ops save, unpack it when backward needs it) and `register_multi_grad_hook`.
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from actorgrad.accumulate_grad import gradient_edge
from actorgrad.hooks import MultiHandle, current_graph_task
from actorgrad.node import Node
from actorgrad.saved_tensors import _saved_tensors_hooks
from actorgrad.tensor import Tensor

__all__ = ["GradientEdge", "Node", "get_gradient_edge", "register_multi_grad_hook", "saved_tensors_hooks"]


class GradientEdge(NamedTuple):
    """Where a gradient enters the graph: a node and which of its inputs (slots)."""

    node: Node
    output_nr: int


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge that `tensor`'s gradient flows into: its grad_fn's slot, or its leaf accumulator. It stays
    valid, and usable as an input of `grad()`, even when `tensor` itself is gone."""
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require gradients"
        )
    return GradientEdge(*gradient_edge(tensor))


class saved_tensors_hooks:
    """Inside, each op recorded passes every tensor it saves for backward to `pack_hook(tensor)` and keeps
    what that returns; when backward needs the tensor, `unpack_hook(packed)` must return a tensor of the same
    values. For example, to keep saved activations compressed or on disk. The innermost pair applies."""

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]) -> None:
        self.hooks = (pack_hook, unpack_hook)
        self._tokens: list = []

    def __enter__(self) -> None:
        self._tokens.append(_saved_tensors_hooks.set(self.hooks))

    def __exit__(self, *exc_info: object) -> None:
        _saved_tensors_hooks.reset(self._tokens.pop())


_SKIP = object()


def _hook_calling(fn: Callable, decide: Callable[[Any], Any]) -> Callable:
    """A tensor hook that calls `fn(decide(grad))` unless `decide` says `_SKIP`, and never replaces the
    gradient; `async def` when `fn` is, so that the engine awaits it."""
    if inspect.iscoroutinefunction(fn):

        async def async_hook(grad: Any) -> None:
            arg = decide(grad)
            if arg is not _SKIP:
                await fn(arg)

        return async_hook

    def hook(grad: Any) -> None:
        arg = decide(grad)
        if arg is not _SKIP:
            fn(arg)

    return hook


def register_multi_grad_hook(
    tensors: Sequence[Tensor], fn: Callable, *, mode: str = "all"
) -> MultiHandle:
    """Once per backward pass: with mode "all", `fn(grads)` after the gradients of all of `tensors` that the
    pass reaches are computed (None for the others); with mode "any", `fn(grad)` on the first of them.
    `fn` may be `async def`. Returns one handle that removes the hook from every tensor."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    lock = threading.Lock()  # sync hooks of heavy nodes run on worker threads
    if mode == "any":
        passes_seen: weakref.WeakSet = weakref.WeakSet()

        def first(grad: Any) -> Any:
            with lock:
                task = current_graph_task.get()
                if task in passes_seen:
                    return _SKIP
                passes_seen.add(task)
                return grad

        return MultiHandle(t.register_hook(_hook_calling(fn, first)) for t in tensors)

    # Per pass: how many of the tensors' gradients are still to come, and those computed so far.
    pending: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def collecting(index: int) -> Callable:
        def collect(grad: Any) -> Any:
            with lock:
                task = current_graph_task.get()
                state = pending.get(task)
                if state is None:
                    expected = sum(task.will_execute(gradient_edge(t)[0]) for t in tensors)
                    state = pending[task] = [expected, [None] * len(tensors)]
                state[1][index] = grad
                state[0] -= 1
                if state[0]:
                    return _SKIP
                del pending[task]
                return state[1]

        return collect

    return MultiHandle(t.register_hook(_hook_calling(fn, collecting(i))) for i, t in enumerate(tensors))

