"""The activations that are no function of one element alone: glu (of the two halves along a dim), prelu (a
learned slope per channel, dim 1), and the functional faces of softmax, log_softmax and softmin (over a dim, or
PyTorch's deprecated implicit choice of one), and gumbel_softmax (a softmax of Gumbel-perturbed logits). Also the
check of the floating-only kernels all activations share.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops import reductions
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import Rule, record, zeros_grad
from actorgrad.ops.reductions import one_dim
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn


def floating_data(kernel: str, input: Tensor) -> np.ndarray:
    """The input's array, or PyTorch's error for a dtype its kernel `kernel` does not take."""
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{SCALAR_NAMES.get(x.dtype, x.dtype)}'")
    return x


def recorded_grad(name: str, formula: Callable, *keys: str) -> Callable:
    """The gradient `formula(ops, g, self, *params)` of a piecewise-linear op: linear in `g`, constant in `self`
    between kinks. In a recorded backward it is one node `name` on (g, self) whose gradient for self is zero, as
    PyTorch's ...BackwardBackward0: recorded from ops on `g` alone it would drop out of the graph for a `g` that
    needs no gradient, and a double backward would fail where PyTorch's returns zeros."""

    def grad(ops: Any, g: Any, self: Any, *params: Any) -> Any:
        if isinstance(g, Tensor):
            data = formula(g._device.ops, g._data, self._data, *params)
            return record(backward, data, (g, self), **dict(zip(keys, params)))
        return formula(ops, g, self, *params)

    backward = Rule(name, (("other",) + keys, grad), ((), zeros_grad))
    return grad


def _glu_grad(ops: Any, g: Any, self: Any, halves: tuple, widths: tuple) -> Any:
    """Each half's gradient padded out to the input's shape along the halved dim, and the two added."""
    a, b = ops.index(self, halves[0], None), ops.index(self, halves[1], None)
    s = ops.sigmoid(b)
    return ops.pad(g * s, widths[0]) + ops.pad(g * a * s * (1 - s), widths[1])


GLU = Rule("GluBackward0", (("self", "halves", "widths"), _glu_grad))
def _prelu_input_grad(ops: Any, g: Any, self: Any, weight: Any) -> Any:
    if isinstance(g, Tensor):  # recorded: a node on the weight and self too (see recorded_grad)
        data = _prelu_input_grad(g._device.ops, g._data, self._data, weight._data)
        return record(PRELU_INPUT_BACKWARD, data, (g, self, weight), weight=weight)
    return ops.where(self > 0, g, g * weight)


def _prelu_weight_grad(ops: Any, g: Any, self: Any, weight: Any) -> Any:
    """The weight's gradient before it is summed back to the weight's shape."""
    if isinstance(g, Tensor):
        data = _prelu_weight_grad(g._device.ops, g._data, self._data, weight._data)
        return record(PRELU_WEIGHT_BACKWARD, data, (g, self, weight), weight=weight)
    return ops.where(self > 0, 0, g * self)


def _prelu_cross_grad(ops: Any, gg: Any, self: Any, g: Any) -> Any:
    """d(input's gradient)/d(weight) and d(weight's gradient)/d(self), applied to `gg`."""
    return ops.where(self > 0, 0, gg * g)


# prelu takes the weight's slope at 0, as PyTorch's. Each gradient is recorded as one node on (g, self, weight),
# as PyTorch's PreluKernelBackwardBackward0, so that it stays connected to both for a `g` that needs no gradient.
PRELU = Rule(
    "PreluKernelBackward0",
    (("self", "other"), _prelu_input_grad),
    (("self", "other"), _prelu_weight_grad),
    broadcasts=True,
)
PRELU_INPUT_BACKWARD = Rule(
    "PreluKernelBackwardBackward0",
    (("other", "weight"), _prelu_input_grad),
    ((), zeros_grad),
    (("other", "self"), _prelu_cross_grad),
    broadcasts=True,
)
PRELU_WEIGHT_BACKWARD = Rule(
    "PreluKernelBackwardBackward0",
    (("other", "weight"), _prelu_weight_grad),
    (("other", "self"), _prelu_cross_grad),
    ((), zeros_grad),
    broadcasts=True,
)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), a and b the two halves of `input` along `dim`."""
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    (d,) = one_dim(dim, x.ndim, "glu")
    if x.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {x.shape[d]}")
    x = floating_data("glu_cpu", input)
    h = x.shape[d] // 2
    lead = (slice(None),) * d
    halves = (lead + (slice(0, h),), lead + (slice(h, None),))
    after = (0, 0) * (x.ndim - 1 - d)  # pad's pairs run from the last dim back
    widths = (after + (0, h), after + (h, 0))
    a, b = x[halves[0]], x[halves[1]]
    return record(GLU, a * input._device.ops.sigmoid(b), (input,), halves=halves, widths=widths)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, else weight * x, one weight per channel (dim 1) or one for all."""
    if autocast_state.get() is not None:
        return autocast_call(prelu, "prelu", input, weight)
    x, w = input._data, weight._data
    if w.dtype != x.dtype:  # checked first, as PyTorch's: nn.PReLU's float32 weight on a float64 input lands here
        raise RuntimeError(
            f"prelu: Type promoting not supported. Got {SCALAR_NAMES.get(x.dtype)} and {SCALAR_NAMES.get(w.dtype)}"
        )
    if w.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {w.ndim}")
    if w.size != 1:
        if x.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = x.shape[1] if x.ndim >= 2 else 1
        if w.size != channels:
            raise RuntimeError(
                f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {w.size} and "
                f"channel size = {channels}."
            )
    floating_data("prelu_cpu", input)
    if w.ndim:  # the weights along dim 1 (or one for all): a view that broadcasts, its gradient summed back
        weight = weight.reshape((w.size,) + (1,) * (x.ndim - 2) if w.size != 1 else ())
    return record(PRELU, np.where(x > 0, x, weight._data * x), (input, weight))


def _implicit_dim(op: str, ndim: int) -> int:
    """PyTorch's deprecated choice when a softmax is given no dim: 0 for 0-, 1- and 3-dim inputs, else 1. (The
    ops take PyTorch's `_stacklevel` argument and need none: the warning names the first line outside actorgrad.)"""
    warn(f"Implicit dimension choice for {op} has been deprecated. Change the call to include dim=X as an argument.")
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """torch.nn.functional.softmax: exp(x) / sum(exp(x)) over `dim`, after a cast to `dtype` when given."""
    if autocast_state.get() is not None and dtype is None:
        return autocast_call(softmax, "softmax", input, dim, _stacklevel, dtype)
    if dim is None:
        dim = _implicit_dim("softmax", input._data.ndim)
    return reductions.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """torch.nn.functional.log_softmax: log(softmax(x)) over `dim`, after a cast to `dtype` when given."""
    if autocast_state.get() is not None and dtype is None:
        return autocast_call(log_softmax, "log_softmax", input, dim, _stacklevel, dtype)
    if dim is None:
        dim = _implicit_dim("log_softmax", input._data.ndim)
    return reductions.log_softmax(input, dim, dtype=dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """softmax(-x) over `dim` (recorded as SoftmaxBackward0 after a negation, as in PyTorch)."""
    if autocast_state.get() is not None and dtype is None:
        return autocast_call(softmin, "softmin", input, dim, _stacklevel, dtype)
    if dim is None:
        dim = _implicit_dim("softmin", input._data.ndim)
    return reductions.softmax(-input, dim, dtype=dtype)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) over `dim`, g Gumbel(0, 1) noise drawn from actorgrad's generator: a relaxed
    sample of the categorical distribution of `logits`. `hard` gives the one-hot of that sample's argmax, with the
    soft sample's gradient (straight through)."""
    from actorgrad.creation import zeros_like  # creation imports the ops package: at call time, not import time

    if eps != 1e-10:
        warn("`eps` parameter is deprecated and has no effect.")
    gumbels = -zeros_like(logits).exponential_().log()
    soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return soft
    index = soft.max(dim, keepdim=True)[1]
    return zeros_like(logits).scatter_(dim, index, 1.0) - soft.detach() + soft
