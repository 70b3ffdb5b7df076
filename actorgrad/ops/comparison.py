"""Comparisons, logical and bitwise ops, value tests (isnan, isinf, isfinite), closeness tests (isclose,
allclose, equal) and the any/all reductions.

They give bool (or, for bitwise ops on integers, integer) tensors with no grad_fn: nothing flows back through
them. Operands broadcast, meet in PyTorch's promoted dtype, and may be Python numbers on either side of an
operator; the function forms take a Tensor first, as PyTorch's.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from actorgrad.default_dtype import default_float
from actorgrad.ops.arithmetic import check_unsigned_number
from actorgrad.ops.flag_arguments import check_flags, not_bool
from actorgrad.ops.operands import (
    SCALAR_NAMES,
    as_operand,
    broadcast_error,
    data_as,
    kernel_operands,
    not_implemented,
    require_tensors,
    result_type,
    type_name,
)
from actorgrad.ops.record import common_device
from actorgrad.ops.reductions import numpy_names, one_dim
from actorgrad.tensor import Tensor, bool_

__all__ = [
    "all", "allclose", "any", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "eq", "equal", "ge",
    "greater", "greater_equal", "gt", "isclose", "isfinite", "isinf", "isnan", "le", "less", "less_equal",
    "logical_and", "logical_not", "logical_or", "logical_xor", "lt", "ne", "not_equal",
]

OPERAND = Tensor | bool | int | float | complex | np.ndarray | np.generic


# Comparisons that order their operands: complex numbers have no order, and PyTorch has no kernel for them.
ORDERED = {"lt", "le", "gt", "ge"}


def _elementwise(op: str, kernel: Any, input: Any, other: Any, *, promote: bool = True) -> Tensor:
    check_unsigned_number(input, other)
    dtype = result_type(input, other)
    if dtype.kind == "c" and op in ORDERED:
        raise not_implemented(f"{op}_cpu", dtype)
    # A number out of the dtype's range wraps, as in PyTorch: int8_tensor == 1000 compares with -24
    a, b = as_operand(input, dtype, other, wrap=True), as_operand(other, dtype, input, wrap=True)
    x, y = (data_as(a, dtype), data_as(b, dtype)) if promote else (a._data, b._data)
    try:
        where = a._device if a._device is b._device else common_device((a, b))
        return Tensor(where.xp.asarray(kernel(*kernel_operands(x, y))), device=where)
    except ValueError:
        raise broadcast_error(op, x.shape, y.shape) from None


# The operators' forms: a Python number may stand on either side (`2 < t` is `t > 2`).
_EQ, _NE = partial(_elementwise, "eq", np.equal), partial(_elementwise, "ne", np.not_equal)
_LT, _LE = partial(_elementwise, "lt", np.less), partial(_elementwise, "le", np.less_equal)
_GT, _GE = partial(_elementwise, "gt", np.greater), partial(_elementwise, "ge", np.greater_equal)


def number_first(op: str, input: Any, other: Any) -> TypeError:
    """PyTorch's error for a comparison's function form given no Tensor first: `torch.lt(1, t)` is refused,
    while `1 < t` and `t.gt(1)` are not."""
    return TypeError(
        f"{op}() received an invalid combination of arguments - got ({type_name(input)}, {type_name(other)}), but "
        "expected one of:\n * (Tensor input, Tensor other, *, Tensor out = None)\n"
        " * (Tensor input, Number other, *, Tensor out = None)\n"
    )


def eq(input: Any, other: Any) -> Tensor:
    if not isinstance(input, Tensor):
        raise number_first("eq", input, other)
    return _EQ(input, other)


def ne(input: Any, other: Any) -> Tensor:
    if not isinstance(input, Tensor):
        raise number_first("ne", input, other)
    return _NE(input, other)


def lt(input: Any, other: Any) -> Tensor:
    if not isinstance(input, Tensor):
        raise number_first("lt", input, other)
    return _LT(input, other)


def le(input: Any, other: Any) -> Tensor:
    if not isinstance(input, Tensor):
        raise number_first("le", input, other)
    return _LE(input, other)


def gt(input: Any, other: Any) -> Tensor:
    if not isinstance(input, Tensor):
        raise number_first("gt", input, other)
    return _GT(input, other)


def ge(input: Any, other: Any) -> Tensor:
    if not isinstance(input, Tensor):
        raise number_first("ge", input, other)
    return _GE(input, other)


def greater(input: Any, other: Any) -> Tensor:
    """Alias of gt."""
    if not isinstance(input, Tensor):
        raise number_first("greater", input, other)
    return _GT(input, other)


def greater_equal(input: Any, other: Any) -> Tensor:
    """Alias of ge."""
    if not isinstance(input, Tensor):
        raise number_first("greater_equal", input, other)
    return _GE(input, other)


def less(input: Any, other: Any) -> Tensor:
    """Alias of lt."""
    if not isinstance(input, Tensor):
        raise number_first("less", input, other)
    return _LT(input, other)


def less_equal(input: Any, other: Any) -> Tensor:
    """Alias of le."""
    if not isinstance(input, Tensor):
        raise number_first("less_equal", input, other)
    return _LE(input, other)


def not_equal(input: Any, other: Any) -> Tensor:
    """Alias of ne."""
    if not isinstance(input, Tensor):
        raise number_first("not_equal", input, other)
    return _NE(input, other)


def logical_and(input: Tensor, other: Tensor) -> Tensor:
    """Both nonzero; any dtypes, tensors only (PyTorch takes no Python number here)."""
    require_tensors("logical_and", input=input, other=other)
    return _elementwise("logical_and", np.logical_and, input, other, promote=False)


def logical_or(input: Tensor, other: Tensor) -> Tensor:
    require_tensors("logical_or", input=input, other=other)
    return _elementwise("logical_or", np.logical_or, input, other, promote=False)


def logical_xor(input: Tensor, other: Tensor) -> Tensor:
    require_tensors("logical_xor", input=input, other=other)
    return _elementwise("logical_xor", np.logical_xor, input, other, promote=False)


def logical_not(input: Tensor) -> Tensor:
    return Tensor(np.logical_not(input._data), device=input._device)


def _integral(op: str, dtype: np.dtype, tensor: Tensor) -> None:
    """PyTorch's error for a bitwise op computing in a floating dtype: its kernel has none."""
    if dtype.kind not in "biu":
        raise NotImplementedError(f"\"{op}_{tensor._device.type}\" not implemented for '{SCALAR_NAMES[dtype]}'")


def _bitwise(op: str, kernel: Any, input: Any, other: Any) -> Tensor:
    check_unsigned_number(input, other)
    _integral(op, result_type(input, other), input if isinstance(input, Tensor) else other)
    return _elementwise(op, kernel, input, other)


def bitwise_and(input: Any, other: Any) -> Tensor:
    return _bitwise("bitwise_and", np.bitwise_and, input, other)


def bitwise_or(input: Any, other: Any) -> Tensor:
    return _bitwise("bitwise_or", np.bitwise_or, input, other)


def bitwise_xor(input: Any, other: Any) -> Tensor:
    return _bitwise("bitwise_xor", np.bitwise_xor, input, other)


def bitwise_not(input: Tensor) -> Tensor:
    """`~`: logical not of a bool tensor, two's complement not of an integer one."""
    _integral("bitwise_not", input._data.dtype, input)
    return Tensor(np.invert(input._data), device=input._device)


def _invert(input: Tensor) -> Tensor:
    """`~`, with the error PyTorch's operator gives a floating tensor."""
    if input._data.dtype.kind not in "biu":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(input)


def _value_test(kernel: Any, otherwise: bool, input: Tensor) -> Tensor:
    """`kernel` on a floating or complex tensor (a complex element is NaN or inf where either part is); a bool or
    integer one holds no NaN or inf, so `otherwise` everywhere."""
    x, device = input._data, input._device
    return Tensor(kernel(x) if x.dtype.kind in "fc" else device.xp.full(x.shape, otherwise, bool_), device=device)


def isnan(input: Tensor) -> Tensor:
    return _value_test(np.isnan, False, input)


def isinf(input: Tensor) -> Tensor:
    return _value_test(np.isinf, False, input)


def isfinite(input: Tensor) -> Tensor:
    return _value_test(np.isfinite, True, input)


def _tolerance(name: str, value: float) -> None:
    if value < 0:
        raise RuntimeError(f"{name} must be greater than or equal to zero, but got {value}")


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """`input == other`, or `|input - other| <= atol + |rtol * other|` with that difference finite, elementwise; as
    in PyTorch, both tensors of one dtype, and integers exact: with both tolerances 0 only equality counts, and an
    integer pair's difference is taken in the default float dtype, where it cannot wrap."""
    if not isinstance(other, Tensor):
        raise TypeError(f"isclose(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    check_flags("isclose", equal_nan=equal_nan)
    x, y = input._data, other._data
    if x.dtype != y.dtype:
        names = (SCALAR_NAMES.get(dtype, str(dtype)) for dtype in (x.dtype, y.dtype))
        raise RuntimeError(f"isclose(): {next(names)} did not match {next(names)}; cast one with .to(other.dtype)")
    _tolerance("rtol", rtol)
    _tolerance("atol", atol)
    where = common_device((input, other))
    xp = where.xp
    x, y = kernel_operands(x, y)
    try:
        close = xp.equal(x, y)
    except ValueError:
        raise broadcast_error("isclose", x.shape, y.shape) from None
    if equal_nan and x.dtype.kind in "fc":
        close |= xp.isnan(x) & xp.isnan(y)
    if rtol or atol:
        if x.dtype.kind in "biu":
            x, y = x.astype(default_float()), y.astype(default_float())
        with np.errstate(over="ignore", invalid="ignore"):  # inf - inf, or a float16 difference past its range
            error = xp.abs(x - y)
            close |= xp.isfinite(error) & (error <= atol + xp.abs(rtol * y))
    return Tensor(xp.asarray(close), device=where)


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    check_flags("allclose", equal_nan=equal_nan)
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input: Tensor, other: Tensor) -> bool:
    """Same shape and equal values (of any dtypes); a NaN equals nothing."""
    return input.shape == other.shape and bool(_EQ(input, other)._data.all())


def _truth_reduction(op: str, input: Tensor, dim: Any, keepdim: bool) -> Tensor:
    """`op` ("any" or "all") over `dim`: bool, but uint8 for a uint8 input, as in PyTorch. dim=None reduces every
    dim; an empty dim list reduces none (unlike sum's), so each element is tested alone, as PyTorch's."""
    if keepdim.__class__ is not bool:
        raise not_bool(op, "keepdim", keepdim)
    x = input._data
    if dim is None:
        dims = None
    elif isinstance(dim, tuple | list) and not dim:
        dims = ()
    else:
        dims = one_dim(dim, x.ndim, op)
    out = getattr(x, op)(axis=dims, keepdims=keepdim)
    return Tensor(out.astype(np.uint8) if x.dtype == np.uint8 else out, device=input._device)


def any(
    input: Tensor, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Tensor:
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _truth_reduction("any", input, dim, keepdim)


def all(
    input: Tensor, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Tensor:
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _truth_reduction("all", input, dim, keepdim)


def _operator(op: Any, against_dtype: Any = NotImplemented) -> Any:
    """The operator form: an operand of another type gives NotImplemented, so `tensor == None` is False. A dtype
    gives `against_dtype` (`t == actorgrad.float32` is False, as PyTorch's): numpy's dtype would answer in its
    place, equal to anything whose `.dtype` it is."""
    def method(self: Tensor, other: Any) -> Any:
        if isinstance(other, OPERAND):
            return op(self, other)
        return against_dtype if isinstance(other, np.dtype) else NotImplemented

    return method


def _reflected_operator(op: Any) -> Any:
    def method(self: Tensor, other: Any) -> Any:
        return op(other, self) if isinstance(other, OPERAND) else NotImplemented

    return method


METHODS: dict[str, Any] = {
    "__eq__": _operator(_EQ, False), "__ne__": _operator(_NE, True),
    "__lt__": _operator(_LT), "__le__": _operator(_LE), "__gt__": _operator(_GT), "__ge__": _operator(_GE),
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "greater": greater, "greater_equal": greater_equal,
    "less": less, "less_equal": less_equal, "not_equal": not_equal,
    "logical_and": logical_and, "logical_or": logical_or, "logical_xor": logical_xor, "logical_not": logical_not,
    "__and__": _operator(bitwise_and), "__or__": _operator(bitwise_or), "__xor__": _operator(bitwise_xor),
    "__rand__": _reflected_operator(bitwise_and), "__ror__": _reflected_operator(bitwise_or),
    "__rxor__": _reflected_operator(bitwise_xor), "__invert__": _invert,
    "bitwise_and": bitwise_and, "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor, "bitwise_not": bitwise_not,
    "isnan": isnan, "isinf": isinf, "isfinite": isfinite,
    "isclose": isclose, "allclose": allclose, "equal": equal, "any": any, "all": all,
}
