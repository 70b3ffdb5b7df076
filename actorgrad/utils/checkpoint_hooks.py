"""Non-reentrant activation checkpointing (`checkpoint(..., use_reentrant=False)`), built on saved-tensor hooks.

The segment runs with grad mode on, so its nodes join the caller's graph as usual, but inside a pair of hooks
that keep only a numbered placeholder for each value an op saves. The first time a backward pass unpacks one, the
segment runs again on detached copies of its inputs (with the forward's random state) and the hooks of that
run collect the values by number; every later unpack in that pass takes its value from there, which then lets go
of it, so the recomputed values are freed as the pass uses them, as PyTorch's. Each pass reruns the segment
(a graph retained for a second pass keeps no activations between passes), and so does each unpack outside a pass.
The rerun stops as soon as it has every value it dropped (`early_stop`), so ops after the last dropped one run
once only. Since nothing
nests a backward pass, `autograd.grad` and `backward(inputs=...)` work through such a segment.

Selective checkpointing (see selective_checkpoint.py) decides, per op, to keep its saved values instead: those
are kept from the forward (or on the CPU) and never need the rerun. Values a custom Function saves with
`ctx.save_for_backward` are not passed to saved-tensor hooks, so they are kept as they are.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from actorgrad.autograd.graph import saved_tensors_hooks
from actorgrad.formula_node import modified_error
from actorgrad.grad_mode import enable_grad
from actorgrad.random import default_generator
from actorgrad.saved_tensors import packing_node, unpacking_task
from actorgrad.scheduler.graph_task import enclosing_task
from actorgrad.tensor import Tensor
from actorgrad.utils.selective_checkpoint import (
    CACHED_MUTATED,
    CheckpointError,
    CheckpointPolicy,
    SelectiveCheckpointContext,
    current_saving_mode,
)

DEBUG_TIP = (
    "\nTip: To see a more detailed error message, either pass `debug=True` to\n"
    "`actorgrad.utils.checkpoint.checkpoint(...)` or wrap the code block\n"
    "with `with actorgrad.utils.checkpoint.set_checkpoint_debug_enabled(True):` to\n"
    "enable checkpoint-debug mode globally.\n"
)


class _StopRecomputation(Exception):
    """Raised by the rerun's pack hook once it holds every dropped value: the rest of the segment is not run."""


class _Dropped:
    """The placeholder for a saved value the rerun gives back: its number among the segment's saved values."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class _Kept:
    """A value a saving policy kept: the tensor (on the CPU, for an offloading policy, with the device to bring
    it back to), and its version when kept, if a change in place before backward is to be refused."""

    __slots__ = ("tensor", "device", "version")

    def __init__(self, tensor: Tensor, device: Any, checked: bool) -> None:
        self.tensor = tensor
        self.device = device
        self.version = tensor._version if checked else None


def detach_variable(inputs: tuple) -> tuple:
    """The tensors of `inputs` as new tensors on the same data, without history but with their requires_grad:
    the leaves a recomputation starts from. Other values pass as they are."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(
            f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}"
        )
    return tuple(
        Tensor(a._data, requires_grad=a.requires_grad, device=a._device) if isinstance(a, Tensor) else a
        for a in inputs
    )


def _metadata(t: Tensor) -> dict:
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


class CheckpointFrame:
    """One checkpointed call: what its forward saved (dropped or kept), and the values its rerun collected."""

    def __init__(self, function: Callable, args: tuple, kwargs: dict, *, preserve_rng_state: bool,
                 recompute_context: Any, determinism_check: str, early_stop: bool, debug: bool) -> None:
        self.function, self.args, self.kwargs = function, args, kwargs
        # the inputs' versions: as PyTorch's, which saves them for backward, a rerun on inputs changed in place
        # since is refused (it would give the gradient of other values)
        self.versions = tuple(a._version if isinstance(a, Tensor) else None for a in args)
        self.rng_state = default_generator.get_state() if preserve_rng_state else None
        self.recompute_context = recompute_context
        self.check = determinism_check == "default"
        self.early_stop = early_stop
        self.debug = debug
        self.saved = 0  # values the forward packed
        self.dropped: dict[int, dict] = {}  # number -> the value's metadata
        # pass (GraphTask) -> the values its rerun collected, by number, each until the pass unpacks it
        self.recomputed: weakref.WeakKeyDictionary[Any, dict[int, Tensor]] = weakref.WeakKeyDictionary()
        self.policies: dict[int, CheckpointPolicy] = {}  # id(node) -> its policy, asked once per op
        self.forward_ops: list[str] = []
        self.lock = threading.Lock()  # nodes of one segment may unpack on several worker threads at once

    def hooks(self) -> saved_tensors_hooks:
        return saved_tensors_hooks(self.pack, self.unpack)

    def pack(self, tensor: Tensor) -> _Dropped | _Kept:
        index = self.saved
        self.saved += 1
        node, output = packing_node.get()
        if self.debug:
            self.forward_ops.append(node.name())
        mode = current_saving_mode.get()
        policy = CheckpointPolicy.PREFER_RECOMPUTE if mode is None else self.policies.get(id(node))
        if policy is None:
            context = SelectiveCheckpointContext(is_recompute=False, op_output=output)
            policy = self.policies[id(node)] = mode.policy(context, node.name())
        # Kept detached (the same data and version counter): an op's output would hold its node, which holds this
        if policy in (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE):
            return _Kept(tensor.detach(), None, not mode.allow_cache_entry_mutation)
        if policy in (CheckpointPolicy.MUST_CPU_OFFLOAD, CheckpointPolicy.PREFER_CPU_OFFLOAD):
            return _Kept(tensor.detach().cpu(), tensor._device, False)
        self.dropped[index] = _metadata(tensor)
        return _Dropped(index)

    def unpack(self, handle: _Dropped | _Kept) -> Tensor:
        if handle.__class__ is _Kept:
            if handle.version is not None and handle.tensor._version != handle.version:
                raise RuntimeError(CACHED_MUTATED)
            return handle.tensor if handle.device is None else handle.tensor.to(handle.device)
        # the pass unpacking: a recorded node's, or the one a custom Function's backward runs in (ctx.saved_tensors)
        task = unpacking_task.get() or enclosing_task.get()
        with self.lock:
            values = self.recomputed.get(task) if task is not None else None
            if values is None or handle.index not in values:
                values = self._recompute()
                if task is not None:
                    self.recomputed[task] = values
            return values.pop(handle.index)

    def _recompute(self) -> dict[int, Tensor]:
        """The dropped values, by number, from a rerun of the segment."""
        for a, version in zip(self.args, self.versions):
            if version is not None and a._version != version:
                raise modified_error(None, a, version)
        inputs = detach_variable(self.args)
        counter = 0
        recompute_ops: list[str] = []
        values: dict[int, Tensor] = {}

        def collect(tensor: Tensor) -> None:
            nonlocal counter
            if self.debug:
                recompute_ops.append(packing_node.get()[0].name())
            if counter in self.dropped:
                values[counter] = tensor.detach()
            counter += 1
            if self.early_stop and len(values) == len(self.dropped):
                raise _StopRecomputation

        current = default_generator.get_state()
        if self.rng_state is not None:
            default_generator.set_state(self.rng_state)
        stopped = False
        try:
            with saved_tensors_hooks(collect, _never_unpacked), self.recompute_context, enable_grad():
                self.function(*inputs, **self.kwargs)
        except _StopRecomputation:
            stopped = True
        finally:
            default_generator.set_state(current)
        self._check_same_values(values, counter, stopped, recompute_ops)
        return values

    def _check_same_values(self, values: dict[int, Tensor], counter: int, stopped: bool,
                           recompute_ops: list[str]) -> None:
        """PyTorch's errors for a rerun that saved other values than the forward (a segment that depends on
        something besides its inputs): a rerun stopped early saved no fewer, but may differ in shape."""
        tip = DEBUG_TIP
        if self.debug:
            tip = (f"\nOps that saved values during the original forward: {self.forward_ops}\n"
                   f"Ops that saved values during recomputation: {recompute_ops}\n")
        if not stopped and counter != self.saved:
            raise CheckpointError(
                "actorgrad.utils.checkpoint: A different number of tensors was saved during the original forward "
                f"and recomputation.\nNumber of tensors saved during forward: {self.saved}\n"
                f"Number of tensors saved during recomputation: {counter}.\n{tip}"
            )
        if self.check:
            mismatched = "".join(
                f"tensor at position {i}:\nsaved metadata: {meta}\nrecomputed metadata: "
                f"{_metadata(values[i])}\n"
                for i, meta in self.dropped.items() if _metadata(values[i]) != meta
            )
            if mismatched:
                raise CheckpointError(
                    "actorgrad.utils.checkpoint: Recomputed values for the following tensors have different "
                    f"metadata than during the forward pass.\n{mismatched}.\n{tip}"
                )


def _never_unpacked(handle: Any) -> Any:
    """The rerun's graph is dropped: its saved values are never unpacked."""
    return handle


def checkpoint_without_reentrant(function: Callable, args: tuple, kwargs: dict, *, context_fn: Callable,
                                 determinism_check: str, debug: bool, early_stop: bool,
                                 preserve_rng_state: bool) -> Any:
    """`function(*args, **kwargs)` recorded as usual, each value its ops save dropped for a rerun in backward
    unless a selective-checkpointing policy keeps it."""
    forward_context, recompute_context = context_fn()
    frame = CheckpointFrame(function, args, kwargs, preserve_rng_state=preserve_rng_state,
                            recompute_context=recompute_context, determinism_check=determinism_check,
                            early_stop=early_stop, debug=debug)
    with frame.hooks(), forward_context:
        return function(*args, **kwargs)
