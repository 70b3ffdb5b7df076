"""FormulaNode: the node an op from the op tables records, whose backward runs its Rule's formulas on the values
it saved (PyTorch's generated `*Backward0` functions), and the errors of a saved value that is gone or changed.
"""

from __future__ import annotations

import re
from typing import Any

from actorgrad.devices import Device
from actorgrad.grad_mode import _grad_enabled
from actorgrad.node import Node
from actorgrad.saved_tensors import SavedOutput, WrappedNumber, unpacking_once
from actorgrad.tensor import Tensor
from actorgrad.version_counter import DETACHED_SAVED, detached_in_place, last_change, last_detach

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward."
)

def saved_value(node: FormulaNode, name: str) -> Any:
    """`node._saved_<name>`: what the node saved under a name its rule gives (`_saved_self`, `_saved_other`,
    `_saved_result`, a keyword such as `_saved_exponent`), as PyTorch's nodes show them; None for a value that no
    formula of an input needing a gradient took. Properties on FormulaNode, added as rules name values: a
    `__getattr__` would slow every attribute read of every node (CPython stops specializing them)."""
    grads = node._rule.grads
    if not any(name in names for names, _ in grads):
        raise AttributeError(f"'{node.name()}' object has no attribute '_saved_{name}'")
    calls = node.saved
    if calls is None:
        raise RuntimeError(SECOND_BACKWARD)
    for i, _, _, values, _, _ in calls:
        names = grads[i][0]
        if name in names:
            value = values[names.index(name)]  # packed values (UnpackOnUse) unpack as they are read
            if isinstance(value, SavedOutput):
                return Tensor(value._data, grad_fn=node, device=node.device)
            if value.__class__ is tuple:  # an advanced index: its arrays as tensors too, as PyTorch shows indices
                return tuple(_array_as_tensor(v, node.device) for v in value)
            return _array_as_tensor(value, node.device)
    return None


def _array_as_tensor(value: Any, device: Device) -> Any:
    """A raw array a node saved (on its device), or a number it met, as a tensor; any other value as it is."""
    if value.__class__ is WrappedNumber:
        return Tensor(value._data, device=value._device)
    return Tensor(value, device=device) if isinstance(value, device.xp.ndarray) else value


MODIFIED = (
    "one of the variables needed for gradient computation has been modified by an inplace operation: "
    "[actorgrad.{dtype} {shape}]{source} is at version {now}; expected version {saved} instead. Hint: the tensor "
    "was changed in place after an op saved it for backward; clone() it before changing it, or change it after "
    "backward."
)


def modified_error(node: Node, saved: Any, version: int) -> RuntimeError:
    """PyTorch's error for a saved tensor changed in place: a saved output names the node that saved it, a
    saved input its own (current) grad_fn, a leaf nothing; node names drop `Backward0`, and `Backward` before
    another number, as PyTorch's (ReluBackward0 is `Relu`, LeakyReluBackward1 `LeakyRelu1`)."""
    if isinstance(saved, SavedOutput):
        fn, nr = node, 0
    else:
        fn, nr = saved._grad_fn, saved._output_nr
    source = "" if fn is None else f", which is output {nr} of {re.sub(r'Backward(?:0$|(?=[0-9]*$))', '', fn.name())},"
    data = saved._data
    return RuntimeError(MODIFIED.format(
        dtype=data.dtype, shape=list(data.shape), source=source, now=saved._vc.value, saved=version
    ))


def _refuse_detached(versions: tuple, stamp: int) -> None:
    """PyTorch's error for a saved input (a non-leaf when saved) that was detached in place after `stamp`."""
    for value in versions[::2]:
        detached = detached_in_place.get(id(value))
        if detached is not None and detached[1] > stamp:
            raise RuntimeError(DETACHED_SAVED)


class FormulaNode(Node):
    """A node whose backward is a Rule from the op tables.

    `saved` holds, for each input that needs a gradient, `(input index, formula, raw values, values, shape to
    sum the gradient back to or None, dtype to cast it to or None)`: the saved values twice, as raw arrays for
    the fast path and as Tensors for a recorded backward, both on the same arrays (or, for a node recorded
    inside `saved_tensors_hooks`, both unpacking the same packed values on use). One tuple per input, not one
    per path: a graph's nodes live until its backward, and fewer objects per op cost the collector less.
    A gradient always has its input's shape, dtype and device: the cast is a (dtype, device) pair for a
    zero-dim cpu input beside tensors on another device.
    """

    __slots__ = ("_rule", "saved", "versions", "stamp", "stream")

    def name(self) -> str:
        return self._rule.name

    def apply(self, grads: list, task: Any) -> list:
        calls = self.saved
        if calls is None:
            raise RuntimeError(SECOND_BACKWARD)
        stamp = self.stamp
        if stamp is not None and stamp != last_change[0]:  # something changed in place since this was recorded
            versions = self.versions
            if last_detach[0] > stamp:  # a tensor was detached in place since: was it one this node saved?
                _refuse_detached(versions, stamp)
            for value, version in zip(versions[::2], versions[1::2]):
                vc = value._vc
                if vc is not None and vc.value != version:
                    raise modified_error(self, value, version)
        ops = task.ops
        recorded = ops is not None
        if not task.keep_graph and self.versions:  # it saved arrays: free them (a node that saved only numbers
            self.saved = None  # and shapes may run again, as PyTorch's may)
            self.versions = ()
        g = grads[0]
        edges = self.next_functions
        out = [None] * len(edges)
        if g is None:
            return out
        visit = task.visit
        if recorded:  # a recorded backward: each formula step becomes a node
            mode = _grad_enabled.set(True)
        else:
            ops = self.device.ops
        try:
            for i, formula, raw, values, reduce, cast in calls:
                if visit is None or edges[i][0] in visit:
                    if formula is None:
                        grad = g
                    else:
                        grad = formula(ops, g, *(ops.unpack(values, self) if recorded else raw))
                    if reduce is not None and grad is not None:  # None: a formula that gives no gradient
                        grad = ops.sum_to(grad, reduce)
                    out[i] = grad if cast is None or grad is None else ops.cast(grad, cast)  # None: no gradient
        finally:
            if recorded:
                _grad_enabled.reset(mode)
        return out


class PackedFormulaNode(FormulaNode):
    """A FormulaNode whose saved values saved-tensor hooks packed: each pass of its backward unpacks each value
    once, however many of its formulas use it, as PyTorch's nodes do (a separate class: plain nodes pay nothing)."""

    __slots__ = ()

    def apply(self, grads: list, task: Any) -> list:
        return unpacking_once(self, FormulaNode.apply, grads, task)
