"""Finding elements: masked_select (differentiable), and nonzero, argwhere, count_nonzero, isin, unique, bincount,
searchsorted and bucketize, whose results are indices, counts or masks without a gradient."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.ops.arithmetic import _no_derivative
from actorgrad.ops.flag_arguments import check_flags, not_bool
from actorgrad.ops.operands import (
    SCALAR_NAMES,
    data_as,
    not_implemented,
    number_array,
    refuse_complex,
    result_type,
)
from actorgrad.ops.record import Rule, common_device, record, same_device
from actorgrad.ops.reductions import normalize_dims, reduces_all
from actorgrad.tensor import Tensor, bool_, float32, float64, int32, int64

__all__ = [
    "argwhere", "bincount", "bucketize", "count_nonzero", "isin", "masked_select", "nonzero", "searchsorted",
    "unique",
]

# masked_select's gradient: g written back where the mask held, over the broadcast shape, summed back to the
# input's shape (the node's own reduction would miss an input whose shape is that of the 1-D result).
MASKED_SELECT = Rule(
    "MaskedSelectBackward0",
    (("shape", "advanced", "input_shape"), lambda ops, g, shape, advanced, input_shape: ops.sum_to(
        ops.index_put_zeros(g, shape, (), advanced), input_shape)),
)


def _broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The shape a and b broadcast to, with PyTorch's error naming the first clashing dim from the right."""
    ndim = max(len(a), len(b))
    a, b = (1,) * (ndim - len(a)) + a, (1,) * (ndim - len(b)) + b
    for d in reversed(range(ndim)):
        if a[d] != b[d] and 1 not in (a[d], b[d]):
            raise RuntimeError(f"The size of tensor a ({a[d]}) must match the size of tensor b ({b[d]}) at "
                               f"non-singleton dimension {d}")
    return tuple(max(m, n) if 0 not in (m, n) else 0 for m, n in zip(a, b))


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of input where the (broadcasting) bool mask holds, as a 1-D tensor."""
    if mask.dtype != bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    device = common_device((input, mask))
    xp = device.xp
    x, m = input._data, mask._data
    shape = _broadcast_shape(m.shape, x.shape)
    if not shape:  # a 0-dim pair selects as one element, as in PyTorch (nonzero refuses 0-dim arrays)
        shape = (1,)
    advanced = xp.nonzero(xp.broadcast_to(m, shape))
    return record(MASKED_SELECT, xp.broadcast_to(x, shape)[advanced], (input,), shape=shape, advanced=advanced,
                  input_shape=x.shape)


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """The indices of the nonzero elements: an (n, ndim) int64 tensor, or with as_tuple one 1-D tensor per dim
    (a 0-dim input counts as 1-D there, as in PyTorch)."""
    xp = input._device.xp
    x = input._data
    if as_tuple is not False and as_tuple is not True:
        raise not_bool("nonzero", "as_tuple", as_tuple)
    if as_tuple:
        indices = xp.nonzero(x.reshape(x.shape or (1,)))
        return tuple(Tensor(i.astype(int64, copy=False), device=input._device) for i in indices)
    return Tensor(xp.argwhere(x).astype(int64, copy=False), device=input._device)


def argwhere(input: Tensor) -> Tensor:
    """nonzero(input): the (n, ndim) indices of the nonzero elements."""
    return nonzero(input)


def count_nonzero(input: Tensor, dim: int | tuple[int, ...] | None = None, *, axis: Any = None) -> Tensor:
    """The number of nonzero elements, in all (dim None or an empty list, as PyTorch's) or along `dim`; numpy's
    name `axis` stands for dim, as in PyTorch."""
    if axis is not None:
        dim = axis
    x = input._data
    dims = None if reduces_all(dim) else normalize_dims(dim, x.ndim, "count_nonzero")
    counts = (x != 0).sum(axis=dims if x.ndim else None, dtype=int64)
    return Tensor(input._device.xp.asarray(counts), device=input._device)


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each of `elements` is among `test_elements` (either may be a Python number), compared in their
    promoted dtype as `==` compares them, so a number meets a tensor as it would there."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): expected at least one of elements and test_elements to be a Tensor")
    check_flags("isin", assume_unique=assume_unique, invert=invert)
    for value in (elements, test_elements):  # PyTorch checks each one's own dtype, a number's as a 0-d tensor's
        dtype = value._data.dtype if isinstance(value, Tensor) else np.asarray(value).dtype
        if dtype.kind in "bc":
            raise RuntimeError(f"Unsupported input type encountered for isin(): {SCALAR_NAMES[dtype]}")
    tensors = tuple(v for v in (elements, test_elements) if isinstance(v, Tensor))
    where = common_device(tensors)
    dtype = result_type(elements, test_elements)
    a, b = (data_as(v, dtype) if isinstance(v, Tensor) else where.xp.asarray(number_array(v, dtype))
            for v in (elements, test_elements))
    return Tensor(where.xp.isin(a, b, assume_unique=assume_unique, invert=invert), device=where)


def refused_derivative(op: str) -> Any:
    """A formula that raises PyTorch's error for an op it records a node for but has no derivative of."""

    def formula(ops: Any, g: Any) -> Any:
        raise NotImplementedError(f"the derivative for '{op}' is not implemented.")

    return formula


# As PyTorch, unique's values record a node (they require grad) whose backward raises.
UNIQUE = Rule("Unique2Backward0", ((), refused_derivative("_unique2")))
UNIQUE_DIM = Rule("UniqueDimBackward0", ((), refused_derivative("unique_dim")))
BINCOUNT = _no_derivative("bincount")  # weights that require grad give counts that do, as PyTorch's


def unique(
    input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
    dim: int | None = None,
) -> Any:
    """The distinct elements (or, along `dim`, slices), sorted (on the cpu PyTorch sorts whatever `sorted` says);
    with return_inverse, where each element went, with return_counts, how often each occurs."""
    check_flags("_unique2" if dim is None else "unique_dim", sorted=sorted, return_inverse=return_inverse,
                return_counts=return_counts)
    xp = input._device.xp
    x = input._data
    refuse_complex(x.dtype, "unique" if dim is None else "unique_dim")
    if dim is not None and x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    axis = None if dim is None else normalize_dims(dim, x.ndim, "unique")[0]
    if axis is not None and x.size == 0:
        if x.shape.count(0) > 1:
            raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot be applied ")
        if x.shape[axis] != 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    if axis is None:
        # Each NaN is distinct, as in PyTorch; return_index makes the sort stable, so NaNs keep their order.
        values, _, inverse, counts = xp.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                               equal_nan=False)
    else:
        values, inverse, counts = _unique_slices(xp, x, axis)
    where = input._device
    out = [record(UNIQUE if axis is None else UNIQUE_DIM, values, (input,))]
    if return_inverse:
        shape = x.shape if axis is None else (x.shape[axis],)
        out.append(Tensor(inverse.reshape(shape).astype(int64, copy=False), device=where))
    if return_counts:
        out.append(Tensor(counts.astype(int64, copy=False), device=where))
    return out[0] if len(out) == 1 else tuple(out)


def _unique_slices(xp: Any, x: Any, axis: int) -> tuple[Any, Any, Any]:
    """The distinct slices of x along axis in lexicographic order (NaN last; slices holding NaN all distinct), where
    each slice went, and how often each occurs. CuPy's own unique(axis=) orders slices by the sign of the first
    nonzero entry of their difference (cupy/_manipulation/add_remove.py, unique), which wraps for ints and is NaN
    for inf - inf; its lexsort is a stable sort per key with NaN last, as numpy's (cupy/cuda/cupy_thrust.cu,
    _lexsort and real_less)."""
    moved = xp.moveaxis(x, axis, 0)
    n = moved.shape[0]
    rows = moved.reshape(n, math.prod(moved.shape[1:]))
    order = xp.lexsort(rows.T[::-1]) if n else xp.zeros(0, int64)  # the last key is the primary one
    ranked = rows[order]
    first = xp.ones(n, bool_)
    first[1:] = (ranked[1:] != ranked[:-1]).any(axis=1)
    group = xp.cumsum(first, dtype=int64) - 1
    inverse = xp.empty(n, int64)
    inverse[order] = group
    counts = xp.bincount(group) if n else xp.zeros(0, int64)
    distinct = ranked[first]
    values = xp.moveaxis(distinct.reshape(distinct.shape[0], *moved.shape[1:]), 0, axis)
    return values, inverse, counts


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each value 0, 1, ... occurs in a 1-D tensor of non-negative integers (weighted: the sum of their
    weights, float32 weights in float32, all others (float16 too, as in PyTorch) in float64)."""
    x = input._data
    if x.dtype.kind not in "iu":
        raise NotImplementedError(f'"bincount_cpu" not implemented for \'{SCALAR_NAMES.get(x.dtype, x.dtype)}\'')
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.ndim != 1 or (x.size and int(x.min()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    xp = input._device.xp
    if weights is not None and x.size and (weights.ndim != 1 or weights.shape[0] != x.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if weights is None or not x.size:  # an empty input gives int64 zeros, weights or not, as in PyTorch
        return Tensor(xp.bincount(x, minlength=minlength).astype(int64, copy=False), device=input._device)
    same_device(input, weights)
    w = weights._data
    dtype = float32 if w.dtype == float32 else float64
    counts = xp.bincount(x, weights=w.astype(float64, copy=False), minlength=minlength)
    return record(BINCOUNT, counts.astype(dtype, copy=False), (input, weights))


def _side(op: str, right: bool, side: str | None) -> str:
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise RuntimeError(f"{op}(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise RuntimeError(f"{op}(): side and right can't be set to opposites, got side of left while right was True")
    return side


def searchsorted(
    sorted_sequence: Tensor, input: Any, *, out_int32: bool = False, right: bool = False, side: str | None = None,
    sorter: Tensor | None = None,
) -> Tensor:
    """Where each of `input` would go in `sorted_sequence` to keep it sorted (its innermost dim: a 1-D sequence
    serves every value, an N-D one row by row with input's matching rows). Both are compared in their promoted
    dtype, as PyTorch's: a Python number is cast to it as a number meeting a tensor is (`0.1` meets float32
    boundaries as float32, `-1` uint8 ones as 255)."""
    check_flags("searchsorted", out_int32=out_int32, right=right)
    where = sorted_sequence._device
    xp = where.xp
    dtype = result_type(sorted_sequence, input)
    seq = data_as(sorted_sequence, dtype)
    values = data_as(input, dtype) if isinstance(input, Tensor) else xp.asarray(number_array(input, dtype))
    chosen = _side("torch.searchsorted", right, side)
    if isinstance(input, Tensor) and input._device is not where:
        raise RuntimeError("torch.searchsorted(): boundaries and input value tensors should have same device type, "
                           f"but got boundaries tensor device type {sorted_sequence.device} and input value tensor "
                           f"device type {input.device}")
    if sorter is not None and sorter._device is not where:
        raise RuntimeError("torch.searchsorted(): sorter and boundary tensors should have same device type, but got "
                           f"sorter tensor device type {sorter.device} and input value tensor device type "
                           f"{sorted_sequence.device}")
    if dtype.kind in "bc":  # no order (complex), or no kernel (bool), in PyTorch
        raise not_implemented("searchsorted_out_cpu", dtype)
    if seq.ndim != 1 and values.ndim == 0:
        raise RuntimeError(
            "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, but we got "
            f"boundaries tensor dim({seq.ndim}) and input value's dim({values.ndim}) numel({values.size})"
        )
    if seq.ndim == 0:
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension"
        )
    if sorter is not None:
        seq = xp.take_along_axis(seq, _checked_sorter(sorter._data, seq.shape), axis=-1)
    if seq.ndim > 1 and seq.shape[:-1] != values.shape[:-1]:
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
            f"tensor and input value tensor must match, but we got boundaries tensor {list(seq.shape)} and input "
            f"value tensor {list(values.shape)}"
        )
    rows = 1 if seq.ndim <= 1 else math.prod(seq.shape[:-1])
    out = _bisect(xp, seq.reshape(rows, seq.shape[-1] if seq.ndim else 1), values.reshape(rows, -1 if rows else 0),
                  chosen == "right")
    return Tensor(out.reshape(values.shape).astype(int32 if out_int32 else int64), device=where)


def _checked_sorter(order: Any, shape: tuple[int, ...]) -> Any:
    """searchsorted's sorter, refused as PyTorch's unless it is an int64 index array of the boundaries' shape whose
    entries are in range: a negative entry would otherwise silently count from the end."""
    if order.shape != shape:
        raise RuntimeError(
            "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor "
            f"{list(shape)}and got sorter tensor {list(order.shape)}"
        )
    if order.dtype != int64:
        raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                           f"{SCALAR_NAMES.get(order.dtype, order.dtype)}")
    if order.size and bool(((order < 0) | (order >= shape[-1])).any()):
        raise RuntimeError("torch.searchsorted(): sorter index out of range")
    return order


def _bisect(xp: Any, rows: Any, values: Any, right: bool) -> Any:
    """For each row of values, where each would go in the same row of sorted `rows`: PyTorch's binary search,
    step for step, so NaNs land where its comparisons put them (numpy's sorts NaN last in the boundaries)."""
    low = xp.zeros(values.shape, int64)
    high = xp.full(values.shape, rows.shape[-1], int64)
    while bool((low < high).any()):
        active = low < high
        middle = (low + high) // 2
        seen = xp.take_along_axis(rows, xp.minimum(middle, rows.shape[-1] - 1), axis=-1)
        # not (seen > value) and not (seen >= value): false for NaN, so a NaN on either side searches on right
        go_right = ~(seen > values) if right else ~(seen >= values)
        low = xp.where(active & go_right, middle + 1, low)
        high = xp.where(active & ~go_right, middle, high)
    return low


def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The index of the bucket of 1-D sorted `boundaries` each of `input` falls in: boundaries[i-1] < x <=
    boundaries[i], or with right=True boundaries[i-1] <= x < boundaries[i]."""
    check_flags("bucketize", out_int32=out_int32, right=right)
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


METHODS: dict[str, Any] = {
    "masked_select": masked_select, "nonzero": nonzero, "argwhere": argwhere, "count_nonzero": count_nonzero,
    "unique": unique, "bincount": bincount, "isin": isin,
}
