"""Numerical integration, differentiation and polynomial bases: trapezoid (and its old name trapz),
cumulative_trapezoid, gradient and vander, composed of slices, arithmetic, sums, cumulative sums and products, so
their gradients are those ops'."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from actorgrad.default_dtype import default_float
from actorgrad.ops.aliases import diff
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.indexing import getitem
from actorgrad.ops.joining import cat
from actorgrad.ops.reductions import cumsum, normalize_dims, sum
from actorgrad.ops.scans import cumprod
from actorgrad.ops.shape import broadcast_to, flip, reshape, single_dim
from actorgrad.tensor import Tensor, int64

__all__ = ["cumulative_trapezoid", "gradient", "trapezoid", "trapz", "vander"]


def _sample_dim(op: str, y: Tensor, dim: int) -> int:
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return single_dim(dim, y.ndim, op)


def _floating(y: Tensor) -> Tensor:
    """y as PyTorch integrates it: integer and bool samples in the default float dtype (complex ones as they are)."""
    return y if y.dtype.kind in "fc" else y.to(default_float())


def _spacings(op: str, y: Tensor, x: Tensor, d: int) -> Tensor:
    """The widths between neighbouring sample points along dim d; a 1-D x gives one point per sample."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        x = reshape(x, (-1,) + (1,) * (y.ndim - d - 1))
        d = x.ndim - 1 - (y.ndim - 1 - d)
    lead = (slice(None),) * d
    return getitem(x, lead + (slice(1, None),)) - getitem(x, lead + (slice(None, -1),))


def _refuse_bool(op: str, y: Tensor, x: Tensor | None) -> None:
    if y.dtype == np.bool_ or x is not None and x.dtype == np.bool_:
        named = "`y`" if x is None else "`x` or `y`"
        raise RuntimeError(f"{op}: received a bool input for {named}, but bool is not supported")


def _pair_sums(y: Tensor, d: int) -> Tensor:
    lead = (slice(None),) * d
    return getitem(y, lead + (slice(1, None),)) + getitem(y, lead + (slice(None, -1),))


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoidal rule's integral of y along `dim`, at sample points x or spaced dx apart (1 by default)."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: give x or dx, not both")
    d = _sample_dim("trapezoid", y, dim)
    if y.shape[d] == 0:  # no interval: zeros of y's own dtype (bool too), as PyTorch's
        return y.new_zeros(y.shape[:d] + y.shape[d + 1:])
    _refuse_bool("trapezoid", y, x)
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
    _refuse_bool("cumulative_trapezoid", y, x)
    if y.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = single_dim(dim, y.ndim, "cumulative_trapezoid")
    y = _floating(y)
    areas = _pair_sums(y, d) * (1 if dx is None else dx) if x is None else (
        _spacings("cumulative_trapezoid", y, x, d) * _pair_sums(y, d)
    )
    return cumsum(areas, d) / 2


def _along(y: Tensor, d: int, start: int, stop: int | None = None) -> Tensor:
    return getitem(y, (slice(None),) * d + (slice(start, stop),))


def _uniform_gradient(y: Tensor, d: int, step: Any, edge_order: int) -> Tensor:
    """Central differences over 2 * step, one-sided ones (first or second order) at the ends, in PyTorch's order
    of operations."""
    center = (_along(y, d, 2) - _along(y, d, 0, -2)) / step
    if edge_order == 1:
        first = (_along(y, d, 1, 2) - _along(y, d, 0, 1)) / step
        last = (_along(y, d, -1) - _along(y, d, -2, -1)) / step
    else:
        first = (_along(y, d, 0, 1) * -1.5 + _along(y, d, 1, 2) * 2 - _along(y, d, 2, 3) * 0.5) / step
        last = (_along(y, d, -3, -2) * 0.5 + _along(y, d, -2, -1) * -2 + _along(y, d, -1) * 1.5) / step
    return cat([first, center / 2, last], d)


def _coordinate_gradient(y: Tensor, d: int, x: Tensor, edge_order: int) -> Tensor:
    """The second-order differences at uneven sample points x (PyTorch's formula: a weighted sum of each point's
    neighbours), one-sided ones at the ends."""
    if x.ndim != 1:
        raise RuntimeError("torch.gradient expected each element of spacing to have one dimension, but got an "
                           f"element with {x.ndim} dimensions!")
    shape = [1] * y.ndim
    shape[d] = -1
    dx = diff(x)
    dx1, dx2 = dx[:-1], dx[1:]
    center = (reshape(-dx2 / (dx1 * (dx1 + dx2)), shape) * _along(y, d, 0, -2)
              + reshape((dx2 - dx1) / (dx1 * dx2), shape) * _along(y, d, 1, -1)
              + reshape(dx1 / (dx2 * (dx1 + dx2)), shape) * _along(y, d, 2))
    if edge_order == 1:
        first = (_along(y, d, 1, 2) - _along(y, d, 0, 1)) / dx[0]
        last = (_along(y, d, -1) - _along(y, d, -2, -1)) / dx[-1]
    else:
        h0, h1, hn, hm = dx[0], dx[1], dx[-1], dx[-2]
        first = (-(2.0 * h0 + h1) / (h0 * (h0 + h1)) * _along(y, d, 0, 1)
                 + (h0 + h1) / (h0 * h1) * _along(y, d, 1, 2)
                 + -h0 / (h1 * (h0 + h1)) * _along(y, d, 2, 3))
        last = (hn / (hm * (hn + hm)) * _along(y, d, -3, -2)
                + -(hn + hm) / (hn * hm) * _along(y, d, -2, -1)
                + (2 * hn + hm) / (hn * (hn + hm)) * _along(y, d, -1))
    return cat([first, center, last], d)


def _gradient_steps(spacing: Any, ndim: int, dims: list[int] | None) -> list[Any]:
    """One step (a number or a 1-D tensor of coordinates) per dim, with PyTorch's checks of the spacing's length."""
    if isinstance(spacing, Tensor):
        raise TypeError("gradient(): argument 'spacing' must be a number, a list of numbers or a list of 1-D "
                        "tensors, not Tensor")
    if not isinstance(spacing, Sequence):
        return [spacing] * (ndim if dims is None else len(dims))
    steps = list(spacing)
    if any(isinstance(step, Tensor) for step in steps):
        for i, step in enumerate(steps):
            if not isinstance(step, Tensor):
                raise TypeError(f"expected Tensor as element {i} in argument 1, but got {type(step).__name__}")
    if dims is None and len(steps) != ndim:
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal "
                           f"to 'self.dim() = {ndim}', since dim argument was not given, but got a list of length "
                           f"{len(steps)}")
    if dims is not None and len(steps) != len(dims):
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length {len(steps)} "
                           f"and a dim argument of length {len(dims)}.")
    return steps


def gradient(
    input: Tensor, *, spacing: Any = 1, dim: int | Sequence[int] | None = None, edge_order: int = 1
) -> tuple[Tensor, ...]:
    """The derivative of the sampled function `input` along each of `dim` (all dims by default): central
    differences inside, one-sided differences of order `edge_order` (1 or 2) at the ends. `spacing` is a step for
    every dim, one step per dim, or one 1-D tensor of sample coordinates per dim."""
    if input.dtype == np.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    named = None if dim is None else [dim] if isinstance(dim, int) else list(dim)
    steps = _gradient_steps(spacing, input.ndim, named)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.ndim)) if named is None else [_sample_dim("gradient", input, d) for d in named]
    normalize_dims(dims, max(input.ndim, 1), "gradient")  # PyTorch's error for a dim named twice
    if any(input.shape[d] < edge_order + 1 for d in dims):
        raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    return tuple(
        _coordinate_gradient(input, d, step, edge_order) if isinstance(step, Tensor)
        else _uniform_gradient(input, d, step, edge_order)
        for d, step in zip(dims, steps, strict=True)
    )


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of x's powers x**(N-1) .. x**0 (x**0 .. x**(N-1) when increasing); integer and bool
    x give int64, floating and complex x keep their dtype, as in PyTorch."""
    check_flags("vander", increasing=increasing)
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if x.dtype.kind not in "fc":
        x = x.to(int64)
    powers = x.new_ones((x.shape[0], min(n, 1)))
    if n > 1:
        powers = cat([powers, cumprod(broadcast_to(reshape(x, (-1, 1)), (x.shape[0], n - 1)), 1)], 1)
    return powers if increasing else flip(powers, 1)


METHODS: dict[str, Any] = {}
