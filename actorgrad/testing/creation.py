"""`make_tensor`: a random tensor of a given shape and dtype, with values in PyTorch's default ranges
([-9, 9) for floating and complex parts, [-9, 10) for integers, clamped to what the dtype holds)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

import actorgrad as ag
from actorgrad.creation_args import checked_shape
from actorgrad.ops.operands import int_tuple
from actorgrad.random import numpy_generator
from actorgrad.tensor import Tensor

__all__ = ["make_tensor"]


def _low_high(dtype: np.dtype, low: float | None, high: float | None, lowest: float, highest: float,
              default_low: float, default_high: float) -> tuple[float, float]:
    """The range [low, high) to draw from: the defaults filled in, checked, and clamped to [lowest, highest)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    inexact = dtype.kind in "fc"
    if any(isinstance(value, float) and math.isnan(value) for value in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and inexact:
        warnings.warn("Passing `low==high` to `actorgrad.testing.make_tensor` for floating or complex types is "
                      "deprecated, as in PyTorch. Use `actorgrad.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but "
                         f"actorgrad.{dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    return (low, high) if inexact else (math.ceil(low), math.ceil(high))


def _uniform(shape: tuple[int, ...], low: float, high: float) -> np.ndarray:
    rng = numpy_generator(None)
    if high - low >= np.finfo(np.float64).max:  # the span itself would overflow: draw half of it and double
        return 2 * rng.uniform(low / 2, high / 2, shape)
    return rng.uniform(low, high, shape)


def make_tensor(*shape: int | Sequence[int], dtype: Any, device: Any = None, low: float | None = None,
                high: float | None = None, requires_grad: bool = False, noncontiguous: bool = False,
                exclude_zero: bool = False, memory_format: Any = None) -> Tensor:
    """A tensor of `shape` filled with values drawn uniformly from [low, high) (from the default generator, so
    `actorgrad.manual_seed` repeats them). `noncontiguous` gives a strided view; `memory_format` lays the values
    out in that order (channels_last, ...); `exclude_zero` replaces zeros by 1 (bool, integers) or the dtype's
    smallest normal number (floating, and both parts of complex)."""
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = shape[0]
    # checked as torch.empty checks it: integers only (not 2.0, not nested), none negative
    shape = checked_shape("empty", (int_tuple(tuple(shape), "empty", "size", 1),))
    dtype = np.dtype(dtype)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    if requires_grad and dtype.kind in "biu":
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype=actorgrad.{dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])

    if dtype.kind == "b":
        low, high = _low_high(dtype, low, high, 0, 2, 0, 2)
        values = numpy_generator(None).integers(low, high, shape).astype(bool)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        low, high = _low_high(dtype, low, high, int(info.min), int(info.max) + (dtype != np.int64), -9, 10)
        values = numpy_generator(None).integers(low, high, shape, dtype=np.int64 if dtype != np.uint64 else dtype)
    elif dtype.kind in "fc":
        info = np.finfo(dtype)
        low, high = _low_high(dtype, low, high, float(info.min), float(info.max), -9, 9)
        values = _uniform(shape, low, high)
        if dtype.kind == "c":
            values = values + 1j * _uniform(shape, low, high)
    else:
        raise TypeError(f"The requested dtype 'actorgrad.{dtype}' is not supported by "
                        "actorgrad.testing.make_tensor().")
    values = values.astype(dtype)
    if exclude_zero:
        tiny = np.finfo(dtype).tiny if dtype.kind in "fc" else 1
        values[values == 0] = tiny * (1 + 1j) if dtype.kind == "c" else tiny
    result = ag.tensor(values, dtype=dtype, device=device)
    if noncontiguous:
        result = result[..., 1::2]  # offset by one, as PyTorch's, to catch offset bugs too
    elif memory_format is not None:
        result = result.contiguous(memory_format=memory_format)
    if dtype.kind in "fc":
        result.requires_grad_(requires_grad)
    return result
