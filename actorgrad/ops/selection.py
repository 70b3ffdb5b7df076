"""Ops that pick, per element, one of their operands (clamp, clamp_min, clamp_max, maximum, minimum, where) and
their gradient rules.

Each gradient goes to the operand that was picked, through `ops.where` masks; at a tie or a bound the split
follows PyTorch: clamp passes the gradient at its bounds, maximum and minimum halve it between equal operands.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops.operands import (
    as_operand,
    broadcast_error,
    common_dtype,
    data_as,
    fitted_number,
    kernel_operands,
    not_implemented,
    real_number,
    require_tensors,
    result_type,
    type_name,
)
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.ops.searching import nonzero
from actorgrad.tensor import Tensor, bool_, float64
from actorgrad.user_warnings import warn_once

__all__ = ["clamp", "clamp_max", "clamp_min", "clip", "maximum", "minimum", "where"]


def _inside(ops: Any, g: Any, self: Any, min: Any, max: Any) -> Any:
    """The gradient where min <= self <= max, bounds included, else 0; a bound may be None (absent)."""
    if min is not None:
        g = ops.where(self >= min, g, 0)
    if max is not None:
        g = ops.where(self <= max, g, 0)
    return g


def _grad_min(ops: Any, g: Any, self: Any, min: Any, max: Any) -> Any:
    """A tensor min gets the gradient where it was picked: self below it, unless max (below min) won."""
    if max is not None:
        g = ops.where(min < max, g, 0)
    return ops.where(self < min, g, 0)


def _grad_max(ops: Any, g: Any, self: Any, min: Any, max: Any) -> Any:
    """A tensor max gets the gradient where it was picked: self above it, or max below min."""
    otherwise = 0 if min is None else ops.where(max < min, g, 0)
    return ops.where(self > max, g, otherwise)


BOUNDS = ("self", "min", "max")
CLAMP_NUMBERS = Rule("ClampBackward1", (BOUNDS, _inside))
CLAMP_TENSORS = Rule("ClampBackward0", (BOUNDS, _inside), (BOUNDS, _grad_min), (BOUNDS, _grad_max), broadcasts=True)


def _maximum_grad(ops: Any, g: Any, self: Any, other: Any) -> Any:
    """All of the gradient unless self lost, half where self and other tie: where either is NaN (the result),
    both get all of it, as in PyTorch."""
    return ops.where(self == other, g / 2, ops.where(self < other, 0, g))


def _minimum_grad(ops: Any, g: Any, self: Any, other: Any) -> Any:
    return ops.where(self == other, g / 2, ops.where(self > other, 0, g))


MAXIMUM = Rule(
    "MaximumBackward0",
    (("self", "other"), _maximum_grad),
    (("self", "other"), lambda ops, g, self, other: _maximum_grad(ops, g, other, self)),
    broadcasts=True,
)
MINIMUM = Rule(
    "MinimumBackward0",
    (("self", "other"), _minimum_grad),
    (("self", "other"), lambda ops, g, self, other: _minimum_grad(ops, g, other, self)),
    broadcasts=True,
)
WHERE = Rule(
    "WhereBackward0",
    (("condition",), lambda ops, g, condition: ops.where(condition, g, 0)),
    (("condition",), lambda ops, g, condition: ops.where(condition, 0, g)),
    broadcasts=True,
)


def _clamp_kernel(x: np.ndarray, lo: np.ndarray | None, hi: np.ndarray | None) -> np.ndarray:
    # max first, then min: with min > max every element becomes max, as in PyTorch.
    out = x if lo is None else np.maximum(*kernel_operands(x, lo))
    return out if hi is None else np.minimum(*kernel_operands(out, hi))


def _bounds(op: str, input: Tensor, min: Any, max: Any) -> tuple[Any, Any, int]:
    """clamp's bounds as PyTorch's overloads read them, and how many are tensors: two of a kind (where one is a
    tensor and the other a number, a zero-dim tensor that does not require grad is read as a number); beside a
    floating tensor a complex number is taken as a double (its real part; an imaginary part is refused)."""
    tensors = isinstance(min, Tensor) + isinstance(max, Tensor)
    if tensors and (min is None) + (max is None) + tensors < 2:
        if any(isinstance(b, Tensor) and (b.ndim or b.requires_grad) for b in (min, max)):
            got = ", ".join(type(v).__name__ for v in (input, min, max) if v is not None)
            raise TypeError(
                f"{op}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                " * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n"
                " * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n"
            )
        min, max, tensors = *(b.item() if isinstance(b, Tensor) else b for b in (min, max)), 0
    if not tensors and input.dtype.kind == "f":
        min, max = (None if b is None else real_number(b, float64) for b in (min, max))
    return min, max, tensors


def _clamp(op: str, input: Tensor, min: Any, max: Any) -> Tensor:
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    min, max, tensors = _bounds(op, input, min, max)
    bounds = [b for b in (min, max) if b is not None]
    dtype = common_dtype(input, *bounds)
    if dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if dtype == bool_ and (len(bounds) == 2 or not tensors):  # one tensor bound is maximum's or minimum's kernel
        kernel = "clamp" if len(bounds) == 2 else "clamp_min" if max is None else "clamp_max"
        raise not_implemented(f"{kernel}{'' if tensors else '_scalar'}_{input._device.type}", dtype)
    x = data_as(input, dtype)
    if not tensors:
        lo, hi = (None if b is None else fitted_number(b, dtype) for b in (min, max))
        return record(CLAMP_NUMBERS, _clamp_kernel(x, lo, hi), (input,), min=min, max=max)
    lo_t, hi_t = (None if b is None else as_operand(b, dtype) for b in (min, max))
    common_device((input, *(b for b in (lo_t, hi_t) if b is not None)))
    lo, hi = (None if b is None else data_as(b, dtype) for b in (lo_t, hi_t))
    try:
        data = _clamp_kernel(x, lo, hi)
    except ValueError:
        raise broadcast_error(op, x.shape, *(b.shape for b in (lo, hi) if b is not None)) from None
    absent = Tensor(np.zeros((), dtype))  # stands for a missing bound among the node's inputs
    inputs = (input, absent if lo_t is None else lo_t, absent if hi_t is None else hi_t)
    return record(CLAMP_TENSORS, data, inputs, min=lo_t, max=hi_t)


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Each element limited to [min, max]; either bound may be absent, a number or a (broadcasting) tensor, but
    not one of each."""
    return _clamp("clamp", input, min, max)


# One bound: a number (Backward0) or a broadcasting tensor (Backward1), which gets the gradient where it was picked.
CLAMP_MIN = Rule("ClampMinBackward0", (("self", "bound"), lambda ops, g, self, bound: ops.where(self >= bound, g, 0)))
CLAMP_MAX = Rule("ClampMaxBackward0", (("self", "bound"), lambda ops, g, self, bound: ops.where(self <= bound, g, 0)))
CLAMP_MIN_TENSOR = Rule(
    "ClampMinBackward1",
    (("self", "other"), lambda ops, g, self, other: ops.where(self >= other, g, 0)),
    (("self", "other"), lambda ops, g, self, other: ops.where(self < other, g, 0)),
    broadcasts=True,
)
CLAMP_MAX_TENSOR = Rule(
    "ClampMaxBackward1",
    (("self", "other"), lambda ops, g, self, other: ops.where(self <= other, g, 0)),
    (("self", "other"), lambda ops, g, self, other: ops.where(self > other, g, 0)),
    broadcasts=True,
)


def _of_tensors(op: str, rule: Rule, kernel: Any, input: Tensor, other: Tensor, dtype: Any) -> Tensor:
    """`kernel` of two broadcasting tensors, both as `dtype`, with PyTorch's errors for two devices or shapes
    that do not broadcast."""
    common_device((input, other))  # PyTorch's error, before a kernel meets arrays of two devices
    x, y = data_as(input, dtype), data_as(other, dtype)
    try:
        data = kernel(*kernel_operands(x, y))
    except ValueError:
        raise broadcast_error(op, x.shape, y.shape) from None
    return record(rule, data, (input, other))


def _one_bound(op: str, number_rule: Rule, tensor_rule: Rule, input: Tensor, bound: Any) -> Tensor:
    dtype = common_dtype(input, bound)
    if not isinstance(bound, Tensor) and dtype == bool_:
        raise not_implemented(f"{op}_scalar_{input._device.type}", bool_)
    xp = input._device.xp
    kernel = xp.maximum if op == "clamp_min" else xp.minimum
    if dtype.kind == "c":  # no order among complex numbers: PyTorch's errors differ by the bound's kind
        if isinstance(bound, Tensor):
            raise not_implemented(f"{'maximum' if op == 'clamp_min' else 'minimum'}_{input._device.type}", dtype)
        raise NotImplementedError("clamp is not supported for complex types")
    if isinstance(bound, Tensor):
        return _of_tensors(op, tensor_rule, kernel, input, bound, dtype)
    x = data_as(input, dtype)
    return record(number_rule, kernel(*kernel_operands(x, fitted_number(bound, dtype))), (input,), bound=bound)


def clamp_min(input: Tensor, min: Any) -> Tensor:
    """Each element at least `min` (a number or a broadcasting tensor)."""
    return _one_bound("clamp_min", CLAMP_MIN, CLAMP_MIN_TENSOR, input, min)


def clamp_max(input: Tensor, max: Any) -> Tensor:
    """Each element at most `max` (a number or a broadcasting tensor)."""
    return _one_bound("clamp_max", CLAMP_MAX, CLAMP_MAX_TENSOR, input, max)


def clip(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Alias of clamp."""
    return _clamp("clip", input, min, max)


def _pick(op: str, rule: Rule, kernel: Any, input: Tensor, other: Tensor) -> Tensor:
    require_tensors(op, input=input, other=other)
    dtype = result_type(input, other)
    if dtype.kind == "c":
        raise RuntimeError(f"{op} not implemented for complex tensors.")
    return _of_tensors(op, rule, kernel, input, other, dtype)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise larger of two broadcasting tensors; NaN wins."""
    return _pick("maximum", MAXIMUM, np.maximum, input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise smaller of two broadcasting tensors; NaN wins."""
    return _pick("minimum", MINIMUM, np.minimum, input, other)


def _kernel_operand(array: Any, xp: Any) -> Any:
    """An operand of a kernel of `xp`: a zero-dim host array (a number, or a zero-dim cpu tensor) beside GPU
    arrays goes as a scalar, since CuPy takes scalars but never host arrays."""
    return array if isinstance(array, xp.ndarray) else array[()]


UINT8_CONDITION = (
    "where received a uint8 condition tensor. This behavior is deprecated and will be removed in a future version of "
    "PyTorch. Use a boolean condition instead."
)


def _bool_condition(condition: Tensor) -> Tensor:
    """A uint8 condition as the bool one it stands for, with PyTorch's deprecation warning (once per process, as
    its TORCH_WARN_ONCE); any other non-bool dtype refused, as PyTorch's."""
    dtype = condition._data.dtype
    if dtype != np.uint8:
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype {dtype}"
        )
    warn_once(UINT8_CONDITION)
    return Tensor(condition._data.astype(bool_), device=condition._device)


_WHERE_FORMS = (
    "but expected one of:\n * (Tensor condition)"
    "\n * (Tensor condition, Tensor input, Tensor other, *, Tensor out = None)"
    "\n * (Tensor condition, Number self, Tensor other)\n * (Tensor condition, Tensor input, Number other)"
    "\n * (Tensor condition, Number self, Number other)\n"
)
_UNSET: Any = object()


def where(condition: Tensor, input: Any = _UNSET, other: Any = _UNSET) -> Tensor | tuple[Tensor, ...]:
    """input where condition holds, else other; all three broadcast, input and other may be Python numbers.
    where(condition) alone is nonzero(condition, as_tuple=True), as in PyTorch."""
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if input is _UNSET and other is _UNSET:
        return nonzero(condition, as_tuple=True)
    if input is _UNSET or other is _UNSET:
        given = "Tensor" if other is _UNSET else "other=Tensor"
        raise TypeError(f"where() received an invalid combination of arguments - got (Tensor, {given}), {_WHERE_FORMS}")
    if condition._data.dtype != bool_:
        condition = _bool_condition(condition)
    dtype = result_type(input, other)
    a, b = (Tensor(fitted_number(v, dtype)) if isinstance(v, int | float) else as_operand(v, dtype)
            for v in (input, other))
    device = common_device((condition, a, b))  # the condition places the result too: where(mask, 1.0, 0.0)
    xp = device.xp
    c, x, y = condition._data, data_as(a, dtype), data_as(b, dtype)
    try:
        data = xp.where(*(_kernel_operand(v, xp) for v in (c, x, y)))
    except ValueError:
        raise broadcast_error("where", c.shape, x.shape, y.shape) from None
    return record(WHERE, data, (a, b), on_device=device, condition=condition)


def where_out(op: str, fn: Any, args: tuple, kwargs: dict, out: Any) -> Any:
    """where with `out=`: PyTorch's only form with `out` takes tensors for input and other, not numbers."""
    from actorgrad.ops.out_arguments import write_out  # out_arguments imports the ops: at call time

    for position, name in ((2, "input"), (3, "other")):
        by_position = len(args) >= position
        given = args[position - 1] if by_position else kwargs.get(name)
        if given is not None and not isinstance(given, Tensor):
            where = f" (position {position})" if by_position else ""
            raise TypeError(f"where(): argument '{name}'{where} must be Tensor, not {type_name(given)}")
    return write_out(op, fn, args, kwargs, out)


METHODS = {
    "clamp": clamp, "clip": clip, "clamp_min": clamp_min, "clamp_max": clamp_max, "maximum": maximum,
    "minimum": minimum,
    "where": lambda self, condition, other: where(condition, self, other),
}
