"""Writing into a copy of a tensor along a dim: scatter (a source or a value), index_add, index_copy and
index_fill, with their gradient rules.

Each op writes at an advanced index (`where`) into a copy of the input. The input's gradient is the output's where
the input's values were kept (all of it for index_add); a source's gradient is the output's read back at `where`.
"""

from __future__ import annotations

from typing import Any

from actorgrad.ops.indexing import (
    SCATTER_ADD,
    _along,
    _at_least_1d,
    _check_along,
    _checked_ints,
    _host,
    fill_value,
    placed_index,
)
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.ops.shape import single_dim
from actorgrad.tensor import Tensor

__all__ = ["index_add", "index_copy", "index_fill", "scatter"]

_KEPT = (("keep",), lambda ops, g, keep: g * keep)  # the gradient where the input's values were kept
_READ_BACK = (("where",), lambda ops, g, where: ops.index(g, (), where))
SCATTER = Rule("ScatterBackward0", _KEPT, (("where", "src_pad"), SCATTER_ADD.grads[1][1]))
SCATTER_VALUE = Rule("ScatterBackward1", _KEPT)
INDEX_ADD = Rule("IndexAddBackward0", ((), None),
                 (("where", "alpha"), lambda ops, g, where, alpha: ops.index(g, (), where) * alpha))
INDEX_COPY = Rule("IndexCopyBackward0", _KEPT, _READ_BACK)
INDEX_FILL = Rule("IndexFillBackward0", _KEPT)
INDEX_FILL_TENSOR = Rule("IndexFillBackward1", _KEPT,
                         (("where",), lambda ops, g, where: ops.sum(ops.index(g, (), where), None)))


def _kept_mask(input: Tensor, where: tuple) -> Any:
    """True where a write at `where` leaves the input's value."""
    keep = input._device.xp.ones(input._data.shape, dtype=bool)
    keep[where] = False
    return keep


def scatter(
    input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None, reduce: Any = None
) -> Tensor:
    """A copy of the input with src's elements (or one number) written along `dim` at `index`."""
    if reduce is not None:
        raise NotImplementedError("scatter(): reduce= is not supported; use scatter_add (or scatter_reduce in PyTorch)")
    if src is None:
        src = value
    x = _at_least_1d(input._data, "scatter")
    positions = _host(index._data)
    if positions.dtype.kind not in "iu":
        raise RuntimeError(f"scatter(): Expected dtype int64 for index, got {positions.dtype}")
    d = single_dim(dim, x.ndim, "scatter")
    tensor_src = isinstance(src, Tensor)
    if tensor_src:
        same_device(input, src, index)
        if src._data.dtype != x.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    _check_along(x, d, positions, (src._data,) if tensor_src else ())
    where = placed_index(input, _along(positions, d))
    keep = _kept_mask(input, where)
    data = x.copy()
    if not tensor_src:
        data[where] = fill_value(src, x.dtype)[()]  # a numpy scalar: CuPy takes no host array
        return record(SCATTER_VALUE, data, (input,), keep=keep)
    s = src._data
    data[where] = s[tuple(slice(0, n) for n in positions.shape)]
    src_pad = tuple(p for k in reversed(range(s.ndim)) for p in (0, s.shape[k] - positions.shape[k]))
    return record(SCATTER, data, (input, src), keep=keep, where=where, src_pad=src_pad)


def _vector_index(op: str, input: Tensor, dim: int, index: Tensor, kinds: str, dtype_error: Exception) -> tuple:
    """The dim and the advanced index that reaches `index`'s positions along it, after index_*'s checks."""
    x = _at_least_1d(input._data, op)
    positions = _host(index._data)
    if positions.dtype.kind not in "iu" or positions.dtype.itemsize < (8 if kinds == "int64" else 4):
        raise dtype_error
    if positions.ndim > 1:
        if op == "index_fill_":
            raise RuntimeError("Index has to be a vector/scalar")
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {positions.ndim} with type: "
                         f"{SCALAR_NAMES[positions.dtype]} and size: {list(positions.shape)}")
    d = single_dim(dim, x.ndim, op)
    try:
        positions = _checked_ints(positions.reshape(-1), x.shape[d], d, negative=False)
    except IndexError as error:  # PyTorch's type and wording differ per op
        if op == "index_add_":
            raise RuntimeError(str(error)) from None
        raise IndexError(f"index_copy_(): {error}" if op == "index_copy_" else str(error)) from None
    return d, placed_index(input, (slice(None),) * d + (positions,))


def _check_source(op: str, input: Tensor, source: Tensor, d: int, count: int) -> None:
    x, s = input._data, source._data
    same_device(input, source)
    if op == "index_add_" and s.dtype != x.dtype:
        raise RuntimeError(f"index_add_(): self ({SCALAR_NAMES[x.dtype]}) and source ({SCALAR_NAMES[s.dtype]}) must "
                           "have the same scalar type")
    if op == "index_copy_" and s.dtype != x.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{SCALAR_NAMES[x.dtype]} and (source) {SCALAR_NAMES[s.dtype]}")
    if s.ndim != x.ndim or s.shape[:d] + s.shape[d + 1:] != x.shape[:d] + x.shape[d + 1:]:
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(x.shape)} source.shape = {list(s.shape)}")
    if s.shape[d] != count:
        error = RuntimeError if op == "index_add_" else IndexError
        tail = f": ({s.shape[d]}), for dim: {d}" if op == "index_add_" else f" ({s.shape[d]})"
        raise error(f"{op}(): Number of indices ({count}) should be equal to source.size(dim){tail}")


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy of the input with alpha * source's slices added at `index` along `dim` (repeats add up)."""
    d, where = _vector_index("index_add_", input, dim, index, "int32/int64", RuntimeError(
        f"index_add_(): Expected dtype int32/int64 for index but got: {SCALAR_NAMES.get(index.dtype, index.dtype)}"))
    _check_source("index_add_", input, source, d, where[d].shape[0])
    x = input._data
    data = x.copy()
    input._device.xp.add.at(data, where, (source._data * alpha).astype(x.dtype, copy=False))
    return record(INDEX_ADD, data, (input, source), where=where, alpha=alpha)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of the input with source's slices written at `index` along `dim`."""
    d, where = _vector_index("index_copy_", input, dim, index, "int64", RuntimeError(
        f"index_copy_(): Expected a long tensor for index, but got {SCALAR_NAMES.get(index.dtype, index.dtype)}"))
    _check_source("index_copy_", input, source, d, where[d].shape[0])
    data = input._data.copy()
    data[where] = source._data
    return record(INDEX_COPY, data, (input, source), keep=_kept_mask(input, where), where=where)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of the input with the slices at `index` along `dim` set to `value` (a number or a 0-dim tensor)."""
    _, where = _vector_index("index_fill_", input, dim, index, "int64",
                             IndexError("index_fill_(): Expected dtype int64 for index."))
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} "
                           "dimension(s).")
    x = input._data
    data = x.copy()
    data[where] = fill_value(value.item() if isinstance(value, Tensor) else value, x.dtype)[()]
    keep = _kept_mask(input, where)
    if isinstance(value, Tensor):
        return record(INDEX_FILL_TENSOR, data, (input, value), keep=keep, where=where)
    return record(INDEX_FILL, data, (input,), keep=keep)


METHODS: dict[str, Any] = {"scatter": scatter, "index_add": index_add, "index_copy": index_copy,
                           "index_fill": index_fill}
