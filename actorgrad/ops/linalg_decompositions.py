"""Inverses, determinants and linear solves of (batches of) square matrices, with PyTorch's
gradient rules (`actorgrad.linalg` and the top-level inverse, det, logdet, slogdet).

Each rule is written with matrix products, transposes and `ops.inv` / `ops.solve` (themselves recorded ops), so a
backward with `create_graph=True` differentiates again. The gradients assume invertible matrices, as PyTorch's
fast paths do, except det's, which takes singular ones through an SVD as PyTorch's does; a singular one raises in
the other backwards.
"""

from __future__ import annotations

from collections import namedtuple
from contextlib import nullcontext
from typing import Any

import numpy as np

from actorgrad.devices.triangular import lu_factor
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.linalg_outputs import record_outputs
from actorgrad.ops.operands import SCALAR_NAMES, broadcast_error, require_tensors
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.ops.selection import where
from actorgrad.tensor import Tensor

__all__ = ["det", "inverse", "logdet", "slogdet"]

SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])


class LinAlgError(RuntimeError):
    """A matrix the factorization cannot take (singular, not positive-definite), as torch.linalg.LinAlgError."""


def _mT(ops: Any, x: Any) -> Any:
    return ops.swapaxes(x, -1, -2)


def _mH(ops: Any, x: Any) -> Any:
    """The conjugate transpose (the transpose of a real matrix)."""
    return ops.conj(_mT(ops, x))


def _as_matrices(ops: Any, g: Any) -> Any:
    """A batch of numbers (det's, logabsdet's gradient) as a batch of 1x1 matrices, to scale matrices with."""
    return ops.reshape(g, g.shape + (1, 1))


def _det_grad(ops: Any, g: Any, self: Any, result: Any) -> Any:
    """g times the cofactor matrix: det(A) A^-T, or where a determinant is zero (A^-1 does not exist) PyTorch's
    SVD form for the whole batch, det(U) det(Vh) U diag(product of the other singular values) Vh; conjugated
    (det(A) and det(U) det(Vh), and A^-H) for complex matrices."""
    if not ops.any_zero(result):
        return _as_matrices(ops, g * ops.conj(result)) * _mH(ops, ops.inv(self))
    u, s, vh = ops.svd(self)
    others = _products_of_others(ops, s)
    scale = ops.reshape(g * ops.conj(ops.det(u) * ops.det(vh)), g.shape + (1,))
    return (u * ops.reshape(others * scale, s.shape[:-1] + (1,) + s.shape[-1:])) @ vh


def _products_of_others(ops: Any, s: Any) -> Any:
    """For each singular value, the product of the others, from running products from both ends (PyTorch's
    prod_safe_zeros_backward): no division by the near-zero values of a singular matrix, also when differentiated."""
    lead = (slice(None),) * (s.ndim - 1)
    columns = [ops.index(s, lead + (slice(j, j + 1),), None) for j in range(s.shape[-1])]
    before, after = [None], [None]
    for column, reversed_column in zip(columns[:-1], columns[:0:-1]):
        before.append(column if before[-1] is None else before[-1] * column)
        after.append(reversed_column if after[-1] is None else after[-1] * reversed_column)
    ones = ops.zeros_like(columns[0]) + 1
    products = [ones if b is None and a is None else a if b is None else b if a is None else b * a
                for b, a in zip(before, after[::-1])]
    return ops.concatenate(tuple(products), -1)


def _solve_other_grad(ops: Any, g: Any, self: Any, vector: bool, other_shape: tuple) -> Any:
    grad = ops.solve(_mH(ops, self), ops.reshape(g, g.shape + (1,)) if vector else g)
    return ops.sum_to(ops.reshape(grad, grad.shape[:-1]) if vector else grad, other_shape)


def _solve_self_grad(ops: Any, g: Any, self: Any, result: Any, vector: bool, self_shape: tuple) -> Any:
    if vector:
        g, result = ops.reshape(g, g.shape + (1,)), ops.reshape(result, result.shape + (1,))
    grad = -(ops.solve(_mH(ops, self), g) @ _mH(ops, result))
    return ops.sum_to(grad, self_shape)


INV = Rule("LinalgInvExBackward0", (("result",), lambda ops, g, result: -(_mH(ops, result) @ g @ _mH(ops, result))))
DET = Rule("LinalgDetBackward0", (("self", "result"), _det_grad))


def _slogdet_grad(ops: Any, g: tuple, self: Any, result: Any) -> Any:
    """PyTorch's slogdet_backward: (g_logabsdet - i Im(conj(g_sign) sign)) A^-H. A real sign is piecewise
    constant, so its gradient adds nothing; a complex one turns with the phase of det(A)."""
    g_sign, scale = g
    if self.dtype.kind == "c" and g_sign is not None:
        turn = ops.conj(g_sign) * result  # result: the sign, output 0
        turn = (turn - ops.conj(turn)) * 0.5  # i Im(conj(g_sign) sign)
        scale = -turn if scale is None else scale - turn
    return None if scale is None else _as_matrices(ops, scale) * _mH(ops, ops.inv(self))


SLOGDET = Rule("LinalgSlogdetBackward0", (("self", "result"), _slogdet_grad))
SOLVE = Rule(
    "LinalgSolveExBackward0",
    (("self", "result", "vector", "self_shape"), _solve_self_grad),
    (("self", "vector", "other_shape"), _solve_other_grad),
)


def check_square(op: str, input: Tensor, name: str = "A", *, complex_ok: bool = False) -> Any:
    """The input's array, after PyTorch's checks for a batch of square floating-point (or, where the op's
    gradient takes them, complex) matrices."""
    x = square_matrices(op, input, name)
    if not (complex_ok and x.dtype.kind == "c"):
        check_floating(op, x)
    return x


def square_matrices(op: str, input: Tensor, name: str = "A") -> Any:
    """The input's array, after PyTorch's checks for a batch of square matrices (any dtype)."""
    x = input._data
    if x.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    if x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are {x.shape[-2]} by "
                           f"{x.shape[-1]} matrices")
    return x


# The ops whose float16 input PyTorch refuses only in its CPU kernel (the others check the dtype first).
HALF_KERNELS = {"linalg.det": "lu_cpu", "linalg.solve": "lu_cpu", "linalg.cholesky": "cholesky_cpu",
                "linalg.qr": "geqrf_cpu", "linalg.svd": "linalg_svd_cpu"}


def check_floating(op: str, x: Any) -> None:
    if x.dtype.kind == "c":
        raise RuntimeError(f"{op}: actorgrad does not support complex input here yet (linalg.inv, det, slogdet, "
                           f"solve, the decompositions, pinv and matrix_exp do); got {SCALAR_NAMES[x.dtype]}")
    if x.dtype.kind != "f":
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {SCALAR_NAMES[x.dtype]}")
    if x.dtype == np.float16:
        if op in HALF_KERNELS:
            raise NotImplementedError(f"\"{HALF_KERNELS[op]}\" not implemented for 'Half'")
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got Half")


def _zero_pivot(matrix: np.ndarray) -> int:
    """The 1-based index of the first zero diagonal element of the LU factor (partial pivoting, as LAPACK's
    getrf), or 0: only on the error path, to name what PyTorch names."""
    u = np.array(matrix, dtype=np.float64)
    n = u.shape[0]
    for k in range(n):
        pivot = k + int(np.argmax(np.abs(u[k:, k])))
        u[[k, pivot]] = u[[pivot, k]]
        if u[k, k] == 0:
            return k + 1
        u[k + 1:] -= np.outer(u[k + 1:, k] / u[k, k], u[k])
    return 0


def first_failure(info: Any) -> tuple[int, int]:
    """The batch index and the info value of the first matrix whose info is not zero, or (-1, 0)."""
    host = np.asarray(info.get() if hasattr(info, "get") else info).reshape(-1)
    failed = np.flatnonzero(host)
    return (int(failed[0]), int(host[failed[0]])) if failed.size else (-1, 0)


def batch_prefix(x: Any, index: int) -> str:
    """How PyTorch's errors name a failing matrix of a batch."""
    return f"(Batch element {index}): " if x.ndim > 2 else ""


def host_matrices(x: Any) -> np.ndarray:
    """A batch of matrices (a GPU array copied over) as one batch dim on the host, where errors find the failing
    one."""
    return np.asarray(x.get() if hasattr(x, "get") else x).reshape((-1,) + x.shape[-2:])


def _singular(op: str, x: Any) -> LinAlgError:
    """PyTorch's error for a singular matrix: the batch element and the LU factor's zero diagonal element."""
    host = host_matrices(x)
    for i, matrix in enumerate(host):
        k = _zero_pivot(matrix)
        if k:
            return LinAlgError(f"{op}: {batch_prefix(x, i)}The diagonal element {k} is zero, the inversion could "
                               "not be completed because the input matrix is singular.")
    return LinAlgError(f"{op}: The inversion could not be completed because the input matrix is singular.")


def reporting(xp: Any) -> Any:
    """A context in which `xp.linalg` raises LinAlgError for a singular or not positive-definite matrix: numpy's
    always does, CuPy's only inside cupyx.errstate(linalg="raise") (by default it returns what the factorization
    left)."""
    if xp is np:
        return nullcontext()
    import cupyx

    return cupyx.errstate(linalg="raise")


def _inverted(op: str, input: Tensor) -> Any:
    x = input._data
    xp = input._device.xp
    try:
        with reporting(xp):
            return xp.linalg.inv(x)
    except np.linalg.LinAlgError:
        raise _singular(op, x) from None


def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix."""
    require_tensors("linalg_inv", A=A)
    return inverse_naming(A, "linalg.inv")


def inverse_naming(A: Tensor, singular_name: str) -> Tensor:
    """inv of a tensor, whose error for a singular matrix names `singular_name` (tensorinv's says "inv", as
    PyTorch's)."""
    check_square("linalg.inv", A, complex_ok=True)
    return record(INV, _inverted(singular_name, A), (A,))


def inverse(input: Tensor) -> Tensor:
    """torch.inverse: linalg.inv."""
    require_tensors("inverse", input=input)
    return inv(input)


def linalg_det(A: Tensor) -> Tensor:
    """The determinant of each square matrix."""
    require_tensors("linalg_det", A=A)
    x = check_square("linalg.det", A, complex_ok=True)
    return record(DET, A._device.xp.linalg.det(x).astype(x.dtype, copy=False), (A,))


def det(input: Tensor) -> Tensor:
    """torch.det: linalg.det, whose errors name it differently."""
    require_tensors("det", input=input)
    return linalg_det(input)


def linalg_slogdet(A: Tensor) -> SlogdetResult:
    """The sign and the log of the absolute value of each determinant: (0, -inf) for a singular matrix."""
    require_tensors("linalg_slogdet", A=A)
    x = check_square("linalg.slogdet", A, complex_ok=True)
    sign, logabsdet = A._device.xp.linalg.slogdet(x)
    outputs = (sign.astype(x.dtype, copy=False), logabsdet.astype(x.real.dtype, copy=False))
    return SlogdetResult(*record_outputs(SLOGDET, outputs, (A,)))


def slogdet(input: Tensor) -> SlogdetResult:
    """torch.slogdet: linalg.slogdet, whose errors name it differently."""
    require_tensors("slogdet", input=input)
    return linalg_slogdet(input)


def logdet(input: Tensor) -> Tensor:
    """log(det): nan for a negative determinant, -inf for a singular matrix, as PyTorch's (a where over slogdet);
    for a complex matrix the complex log(sign) + logabsdet, recorded as those ops, as PyTorch's."""
    require_tensors("logdet", input=input)
    x = check_square("logdet", input, complex_ok=True)
    sign, logabsdet = linalg_slogdet(input)
    if x.dtype.kind == "c":
        return sign.log() + logabsdet
    return where(sign < 0, np.nan, logabsdet)


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with A X = B (batch dims broadcast); B may be a vector, or a batch of vectors (B.ndim == A.ndim - 1 with
    A's leading shape), as in PyTorch. left=False solves X A = B."""
    check_flags("linalg_solve", left=left)
    require_tensors("linalg_solve", A=A, B=B)
    if B.ndim == 0:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    if not left:
        check_right_solve(A, B)
        return solve(A.mT, B.mT).mT
    return solve_matrices(A, B, vector=is_vector(A, B))


def is_vector(A: Tensor, B: Tensor) -> bool:
    """Whether solve reads B as a vector (a column): 1-D, or a batch of vectors with A's shape less its last dim."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


def check_right_solve(A: Tensor, B: Tensor) -> None:
    """PyTorch's check for X A = B (left=False): a vector B (1-D, or A's shape less its last dim) is read as a
    column, which that equation cannot take."""
    n = check_solve_operands(A, B).shape[-1]
    vector = is_vector(A, B)
    if vector and n == 1:  # a column that fits the equation: PyTorch refuses the vector itself
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not supported for left=False. "
                           "In this case linalg.solve is equivalent to B / A.squeeze(-1)")
    if vector or B.shape[-1] != n:
        rows, cols = (B.shape[-1], 1) if vector else (B.shape[-2], B.shape[-1])
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation XA = B ({n}x{n} and "
                           f"{rows}x{cols})")


def check_solve_operands(A: Tensor, B: Tensor) -> Any:
    """A's array after PyTorch's first checks of solve's operands, in its order: a floating A, B of its dtype, a
    batch of square matrices (float16 is refused only after the shapes)."""
    a = A._data
    if a.dtype.kind not in "fc":
        check_floating("linalg.solve", a)
    if B.dtype != a.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{SCALAR_NAMES[a.dtype]} and B of type {SCALAR_NAMES[B.dtype]} instead")
    return square_matrices("linalg.solve", A)


def solve_operands(A: Tensor, B: Tensor, vector: bool) -> tuple[Any, Any]:
    """A's array and B's as a batch of matrices (a vector as a column), after PyTorch's checks for solve."""
    a = check_solve_operands(A, B)
    b = B._data
    same_device(A, B)
    matrix = b[..., None] if vector else b
    if matrix.ndim < 2 or matrix.shape[-2] != a.shape[-1]:
        rows = matrix.shape[-2] if matrix.ndim > 1 else 1
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({a.shape[-2]}x{a.shape[-1]} and {rows}x{matrix.shape[-1]})")
    try:
        np.broadcast_shapes(a.shape[:-2], matrix.shape[:-2])
    except ValueError:
        raise broadcast_error("linalg.solve", matrix.shape[:-2], a.shape[:-2]) from None
    if a.dtype == np.float16:  # refused after the shapes, by PyTorch's kernel
        check_floating("linalg.solve", a)
    return a, matrix


def solve_matrices(A: Tensor, B: Tensor, vector: bool = False) -> Tensor:
    """solve with B a batch of matrices, or (`vector`) of vectors."""
    a, matrix = solve_operands(A, B, vector)
    b = B._data
    xp = A._device.xp
    try:
        with reporting(xp):
            data = solved(xp, a, matrix)
    except np.linalg.LinAlgError:
        raise _singular_solve(xp, a) from None
    if vector:
        data = data[..., 0]
    return record(SOLVE, data, (A, B), vector=vector, self_shape=a.shape, other_shape=b.shape)


def _singular_solve(xp: Any, a: Any) -> LinAlgError:
    """PyTorch's error, naming the first singular matrix of A's own batch (before broadcasting with B)."""
    index, _ = first_failure(lu_factor(xp, a)[2])
    prefix = batch_prefix(a, index) if index >= 0 else ""
    return LinAlgError(f"torch.linalg.solve: {prefix}The solver failed because the input matrix is singular.")


def solved(xp: Any, a: Any, b: Any) -> Any:
    """The solution of a x = b for a batch of matrices b, the batch dims broadcast (CuPy's solve takes equal ones)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return xp.linalg.solve(xp.broadcast_to(a, batch + a.shape[-2:]), xp.broadcast_to(b, batch + b.shape[-2:]))


METHODS: dict[str, Any] = {"inverse": inverse, "det": det, "logdet": logdet, "slogdet": slogdet}
