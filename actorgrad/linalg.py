"""`actorgrad.linalg`: PyTorch's torch.linalg names for the norms, inverses, determinants, solves (triangular,
least-squares, from LU factors), the Cholesky, LU, SVD, eigen (general and symmetric) and QR decompositions, the
pseudo-inverse, rank, condition numbers, matrix powers and the matrix exponential (the rules live in
`actorgrad.ops.linalg_decompositions`, `linalg_spectral`, `linalg_triangular`, `linalg_lu`, `linalg_forms`,
`linalg_composites`, `linalg_eig`, `matrix_functions` and `statistics`)."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.linalg import matmul
from actorgrad.ops.linalg_cholesky import cholesky
from actorgrad.ops.linalg_composites import (
    cond,
    cross,
    diagonal,
    householder_product,
    multi_dot,
    tensorinv,
    tensorsolve,
    vander,
    vecdot,
)
from actorgrad.ops.linalg_decompositions import (
    LinAlgError,
    check_floating,
    inv,
    solve,
)
from actorgrad.ops.linalg_decompositions import linalg_det as det
from actorgrad.ops.linalg_decompositions import linalg_slogdet as slogdet
from actorgrad.ops.linalg_eig import eig, eigvals
from actorgrad.ops.linalg_forms import cholesky_ex, inv_ex, lstsq, solve_ex
from actorgrad.ops.linalg_ldl import OUT_RULES as _LDL_OUT
from actorgrad.ops.linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve
from actorgrad.ops.linalg_lu import lu, lu_factor, lu_factor_ex, lu_solve
from actorgrad.ops.linalg_out import LINALG
from actorgrad.ops.linalg_spectral import eigh, eigvalsh, matrix_rank, pinv, qr, svd, svdvals
from actorgrad.ops.linalg_triangular import solve_triangular
from actorgrad.ops.matrix_functions import linalg_matrix_exp as matrix_exp
from actorgrad.ops.operands import SCALAR_NAMES, dim_in_range, require_tensors
from actorgrad.ops.out_arguments import give_out_by_rules
from actorgrad.ops.public_names import check_tensor_arguments
from actorgrad.ops.record import Rule, record
from actorgrad.ops.shape import permute, to_dtype
from actorgrad.ops.statistics import norm as _pnorm
from actorgrad.tensor import Tensor

__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh",
    "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor",
    "lu_factor_ex", "lu_solve", "matmul",
    "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve",
    "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm",
]


def _in_dtype(op: str, x: Tensor, dtype: Any, *, complex_ok: bool = False) -> Tensor:
    """The input cast to `dtype` for a norm, with PyTorch's checks (a floating dtype, no narrowing); complex
    inputs where the norm's gradient takes them."""
    complex_input = complex_ok and x._data.dtype.kind == "c"
    if x._data.dtype.kind != "f" and not complex_input:
        check_floating(op, x._data)
    if dtype is None:
        return x
    target = np.dtype(dtype)
    if target.kind not in "fc":
        raise RuntimeError(f"{op}: dtype should be floating point or complex, but got {SCALAR_NAMES[target]}")
    if (target.kind == "c") != complex_input:
        kind = "complex" if complex_input else "real"
        raise RuntimeError(f"{op}: dtype should be {kind} for {kind} inputs, but got {SCALAR_NAMES[target]}")
    if target.itemsize < x._data.dtype.itemsize:
        raise RuntimeError(f"{op}: the dtype of the input ({SCALAR_NAMES[x._data.dtype]}) should be convertible "
                           f"without narrowing to the specified dtype ({SCALAR_NAMES[target]})")
    return to_dtype(x, target)


def vector_norm(
    x: Tensor, ord: float = 2, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """The vector ord-norm of x over `dim` (all elements by default): any number, inf or -inf."""
    check_flags("linalg_vector_norm", keepdim=keepdim)
    if autocast_state.get() is not None and dtype is None:
        return autocast_call(vector_norm, "vector_norm", x, ord, dim, keepdim, dtype=dtype)
    require_tensors("linalg_vector_norm", input=x)
    if isinstance(ord, bool) or not isinstance(ord, int | float):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {type(ord).__name__}")
    return _pnorm(_in_dtype("linalg.vector_norm", x, dtype, complex_ok=True), ord, dim, keepdim)


def _matrix_dims(A: Tensor, dim: Any) -> tuple[int, int]:
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if isinstance(dim, int) or len(dim) != 2:
        shown = dim if isinstance(dim, int) else " ".join(str(d) for d in dim)  # as PyTorch prints them
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {shown}")
    first, second = (dim_in_range(operator.index(d), A.ndim) for d in dim)
    if first == second:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    return first, second


def matrix_norm(
    A: Tensor, ord: Any = "fro", dim: tuple[int, int] = (-2, -1), keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """The matrix norm over the two dims `dim`: 'fro'; the largest (1, inf) or smallest (-1, -inf) absolute
    column (1) or row (inf) sum; the largest (2) or smallest (-2) singular value, or their sum ('nuc')."""
    check_flags("linalg_matrix_norm", keepdim=keepdim)
    if autocast_state.get() is not None and dtype is None:
        return autocast_call(matrix_norm, "matrix_norm", A, ord, dim, keepdim, dtype=dtype)
    require_tensors("linalg_matrix_norm", input=A)
    first, second = _matrix_dims(A, dim)
    A = _in_dtype("linalg.matrix_norm", A, dtype, complex_ok=True)
    if ord == "fro":
        return _pnorm(A, 2, (first, second), keepdim)
    if ord not in ("nuc", 1, -1, math.inf, -math.inf, 2, -2):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord in ("nuc", 2, -2):
        if A.dtype == np.float16:  # PyTorch's check, before its svd's
            raise RuntimeError("linalg.matrix_norm: Low precision dtypes not supported. Got Half")
        rest = [d for d in range(A.ndim) if d not in (first, second)]
        values = svdvals(permute(A, (*rest, first, second)))
        # the largest of no values is 0 here (norms are not negative), as PyTorch's: a sum over the empty dim
        empty_max = ord == 2 and not values.shape[-1]
        out = values.sum(-1) if ord == "nuc" or empty_max else values.amax(-1) if ord == 2 else values.amin(-1)
        return out.unsqueeze(min(first, second)).unsqueeze(max(first, second)) if keepdim else out
    summed, extreme = (first, second) if abs(ord) == 1 else (second, first)
    sums = A.abs().sum(summed, keepdim=keepdim)
    if not keepdim and summed < extreme:
        extreme -= 1
    if ord > 0:
        return sums.amax(extreme, keepdim=keepdim) if sums.shape[extreme] else sums.sum(extreme, keepdim=keepdim)
    return sums.amin(extreme, keepdim=keepdim)


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """A vector norm (dim an int or one dim, or no dim and a 1-D input) or a matrix norm (two dims, a 2-D input, or
    a string ord), as torch.linalg.norm chooses."""
    check_flags("linalg_norm", keepdim=keepdim)
    require_tensors("linalg_norm", input=A)
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
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


IDENTITY = Rule("CopyBackwards", ((), lambda ops, g: ops.zeros_like(g)))  # A^0 is constant in A


def matrix_power(A: Tensor, n: int) -> Tensor:
    """A multiplied by itself n times (the inverse's power for n < 0, the identity for 0), by repeated squaring
    in PyTorch's order."""
    require_tensors("linalg_matrix_power", input=A)
    if isinstance(n, bool | float):  # an int-like tensor is read as its value, as PyTorch's
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    n = operator.index(n)
    x = A._data
    if x.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{x.shape[-2]} by {x.shape[-1]} matrices")
    if n == 0:
        xp = A._device.xp
        return record(IDENTITY, xp.broadcast_to(xp.eye(x.shape[-1], dtype=x.dtype), x.shape).copy(), (A,))
    if n == 1:
        return A.clone()
    if n < 0:
        A, n = inv(A), -n
        if n == 1:
            return A
    if n in (2, 3):
        return A @ A if n == 2 else (A @ A) @ A
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = A if z is None else z @ z
        if bit:
            result = z if result is None else result @ z
    return result


check_tensor_arguments(globals(), __all__, "linalg_")
give_out_by_rules(globals(), LINALG, "linalg_")  # after the check: `out=` wraps the checked names
give_out_by_rules(globals(), _LDL_OUT, "linalg_", dict.fromkeys(_LDL_OUT))  # no derivative: no autograd check
