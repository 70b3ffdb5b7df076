"""Cutting a tensor into sections (tensor_split, hsplit, vsplit, dsplit, split_with_sizes), its sliding windows
(Tensor.unfold) and putting a tensor on diagonals (diag_embed, diagflat).

tensor_split's pieces are plain slices of the input (views, SliceBackward0 each, as in PyTorch); unfold is a
strided view whose overlapping windows sum their gradients back into the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from actorgrad.ops.diagonals import _diagonal_index
from actorgrad.ops.index_parsing import host_array
from actorgrad.ops.indexing import INDEX_RULES, on_device, take_index
from actorgrad.ops.joining import split
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import Rule, make_view, record
from actorgrad.ops.shape import reshape, single_dim
from actorgrad.tensor import Tensor

__all__ = ["diag_embed", "diagflat", "dsplit", "hsplit", "split_with_sizes", "tensor_split", "vsplit"]


def _slices(input: Tensor, dim: int, bounds: list[int | None]) -> tuple[Tensor, ...]:
    """The pieces `input[..., bounds[i]:bounds[i + 1]]` along `dim`, each a SliceBackward0 view."""
    lead = (slice(None),) * dim
    rule = INDEX_RULES["SliceBackward0"]
    return tuple(take_index(input, lead + (slice(start, stop),), None, rule) for start, stop in zip(bounds, bounds[1:]))


def _sections_or_indices(value: Any) -> int | list[int]:
    """A tensor_split argument as a number of sections or a list of indices; a tensor must hold int64s."""
    if isinstance(value, Tensor):
        array = host_array(value._data)
        if array.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {array.ndim} dims")
        if array.dtype.kind != "i" or array.itemsize != 8:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{SCALAR_NAMES.get(array.dtype, array.dtype)}")
        return int(array) if array.ndim == 0 else array.tolist()
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, list | tuple) and all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        return list(value)
    raise TypeError(f"tensor_split(): argument 'indices_or_sections' must be int, tuple of ints or Tensor, not "
                    f"{type(value).__name__}")


def _cut_argument(op: str, indices_or_sections: Any, **keywords: Any) -> Any:
    """The one cut argument given, by position or by one of PyTorch's keyword names (`sections`, `indices`, ...)."""
    given = [value for value in (indices_or_sections, *keywords.values()) if value is not None]
    if len(given) != 1:
        raise TypeError(f"{op}() takes one of indices_or_sections, {', '.join(keywords)}; got {len(given)}")
    return given[0]


def tensor_split(input: Tensor, indices_or_sections: int | Sequence[int] | Tensor | None = None, dim: int = 0, *,
                 axis: int | None = None, sections: int | None = None, indices: Sequence[int] | None = None,
                 tensor_indices_or_sections: Tensor | None = None) -> tuple[Tensor, ...]:
    """`sections` pieces as even as can be (the first ones one longer), or the pieces between `indices` (Python
    slice bounds, so out-of-order or out-of-range ones give empty pieces), along `dim` (or `axis`)."""
    indices_or_sections = _cut_argument("tensor_split", indices_or_sections, sections=sections, indices=indices,
                                        tensor_indices_or_sections=tensor_indices_or_sections)
    if axis is not None:
        dim = axis
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = single_dim(dim, x.ndim, "tensor_split")
    cuts = _sections_or_indices(indices_or_sections)
    if isinstance(cuts, list):
        return _slices(input, d, [0, *cuts, None])
    if cuts <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {cuts}")
    size, rest = divmod(x.shape[d], cuts)
    bounds = [0]
    for i in range(cuts):
        bounds.append(bounds[-1] + size + (i < rest))
    return _slices(input, d, bounds)


def _split_at_least(op: str, input: Tensor, indices_or_sections: int | Sequence[int], ndim: int, dim: int):
    """hsplit, vsplit, dsplit: tensor_split along `dim`, for a tensor of at least `ndim` dims; a number of
    sections must divide the dim."""
    x = input._data
    if x.ndim < ndim:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {ndim} dimension, but got a tensor with "
                           f"{x.ndim} dimensions!")
    if isinstance(indices_or_sections, int) and not isinstance(indices_or_sections, bool):
        size = x.shape[dim]
        if indices_or_sections == 0 or size % indices_or_sections:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size of the dimension "
                               f"{size} is not divisible by the split_size {indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input: Tensor, indices_or_sections: int | Sequence[int] | None = None, *, sections: int | None = None,
           indices: Sequence[int] | None = None) -> tuple[Tensor, ...]:
    """tensor_split along dim 1 (dim 0 of a 1-d tensor)."""
    indices_or_sections = _cut_argument("hsplit", indices_or_sections, sections=sections, indices=indices)
    return _split_at_least("hsplit", input, indices_or_sections, 1, 1 if input.ndim > 1 else 0)


def vsplit(input: Tensor, indices_or_sections: int | Sequence[int] | None = None, *, sections: int | None = None,
           indices: Sequence[int] | None = None) -> tuple[Tensor, ...]:
    """tensor_split along dim 0 of a tensor of at least 2 dims."""
    indices_or_sections = _cut_argument("vsplit", indices_or_sections, sections=sections, indices=indices)
    return _split_at_least("vsplit", input, indices_or_sections, 2, 0)


def dsplit(input: Tensor, indices_or_sections: int | Sequence[int] | None = None, *, sections: int | None = None,
           indices: Sequence[int] | None = None) -> tuple[Tensor, ...]:
    """tensor_split along dim 2 of a tensor of at least 3 dims."""
    indices_or_sections = _cut_argument("dsplit", indices_or_sections, sections=sections, indices=indices)
    return _split_at_least("dsplit", input, indices_or_sections, 3, 2)


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0, *,
                     axis: int | None = None) -> tuple[Tensor, ...]:
    """Pieces of the given sizes along `dim` (or `axis`; they must sum to its size)."""
    return split(input, list(split_sizes), dim if axis is None else axis)


# -- unfold --------------------------------------------------------------------------------------------------------
def _unfold_grad(ops: Any, g: Any, order: tuple, merged: tuple, flat_shape: tuple, where: tuple,
                 self_shape: tuple) -> Any:
    """Each window's gradient moved back beside its dim and added in at the input positions it read: the reads of
    one position (overlapping windows) sum."""
    joined = ops.reshape(ops.permute(g, order), merged)
    return ops.reshape(ops.index_put_zeros(joined, flat_shape, (), where), self_shape)


UNFOLD = Rule("UnfoldBackward0", (("order", "merged", "flat_shape", "where", "self_shape"), _unfold_grad),
              unhooked=("where",))


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """A view of every window of `size` elements along `dimension`, `step` apart: that dim counts the windows, a
    new last dim holds each window's elements."""
    x = input._data
    d = single_dim(dimension, x.ndim, "unfold")
    length = x.shape[d] if x.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    xp = input._device.xp
    if x.ndim == 0:  # PyTorch gives the (size,) elements of the one window
        shape, strides = (size,), (x.itemsize,)
        order, where = (0,), xp.zeros(size, dtype=xp.int64)
    else:
        count = (length - size) // step + 1
        shape = x.shape[:d] + (count,) + x.shape[d + 1:] + (size,)
        strides = x.strides[:d] + (x.strides[d] * step,) + x.strides[d + 1:] + (x.strides[d],)
        order = tuple(range(d + 1)) + (x.ndim,) + tuple(range(d + 1, x.ndim))  # each window's dim after its own
        starts = xp.arange(count, dtype=xp.int64)[:, None] * step
        where = (starts + xp.arange(size, dtype=xp.int64)).reshape(-1)
    data = xp.lib.stride_tricks.as_strided(x, shape, strides)
    flat_shape = x.shape if x.ndim else (1,)
    merged = flat_shape[:d] + (where.size,) + flat_shape[d + 1:]
    where = (slice(None),) * d + (on_device(input, where),)
    out = record(UNFOLD, data, (input,), order=order, merged=merged, flat_shape=flat_shape, where=where,
                 self_shape=x.shape)
    if out._base is None:  # as_strided's array names no array as its base, so record could not tell it is a view
        make_view(out, input)
    return out


# -- diagonals -----------------------------------------------------------------------------------------------------
def _diagonal_read(ops: Any, g: Any, advanced: tuple, order: tuple) -> Any:
    """The diagonal of `g` at `advanced`, its diagonal dim moved last (from where numpy's indexing puts it)."""
    return ops.permute(ops.index(g, (), advanced), order)


DIAG_EMBED = Rule("DiagEmbedBackward0", (("advanced", "order"), _diagonal_read), unhooked=("advanced",))


def diagonal_placement(xp: Any, shape: tuple, offset: int, d1: int, d2: int) -> tuple[tuple, tuple]:
    """The advanced index of diagonal `offset` of dims d1 and d2 of `shape`, and the order that moves the
    diagonal dim of what it indexes last (numpy puts it where d1 was when d1 and d2 are neighbours, else first)."""
    advanced, _ = _diagonal_index(xp, shape, offset, d1, d2)
    where = min(d1, d2) if abs(d1 - d2) == 1 else 0
    order = tuple(d for d in range(len(shape) - 1) if d != where) + (where,)
    return advanced, order


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Zeros with the input's last dim written on diagonal `offset` of the new dims dim1 and dim2 of the
    output, whose other dims are the input's others."""
    x = input._data
    d1, d2 = single_dim(dim1, x.ndim + 1, "diag_embed"), single_dim(dim2, x.ndim + 1, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = x.shape[-1] + abs(offset)
    shape = list(x.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, n)
    xp = input._device.xp
    advanced, order = diagonal_placement(xp, tuple(shape), offset, d1, d2)
    data = xp.zeros(shape, x.dtype)
    data[advanced] = xp.moveaxis(x, -1, order[-1])
    return record(DIAG_EMBED, data, (input,), advanced=advanced, order=order)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A square matrix with the input's elements, flattened, on diagonal `offset`."""
    return diag_embed(reshape(input, (-1,)), offset)


METHODS: dict[str, Any] = {
    "tensor_split": tensor_split, "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit,
    "split_with_sizes": split_with_sizes, "unfold": unfold, "diag_embed": diag_embed, "diagflat": diagflat,
}
