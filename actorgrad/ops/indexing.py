"""Indexing ops (`tensor[index]`, gather, scatter_add, index_select, masked_fill) and their gradient rules.

Every index is brought to one form, `(basic, advanced)`: basic indexing (ints, slices, None) applied first, then
advanced indexing (integer arrays) on the result, with `advanced=None` when there is none. Applying ints first is
what makes PyTorch's `x[0, :, [0, 1]]` differ from numpy's. The gradient of every op here writes `g` through the
same index into zeros (`ops.index_put_zeros`), whose own gradient is the indexing again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.devices import cpu
from actorgrad.ops.operands import checked_int, fitted_number, kernel_operands
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import input_size
from actorgrad.ops.shape import MASKED_GRAD, single_dim
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

__all__ = ["gather", "index_select", "masked_fill", "scatter_add"]


def _put_back(ops: Any, g: Any, self_shape: tuple, basic: tuple, advanced: tuple | None) -> Any:
    return ops.index_put_zeros(g, self_shape, basic, advanced)


_PUT_BACK = (("self_shape", "basic", "advanced"), _put_back)
INDEX_RULES = {
    name: Rule(name, _PUT_BACK, cost=input_size)
    for name in ("SelectBackward0", "SliceBackward0", "UnsqueezeBackward0", "AliasBackward0", "IndexBackward0",
                 "SplitBackward0", "SplitWithSizesBackward0", "UnbindBackward0", "IndexSelectBackward0",
                 "GatherBackward0")
}
INDEX_PUT = Rule("IndexPutBackward0", (("basic", "advanced"), lambda ops, g, basic, adv: ops.index(g, basic, adv)))


def _padded(ops: Any, g: Any, pad: tuple[int, ...]) -> Any:
    """The gradient of a scatter_add source larger than its index: zero where the index does not reach."""
    return ops.pad(g, pad) if any(pad) else g


SCATTER_ADD = Rule(
    "ScatterAddBackward0",
    ((), None),
    (("where", "src_pad"), lambda ops, g, where, src_pad: _padded(ops, ops.index(g, (), where), src_pad)),
)
# The gradient where the input was kept, 0 where it was written over (even from a NaN, as PyTorch's masked_fill).
KEPT_GRAD = (("keep",), lambda ops, g, keep: ops.where(keep, g, 0))
MASKED_FILL = Rule("MaskedFillBackward0", KEPT_GRAD, broadcasts=True)
MASKED_FILL_TENSOR = Rule("MaskedFillBackward1", KEPT_GRAD, MASKED_GRAD, broadcasts=True)
FLOAT_INDEX = "tensors used as indices must be long, int, byte or bool tensors"


def on_device(t: Tensor, array: np.ndarray) -> Any:
    """A mask or index array built on the host (where indexes are parsed and checked), on `t`'s device."""
    return array if t._device is cpu else t._device.asarray(array)


def placed_index(t: Tensor, advanced: tuple | None) -> tuple | None:
    """An advanced index parsed on the host, its arrays on `t`'s device."""
    if advanced is None or t._device is cpu:
        return advanced
    return tuple(a if isinstance(a, int | slice) else t._device.asarray(a) for a in advanced)


def take_index(input: Tensor, basic: tuple, advanced: tuple | None, rule: Rule) -> Tensor:
    """`input[basic][advanced]` as one node; `index_put_zeros` is its gradient."""
    x = input._data
    advanced = placed_index(input, advanced)
    if advanced is None:
        data = x[basic + (Ellipsis,)]  # with the Ellipsis, ints alone give a 0-dim view, not a numpy scalar copy
    else:  # row-major, as PyTorch's (numpy's result of an index off dim 0 is transposed)
        data = x[basic][advanced]
        data = data if data.flags.c_contiguous else input._device.xp.ascontiguousarray(data)
    return record(rule, data, (input,), self_shape=x.shape, basic=basic, advanced=advanced)


def index_put_zeros(g: Tensor, shape: tuple[int, ...], basic: tuple, advanced: tuple | None) -> Tensor:
    """Zeros of `shape` with `g` written (added, for advanced indexes) through `[basic][advanced]`."""
    out = g._device.ops.index_put_zeros(g._data, shape, basic, advanced)
    return record(INDEX_PUT, out, (g,), basic=basic, advanced=advanced)


# -- tensor[index] -----------------------------------------------------------------------------------------------
UINT8_INDEX = "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead."


def _host(array: Any) -> np.ndarray:
    """An index array on the host, where indexes are checked and parsed (a GPU array copies over)."""
    return array if isinstance(array, np.ndarray) else array.get()


def _host_copy(array: Any) -> np.ndarray:
    """An index array on the host that no later write to the caller's tensor or array changes: a node keeps it for
    its backward, which must read the index the forward read."""
    return array.copy() if isinstance(array, np.ndarray) else array.get()


_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.bool_))


def _index_array(entry: Any) -> np.ndarray | None:
    """An index entry as a host array when it is a tensor, array or sequence, else None."""
    if isinstance(entry, list | tuple | range):  # a sequence is one index tensor, as in PyTorch
        entry = np.asarray([_host(e._data) if isinstance(e, Tensor) else e for e in entry])
        if entry.size == 0:
            entry = entry.astype(np.int64)
    elif isinstance(entry, Tensor):
        entry = entry._data
        if entry.ndim and entry.dtype not in _INDEX_DTYPES:  # a 0-dim one is an int, as PyTorch reads it
            raise IndexError(f"{FLOAT_INDEX}, got an index of dtype {entry.dtype}")
        entry = _host_copy(entry) if entry.dtype.kind == "i" else _host(entry)  # a mask becomes new arrays anyway
        if entry.dtype == np.uint8:  # a byte tensor is a mask, as in PyTorch (not the ints 0 and 1)
            warn(UINT8_INDEX)
            entry = entry.astype(np.bool_)
    elif isinstance(entry, np.ndarray):
        if entry.dtype.kind in "iu":
            entry = entry.copy()
    else:
        return None
    if entry.dtype.kind not in "iub":
        raise IndexError(f"{FLOAT_INDEX}, got an index of dtype {entry.dtype}")
    return entry


SEQUENCE_INDEX = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in pytorch 2.9; use "
    "x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor index, x[torch.tensor(seq)], "
    "which will result either in an error or a different result"
)


def _as_tuple(index: Any) -> Any:
    """PyTorch's (and old numpy's) reading of a list: one of fewer than 32 entries that holds a sequence, tensor,
    slice, None or Ellipsis is a tuple of index entries (deprecated, with PyTorch's warning), else one index."""
    if index.__class__ is not list or len(index) >= 32:
        return index
    for entry in index:
        if entry is None or entry is Ellipsis or isinstance(entry, Tensor | np.ndarray | list | tuple | range | slice):
            warn(SEQUENCE_INDEX)
            return tuple(index)
    return index


def _checked_ints(
    index: np.ndarray, size: int, dim: int, negative: bool = True, error: type[Exception] = IndexError
) -> np.ndarray:
    """`index` after checking its entries lie in [-size, size), or [0, size) when `negative` is False."""
    if index.size:
        bad = index[(index < (-size if negative else 0)) | (index >= size)]
        if bad.size:
            raise error(f"index {bad.flat[0]} is out of bounds for dimension {dim} with size {size}")
    return index


def _entries(index: Any) -> list:
    entries = list(index) if isinstance(index, tuple) else [index]
    out = []
    for entry in entries:
        array = _index_array(entry)
        if array is not None and array.ndim == 0 and array.dtype.kind in "iu":
            entry = int(array)  # a 0-dim integer tensor indexes as an int, as in PyTorch
        elif array is not None:
            entry = array
        elif isinstance(entry, bool | np.bool_):  # a 0-d mask, as in PyTorch: x[True] is x[None]
            entry = np.array(entry)
        elif isinstance(entry, np.integer):
            entry = int(entry)
        elif entry.__class__ is int and not -(1 << 63) <= entry < 1 << 63:
            raise ValueError("Overflow when unpacking long long")
        elif not (isinstance(entry, int | slice) or entry is None or entry is Ellipsis):
            raise IndexError(
                f"only integers, slices (`:`), ellipsis (`...`), None and long or byte tensors are valid indices "
                f"(got {type(entry).__name__})"
            )
        out.append(entry)
    return out


def _consumed(entry: Any) -> int:
    """How many of the input's dims an index entry uses up."""
    if entry is None or entry is Ellipsis:
        return 0
    if isinstance(entry, np.ndarray) and entry.dtype.kind == "b":
        return entry.ndim
    return 1


def parse_index(index: Any, shape: tuple[int, ...]) -> tuple[tuple, tuple | None, str]:
    """`(basic, advanced, node name)` for `tensor[index]` on a tensor of `shape`."""
    index = _as_tuple(index)
    entries = _entries(index)
    used = sum(_consumed(e) for e in entries)
    ellipses = sum(e is Ellipsis for e in entries)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > len(shape):
        if not shape and index.__class__ is int:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                             "C++ to convert a 0-dim tensor to a number")
        if not shape and index.__class__ is slice:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        raise IndexError(f"too many indices for tensor of dimension {len(shape)} (got {used} index entries)")
    if not ellipses:
        entries.append(Ellipsis)
    basic, advanced = [], []
    name, dim, any_array = "AliasBackward0", 0, False
    for entry in entries:
        if entry is Ellipsis:
            rest = len(shape) - used
            basic += [slice(None)] * rest
            advanced += [slice(None)] * rest
            dim += rest
            continue
        if entry is None:
            basic.append(None)
            advanced.append(slice(None))
            name = "UnsqueezeBackward0"
        elif isinstance(entry, int):
            size = shape[dim]
            if not -size <= entry < size:
                raise IndexError(f"index {entry} is out of bounds for dimension {dim} with size {size}")
            basic.append(entry)
            name, dim = "SelectBackward0", dim + 1
        elif isinstance(entry, slice):
            if entry.step is not None and entry.step <= 0:
                raise ValueError("step must be greater than zero")
            basic.append(entry)
            advanced.append(slice(None))
            if entry.indices(shape[dim]) != (0, shape[dim], 1) or not isinstance(index, tuple):
                name = "SliceBackward0"  # PyTorch skips a slice that keeps the whole dim, unless it is alone
            dim += 1
        elif entry.dtype.kind == "b" and not entry.ndim:  # x[True] is x[None], x[False] that with 0 rows
            basic.append(None)
            advanced.append(np.zeros(int(entry), dtype=np.intp))
            any_array = True
        elif entry.dtype.kind == "b":
            if entry.shape != shape[dim:dim + entry.ndim]:
                raise IndexError(
                    f"The shape of the mask {list(entry.shape)} at index {dim} does not match the shape of the "
                    f"indexed tensor {list(shape)} at index {dim}"
                )
            basic += [slice(None)] * entry.ndim
            advanced += list(np.nonzero(entry))
            any_array, dim = True, dim + entry.ndim
        else:
            basic.append(slice(None))
            advanced.append(_checked_ints(entry, shape[dim], dim))
            any_array, dim = True, dim + 1
    if any_array:
        _check_broadcast(advanced)
        return tuple(basic), tuple(advanced), "IndexBackward0"
    return tuple(basic), None, name


def _check_broadcast(advanced: list) -> None:
    """PyTorch's error for index tensors whose shapes do not broadcast together (not numpy's)."""
    shapes = [a.shape for a in advanced if a.__class__ is not slice]
    if any(shape != shapes[0] for shape in shapes):
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                             f"{', '.join(str(list(s)) for s in shapes)}") from None


def getitem(input: Tensor, index: Any) -> Tensor:
    basic, advanced, name = parse_index(index, input._data.shape)
    return take_index(input, basic, advanced, INDEX_RULES[name])


# -- gather, scatter_add, index_select, masked_fill --------------------------------------------------------------
def _int_index(index: Any, op: str, dtypes: str) -> np.ndarray:
    """The index as a host array of the caller's (see _host_copy), after PyTorch's checks of its type."""
    if isinstance(index, Tensor):
        array = _host_copy(index._data)
    elif isinstance(index, np.ndarray):  # a host array is taken too, as a tensor of it would be
        array = index.copy()
    else:  # PyTorch takes no list or number here
        raise TypeError(f"{op}(): argument 'index' (position 3) must be Tensor, not {type(index).__name__}")
    if array.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype {dtypes} for index, got {array.dtype}")
    return array


def _along(index: np.ndarray, dim: int) -> tuple:
    """The advanced index that picks `index`'s entries along `dim` and its own position along the others."""
    return tuple(
        index if d == dim else np.arange(n).reshape((-1,) + (1,) * (index.ndim - 1 - d))
        for d, n in enumerate(index.shape)
    )


def _check_along(x: np.ndarray, dim: int, index: np.ndarray, others: tuple = ()) -> None:
    if index.ndim != x.ndim:
        raise RuntimeError(
            f"Index tensor must have the same number of dimensions as input tensor: index {list(index.shape)}, "
            f"input {list(x.shape)}"
        )
    for d, n in enumerate(index.shape):
        if d != dim and (n > x.shape[d] or any(n > o.shape[d] for o in others)):
            extra = "".join(f" and to be no larger size than src {list(o.shape)}" for o in others)
            raise RuntimeError(
                f"Size does not match at dimension {d} expected index {list(index.shape)} to be no larger than "
                f"self {list(x.shape)} apart from dimension {dim}{extra}"
            )
    _checked_ints(index, x.shape[dim], dim, negative=False, error=RuntimeError)  # gather's error type in PyTorch


def at_least_1d(t: Tensor) -> Tensor:
    """A 0-dim tensor as one of shape (1,), as PyTorch's gather and scatter kernels read it."""
    return t.reshape(1) if t._data.ndim == 0 else t


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """input's elements at `index` along `dim`, at index's own positions along the other dims; a 0-dim input or
    index counts as one of shape (1,), as in PyTorch."""
    if sparse_grad:
        raise NotImplementedError("gather: sparse gradients are not supported by actorgrad (it has no sparse tensors)")
    positions = _int_index(index, "gather", "int32/int64")
    x = input._data
    dim = single_dim(dim, x.ndim, "gather")
    if not x.ndim or not positions.ndim:
        x, positions = x.reshape(x.shape or (1,)), positions.reshape(positions.shape or (1,))
        _check_along(x, dim, positions)
        out = take_index(at_least_1d(input), (), _along(positions, dim), INDEX_RULES["GatherBackward0"])
        return out.reshape(index.shape)
    _check_along(x, dim, positions)
    return take_index(input, (), _along(positions, dim), INDEX_RULES["GatherBackward0"])


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of the input with src's elements added along `dim` at `index` (repeats add up); a 0-dim input,
    index or src counts as one of shape (1,), as in PyTorch."""
    x, s = input._data, src._data
    positions = _int_index(index, "scatter_add", "int64")
    if x.dtype != s.dtype:
        raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype, got {x.dtype} and {s.dtype}")
    dim = single_dim(dim, x.ndim, "scatter_add")
    if not x.ndim or not positions.ndim or not s.ndim:
        flat_index = Tensor(positions.reshape(positions.shape or (1,)))
        return scatter_add(at_least_1d(input), dim, flat_index, at_least_1d(src)).reshape(x.shape)
    _check_along(x, dim, positions, (s,))
    where = placed_index(input, _along(positions, dim))
    data = x.copy()
    input._device.ops.add_at(data, where, s[tuple(slice(0, n) for n in positions.shape)])
    src_pad = tuple(p for d in reversed(range(s.ndim)) for p in (0, s.shape[d] - positions.shape[d]))
    return record(SCATTER_ADD, data, (input, src), where=where, src_pad=src_pad)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """input's slices along `dim` at the positions a vector (or 0-dim) index names, which must lie in
    [0, size), as in PyTorch."""
    x = input._data
    positions = _int_index(index, "index_select", "int32 or int64")
    if positions.ndim > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got shape {list(positions.shape)}")
    dim = single_dim(dim, x.ndim, "index_select")
    positions = positions.reshape(-1)
    if not x.ndim and positions.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {positions.size} value(s)")
    size = x.shape[dim] if x.ndim else 1
    if positions.size and (positions.min() < 0 or positions.max() >= size):
        raise IndexError("index out of range in self")
    if not x.ndim:
        return take_index(input.reshape(1), (), (positions,), INDEX_RULES["IndexSelectBackward0"]).reshape(())
    where = (slice(None),) * dim + (positions,)
    return take_index(input, (), where, INDEX_RULES["IndexSelectBackward0"])


def fill_value(value: Any, dtype: np.dtype) -> np.ndarray:
    """A number as PyTorch's fill_ and masked_fill take one: an int must fit int64 or uint64 (Python's
    OverflowError), then `dtype` (PyTorch's RuntimeError, for int8_tensor.fill_(1000) say: see fitted_number)."""
    if value.__class__ is int:
        checked_int(value)
    return fitted_number(value, dtype)


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    x = input._data
    m = mask._data if isinstance(mask, Tensor) else on_device(input, np.asarray(mask))
    if isinstance(mask, Tensor) and mask._device is not input._device:
        raise RuntimeError(
            f"expected self and mask to be on the same device, but got mask on {mask._device} and self on "
            f"{input._device}"
        )
    if m.dtype != np.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {m.dtype}")
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(
            f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} "
            f"dimension(s)."
        )
    fill = fill_value(value.item() if isinstance(value, Tensor) else value, x.dtype)
    try:
        data = np.where(*kernel_operands(m, fill), x)
    except ValueError:
        raise RuntimeError(
            f"masked_fill: the mask of shape {list(m.shape)} does not broadcast with the input of shape "
            f"{list(x.shape)}"
        ) from None
    keep = ~m
    if isinstance(value, Tensor):  # its own mask: a later write to the caller's must not reach the backward
        return record(MASKED_FILL_TENSOR, data, (input, value), keep=keep, mask=~keep)
    return record(MASKED_FILL, data, (input,), keep=keep)


METHODS = {
    "__getitem__": getitem, "gather": gather, "scatter_add": scatter_add, "index_select": index_select,
    "masked_fill": masked_fill,
}
