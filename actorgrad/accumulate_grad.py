"""AccumulateGrad: the node at the end of every path, which adds a leaf's gradient into `.grad`.

A leaf has one AccumulateGrad, shared by every op that uses it. The leaf holds it weakly and the graph holds
it strongly, so it lives exactly as long as some graph reaches it. It does not write `.grad` itself: it stages
the gradient in the graph task, which commits all leaves at once when the whole pass has succeeded.
"""

from __future__ import annotations

import weakref
from typing import Any

from actorgrad.node import MAX_SEQUENCE_NR, Node, metadata_of
from actorgrad.tensor import Tensor


class AccumulateGrad(Node):
    __slots__ = ("variable",)

    def __init__(self, variable: Tensor) -> None:
        # One per leaf and graph (a training step makes one per parameter): not super(), shared metadata.
        data = variable._data
        device = variable._device
        Node.__init__(self, (), metadata_of(data.shape, data.dtype, device), device, MAX_SEQUENCE_NR)
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"  # PyTorch's name for it (its repr and type say AccumulateGrad)

    def apply(self, grads: list, task: Any) -> tuple:
        # A leaf set to not require grad after the graph was made gets no gradient, as in PyTorch.
        grad = grads[0]
        if grad is not None and self.variable._requires_grad:
            if grad.shape != self.input_metadata[0][0]:
                grad = self.fitted_gradient(0, grad, task.ops)
            task.stage(self.variable, grad)
        elif grad is None and self.hooks is not None and self.hooks.post_accumulate and task.accumulate:
            task.reach_without_grad(self.variable)  # its post-accumulate hooks run all the same, as PyTorch's
        return ()


def grad_accumulator(leaf: Tensor) -> AccumulateGrad:
    """The leaf's AccumulateGrad, made on first use and shared while any graph holds it."""
    ref = leaf._accumulator
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(leaf)
        node.hooks = leaf._hooks
        leaf._accumulator = weakref.ref(node)
    return node


def gradient_edge(t: Tensor) -> tuple[Node | None, int]:
    """Where a gradient for `t` goes: its grad_fn's slot, its leaf accumulator, or nowhere."""
    if t._grad_fn is not None:
        return (t._grad_fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return (None, 0)
