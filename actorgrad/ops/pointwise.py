"""Elementwise ops of several tensors (atan2, lerp, addcmul, addcdiv) and their gradient rules.

Operands broadcast; each rule's node sums its gradients back to the inputs' shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.linalg import TYPE_META_NAMES
from actorgrad.ops.operands import (
    SCALAR_NAMES,
    broadcast_error,
    common_dtype,
    data_as,
    fitted_number,
    floating,
    kernel_operands,
    not_implemented,
    number_array,
    real_number,
    require_tensors,
)
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.tensor import Tensor, bool_

__all__ = ["addcdiv", "addcmul", "atan2", "arctan2", "lerp"]


def _atan2_grad(ops: Any, g: Any, self: Any, other: Any, swap: bool) -> Any:
    """At the origin, where atan2 has no derivative, the gradient is 0, as PyTorch's (it masks 1 / 0 to 0)."""
    denominator = self * self + other * other
    origin = denominator == 0
    return ops.where(origin, 0, g * (-self if swap else other) / ops.where(origin, 1, denominator))


ATAN2 = Rule(
    "Atan2Backward0",
    (("self", "other"), lambda ops, g, self, other: _atan2_grad(ops, g, self, other, False)),
    (("self", "other"), lambda ops, g, self, other: _atan2_grad(ops, g, self, other, True)),
    broadcasts=True,
)
LERP_NUMBER = Rule(  # conjugated for complex tensors (conjugate() of a real number is itself)
    "LerpBackward0",
    (("weight",), lambda ops, g, weight: g * (1 - weight).conjugate()),
    (("weight",), lambda ops, g, weight: g * weight.conjugate()),
    broadcasts=True,
)
LERP_TENSOR = Rule(
    "LerpBackward1",
    (("weight",), lambda ops, g, weight: g * ops.conj(1 - weight)),
    (("weight",), lambda ops, g, weight: g * ops.conj(weight)),
    (("self", "end"), lambda ops, g, self, end: g * ops.conj(end - self)),
    broadcasts=True,
)
ADDCMUL = Rule(
    "AddcmulBackward0",
    ((), None),
    (("tensor2", "value"), lambda ops, g, tensor2, value: g * ops.conj(tensor2 * value)),
    (("tensor1", "value"), lambda ops, g, tensor1, value: g * ops.conj(tensor1 * value)),
    broadcasts=True,
)
ADDCDIV = Rule(
    "AddcdivBackward0",
    ((), None),
    (("tensor2", "value"), lambda ops, g, tensor2, value: g * ops.conj(value / tensor2)),
    (("tensor1", "tensor2", "value"),
     lambda ops, g, tensor1, tensor2, value: -g * ops.conj(value * tensor1 / (tensor2 * tensor2))),
    broadcasts=True,
)


def _opmath(dtype: np.dtype) -> np.dtype:
    """The dtype PyTorch's kernels compute in: float32 for float16 (rounded once at the end), else the dtype."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _broadcast_kernel(op: str, kernel: Any, *arrays: Any) -> Any:
    try:
        return kernel(*arrays)
    except ValueError:
        raise broadcast_error(op, *(a.shape for a in arrays)) from None


def atan2(input: Tensor, other: Tensor) -> Tensor:
    """The angle of the point (other, input), in (-pi, pi]; integer inputs give the default float dtype."""
    if autocast_state.get() is not None:
        return autocast_call(atan2, "atan2", input, other)
    require_tensors("atan2", input=input, other=other)
    device = common_device((input, other))
    dtype = floating(common_dtype(input, other))
    x, y = kernel_operands(data_as(input, dtype), data_as(other, dtype))
    return record(ATAN2, _broadcast_kernel("atan2", device.xp.arctan2, x, y), (input, other))


def arctan2(input: Tensor, other: Tensor) -> Tensor:
    """Alias of atan2."""
    return atan2(input, other)


def lerp(input: Tensor, end: Tensor, weight: float | Tensor) -> Tensor:
    """input + weight * (end - input), computed from whichever end is nearer (as PyTorch's kernel, so weight 1
    gives `end` exactly). All tensors must share one floating or complex dtype, but for a zero-dim real weight."""
    require_tensors("lerp", input=input, end=end)
    tensors = {"end": end, "weight": weight} if isinstance(weight, Tensor) else {"end": end}
    x = input._data
    for name, t in tensors.items():
        # a zero-dim real weight of another dtype meets the input as a number does, as in PyTorch
        if t.dtype != x.dtype and not (name == "weight" and t.ndim == 0 and t.dtype.kind in "biuf"):
            raise RuntimeError(f"expected dtype {TYPE_META_NAMES.get(x.dtype, x.dtype)} for `{name}` but got dtype "
                               f"{TYPE_META_NAMES.get(t.dtype, t.dtype)}")
    if x.dtype.kind not in "fc":
        kernel = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{SCALAR_NAMES.get(x.dtype, x.dtype)}\'')
    device = common_device((input, *tensors.values()))
    xp = device.xp
    dtype, work = x.dtype, _opmath(x.dtype)
    if not isinstance(weight, Tensor):  # a complex number weight of a real tensor only from the real line
        weight = real_number(weight, work)
    w = weight._data.astype(work, copy=False) if isinstance(weight, Tensor) else number_array(weight, work)
    x, e = (v.astype(work, copy=False) for v in kernel_operands(x, end._data))
    w = w if isinstance(w, xp.ndarray) else w[()]
    data = _broadcast_kernel("lerp", lambda a, b, t: xp.where(abs(t) < 0.5, a + t * (b - a), b - (b - a) * (1 - t)),
                             x, e, w).astype(dtype, copy=False)
    if isinstance(weight, Tensor):
        return record(LERP_TENSOR, data, (input, end, weight), end=end, weight=weight)
    return record(LERP_NUMBER, data, (input, end), weight=weight)


def _addc(op: str, rule: Rule, kernel: Any, input: Tensor, tensor1: Tensor, tensor2: Tensor, value: Any) -> Tensor:
    require_tensors(op, input=input, tensor1=tensor1, tensor2=tensor2)
    device = common_device((input, tensor1, tensor2))
    dtype = common_dtype(input, tensor1, tensor2)
    if op == "addcmul" and dtype == bool_:
        raise not_implemented(f"addcmul_{device.type}_out", dtype)
    work = _opmath(dtype)
    # value is cast to the dtype computed in, as PyTorch casts the Scalar (a complex one only from the real line,
    # into an integer dtype only from its range)
    value = real_number(value, work)
    if dtype.kind in "iu":
        fitted_number(value, dtype)
    scale = number_array(value, work)[()]
    a, b, c = (data_as(t, dtype).astype(work, copy=False) for t in (input, tensor1, tensor2))
    arrays = [v if isinstance(v, device.xp.ndarray) or v.ndim else v[()] for v in (a, b, c)]
    data = _broadcast_kernel(op, lambda a, b, c: a + scale * kernel(b, c), *arrays)
    return record(rule, device.xp.asarray(data, dtype=dtype), (input, tensor1, tensor2), tensor1=tensor1,
                  tensor2=tensor2, value=value)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """input + value * tensor1 * tensor2."""
    if autocast_state.get() is not None:
        return autocast_call(addcmul, "addcmul", input, tensor1, tensor2, value=value)
    return _addc("addcmul", ADDCMUL, lambda b, c: b * c, input, tensor1, tensor2, value)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """input + value * tensor1 / tensor2; integer tensor1 and tensor2 are refused, as in PyTorch."""
    if autocast_state.get() is not None:
        return autocast_call(addcdiv, "addcdiv", input, tensor1, tensor2, value=value)
    require_tensors("addcdiv", input=input, tensor1=tensor1, tensor2=tensor2)
    if tensor1.dtype.kind in "biu" and tensor2.dtype.kind in "biu":
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a "
            "true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + "
            "value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * "
            "tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes."
        )
    return _addc("addcdiv", ADDCDIV, lambda b, c: b / c, input, tensor1, tensor2, value)


def _method(function: Any, *names: str) -> Any:
    """`function` as a Tensor method, whose errors number its tensor arguments from 1 after self, as PyTorch's."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        require_tensors(function.__name__, 1, **dict(zip(names, args)))
        return function(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = function.__name__
    return method


METHODS: dict[str, Any] = {
    "atan2": _method(atan2, "other"), "arctan2": _method(arctan2, "other"), "lerp": lerp,
    "addcmul": _method(addcmul, "tensor1", "tensor2"), "addcdiv": _method(addcdiv, "tensor1", "tensor2"),
}
