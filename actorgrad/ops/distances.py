"""cdist: the p-norm distances between the rows of two batches of row vectors, with its gradient rule for p=2
(other p go through the vector norm, whose rule covers them)."""

from __future__ import annotations

from typing import Any

from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.ops.statistics import norm
from actorgrad.tensor import Tensor

__all__ = ["cdist"]


def _ratio(ops: Any, g: Any, result: Any) -> Any:
    """g / distance, 0 where the distance is (two equal rows: PyTorch's subgradient)."""
    zero = ops.equal_mask(result, ops.zeros_like(result))
    return ops.where(result == 0, 0, g / (result + zero))


def _grad_x1(ops: Any, g: Any, self: Any, other: Any, result: Any) -> Any:
    ratio = _ratio(ops, g, result)
    return ops.sum(ratio, (-1,), keepdim=True) * self - ratio @ other


def _grad_x2(ops: Any, g: Any, self: Any, other: Any, result: Any) -> Any:
    ratio = _ratio(ops, g, result)
    return ops.swapaxes(ops.sum(ratio, (-2,), keepdim=True), -1, -2) * other - ops.swapaxes(ratio, -1, -2) @ self


_ROWS = ("self", "other", "result")
CDIST = Rule("CdistBackward0", (_ROWS, _grad_x1), (_ROWS, _grad_x2), broadcasts=True)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    """||x1[..., i, :] - x2[..., j, :]||_p for every pair of rows (batch dims broadcast)."""
    for name, t in (("X1", x1), ("X2", x2)):
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.ndim}D")
    for name, t in (("X1", x1), ("X2", x2)):
        if t._data.dtype.kind != "f":
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {SCALAR_NAMES[t._data.dtype]}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    same_device(x1, x2)
    if x1.dtype != x2.dtype:
        raise RuntimeError(f"expected scalar type {SCALAR_NAMES[x1._data.dtype]} but found "
                           f"{SCALAR_NAMES[x2._data.dtype]}")
    if p != 2:
        return norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)
    xp = x1._device.xp
    a, b = x1._data, x2._data
    difference = a[..., :, None, :] - b[..., None, :, :]
    data = xp.sqrt((difference * difference).sum(axis=-1))
    return record(CDIST, data.astype(a.dtype, copy=False), (x1, x2))


METHODS: dict[str, Any] = {}
