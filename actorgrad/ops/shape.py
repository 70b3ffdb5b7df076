"""Shape ops (reshape, flatten, squeeze, transpose, expand, repeat, flip, roll, ...) and their gradient
rules. pad, exported from here as this family's, lives in padding; pixel_shuffle and pixel_unshuffle, exported
here as torch.pixel_shuffle is, live in resampling, which is no family: its unfold (im2col) is not Tensor.unfold."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.memory_formats import (
    checked_format,
    contiguous_format,
    is_laid_out,
    laid_out,
    preserve_format,
    preserved,
)
from actorgrad.ops.dtype_views import is_dtype, view_as_dtype
from actorgrad.ops.operands import type_name
from actorgrad.ops.padding import pad
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import is_one_dim, normalize_dims, one_dim
from actorgrad.ops.resampling import pixel_shuffle, pixel_unshuffle
from actorgrad.ops.size_arguments import int_sizes
from actorgrad.tensor import Tensor, array_storage
from actorgrad.user_warnings import warn_once

__all__ = [
    "broadcast_to", "clone", "flatten", "flip", "pad", "permute", "pixel_shuffle", "pixel_unshuffle", "repeat",
    "reshape", "roll", "squeeze", "t", "transpose", "unsqueeze",
]


def _reshape_back(ops: Any, g: Any, self_shape: tuple[int, ...]) -> Any:
    return ops.reshape(g, self_shape)


_RESHAPE_BACK = (("self_shape",), _reshape_back)
MASKED_GRAD = (("mask",), lambda ops, g, mask: g * mask)  # the gradient where a mask is 1
VIEW = Rule("ViewBackward0", _RESHAPE_BACK)
RESHAPE_ALIAS = Rule("ReshapeAliasBackward0", _RESHAPE_BACK)
UNSAFE_VIEW = Rule("UnsafeViewBackward0", _RESHAPE_BACK)
TRANSPOSE = Rule(  # a 0-d tensor's transpose(0, -1) swaps nothing: numpy has no axis 0 to swap with itself
    "TransposeBackward0", (("dim0", "dim1"), lambda ops, g, dim0, dim1: ops.swapaxes(g, dim0, dim1) if g.ndim else g)
)
T_RULE = Rule("TBackward0", (("dims",), lambda ops, g, dims: ops.permute(g, dims)))
PERMUTE = Rule(
    "PermuteBackward0", (("inverse",), lambda ops, g, inverse: ops.permute(g, inverse))
)
TO_COPY = Rule("ToCopyBackward0", (("self_dtype",), lambda ops, g, self_dtype: ops.cast(g, self_dtype)))
EXPAND = Rule(
    "ExpandBackward0",
    (("self_shape",), lambda ops, g, self_shape: ops.sum_to(g, self_shape)),
    cost=lambda data, params: data.size,
)
SQUEEZE = Rule("SqueezeBackward0", _RESHAPE_BACK)
SQUEEZE_DIM = Rule("SqueezeBackward1", _RESHAPE_BACK)
SQUEEZE_DIMS = Rule("SqueezeBackward2", _RESHAPE_BACK)
UNSQUEEZE = Rule("UnsqueezeBackward0", _RESHAPE_BACK)
REPEAT = Rule(
    "RepeatBackward0",
    (
        ("interleaved", "repeat_axes", "self_shape"),
        lambda ops, g, interleaved, axes, self_shape: ops.reshape(
            ops.sum(ops.reshape(g, interleaved), axes), self_shape
        ),
    ),
)
FLIP = Rule("FlipBackward0", (("dims",), lambda ops, g, dims: ops.flip(g, dims)))
ROLL = Rule(
    "RollBackward0",
    (("shifts", "dims"), lambda ops, g, shifts, dims: ops.roll(g, tuple(-s for s in shifts), dims)),
)
CLONE = Rule("CloneBackward0", ((), None))


def reshape(input: Tensor, *sizes: Any, shape: Any = None) -> Tensor:
    x = input._data
    data = _reshaped(x, int_sizes("reshape", sizes, shape, "shape"))
    if x.flags.c_contiguous:
        rule = VIEW
    else:  # PyTorch's nodes: an alias of the input's strides, or a copy of it made row-major
        rule = RESHAPE_ALIAS if array_storage(data) is array_storage(x) else UNSAFE_VIEW
    return record(rule, data, (input,), self_shape=x.shape)


def _reshaped(x: Any, target: tuple[int, ...]) -> Any:
    """The array `x` at the shape `target` (one -1 inferred): a view where strides allow, else a copy."""
    for i, n in enumerate(target):
        if isinstance(n, int) and n < -1:
            raise RuntimeError(f"invalid shape dimension {n} at index {i} of shape {list(target)}")
    if target.count(-1) > 1:
        raise RuntimeError(f"only one dimension can be inferred, got shape {list(target)}")
    if -1 in target and not x.size:  # numpy cannot infer a size from 0 elements; PyTorch can, from the others
        known = math.prod(n for n in target if n != -1)
        if not known:
            raise RuntimeError(
                f"cannot reshape tensor of 0 elements into shape {list(target)} because the unspecified dimension "
                f"size -1 can be any value and is ambiguous"
            )
        target = tuple(0 if n == -1 else n for n in target)
    try:
        return x.reshape(target)
    except ValueError:
        raise RuntimeError(f"shape '{list(target)}' is invalid for input of size {x.size}") from None


VIEW_INCOMPATIBLE = (
    "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
    "contiguous subspaces). Use .reshape(...) instead."
)


VIEW_ARGUMENTS = (
    "view() received an invalid combination of arguments - got ({}), but expected one of:\n * (torch.dtype dtype)\n"
    " * (tuple of ints size)\n"
)


def view(input: Tensor, *shape: Any, size: Any = None, dtype: Any = None) -> Tensor:
    """`reshape` that refuses to copy: the result must share the input's memory, as PyTorch's view does.
    view(dtype) reads the memory as another dtype instead."""
    if dtype is None and size is None and len(shape) == 1 and is_dtype(shape[0]):
        (dtype,), shape = shape, ()
    if dtype is not None:
        if shape or size is not None:
            raise TypeError("view() takes either a shape or a dtype, not both")
        return view_as_dtype(input, np.dtype(dtype))
    try:
        sizes = int_sizes("view", shape, size, "size")
    except TypeError:  # PyTorch names both of view's forms
        got = [type_name(v) for v in shape] + ([] if size is None else [f"size={type_name(size)}"])
        raise TypeError(VIEW_ARGUMENTS.format(", ".join(got))) from None
    x = input._data
    data = _reshaped(x, sizes)
    if data.size and array_storage(data) is not array_storage(x):  # numpy copied: no strides give it in place
        raise RuntimeError(VIEW_INCOMPATIBLE)
    return record(VIEW, data, (input,), self_shape=x.shape)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    x = input._data
    if x.ndim == 0:  # dims 0 and -1 only, as PyTorch's, giving a view of the tensor itself
        single_dim(dim0, 0, "transpose"), single_dim(dim1, 0, "transpose")
        return record(TRANSPOSE, x.view(), (input,), dim0=0, dim1=0)
    d0, d1 = (normalize_dims(d, x.ndim, "transpose")[0] for d in (dim0, dim1))
    return record(TRANSPOSE, np.swapaxes(x, d0, d1), (input,), dim0=d0, dim1=d1)


def permute(input: Tensor, *order: Any, dims: Any = None) -> Tensor:
    x = input._data
    order = int_sizes("permute", order, dims, "dims")
    if len(order) != x.ndim:
        raise RuntimeError(
            f"permute(): number of dims in the ordering ({len(order)}) does not match the tensor's {x.ndim} dims"
        )
    normalize_dims(order, x.ndim, "permute")
    order = tuple(d % x.ndim for d in order)
    return record(PERMUTE, np.transpose(x, order), (input,), inverse=tuple(np.argsort(order).tolist()))


T_NOT_2D = (
    "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it will throw an "
    "error in a future release. Consider `x.mT` to transpose batches of matrices or "
    "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor."
)


def numpy_T(input: Tensor) -> Tensor:
    """`.T`: all dims reversed; deprecated, as in PyTorch, on tensors that are not matrices."""
    ndim = input.ndim
    if ndim == 0:  # once per process, as PyTorch's TORCH_WARN_ONCE
        warn_once("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.")
    elif ndim != 2:
        warn_once(T_NOT_2D)
    return permute(input, tuple(reversed(range(ndim))))


def t(input: Tensor) -> Tensor:
    """The transpose of a matrix; a tensor of fewer dims comes back as it is (PyTorch's `t()`)."""
    x = input._data
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    dims = tuple(reversed(range(x.ndim)))
    return record(T_RULE, np.transpose(x, dims), (input,), dims=dims)


def matrix_T(input: Tensor) -> Tensor:
    """`.mT`: the last two dims swapped, a batch of matrices transposed; a 0-d tensor is itself, deprecated as in
    PyTorch."""
    if input.ndim == 0:
        warn_once("Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases.")
        return input
    if input.ndim < 2:
        raise RuntimeError(
            f"tensor.mT is only supported on matrices or batches of matrices. Got {input.ndim}-D tensor."
        )
    return transpose(input, -2, -1)


def _expanded_shape(shape: tuple[int, ...], sizes: tuple[int, ...]) -> tuple[int, ...]:
    """`sizes` with each -1 replaced by the size it keeps, checked as PyTorch's expand checks them."""
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(
            f"expand(size={list(sizes)}): the number of sizes provided ({len(sizes)}) must be greater or equal "
            f"to the number of dimensions in the tensor ({len(shape)}, shape {list(shape)})"
        )
    out = list(sizes)
    for i in reversed(range(len(sizes))):  # from the last dim, so a clash names the last one, as PyTorch's
        n = sizes[i]
        if n < -1:  # PyTorch's numel then overflows; this says which size
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(sizes)}")
        if i < lead:
            if n < 0:
                raise RuntimeError(
                    f"The expanded size of the tensor ({n}) isn't allowed in a leading, non-existing dimension {i}"
                )
            continue
        have = shape[i - lead]
        if n == -1:
            out[i] = have
        elif have != 1 and n != have:
            raise RuntimeError(
                f"The expanded size of the tensor ({n}) must match the existing size ({have}) at non-singleton "
                f"dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(shape)}"
            )
    return tuple(out)


def broadcast_to(input: Tensor, *sizes: Any, size: Any = None) -> Tensor:
    """A view of `input` at the broadcast shape `size` (-1 keeps a dim's size), given as the method takes it: one
    sequence, or separate ints (`x.broadcast_to(3)`)."""
    x = input._data
    target = _expanded_shape(x.shape, int_sizes("broadcast_to", sizes, size, "size"))
    data = np.broadcast_to(x, target)
    if data.size == x.size and x.size:  # no element repeated: a writeable view, as PyTorch's, not numpy's read-only one
        data = x.reshape(target)
    return record(EXPAND, data, (input,), self_shape=x.shape)


def single_dim(dim: int, ndim: int, op: str) -> int:
    """One dim as a non-negative int; a 0-dim tensor takes dims -1 and 0, as in PyTorch."""
    dims = normalize_dims(dim, max(ndim, 1), op)
    if len(dims) != 1:  # a tuple of dims where the op takes one
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    return dims[0]


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    x = input._data
    if x.ndim == 0:  # its dims are checked as one dim's, as PyTorch's
        single_dim(start_dim, 1, "flatten"), single_dim(end_dim, 1, "flatten")
        return reshape(input, (1,))
    start, end = single_dim(start_dim, x.ndim, "flatten"), single_dim(end_dim, x.ndim, "flatten")
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input
    return reshape(input, x.shape[:start] + (math.prod(x.shape[start:end + 1]),) + x.shape[end + 1:])


def squeeze(input: Tensor, dim: int | tuple[int, ...] | None = None, *, axis: Any = None) -> Tensor:
    """`input` without its size-1 dims (those of `dim`, or numpy's `axis`, when given): a view."""
    x = input._data
    if axis is not None:
        dim = axis
    if dim is None:
        rule, dims = SQUEEZE, tuple(i for i, n in enumerate(x.shape) if n == 1)
    else:
        rule = SQUEEZE_DIM if is_one_dim(dim) else SQUEEZE_DIMS  # a numpy int or 0-d tensor is one dim too
        dims = tuple(d for d in normalize_dims(dim, max(x.ndim, 1), "squeeze") if d < x.ndim and x.shape[d] == 1)
    data = x.reshape(tuple(n for i, n in enumerate(x.shape) if i not in dims))
    return record(rule, data, (input,), self_shape=x.shape)


def unsqueeze(input: Tensor, dim: int | None = None, *, axis: int | None = None) -> Tensor:
    """A view of `input` with a size-1 dim inserted at `dim` (or numpy's `axis`)."""
    x = input._data
    if axis is not None:
        dim = axis
    if dim is None or isinstance(dim, tuple | list):  # PyTorch takes one dim (normalize_dims would take several)
        raise TypeError(f"unsqueeze(): argument 'dim' (position 1) must be int, not {type(dim).__name__}")
    d = single_dim(dim, x.ndim + 1, "unsqueeze")
    return record(UNSQUEEZE, np.expand_dims(x, d), (input,), self_shape=x.shape)


def repeat(input: Tensor, *sizes: Any, repeats: Any = None) -> Tensor:
    x = input._data
    sizes = int_sizes("repeat", sizes, repeats, "repeats")
    if len(sizes) < x.ndim:
        raise RuntimeError(
            f"Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor: "
            f"repeat{tuple(sizes)} on a tensor of shape {list(x.shape)}"
        )
    padded_shape = (1,) * (len(sizes) - x.ndim) + x.shape
    if any(n < 0 for n in sizes):
        result = [n * r for n, r in zip(padded_shape, sizes)]
        negative = [n for n in result if n < 0]
        if negative:
            raise RuntimeError(f"Trying to create tensor with negative dimension {negative[0]}: {result}")
        sizes = tuple(max(r, 0) for r in sizes)  # an empty dim repeated a negative number of times stays empty
    interleaved = tuple(n for pair in zip(sizes, padded_shape) for n in pair)
    data = np.tile(x.reshape(padded_shape), sizes)
    if not data.flags.c_contiguous:  # row-major, as PyTorch's (np.tile copies the input as laid out if no repeat)
        data = data.copy(order="C")
    return record(
        REPEAT, data, (input,), interleaved=interleaved, repeat_axes=tuple(range(0, len(interleaved), 2)),
        self_shape=x.shape,
    )


def flip(input: Tensor, *flipped: Any, dims: Any = None) -> Tensor:
    x = input._data
    flipped = int_sizes("flip", flipped, dims, "dims")
    dims = normalize_dims(flipped, x.ndim, "flip") if x.ndim else one_dim(flipped, 0, "flip")
    # a copy laid out as the input (PyTorch's flip is no view: numpy's would follow later in-place changes of it)
    return record(FLIP, preserved(input._device.xp, np.flip(x, dims), x), (input,), dims=dims)


def roll(input: Tensor, shifts: int | tuple[int, ...], dims: int | tuple[int, ...] | None = None) -> Tensor:
    x = input._data
    shifts = int_sizes("roll", (shifts,), None, "shifts")
    if not shifts:
        raise RuntimeError("`shifts` required")
    if dims is not None:  # an empty sequence of dims: the flattened roll, as None
        dims = int_sizes("roll", (dims,), None, "dims") or None
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return record(ROLL, np.roll(x, shifts[0]), (input,), shifts=shifts, dims=None)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if not x.ndim:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    dims = tuple(single_dim(d, x.ndim, "roll") for d in dims)
    data = np.roll(x, shifts, dims)
    if not data.flags.c_contiguous:  # row-major, as PyTorch's (numpy's keeps the input's order)
        data = data.copy(order="C")
    return record(ROLL, data, (input,), shifts=shifts, dims=dims)


def clone(input: Tensor, *, memory_format: Any = preserve_format) -> Tensor:
    """A copy in new memory: by default (preserve_format) with the input's layout, as PyTorch's (see
    `memory_formats.preserved`), else in `memory_format`'s."""
    if memory_format is preserve_format:
        x = input._data
        return record(CLONE, x.copy() if x.flags.c_contiguous else preserved(input._device.xp, x, x), (input,))
    return record(CLONE, laid_out(input._device.xp, input._data, checked_format("clone", memory_format)), (input,))


def contiguous(input: Tensor, memory_format: Any = contiguous_format) -> Tensor:
    """The tensor itself when its memory is already in `memory_format`'s order (row-major by default), else a copy
    in that order."""
    x = input._data
    if memory_format is contiguous_format or memory_format is preserve_format:
        if x.flags.c_contiguous:
            return input
        return record(CLONE, input._device.xp.ascontiguousarray(x), (input,))  # array creation does not dispatch
    if is_laid_out(x, checked_format("contiguous", memory_format)):
        return input
    return record(CLONE, laid_out(input._device.xp, x, memory_format), (input,))


def to_dtype(input: Tensor, dtype: Any) -> Tensor:
    """A differentiable cast; the gradient is cast back to the input's dtype."""
    x = input._data
    data = x.astype(dtype) if x.flags.c_contiguous else preserved(input._device.xp, x, x, dtype)
    return record(TO_COPY, data, (input,), self_dtype=x.dtype)


def expand(input: Tensor, *sizes: Any, size: Any = None) -> Tensor:
    """Tensor.expand: broadcast_to with the sizes as separate ints, one sequence, or `size=`."""
    return broadcast_to(input, int_sizes("expand", sizes, size, "size"))


METHODS = {
    "reshape": reshape, "view": view, "transpose": transpose, "permute": permute, "t": t, "mT": property(matrix_T),
    "broadcast_to": broadcast_to, "expand": expand,
    "T": property(numpy_T), "flatten": flatten, "squeeze": squeeze, "unsqueeze": unsqueeze, "repeat": repeat,
    "flip": flip, "roll": roll, "clone": clone, "contiguous": contiguous,
}
