"""What a node saves for its backward: its own output (SavedOutput), and values packed by saved-tensor hooks.

Inside `actorgrad.autograd.graph.saved_tensors_hooks(pack, unpack)`, each op recorded hands every tensor it
saves (its inputs, its output, and the arrays among its keywords, as tensors, the arrays of a saved index too)
to `pack`, and keeps only what `pack` returns, any object (the numbers an op met it keeps as they are: see
WrappedNumber; places a rule names `unhooked` too). Each pass of the node's backward has `unpack` give each value
back once, however many formulas use it, as PyTorch's; the value takes the place in the graph of the tensor that
was packed, so that a recorded backward (`create_graph`) still reaches it.
As in PyTorch, a packed value is not checked for in-place changes at backward: what `pack` kept is the hooks'
business (a copy may rightly outlive changes to the original).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from actorgrad.accumulate_grad import AccumulateGrad, gradient_edge
from actorgrad.devices import Device
from actorgrad.grad_mode import no_grad
from actorgrad.tensor import Tensor

# The innermost (pack, unpack) pair in force, or None.
_saved_tensors_hooks: ContextVar[tuple[Callable, Callable] | None] = ContextVar(
    "actorgrad_saved_tensors_hooks", default=None
)
# Inside `disable_saved_tensors_hooks(message)`: the message that entering saved-tensor hooks raises.
_saved_tensors_hooks_disabled: ContextVar[str | None] = ContextVar(
    "actorgrad_saved_tensors_hooks_disabled", default=None
)
# (node, its output) whose saved values are being packed, for pack hooks that decide by op (selective
# checkpointing).
packing_node: ContextVar[tuple[Any, Any] | None] = ContextVar("actorgrad_packing_node", default=None)
# The backward pass (its GraphTask) whose node is unpacking its packed values, for unpack hooks that keep state per
# pass (non-reentrant checkpointing reruns its segment once per pass); None outside a pass.
unpacking_task: ContextVar[Any] = ContextVar("actorgrad_unpacking_task", default=None)


class SavedOutput:
    """An op's own output, saved without a reference back to its Tensor (that would be a cycle through the
    node) but with its version counter (None: not versioned). Unpacked for `create_graph` as a new Tensor whose
    grad_fn is the node that saved it."""

    __slots__ = ("_data", "_vc")

    def __init__(self, data: Any, vc: Any = None) -> None:
        self._data = data
        self._vc = vc


class WrappedNumber(Tensor):
    """A Python number an op met beside tensors, made a zero-dim tensor to compute with (PyTorch's wrapped
    number). A node may save it, but saved-tensor hooks never see it, as in PyTorch: the user saved a number, not
    a tensor. A subclass, so that telling one apart costs the ops that make one nothing."""

    __slots__ = ()


def _same(value: Any) -> Any:
    return value


INPUT, OUTPUT, ARRAY = "input", "output", "array"


class _Unchecked:
    """Stands in a node's saved versions once its values are packed: nothing to check, but the node still frees
    them after a pass that keeps no graph, and refuses a second one."""

    _vc = None


_PACKED_VERSIONS = (_Unchecked(), 0)


class Memo:
    """What a node's packed values unpacked to during one pass of its backward (None between passes): PyTorch
    unpacks each saved value once per backward of its node, however many of its formulas use it, which matters
    to hooks that copy (save_on_cpu) or allow one unpack."""

    __slots__ = ("tensors",)

    def __init__(self) -> None:
        self.tensors: dict | None = None


_NO_MEMO = Memo()  # for values read outside a node's backward (ctx.saved_tensors, node._saved_self): each read unpacks


class Packed:
    """One saved value as `pack` left it, with the `unpack` to bring it back, what it was (a tensor with its
    gradient edge, the node's output, or a raw array) and the device of the node that saved it."""

    __slots__ = ("packed", "unpack", "kind", "edge", "device", "memo")

    def __init__(
        self, packed: Any, unpack: Callable, kind: str, edge: tuple | None, device: Device, memo: Memo = _NO_MEMO
    ) -> None:
        self.packed = packed
        self.unpack = unpack
        self.kind = kind
        self.edge = edge
        self.device = device
        self.memo = memo

    def value(self, raw: bool) -> Any:
        """The value unpacked: as a raw array for a plain backward, else as the formulas saw it when saved."""
        memo = self.memo.tensors
        tensor = None if memo is None else memo.get(self)
        if tensor is None:
            if raw:  # a plain backward runs without grad mode; a recorded one (create_graph) with it, as PyTorch's
                with no_grad():
                    tensor = self.unpack(self.packed)
            else:
                tensor = self.unpack(self.packed)
            if not isinstance(tensor, Tensor):
                raise TypeError(
                    f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                    f"{type(tensor).__name__}"
                )
            if memo is not None:
                memo[self] = tensor
        data = tensor._data
        if self.kind == ARRAY:
            return data
        if raw:
            return self.device.kernel_operand(data)
        if self.kind == OUTPUT:
            return SavedOutput(data)
        node, output_nr = self.edge
        if node is None:
            return Tensor(data, device=tensor._device)
        if isinstance(node, AccumulateGrad):  # a leaf: a stand-in whose gradient goes to the leaf's accumulator
            stand_in = Tensor(data, device=tensor._device)
            stand_in._requires_grad = True
            stand_in._accumulator = weakref.ref(node)
            return stand_in
        return Tensor(data, grad_fn=node, output_nr=output_nr, device=tensor._device)


class PackedIndex:
    """An index a node saved (a tuple of slices, numbers and arrays) whose arrays were packed, as PyTorch packs
    the index tensors of indexing ops."""

    __slots__ = ("items",)

    def __init__(self, items: tuple) -> None:
        self.items = items

    def value(self, raw: bool) -> tuple:
        return tuple(v.value(raw) if v.__class__ is Packed else v for v in self.items)


_ON_USE = (Packed, PackedIndex)


class UnpackOnUse:
    """The saved values of one formula, some packed: each pass over them unpacks those afresh (once per pass of
    the node's backward, through the node's `memo`)."""

    __slots__ = ("values", "raw", "memo")

    def __init__(self, values: tuple, raw: bool, memo: Memo) -> None:
        self.values = values
        self.raw = raw
        self.memo = memo

    def __iter__(self) -> Iterator:
        raw = self.raw
        for v in self.values:
            yield v.value(raw) if v.__class__ in _ON_USE else v

    def __getitem__(self, k: int) -> Any:
        """One value, unpacking only it (`node._saved_self`, as PyTorch's unpacks only the value read)."""
        v = self.values[k]
        return v.value(self.raw) if v.__class__ in _ON_USE else v


def unpacking_once(node: Any, apply: Callable, grads: list, task: Any) -> list:
    """`apply(node, grads, task)` for a node whose values were packed, each value unpacked at most once."""
    calls = node.saved
    if not calls:
        return apply(node, grads, task)
    memo = calls[0][2].memo
    memo.tensors = {}
    token = unpacking_task.set(task)
    try:
        return apply(node, grads, task)
    finally:
        unpacking_task.reset(token)
        memo.tensors = None


def pack_saved(node: Any, output: Tensor, hooks: tuple[Callable, Callable]) -> None:
    """Replace what a just-recorded FormulaNode saved with values packed by `hooks`. Packing runs without
    grad mode (as in PyTorch), so ops inside `pack` record nothing and pack nothing."""
    pack, unpack = hooks
    device = node.device
    array_type = device.xp.ndarray
    memo = Memo()
    # name (self, other, result, a keyword) -> packed: as PyTorch packs each variable an op saves once, however
    # many formulas use it, but `x * x` saves `self` and `other`, which are the one tensor, twice
    done: dict[str, Any] = {}
    rule = node._rule
    grads = rule.grads
    unhooked = rule.unhooked

    def packed_array(value: Any) -> Packed:
        return Packed(pack(Tensor(value, device=device)), unpack, ARRAY, None, device, memo)

    def packed(key: str, value: Any) -> Any:
        if key not in done:
            if key in unhooked:  # what PyTorch's node keeps as no tensor (a mask it makes from sizes)
                done[key] = value
            elif value.__class__ is WrappedNumber:  # kept as it is, not packed
                done[key] = Packed(value, _same, INPUT, (None, 0), device)
            elif isinstance(value, Tensor):
                done[key] = Packed(pack(value), unpack, INPUT, gradient_edge(value), device, memo)
            elif isinstance(value, SavedOutput):
                done[key] = Packed(pack(output), unpack, OUTPUT, None, device, memo)
            elif isinstance(value, array_type):  # a raw array of the node's device (an index, a mask)
                done[key] = packed_array(value)
            elif value.__class__ is tuple and any(isinstance(v, array_type) for v in value):  # an advanced index
                done[key] = PackedIndex(tuple(packed_array(v) if isinstance(v, array_type) else v for v in value))
            elif hasattr(value, "pack_with"):  # a decomposition's factors (SavedFactors): packed one by one
                value.pack_with(packed_array)
                done[key] = value
            else:
                done[key] = value
        return done[key]

    token = packing_node.set((node, output))
    try:
        with no_grad():
            saved = [(i, formula, tuple(map(packed, grads[i][0], values)), reduce, cast)
                     for i, formula, _, values, reduce, cast in node.saved]
    finally:
        packing_node.reset(token)
    node.saved = tuple((i, f, UnpackOnUse(values, True, memo), UnpackOnUse(values, False, memo), r, c)
                       for i, f, values, r, c in saved)
    if node.versions:
        node.versions = _PACKED_VERSIONS
        node.stamp = None
