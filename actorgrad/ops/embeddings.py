"""embedding: rows of a weight matrix picked by indices. Its gradient adds each output row's gradient into its
weight row (duplicates accumulate; padding_idx's row gets none; with scale_grad_by_freq each row's gradient is
first divided by how often its index occurs); that scatter-add's own gradient is the lookup again, so both are in
the `ops` interface and a recorded backward differentiates. Also one_hot, the lookup's dense counterpart (not
differentiable)."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.grad_mode import no_grad
from actorgrad.ops.conv import integer_value
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.index_parsing import host_array
from actorgrad.ops.operands import type_name
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.tensor import Tensor
from actorgrad.version_counter import bump_version

__all__ = ["one_hot"]  # embedding's name at the top level is aten_forms's

# The node's one edge is the weight's, as PyTorch's (the integer indices never have one); a recorded backward's
# lookup of rows is this node too.
EMBEDDING = Rule(
    "EmbeddingBackward0",
    (("indices", "num_weights", "padding_idx", "frequency_scale"), lambda ops, g, indices, num_weights, padding_idx,
     frequency_scale: ops.embedding_backward(g if frequency_scale is None else g * frequency_scale, indices,
                                             num_weights, padding_idx)),
)
EMBEDDING_BACKWARD = Rule(
    "EmbeddingDenseBackward0",
    (("indices", "padding_idx"), lambda ops, h, indices, padding_idx: ops.embedding_rows(h, indices, padding_idx)),
)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """With max_norm, the rows the input names are first scaled down in place to that norm, as in PyTorch.
    Sparse gradients are not supported by actorgrad (it has no sparse tensors)."""
    if scale_grad_by_freq.__class__ is not bool:
        raise not_bool("embedding", "scale_grad_by_freq", scale_grad_by_freq, 4)
    if sparse.__class__ is not bool:
        raise not_bool("embedding", "sparse", sparse, 5)
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported by actorgrad (it has no sparse "
                                  "tensors)")
    same_device(weight, input)  # as PyTorch, even for zero-dim cpu indices
    idx, w = input._data, weight._data
    if w.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    count = w.shape[0]
    if padding_idx is not None:
        if not -count <= padding_idx < count:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= count
    if max_norm is not None:
        renorm_rows_(weight, input, max_norm, norm_type)
    if idx.dtype != np.int64 and idx.dtype != np.int32:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    if idx.size and (idx.min() < 0 or idx.max() >= count):
        raise IndexError("index out of range in self")
    frequency_scale = None
    if scale_grad_by_freq:  # each position's gradient over its index's count in the whole input, as PyTorch's
        counts = weight._device.xp.bincount(idx.ravel(), minlength=count)
        frequency_scale = (1 / counts[idx]).astype(w.dtype)[..., None]
    return record(EMBEDDING, w[idx], (weight,), indices=idx, num_weights=count, padding_idx=padding_idx,
                  frequency_scale=frequency_scale)


def renorm_rows_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    """PyTorch's embedding_renorm_: each row the input names whose norm_type-norm is above max_norm is scaled by
    max_norm / (norm + 1e-7), in place, outside autograd (the weight's version moves on)."""
    indices = host_array(input._data)
    if indices.dtype != np.int64 and indices.dtype != np.int32:
        raise RuntimeError("Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, "
                           f"Int; but got {input.type()} instead (while checking arguments for embedding_renorm_)")
    count, width = weight.shape
    rows = np.unique(indices)
    outside = (rows < -count) | (rows >= count)
    if outside.any():
        raise IndexError(f"select(): index {rows[np.argmax(outside)]} out of range for tensor of size [{count}, "
                         f"{width}] at dimension 0")
    rows = weight._device.asarray(np.unique(np.where(rows < 0, rows + count, rows)))
    with no_grad():
        norms = host_array(Tensor(weight._data[rows], device=weight._device).norm(norm_type, dim=1)._data)
    over = norms.astype(np.float64) > max_norm
    if over.any():
        scales = max_norm / (norms[over].astype(np.float64) + 1e-7)
        picked = rows[weight._device.asarray(over)]
        weight._data[picked] *= weight._device.asarray(scales.astype(weight.dtype)[:, None])
    bump_version(weight)


def recorded_embedding_backward(g: Tensor, indices: np.ndarray, num_weights: int, padding_idx: int | None) -> Tensor:
    data = g._device.ops.embedding_backward(g._data, indices, num_weights, padding_idx)
    return record(EMBEDDING_BACKWARD, data, (g,), indices=indices, padding_idx=padding_idx)


def recorded_embedding_rows(h: Tensor, indices: np.ndarray, padding_idx: int | None) -> Tensor:
    data = h._device.ops.embedding_rows(h._data, indices, padding_idx)
    return record(EMBEDDING, data, (h,), indices=indices, num_weights=h.shape[0], padding_idx=padding_idx,
                  frequency_scale=None)


def one_hot(input: Tensor, num_classes: int = -1) -> Tensor:
    """An int64 tensor of shape `input.shape + (num_classes,)` with 1 at each class index; num_classes=-1 takes
    the largest index + 1. Not differentiable."""
    if not isinstance(input, Tensor):  # named `input`, as PyTorch's binding names it (its docs say `tensor`)
        raise TypeError(f"one_hot(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    classes = integer_value(num_classes)
    if classes is None:
        raise TypeError(f"one_hot(): argument 'num_classes' (position 2) must be int, not {type_name(num_classes)}")
    num_classes = classes
    x = input._data
    if x.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    xp = input._device.xp
    if x.size == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return Tensor(xp.zeros(x.shape + (num_classes,), np.int64), device=input._device)
    if x.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(x.max()) + 1
    elif x.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return Tensor((x[..., None] == xp.arange(num_classes)).astype(np.int64), device=input._device)


METHODS: dict[str, Any] = {}
