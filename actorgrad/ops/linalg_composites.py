"""linalg's ops built from other recorded ops, as PyTorch builds most of them: cross, vecdot, multi_dot, diagonal,
vander, cond, tensorinv, tensorsolve and householder_product. Their gradients (and higher ones) are those of their
parts; householder_product records its reflections one by one where PyTorch has one fused node."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops import linalg_decompositions as decompositions
from actorgrad.ops.correlation import cross as _cross
from actorgrad.ops.diagonals import diagonal as _diagonal
from actorgrad.ops.joining import cat
from actorgrad.ops.linalg import TYPE_META_NAMES, matmul, vector_sizes_error
from actorgrad.ops.linalg_forms import inv_ex
from actorgrad.ops.linalg_spectral import svdvals
from actorgrad.ops.operands import SCALAR_NAMES, require_tensors
from actorgrad.ops.scans import cumprod
from actorgrad.ops.selection import where
from actorgrad.ops.shape import broadcast_to, to_dtype
from actorgrad.tensor import Tensor, int64

__all__: list[str] = []

# PyTorch's C++ names of dtypes, as multi_dot's error prints them


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along `dim` (the last by default), other dims broadcast."""
    if autocast_state.get() is not None:
        return autocast_call(cross, "cross", input, other, dim=dim)
    require_tensors("linalg_cross", input=input, other=other)
    return _cross(input, other, dim)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of x and y along `dim`, other dims broadcast: (conj(x) * y).sum(dim), recorded as its parts
    (conj is a no-op for real x)."""
    if autocast_state.get() is not None:
        return autocast_call(vecdot, "vecdot", x, y, dim=dim)
    require_tensors("linalg_vecdot", x=x, y=y)
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                           f"{SCALAR_NAMES[x.dtype]}")
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{SCALAR_NAMES[x.dtype]} and y of type {SCALAR_NAMES[y.dtype]} instead")
    if x.ndim == y.ndim == 1 and x.shape != y.shape:  # two vectors go to PyTorch's dot, which does not broadcast
        raise vector_sizes_error(x.shape, y.shape)
    return (x.conj() * y).sum(dim)


def _chain_order(sizes: list[int]) -> list[list[int]]:
    """split[i][j]: where the cheapest product of matrices i..j splits, for matrices of shapes
    (sizes[i], sizes[i + 1]) (the textbook matrix-chain dynamic program on multiply-add counts)."""
    n = len(sizes) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min(
                (cost[i][k] + cost[k + 1][j] + sizes[i] * sizes[k + 1] * sizes[j + 1], k) for k in range(i, j))
    return split


def mixed_dtypes(first: Tensor, index: int, other: Tensor) -> RuntimeError:
    """multi_dot's error (chain_matmul's too) for a tensor of another dtype than the first."""
    return RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                        f"{TYPE_META_NAMES[first.dtype]} and tensor {index} {TYPE_META_NAMES[other.dtype]}")


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """The product of two or more matrices in the order that costs fewest multiplications; the first may be a
    row vector and the last a column vector (1-D), whose dims the result then drops."""
    if autocast_state.get() is not None:
        return autocast_call(multi_dot, "multi_dot", tensors)
    if not isinstance(tensors, list | tuple):
        raise TypeError(f"linalg_multi_dot(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"linalg_multi_dot(): argument 'tensors' must be tuple of Tensors, not "
                            f"{type(t).__name__}")
        where_ = "the first tensor" if i == 0 else "the last tensor" if i == n - 1 else f"tensor {i}"
        if i in (0, n - 1) and t.ndim not in (1, 2):
            raise RuntimeError(f"multi_dot(): {where_} must be 1D or 2D but got {t.ndim}D")
        if 0 < i < n - 1 and t.ndim != 2:
            raise RuntimeError(f"multi_dot(): {where_} must be 2D but got {t.ndim}D")
        if t.dtype != tensors[0].dtype:
            raise mixed_dtypes(tensors[0], i, t)
    matrices = [t.unsqueeze(0) if i == 0 and t.ndim == 1 else t.unsqueeze(1) if t.ndim == 1 else t
                for i, t in enumerate(tensors)]
    for i in range(n - 1):
        if matrices[i].shape[1] != matrices[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                               f"{list(tensors[i + 1].shape)} cannot be multiplied")
    split = _chain_order([matrices[0].shape[0]] + [m.shape[1] for m in matrices])

    def product(i: int, j: int) -> Tensor:
        return matrices[i] if i == j else matmul(product(i, split[i][j]), product(split[i][j] + 1, j))

    out = product(0, n - 1)
    if tensors[0].ndim == 1:
        out = out.squeeze(0)
    if tensors[-1].ndim == 1:
        out = out.squeeze(-1)
    return out


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """torch.diagonal with the last two dims as its defaults: the diagonal of each matrix of a batch (a view)."""
    require_tensors("linalg_diagonal", A=A)
    return _diagonal(A, offset, dim1, dim2)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """The Vandermonde matrices x^0 .. x^(N-1) of the vectors along x's last dim (N defaults to their length), in
    a new last dim; integer x gives int64, as in PyTorch (floating and complex x keep their dtype)."""
    require_tensors("linalg_vander", x=x)
    if x.dtype in (np.bool_, np.float16):
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got "
                           f"{SCALAR_NAMES[x.dtype]}")
    n = (x.shape[-1] if x.ndim else 1) if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    if x.dtype.kind not in "fc":
        x = to_dtype(x, int64)
    column = x.unsqueeze(-1)
    powers = cumprod(broadcast_to(column, column.shape[:-1] + (n - 1,)), -1)
    return cat([x.new_ones(column.shape), powers], -1)


CONDITION_ORDERS = ("fro", "nuc", math.inf, -math.inf, 1, -1)


def cond(A: Tensor, p: Any = None) -> Tensor:
    """The condition number of each (real or complex) matrix in the norm p, a real number: for p None, 2 or -2 a
    ratio of its extreme singular values (any shape), else norm(A) * norm(A^-1) (square matrices; inf for a
    singular one)."""
    require_tensors("linalg_cond", input=A)
    if p is not None and p not in (2, -2) and p not in CONDITION_ORDERS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if 0 in A.shape[-2:]:  # PyTorch's 0 for empty matrices; only the orders fro and nuc ask for square ones
        if p in ("fro", "nuc"):
            decompositions.square_matrices(f"linalg.cond(ord={p})", A)
        return (A.real if A.dtype.kind == "c" else A).new_zeros(A.shape[:-2])
    if p in (None, 2, -2):
        s = svdvals(A)
        largest, smallest = s[..., 0], s[..., -1]
        return smallest / largest if p == -2 else largest / smallest
    decompositions.square_matrices(f"linalg.cond(ord={p})", A)
    from actorgrad.linalg import matrix_norm  # the namespace module imports this one

    inverse, info = inv_ex(A)
    singular = info > 0
    # a singular matrix's inverse holds infinities, which an SVD (the norm 'nuc') refuses: its zeros stand in
    product = matrix_norm(A, p) * matrix_norm(where(singular[..., None, None], 0, inverse), p)
    return where(singular, math.inf, product)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of A read as a square matrix of its first `ind` dims by its others, in shape
    A.shape[ind:] + A.shape[:ind], so that tensordot(tensorinv(A), A, ind) is the identity."""
    require_tensors("linalg_tensorinv", input=A)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, columns = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != columns:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {columns} != {rows}")
    return decompositions.inverse_naming(A.reshape(rows, columns), "inv").reshape((*A.shape[ind:], *A.shape[:ind]))


def tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B: A read as a matrix of its first B.ndim dims by its others (`dims`
    moved to the end first)."""
    require_tensors("linalg_tensorsolve", input=A, other=B)
    if dims is not None:
        moved = [d % A.ndim for d in dims]
        A = A.permute((*[d for d in range(A.ndim) if d not in moved], *moved))
    columns = math.prod(A.shape[B.ndim:])
    if columns != B.numel():  # PyTorch compares with B's size, whatever its message says
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {columns} != {B.numel()}")
    return decompositions.solve(A.reshape(columns, columns), B.reshape(columns)).reshape(A.shape[B.ndim:])


def _check_householder(A: Tensor, tau: Tensor) -> None:
    op = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.ndim and A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{op}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {A.ndim}")
    if tau.shape[:-1] != A.shape[:-2]:
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if tau.dtype != A.dtype:
        raise RuntimeError(f"{op}: tau dtype {SCALAR_NAMES[tau.dtype]} does not match input dtype "
                           f"{SCALAR_NAMES[A.dtype]}")
    if A.dtype not in (np.float32, np.float64, np.complex64, np.complex128):  # LAPACK's orgqr/ungqr types
        raise NotImplementedError(f"\"orgqr_cpu\" not implemented for '{SCALAR_NAMES[A.dtype]}'")


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H with v_i column i of A below the diagonal
    and 1 on it (LAPACK's orgqr, ungqr for complex A: Q from geqrf's reflectors), for A of shape (*, m, n) and
    tau (*, k)."""
    require_tensors("linalg_householder_product", input=A, tau=tau)
    _check_householder(A, tau)
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    xp = A._device.xp
    identity = Tensor(xp.eye(m, dtype=A._data.dtype), device=A._device)
    vectors = A[..., :k].tril(-1) + identity[:, :k]
    q = broadcast_to(identity, A.shape[:-2] + (m, m))
    if not k:  # no reflection: still recorded on A and tau (zero gradients), as PyTorch's one node is
        q = q - vectors @ (tau.unsqueeze(-1) * vectors.mH)
    for i in range(k):
        v = vectors[..., i : i + 1]
        q = q - (q @ v) * tau[..., i, None, None] @ v.mH
    return q[..., :n]


METHODS: dict[str, Any] = {}
