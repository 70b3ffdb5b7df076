"""A backward or grad call's arguments, checked and turned into what a pass starts from: the outputs' seed
gradients, the GraphRoot that hands them out, and the edges of the inputs whose gradients are asked for. Errors
name the argument and index at fault, with PyTorch's texts."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from actorgrad.accumulate_grad import grad_accumulator, gradient_edge
from actorgrad.autograd.graph import GradientEdge
from actorgrad.devices import cpu
from actorgrad.node import Edge, GraphRoot
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn_once


def _sequence(value: Any, what: str, kinds: str) -> tuple:
    """`value` as a tuple; None or a non-sequence is refused (PyTorch's TypeError) naming the argument."""
    try:
        return tuple(value)
    except TypeError:
        raise TypeError(f"{what} must be {kinds} or a sequence of them, got {type(value).__name__}") from None


def as_tuple(value: Any, what: str, kinds: type | tuple = Tensor, named: str = "a Tensor") -> tuple:
    """`value` (one of `kinds`, or a sequence of them) as a tuple, each checked, naming the argument."""
    if isinstance(value, kinds):
        return (value,)
    values = _sequence(value, what, named)
    for i, v in enumerate(values):
        if not isinstance(v, kinds):
            raise TypeError(f"{what}[{i}] must be {named}, got {type(v).__name__}")
    return values


class EdgeOutput:
    """A GradientEdge given among the outputs of backward() or grad(), as PyTorch takes one, read as an output
    tensor is read: its gradient goes into the edge's slot, with the shape, dtype and device its node expects
    (its `_data` a broadcast zero-dim array of that shape and dtype, as an output tensor's array tells them)."""

    __slots__ = ("_grad_fn", "_output_nr", "_data", "shape", "dtype", "device", "_device")
    requires_grad = True

    def __init__(self, edge: GradientEdge) -> None:
        self._grad_fn, self._output_nr = edge.node, edge.output_nr
        self.shape, self.dtype, self.device = edge.node.input_metadata[edge.output_nr]
        self._device = self.device
        self._data = np.broadcast_to(np.empty((), self.dtype), self.shape)


def as_outputs(value: Any, what: str) -> tuple:
    """The outputs a pass starts from: tensors, or gradient edges (as EdgeOutputs)."""
    if value.__class__ is Tensor:  # the usual call: one loss
        return (value,)
    outputs = as_tuple(value, what, (Tensor, GradientEdge))
    for output in outputs:
        if isinstance(output, GradientEdge):  # rare: only then a new tuple (the usual call allocates nothing more)
            return tuple(EdgeOutput(o) if isinstance(o, GradientEdge) else o for o in outputs)
    return outputs


def as_inputs(value: Any, what: str) -> tuple:
    """The tensors (or gradient edges) whose gradients a call asks for (PyTorch's error for any other value)."""
    if isinstance(value, Tensor | GradientEdge):
        return (value,)
    values = _sequence(value, what, "a Tensor or a GradientEdge")
    for v in values:
        if not isinstance(v, Tensor | GradientEdge):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(v).__name__}")
    return values


def seed_grads(outputs: tuple, grad_outputs: Any, create_graph: bool) -> list:
    """One starting gradient per output: the given one (checked against the output), or ones for a scalar."""
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        given = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    else:
        # PyTorch pairs them with the outputs and ignores any extra gradients
        given = list(_sequence(grad_outputs, "grad_tensors", "a Tensor or None"))[:len(outputs)]
    for i, grad in enumerate(given):
        if grad is not None and not isinstance(grad, Tensor):
            raise TypeError(f"grad_tensors[{i}] must be a Tensor or None, got {type(grad).__name__}")
    if len(given) != len(outputs):
        raise RuntimeError(
            f"got {len(outputs)} tensors and {len(given)} gradients: grad_tensors should have the same length as "
            f"tensors (give a Tensor, or None for a scalar, per tensor)"
        )
    seeds = []
    for i, (out, grad) in enumerate(zip(outputs, given)):
        if grad is None:
            if not out.requires_grad:  # graph_root refuses it, with PyTorch's text for it
                seeds.append(None)
                continue
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out._data.dtype.kind != "f":  # a complex loss needs its gradient given: 1 or 1j would be a choice
                raise RuntimeError(
                    f"grad can be implicitly created only for real scalar outputs but got actorgrad.{out._data.dtype}"
                )
            where = out._device
            if where is cpu:
                ones = np.empty(out.shape, out.dtype)
                ones.fill(1)
            else:
                ones = where.xp.ones(out.shape, out.dtype)
            seeds.append(Tensor(ones, device=where) if create_graph else ones)
            continue
        if grad.shape != out.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {grad.shape} and output[{i}] has a shape of "
                f"{out.shape}."
            )
        if grad._device is not out._device:
            raise RuntimeError(
                f"invalid gradient at index {i} - expected device {out._device} but got {grad._device}"
            )
        if (grad._data.dtype.kind == "c") != (out._data.dtype.kind == "c"):  # casting would drop or invent a part
            raise RuntimeError(
                f"For complex Tensors, both grad_output and output are required to have the same dtype. Mismatch in "
                f"dtype: grad_output[{i}] has a dtype of actorgrad.{grad._data.dtype} and output[{i}] has a dtype of "
                f"actorgrad.{out._data.dtype}."
            )
        if grad.dtype != out.dtype:
            grad = Tensor(grad._data.astype(out.dtype), device=grad._device)
        seeds.append(grad if create_graph else grad._data)
    return seeds


def graph_root(outputs: tuple, seeds: list) -> GraphRoot:
    """The pass's first node: it hands each output's seed gradient to the node that made that output."""
    edges = []
    for i, out in enumerate(outputs):
        edge = gradient_edge(out)
        if edge[0] is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append(edge)
    return GraphRoot(tuple(edges), seeds, outputs[0].device if outputs else cpu)  # no outputs: nothing to do


def input_edges(inputs: tuple, what: str) -> list[Edge]:
    """The edge each input's gradient arrives on: its grad_fn's, or its accumulator's for a leaf."""
    edges = []
    for i, t in enumerate(inputs):
        if isinstance(t, GradientEdge):
            edges.append((t.node, t.output_nr))
            continue
        if not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors does not require grad ({what}[{i}])")
        edge = gradient_edge(t)  # a view made under no_grad has none: its own accumulator, which no op feeds
        edges.append((grad_accumulator(t), 0) if edge[0] is None else edge)
    return edges


def renamed_grad_tensors(grad_tensors: Any, grad_variables: Any) -> Any:
    """`backward(grad_variables=...)`: PyTorch's deprecated name, warned about as PyTorch does."""
    warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=3)
    if grad_tensors is not None:
        raise RuntimeError(
            "`grad_tensors` and `grad_variables` (deprecated) arguments both passed to `backward()`. Please only "
            "use `grad_tensors`."
        )
    return grad_variables


def unbatched_grad_outputs(outputs: tuple, grad_outputs: Any) -> list[list[Tensor]]:
    """is_grads_batched: the grad_outputs of each pass, one list per element of the batch (the first dimension
    of every grad_output), checked against the outputs as PyTorch checks them."""
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        given = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    else:
        given = list(_sequence(grad_outputs, "grad_outputs", "a Tensor"))[:len(outputs)]
    for i, (out, grad) in enumerate(zip(outputs, given)):
        if not isinstance(grad, Tensor) or not grad.ndim:
            got = f"a shape of {grad.shape}" if isinstance(grad, Tensor) else type(grad).__name__
            raise RuntimeError(
                f"If `is_grads_batched=True`, each grad_output needs a batch dimension first: grad_output[{i}] has "
                f"{got} and output[{i}] has a shape of {out.shape}"
            )
        if grad.shape[1:] != out.shape:
            raise RuntimeError(
                f"If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                f"dimension. The sizes of the remaining dimensions are expected to match the shape of corresponding "
                f"output, but a mismatch was detected: grad_output[{i}] has a shape of {grad.shape[1:]} and "
                f"output[{i}] has a shape of {out.shape}. If you only want some tensors in `grad_output` to be "
                f"considered batched, consider using vmap."
            )
    sizes = [grad.shape[0] for grad in given]
    if len(set(sizes)) > 1 or 0 in sizes:
        raise ValueError(
            f"is_grads_batched=True needs one batch of at least one element: every grad_output the same size in "
            f"its first dimension, got sizes {sizes}"
        )
    return [[grad[k] for grad in given] for k in range(sizes[0] if sizes else 1)]


def allows_unused(allow_unused: bool | None, materialize_grads: bool) -> bool:
    """PyTorch's rule: allow_unused defaults to materialize_grads, and an explicit False beside it is refused."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False."
        )
    return materialize_grads if allow_unused is None else allow_unused


CREATE_GRAPH_CYCLE = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient "
    "which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid this. If you "
    "have to use this function, make sure to reset the .grad fields of your parameters to None after use to break "
    "the cycle and avoid the leak."
)


def warn_create_graph_cycle() -> None:
    """PyTorch's warning (once per process) for backward(create_graph=True), whose leaves' gradients keep the graph
    that reaches them."""
    warn_once(CREATE_GRAPH_CYCLE)
