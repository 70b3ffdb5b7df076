"""The window functions of signal processing (hann, hamming, bartlett, blackman, kaiser), as PyTorch's creation
functions: `periodic=True` (the default) gives the first `window_length` points of the symmetric window one point
longer, as spectral analysis wants; dtype (a floating one, default the default dtype), device and requires_grad
keywords.

The points are computed in float64 and rounded once to the dtype (PyTorch computes in the dtype itself, so its
float32 and float16 windows can differ from these in the last place).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.creation_args import check_device, dtype_or, is_int, leaf_on
from actorgrad.default_device import default_device
from actorgrad.default_dtype import default_float
from actorgrad.devices import device as as_device
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.linalg import TYPE_META_NAMES
from actorgrad.ops.operands import not_implemented
from actorgrad.tensor import Tensor

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"]


def _window(
    name: str, window_length: Any, periodic: bool, points: Callable[[np.ndarray, int], np.ndarray], dtype: Any,
    device: Any, requires_grad: bool,
) -> Tensor:
    """`points(n, N)`, the symmetric window of N points at n = 0 .. N - 1 (N > 1), cut to `window_length` points
    when periodic, as a new leaf."""
    if periodic.__class__ is not bool:
        raise not_bool(name, "periodic", periodic)
    check_device(device)
    if not is_int(window_length):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    resolved = dtype_or(dtype, default_float())
    if resolved.kind not in "fc":
        where = "cpu" if device is None else str(device)
        raise RuntimeError(
            f"{name} expects floating point dtypes, got: TensorOptions(dtype={TYPE_META_NAMES[resolved]}, "
            f"device={where}, layout=Strided (default), requires_grad=false (default), pinned_memory=false, "
            "memory_format=(nullopt))"
        )
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    if window_length <= 1:  # PyTorch's ones, even of a complex dtype
        values = np.ones(window_length)
    elif resolved.kind == "c":  # no complex arange to compute points with, as in PyTorch
        where = default_device() if device is None else as_device(device)
        raise not_implemented("arange_cuda" if where.type == "cuda" else "arange_cpu", resolved)
    else:
        full = window_length + 1 if periodic else window_length
        values = points(np.arange(full, dtype=np.float64), full)[:window_length]
    return leaf_on(values.astype(resolved), requires_grad, device)


def _cosine_sum(*weights: float) -> Callable[[np.ndarray, int], np.ndarray]:
    """The window sum_k (-1)^k weights[k] cos(2 pi k n / (N - 1)) (hann, hamming, blackman)."""

    def points(n: np.ndarray, full: int) -> np.ndarray:
        phase = 2 * math.pi * n / (full - 1)
        return sum((-1) ** k * w * np.cos(k * phase) for k, w in enumerate(weights))

    return points


def hann_window(
    window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _window("hann_window", window_length, periodic, _cosine_sum(0.5, 0.5), dtype, device, requires_grad)


def hamming_window(
    window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *, dtype: Any = None,
    device: Any = None, requires_grad: bool = False,
) -> Tensor:
    """alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, _cosine_sum(alpha, beta), dtype, device,
                   requires_grad)


def blackman_window(
    window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window("blackman_window", window_length, periodic, _cosine_sum(0.42, 0.5, 0.08), dtype, device,
                   requires_grad)


def _triangle(n: np.ndarray, full: int) -> np.ndarray:
    return 1 - np.abs(2 * n / (full - 1) - 1)


def bartlett_window(
    window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """The triangle 1 - |2 n / (N - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, _triangle, dtype, device, requires_grad)


def kaiser_window(
    window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype: Any = None, device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta), I0 the modified Bessel function of order 0."""

    def points(n: np.ndarray, full: int) -> np.ndarray:
        return np.i0(beta * np.sqrt(np.clip(1 - (2 * n / (full - 1) - 1) ** 2, 0, None))) / np.i0(beta)

    return _window("kaiser_window", window_length, periodic, points, dtype, device, requires_grad)
