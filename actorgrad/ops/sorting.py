"""Sorting along a dim (sort, argsort, msort, topk, kthvalue) and its gradient rule.

Each value's gradient goes back to the element it came from, through the indices the op returns. Orders are
stable (equal elements keep their order; NaN is the largest value, as in PyTorch); indices are int64 tensors
without a gradient.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.operands import not_implemented
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import input_size, numpy_names
from actorgrad.ops.shape import single_dim
from actorgrad.tensor import Tensor, bool_, int64

__all__ = ["argsort", "kthvalue", "msort", "sort", "topk"]

# The (values, indices) pairs, named as torch.return_types names them.
SortResult = namedtuple("sort", ["values", "indices"])
TopkResult = namedtuple("topk", ["values", "indices"])
KthvalueResult = namedtuple("kthvalue", ["values", "indices"])


def _put_back(ops: Any, g: Any, indices: Any, dim: int, kept_shape: tuple, self_shape: tuple) -> Any:
    """g put at the positions its values came from; `kept_shape` is g's shape with the dim kept (size 1 where
    kthvalue dropped it), and a 0-dim input counts as one row."""
    rows = ops.put_along(ops.reshape(g, kept_shape), indices, dim, self_shape or (1,))
    return ops.reshape(rows, self_shape)


_PUT_BACK = (("indices", "dim", "kept_shape", "self_shape"), _put_back)
SORT = Rule("SortBackward0", _PUT_BACK, cost=input_size)
TOPK = Rule("TopkBackward0", _PUT_BACK, cost=input_size)
KTHVALUE = Rule("KthvalueBackward0", _PUT_BACK, cost=input_size)


def _order(op: str, input: Tensor, dim: int, descending: bool) -> tuple[Any, Any, int]:
    """The input as rows (a 0-dim tensor is one row), the stable order along `dim` (ascending, or descending with
    equal elements still in their first-to-last order), and `dim` as a non-negative int."""
    x = input._data
    xp = input._device.xp
    if x.dtype.kind == "c":  # PyTorch's texts, with their leading space
        if op == "kthvalue":
            raise not_implemented("kthvalue_cpu", x.dtype)
        raise RuntimeError(f" {'topk' if op == 'topk' else 'Sort'} does not support complex dtypes on CPU")
    d = single_dim(dim, x.ndim, op)
    rows = x.reshape(x.shape or (1,))
    if not descending:
        return rows, xp.argsort(rows, axis=d, kind="stable"), d
    # Sorting the reversed rows stably and reversing the result puts the largest (NaN) first, and equal elements
    # in their original order.
    n = rows.shape[d]
    reversed_order = xp.argsort(xp.flip(rows, d), axis=d, kind="stable")
    return rows, xp.flip(n - 1 - reversed_order, d), d


def _values(rule: Rule, input: Tensor, rows: Any, indices: Any, d: int, keep: bool = True) -> Tensor:
    """The rows' values at `indices` along dim d, shaped as the input's result (0-dim for a 0-dim input, d
    dropped unless `keep`)."""
    xp = input._device.xp
    values = xp.take_along_axis(rows, indices, axis=d)
    shape = values.shape if input.ndim else ()
    if not keep:
        shape = shape[:d] + shape[d + 1:]
    return record(rule, values.reshape(shape), (input,), indices=indices, dim=d, kept_shape=indices.shape,
                  self_shape=input.shape)


def _indices(indices: Any, values: Tensor, input: Tensor) -> Tensor:
    return Tensor(indices.astype(int64, copy=False).reshape(values.shape), device=input._device)


def sort(
    input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False, *, axis: Any = None
) -> SortResult:
    """The elements sorted along `dim` (or numpy's `axis`), and where each came from. Always stable, so `stable`
    changes nothing."""
    if axis is not None:  # numpy's name, which PyTorch takes too
        dim = axis
    check_flags("sort", descending=descending, stable=False if stable is None else stable)  # stable: bool or None
    rows, order, d = _order("sort", input, dim, descending)
    values = _values(SORT, input, rows, order, d)
    return SortResult(values, _indices(order, values, input))


def argsort(
    input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False, *, axis: Any = None
) -> Tensor:
    """The indices that sort the input along `dim` (or numpy's `axis`)."""
    if axis is not None:  # numpy's name, which PyTorch takes too
        dim = axis
    check_flags("argsort", descending=descending, stable=stable)
    _, order, _ = _order("argsort", input, dim, descending)
    return Tensor(order.astype(int64, copy=False).reshape(input.shape), device=input._device)


def msort(input: Tensor) -> Tensor:
    """The input sorted along its first dim."""
    return sort(input, 0).values


def _check_k(op: str, k: Any) -> None:
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"{op}(): argument 'k' (position 2) must be int, not {type(k).__name__}")


def topk(
    input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *, axis: Any = None
) -> TopkResult:
    """The k largest (or, with largest=False, smallest) elements along `dim` (or numpy's `axis`), in order, and
    their indices."""
    if axis is not None:  # numpy's name, which PyTorch takes too
        dim = axis
    _check_k("topk", k)
    check_flags("topk", largest=largest, sorted=sorted)
    rows, order, d = _order("topk", input, dim, largest)
    if not 0 <= k <= rows.shape[d]:
        raise RuntimeError("selected index k out of range")
    if input.dtype == bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if not input.ndim:  # PyTorch gives a 0-dim input back whole, for k=0 as for k=1
        k = 1
    picked = order[(slice(None),) * d + (slice(0, k),)]
    values = _values(TOPK, input, rows, picked, d)
    return TopkResult(values, _indices(picked, values, input))


def kthvalue(
    input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None
) -> KthvalueResult:
    """The k-th smallest element (k from 1) along `dim`, and its index."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    _check_k("kthvalue", k)
    check_flags("kthvalue", keepdim=keepdim)
    rows, order, d = _order("kthvalue", input, dim, False)
    if rows.shape[d] == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= rows.shape[d]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if input.dtype == bool_ and input.ndim:
        raise NotImplementedError("\"kthvalue_cpu\" not implemented for 'Bool'")
    picked = order[(slice(None),) * d + (slice(k - 1, k),)]
    values = _values(KTHVALUE, input, rows, picked, d, keep=keepdim or not input.ndim)
    return KthvalueResult(values, _indices(picked, values, input))


METHODS: dict[str, Any] = {"sort": sort, "argsort": argsort, "msort": msort, "topk": topk, "kthvalue": kthvalue}
