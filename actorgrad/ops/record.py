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
from actorgrad.node import InputMetadata, Node
from actorgrad.ops.operands import as_operand, result_type
from actorgrad.saved_tensors import SavedOutput, _saved_tensors_hooks, pack_saved
from actorgrad.tensor import Tensor

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
    threads. `multithreaded` says the formulas' kernels spread over the cores themselves (BLAS).
    """

    __slots__ = ("name", "grads", "cost", "broadcasts", "multithreaded", "saves_result")

    def __init__(
        self,
        name: str,
        *grads: tuple[tuple[str, ...], Callable],
        cost: Callable | None = None,
        broadcasts: bool = False,
        multithreaded: bool = False,
    ):
        self.name = name
        self.grads = grads
        self.cost = cost
        self.broadcasts = broadcasts
        self.multithreaded = multithreaded
        self.saves_result = any("result" in names for names, _ in grads)


class FormulaNode(Node):
    """A node whose backward is a Rule from the op tables.

    `saved` holds, for each input that needs a gradient, `(input index, formula, saved values, shape to sum
    the gradient back to or None, dtype to cast it to or None)`, with the values as raw arrays for the fast
    path; `saved_tensors` holds the same with the values as Tensors, for a recorded backward. Both refer to
    the same arrays (or, for a node recorded inside `saved_tensors_hooks`, both unpack the same packed values
    on use). A gradient always has its input's shape and dtype.
    """

    __slots__ = ("rule", "saved", "saved_tensors")

    def __init__(
        self, rule: Rule, edges: tuple, metadata: tuple, saved: tuple, saved_tensors: tuple, cost: float
    ) -> None:
        super().__init__(edges, metadata, cpu, cost=cost)
        self.multithreaded = rule.multithreaded
        self.rule = rule
        self.saved: tuple | None = saved
        self.saved_tensors: tuple | None = saved_tensors

    def name(self) -> str:
        return self.rule.name

    def apply(self, grads: list, task: Any) -> list:
        calls = self.saved
        if calls is None:
            raise RuntimeError(SECOND_BACKWARD)
        ops = task.ops
        if ops is not None:
            calls = self.saved_tensors
        if not task.keep_graph:
            self.saved = self.saved_tensors = None
        g = grads[0]
        if g is None:
            return [None] * len(self.next_functions)
        if ops is None:
            return self._formulas(self.device.ops, g, calls, task.visit, False)
        with enable_grad():  # a recorded backward: each formula step becomes a node
            return self._formulas(ops, g, calls, task.visit, True)

    def _formulas(self, ops: Any, g: Any, calls: tuple, visit: set | None, recorded: bool) -> list:
        edges = self.next_functions
        out = [None] * len(edges)
        for i, formula, args, reduce, cast in calls:
            if visit is None or edges[i][0] in visit:
                if formula is None:
                    grad = g
                else:
                    grad = formula(ops, g, *(ops.unpack(args, self) if recorded else args))
                if reduce is not None:
                    grad = ops.sum_to(grad, reduce)
                out[i] = grad if cast is None else ops.cast(grad, cast)
        return out


def record(rule: Rule, data: Any, inputs: tuple[Tensor, ...], **params: Any) -> Tensor:
    """Wrap the forward result `data` of an op on `inputs`, attaching the op's backward node if needed."""
    if data.__class__ is not np.ndarray:
        data = np.asarray(data)
    out = Tensor(data)
    if not _grad_enabled.get():
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
    if not needs_grad:
        return out
    cost = data.size if rule.cost is None else rule.cost(data, params)
    # The values formulas may name: the op's keywords, its inputs and its output.
    params["self"] = inputs[0]
    if len(inputs) > 1:
        params["other"] = inputs[1]
    if rule.saves_result:
        params["result"] = SavedOutput(data)
    saved = []
    saved_tensors = []
    for i, (edge, (names, formula)) in enumerate(zip(edges, rule.grads)):
        if edge[0] is None:
            continue
        array = inputs[i]._data
        reduce = array.shape if rule.broadcasts and array.shape != data.shape else None
        cast = array.dtype if mixed else None
        values = [params[name] for name in names]
        saved_tensors.append((i, formula, tuple(values), reduce, cast))
        saved.append((i, formula, tuple([getattr(v, "_data", v) for v in values]), reduce, cast))
    metadata = (InputMetadata(data.shape, data.dtype, cpu),)
    node = out._grad_fn = FormulaNode(rule, tuple(edges), metadata, tuple(saved), tuple(saved_tensors), cost)
    hooks = _saved_tensors_hooks.get()
    if hooks is not None:
        pack_saved(node, out, hooks)
    return out


def as_tensor_operand(value: Any, like: Tensor) -> Tensor:
    """A Python number (or array) beside a tensor, as a constant tensor of the dtype PyTorch's promotion gives
    the two."""
    if isinstance(value, Tensor):
        return value
    return as_operand(value, result_type(like, value))
