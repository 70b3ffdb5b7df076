"""The differentiable ops, and the Tensor methods and operators that call them."""

from __future__ import annotations

from typing import Any

from actorgrad.ops.arithmetic import add, div, exp, log, mul, neg, pow, relu, rsub, sigmoid, sub, tanh
from actorgrad.ops.linalg import matmul
from actorgrad.ops.reductions import amax, log_softmax, mean, sum
from actorgrad.ops.shape import broadcast_to, numpy_T, permute, reshape, transpose
from actorgrad.tensor import Tensor

__all__ = [
    "add", "amax", "broadcast_to", "div", "exp", "log", "log_softmax", "matmul", "mean", "mul", "neg",
    "permute", "pow", "relu", "reshape", "sigmoid", "sub", "sum", "tanh", "transpose",
]


def _reflected(op: Any) -> Any:
    return lambda self, other: op(other, self)


def _commuted(op: Any) -> Any:
    """`2 * x` records as `x * 2`, as PyTorch does, so the tensor stays the first input."""
    return lambda self, other: op(self, other)


_METHODS = {
    "__add__": add, "__radd__": _commuted(add), "add": add,
    "__sub__": sub, "__rsub__": rsub, "sub": sub,
    "__mul__": mul, "__rmul__": _commuted(mul), "mul": mul,
    "__truediv__": div, "__rtruediv__": _reflected(div), "div": div,
    "__pow__": pow, "__rpow__": _reflected(pow), "pow": pow,
    "__matmul__": matmul, "__rmatmul__": _reflected(matmul), "matmul": matmul,
    "__neg__": neg, "neg": neg,
    "exp": exp, "log": log, "tanh": tanh, "sigmoid": sigmoid, "relu": relu,
    "sum": sum, "mean": mean, "amax": amax, "log_softmax": log_softmax,
    "reshape": reshape, "view": reshape, "transpose": transpose, "permute": permute,
    "broadcast_to": broadcast_to, "expand": lambda self, *shape: broadcast_to(self, _sizes(shape)),
}


def _sizes(shape: tuple) -> tuple:
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape


for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
Tensor.T = property(numpy_T)
