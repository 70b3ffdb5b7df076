"""The pooling ops' backward nodes, which take the pooled input as PyTorch's backward kernels do.

PyTorch's pooling backwards (max_pool2d_with_indices_backward, avg_pool2d_backward, the adaptive ones) are ops on
the gradient and the input `self`, with a zero derivative for `self`. So under create_graph an input's gradient
requires grad even when the gradient it came from does not, and a double backward through it gives zeros instead
of failing; and since the node saves `self`, changing the input in place before backward is refused. Here a
pooling's node saves `self` too: its formula on raw arrays ignores it, and in a recorded backward it records one
node on (g, self), PyTorch's `<Name>BackwardBackward0`, whose gradient for g is the backward's adjoint (the pooling
again) and for self zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from actorgrad.ops.record import Rule, record, zeros_grad
from actorgrad.tensor import Tensor


def input_dependent(name: str, saves: tuple[str, ...], grad: Callable, adjoint: Callable,
                    cost: Callable | None = None) -> Rule:
    """`<name>Backward0`, whose gradient is `grad(ops, g, *saves)`; recorded, one node on (g, self) whose gradient
    for g is `adjoint(ops, gg, *saves, grad_shape)`."""
    backward = Rule(name + "BackwardBackward0", ((*saves, "grad_shape"), adjoint), ((), zeros_grad))

    def formula(ops: Any, g: Any, self: Any, *values: Any) -> Any:
        if not isinstance(g, Tensor):
            return grad(ops, g, *values)
        raw = [v._data if isinstance(v, Tensor) else v for v in values]
        data = grad(g._device.ops, g._data, *raw)
        return record(backward, data, (g, self), grad_shape=g.shape, **dict(zip(saves, values)))

    return Rule(name + "Backward0", (("self", *saves), formula), cost=cost)


def scatter_to_maxima(ops: Any, g: Any, index: Any, self_shape: tuple, slots: int) -> Any:
    """Each window's gradient to the element its index names. A window over padding alone can name one past the
    plane (PyTorch writes there out of bounds): that gradient lands in an extra slot, dropped."""
    size = math.prod(self_shape[index.ndim - 1:])  # the index is (*lead, windows), one plane or volume per row
    flat = ops.scatter_add_last(ops.reshape(g, index.shape), index, slots)
    if slots > size:
        flat = ops.index(flat, (slice(None),) * (index.ndim - 1) + (slice(0, size),), None)
    return ops.reshape(flat, self_shape)


def gather_maxima(ops: Any, gg: Any, index: Any, self_shape: tuple, slots: int, grad_shape: tuple) -> Any:
    """scatter_to_maxima's adjoint: each window's value at its maximum's place (zero at the dropped slot)."""
    size = math.prod(self_shape[index.ndim - 1:])
    flat = ops.reshape(gg, (*index.shape[:-1], size))
    if slots > size:
        flat = ops.pad(flat, (0, slots - size))
    return ops.reshape(ops.gather_last(flat, index), grad_shape)


def spread_means(ops: Any, g: Any, divisor: Any, kernel: Any, planes_shape: tuple, self_shape: tuple,
                 geometry: Any) -> Any:
    """Average pooling's gradient: each window's gradient over its count, spread on its places (the input
    adjoint of the ones-kernel convolution)."""
    windows = ops.reshape(g / divisor, (planes_shape[0], 1, *g.shape[2 - len(planes_shape):]))
    return ops.reshape(ops.convolution_input_grad(windows, kernel, planes_shape, geometry), self_shape)


def window_means(ops: Any, gg: Any, divisor: Any, kernel: Any, planes_shape: tuple, self_shape: tuple,
                 geometry: Any, grad_shape: tuple) -> Any:
    """spread_means' adjoint: average pooling of `gg`."""
    return ops.reshape(ops.convolution(ops.reshape(gg, planes_shape), kernel, geometry), grad_shape) / divisor
