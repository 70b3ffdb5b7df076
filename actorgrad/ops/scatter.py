"""Writing into a copy of a tensor along a dim: scatter (a source or a value), index_add, index_copy and
index_fill, with their gradient rules.

Each op writes at an advanced index (`where`) into a copy of the input. The input's gradient is the output's where
the input's values were kept (all of it for index_add); a source's gradient is the output's read back at `where`.
scatter's reduce='add' / 'multiply' forms run scatter_reduce's kernel (`scatter_reduce.py`), without a gradient, as
in PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.arithmetic import _no_derivative
from actorgrad.ops.index_parsing import checked_ints, host_array
from actorgrad.ops.indexing import SCATTER_ADD, _along, check_scatter, fill_value, placed_index, refuse_integer_grad
from actorgrad.ops.inplace_recording import write_in_place
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.ops.scatter_reduce import on_at_least_1d, reduced_into, scatter_index, scatter_plan
from actorgrad.ops.shape import single_dim
from actorgrad.tensor import Tensor, int64
from actorgrad.user_warnings import warn_once

__all__ = ["index_add", "index_copy", "index_fill", "scatter"]

_KEPT = (("keep",), lambda ops, g, keep: g * keep)  # the gradient where the input's values were kept
_READ_BACK = (("where",), lambda ops, g, where: ops.index(g, (), where))
SCATTER = Rule("ScatterBackward0", _KEPT, (("where", "src_pad"), SCATTER_ADD.grads[1][1]))
SCATTER_VALUE = Rule("ScatterBackward1", _KEPT)
SCATTER_NOTHING = Rule("ScatterBackward0", _KEPT, (("other",), lambda ops, g, other: ops.zeros_like(other)))
INDEX_ADD = Rule("IndexAddBackward0", ((), None),
                 (("where", "alpha"), lambda ops, g, where, alpha: ops.index(g, (), where) * alpha))
INDEX_COPY = Rule("IndexCopyBackward0", _KEPT, _READ_BACK)
INDEX_FILL = Rule("IndexFillBackward0", _KEPT)
# The value's gradient sums the output's over the filled elements, each once however often the index names it.
INDEX_FILL_TENSOR = Rule("IndexFillBackward1", _KEPT,
                         (("filled",), lambda ops, g, filled: ops.sum(g * filled, None)))


def _kept_mask(input: Tensor, where: tuple) -> Any:
    """True where a write at `where` leaves the input's value."""
    keep = input._device.xp.ones(input._data.shape, dtype=bool)
    keep[where] = False
    return keep


_SCATTER_REDUCTIONS = {"add": "sum", "multiply": "prod"}  # scatter's reduce= names, as scatter_reduce's
_NO_DERIVATIVE = {op: _no_derivative(op) for op in ("scatter", "scatter_")}


def scatter(
    input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None, reduce: str | None = None
) -> Tensor:
    """A copy of the input with src's elements (or one number) written along `dim` at `index`; with reduce='add'
    or 'multiply', combined with the values there (a form PyTorch gives no gradient)."""
    return _scatter(input, dim, index, src, value, reduce, "scatter")


def _scatter(input: Tensor, dim: int, index: Tensor, src: Any, value: Any, reduce: str | None, op: str) -> Tensor:
    if src is None:
        if value is None:
            raise TypeError("scatter() missing a src tensor or a value")
        src = value
    tensor_src = isinstance(src, Tensor)
    if reduce is not None and tensor_src:
        warn_once("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a "
                  "future PyTorch release. Use torch.scatter_reduce instead for more reduction options.")
    d, positions = scatter_index("scatter", input, dim, index, src)
    x = input._data
    if x.ndim == 0 or positions.ndim == 0 or (tensor_src and src.ndim == 0):
        return on_at_least_1d(lambda *a: _scatter(*a, None, reduce, op), input, d, index, src)
    refusal = None
    if reduce is not None and reduce not in _SCATTER_REDUCTIONS:
        refusal = RuntimeError("reduce argument must be either add or multiply.")
    check_scatter(x, d, positions, src._data if tensor_src else None, refusal)
    if reduce is not None:
        plan = scatter_plan(input, d, positions, src.shape if tensor_src else positions.shape, reduce == "multiply")
        ops = input._device.ops
        shape = tuple(c.stop for c in plan.crop)
        values = src._data[plan.crop] if tensor_src else ops.xp.full(shape, fill_value(src, x.dtype)[()])
        data = reduced_into(ops, x, values, plan, _SCATTER_REDUCTIONS[reduce], True)
        return record(_NO_DERIVATIVE[op], data, (input, src) if tensor_src else (input,))
    if positions.size == 0:  # PyTorch writes nothing; a tensor src still gets a gradient, of zeros
        keep = input._device.xp.ones(x.shape, dtype=bool)
        if tensor_src:
            return record(SCATTER_NOTHING, x.copy(), (input, src), keep=keep)
        return record(SCATTER_VALUE, x.copy(), (input,), keep=keep)
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
    """The dim and `index`'s positions (flat, on the host), after index_*'s checks of the index itself."""
    x = input._data
    positions = host_array(index._data)
    if positions.dtype.kind not in "iu" or positions.dtype.itemsize < (8 if kinds == "int64" else 4):
        raise dtype_error
    if positions.ndim > 1:
        if op == "index_fill_":
            raise RuntimeError("Index has to be a vector/scalar")
        if op == "index_copy_":
            raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {positions.ndim})")
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {positions.ndim} with type: "
                         f"{SCALAR_NAMES[positions.dtype]} and size: {list(positions.shape)}")
    return single_dim(dim, x.ndim, op), positions.reshape(-1)


def _placed(op: str, input: Tensor, d: int, positions: np.ndarray, slice_loop: bool = False) -> tuple:
    """The advanced index that reaches `positions` along `d`, after their bounds check, which PyTorch's kernels
    make after every other check (index_fill counts negative positions from the end, as PyTorch's). `slice_loop`:
    index_add runs PyTorch's loop over slices (a self of at most one dim, alpha other than the number 1, an int32
    index), which words a position out of range its own way; so it does along a dim neither the first nor the
    last."""
    x = input._data
    size = x.shape[d] if x.ndim else 1
    try:
        positions = checked_ints(positions, size, d, negative=op == "index_fill_") % max(size, 1)
    except IndexError as error:  # PyTorch's type and wording differ per op
        if op == "index_add_":
            loop = slice_loop or 0 < d < x.ndim - 1
            raise (IndexError("index out of range in self") if loop else RuntimeError(str(error))) from None
        raise IndexError(f"index_copy_(): {error}" if op == "index_copy_" else str(error)) from None
    return placed_index(input, (slice(None),) * d + (positions,))


def _sliced(shape: tuple, d: int) -> tuple:
    return shape[:d] + shape[d + 1:]


def _check_source(op: str, input: Tensor, source: Tensor, d: int, count: int) -> None:
    """PyTorch's checks of index_add's and index_copy's source, in its order: a 0-dim self or source stands for
    one slice."""
    x, s = input._data, source._data
    same_device(input, source)
    if op == "index_copy_":
        if s.ndim == 0 and count != 1:
            raise IndexError(f"index_copy_(): When source is scalar, index should have one element (got {count})")
        if s.ndim and x.ndim and s.ndim != x.ndim:
            raise IndexError("index_copy_(): When source and destination are not scalars, their dimensionality must "
                             f"match. Source dimensionality ({s.ndim}), destination dimensionality ({x.ndim})")
        if s.dtype != x.dtype:
            raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                               f"{SCALAR_NAMES[x.dtype]} and (source) {SCALAR_NAMES[s.dtype]}")
        if _sliced(x.shape, d) != _sliced(s.shape, d):
            raise RuntimeError("index_copy_(): Source/destination tensor must have same slice shapes. Destination "
                               f"slice shape: {' '.join(map(str, _sliced(x.shape, d)))} at dimension {d} and source "
                               f"slice shape: {' '.join(map(str, _sliced(s.shape, d)))} at dimension 0.")
        if s.ndim and s.shape[d] != count:
            raise IndexError(f"index_copy_(): Number of indices ({count}) should be equal to source.size(dim) "
                             f"({s.shape[d]})")
        return
    if s.dtype != x.dtype:
        raise RuntimeError(f"index_add_(): self ({SCALAR_NAMES[x.dtype]}) and source ({SCALAR_NAMES[s.dtype]}) must "
                           "have the same scalar type")
    if s.ndim == 0 and count != 1:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    if s.ndim and d >= s.ndim:
        raise RuntimeError(f"index_add_(): Indexing dim {d} is out of bounds of the source tensor with dim {s.ndim}")
    if s.ndim and s.shape[d] != count:
        raise RuntimeError(f"index_add_(): Number of indices ({count}) should be equal to source.size(dim): "
                           f"({s.shape[d]}), for dim: {d}")
    if s.ndim != x.ndim or _sliced(s.shape, d) != _sliced(x.shape, d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(x.shape)} source.shape = {list(s.shape)}")


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy of the input with alpha * source's slices added at `index` along `dim` (repeats add up)."""
    d, positions = _vector_index("index_add_", input, dim, index, "int32/int64", RuntimeError(
        f"index_add_(): Expected dtype int32/int64 for index but got: {SCALAR_NAMES.get(index.dtype, index.dtype)}"))
    _check_source("index_add_", input, source, d, positions.size)
    slice_loop = input.ndim <= 1 or alpha != 1 or alpha.__class__ is bool or index.dtype != int64
    where = _placed("index_add_", input, d, positions, slice_loop)
    if input.ndim == 0 or source.ndim == 0:
        return on_at_least_1d(lambda *a: index_add(*a, alpha=alpha), input, d, index.reshape(-1), source)
    x = input._data
    if x.dtype.kind in "iub":  # PyTorch converts alpha to an integer (bool) self's type: 2.7 adds twice the source
        alpha = bool(alpha) if x.dtype.kind == "b" else int(alpha)
    data = x.copy()
    input._device.ops.add_at(data, where, (source._data * alpha).astype(x.dtype, copy=False))
    return record(INDEX_ADD, data, (input, source), where=where, alpha=alpha)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of the input with source's slices written at `index` along `dim`."""
    if autocast_state.get() is not None:
        return autocast_call(index_copy, "index_copy", input, dim, index, source)
    d, positions = _vector_index("index_copy_", input, dim, index, "int64", RuntimeError(
        f"index_copy_(): Expected a long tensor for index, but got {SCALAR_NAMES.get(index.dtype, index.dtype)}"))
    _check_source("index_copy_", input, source, d, positions.size)
    where = _placed("index_copy_", input, d, positions)
    if input.ndim == 0:
        return on_at_least_1d(index_copy, input, d, index.reshape(-1), source.reshape(-1))
    if source.ndim == 0:
        return index_copy(input, d, index.reshape(-1), source.reshape((1,) * input.ndim))
    data = input._data.copy()
    data[where] = source._data
    return record(INDEX_COPY, data, (input, source), keep=_kept_mask(input, where), where=where)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of the input with the slices at `index` along `dim` set to `value` (a number or a 0-dim tensor)."""
    return refuse_integer_grad(_index_filled(input, dim, index, value))


def _index_filled(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """index_fill without its refusal of an integer result that requires grad: index_fill_ writes that result out
    of the graph."""
    if isinstance(value, Tensor) and value.ndim:  # PyTorch's first check
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} "
                           "dimension(s).")
    d, positions = _vector_index("index_fill_", input, dim, index, "int64",
                                 IndexError("index_fill_(): Expected dtype int64 for index."))
    where = _placed("index_fill_", input, d, positions)
    if input.ndim == 0:
        return _index_filled(input.reshape(1), d, index.reshape(-1), value).reshape(())
    x = input._data
    data = x.copy()
    data[where] = fill_value(value.item() if isinstance(value, Tensor) else value, x.dtype)[()]
    keep = _kept_mask(input, where)
    if isinstance(value, Tensor):
        return record(INDEX_FILL_TENSOR, data, (input, value), keep=keep, filled=~keep)
    return record(INDEX_FILL, data, (input,), keep=keep)


def scatter_(self: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
             reduce: str | None = None) -> Tensor:
    return write_in_place(self, lambda s: _scatter(s, dim, index, src, value, reduce, "scatter_"), (src,), False,
                          sharing="any")


def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    return write_in_place(self, lambda s: index_add(s, dim, index, source, alpha=alpha), (source,), False,
                          sharing="any")


def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    return write_in_place(self, lambda s: index_copy(s, dim, index, source), (source,), False, sharing="any")


def index_fill_(self: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    return write_in_place(self, lambda s: _index_filled(s, dim, index, value), (value,), False, sharing="none")


METHODS: dict[str, Any] = {"scatter": scatter, "index_add": index_add, "index_copy": index_copy,
                           "index_fill": index_fill, "scatter_": scatter_, "index_add_": index_add_,
                           "index_copy_": index_copy_, "index_fill_": index_fill_}
