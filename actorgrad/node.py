"""Node and Edge: the structure of the backward graph (PyTorch's function.h and edge.h).

A Node is one backward function. Its `next_functions` are its edges: one `(node or None, input_nr)` per
forward input, naming the node that receives the gradient for that input and in which of its slots.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

from actorgrad.autograd.anomaly_mode import FORWARD_STACK_KEY, _anomaly_mode, forward_stack
from actorgrad.devices import Device
from actorgrad.hooks import POST, PRE, NodeHooks, RemovableHandle, node_hooks

# Monotonically increasing across threads (next() on a count is atomic under the GIL): a later op gets a
# larger number, and runs earlier in backward.
_sequence_numbers = itertools.count()


MAX_SEQUENCE_NR = sys.maxsize


# An edge is a plain `(node or None, input_nr)` tuple, as in PyTorch's `next_functions`. Plain tuples, not a
# named tuple: CPython unpacks exact tuples faster, and the engine unpacks every edge it follows.
Edge = tuple


class InputMetadata(NamedTuple):
    """What a node expects of the gradient arriving in one of its slots."""

    shape: tuple[int, ...]
    dtype: Any
    device: Device


# (shape, dtype, device) -> a node's metadata for one slot of that kind: ops make outputs of a few kinds again and
# again, and building the named tuple cost more than finding it (it is immutable, so nodes can share it).
metadata_kinds: dict = {}
_METADATA_KINDS_KEPT = 4096


def metadata_of(shape: tuple, dtype: Any, device: Device) -> tuple[InputMetadata]:
    """The one-slot metadata of that kind, found or made and kept (`record` looks in `metadata_kinds` inline first:
    a call per op costs more than the lookup)."""
    metadata = metadata_kinds.get((shape, dtype, device))
    if metadata is None:
        if len(metadata_kinds) >= _METADATA_KINDS_KEPT:
            metadata_kinds.clear()
        metadata = metadata_kinds[shape, dtype, device] = (InputMetadata(shape, dtype, device),)
    return metadata


def expandable_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Does `shape` broadcast to `target` (PyTorch's is_expandable_to): a gradient of `target`'s shape then sums
    back to it."""
    return len(shape) <= len(target) and all(s == 1 or s == t for s, t in zip(shape[::-1], target[::-1]))


class Node:
    """One backward function of the graph; subclasses say how to turn output gradients into input gradients.

    `apply(grads, task)` takes one gradient (or None) per slot and returns one per edge, each of the shape in
    the next node's input metadata (a node that runs user code checks this itself); `task` supplies the
    array operations, which edges are wanted, where leaf gradients are staged, and whether the graph is kept
    (if not, the node releases its saved tensors as it runs).
    """

    __slots__ = (
        "sequence_nr",
        "topological_nr",
        "next_functions",
        "input_metadata",
        "device",
        "cost",
        "multithreaded",
        "retained",
        "hooks",
        "_metadata",
        "__weakref__",
    )

    def __init__(
        self,
        next_functions: tuple[Edge, ...],
        input_metadata: tuple[InputMetadata, ...],
        device: Device,
        sequence_nr: int | None = None,
        cost: float = 0.0,
    ) -> None:
        self.sequence_nr = next(_sequence_numbers) if sequence_nr is None else sequence_nr
        self.next_functions = next_functions
        topological_nr = 0
        for node, _ in next_functions:
            if node is not None and node.topological_nr >= topological_nr:
                topological_nr = node.topological_nr + 1
        self.topological_nr = topological_nr
        self.input_metadata = input_metadata
        self.device = device
        self.cost = cost  # estimated nanoseconds of apply(): the scheduler sends costly nodes to worker threads
        self.multithreaded = False  # True when apply() spreads over cores itself (BLAS)
        self.retained: dict | None = None
        self.hooks: NodeHooks | None = None  # None: the scheduler runs apply() alone (the fast path)
        self._metadata: dict | None = None
        if _anomaly_mode.get() is not None:
            self.metadata[FORWARD_STACK_KEY] = forward_stack()

    # A FormulaNode's op-table Rule (a slot there); None elsewhere. The trace reads a node's name through it
    # where it can: an attribute instead of a call per traced node (3% of a W1 node).
    _rule: Any = None
    # True for a node whose backward is a coroutine (an `async def` custom backward): it runs as a task of its own,
    # on the event loop, never queued on a stream.
    async_backward = False

    # Every node of a graph stands for a computation that requires grad (PyTorch's nodes answer True too).
    requires_grad = True

    def name(self) -> str:
        return type(self).__name__

    def _sequence_nr(self) -> int:
        return self.sequence_nr

    @property
    def metadata(self) -> dict:
        """A dict for the user's notes about this node (and anomaly mode's forward stack), made on first use."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """`fn(grad_inputs, grad_outputs)` runs after this node has computed its gradients (`grad_inputs`, one
        per edge) from the incoming ones (`grad_outputs`); it may return replacements for `grad_inputs`."""
        return node_hooks(self).add(POST, fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """`fn(grad_outputs)` runs before this node does, on the gradients it received; it may return
        replacements for them."""
        return node_hooks(self).add(PRE, fn)

    def apply(self, grads: list, task: Any) -> tuple:
        raise NotImplementedError

    def fitted_gradient(self, slot: int, grad: Any, ops: Any) -> Any:
        """A gradient that reached `slot` in a shape other than the one recorded: a tensor on its path was reshaped
        in place without being recorded (unsqueeze_ under no_grad, say), so a node got a gradient of the new shape.
        Summed to the recorded shape where that broadcasts to the gradient's, as PyTorch's engine sums at that node;
        else refused, where PyTorch refuses it at that node. Formulas give their inputs' shapes, so this is checked
        only where gradients leave the graph (leaves, and the inputs grad() returns)."""
        shape = self.input_metadata[slot][0]
        if not expandable_to(shape, grad.shape):
            raise RuntimeError(
                f"invalid gradient for a tensor of shape {list(shape)}: got {list(grad.shape)}, which is not shape "
                f"compatible with it. A tensor between it and the output was reshaped in place (t_, transpose_, "
                f"unsqueeze_, ...) after the op that made it was recorded, as under no_grad; reshape out of place, "
                f"or with grad mode on."
            )
        return (ops or self.device.ops).sum_to(grad, shape)

    def __repr__(self) -> str:
        # PyTorch's: `<MulBackward0 object at 0x...>`, by its type's name (`<CopySlices ...>`, not torch::autograd::)
        return f"<{self.name().removeprefix('torch::autograd::')} object at {id(self):#x}>"


class GraphRoot(Node):
    """The entry of one backward call: hands the seed gradients to the outputs' nodes."""

    __slots__ = ("grads",)

    def __init__(self, edges: tuple[Edge, ...], grads: list, device: Device) -> None:
        Node.__init__(self, edges, (), device, MAX_SEQUENCE_NR)  # not super(): one per backward call
        self.grads = grads

    def name(self) -> str:
        return "torch::autograd::GraphRoot"  # PyTorch's name for it

    def apply(self, grads: list, task: Any) -> tuple:
        return tuple(self.grads)
