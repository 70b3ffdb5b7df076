"""Tensor creation: constant and range tensors and tensors from existing data, with PyTorch's signatures, default
dtypes and errors (random tensors are in `actorgrad.random_tensors`).

Floats default to the default dtype (float32 unless `set_default_dtype` changed it); integer ranges give int64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from actorgrad.creation_args import (
    check_device,
    check_layout,
    check_storage,
    checked_shape,
    dtype_or,
    int_like,
    is_int,
    leaf_on,
    size_argument,
)
from actorgrad.default_device import default_device
from actorgrad.default_dtype import default_complex, default_float
from actorgrad.devices import cpu
from actorgrad.devices import device as as_device
from actorgrad.memory_formats import contiguous_format, formatted, preserve_format
from actorgrad.ops.operands import (
    C_TYPES,
    SCALAR_NAMES,
    checked_int,
    fitted_number,
    not_implemented,
    real_number,
    wrapped_int,
)
from actorgrad.tensor import Tensor, bool_, int64
from actorgrad.tensor_construction import checked_numpy, copied_leaf, new_leaf
from actorgrad.user_warnings import warn_once

__all__ = [
    "arange", "as_tensor", "empty", "eye", "from_numpy", "full", "full_like", "linspace", "logspace", "ones",
    "ones_like", "zeros", "zeros_like",
]


# -- constants ---------------------------------------------------------------------------------------------------
def zeros(
    *args: Any, size: Sequence[int] | None = None, dtype: Any = None, requires_grad: bool = False, device: Any = None,
    layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    check_device(device)
    check_layout("zeros", layout, pin_memory)
    shape = size_argument("zeros", args, size)
    return leaf_on(np.zeros(shape, dtype_or(dtype, default_float())), requires_grad, device)


def ones(
    *args: Any, size: Sequence[int] | None = None, dtype: Any = None, requires_grad: bool = False, device: Any = None,
    layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    check_device(device)
    check_layout("ones", layout, pin_memory)
    shape = size_argument("ones", args, size)
    return leaf_on(np.ones(shape, dtype_or(dtype, default_float())), requires_grad, device)


def empty(
    *args: Any, size: Sequence[int] | None = None, dtype: Any = None, requires_grad: bool = False, device: Any = None,
    memory_format: Any = contiguous_format, layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    check_device(device)
    check_layout("empty", layout, pin_memory)
    shape = size_argument("empty", args, size)
    return formatted("empty", leaf_on(np.empty(shape, dtype_or(dtype, default_float())), requires_grad, device),
                     memory_format)


def _fill_value(op: str, fill_value: Any) -> Any:
    """A fill value as a Python number; PyTorch also takes a zero-dim tensor's value, unless it requires grad."""
    if isinstance(fill_value, Tensor) and fill_value.ndim == 0 and not fill_value.requires_grad:
        fill_value = fill_value.item()
    if not isinstance(fill_value, int | float | complex | np.number | np.bool_):
        raise TypeError(f"{op}(): argument 'fill_value' (position 2) must be Number, not {type(fill_value).__name__}")
    return fill_value


def _fill_dtype(fill_value: Any) -> np.dtype:
    """PyTorch 2.x infers full's dtype from the fill value: bool, int64, the default float or the default complex."""
    if isinstance(fill_value, bool):  # a numpy bool, as any numpy number but an integer, gives the default float
        return bool_
    if isinstance(fill_value, complex | np.complexfloating):
        return default_complex()
    return int64 if is_int(fill_value) else default_float()


def _fill(fill_value: Any, dtype: np.dtype) -> Any:
    """A number as PyTorch fills a tensor of `dtype` with it: an integer dtype refuses one out of its range, a
    floating dtype a finite one past its largest value, a real dtype a complex one off the real line."""
    fill_value = real_number(fill_value, dtype)
    if dtype.kind == "f" and not isinstance(fill_value, bool | np.bool_):
        value = float(fill_value)
        if math.isfinite(value) and abs(value) > float(np.finfo(dtype).max):
            raise RuntimeError(f"value cannot be converted to type {C_TYPES[dtype]} without overflow")
    return fitted_number(fill_value, dtype) if isinstance(fill_value, int | float) else fill_value


_REQUIRED: Any = object()  # marks full's arguments not given: PyTorch checks the size before it misses a fill value


def full(
    size: Sequence[int] = _REQUIRED, fill_value: Any = _REQUIRED, *, dtype: Any = None, requires_grad: bool = False,
    device: Any = None, layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    check_device(device)
    check_layout("full", layout, pin_memory)
    if size is _REQUIRED:
        raise TypeError('full() missing 2 required positional argument: "size", "fill_value"')
    if not isinstance(size, Sequence | np.ndarray):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    shape = checked_shape("full", (size,))
    if fill_value is _REQUIRED:
        raise TypeError('full() missing 1 required positional arguments: "fill_value"')
    fill_value = _fill_value("full", fill_value)
    resolved = dtype_or(dtype, _fill_dtype(fill_value))
    data = np.full(shape, _fill(fill_value, resolved), resolved)
    return leaf_on(data, requires_grad, device)


def eye(
    n: int, m: int | None = None, *, dtype: Any = None, requires_grad: bool = False, device: Any = None,
    layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    check_device(device)
    check_layout("eye", layout, pin_memory)
    n, m = (value.item() if isinstance(value, Tensor) and int_like(value) else value for value in (n, m))
    m = n if m is None else m
    for position, name, value in ((1, "n", n), (2, "m", m)):
        if not is_int(value):
            raise TypeError(f"eye(): argument '{name}' (position {position}) must be int, not {type(value).__name__}")
        if value < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {value}")
    return leaf_on(np.eye(n, m, dtype=dtype_or(dtype, default_float())), requires_grad, device)


# -- ranges ------------------------------------------------------------------------------------------------------
def _range_number(value: Any, name: str, position: int) -> int | float:
    """An arange bound as PyTorch takes it: a number or a zero-dim tensor's value (not one requiring grad)."""
    if isinstance(value, Tensor) and value.ndim == 0 and not value.requires_grad:
        value = value.item()
    if isinstance(value, bool | np.bool_ | np.integer | np.floating):  # a bool counts as an int
        value = float(value) if isinstance(value, np.floating) else int(value)
    if not isinstance(value, int | float):
        raise TypeError(f"arange(): argument '{name}' (position {position}) must be Number, not {type(value).__name__}")
    return checked_int(value) if isinstance(value, int) else value


def _as_int64(value: int | float) -> int:
    """A bound converted to int64, as PyTorch does for an integer dtype: a float goes toward 0."""
    if not -(2.0**63) <= value < 2.0**63 or (isinstance(value, int) and value >= 1 << 63):
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    return int(value)


def arange(
    start: Any = None, end: Any = None, step: Any = 1, *, dtype: Any = None, requires_grad: bool = False,
    device: Any = None, layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    """`arange(end)` or `arange(start, end, step)` (`arange(end=5)` too): int64 when every bound is an int, else
    the default float."""
    check_device(device)
    check_layout("arange", layout, pin_memory)
    if start is None and end is None:
        raise TypeError('arange() missing 1 required positional arguments: "end"')
    if start is None:
        start = 0
    if end is None:
        bounds = (0, _range_number(start, "end", 1), _range_number(step, "step", 2))
    else:
        bounds = tuple(_range_number(v, name, i) for i, (v, name) in
                       enumerate(((start, "start"), (end, "end"), (step, "step")), 1))
    start, end, step = bounds
    resolved = dtype_or(dtype, int64 if all(isinstance(v, int) for v in bounds) else default_float())
    if resolved == bool_ or resolved.kind == "c":
        raise not_implemented("arange_cpu", resolved)
    # PyTorch checks the bounds as doubles, then computes in the dtype's accumulate type (int64 for integer dtypes,
    # so float bounds go toward 0 first: arange(0, 5, 1.5, dtype=int32) is 0, 1, 2, 3)
    first, last, stride = (float(v) for v in bounds)
    if not (stride > 0 or stride < 0):
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(first) and math.isfinite(last)):
        raise RuntimeError(f"unsupported range: {first:g} -> {last:g}")
    if (stride > 0 and last < first) or (stride < 0 and last > first):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
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
    check_storage("arange", (length,))
    if resolved.kind in "iu":  # in int64, wrapping into narrower dtypes as PyTorch's cast does
        values = start + step * np.arange(length, dtype=np.int64)
    else:
        values = first + stride * np.arange(length, dtype=np.float64)
    with np.errstate(over="ignore"):  # float16's overflow gives inf, silently as in PyTorch
        return leaf_on(values.astype(resolved), requires_grad, device)


def _space(op: str, start: Any, end: Any, steps: int, dtype: Any, exponent: bool = False) -> tuple[Any, np.dtype]:
    """The points of linspace (or logspace's exponents) as PyTorch's kernels compute them: the bounds converted to
    the dtype as full converts a fill value, a step in double (complex for a complex dtype), the first half counted
    up from `start`, the rest down from `end`; linspace's float kernel fuses each multiply-add (emulated in long
    double). One point is `start`, unconverted: PyTorch fills with it (base ** start for logspace)."""
    dims = [v.ndim if isinstance(v, Tensor) else 0 for v in (start, end)]
    if any(dims):
        raise RuntimeError(f"{op} only supports 0-dimensional start and end tensors, but got start with {dims[0]} "
                           f"dimension(s) and end with {dims[1]} dimension(s).")
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    if not is_int(steps):
        raise TypeError(f"{op}(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    is_complex = any(isinstance(v, complex | np.complexfloating) for v in (start, end))
    resolved = dtype_or(dtype, default_complex() if is_complex else default_float())
    if is_complex and resolved.kind != "c":
        inferred = "c10::complex<float>" if default_complex() == np.complex64 else "c10::complex<double>"
        raise RuntimeError(f"torch.{op}(): inferred dtype {inferred} can't be safely cast to passed dtype "
                           f"{SCALAR_NAMES[resolved]}")
    if steps <= 1:
        return np.array([start] * steps), resolved
    if resolved == bool_:
        raise not_implemented(f"{op}_cpu", resolved)
    first, last = (np.asarray(_fill(v, resolved), resolved) for v in (start, end))
    index = np.arange(steps)
    if resolved.kind in "iuc" or exponent:
        work = np.complex128 if resolved.kind == "c" else np.float64
        low, high = first.astype(work), last.astype(work)
        step = (high - low) / (steps - 1)
    else:
        wide = np.longdouble
        step = wide((last - first) / resolved.type(steps - 1))
        low, high, index = wide(first), wide(last), index.astype(wide)
    half = steps // 2
    with np.errstate(invalid="ignore", over="ignore"):
        points = np.concatenate([low + step * index[:half], high - step * (steps - 1 - index[half:])])
    return points, resolved


def _steps(steps: Any) -> Any:
    """An integer 0-d tensor as its int, as PyTorch reads `steps`; anything else as it is, for _space to check."""
    if isinstance(steps, Tensor) and steps.ndim == 0 and steps.dtype.kind in "iu":
        return steps.item()
    return steps


def linspace(
    start: Any, end: Any, steps: int, *, dtype: Any = None, requires_grad: bool = False, device: Any = None,
    layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    """`steps` points evenly spaced from `start` to `end`, both included."""
    steps = _steps(steps)
    check_device(device)
    check_layout("linspace", layout, pin_memory)
    points, resolved = _space("linspace", start, end, steps, dtype)
    points = np.array([_fill(points[0], resolved)]) if steps == 1 else points
    with np.errstate(invalid="ignore"):  # nan points, as in PyTorch
        return leaf_on(points.astype(resolved), requires_grad, device)


def logspace(
    start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: Any = None, requires_grad: bool = False,
    device: Any = None, layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    """`base` to the power of `steps` points evenly spaced from `start` to `end`."""
    steps = _steps(steps)
    check_device(device)
    check_layout("logspace", layout, pin_memory)
    if isinstance(base, Tensor):
        base = base.item()
    if not isinstance(base, int | float | np.number) or isinstance(base, complex):
        raise TypeError(f"logspace(): argument 'base' must be float, not {type(base).__name__}")
    exponents, resolved = _space("logspace", start, end, steps, dtype, exponent=True)
    with np.errstate(all="ignore"):  # nan for a negative base, inf past the dtype's range, as in PyTorch
        powers = np.power(np.float64(base), exponents)
        powers = np.array([_fill(powers[0].item(), resolved)]) if steps == 1 else powers
        return leaf_on(powers.astype(resolved), requires_grad, device)


# -- *_like ------------------------------------------------------------------------------------------------------
def like_dtype(op: str, input: Tensor, dtype: Any) -> np.dtype:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input.dtype if dtype is None else np.dtype(dtype)


def zeros_like(
    input: Tensor, *, dtype: Any = None, requires_grad: bool = False, device: Any = None,
    memory_format: Any = preserve_format, layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    check_device(device)
    check_layout("zeros_like", layout, pin_memory)
    resolved = like_dtype("zeros_like", input, dtype)
    return formatted("zeros_like", leaf_on(np.zeros(input.shape, resolved), requires_grad, device or input.device),
                     memory_format, input)


def ones_like(
    input: Tensor, *, dtype: Any = None, requires_grad: bool = False, device: Any = None,
    memory_format: Any = preserve_format, layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    check_device(device)
    check_layout("ones_like", layout, pin_memory)
    resolved = like_dtype("ones_like", input, dtype)
    return formatted("ones_like", leaf_on(np.ones(input.shape, resolved), requires_grad, device or input.device),
                     memory_format, input)


def full_like(
    input: Tensor, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False, device: Any = None,
    memory_format: Any = preserve_format, layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    check_device(device)
    check_layout("full_like", layout, pin_memory)
    resolved = like_dtype("full_like", input, dtype)
    fill_value = _fill(_fill_value("full_like", fill_value), resolved)
    leaf = leaf_on(np.full(input.shape, fill_value, resolved), requires_grad, device or input.device)
    return formatted("full_like", leaf, memory_format, input)


# -- from existing data ------------------------------------------------------------------------------------------
def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing `ndarray`'s memory: a change to one shows in the other, as PyTorch's."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _warn_if_read_only(ndarray)
    return new_leaf(checked_numpy(ndarray))


def _warn_if_read_only(array: np.ndarray) -> None:
    """PyTorch warns, once per process, when from_numpy or as_tensor is given an array it may not write."""
    if not array.flags.writeable:
        warn_once(
            "The given NumPy array is not writable, and actorgrad does not support non-writable tensors. This means "
            "writing to this tensor will result in undefined behavior. You may want to copy the array to protect its "
            "data or make it writable before converting it to a tensor. This type of warning will be suppressed for "
            "the rest of this program."
        )


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """`data` as a tensor, copying only what must be: a tensor comes back as it is (or converted, recorded, when
    `dtype` or `device` differ), a numpy array of the dtype on the cpu shares its memory; anything else is
    copied as by `tensor()`."""
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device)
    if isinstance(data, np.ndarray):
        _warn_if_read_only(data)
    on_cpu = (default_device() if device is None else as_device(device)) is cpu
    if isinstance(data, np.ndarray) and on_cpu and (dtype is None or np.dtype(dtype) == data.dtype):
        return new_leaf(checked_numpy(data))
    return copied_leaf(data, dtype, device)
