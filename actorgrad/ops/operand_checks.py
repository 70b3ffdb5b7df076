"""PyTorch's refusals of bool and uint64 operands in arithmetic, checked before promotion, and of an add's or a
sub's alpha that its result's dtype cannot take."""

from __future__ import annotations

from typing import Any

from actorgrad.tensor import Tensor, bool_

BOOL_SUBTRACTION = (
    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use "
    "the `~` or `logical_not()` operator instead."
)
TWO_BOOL_SUBTRACTION = (
    "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator "
    "instead."
)
UNSIGNED_PROMOTION = (
    "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote Bool and UInt64"
)


def _is_bool(value: Any) -> bool:
    return value.__class__ is bool or (isinstance(value, Tensor) and value._data.dtype == bool_)


def check_subtraction(a: Any, b: Any) -> None:
    """PyTorch refuses a bool operand of `-`, tensor or Python bool, whatever the other's dtype."""
    if _is_bool(a) or _is_bool(b):
        raise RuntimeError(TWO_BOOL_SUBTRACTION if _is_bool(a) and _is_bool(b) else BOOL_SUBTRACTION)


def check_unsigned_number(a: Any, b: Any) -> None:
    """PyTorch takes an int in [2**63, 2**64) as a uint64 number, which a bool tensor cannot promote with. (Beside
    any other tensor it does not decide the dtype, so it wraps: actorgrad needs no uint64.)"""
    number, tensor = (a, b) if a.__class__ is int else (b, a)
    if number.__class__ is int and 1 << 63 <= number < 1 << 64 and _is_bool(tensor):  # past it: OverflowError
        raise RuntimeError(UNSIGNED_PROMOTION)


def check_alpha(alpha: Any, kind: str) -> None:
    """add's and sub's alpha against the kind of their result's dtype: a bool alpha only for a bool result, a
    floating one not for an integer result, a complex one only for a complex result."""
    if alpha.__class__ is bool and kind != "b":
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if kind in "biu" and isinstance(alpha, float | complex):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if kind != "c" and isinstance(alpha, complex):
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")
