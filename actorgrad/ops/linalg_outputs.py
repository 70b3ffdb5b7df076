"""The outputs of linalg's decompositions as the outputs of one node each, as in PyTorch (svd's U, S and Vh, eigh's
eigenvalues and eigenvectors, slogdet's sign and logabsdet ...), and the factors such a node saves for its
backward. Split, chunk and unbind record their pieces (views of their input) the same way."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from actorgrad.formula_node import FormulaNode, PackedFormulaNode
from actorgrad.node import metadata_of
from actorgrad.ops.record import Rule, record, share_if_view
from actorgrad.saved_tensors import unpacking_once
from actorgrad.tensor import Tensor
from actorgrad.version_counter import version_counter

__all__: list[str] = []


class MultiOutputNode(FormulaNode):
    """The one node of an op with several outputs (a decomposition's factors, split's pieces), output k in slot k
    as in PyTorch: its formulas take the tuple of the outputs' gradients, None for an output that got none
    (PyTorch's formulas skip undefined gradients rather than take zeros)."""

    __slots__ = ()

    def apply(self, grads: list, task: Any) -> list:
        return FormulaNode.apply(self, [None if all(g is None for g in grads) else tuple(grads)], task)


class PackedMultiOutputNode(MultiOutputNode):
    """Such a node whose saved values saved-tensor hooks packed: each unpacked once per pass (PackedFormulaNode)."""

    __slots__ = ()

    def apply(self, grads: list, task: Any) -> list:
        return unpacking_once(self, MultiOutputNode.apply, grads, task)


class SavedFactors:
    """A decomposition's outputs as its node saves them for its backward (PyTorch's nodes save U, S and Vh): the
    arrays, or beside a recorded backward's tensors, tensors that are that node's outputs, so that a second
    backward reaches the factors through the node that made them (its phase check then sees all of their
    gradients at once, as PyTorch's). Neither a tensor nor an array, so a node keeps it as it is; it names the
    node weakly, as the node holds it. Under saved-tensor hooks it holds the factors packed instead."""

    __slots__ = ("arrays", "node", "packed")

    def __init__(self, arrays: tuple) -> None:
        self.arrays = arrays
        self.node: Any = None
        self.packed: tuple | None = None

    def pack_with(self, pack: Callable) -> None:
        """Keep the factors only as `pack` (saved-tensor hooks) leaves each, as PyTorch packs U, S and Vh."""
        self.packed = tuple(map(pack, self.arrays))
        self.arrays = ()

    def like(self, input: Any) -> tuple:
        """The factors as arrays beside an array `input`, as the node's output tensors beside a Tensor."""
        arrays = self.arrays if self.packed is None else tuple(p.value(True) for p in self.packed)
        if not isinstance(input, Tensor):
            return arrays
        node = self.node()
        return tuple(Tensor(data, grad_fn=node, output_nr=k, device=node.device) for k, data in enumerate(arrays))


class _SavedFactor:
    """One factor among its node's saved versions: an error for a change in place names it as output k of the
    node, as PyTorch's does (weakly: the node holds this)."""

    __slots__ = ("_data", "_vc", "_node", "_output_nr")

    def __init__(self, out: Tensor) -> None:
        self._data = out._data
        self._vc = version_counter(out)
        self._node = weakref.ref(out._grad_fn)
        self._output_nr = out._output_nr

    @property
    def _grad_fn(self) -> Any:
        return self._node()


def record_outputs(rule: Rule, outputs: tuple, inputs: tuple[Tensor, ...], *, save_outputs: bool = False,
                   **params: Any) -> tuple[Tensor, ...]:
    """Wrap the forward results `outputs` of an op on `inputs`, all of them outputs of one node of `rule` when
    grad mode asks for one; with `save_outputs` its formulas get them all as `factors` (SavedFactors). An output
    whose array is a view of an input's is a view of that input, as `record` makes one."""
    xp = inputs[0]._device.xp
    outputs = tuple(xp.asarray(data) for data in outputs)  # numpy's slogdet of one matrix gives numpy scalars
    if save_outputs:
        params["factors"] = SavedFactors(outputs)
    first = record(rule, outputs[0], inputs, **params)
    node = first._grad_fn
    if node is None:
        return (first,) + tuple(record(rule, data, inputs, **params) for data in outputs[1:])
    # record makes a FormulaNode with one slot; this node differs only in having a slot per output
    node.__class__ = PackedMultiOutputNode if node.__class__ is PackedFormulaNode else MultiOutputNode
    device = node.device
    node.input_metadata = tuple(metadata_of(data.shape, data.dtype, device)[0] for data in outputs)
    outs = [first]
    for k, data in enumerate(outputs[1:], 1):
        out = Tensor(data, grad_fn=node, output_nr=k, device=device)
        if data.base is not None:
            share_if_view(out, inputs)
        outs.append(out)
    outs = tuple(outs)
    if save_outputs:
        params["factors"].node = weakref.ref(node)
        if node.stamp is not None:  # the factors' versions are checked at backward too (not under saved-tensor hooks)
            node.versions += tuple(x for out in outs for x in (_SavedFactor(out), 0))
    return outs
