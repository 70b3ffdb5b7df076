"""`actorgrad.linalg`: PyTorch's torch.linalg names for the norms, inverses, determinants, solves and the
Cholesky factor (the rules live in `actorgrad.ops.linalg_decompositions` and `actorgrad.ops.statistics`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.ops.linalg import matmul
from actorgrad.ops.linalg_decompositions import (
    LinAlgError,
    check_floating,
    cholesky,
    det,
    inv,
    slogdet,
    solve,
)
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.reductions import normalize_dims
from actorgrad.ops.shape import to_dtype
from actorgrad.ops.statistics import norm as _pnorm
from actorgrad.tensor import Tensor

__all__ = [
    "LinAlgError", "cholesky", "det", "inv", "matmul", "matrix_norm", "norm", "slogdet", "solve", "vector_norm",
]


def _in_dtype(op: str, x: Tensor, dtype: Any) -> Tensor:
    """The input cast to `dtype` for a norm, with PyTorch's checks (a floating dtype, no narrowing)."""
    if x._data.dtype.kind != "f":
        check_floating(op, x._data)
    if dtype is None:
        return x
    target = np.dtype(dtype)
    if target.kind != "f":
        raise RuntimeError(f"{op}: dtype should be floating point or complex, but got {SCALAR_NAMES[target]}")
    if target.itemsize < x._data.dtype.itemsize:
        raise RuntimeError(f"{op}: the dtype of the input ({SCALAR_NAMES[x._data.dtype]}) should be convertible "
                           f"without narrowing to the specified dtype ({SCALAR_NAMES[target]})")
    return to_dtype(x, target)


def vector_norm(
    x: Tensor, ord: float = 2, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """The vector ord-norm of x over `dim` (all elements by default): any number, inf or -inf."""
    if isinstance(ord, bool) or not isinstance(ord, int | float):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {type(ord).__name__}")
    return _pnorm(_in_dtype("linalg.vector_norm", x, dtype), ord, dim, keepdim)


def _matrix_dims(A: Tensor, dim: Any) -> tuple[int, int]:
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if isinstance(dim, int) or len(dim) != 2:
        shown = dim if isinstance(dim, int) else list(dim)
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {shown}")
    first, second = (d % A.ndim for d in normalize_dims(dim[0], A.ndim, "linalg.matrix_norm")
                     + normalize_dims(dim[1], A.ndim, "linalg.matrix_norm"))
    if first == second:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    return first, second


def matrix_norm(
    A: Tensor, ord: Any = "fro", dim: tuple[int, int] = (-2, -1), keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """The matrix norm over the two dims `dim`: 'fro', or the largest (1, inf) or smallest (-1, -inf) absolute
    column (1) or row (inf) sum. The spectral and nuclear norms (2, -2, 'nuc') need singular values, which
    actorgrad does not compute."""
    first, second = _matrix_dims(A, dim)
    A = _in_dtype("linalg.matrix_norm", A, dtype)
    if ord == "fro":
        return _pnorm(A, 2, (first, second), keepdim)
    if ord not in ("nuc", 1, -1, math.inf, -math.inf, 2, -2):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(
            f"linalg.matrix_norm: ord={ord} needs the singular values, which actorgrad does not compute; use 'fro', "
            "1, -1, inf or -inf")
    summed, extreme = (first, second) if abs(ord) == 1 else (second, first)
    sums = A.abs().sum(summed, keepdim=keepdim)
    if not keepdim and summed < extreme:
        extreme -= 1
    return sums.amax(extreme, keepdim=keepdim) if ord > 0 else sums.amin(extreme, keepdim=keepdim)


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """A vector norm (dim an int or one dim, or no dim and a 1-D input) or a matrix norm (two dims, a 2-D input, or
    a string ord), as torch.linalg.norm chooses."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1 and not isinstance(ord, str):
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim not in (1, 2):
        raise RuntimeError(
            f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.ndim}D.")
    if A.ndim == 2 or isinstance(ord, str):
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, ord, None, keepdim, dtype=dtype)
