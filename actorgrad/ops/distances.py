"""cdist: the p-norm distances between the rows of two batches of row vectors, with its gradient rule for p=2
(p=inf is spelled with Tensor ops for PyTorch's gradient at ties; other p go through the vector norm); pdist, the
distances between the rows of one matrix (its rule PyTorch's, on the rows' differences); and cosine_similarity and
pairwise_distance, composed of Tensor ops as PyTorch's."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.operands import SCALAR_NAMES, broadcast_error, require_tensors, result_type
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.ops.selection import clamp
from actorgrad.ops.shape import single_dim
from actorgrad.ops.statistics import norm
from actorgrad.tensor import Tensor

__all__ = ["cdist", "cosine_similarity", "pairwise_distance", "pdist"]


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


_COMPUTE_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def _check_batches(a: tuple, b: tuple) -> None:
    """The batch dims broadcast, with PyTorch's error where they do not."""
    for k in range(1, min(len(a), len(b)) + 1):
        if a[-k] != b[-k] and 1 not in (a[-k], b[-k]):
            raise RuntimeError(f"The size of tensor a ({a[-k]}) must match the size of tensor b ({b[-k]}) at "
                               f"non-singleton dimension {max(len(a), len(b)) - k}")


def _chebyshev(x1: Tensor, x2: Tensor) -> Tensor:
    """The inf-norm distances, whose gradient reaches every coordinate that ties for the largest |difference| in
    full, as PyTorch's cdist backward does (amax would share it out): the sum over the tied coordinates, less the
    extra copies of the maximum as a constant."""
    size = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    top = size.detach().amax(-1, keepdim=True)
    ties = size.detach() == top
    return (size * ties).sum(-1) - (ties.sum(-1) - 1) * top.squeeze(-1)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """||x1[..., i, :] - x2[..., j, :]||_p for every pair of rows (batch dims broadcast)."""
    if autocast_state.get() is not None:
        return autocast_call(cdist, "cdist", x1, x2, p, compute_mode)
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    require_tensors("cdist", x1=x1, x2=x2)
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
    _check_batches(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    if p == float("inf") and x1.shape[-1]:
        return _chebyshev(x1, x2)
    if p != 2 and x1.shape[-1]:  # no columns: every distance is 0, as the p=2 path gives
        return norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)
    xp = x1._device.xp
    a, b = x1._data, x2._data
    difference = a[..., :, None, :] - b[..., None, :, :]
    data = xp.sqrt((difference * difference).sum(axis=-1))
    return record(CDIST, data.astype(a.dtype, copy=False), (x1, x2))


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 / |x1| * x2 / |x2|) over `dim`, the inputs broadcast first, each norm kept at eps or more."""
    if autocast_state.get() is not None:
        return autocast_call(cosine_similarity, "cosine_similarity", x1, x2, dim, eps)
    dtype = result_type(x1, x2)
    if dtype.kind != "f":
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {SCALAR_NAMES[dtype]}")
    try:
        shape = np.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise broadcast_error("cosine_similarity", x1.shape, x2.shape) from None
    dim = single_dim(dim, len(shape), "cosine_similarity")
    unit = []
    for x in (x1, x2):
        x = x.to(dtype).expand(shape)
        size = norm(x, 2, dim, keepdim=True)
        # PyTorch clamps the norm in place under no_grad: the value is clamped, its gradient passes unchanged.
        floor = clamp(size.detach(), eps) - size.detach()
        unit.append(x / (size + floor))
    return (unit[0] * unit[1]).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The p-norm of x1 - x2 + eps over the last dim of the broadcast inputs."""
    return norm(x1 - x2 + eps, p, max(x1.ndim, x2.ndim) - 1, keepdim=keepdim)



def _pdist_grad(ops: Any, g: Any, self: Any, result: Any, p: float) -> Any:
    """PyTorch's _pdist_backward for each pair's difference d: g sign(d) |d|^(p-1) / dist^(p-1), 0 where the
    distance is 0 (two equal rows) or, for p < 1, where a coordinate's difference is."""
    column = (*result.shape, 1)
    dist, g = ops.reshape(result, column), ops.reshape(g, column)
    sign = ops.sign(self)
    if p == 0:
        return ops.zeros_like(self)
    if p == 1:
        return sign * g
    if p == float("inf"):  # every coordinate that reaches the maximum gets the whole gradient
        return ops.where(self * sign == dist, sign * g, 0)
    # A zero distance has zero differences, whose terms the sign zeroes: dividing by 1 there instead is exact.
    nonzero = ops.where(dist == 0, 1, dist)
    if p == 2:
        return self / nonzero * g
    size = self * sign
    size = ops.where(size == 0, 1, size)  # a zero difference has sign 0: its term is 0 whatever p
    return sign * (size / nonzero) ** (p - 1) * g


PDIST = Rule("PdistBackward0", (("self", "result", "p"), _pdist_grad))


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """||input[i] - input[j]||_p for every pair of rows i < j, in row-major order of the pairs."""
    if autocast_state.get() is not None:
        return autocast_call(pdist, "pdist", input, p)
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if input.dtype.kind != "f":
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    first, second = np.triu_indices(input.shape[0], 1)
    difference = input.index_select(0, first) - input.index_select(0, second)
    d = difference._data
    xp = input._device.xp
    size = xp.abs(d)
    if p == 0:
        data = (d != 0).sum(-1).astype(d.dtype)
    elif p == float("inf"):
        data = size.max(-1, initial=0)
    elif p == 2:
        data = xp.sqrt((d * d).sum(-1))
    else:
        data = (size ** p).sum(-1) ** (1 / p)
    return record(PDIST, data.astype(d.dtype, copy=False), (difference,), p=float(p))

METHODS: dict[str, Any] = {}
