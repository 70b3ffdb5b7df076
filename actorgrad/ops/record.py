"""Recording an op: run its forward on raw arrays and, when grad mode asks, attach a FormulaNode.

An op's gradient rule is a `Rule`: the node's name and, per forward input, the saved values the formula needs
and the formula itself. A node saves only what the formulas of inputs that require grad name, no more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.accumulate_grad import grad_accumulator
from actorgrad.devices import cpu
from actorgrad.grad_mode import _grad_enabled, enable_grad
from actorgrad.node import Edge, InputMetadata, Node
from actorgrad.tensor import Tensor

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward."
)

NO_EDGE = Edge(None, 0)


class Rule:
    """How one op differentiates: `grads[i] = (names, formula)` gives input i's gradient as
    `formula(ops, g, *saved values named by names)`. Names are `self`, `other` (the inputs), `result` (the
    output) or a keyword the op passed to `record`. `cost` estimates the backward's nanoseconds from the
    output array and the op's keywords; the scheduler sends costly nodes to worker threads.
    """

    __slots__ = ("name", "grads", "cost", "saves_result")

    def __init__(self, name: str, *grads: tuple[tuple[str, ...], Callable], cost: Callable | None = None):
        self.name = name
        self.grads = grads
        self.cost = cost
        self.saves_result = any("result" in names for names, _ in grads)


class SavedOutput:
    """An op's own output, saved without a reference back to its Tensor (that would be a cycle through the
    node). Unpacked for `create_graph` as a new Tensor whose grad_fn is the node that saved it."""

    __slots__ = ("_data",)

    def __init__(self, data: Any) -> None:
        self._data = data


class FormulaNode(Node):
    """A node whose backward is a Rule from the op tables."""

    __slots__ = ("rule", "saved")

    def __init__(self, rule: Rule, edges: tuple, metadata: tuple, saved: tuple, cost: float) -> None:
        super().__init__(edges, metadata, cpu, cost=cost)
        self.rule = rule
        self.saved: tuple | None = saved

    def name(self) -> str:
        return self.rule.name

    def apply(self, grads: list, task: Any) -> tuple:
        saved = self.saved
        if saved is None:
            raise RuntimeError(SECOND_BACKWARD)
        g = grads[0]
        edges = self.next_functions
        if g is None:
            return (None,) * len(edges)
        if task.ops is None:
            return self._formulas(self.device.ops, g, saved, edges, task.visit)
        with enable_grad():
            return self._formulas(task.ops, g, saved, edges, task.visit)

    def _formulas(self, ops: Any, g: Any, saved: tuple, edges: tuple, visit: set | None) -> list:
        out = []
        for (_, formula), args, (node, _) in zip(self.rule.grads, saved, edges):
            if node is None or (visit is not None and node not in visit):
                out.append(None)
            else:
                out.append(formula(ops, g, *ops.unpack(args, self)))
        return out

    def release_saved(self) -> None:
        self.saved = None


def _saved_value(name: str, inputs: tuple, output: SavedOutput | None, params: dict) -> Any:
    if name == "self":
        return inputs[0]
    if name == "other":
        return inputs[1]
    if name == "result":
        return output
    return params[name]


def record(rule: Rule, data: Any, inputs: tuple[Tensor, ...], **params: Any) -> Tensor:
    """Wrap the forward result `data` of an op on `inputs`, attaching the op's backward node if needed."""
    if not isinstance(data, np.ndarray):
        data = np.asarray(data)
    out = Tensor(data)
    if not _grad_enabled.get():
        return out
    edges = []
    needs_grad = False
    for t in inputs:
        if t._grad_fn is not None:
            edges.append(Edge(t._grad_fn, t._output_nr))
            needs_grad = True
        elif t._requires_grad:
            edges.append(Edge(grad_accumulator(t), 0))
            needs_grad = True
        else:
            edges.append(NO_EDGE)
    if not needs_grad:
        return out
    saved_output = SavedOutput(data) if rule.saves_result else None
    saved = tuple(
        None if edge.node is None else tuple(_saved_value(n, inputs, saved_output, params) for n in names)
        for edge, (names, _) in zip(edges, rule.grads)
    )
    cost = data.size if rule.cost is None else rule.cost(data, **params)
    metadata = (InputMetadata(data.shape, data.dtype, cpu),)
    out._grad_fn = FormulaNode(rule, tuple(edges), metadata, saved, cost)
    return out


def as_tensor_operand(value: Any, like: Tensor) -> Tensor:
    """A Python number (or array) beside a tensor, as a constant tensor of a matching dtype."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, bool | int | float):
        kind = like._data.dtype.kind
        dtype = like._data.dtype if kind in "fc" or isinstance(value, int) else np.dtype(np.float32)
        return Tensor(np.asarray(value, dtype=dtype))
    if isinstance(value, np.ndarray | np.generic):
        return Tensor(np.asarray(value))
    raise TypeError(f"unsupported operand type for a tensor op: {type(value).__name__}")
