"""Any Python index (`tensor[index]`) brought to one form, `(basic, advanced)`, with PyTorch's reading of it.

Basic indexing (ints, slices, None) applies first, then advanced indexing (integer arrays) on the result, with
`advanced=None` when there is none: applying ints first is what makes PyTorch's `x[0, :, [0, 1]]` differ from
numpy's. Index arrays are parsed and checked on the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

FLOAT_INDEX = "tensors used as indices must be long, int, byte or bool tensors"
UINT8_INDEX = "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead."


def host_array(array: Any) -> np.ndarray:
    """An index array on the host, where indexes are checked and parsed (a GPU array copies over)."""
    return array if isinstance(array, np.ndarray) else array.get()


def host_copy(array: Any) -> np.ndarray:
    """An index array on the host that no later write to the caller's tensor or array changes: a node keeps it for
    its backward, which must read the index the forward read."""
    return array.copy() if isinstance(array, np.ndarray) else array.get()


_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.bool_))


def _index_array(entry: Any) -> np.ndarray | None:
    """An index entry as a host array when it is a tensor, array or sequence, else None."""
    if isinstance(entry, list | tuple | range):  # a sequence is one index tensor, as in PyTorch
        entry = np.asarray([host_array(e._data) if isinstance(e, Tensor) else e for e in entry])
        if entry.size == 0:
            entry = entry.astype(np.int64)
    elif isinstance(entry, Tensor):
        entry = entry._data
        if entry.ndim and entry.dtype not in _INDEX_DTYPES:  # a 0-dim one is an int, as PyTorch reads it
            raise IndexError(f"{FLOAT_INDEX}, got an index of dtype {entry.dtype}")
        entry = host_copy(entry) if entry.dtype.kind == "i" else host_array(entry)  # a mask becomes new arrays anyway
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


def checked_ints(
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
            advanced.append(checked_ints(entry, shape[dim], dim))
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
