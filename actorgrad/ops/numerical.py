"""Numerical integration and polynomial bases: trapezoid (and its old name trapz), cumulative_trapezoid and
vander, composed of slices, sums, cumulative sums and products, so their gradients are those ops'."""

from __future__ import annotations

from typing import Any

from actorgrad.ops.indexing import getitem
from actorgrad.ops.joining import cat
from actorgrad.ops.reductions import cumsum, sum
from actorgrad.ops.scans import cumprod
from actorgrad.ops.shape import broadcast_to, flip, reshape, single_dim
from actorgrad.tensor import Tensor, float32, int64

__all__ = ["cumulative_trapezoid", "trapezoid", "trapz", "vander"]


def _sample_dim(op: str, y: Tensor, dim: int) -> int:
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return single_dim(dim, y.ndim, op)


def _floating(y: Tensor) -> Tensor:
    """y as PyTorch integrates it: integer and bool samples as float32."""
    return y if y.dtype.kind == "f" else y.to(float32)


def _spacings(op: str, y: Tensor, x: Tensor, d: int) -> Tensor:
    """The widths between neighbouring sample points along dim d; a 1-D x gives one point per sample."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        x = reshape(x, (-1,) + (1,) * (y.ndim - d - 1))
        d = x.ndim - 1 - (y.ndim - 1 - d)
    lead = (slice(None),) * d
    return getitem(x, lead + (slice(1, None),)) - getitem(x, lead + (slice(None, -1),))


def _pair_sums(y: Tensor, d: int) -> Tensor:
    lead = (slice(None),) * d
    return getitem(y, lead + (slice(1, None),)) + getitem(y, lead + (slice(None, -1),))


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoidal rule's integral of y along `dim`, at sample points x or spaced dx apart (1 by default)."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: give x or dx, not both")
    d = _sample_dim("trapezoid", y, dim)
    y = _floating(y)
    if x is None:
        return sum(_pair_sums(y, d), d) * (1 if dx is None else dx) / 2
    return sum(_spacings("trapezoid", y, x, d) * _pair_sums(y, d), d) / 2


def trapz(y: Tensor, x: Tensor | None = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """Alias of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The running trapezoidal integral of y along `dim`: one value per interval, so one fewer than samples."""
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments: give x or dx, not both")
    if y.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = single_dim(dim, y.ndim, "cumulative_trapezoid")
    y = _floating(y)
    areas = _pair_sums(y, d) * (1 if dx is None else dx) if x is None else (
        _spacings("cumulative_trapezoid", y, x, d) * _pair_sums(y, d)
    )
    return cumsum(areas, d) / 2


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of x's powers x**(N-1) .. x**0 (x**0 .. x**(N-1) when increasing); integer and bool
    x give int64, as in PyTorch."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if x.dtype.kind != "f":
        x = x.to(int64)
    powers = x.new_ones((x.shape[0], min(n, 1)))
    if n > 1:
        powers = cat([powers, cumprod(broadcast_to(reshape(x, (-1, 1)), (x.shape[0], n - 1)), 1)], 1)
    return powers if increasing else flip(powers, 1)


METHODS: dict[str, Any] = {}
