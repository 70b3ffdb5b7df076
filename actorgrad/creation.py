"""Tensor creation: constant, range and random tensors, with PyTorch's signatures and default dtypes.

Floats default to float32; integer ranges and `randint` give int64. Random tensors draw from a Generator (the
default one unless `generator=` is passed), so `actorgrad.manual_seed` makes them repeatable.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from actorgrad.devices import cpu
from actorgrad.devices import device as as_device
from actorgrad.ops.operands import checked_int, fitted_number, wrapped_int
from actorgrad.random import Generator, numpy_generator
from actorgrad.tensor import _DEFAULT_FLOAT, Tensor, bool_, int64, new_leaf

__all__ = [
    "arange", "empty", "eye", "full", "full_like", "linspace", "ones", "ones_like", "rand", "rand_like", "randint",
    "randn", "randn_like", "zeros", "zeros_like",
]


# -- argument handling -------------------------------------------------------------------------------------------
def _check_device(device: Any) -> None:
    """Fail before any work on a device name that does not parse."""
    if device is not None:
        as_device(device)


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _shape(op: str, size: tuple) -> tuple[int, ...]:
    """`*size` as PyTorch takes it: `f(2, 3)` or `f((2, 3))`; every dimension an int >= 0."""
    if len(size) == 1 and isinstance(size[0], Sequence | np.ndarray):
        size = tuple(size[0])
    for dim in size:
        if not _is_int(dim):
            raise TypeError(f"{op}(): size must be a tuple of ints, but got an element of type {type(dim).__name__}")
    shape = tuple(int(dim) for dim in size)
    negative = [dim for dim in shape if dim < 0]
    if negative:
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative[0]}: {list(shape)}")
    _check_storage(op, shape)
    return shape


def _size(op: str, args: tuple, size: Any) -> tuple[int, ...]:
    """The shape from `f(2, 3)`, `f((2, 3))` or `f(size=(2, 3))`; PyTorch has no default size."""
    if size is not None:
        if args:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        if not isinstance(size, Sequence | np.ndarray):
            raise TypeError(f"{op}(): argument 'size' must be tuple of ints, not {type(size).__name__}")
        args = (size,)
    if not args:
        raise TypeError(f'{op}() missing 1 required positional arguments: "size"; for a 0-d tensor pass size=()')
    return _shape(op, args)


def _check_storage(op: str, shape: tuple[int, ...]) -> None:
    """Sizes whose bytes overflow an index get PyTorch's RuntimeError (numpy raises ValueError, "too big")."""
    if math.prod(shape) > sys.maxsize // 8:
        raise RuntimeError(f"{op}(): Storage size calculation overflowed with sizes={list(shape)}")


def _dtype(dtype: Any, default: np.dtype) -> np.dtype:
    return default if dtype is None else np.dtype(dtype)


def _float_dtype(op: str, dtype: Any) -> np.dtype:
    resolved = _dtype(dtype, _DEFAULT_FLOAT)
    if resolved.kind != "f":
        raise RuntimeError(f"{op}: expected a floating point dtype, got {resolved}")
    return resolved


def _leaf(data: np.ndarray, requires_grad: bool, device: Any = None) -> Tensor:
    """The leaf holding `data` (made on the host) on `device`; in inference mode, an inference tensor."""
    where = cpu if device is None else as_device(device)
    return new_leaf(data if where is cpu else where.asarray(data), requires_grad, where)


# -- constants ---------------------------------------------------------------------------------------------------
def zeros(
    *args: Any, size: Sequence[int] | None = None, dtype: Any = None, requires_grad: bool = False, device: Any = None
) -> Tensor:
    _check_device(device)
    return _leaf(np.zeros(_size("zeros", args, size), _dtype(dtype, _DEFAULT_FLOAT)), requires_grad, device)


def ones(
    *args: Any, size: Sequence[int] | None = None, dtype: Any = None, requires_grad: bool = False, device: Any = None
) -> Tensor:
    _check_device(device)
    return _leaf(np.ones(_size("ones", args, size), _dtype(dtype, _DEFAULT_FLOAT)), requires_grad, device)


def empty(
    *args: Any, size: Sequence[int] | None = None, dtype: Any = None, requires_grad: bool = False, device: Any = None
) -> Tensor:
    _check_device(device)
    return _leaf(np.empty(_size("empty", args, size), _dtype(dtype, _DEFAULT_FLOAT)), requires_grad, device)


def _fill_dtype(fill_value: Any) -> np.dtype:
    """PyTorch 2.x infers full's dtype from the fill value: bool, int64 or the default float."""
    if isinstance(fill_value, bool | np.bool_):
        return bool_
    if _is_int(fill_value):
        return int64
    if isinstance(fill_value, float | np.floating):
        return _DEFAULT_FLOAT
    raise TypeError(f"full(): fill_value must be a bool, int or float, got {type(fill_value).__name__}")


def _fill(fill_value: Any, dtype: np.dtype) -> Any:
    """A number as PyTorch fills a tensor of `dtype` with it: an integer dtype refuses one out of its range."""
    return fitted_number(fill_value, dtype) if isinstance(fill_value, int | float) else fill_value


def full(
    size: Sequence[int], fill_value: Any, *, dtype: Any = None, requires_grad: bool = False, device: Any = None
) -> Tensor:
    _check_device(device)
    resolved = _dtype(dtype, _fill_dtype(fill_value))
    return _leaf(np.full(_shape("full", (size,)), _fill(fill_value, resolved), resolved), requires_grad, device)


def eye(n: int, m: int | None = None, *, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    _check_device(device)
    m = n if m is None else m
    for name, value in (("n", n), ("m", m)):
        if not _is_int(value):
            raise TypeError(f"eye(): {name} must be an int, got {type(value).__name__}")
        if value < 0:
            raise RuntimeError(f"eye(): {name} must be greater or equal to 0, got {value}")
    return _leaf(np.eye(n, m, dtype=_dtype(dtype, _DEFAULT_FLOAT)), requires_grad, device)


# -- ranges ------------------------------------------------------------------------------------------------------
def _range_number(value: Any, name: str, position: int) -> int | float:
    """An arange bound as PyTorch takes it: a number, or a zero-dim tensor's value; a bool counts as an int."""
    if isinstance(value, Tensor) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bool | np.bool_ | np.integer):
        value = int(value)
    if isinstance(value, np.floating):
        value = float(value)
    if not isinstance(value, int | float):
        raise TypeError(f"arange(): argument '{name}' (position {position}) must be Number, not {type(value).__name__}")
    return checked_int(value) if isinstance(value, int) else value


def _as_int64(value: int | float) -> int:
    """A bound converted to int64, as PyTorch does for an integer dtype: a float goes toward 0."""
    if not -(2.0**63) <= value < 2.0**63 or (isinstance(value, int) and value >= 1 << 63):
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    return int(value)


def arange(
    start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, requires_grad: bool = False, device: Any = None
) -> Tensor:
    """`arange(end)` or `arange(start, end, step)`: int64 when every bound is an int, else the default float."""
    _check_device(device)
    if end is None:
        bounds = (0, _range_number(start, "end", 1), _range_number(step, "step", 2))
    else:
        bounds = tuple(_range_number(v, name, i) for i, (v, name) in
                       enumerate(((start, "start"), (end, "end"), (step, "step")), 1))
    start, end, step = bounds
    resolved = _dtype(dtype, int64 if all(isinstance(v, int) for v in bounds) else _DEFAULT_FLOAT)
    if resolved == bool_:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    # PyTorch checks the bounds as doubles, then computes in the dtype's accumulate type (int64 for integer dtypes,
    # so float bounds go toward 0 first: arange(0, 5, 1.5, dtype=int32) is 0, 1, 2, 3)
    first, last, stride = (float(v) for v in bounds)
    if not (stride > 0 or stride < 0):
        raise RuntimeError("arange(): step must be nonzero")
    if not (math.isfinite(first) and math.isfinite(last)):
        raise RuntimeError(f"arange(): unsupported range: {first:g} -> {last:g}")
    if (stride > 0 and last < first) or (stride < 0 and last > first):
        raise RuntimeError(
            f"arange(): upper bound and lower bound inconsistent with step sign (start={start}, end={end}, "
            f"step={step})"
        )
    if resolved.kind in "iu":
        start, end, step = (_as_int64(v) for v in bounds)
    if resolved == int64:  # PyTorch counts in int64 (wrapping on overflow) and truncates the division
        if step == 0:
            raise ValueError(f"arange(): step must be nonzero (step={stride:g} is 0 as an int64)")
        count = wrapped_int(end - start + step - (1 if step > 0 else -1), int64)
        length = abs(count) // abs(step) * (1 if (count < 0) == (step < 0) else -1)
    else:
        length = math.ceil((last - first) / stride)
    if length < 0:  # the int64 count wrapped
        raise RuntimeError("arange(): invalid size, possible overflow?")
    _check_storage("arange", (length,))
    if resolved.kind in "iu":  # in int64, wrapping into narrower dtypes as PyTorch's cast does
        values = start + step * np.arange(length, dtype=np.int64)
    else:
        values = first + stride * np.arange(length, dtype=np.float64)
    with np.errstate(over="ignore"):  # float16's overflow gives inf, silently as in PyTorch
        return _leaf(values.astype(resolved), requires_grad, device)


def linspace(
    start: float, end: float, steps: int, *, dtype: Any = None, requires_grad: bool = False, device: Any = None
) -> Tensor:
    _check_device(device)
    if not _is_int(steps):
        raise TypeError(f"linspace(): steps must be an int, got {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
    values = np.linspace(start, end, steps, dtype=np.float64)
    return _leaf(values.astype(_dtype(dtype, _DEFAULT_FLOAT)), requires_grad, device)


# -- *_like ------------------------------------------------------------------------------------------------------
def _like_dtype(input: Tensor, dtype: Any) -> np.dtype:
    if not isinstance(input, Tensor):
        raise TypeError(f"expected a Tensor as input, got {type(input).__name__}")
    return input.dtype if dtype is None else np.dtype(dtype)


def zeros_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    _check_device(device)
    return _leaf(np.zeros(input.shape, _like_dtype(input, dtype)), requires_grad, device or input.device)


def ones_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    _check_device(device)
    return _leaf(np.ones(input.shape, _like_dtype(input, dtype)), requires_grad, device or input.device)


def full_like(
    input: Tensor, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False, device: Any = None
) -> Tensor:
    _check_device(device)
    resolved = _like_dtype(input, dtype)
    return _leaf(np.full(input.shape, _fill(fill_value, resolved), resolved), requires_grad, device or input.device)


# -- random ------------------------------------------------------------------------------------------------------
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
    _check_device(device)
    rng = numpy_generator(generator)
    return _leaf(_draw(rng.random, _size("rand", args, size), _float_dtype("rand", dtype)), requires_grad, device)


def randn(
    *args: Any, size: Sequence[int] | None = None, generator: Generator | None = None, dtype: Any = None,
    requires_grad: bool = False, device: Any = None,
) -> Tensor:
    """Samples from the standard normal distribution."""
    _check_device(device)
    rng = numpy_generator(generator)
    draws = _draw(rng.standard_normal, _size("randn", args, size), _float_dtype("randn", dtype))
    return _leaf(draws, requires_grad, device)


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
    _check_device(device)
    if size is None and isinstance(high, Sequence):
        low, high, size = 0, low, high
    elif high is None and low is not None:  # randint(high, size=...)
        low, high = 0, low
    if low is None:
        low = 0
    if high is None or size is None:
        raise TypeError("randint() needs high and size: randint(high, size) or randint(low, high, size)")
    if not (_is_int(low) and _is_int(high)):
        raise TypeError(f"randint(): low and high must be ints, got {type(low).__name__} and {type(high).__name__}")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    shape = _shape("randint", (size,))
    values = numpy_generator(generator).integers(low, high, shape, dtype=np.int64)
    return _leaf(values.astype(_dtype(dtype, int64), copy=False), requires_grad, device)


def _random_like(op: str, sample: str, input: Tensor, generator: Generator | None, dtype: Any, requires_grad: bool,
                 device: Any) -> Tensor:
    """A tensor of `input`'s shape drawn by the numpy Generator method `sample`."""
    _check_device(device)
    resolved = _float_dtype(op, _like_dtype(input, dtype))
    draws = _draw(getattr(numpy_generator(generator), sample), input.shape, resolved)
    return _leaf(draws, requires_grad, device or input.device)


def rand_like(
    input: Tensor, *, generator: Generator | None = None, dtype: Any = None, requires_grad: bool = False,
    device: Any = None,
) -> Tensor:
    return _random_like("rand_like", "random", input, generator, dtype, requires_grad, device)


def randn_like(
    input: Tensor, *, generator: Generator | None = None, dtype: Any = None, requires_grad: bool = False,
    device: Any = None,
) -> Tensor:
    return _random_like("randn_like", "standard_normal", input, generator, dtype, requires_grad, device)
