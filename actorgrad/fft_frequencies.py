"""`actorgrad.fft`'s creation functions: the sample frequencies of a transform's bins (fftfreq, rfftfreq), with
PyTorch's reading of n and d, its dtypes and its rounding."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.creation_args import check_layout, dtype_or, is_int, leaf_on
from actorgrad.default_dtype import default_float
from actorgrad.ops.operands import SCALAR_NAMES, type_name
from actorgrad.tensor import Tensor, float64

__all__ = ["fftfreq", "rfftfreq"]


def _frequencies(op: str, n: int, bins: np.ndarray, d: float, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    """`bins` (integer frequencies) times 1 / (n d), as PyTorch multiplies: 1 / (n d) rounded to the dtype, the
    product in float32 (float64 for float64) rounded to the dtype."""
    resolved = dtype_or(dtype, default_float())
    if resolved.kind == "c":
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{SCALAR_NAMES[resolved]}'")
    if resolved.kind != "f":
        raise RuntimeError(f"{op} requires a floating point or complex dtype")
    compute = resolved if resolved == float64 else np.dtype(np.float32)
    # d = 0, n = 0 or a step past the dtype's range: inf and NaN, as in PyTorch, without numpy's warnings
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        step = np.float64(1.0) / np.float64(n * d)
        data = (bins.astype(compute) * compute.type(resolved.type(step))).astype(resolved)
    return leaf_on(data, requires_grad, device)


def _count(op: str, n: Any) -> int:
    """n as PyTorch's argument parser reads an int: a 0-d integer tensor counts as one."""
    if isinstance(n, Tensor) and n.ndim == 0 and n.dtype.kind in "iu":
        return int(n.item())
    if not is_int(n):
        raise TypeError(f"fft_{op}(): argument 'n' (position 1) must be int, not {type_name(n)}")
    return int(n)


def _spacing(op: str, d: Any) -> float:
    """d as PyTorch's argument parser reads a float: a real number or a 0-d real tensor."""
    if isinstance(d, Tensor) and d.ndim == 0 and d.dtype.kind != "c":
        return float(d.item())
    if not isinstance(d, int | float | np.integer | np.floating):
        raise TypeError(f"fft_{op}(): argument 'd' (position 2) must be float, not {type_name(d)}")
    return float(d)


def _bins(count: int) -> np.ndarray:
    """0, 1, ..., count - 1, with PyTorch's error for a negative count."""
    if count < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {count}: [{count}]")
    return np.arange(count)


def fftfreq(
    n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
    layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    """The sample frequencies of an n-point transform with sample spacing d: 0, 1, ..., -(n // 2), ..., -1
    over n d."""
    n, d = _count("fftfreq", n), _spacing("fftfreq", d)
    check_layout("fft_fftfreq", layout, pin_memory)
    bins = _bins(n)
    bins[(n + 1) // 2:] -= n
    return _frequencies("fftfreq", n, bins, d, dtype, device, requires_grad)


def rfftfreq(
    n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
    layout: Any = None, pin_memory: bool | None = False,
) -> Tensor:
    """The sample frequencies of rfft's n // 2 + 1 bins: 0, 1, ..., n // 2 over n d."""
    n, d = _count("rfftfreq", n), _spacing("rfftfreq", d)
    check_layout("fft_rfftfreq", layout, pin_memory)
    half = n // 2 if n >= 0 else -(-n // 2)  # PyTorch's n / 2 rounds toward zero
    return _frequencies("rfftfreq", n, _bins(half + 1), d, dtype, device, requires_grad)
