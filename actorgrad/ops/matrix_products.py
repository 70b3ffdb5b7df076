"""More matrix products: addr and addbmm (beta * input + alpha * product, through contraction's einsum rule),
chain_matmul and torch.matrix_power, the older top-level names of linalg's products."""

from __future__ import annotations

import functools
from typing import Any

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.contraction import _add_product, _add_product_rule, _dtype_name
from actorgrad.ops.linalg import matmul
from actorgrad.ops.linalg_composites import mixed_dtypes
from actorgrad.ops.operands import promote_types
from actorgrad.ops.shape import to_dtype
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

__all__ = ["addbmm", "addr", "chain_matmul", "matrix_power"]

ADDR = _add_product_rule("AddrBackward0")
ADDBMM = _add_product_rule("AddbmmBackward0")


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2), input broadcasting to the product; mixed dtypes promote."""
    if autocast_state.get() is not None:
        return autocast_call(addr, "addr", input, vec1, vec2, beta=beta, alpha=alpha)
    for name, t in (("vec1", vec1), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {t.ndim}-D")
    dtype = functools.reduce(promote_types, (input._data.dtype, vec1._data.dtype, vec2._data.dtype))
    for name, value in (("beta", beta), ("alpha", alpha)):
        if dtype.kind in "iub" and isinstance(value, float):
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")
        if dtype.kind != "b" and isinstance(value, bool):
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    input, vec1, vec2 = (t if t.dtype == dtype else to_dtype(t, dtype) for t in (input, vec1, vec2))
    return _add_product(ADDR, ("i", "j", "ij"), input, vec1, vec2, beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * the sum over the batch of batch1[b] @ batch2[b]."""
    if autocast_state.get() is not None:
        return autocast_call(addbmm, "addbmm", input, batch1, batch2, beta=beta, alpha=alpha)
    for name, t in (("batch1", batch1), ("batch2", batch2)):
        if t.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {batch1.shape[0]} and "
                           f"{batch2.shape[0]}")
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x{batch1.shape[2]} and "
                           f"{batch2.shape[1]}x{batch2.shape[2]})")
    for t in (input, batch1):
        if t.dtype != batch2.dtype:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got {_dtype_name(t)} and "
                               f"{_dtype_name(batch2)}")
    return _add_product(ADDBMM, ("bij", "bjk", "ik"), input, batch1, batch2, beta, alpha)


def chain_matmul(*matrices: Tensor) -> Tensor:
    """The product of the matrices, left to right (deprecated in PyTorch for linalg.multi_dot, and warned so)."""
    if autocast_state.get() is not None:
        return autocast_call(chain_matmul, "chain_matmul", *matrices)
    warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
         "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
         "parameters.", UserWarning)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        if not isinstance(t, Tensor):
            raise TypeError(f"chain_matmul(): argument 'matrices' must be tuple of Tensors, not {type(t).__name__}")
        if t.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {t.ndim}, expected 2 instead.")
    for k, t in enumerate(matrices):
        if t.dtype != matrices[0].dtype:
            raise mixed_dtypes(matrices[0], k, t)
    result = matrices[0]
    for k, t in enumerate(matrices[1:], 1):
        if result.shape[1] != t.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {k - 1} and {k} with shapes {list(matrices[k - 1].shape)} and "
                               f"{list(t.shape)} cannot be multiplied")
        result = matmul(result, t)
    return result.clone() if len(matrices) == 1 else result


def matrix_power(input: Tensor, n: int) -> Tensor:
    """Alias of linalg.matrix_power."""
    from actorgrad.linalg import matrix_power as linalg_matrix_power  # linalg imports the ops package

    return linalg_matrix_power(input, n)


METHODS: dict[str, Any] = {"addbmm": addbmm, "addr": addr, "matrix_power": matrix_power}
