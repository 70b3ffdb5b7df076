"""Recording an op: run its forward on raw arrays and, when grad mode asks, attach a FormulaNode.

An op's gradient rule is a `Rule`: the node's name and, per forward input, the saved values the formula needs
and the formula itself. A node saves only what the formulas of inputs that require grad name, no more.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.accumulate_grad import grad_accumulator
from actorgrad.devices import Device, cpu
from actorgrad.formula_node import FormulaNode, PackedFormulaNode, saved_value
from actorgrad.grad_mode import _grad_enabled, _inference_mode
from actorgrad.node import metadata_kinds, metadata_of
from actorgrad.ops.operands import as_operand, result_type
from actorgrad.saved_tensors import SavedOutput, _saved_tensors_hooks, pack_saved
from actorgrad.tensor import Tensor, array_storage
from actorgrad.version_counter import (
    NO_GRAD_MODE,
    creation_modes,
    last_change,
    mark_creation_mode,
    version_counter,
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
                    setattr(FormulaNode, "_saved_" + saved, property(functools.partial(saved_value, name=saved)))


def zeros_grad(ops: Any, g: Any) -> Any:
    """The gradient of an input the output does not depend on (a fill's old values, a comparison's operands)."""
    return ops.zeros_like(g)


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
