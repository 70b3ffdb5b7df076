"""Ops spelled through views, cat and index_select, as PyTorch spells them (so their nodes are those ops'):
atleast_1d/2d/3d, hstack, vstack, dstack, column_stack, meshgrid, cartesian_prod, repeat_interleave, kron,
fliplr, flipud; and rot90, with its own rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from actorgrad.memory_formats import contiguous_format, preserved
from actorgrad.ops.indexing import index_select
from actorgrad.ops.joining import cat, not_tensors, stack, tensor_list
from actorgrad.ops.operands import SCALAR_NAMES, require_tensor_elements
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import normalize_dims
from actorgrad.ops.shape import flip
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "cartesian_prod", "column_stack", "dstack", "fliplr", "flipud",
    "hstack", "kron", "meshgrid", "repeat_interleave", "rot90", "row_stack", "vstack",
]


def _rot90_grad(ops: Any, g: Any, turns: int, dims: tuple[int, int]) -> Any:
    """rot90(g, -k): a quarter turn is a flip of the second dim then a swap of the two, so undo them in reverse."""
    a, b = dims
    if turns == 1:
        return ops.flip(ops.swapaxes(g, a, b), (b,))
    if turns == 2:
        return ops.flip(g, dims)
    if turns == 3:
        return ops.swapaxes(ops.flip(g, (b,)), a, b)
    return g


ROT90 = Rule("Rot90Backward0", (("turns", "dims"), _rot90_grad))


def _each(tensors: tuple, reshape: Any, op: str) -> Any:
    """One tensor in, one out; several (or a list or tuple of them), a tuple, as torch.atleast_* give."""
    if len(tensors) == 1:
        (only,) = tensors
        if isinstance(only, Tensor):
            return reshape(only)
        if not isinstance(only, list | tuple):
            got = type(only).__name__
            mismatch = f"      didn't match because some of the arguments have invalid types: (!{got}!)\n"
            raise TypeError(f"{op}() received an invalid combination of arguments - got ({got}), but expected one "
                            f"of:\n * (Tensor input)\n{mismatch} * (tuple of Tensors tensors)\n{mismatch}")
        tensors = only
    require_tensor_elements(tensors)
    return tuple(reshape(t) for t in tensors)


def _at_least_1d(t: Tensor) -> Tensor:
    return t.reshape(1) if t.ndim == 0 else t


def _at_least_2d(t: Tensor) -> Tensor:
    return t.reshape(1, 1) if t.ndim == 0 else t.unsqueeze(0) if t.ndim == 1 else t


def _at_least_3d(t: Tensor) -> Tensor:
    if t.ndim == 0:
        return t.reshape(1, 1, 1)
    if t.ndim == 1:
        return t.unsqueeze(0).unsqueeze(-1)
    return t.unsqueeze(-1) if t.ndim == 2 else t


def atleast_1d(*tensors: Any) -> Any:
    return _each(tensors, _at_least_1d, "atleast_1d")


def atleast_2d(*tensors: Any) -> Any:
    return _each(tensors, _at_least_2d, "atleast_2d")


def atleast_3d(*tensors: Any) -> Any:
    return _each(tensors, _at_least_3d, "atleast_3d")


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Joined along dim 1, or along dim 0 when all are (at most) 1-D."""
    pieces = [_at_least_1d(t) for t in tensor_list(tensors, "hstack")]
    return cat(pieces, 0 if all(t.ndim == 1 for t in pieces) else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Joined along dim 0, 1-D tensors as rows."""
    return cat([_at_least_2d(t) for t in tensor_list(tensors, "vstack")], 0)


def row_stack(tensors: Sequence[Tensor]) -> Tensor:
    """vstack's other name in PyTorch (whose error for an empty list names vstack)."""
    if not isinstance(tensors, list | tuple):
        raise not_tensors("row_stack", tensors)
    return vstack(tensors)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Joined along dim 2, after atleast_3d."""
    return cat([_at_least_3d(t) for t in tensor_list(tensors, "dstack")], 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Joined along dim 1, 0-D and 1-D tensors as columns."""
    pieces = [t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in tensor_list(tensors, "column_stack")]
    return cat(pieces, 1)


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids: output i holds tensor i's values along dim i ('ij', the default) or with the first two
    dims swapped ('xy'), each an expanded view."""
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.")
        indexing = "ij"
    require_tensor_elements(tensors)
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: a "
                               f"{t.ndim}D tensor of shape {list(t.shape)}")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:
        order[0], order[1] = 1, 0
    shape = [0] * len(tensors)
    for i, t in enumerate(tensors):
        shape[order[i]] = t.numel()
    grids = []
    for i, t in enumerate(tensors):
        view = [1] * len(tensors)
        view[order[i]] = -1
        grids.append(t.reshape(*view).expand(*shape))
    return tuple(grids)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of the 1-D tensors' elements, one per row (a single tensor comes back as it is)."""
    require_tensor_elements(tensors)
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    return stack([grid.flatten() for grid in meshgrid(*tensors, indexing="ij")], 1)


def _checked_counts(counts: Any) -> Any:
    """Repeat counts after PyTorch's checks of their dtype (int32 or int64) and sign."""
    if counts.dtype.kind != "i" or counts.dtype.itemsize < 4:
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{SCALAR_NAMES[counts.dtype]}'")
    if bool((counts < 0).any()):
        raise RuntimeError("repeats can not be negative")
    return counts


def _check_output_size(total: int, output_size: int | None) -> None:
    if output_size is not None and output_size != total:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {total} but got {output_size}")


def repeat_interleave(input: Tensor, repeats: int | Tensor | None = None, dim: int | None = None, *,
                      output_size: int | None = None, axis: int | None = None) -> Tensor:
    """Each element (each slice along `dim`, or `axis`, of the flattened input when it is None) repeated `repeats`
    times, or repeats[i] times for slice i, in new memory. With only an integer tensor, the indices 0, 1, ... each
    repeated that often, in that tensor's dtype."""
    xp = input._device.xp
    if repeats is None:
        counts = _checked_counts(input._data)
        if counts.ndim != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        _check_output_size(int(counts.sum()), output_size)
        return Tensor(xp.repeat(xp.arange(counts.shape[0], dtype=counts.dtype), counts), device=input._device)
    if axis is not None:
        dim = axis
    if dim is None:
        input, d = input.reshape(-1), 0
    else:
        (d,) = normalize_dims(dim, input.ndim, "repeat_interleave")
    size = input.shape[d] if input.ndim else 1
    if isinstance(repeats, Tensor):
        if input.ndim == 0 and dim is not None:  # PyTorch reads the 0-dim input's size along dim
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        counts = _checked_counts(repeats._data)
        if counts.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        counts = counts.reshape(-1)
        if counts.shape[0] not in (1, size):
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{counts.shape[0]} and input.size({d}) = {size}")
        index = xp.repeat(xp.arange(size, dtype=np.int64), xp.broadcast_to(counts, (size,)))
        _check_output_size(index.shape[0], output_size)
        return index_select(input, d, Tensor(index, device=input._device))
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    _check_output_size(size * repeats, output_size)
    shape = list(input.shape)
    expanded = input.unsqueeze(d + 1).expand(*shape[:d + 1], repeats, *shape[d + 1:])
    # cloned row-major before the view, as PyTorch's (a clone keeping a non-contiguous input's layout has no view)
    return expanded.clone(memory_format=contiguous_format).view(*shape[:d], size * repeats, *shape[d + 1:])


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: block (i, j, ...) is input[i, j, ...] * other (the shorter shape padded with 1s)."""
    n = max(input.ndim, other.ndim)
    a_shape = (1,) * (n - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (n - other.ndim) + tuple(other.shape)
    a = input.reshape([s for k in a_shape for s in (k, 1)])  # a list: () for 0-d operands
    b = other.reshape([s for k in b_shape for s in (1, k)])
    return (a * b).reshape([x * y for x, y in zip(a_shape, b_shape)])


def fliplr(input: Tensor) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, 1)


def flipud(input: Tensor) -> Tensor:
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, 0)


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """The input turned k quarter turns from the first of `dims` towards the second."""
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    first, second = (normalize_dims(d, input.ndim, "rot90")[0] for d in dims)
    if first == second:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    xp = input._device.xp
    x = input._data
    turns = k % 4
    if not turns:
        data = xp.array(x, order="C", copy=True)
    else:  # PyTorch's layout: a flip, laid out as the input, then (odd turns) its two dims swapped
        flipped = xp.flip(x, {1: second, 2: (first, second), 3: first}[turns])
        data = preserved(xp, flipped, x)
        if turns % 2:
            data = xp.swapaxes(data, first, second)
    return record(ROT90, data, (input,), turns=turns, dims=(first, second))


METHODS: dict[str, Any] = {
    "repeat_interleave": repeat_interleave, "kron": kron, "fliplr": fliplr, "flipud": flipud, "rot90": rot90,
}
