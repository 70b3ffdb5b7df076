"""Joining and splitting (cat, stack, split, chunk, unbind) and their gradient rules.

As in PyTorch, the pieces of one split, chunk or unbind are the outputs of one node (piece k its output k) and views
of the input; the node's backward joins the pieces' gradients once (zeros for pieces that got none), so a backward
through n pieces costs the input's size, not n times it.
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from actorgrad.grad_mode import _grad_enabled
from actorgrad.ops.linalg_outputs import record_outputs
from actorgrad.ops.operands import common_dtype, require_tensor_elements
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.ops.shape import single_dim
from actorgrad.tensor import Tensor
from actorgrad.version_counter import MULTI_OUTPUT_MODE, mark_creation_mode

__all__ = ["cat", "chunk", "concat", "concatenate", "split", "stack", "unbind"]

# The nodes of split, chunk and unbind: PyTorch forbids changing their pieces (or views of them) in place, and using
# one after its base changed in place.
MULTI_OUTPUT_VIEWS: weakref.WeakSet = weakref.WeakSet()


def _piece(i: int):
    """The gradient of input i of a cat or stack: its part of `g`, at `where[i]`."""
    def formula(ops, g, where):
        if where[i] is None:  # a legacy 1-d empty input cat skipped: PyTorch gives it an empty (0,) gradient
            return ops.reshape(ops.index(g, (slice(0, 0),) * g.ndim, None), (0,))
        return ops.index(g, where[i], None)
    return (("where",), formula)


@lru_cache(maxsize=64)
def _joining_rule(name: str, inputs: int) -> Rule:
    return Rule(name, *[_piece(i) for i in range(inputs)])


def not_tensors(op: str, tensors: object) -> TypeError:
    """PyTorch's error for a `tensors` argument that is no list or tuple."""
    return TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not {type(tensors).__name__}")


def tensor_list(tensors: Sequence[Tensor], op: str) -> list[Tensor]:
    """`tensors` as a list, after PyTorch's checks: a non-empty list or tuple (a generator is refused too) of
    Tensors on one device."""
    if not isinstance(tensors, list | tuple):
        raise not_tensors(op, tensors)
    if not tensors:
        if op == "cat":
            raise ValueError("torch.cat(): expected a non-empty list of Tensors")
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    require_tensor_elements(tensors)
    same_device(*tensors)  # before any other check, as in PyTorch, which exempts no zero-dim cpu tensor here
    return list(tensors)


def cat(tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """The tensors joined along `dim` (numpy's name `axis` taken too, as PyTorch takes it), in new row-major
    memory."""
    tensors = tensor_list(tensors, "cat")
    if axis is not None:
        dim = axis
    arrays = [t._data for t in tensors]
    # PyTorch's legacy rule: a 1-d empty tensor joins anything (`out = cat([empty(0), rows])`): cat skips it and
    # gives it an empty (0,) gradient. When every input is one, PyTorch joins them whatever `dim` says.
    kept = [a.shape != (0,) for a in arrays]
    only_legacy = not any(kept)
    if only_legacy:
        kept = [True] * len(arrays)
    joined = [a for a, keep in zip(arrays, kept) if keep]
    first = joined[0]
    checked = [(i, a) for i, (a, keep) in enumerate(zip(arrays, kept)) if keep]
    for i, a in checked:
        if a.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
        if a.ndim != first.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {first.ndim} and {a.ndim}")
    dim = 0 if only_legacy else single_dim(dim, first.ndim, "cat")
    for i, a in checked:
        for d, (want, got) in enumerate(zip(first.shape, a.shape)):
            if d != dim and want != got:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size {want} but got size "
                    f"{got} for tensor number {i} in the list."
                )
    ends = np.cumsum([a.shape[dim] if keep else 0 for a, keep in zip(arrays, kept)]).tolist()
    lead = (slice(None),) * dim
    where = tuple(lead + (slice(end - a.shape[dim], end),) if keep else None
                  for a, end, keep in zip(arrays, ends, kept))
    data = np.concatenate(joined, dim, dtype=common_dtype(*tensors))  # PyTorch's promotion, not numpy's
    if not data.flags.c_contiguous:  # numpy keeps column-major inputs' order; PyTorch's result is row-major
        data = tensors[0]._device.xp.ascontiguousarray(data)
    return record(_joining_rule("CatBackward0", len(arrays)), data, tuple(tensors), where=where)


def concat(tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Alias of cat."""
    if not isinstance(tensors, list | tuple):  # PyTorch's error names the alias
        raise not_tensors("concat", tensors)
    return cat(tensors, dim, axis=axis)


def concatenate(tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Alias of cat; numpy's name `axis` for the dim is taken too, as PyTorch takes it."""
    if not isinstance(tensors, list | tuple):
        raise not_tensors("concatenate", tensors)
    return cat(tensors, dim if axis is None else axis)


def stack(tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """The tensors (of one shape) joined along a new dim `dim` (or `axis`), in new row-major memory."""
    tensors = tensor_list(tensors, "stack")
    if axis is not None:
        dim = axis
    arrays = [t._data for t in tensors]
    for i, a in enumerate(arrays):
        if a.shape != arrays[0].shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(arrays[0].shape)} at entry 0 and "
                f"{list(a.shape)} at entry {i}"
            )
    dim = single_dim(dim, arrays[0].ndim + 1, "stack")
    where = tuple((slice(None),) * dim + (i,) for i in range(len(arrays)))
    data = np.stack(arrays, dim, dtype=common_dtype(*tensors))  # PyTorch's promotion, not numpy's
    if not data.flags.c_contiguous:  # as cat's
        data = tensors[0]._device.xp.ascontiguousarray(data)
    return record(_joining_rule("StackBackward0", len(arrays)), data, tuple(tensors), where=where)


def _even_sizes(size: int, step: int) -> list[int]:
    """The piece sizes of `split(step)` along a dim of `size`: `step` each, the last one smaller (one empty piece
    of an empty dim)."""
    return [min(step, size - start) for start in range(0, size, step)] if size else [0]


def _joined(ops: Any, grads: tuple, dim: int, shapes: list[tuple[int, ...]]) -> Any:
    """The pieces' gradients `grads` joined along `dim`, zeros of its piece's shape for each one that is None."""
    like = next(g for g in grads if g is not None)
    return ops.concatenate(tuple(ops.zeros(shape, like) if g is None else g for g, shape in zip(grads, shapes)), dim)


def _split_grad(ops: Any, grads: tuple, self_sym_sizes: tuple[int, ...], dim: int, split_sizes: Sequence[int]) -> Any:
    shapes = [self_sym_sizes[:dim] + (n,) + self_sym_sizes[dim + 1:] for n in split_sizes]
    return _joined(ops, grads, dim, shapes)


def _even_split_grad(ops: Any, grads: tuple, self_sym_sizes: tuple[int, ...], dim: int, split_size: int) -> Any:
    return _split_grad(ops, grads, self_sym_sizes, dim, _even_sizes(self_sym_sizes[dim], split_size))


def _unbind_grad(ops: Any, grads: tuple, dim: int) -> Any:
    """The pieces' gradients stacked along `dim` (each given its size-1 dim back), zeros for those that got none."""
    piece = next(g for g in grads if g is not None).shape
    shape = piece[:dim] + (1,) + piece[dim:]
    return _joined(ops, tuple(None if g is None else ops.reshape(g, shape) for g in grads), dim,
                   [shape] * len(grads))


def _input_size(data: Any, params: dict) -> int:
    return math.prod(params["self_sym_sizes"])


# The saved values under PyTorch's names (`node._saved_split_size` ...).
SPLIT = Rule("SplitBackward0", (("self_sym_sizes", "dim", "split_size"), _even_split_grad), cost=_input_size)
SPLIT_WITH_SIZES = Rule("SplitWithSizesBackward0", (("self_sym_sizes", "dim", "split_sizes"), _split_grad),
                        cost=_input_size)
UNBIND = Rule("UnbindBackward0", (("dim",), _unbind_grad), cost=_input_size)


def _pieces(input: Tensor, dim: int, sizes: list[int], rule: Rule, **params: Any) -> tuple[Tensor, ...]:
    """The pieces of `sizes` along `dim`: views of the input, the outputs of one node of `rule`."""
    if not sizes:  # an empty size list splits an empty dim into no pieces, as PyTorch's
        return ()
    x = input._data
    lead = (slice(None),) * dim
    arrays = tuple(x[lead + (slice(end - n, end),)] for n, end in zip(sizes, itertools.accumulate(sizes)))
    return _marked(record_outputs(rule, arrays, (input,), self_sym_sizes=x.shape, dim=dim, **params))


def _marked(pieces: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    node = pieces[0]._grad_fn
    if node is not None:
        MULTI_OUTPUT_VIEWS.add(node)
    elif _grad_enabled.get():  # pieces without a history, which PyTorch knows by their creation mode
        for piece in pieces:
            if piece._base is not None:
                mark_creation_mode(piece, MULTI_OUTPUT_MODE)
    return pieces


def _not_tensor(op: str, input: object) -> TypeError:
    return TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def split(tensor: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    try:  # a check only on the failure path: split is also a Tensor method
        x = tensor._data
    except AttributeError:  # PyTorch's torch.split calls tensor.split, so it fails as this
        raise AttributeError(f"'{type(tensor).__name__}' object has no attribute 'split'") from None
    if not x.ndim:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = single_dim(dim, x.ndim, "split")
    size = x.shape[dim]
    if isinstance(split_size_or_sections, Tensor) and split_size_or_sections.numel() == 1:
        split_size_or_sections = int(split_size_or_sections)  # as Tensor.split reads a one-element tensor
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0 or (step == 0 and size != 0):
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}"
                if step == 0 else f"split expects split_size be non-negative, but got split_size={step}"
            )
        return _pieces(tensor, dim, _even_sizes(size, step), SPLIT, split_size=step)
    sizes = list(split_size_or_sections)
    if any(n < 0 for n in sizes):  # PyTorch's check before the sum's
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={sizes}")
    if sum(sizes) != size:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at dimension "
            f"{dim}), but got split_sizes={sizes}"
        )
    return _pieces(tensor, dim, sizes, SPLIT_WITH_SIZES, split_sizes=tuple(sizes))


def chunk(input: Tensor, chunks: int, dim: int = 0, *, axis: int | None = None) -> tuple[Tensor, ...]:
    """`chunks` pieces of equal size along `dim` (or `axis`), the last smaller; fewer when the size does not
    allow `chunks` non-empty ones (7 in 4: sizes 2, 2, 2, 1; 6 in 4: 2, 2, 2), as PyTorch's."""
    try:  # a check only on the failure path: chunk is also a Tensor method
        shape = input._data.shape
    except AttributeError:
        raise _not_tensor("chunk", input) from None
    if not shape:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if axis is not None:
        dim = axis
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = shape[single_dim(dim, len(shape), "chunk")]
    if not size:  # PyTorch gives `chunks` empty pieces
        return split(input, [0] * chunks, dim)
    return split(input, -(-size // chunks), dim)


def unbind(input: Tensor, dim: int = 0, *, axis: int | None = None) -> tuple[Tensor, ...]:
    """The slices along `dim` (or `axis`), that dim removed: views of the input."""
    try:  # a check only on the failure path: unbind is also a Tensor method
        x = input._data
    except AttributeError:
        raise _not_tensor("unbind", input) from None
    if axis is not None:
        dim = axis
    dim = single_dim(dim, x.ndim, "unbind")
    if not x.ndim:  # a 0-dim tensor takes dim 0, then has no size there
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if not x.shape[dim]:
        return ()
    lead = (slice(None),) * dim
    arrays = tuple(x[lead + (i, Ellipsis)] for i in range(x.shape[dim]))  # the Ellipsis: a 0-dim view, not a copy
    return _marked(record_outputs(UNBIND, arrays, (input,), self_sym_sizes=x.shape, dim=dim))


def _split_method(self: Tensor, split_size: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Tensor.split, whose argument PyTorch names `split_size`."""
    return split(self, split_size, dim)


METHODS = {"split": _split_method, "chunk": chunk, "unbind": unbind}
