"""How the operands of an elementwise op meet: PyTorch's dtype promotion and its broadcasting errors.

PyTorch ranks operands in three groups, strongest first: tensors with dimensions, zero-dim tensors, Python
numbers. Each group's dtypes promote among themselves; a weaker group decides the result only when it holds a
higher category (bool < integer < floating) than the stronger ones. So a float32 tensor times a float64 zero-dim
tensor stays float32, an int tensor times 2.5 gives the default float dtype (float32 unless `set_default_dtype`
changed it), and a float64 graph stays float64 whatever numbers it meets. Complex ranks above floating: a float
tensor beside a complex number or zero-dim tensor becomes the complex dtype of its own precision (float64 with 1j:
complex128), an integer tensor the default complex dtype (complex64 beside a float32 default).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.default_dtype import default_complex, default_float
from actorgrad.devices import cpu
from actorgrad.saved_tensors import WrappedNumber
from actorgrad.tensor import Tensor, bool_, int64

__all__ = ["promote_types", "result_type"]

BOOL, INTEGER, FLOATING, COMPLEX = 0, 1, 2, 3
_CATEGORY = {np.dtype(t): c for c, types in enumerate((
    ("bool",), ("uint8", "int8", "int16", "int32", "int64"), ("float16", "float32", "float64"),
    ("complex64", "complex128"),
)) for t in types}
DIMENSIONED, ZERO_DIM, NUMBER = 0, 1, 2
# PyTorch's names of scalar types, for its errors and legacy type names.
SCALAR_NAMES = {
    np.dtype(t): name for t, name in (
        (np.float64, "Double"), (np.float32, "Float"), (np.float16, "Half"), (np.int64, "Long"), (np.int32, "Int"),
        (np.int16, "Short"), (np.int8, "Char"), (np.uint8, "Byte"), (np.bool_, "Bool"),
        (np.complex64, "ComplexFloat"), (np.complex128, "ComplexDouble"),
    )
}


def category(dtype: np.dtype) -> int:
    try:
        return _CATEGORY[dtype]
    except KeyError:
        raise TypeError(f"dtype {dtype} is not supported: actorgrad computes on bool, integer (uint8 and signed), "
                        f"float16/float32/float64 and complex64/complex128 tensors") from None


def complex_of(dtype: np.dtype) -> np.dtype:
    """The complex dtype of a floating dtype's precision: complex64 for float32 (and float16, as actorgrad has no
    complex32), complex128 for float64; complex dtypes are their own."""
    return np.result_type(dtype, np.complex64)


def promote_types(type1: Any, type2: Any) -> np.dtype:
    """The smallest dtype both convert to without leaving their category, as torch.promote_types: any
    integer with a floating dtype gives the floating one (int64 with float16 is float16)."""
    a, b = np.dtype(type1), np.dtype(type2)
    if a == b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        if ca + cb == FLOATING + COMPLEX:  # float64 with complex64 is complex128
            return np.promote_types(a, b)
        return a if ca > cb else b
    return np.promote_types(a, b)


def _combine(stronger: np.dtype | None, weaker: np.dtype | None) -> np.dtype | None:
    """Merge a weaker group's dtype into a stronger one's (PyTorch's combine_categories)."""
    if stronger is None:
        return weaker
    if weaker is None or category(stronger) >= FLOATING:
        if weaker is not None and weaker.kind == "c" and stronger.kind == "f":
            return complex_of(stronger)  # the stronger's precision, the weaker's category
        return stronger
    if stronger == bool_ or category(weaker) >= FLOATING:
        return promote_types(stronger, weaker)
    return stronger


def _group_and_dtype(value: Any) -> tuple[int, np.dtype]:
    if isinstance(value, Tensor):
        data = value._data
        return (DIMENSIONED if data.ndim else ZERO_DIM), data.dtype
    if isinstance(value, bool):
        return NUMBER, bool_
    if isinstance(value, int):
        return NUMBER, int64
    if isinstance(value, float):
        return NUMBER, default_float()
    if isinstance(value, complex):
        return NUMBER, default_complex()
    if isinstance(value, np.generic):  # a numpy scalar counts as the Python number it holds, as in PyTorch
        return _group_and_dtype(value.item())
    if isinstance(getattr(value, "dtype", None), np.dtype):  # an array: numpy's, or a device's (CuPy's)
        return (DIMENSIONED if value.ndim else ZERO_DIM), value.dtype
    raise UnsupportedOperand(value)


def common_dtype(*operands: Any) -> np.dtype:
    """The dtype an op on all `operands` (tensors or Python numbers) computes in and returns."""
    groups: list[np.dtype | None] = [None, None, None]
    for value in operands:
        group, dtype = _group_and_dtype(value)
        seen = groups[group]
        groups[group] = dtype if seen is None else promote_types(seen, dtype)
    return _combine(groups[DIMENSIONED], _combine(groups[ZERO_DIM], groups[NUMBER]))


def result_type(tensor1: Any, tensor2: Any) -> np.dtype:
    """The dtype of an arithmetic op on `tensor1` and `tensor2` (tensors or Python numbers), as
    torch.result_type."""
    if isinstance(tensor1, Tensor):
        dtype = tensor1._data.dtype
        if isinstance(tensor2, Tensor) and tensor2._data.dtype == dtype:
            return dtype
        if dtype.kind == "f" and isinstance(tensor2, int | float):
            return dtype  # a Python number never outranks a floating tensor
    elif isinstance(tensor2, Tensor) and tensor2._data.dtype.kind == "f" and isinstance(tensor1, int | float):
        return tensor2._data.dtype
    return common_dtype(tensor1, tensor2)


def floating_or_complex(dtype: np.dtype) -> np.dtype:
    """The dtype a floating op that also takes complex inputs (exp, sqrt, reciprocal, ...) returns."""
    return dtype if dtype.kind in "fc" else default_float()


def floating(dtype: np.dtype, op: str = "this op") -> np.dtype:
    """The dtype a floating op (sqrt, exp, true division, ...) returns for inputs of `dtype`. A complex dtype is
    refused: the ops that take complex tensors ask floating_or_complex instead, and for the others a cast to a
    real dtype would drop the imaginary parts silently."""
    if dtype.kind == "f":
        return dtype
    if dtype.kind == "c":
        raise NotImplementedError(f"{op} does not support complex tensors in actorgrad (got {SCALAR_NAMES[dtype]})")
    return default_float()


def refuse_complex(dtype: np.dtype, kernel: str) -> None:
    """PyTorch's error for an op with no kernel for complex numbers (they have no order)."""
    if dtype.kind == "c":
        raise not_implemented(kernel, dtype)


# PyTorch's C++ names of the real dtypes, for its error when a number does not fit one
C_TYPES = {np.dtype(t): name for t, name in (
    (np.int8, "int8_t"), (np.uint8, "uint8_t"), (np.int16, "int16_t"), (np.int32, "int"), (np.int64, "int64_t"),
    (np.float16, "c10::Half"), (np.float32, "float"), (np.float64, "double"),
)}


def _c_type(dtype: np.dtype) -> str:
    """PyTorch's C++ name of a dtype; a complex dtype's is c10::complex of its parts'."""
    if dtype.kind == "c":
        return f"c10::complex<{C_TYPES[np.dtype(f'f{dtype.itemsize // 2}')]}>"
    return C_TYPES[dtype]


def require_tensors(op: str, first: int = 1, **operands: Any) -> None:
    """PyTorch's error for an operand that is no tensor; positions count from `first` (a method's from its first
    argument after self)."""
    for position, (name, value) in enumerate(operands.items(), first):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {position}) must be Tensor, not "
                            f"{type(value).__name__}")


def require_tensor_elements(tensors: Any, argument: int = 0) -> None:
    """PyTorch's error for a list argument (a TensorList, argument 0 unless given) holding a non-Tensor."""
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {argument}, but got {type(t).__name__}")


class UnsupportedOperand(TypeError):
    """An operand that is neither a tensor, a Python number nor an array: the operators answer NotImplemented to
    it (see operators.py), the functions raise it."""

    def __init__(self, value: Any) -> None:
        super().__init__(f"expected a Tensor or a Python number as an operand, got {type(value).__name__}")


def not_implemented(kernel: str, dtype: np.dtype) -> NotImplementedError:
    """PyTorch's error for a kernel that has no version for `dtype`."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{SCALAR_NAMES.get(dtype, dtype)}'")


def type_name(value: Any) -> str:
    """A type's name as PyTorch's argument errors write it: numpy's types with their module."""
    kind = type(value)
    return f"numpy.{kind.__name__}" if kind.__module__ == "numpy" else kind.__name__


def int_tuple(value: Any, op: str, name: str, position: int) -> tuple[int, ...]:
    """PyTorch's parsing of a `tuple of ints` argument: a tuple or list of integers, nothing else, refused with
    its argument error."""
    head = f"{op}(): argument '{name}' (position {position}) must be tuple of ints"
    if not isinstance(value, tuple | list):
        raise TypeError(f"{head}, not {type(value).__name__}")
    for i, n in enumerate(value):
        if isinstance(n, bool) or not isinstance(n, int | np.integer):
            raise TypeError(f"{head}, but found element of type {type(n).__name__} at pos {i}")
    return tuple(int(n) for n in value)


def checked_int(value: int) -> int:
    """A Python int as PyTorch takes one as a number: it must fit int64, or uint64 when positive."""
    if value < -(1 << 63):
        raise OverflowError("can't convert negative int to unsigned")
    if value >= 1 << 64:
        raise OverflowError("int too big to convert")
    return value


def wrapped_int(value: int, dtype: np.dtype) -> int:
    """`value` cast to an integer dtype by keeping its low bits, as C's casts (and so PyTorch's) do."""
    bits = 8 * dtype.itemsize
    value %= 1 << bits
    return value - (1 << bits) if dtype.kind == "i" and value >> (bits - 1) else value


def number_array(value: int | float | complex, dtype: np.dtype) -> np.ndarray:
    """A Python number as a zero-dim array of `dtype` the way PyTorch's ops meet one: cast like a C value, so
    `int8_tensor + 1000` adds 1000 wrapped to int8 (-24)."""
    if value.__class__ is int and dtype.kind in "iu":
        return np.asarray(wrapped_int(checked_int(value), dtype), dtype)
    if value.__class__ is int:
        checked_int(value)
    return np.asarray(value, dtype)


def real_number(value: Any, dtype: np.dtype) -> Any:
    """A number to store into a tensor of `dtype`: a complex one, for a real (not bool) dtype, as its real part,
    with PyTorch's error where it is off the real line; any other as it is."""
    if isinstance(value, complex | np.complexfloating) and dtype.kind in "iuf":
        if value.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {C_TYPES[dtype]} without overflow")
        return float(value.real)
    return value


def fitted_number(value: int | float | complex, dtype: np.dtype) -> np.ndarray:
    """A Python number as PyTorch stores it into a tensor of `dtype` (full, fill_, where, clamp): an integer dtype
    takes only a number in its range, or for an unsigned one a negative int down to -max (which wraps); a real
    dtype a complex number only on the real line; a floating dtype a finite number only within its range (each
    part of a complex one), infinities and NaN as they are."""
    value = real_number(value, dtype)
    if dtype.kind in "fc":
        limit = float(np.finfo(dtype).max)
        for part in (value.real, value.imag) if isinstance(value, complex) else (value,):
            if abs(part) > limit and abs(part) != math.inf:
                raise RuntimeError(f"value cannot be converted to type {_c_type(dtype)} without overflow")
    elif dtype.kind in "iu" and not isinstance(value, bool):
        info = np.iinfo(dtype)
        low = -int(info.max) if dtype.kind == "u" and isinstance(value, int) else info.min
        if not low <= value <= info.max:  # nan fails too
            raise RuntimeError(f"value cannot be converted to type {C_TYPES[dtype]} without overflow")
        return np.asarray(wrapped_int(int(value), dtype), dtype)  # int(): a float goes toward 0, as C's casts
    return number_array(value, dtype)


def as_operand(value: Any, dtype: np.dtype, beside: Any = None, *, wrap: bool = False) -> Tensor:
    """A tensor, a Python number or an array beside tensors, as a tensor: a number becomes a constant of `dtype`
    (with `wrap`, cast as PyTorch casts it: see number_array; without, an int out of range raises, for the ops
    that do not compute in `dtype`); an array (a rule's saved index weights, say) is a constant on the device of
    the tensor `beside` it when that device holds arrays of its kind (so a CuPy array beside a cuda tensor), else
    on the cpu."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, int | float | complex):
        if wrap and value.__class__ is int:
            return WrappedNumber(number_array(value, dtype))
        return WrappedNumber(np.asarray(value, dtype=dtype))
    where = beside._device if isinstance(beside, Tensor) else cpu
    if where is not cpu and isinstance(value, where.xp.ndarray):
        return Tensor(value, device=where)
    if isinstance(value, np.ndarray | np.generic):
        return Tensor(np.asarray(value))
    raise UnsupportedOperand(value)


def kernel_operands(x: Any, y: Any) -> tuple[Any, Any]:
    """Two arrays as one kernel takes them: beside a GPU array, a zero-dim host array (a number, or a zero-dim
    cpu tensor) goes as a numpy scalar, since CuPy takes scalars but never host arrays."""
    if x.__class__ is y.__class__:
        return x, y
    return (x[()] if x.__class__ is np.ndarray and not x.ndim else x), (
        y[()] if y.__class__ is np.ndarray and not y.ndim else y
    )


def data_as(t: Tensor, dtype: np.dtype) -> np.ndarray:
    """A tensor's array in the dtype an op computes in (no copy when it already is)."""
    data = t._data
    return data if data.dtype == dtype else data.astype(dtype)


def dim_in_range(dim: int, ndim: int) -> int:
    """dim as a non-negative index into `ndim` dims, or PyTorch's IndexError, in the words of the ops (as
    linalg.cross and linalg.matrix_norm) whose message names no op."""
    if not ndim:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return dim % ndim


def broadcast_error(op: str, *shapes: tuple[int, ...]) -> RuntimeError:
    """PyTorch's error for operands that don't broadcast, in its words: the last clashing dim and its sizes."""
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    for d in reversed(range(ndim)):
        sizes = list(dict.fromkeys(s[d] for s in padded if s[d] != 1))
        if len(sizes) > 1:
            return RuntimeError(
                f"The size of tensor a ({sizes[0]}) must match the size of tensor b ({sizes[1]}) at non-singleton "
                f"dimension {d}"
            )
    return RuntimeError(f"{op}(): invalid operands of shapes {' and '.join(str(tuple(s)) for s in shapes)}")


METHODS: dict = {}
