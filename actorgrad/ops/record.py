"""Recording an op: run its forward on raw arrays and, when grad mode asks, attach a FormulaNode.

An op's gradient rule is a `Rule`: the node's name and, per forward input, the saved values the formula needs
and the formula itself. A node saves only what the formulas of inputs that require grad name, no more.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.accumulate_grad import grad_accumulator
from actorgrad.devices import Device, cpu
from actorgrad.grad_mode import _grad_enabled, _inference_mode
from actorgrad.node import Node, metadata_kinds, metadata_of
from actorgrad.ops.operands import as_operand, result_type
from actorgrad.saved_tensors import SavedOutput, WrappedNumber, _saved_tensors_hooks, pack_saved, unpacking_once
from actorgrad.tensor import Tensor, array_storage
from actorgrad.version_counter import (
    DETACHED_SAVED,
    NO_GRAD_MODE,
    creation_modes,
    detached_in_place,
    last_change,
    last_detach,
    mark_creation_mode,
    version_counter,
)

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward."
)

NO_EDGE = (None, 0)


class Rule:
    """How one op differentiates: `grads[i] = (names, formula)` gives input i's gradient as
    `formula(ops, g, *saved values named by names)`, or passes `g` on unchanged when the formula is None.
    Names are `self`, `other` (the inputs), `result` (the output) or a keyword the op passed to `record`.

    For a `broadcasts` op the node sums each input's gradient back to that input's shape, so formulas never
    undo broadcasting themselves. `cost(data, params)` estimates the backward's nanoseconds from the output
    array and the op's keywords (default: one per output element); the scheduler sends costly nodes to worker
    threads. `multithreaded` says the formulas' kernels spread over the cores themselves (BLAS). `unhooked` names
    saved values (never tensors) that saved-tensor hooks never see, as PyTorch's node keeps no tensor there (a mask
    it rebuilds from sizes).
    """

    __slots__ = ("name", "grads", "cost", "broadcasts", "multithreaded", "saves_result", "unhooked")

    def __init__(
        self,
        name: str,
        *grads: tuple[tuple[str, ...], Callable],
        cost: Callable | None = None,
        broadcasts: bool = False,
        multithreaded: bool = False,
        unhooked: tuple[str, ...] = (),
    ):
        self.name = name
        self.unhooked = unhooked
        self.grads = grads
        self.cost = cost
        self.broadcasts = broadcasts
        self.multithreaded = multithreaded
        self.saves_result = any("result" in names for names, _ in grads)
        for names, _ in grads:
            for saved in names:
                if "_saved_" + saved not in FormulaNode.__dict__:
                    setattr(FormulaNode, "_saved_" + saved, property(functools.partial(_saved_value, name=saved)))


def zeros_grad(ops: Any, g: Any) -> Any:
    """The gradient of an input the output does not depend on (a fill's old values, a comparison's operands)."""
    return ops.zeros_like(g)


def _saved_value(node: FormulaNode, name: str) -> Any:
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


_VERSIONED = (Tensor, SavedOutput)  # the saved values whose version a node checks at backward


class _RawArrays:
    """Stands in a node's saved versions when it saved raw arrays (indices, a mask) but no tensor: nothing to
    check, but the node frees them after a pass that keeps no graph, and refuses a second one, as PyTorch's."""

    _vc = None


_RAW_ARRAYS = (_RawArrays(), 0)


def _holds_array(values: list, array_types: tuple) -> bool:
    """Is one of `values` an array, or a tuple holding one (an advanced index)?"""
    for value in values:
        if isinstance(value, array_types):
            return True
        if value.__class__ is tuple:  # a loop, not any() over a generator: most are shapes, on every op's path
            for v in value:
                if isinstance(v, array_types):
                    return True
    return False


MODIFIED = (
    "one of the variables needed for gradient computation has been modified by an inplace operation: "
    "[actorgrad.{dtype} {shape}]{source} is at version {now}; expected version {saved} instead. Hint: the tensor "
    "was changed in place after an op saved it for backward; clone() it before changing it, or change it after "
    "backward."
)


def _modified_error(node: Node, saved: Any, version: int) -> RuntimeError:
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
                    raise _modified_error(self, value, version)
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


MIXED_DEVICES = "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"


def common_device(inputs: tuple[Tensor, ...]) -> Device:
    """The device every input is on; a zero-dim cpu tensor (a number) may meet tensors of any device, as in
    PyTorch. Raises PyTorch's error for tensors on two devices."""
    first = inputs[0]._device
    for t in inputs:
        if t._device is not first:
            break
    else:
        return first  # the common case, without building anything
    placed = dict.fromkeys(t._device for t in inputs if t._device is not cpu or t._data.ndim)
    if len(placed) > 1:
        first, second = list(placed)[:2]
        raise RuntimeError(MIXED_DEVICES.format(first, second))
    return next(iter(placed), cpu)


def same_device(first: Tensor, *others: Tensor | None) -> None:
    """PyTorch's strict check, for ops that are not elementwise (joins, class-index losses, embeddings): every
    tensor given on `first`'s device, a zero-dim cpu tensor too."""
    for t in others:
        if t is not None and t._device is not first._device:
            raise RuntimeError(MIXED_DEVICES.format(first._device, t._device))


def record(
    rule: Rule, data: Any, inputs: tuple[Tensor, ...], *, on_device: Device | None = None, **params: Any
) -> Tensor:
    """Wrap the forward result `data` of an op on `inputs`, attaching the op's backward node if needed.

    The output and its node are on the inputs' device (they must share one), or on `on_device` for an op that
    moves its input (a copy to another device)."""
    if on_device is None:
        device = inputs[0]._device
        for t in inputs:
            if t._device is not device:  # rare: a zero-dim cpu tensor beside another device's, or a mistake
                device = common_device(inputs)
                break
    else:
        device = on_device
    if device is cpu:
        if data.__class__ is not np.ndarray:
            data = np.asarray(data)
        out = Tensor(data)
    else:
        if not isinstance(data, device.xp.ndarray):
            data = device.xp.asarray(data)
        out = Tensor(data, device=device)
    if data.base is not None:
        share_if_view(out, inputs)
    if not _grad_enabled.get():
        if out._vc is None:  # a new tensor (a view shares its base's counter): an inference tensor in inference mode
            out._vc = _inference_mode.get()
        return out
    edges = []
    needs_grad = False
    dtype = data.dtype
    mixed = False  # inputs of several dtypes: a formula's numpy result may have none of them, so cast every grad
    for t in inputs:
        if t._data.dtype != dtype:
            mixed = True
        if t._grad_fn is not None:
            edges.append((t._grad_fn, t._output_nr))
            needs_grad = True
        elif t._requires_grad:
            edges.append((grad_accumulator(t), 0))
            needs_grad = True
        else:
            edges.append(NO_EDGE)
            base = t._base
            if base is not None and base.requires_grad:  # a view made in no_grad mode requires grad, as in PyTorch
                needs_grad = True
    if not needs_grad:
        return out
    cost = data.size if rule.cost is None else rule.cost(data, params)
    # The values formulas may name: the op's keywords, its inputs and its output.
    params["self"] = inputs[0]
    if len(inputs) > 1:
        params["other"] = inputs[1]
    if rule.saves_result:
        params["result"] = SavedOutput(data, version_counter(out))
    saved = []
    versions = []
    shape = data.shape
    broadcasts = rule.broadcasts
    for i, (edge, (names, formula)) in enumerate(zip(edges, rule.grads)):
        if edge[0] is None:
            continue
        array = inputs[i]._data
        reduce = array.shape if broadcasts and array.shape != shape else None
        cast = array.dtype if mixed else None
        if device is not cpu and not array.ndim and inputs[i]._device is cpu:
            cast = (array.dtype, cpu)  # a zero-dim cpu tensor beside tensors on a device: its gradient goes home
        if not names:  # its formula needs no saved value (add's, sub's, neg's)
            saved.append((i, formula, (), (), reduce, cast))
            continue
        values = []
        raw = []  # the same values, tensors as their arrays: one loop, no comprehensions (a call each)
        for name in names:
            v = params[name]
            values.append(v)
            if isinstance(v, _VERSIONED):
                vc = v._vc
                versions += (v, 0 if vc is None else vc.value)
                v = v._data if device is cpu else device.kernel_operand(v._data)
            raw.append(v)
        if not versions and _holds_array(raw, (np.ndarray, device.xp.ndarray)):  # raw arrays only: indices, a mask
            versions += _RAW_ARRAYS
        saved.append((i, formula, tuple(raw), tuple(values), reduce, cast))
    metadata = metadata_kinds.get((shape, dtype, device))
    if metadata is None:
        metadata = metadata_of(shape, dtype, device)
    # Node's fields by Node's __init__, a FormulaNode's own here: one call frame per op, not two.
    node = out._grad_fn = FormulaNode(tuple(edges), metadata, device, None, cost)
    node._rule = rule
    node.multithreaded = rule.multithreaded
    node.saved = tuple(saved)
    # Each saved Tensor or SavedOutput followed by its version when saved, checked at backward (flat: no pair
    # object per value for the garbage collector to walk while the graph lives).
    node.versions = versions = tuple(versions)
    node.stamp = last_change[0] if versions else None  # None: nothing saved to check
    if device.streams is not None:  # its backward kernel queues on the stream its forward ran on
        node.stream = device.current_stream()
    hooks = _saved_tensors_hooks.get()
    if hooks is not None:
        pack_saved(node, out, hooks)
        node.__class__ = PackedFormulaNode
    return out


def share_if_view(out: Tensor, inputs: tuple[Tensor, ...]) -> None:
    """Make `out` a view of the input whose storage its array is a view of (reshape, transpose, basic
    indexing, expand ...): it shares that input's version counter and names the input's base as its own."""
    storage = array_storage(out._data)
    for t in inputs:
        if array_storage(t._data) is storage:
            make_view(out, t)
            return


def make_view(out: Tensor, t: Tensor) -> None:
    """Make `out` a view of `t`: it shares `t`'s version counter and names `t`'s base as its own."""
    vc = version_counter(t)
    out._vc = vc
    out._base = t if t._base is None else t._base
    if vc.views is None:
        vc.views = weakref.WeakSet()
    vc.views.add(out)
    if not _grad_enabled.get():
        mark_creation_mode(out, NO_GRAD_MODE)
    elif t._base is not None and id(t) in creation_modes:  # a view of such a view takes its mode
        mark_creation_mode(out, creation_modes[id(t)][1])


def as_tensor_operand(value: Any, like: Tensor) -> Tensor:
    """A Python number (or array) beside a tensor, as a constant tensor of the dtype PyTorch's promotion gives
    the two."""
    if isinstance(value, Tensor):
        return value
    return as_operand(value, result_type(like, value), like)
