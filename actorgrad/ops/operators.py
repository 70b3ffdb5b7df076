"""Python's operators on tensors (`+`, `@`, ...): each answers NotImplemented to an operand it cannot take,
so Python asks the other operand (its `__radd__`, say) and otherwise raises its own "unsupported operand" error.

`2 * x` records as `x * 2`, as PyTorch does, so the tensor stays the first input. The comparison and bitwise
operators live with their ops in comparison.py, the augmented assignments (`+=`) in method_forms.py.
"""

from __future__ import annotations

from typing import Any

from actorgrad.ops.arithmetic import _binary, floor_divide, pow, remainder, rsub, rtruediv
from actorgrad.ops.linalg import matmul
from actorgrad.ops.operands import UnsupportedOperand
from actorgrad.tensor import Tensor

__all__: list[str] = []


def operator_form(op: Any) -> Any:
    """`op` as a binary operator: an operand it cannot take gives NotImplemented, so Python asks the other
    operand (its `__radd__`, say) and otherwise raises its own "unsupported operand type(s)" error."""
    def method(self: Tensor, other: Any) -> Any:
        try:
            return op(self, other)
        except UnsupportedOperand:
            return NotImplemented

    return method


def reflected_form(op: Any) -> Any:
    """`op` as a reflected operator (`__rsub__` runs `op(other, self)`), NotImplemented as `operator_form`."""
    def method(self: Tensor, other: Any) -> Any:
        try:
            return op(other, self)
        except UnsupportedOperand:
            return NotImplemented

    return method


# The hottest operators, each with its NotImplemented answer inline (as `operator_form` gives it) to spare a call.
def _add(input: Any, other: Any) -> Tensor:
    try:
        return _binary("add", input, other)
    except UnsupportedOperand:
        return NotImplemented


def _sub(input: Any, other: Any) -> Tensor:
    try:
        return _binary("sub", input, other)
    except UnsupportedOperand:
        return NotImplemented


def _mul(input: Any, other: Any) -> Tensor:
    try:
        return _binary("mul", input, other)
    except UnsupportedOperand:
        return NotImplemented


def _div(input: Any, other: Any) -> Tensor:
    try:
        return _binary("div", input, other)
    except UnsupportedOperand:
        return NotImplemented


def _pow(self: Tensor, other: Any, modulo: Any = None) -> Any:
    """`self ** other`; Python's three-argument pow (a modulo) gets NotImplemented, so Python raises its own
    "unsupported operand type(s) for ** or pow()", as for PyTorch's tensors."""
    if modulo is not None:
        return NotImplemented
    try:
        return pow(self, other)
    except UnsupportedOperand:
        return NotImplemented


def _rpow(self: Tensor, other: Any, modulo: Any = None) -> Any:
    """`other ** self`, NotImplemented with a modulo as `_pow`."""
    if modulo is not None:
        return NotImplemented
    try:
        return pow(other, self)
    except UnsupportedOperand:
        return NotImplemented


def _matmul(self: Tensor, other: Any) -> Any:
    return matmul(self, other) if isinstance(other, Tensor) else NotImplemented


def _rmatmul(self: Tensor, other: Any) -> Any:
    return matmul(other, self) if isinstance(other, Tensor) else NotImplemented


METHODS = {
    "__add__": _add, "__radd__": _add, "__sub__": _sub, "__rsub__": operator_form(rsub), "__mul__": _mul,
    "__rmul__": _mul, "__truediv__": _div, "__rtruediv__": operator_form(rtruediv),
    "__floordiv__": operator_form(floor_divide), "__rfloordiv__": reflected_form(floor_divide),
    "__mod__": operator_form(remainder), "__rmod__": reflected_form(remainder),
    "__pow__": _pow, "__rpow__": _rpow, "__matmul__": _matmul, "__rmatmul__": _rmatmul,
}
