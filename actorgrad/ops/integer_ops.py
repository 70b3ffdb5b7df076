"""Integer and floating-point bit-level ops: gcd, lcm, the bit shifts (`<<`, `>>`), frexp and nextafter, with
PyTorch's dtypes, its results past the edges (a shift by the width or more, or by a negative count, gives 0, or -1
for a negative number shifted right; lcm wraps as C's does) and its errors. Their in-place forms are rows of
`inplace_forms.NAMES`.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.ops.comparison import _bitwise, _operator, _reflected_operator
from actorgrad.ops.operands import SCALAR_NAMES, data_as, kernel_operands, require_tensors, result_type
from actorgrad.ops.pointwise import _broadcast_kernel
from actorgrad.ops.record import Rule, common_device, record, zeros_grad
from actorgrad.tensor import Tensor, int32

__all__ = ["bitwise_left_shift", "bitwise_right_shift", "frexp", "gcd", "lcm", "nextafter"]

# The (mantissa, exponent) pair of frexp, named as torch.return_types names it.
FrexpResult = namedtuple("frexp", ["mantissa", "exponent"])
FREXP = Rule("FrexpBackward0", (("scale",), lambda ops, g, scale: g * scale))
NEXTAFTER = Rule("NextafterBackward0", ((), None), ((), zeros_grad), broadcasts=True)


def _not_implemented(kernel: str, dtype: np.dtype, t: Tensor) -> NotImplementedError:
    return NotImplementedError(f"\"{kernel}_{t._device.type}\" not implemented for '{SCALAR_NAMES[dtype]}'")


def _integer_pair(op: str, input: Tensor, other: Tensor) -> tuple[Any, Any, Any]:
    """gcd's and lcm's operands (tensors only, as PyTorch's) in their promoted integer dtype; and the device."""
    require_tensors(op, input=input, other=other)
    dtype = result_type(input, other)
    if dtype.kind not in "iu":
        raise _not_implemented(op, dtype, input)
    device = common_device((input, other))
    x, y = kernel_operands(data_as(input, dtype), data_as(other, dtype))
    return x, y, device


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """The greatest common divisor of each pair, non-negative (gcd(0, 0) is 0)."""
    x, y, device = _integer_pair("gcd", input, other)
    return Tensor(device.xp.asarray(_broadcast_kernel("gcd", device.xp.gcd, x, y)), device=device)  # 0-d: a scalar


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """The least common multiple of each pair, non-negative, 0 where either is 0; computed as PyTorch's kernel,
    |x / gcd(x, y) * y|, so a product past the dtype wraps as in C."""
    x, y, device = _integer_pair("lcm", input, other)
    xp = device.xp
    divisor = _broadcast_kernel("lcm", xp.gcd, x, y)
    with np.errstate(over="ignore"):
        out = xp.abs(x // xp.where(divisor == 0, 1, divisor) * y)
    return Tensor(xp.where(divisor == 0, 0, out).astype(divisor.dtype, copy=False), device=device)


def _width(x: Any) -> int:
    return 8 * x.dtype.itemsize


def _left_shift(x: Any, y: Any) -> Any:
    """x << y, 0 where y is negative or at least x's width: numpy's kernel gives that already, CuPy's C shift
    leaves it undefined."""
    outside = (y < 0) | (y >= _width(x))
    shifted = np.left_shift(x, np.where(outside, 0, y).astype(x.dtype, copy=False))
    return np.where(outside, np.zeros_like(shifted), shifted)


def _right_shift(x: Any, y: Any) -> Any:
    """x >> y (arithmetic for signed dtypes); where y is negative or at least the width, what shifting every bit
    out leaves: 0, or -1 for a negative x."""
    bits = _width(x)
    outside = (y < 0) | (y >= bits)
    shifted = np.right_shift(x, np.where(outside, bits - 1, y).astype(x.dtype, copy=False))
    return np.where(outside, np.zeros_like(shifted), shifted) if x.dtype.kind == "u" else shifted


def _shift(kernel_name: str, kernel: Any, input: Any, other: Any) -> Tensor:
    """A shift in the operands' promoted dtype, which must be an integer one (the bitwise ops take bools too)."""
    if result_type(input, other).kind == "b":
        raise _not_implemented(kernel_name, np.dtype(np.bool_), input if isinstance(input, Tensor) else other)
    return _bitwise(kernel_name, kernel, input, other)


def bitwise_left_shift(input: Any, other: Any) -> Tensor:
    """input << other, elementwise in the promoted integer dtype (bits shifted past the top are lost)."""
    return _shift("lshift", _left_shift, input, other)


def bitwise_right_shift(input: Any, other: Any) -> Tensor:
    """input >> other, elementwise in the promoted integer dtype."""
    return _shift("rshift", _right_shift, input, other)


def frexp(input: Tensor) -> FrexpResult:
    """Each element as mantissa * 2 ** exponent, with |mantissa| in [0.5, 1) (0, inf and nan give themselves and
    exponent 0); exponents are int32. The mantissa's gradient is the input's scaled by 2 ** -exponent."""
    x = input._data
    if x.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    xp = input._device.xp
    mantissa, exponent = xp.frexp(x)
    with np.errstate(over="ignore"):  # a subnormal's scale is past the dtype's range: inf, as PyTorch's gradient
        scale = xp.ldexp(xp.ones((), x.dtype), -exponent)
    return FrexpResult(record(FREXP, mantissa, (input,), scale=scale),
                       Tensor(xp.asarray(exponent, dtype=int32), device=input._device))  # 0-d: a scalar


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating-point value after input toward other. Its gradient passes to input unchanged and gives
    other none, as PyTorch's."""
    require_tensors("nextafter", input=input, other=other)
    dtype = result_type(input, other)
    if dtype.kind != "f":
        raise _not_implemented("nextafter", dtype, input)
    device = common_device((input, other))
    x, y = kernel_operands(data_as(input, dtype), data_as(other, dtype))
    return record(NEXTAFTER, _broadcast_kernel("nextafter", device.xp.nextafter, x, y), (input, other))


METHODS: dict[str, Any] = {
    "gcd": gcd, "lcm": lcm, "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
    "frexp": frexp, "nextafter": nextafter,
    "__lshift__": _operator(bitwise_left_shift), "__rshift__": _operator(bitwise_right_shift),
    "__rlshift__": _reflected_operator(bitwise_left_shift), "__rrshift__": _reflected_operator(bitwise_right_shift),
}
