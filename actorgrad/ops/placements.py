"""Reading and writing a tensor at places: take and put (flat positions), index_put (a tuple of index tensors),
masked_scatter (a mask's places, in order), select_scatter, slice_scatter and diagonal_scatter (a slice or a
diagonal), with their in-place forms and gradient rules.

Each writing op writes into a copy of its input. The input's gradient is the output's where the input's values
were kept (all of it when writes accumulate); the written values' gradient is the output's read back where they
were written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.index_parsing import BYTE_FILL, filled_mask, host_array, parse_index
from actorgrad.ops.indexing import KEPT_GRAD, on_device, placed_index
from actorgrad.ops.inplace import INDEX_PUT
from actorgrad.ops.inplace_recording import write_in_place
from actorgrad.ops.operands import SCALAR_NAMES, broadcast_error
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.ops.sections import diagonal_placement
from actorgrad.ops.shape import _expanded_shape, single_dim, to_dtype
from actorgrad.tensor import Tensor

__all__ = [
    "diagonal_scatter", "index_put", "index_put_", "masked_scatter", "put", "select_scatter", "slice_scatter",
    "take",
]

_ALL = ((), None)  # the gradient passes through whole: an input every value of which the output keeps
_PUT_BACK = (("self_shape", "where"), lambda ops, g, self_shape, where: ops.reshape(
    ops.index_put_zeros(g, (math.prod(self_shape),), (), where), self_shape))
TAKE = Rule("TakeBackward0", _PUT_BACK)
# A source's gradient: the output's read back at the flat positions written, in the source's shape.
_TAKEN = (("where", "source_shape"), lambda ops, g, where, source_shape: ops.reshape(
    ops.index(ops.reshape(g, (-1,)), (), where), source_shape))
PUT = Rule("PutBackward0", KEPT_GRAD, _TAKEN)
PUT_ACCUMULATE = Rule("PutBackward0", _ALL, _TAKEN)
INDEX_PUT_ACCUMULATE = Rule("IndexPutBackward0", _ALL, INDEX_PUT.grads[1])
# masked_scatter's source gradient: the output's at the mask's places, in order, then zeros, in its shape.
_MASKED_SOURCE = (
    ("where", "count", "source_shape"),
    lambda ops, g, where, count, source_shape: ops.reshape(ops.index_put_zeros(
        ops.index(g, (), where), (math.prod(source_shape),), (slice(0, count),), None), source_shape),
)
MASKED_SCATTER = Rule("MaskedScatterBackward0", KEPT_GRAD, _MASKED_SOURCE, broadcasts=True)


def _read_back(ops: Any, g: Any, basic: tuple, advanced: tuple | None, order: tuple | None) -> Any:
    """The output's gradient where src was written, in src's shape (a diagonal's dim moved last by `order`)."""
    read = ops.index(g, basic, advanced)
    return read if order is None else ops.permute(read, order)


_READ_BACK = (("basic", "advanced", "order"), _read_back)
_PLACES = ("keep", "advanced")  # where src went: PyTorch's nodes keep sizes and offsets, no tensor for hooks
SELECT_SCATTER = Rule("SelectScatterBackward0", KEPT_GRAD, _READ_BACK, unhooked=_PLACES)
SLICE_SCATTER = Rule("SliceScatterBackward0", KEPT_GRAD, _READ_BACK, unhooked=_PLACES)
DIAGONAL_SCATTER = Rule("DiagonalScatterBackward0", KEPT_GRAD, _READ_BACK, unhooked=_PLACES)


def _dtype_name(dtype: Any) -> str:
    return SCALAR_NAMES.get(dtype, str(dtype))


def _flat_positions(op: str, input: Tensor, index: Tensor) -> np.ndarray:
    """`index`'s entries as positions in the flattened input (negative ones count from the end), checked."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' (position 1) must be Tensor, not {type(index).__name__}")
    positions = host_array(index._data)
    if positions.dtype != np.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {_dtype_name(positions.dtype)}")
    size = input._data.size
    if positions.size and not size:
        raise IndexError("take(): tried to take from an empty tensor" if op == "take" else
                         "put_(): Tried to put elements into an empty tensor")
    bad = positions[(positions < -size) | (positions >= size)]
    if bad.size:
        raise IndexError(f"out of range: tried to access index {bad.flat[0]} on a tensor of {size} elements.")
    return positions % max(size, 1)


def take(input: Tensor, index: Tensor) -> Tensor:
    """The input's elements at `index`'s flat positions (in row-major order), in `index`'s shape."""
    where = (on_device(input, _flat_positions("take", input, index)),)
    data = input._data.reshape(-1)[where]
    return record(TAKE, data, (input,), self_shape=input._data.shape, where=where)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of the input with source's elements written (added, with `accumulate`) at `index`'s flat
    positions, in order."""
    check_flags("put", accumulate=accumulate)
    positions = _flat_positions("put_", input, index)
    x, s = input._data, source._data
    same_device(input, source)
    if s.dtype != x.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_dtype_name(x.dtype)} and source.dtype = {_dtype_name(s.dtype)}")
    if s.size != positions.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {s.size}, index.numel() = {positions.size}")
    where = (on_device(input, positions.reshape(-1)),)
    data = x.copy()  # row-major, so its flat form is a view
    flat = data.reshape(-1)
    if accumulate:
        input._device.ops.add_at(flat, where, s.reshape(-1))
        return record(PUT_ACCUMULATE, data, (input, source), where=where, source_shape=s.shape)
    flat[where] = s.reshape(-1)
    keep = input._device.xp.ones(x.size, dtype=bool)
    keep[where] = False
    return record(PUT, data, (input, source), keep=keep.reshape(x.shape), where=where, source_shape=s.shape)


def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    check_flags("put_", accumulate=accumulate)
    return write_in_place(self, lambda s: put(s, index, source, accumulate), (source,), False)


def _index_tuple(indices: Any, ndim: int) -> tuple:
    """index_put's indices, after PyTorch's checks: a tuple or list of tensors, at most one per dim, that
    broadcast together."""
    if not isinstance(indices, tuple | list):
        raise TypeError(f"index_put(): argument 'indices' (position 1) must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    for i, index in enumerate(indices):
        if not isinstance(index, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(index).__name__}")
    used = sum(index.ndim if index.dtype.kind == "b" else 1 for index in indices)
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim} (got {used})")
    shapes = [index.shape for index in indices if index.dtype.kind != "b"]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         f"{', '.join(str(list(s)) for s in shapes)}") from None
    return tuple(indices)


def index_put(input: Tensor, indices: Sequence[Tensor], values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of the input with `values` (broadcast to the indexed shape) written, or added with `accumulate`
    (repeated places add up), at `input[indices]`."""
    if autocast_state.get() is not None:
        return autocast_call(index_put, "index_put", input, indices, values, accumulate)
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    if not isinstance(accumulate, bool):
        raise TypeError(f"index_put(): argument 'accumulate' must be bool, not {type(accumulate).__name__}")
    x = input._data
    basic, advanced, _ = parse_index(_index_tuple(indices, x.ndim), x.shape, int_scalars=False)
    same_device(input, values)
    fill_mask = None if accumulate else filled_mask(tuple(indices), values)
    if fill_mask == np.uint8:
        raise RuntimeError(BYTE_FILL)
    if fill_mask is not None:  # PyTorch fills the mask with the value's number, of any shape and dtype
        values = values if values.dtype == x.dtype else to_dtype(values, x.dtype)
        values = values if values.ndim == 0 else values.reshape(())
    if values.dtype != x.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {_dtype_name(x.dtype)} "
                           f"for the destination and {_dtype_name(values.dtype)} for the source.")
    v = values._data
    advanced = placed_index(input, advanced)
    region = x[basic + (Ellipsis,)]
    shape = region.shape if advanced is None else region[advanced].shape
    if np.broadcast_shapes(v.shape, shape) != shape:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast to indexing "
                           f"result of shape {list(shape)}")
    data = x.copy()
    written = data[basic + (Ellipsis,)]  # a view: writes land in data
    xp = input._device.xp
    params = dict(basic=basic, advanced=advanced, value_shape=v.shape)
    if accumulate:
        if advanced is None:
            written += v
        else:
            input._device.ops.add_at(written, advanced, xp.broadcast_to(v, shape))
        return record(INDEX_PUT_ACCUMULATE, data, (input, values), **params)
    keep = xp.ones(x.shape, dtype=bool)
    if advanced is None:
        written[...] = v
        keep[basic + (Ellipsis,)] = False
    else:
        written[advanced] = v
        keep[basic + (Ellipsis,)][advanced] = False
    return record(INDEX_PUT, data, (input, values), keep=keep, **params)


def index_put_(input: Tensor, indices: Sequence[Tensor], values: Tensor, accumulate: bool = False) -> Tensor:
    """index_put into the input itself."""
    return write_in_place(input, lambda s: index_put(s, indices, values, accumulate), (values,), False)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of the input (broadcast with `mask`) with source's first elements, in row-major order, written
    where `mask` is True."""
    x, m, s = input._data, mask._data, source._data
    same_device(input, mask, source)
    if m.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_dtype_name(m.dtype)}")
    if s.dtype != x.dtype:  # sic: PyTorch's text has no space after "got"
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{_dtype_name(x.dtype)} and {_dtype_name(s.dtype)}")
    try:
        shape = np.broadcast_shapes(x.shape, m.shape)
    except ValueError:
        raise broadcast_error("masked_scatter", m.shape, x.shape) from None  # the mask first, as PyTorch's
    if not shape:  # numpy has no nonzero() of a 0-dim mask: as a tensor of one element
        return masked_scatter(input.reshape(1), mask.reshape(1), source).reshape(())
    xp = input._device.xp
    m = xp.broadcast_to(m, shape)
    count = int(m.sum())
    if s.size < count:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    data = xp.broadcast_to(x, shape).copy()
    data[m] = s.reshape(-1)[:count]
    return record(MASKED_SCATTER, data, (input, source), keep=~m, where=xp.nonzero(m), count=count,
                  source_shape=s.shape)


def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    if isinstance(mask, Tensor):  # PyTorch expands the mask to self's shape, with expand's refusals
        _expanded_shape(mask.shape, self.shape)
    return write_in_place(self, lambda s: masked_scatter(s, mask, source), (source,), False)


def _scatter_into(rule: Rule, input: Tensor, src: Tensor, basic: tuple, advanced: tuple | None,
                  order: tuple | None) -> Tensor:
    """A copy of the input with `src` (cast to its dtype) written at `input[basic][advanced]`, whose shape `src`
    must have once permuted by `order` (the diagonal's dim moved last)."""
    x, s = input._data, src._data
    same_device(input, src)
    region = x[basic + (Ellipsis,)]
    picked = region if advanced is None else region[advanced].transpose(order)
    if s.shape != picked.shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(s.shape)}, "
                           f"slice size = {list(picked.shape)}")
    xp = input._device.xp
    data = x.copy()
    keep = xp.ones(x.shape, dtype=bool)
    if advanced is None:
        data[basic + (Ellipsis,)] = s
        keep[basic + (Ellipsis,)] = False
    else:
        data[advanced] = xp.moveaxis(s, -1, order[-1])  # the diagonal's dim back where the index puts it
        keep[advanced] = False
    return record(rule, data, (input, src), keep=keep, basic=basic, advanced=advanced, order=order)


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of the input with `src` written at `input.select(dim, index)`."""
    x = input._data
    if x.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = single_dim(dim, x.ndim, "select_scatter")
    if not -x.shape[d] <= index < x.shape[d]:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(x.shape)} at dimension {d}")
    return _scatter_into(SELECT_SCATTER, input, src, (slice(None),) * d + (index,), None, None)


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:
    """A copy of the input with `src` written at `input[..., start:end:step]` along `dim`."""
    d = single_dim(dim, input._data.ndim, "slice_scatter")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return _scatter_into(SLICE_SCATTER, input, src, (slice(None),) * d + (slice(start, end, step),), None, None)


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of the input with `src` written on `input.diagonal(offset, dim1, dim2)` (its last dim along the
    diagonal)."""
    x = input._data
    d1, d2 = single_dim(dim1, x.ndim, "diagonal"), single_dim(dim2, x.ndim, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    advanced, order = diagonal_placement(input._device.xp, x.shape, offset, d1, d2)
    return _scatter_into(DIAGONAL_SCATTER, input, src, (), advanced, order)


METHODS: dict[str, Any] = {
    "take": take, "put": put, "put_": put_, "index_put": index_put, "index_put_": index_put_,
    "masked_scatter": masked_scatter, "masked_scatter_": masked_scatter_, "select_scatter": select_scatter,
    "slice_scatter": slice_scatter, "diagonal_scatter": diagonal_scatter,
}
