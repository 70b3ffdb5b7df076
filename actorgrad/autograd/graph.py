"""`actorgrad.autograd.graph`: looking at and hooking into the backward graph, as in `torch.autograd.graph`.

`Node` (with `name()`, `next_functions`, `metadata`, `register_hook`, `register_prehook`), `GradientEdge` and
`get_gradient_edge` (an edge can stand for a tensor among the outputs or the `inputs` of `grad()` and
`backward()`), `saved_tensors_hooks`
(pack what ops save, unpack it when backward needs it) and the hooks built on it (`save_on_cpu`,
`allow_mutation_on_saved_tensors`), `disable_saved_tensors_hooks`, `increment_version` and
`register_multi_grad_hook`.
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from typing import Any, NamedTuple

from actorgrad.accumulate_grad import gradient_edge
from actorgrad.hooks import MultiHandle, current_graph_task
from actorgrad.node import Node
from actorgrad.saved_tensors import _saved_tensors_hooks, _saved_tensors_hooks_disabled
from actorgrad.tensor import Tensor
from actorgrad.version_counter import bump_version

__all__ = [
    "GradientEdge", "Node", "allow_mutation_on_saved_tensors", "disable_saved_tensors_hooks", "get_gradient_edge",
    "increment_version", "register_multi_grad_hook", "save_on_cpu", "saved_tensors_hooks",
]


class GradientEdge(NamedTuple):
    """Where a gradient enters the graph: a node and which of its inputs (slots)."""

    node: Node
    output_nr: int


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge that `tensor`'s gradient flows into: its grad_fn's slot, or its leaf accumulator. It stays
    valid, and usable as an output or an input of `grad()` and `backward()`, even when `tensor` itself is gone."""
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
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook
        self._tokens: list = []

    def __enter__(self) -> None:
        refusal = _saved_tensors_hooks_disabled.get()
        if refusal is not None:
            raise RuntimeError(refusal)
        self._tokens.append(_saved_tensors_hooks.set((self.pack_hook, self.unpack_hook)))

    def __exit__(self, *exc_info: object) -> None:
        _saved_tensors_hooks.reset(self._tokens.pop())


class save_on_cpu(saved_tensors_hooks):
    """Inside, what ops save on another device is kept on the CPU, and copied back to its device when backward
    needs it: device memory traded for copies. actorgrad's host copies are plain numpy arrays, so there is no
    memory to pin; but as in PyTorch, `pin_memory=True` copies every saved tensor, a CPU one too (so backward
    sees its values when saved), where `pin_memory=False` keeps a CPU tensor itself. `device_type` is taken for
    PyTorch's signature."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(_copy_to_cpu if pin_memory else _to_cpu, _to_own_device)


def _to_cpu(tensor: Tensor) -> tuple[Any, Tensor]:
    return tensor._device, tensor.cpu()


def _copy_to_cpu(tensor: Tensor) -> tuple[Any, Tensor]:
    return tensor._device, tensor.to("cpu", copy=True)


def _to_own_device(packed: tuple[Any, Tensor]) -> Tensor:
    device, tensor = packed
    return tensor.to(device)


class disable_saved_tensors_hooks:
    """Inside, `saved_tensors_hooks` (and the contexts built on it) raise RuntimeError(error_message): for a
    feature that cannot work with packed saved values. Entering it while such hooks are in force raises too."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message
        self._tokens: list = []

    def __enter__(self) -> None:
        if _saved_tensors_hooks.get() is not None:
            raise RuntimeError(self.error_message)
        self._tokens.append(_saved_tensors_hooks_disabled.set(self.error_message))

    def __exit__(self, *exc_info: object) -> None:
        _saved_tensors_hooks_disabled.reset(self._tokens.pop())


OUTSIDE_MUTATION_CONTEXT = (
    "Trying to backward outside of the 'allow_mutation_on_saved_tensors' contextin which the graph was originally "
    "recorded."
)


class allow_mutation_on_saved_tensors(saved_tensors_hooks):
    """Inside, a tensor an op saved may be changed in place before backward: backward uses the values it had
    when saved (PyTorch refuses such a change otherwise). actorgrad has no hook before an in-place write, so each
    saved tensor is copied when saved rather than on its first change: the same gradients, more memory. The
    graph must be run backward before the block ends, as PyTorch requires."""

    def __init__(self) -> None:
        super().__init__(self._copy, self._original)
        self._open = False

    def _copy(self, tensor: Tensor) -> Tensor:
        return tensor.clone()

    def _original(self, copy: Tensor) -> Tensor:
        if not self._open:
            raise AssertionError(OUTSIDE_MUTATION_CONTEXT)
        return copy

    def __enter__(self) -> allow_mutation_on_saved_tensors:
        if _mutation_context_open.get():
            raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
        super().__enter__()
        self._open = True
        self._token = _mutation_context_open.set(True)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._open = False
        _mutation_context_open.reset(self._token)
        super().__exit__(*exc_info)


# Is an allow_mutation_on_saved_tensors block open? PyTorch refuses one inside another.
_mutation_context_open: ContextVar[bool] = ContextVar("actorgrad_mutation_context_open", default=False)


def increment_version(tensor: Tensor | Iterable[Tensor]) -> None:
    """Count an in-place change of `tensor` (or of each tensor given) that autograd did not see, for example
    one made through `.numpy()`, so that nodes which saved it refuse to run backward on the changed values."""
    tensors = (tensor,) if isinstance(tensor, Tensor) else tensor
    if not isinstance(tensors, Iterable):
        raise RuntimeError("increment_version expect a Iterable[Tensor] as input")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise RuntimeError("increment_version expects each element of the iterable to be a tensor")
        bump_version(t)


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
    `fn` may be `async def`. Returns one handle that removes the hook from every tensor. As in PyTorch, mode "any"
    leaves out the tensors that do not require grad, and mode "all" refuses them."""
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

        # as PyTorch's: a tensor that does not require grad is left out (no gradient ever reaches it)
        return MultiHandle(t.register_hook(_hook_calling(fn, first)) for t in tensors if t.requires_grad)
    if not all(t.requires_grad for t in tensors):
        raise AssertionError("Expected gradient function to be set")  # PyTorch's text, from its node lookup

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

