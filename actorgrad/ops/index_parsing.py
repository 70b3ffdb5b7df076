"""Any Python index (`tensor[index]`) brought to one form, `(basic, advanced)`, with PyTorch's reading of it.

Basic indexing (ints, slices, None) applies first, then advanced indexing (integer arrays) on the result, with
`advanced=None` when there is none: applying ints first is what makes PyTorch's `x[0, :, [0, 1]]` differ from
numpy's. Index arrays are parsed and checked on the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.devices import cpu
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
        if entry.ndim and entry.dtype.kind in "iu" and entry.dtype not in _INDEX_DTYPES:  # a 0-dim one is an int
            raise IndexError(f"{FLOAT_INDEX}, got an index of dtype {entry.dtype}")
        entry = host_copy(entry) if entry.dtype.kind == "i" else host_array(entry)  # a mask becomes new arrays anyway
    elif isinstance(entry, np.ndarray):
        if entry.dtype.kind in "iu":
            entry = entry.copy()
    else:
        return None
    if entry.dtype == np.uint8:  # a byte tensor or array is a mask, as in PyTorch (not the ints 0 and 1)
        if entry.ndim:  # a 0-dim one reads as a bool, without the warning
            warn(UINT8_INDEX)
        entry = entry.astype(np.bool_)
    return entry  # of any dtype: PyTorch refuses a float index only after the basic part (see _checked_advanced)


BYTE_FILL = "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"
_MASK_DTYPES = (np.dtype(np.bool_), np.dtype(np.uint8))


def filled_mask(index: Any, value: Any) -> np.dtype | None:
    """The dtype of the mask through which PyTorch's index_put_ writes `value` at `index` by masked_fill_, else None:
    the only entry it makes an index tensor is a mask of 1 or more dims (bool, or uint8, which masked_fill_ then
    refuses: see BYTE_FILL), with ints, slices, None and Ellipsis around it, and the value is a number or a
    one-element cpu tensor. A Python bool or a 0-dim mask becomes an integer index tensor; a list holding sequences
    is a tuple of entries."""
    if isinstance(value, Tensor) and (value._data.size != 1 or value._device is not cpu):
        return None
    entries = index if isinstance(index, tuple) or (index.__class__ is list and any(
        isinstance(e, Tensor | np.ndarray | list | tuple | range | slice) or e is None or e is Ellipsis for e in index
    )) else (index,)
    masks = []  # per index tensor: its dtype if a mask, else None
    for entry in entries:
        if isinstance(entry, Tensor | np.ndarray):
            array = entry._data if isinstance(entry, Tensor) else entry
            if array.ndim or array.dtype.kind == "b":  # a 0-dim integer one is an int
                masks.append(array.dtype if array.ndim and array.dtype in _MASK_DTYPES else None)
        elif isinstance(entry, list | tuple | range) or entry.__class__ is bool:
            bools = isinstance(entry, list | tuple) and bool(entry) and all(e.__class__ is bool for e in entry)
            masks.append(_MASK_DTYPES[0] if bools else None)
    return masks[0] if len(masks) == 1 else None


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


def _entries(index: Any, int_scalars: bool) -> list:
    entries = list(index) if isinstance(index, tuple) else [index]
    out = []
    for entry in entries:
        array = _index_array(entry)
        if int_scalars and array is not None and array.ndim == 0 and array.dtype.kind in "iu":
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


def parse_index(index: Any, shape: tuple[int, ...], *, int_scalars: bool = True) -> tuple[tuple, tuple | None, str]:
    """`(basic, advanced, node name)` for `tensor[index]` on a tensor of `shape`; without `int_scalars` a 0-dim
    integer tensor is an index tensor, not an int (as index_put_ reads it)."""
    index = _as_tuple(index)
    entries = _entries(index, int_scalars)
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
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    if not ellipses:
        entries.append(Ellipsis)
    basic, advanced = [], []
    name, dim, any_array = "AliasBackward0", 0, False
    for position, entry in enumerate(entries):
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
            if not -size <= entry < size:  # PyTorch names the entry's place in the index, not the dim
                raise IndexError(f"index {entry} is out of bounds for dimension {position} with size {size}")
            basic.append(entry)
            name, dim = "SelectBackward0", dim + 1
        elif isinstance(entry, slice):
            if entry.step is not None and entry.step <= 0:
                raise ValueError("slice step cannot be zero" if entry.step == 0 else "step must be greater than zero")
            basic.append(entry)
            advanced.append(slice(None))
            if not keeps_whole(entry, shape[dim]) or not isinstance(index, tuple):
                name = "SliceBackward0"  # PyTorch skips a slice that keeps the whole dim, unless it is alone
            dim += 1
        elif entry.dtype.kind == "b" and not entry.ndim:  # x[True] is x[None], x[False] that with 0 rows
            basic.append(None)
            advanced.append(np.zeros(int(entry), dtype=np.intp))
            any_array = True
        else:  # an index array (a mask spans its dims), checked once the basic part is known, as PyTorch's
            basic += [slice(None)] * _consumed(entry)
            advanced.append(entry)
            any_array, dim = True, dim + _consumed(entry)
    if any_array:
        return tuple(basic), _checked_advanced(advanced, shape, tuple(basic)), "IndexBackward0"
    return tuple(basic), None, name


def keeps_whole(entry: slice, size: int) -> bool:
    """Whether PyTorch skips a slice as keeping its dim whole: as written, from None or 0, by step 1, to None or at
    least `size` (so `x[0, -5:]` records a SliceBackward0 even where -5 reaches the start)."""
    return entry.start in (None, 0) and entry.step in (None, 1) and (entry.stop is None or entry.stop >= size)


def _checked_advanced(entries: list, shape: tuple[int, ...], basic: tuple) -> tuple:
    """The advanced index (one slice or integer array per dim of `tensor[basic]`) of `entries` (slices and index
    arrays, a mask spanning its dims), after PyTorch's checks in its order: integer or bool arrays; masks of the
    shape they cover; index shapes that broadcast; no index into a size-0 dim giving elements; then positions in
    range, which its kernel checks only as it reads them, so not at all where the result has no elements (there the
    index arrays become zeros of their broadcast shape, which numpy reads without complaint)."""
    region = _basic_shape(shape, basic)  # the dims the advanced index reads
    for entry in entries:
        if entry.__class__ is not slice and entry.dtype.kind not in "iub":
            raise IndexError(f"{FLOAT_INDEX}, got an index of dtype {entry.dtype}")
    advanced, given = [], []  # given: the places of integer arrays, whose positions need a check (a mask's don't)
    for entry in entries:
        if entry.__class__ is not slice and entry.dtype.kind == "b":
            _check_mask(entry, region, len(advanced))
            advanced += np.nonzero(entry)
            continue
        if entry.__class__ is not slice:
            given.append(len(advanced))
        advanced.append(entry)
    index_shape = _broadcast_shape(advanced)
    places = [k for k, a in enumerate(advanced) if a.__class__ is not slice]
    if any(region[k] == 0 for k in places) and 0 not in index_shape:
        raise IndexError("index is out of bounds for dimension with size 0")
    if 0 in index_shape or 0 in region:
        return tuple(np.zeros(index_shape, np.intp) if k in places else a for k, a in enumerate(advanced))
    if any(advanced[k].min() < -region[k] or advanced[k].max() >= region[k] for k in given):
        raise _first_outside([advanced[k] for k in places], [region[k] for k in places], index_shape)
    return tuple(advanced)


def _check_mask(mask: np.ndarray, region: tuple[int, ...], start: int) -> None:
    """PyTorch's error for a mask that does not match the dims it covers from `start` on, which names its first
    dim that differs."""
    for j, n in enumerate(mask.shape):
        if n != region[start + j]:
            raise IndexError(f"The shape of the mask {list(mask.shape)} at index {j} does not match the shape of the "
                             f"indexed tensor {list(region)} at index {start + j}")


def _outside(index: np.ndarray, size: int) -> np.ndarray:
    return (index < -size) | (index >= size)


def _first_outside(arrays: list, sizes: list, index_shape: tuple) -> IndexError:
    """PyTorch's error for the first position out of range as its kernel reads them: in row-major order over the
    broadcast index, each place's index tensors in turn, named by its count among them."""
    bad = np.stack([np.broadcast_to(_outside(a, n), index_shape) for a, n in zip(arrays, sizes)], axis=-1)
    place, j = divmod(int(np.flatnonzero(bad)[0]), len(arrays))
    value = np.broadcast_to(arrays[j], index_shape).flat[place]
    return IndexError(f"index {value} is out of bounds for dimension {j} with size {sizes[j]}")


def _broadcast_shape(advanced: list) -> tuple[int, ...]:
    """The index tensors' common shape, with PyTorch's error for shapes that do not broadcast (not numpy's)."""
    shapes = [a.shape for a in advanced if a.__class__ is not slice]
    if all(shape == shapes[0] for shape in shapes):
        return shapes[0]
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         f"{', '.join(str(list(s)) for s in shapes)}") from None


def _basic_shape(shape: tuple[int, ...], basic: tuple) -> tuple[int, ...]:
    """The shape of `tensor[basic]` (ints, slices and None, one slice or int per dim)."""
    out, dim = [], 0
    for entry in basic:
        if entry is None:
            out.append(1)
            continue
        if entry.__class__ is slice:
            out.append(len(range(*entry.indices(shape[dim]))))
        dim += 1
    return tuple(out)
