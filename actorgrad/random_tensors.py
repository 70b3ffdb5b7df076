"""Random tensors: rand, randn, randint and their `*_like` forms, drawn from an `actorgrad.Generator` (or the
default one) with PyTorch's arguments, dtype checks and errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from actorgrad.creation import (
    check_device,
    checked_shape,
    dtype_or,
    is_int,
    leaf_on,
    like_dtype,
    size_argument,
)
from actorgrad.ops.operands import not_implemented
from actorgrad.random import Generator, numpy_generator
from actorgrad.tensor import _DEFAULT_FLOAT, Tensor, bool_, int64

__all__ = ["rand", "rand_like", "randint", "randint_like", "randn", "randn_like"]


def _float_dtype(kernel: str, dtype: Any) -> np.dtype:
    """The dtype of a random float tensor, refused (as by PyTorch's `kernel`) unless floating."""
    resolved = dtype_or(dtype, _DEFAULT_FLOAT)
    if resolved.kind != "f":
        raise not_implemented(kernel, resolved)
    return resolved


# -- draws ------------------------------------------------------------------------------------------------------
def _draw(sample: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """numpy samples float32 and float64 directly; other float dtypes are drawn in float64 and cast."""
    if dtype in (np.float32, np.float64):
        return sample(shape, dtype=dtype)
    return sample(shape, dtype=np.float64).astype(dtype)


def rand(
    *args: Any, size: Sequence[int] | None = None, generator: Generator | None = None, dtype: Any = None,
    requires_grad: bool = False, device: Any = None,
) -> Tensor:
    """Uniform samples from [0, 1)."""
    check_device(device)
    rng = numpy_generator(generator)
    shape = size_argument("rand", args, size)
    return leaf_on(_draw(rng.random, shape, _float_dtype("check_uniform_bounds", dtype)), requires_grad, device)


def randn(
    *args: Any, size: Sequence[int] | None = None, generator: Generator | None = None, dtype: Any = None,
    requires_grad: bool = False, device: Any = None,
) -> Tensor:
    """Samples from the standard normal distribution."""
    check_device(device)
    rng = numpy_generator(generator)
    draws = _draw(rng.standard_normal, size_argument("randn", args, size), _float_dtype("normal_kernel_cpu", dtype))
    return leaf_on(draws, requires_grad, device)


# The C++ names PyTorch's random kernels give dtypes in their errors.
_C_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short", "int32": "int",
            "int64": "long", "float16": "c10::Half", "float32": "float", "float64": "double"}


def _random_ints(
    low: Any, high: Any, shape: tuple[int, ...], generator: Generator | None, dtype: np.dtype
) -> np.ndarray:
    """Integers drawn uniformly from [low, high) as `dtype`, which must hold both ends, as PyTorch checks."""
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if dtype == bool_:
        low_end, high_end = 0, 1
    elif dtype.kind in "iu":
        low_end, high_end = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    else:
        high_end = float(np.finfo(dtype).max)
        low_end = -high_end
    name = _C_NAMES[dtype.name]
    if not low_end <= low <= high_end:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not low_end <= high - 1 <= high_end:
        raise RuntimeError(f"to - 1 is out of bounds for {name}")
    return numpy_generator(generator).integers(low, high, shape, dtype=np.int64).astype(dtype, copy=False)


def _int_bound(op: str, value: Any, name: str, position: int) -> int:
    if not is_int(value):
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be int, not {type(value).__name__}")
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError("Overflow when unpacking long long")
    return int(value)


def randint(
    low: int | None = None,
    high: Any = None,
    size: Sequence[int] | None = None,
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    requires_grad: bool = False,
    device: Any = None,
) -> Tensor:
    """Integers drawn uniformly from [low, high): `randint(high, size)` or `randint(low, high, size)`."""
    check_device(device)
    positions = {"low": 1, "high": 2, "size": 3}
    if size is None and high is not None and low is not None:  # randint(high, size)
        low, high, size = 0, low, high
        positions = {"low": 0, "high": 1, "size": 2}
    elif high is None and low is not None:  # randint(high, size=...)
        low, high = 0, low
    if low is None:
        low = 0
    if high is None or size is None:
        raise TypeError("randint() needs high and size: randint(high, size) or randint(low, high, size)")
    if not isinstance(size, Sequence | np.ndarray):
        raise TypeError(f"randint(): argument 'size' (position {positions['size']}) must be tuple of ints, not "
                        f"{type(size).__name__}")
    low, high = (_int_bound("randint", value, name, positions[name]) for name, value in (("low", low), ("high", high)))
    shape = checked_shape("randint", (size,), positions["size"])
    return leaf_on(_random_ints(low, high, shape, generator, dtype_or(dtype, int64)), requires_grad, device)


def randint_like(
    input: Tensor, low: int = 0, high: int | None = None, *, generator: Generator | None = None, dtype: Any = None,
    requires_grad: bool = False, device: Any = None,
) -> Tensor:
    """A tensor of `input`'s shape (and dtype) of integers drawn from [low, high): `randint_like(input, high)` or
    `randint_like(input, low, high)`."""
    check_device(device)
    if high is None:
        low, high = 0, low
    resolved = like_dtype("randint_like", input, dtype)
    low, high = _int_bound("randint_like", low, "low", 2), _int_bound("randint_like", high, "high", 3)
    draws = _random_ints(low, high, input.shape, generator, resolved)
    return leaf_on(draws, requires_grad, device or input.device)


def _random_like(op: str, sample: str, kernel: str, input: Tensor, generator: Generator | None, dtype: Any,
                 requires_grad: bool, device: Any) -> Tensor:
    """A tensor of `input`'s shape drawn by the numpy Generator method `sample` (PyTorch's `kernel`)."""
    check_device(device)
    resolved = _float_dtype(kernel, like_dtype(op, input, dtype))
    draws = _draw(getattr(numpy_generator(generator), sample), input.shape, resolved)
    return leaf_on(draws, requires_grad, device or input.device)


def rand_like(
    input: Tensor, *, generator: Generator | None = None, dtype: Any = None, requires_grad: bool = False,
    device: Any = None,
) -> Tensor:
    return _random_like("rand_like", "random", "check_uniform_bounds", input, generator, dtype, requires_grad, device)


def randn_like(
    input: Tensor, *, generator: Generator | None = None, dtype: Any = None, requires_grad: bool = False,
    device: Any = None,
) -> Tensor:
    return _random_like(
        "randn_like", "standard_normal", "normal_kernel_cpu", input, generator, dtype, requires_grad, device
    )
