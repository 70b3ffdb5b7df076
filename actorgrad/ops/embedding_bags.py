"""embedding_bag: the sum, mean or maximum of each bag of embedding rows, composed from differentiable ops: sums
and means are an `embedding` lookup of the bags' rows (times per_sample_weights) `index_add`-ed into their bags,
maxima a `gather` of each bag's winning row, column by column. So the weight's gradient is the lookup's scatter-add
(for max, to the winning rows only) and per_sample_weights' is each row's dot product with its bag's gradient.

Which row goes to which bag is planned on the host from the indices and offsets, where PyTorch's CPU kernel checks
them (a GPU's indices copy over once). Entries at padding_idx leave their bag and its mean's count; an empty bag
gives zeros. max_norm rescales the rows the input names in place first, outside autograd, as PyTorch does.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from actorgrad.ops.embeddings import embedding, renorm_rows_
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.index_parsing import host_array
from actorgrad.ops.indexing import gather, index_select
from actorgrad.ops.record import same_device
from actorgrad.ops.scatter import index_add
from actorgrad.ops.selection import where
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

MODES = ("sum", "mean", "max")
CHECKING = "(while checking arguments for embedding_bag)"


class BagPlan(NamedTuple):
    """The entries that take part, as weight rows and the bag each goes to, and how many bags there are."""

    rows: np.ndarray
    bags_of_rows: np.ndarray
    positions: np.ndarray  # where each entry stands in the flattened input (for its per-sample weight)
    bags: int


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """scale_grad_by_freq and sparse gradients are not supported by actorgrad (it has no sparse tensors)."""
    if scale_grad_by_freq.__class__ is not bool:
        raise not_bool("embedding_bag", "scale_grad_by_freq", scale_grad_by_freq, 4)
    if sparse.__class__ is not bool:
        raise not_bool("embedding_bag", "sparse", sparse, 6)
    if weight.dtype == np.int64 and input.dtype.kind == "f":
        warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, input, ...)` "
             "is deprecated, and should now be `embedding_bag(input, weight, ...)`.")
        weight, input = input, weight
    weights = per_sample_weights
    if weights is not None and input.shape != weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({list(weights.shape)}) is not None, then it must "
                         f"have the same shape as the input ({list(input.shape)})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        include_last_offset = False
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    same_device(weight, input, offsets, weights)
    if max_norm is not None:
        renorm_rows_(weight, input, max_norm, norm_type)
    if weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse gradients are not supported by "
                                  "actorgrad (it has no sparse tensors); leave both False")
    plan = _plan(input, weight, offsets, weights, include_last_offset, padding_idx)
    if mode == "max" and plan.rows.size:
        return _maxima(weight, plan)
    return _sums(weight, plan, weights, mode == "mean")


def _index_type_check(t: Tensor) -> None:
    if t.dtype not in (np.int64, np.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
                           f"Int; but got {t.type()} instead {CHECKING}")


def _plan(input: Tensor, weight: Tensor, offsets: Tensor | None, weights: Tensor | None, include_last_offset: bool,
          padding_idx: int | None) -> BagPlan:
    """PyTorch's kernel checks, in its order, and the bags they describe."""
    _index_type_check(input)
    if offsets is not None:
        _index_type_check(offsets)
    if weight.dtype.kind != "f":
        raise RuntimeError("Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, "
                           f"BFloat16, Float, Double; but got {weight.type()} instead {CHECKING}")
    count = weight.shape[0]
    if padding_idx is not None:
        if not -count <= padding_idx < count:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{count} through {count - 1}, "
                               f"but got {padding_idx}")
        padding_idx %= count
    indices = host_array(input._data).reshape(-1)
    length = indices.size
    if offsets is None:  # 2-D input: one bag per row
        if input.shape[1] == 0:
            raise RuntimeError("step must be nonzero")
        starts = np.arange(0, length, input.shape[1])
    else:
        starts = host_array(offsets._data).astype(np.int64)
    if starts.size and starts[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {starts[0]}")
    if starts.size and starts[-1] > length:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {length} but got offsets[-1] of "
                           f"{starts[-1]}")
    if weights is not None and weights.dtype != weight.dtype:
        raise RuntimeError("Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 "
                           f"'per_sample_weights'; but type {weight.type()} does not equal {weights.type()} {CHECKING}")
    if include_last_offset and not starts.size:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")
    steps = np.diff(starts)
    if (steps < 0).any():
        k = int(np.argmax(steps < 0))
        raise RuntimeError(f"embedding_bag: offsets must be non-decreasing, but offsets[{k + 1}] = {starts[k + 1]} "
                           f"comes after offsets[{k}] = {starts[k]}")
    if include_last_offset:  # the last offset ends the last bag; entries past it take no part
        starts, length = starts[:-1], int(starts[-1])
    used = indices[:length]
    outside = (used < 0) | (used >= count)
    if outside.any():
        raise RuntimeError("embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be "
                           f"{used[np.argmax(outside)]}")
    bags_of_entries = np.repeat(np.arange(starts.size), np.diff(np.append(starts, length)))
    positions = np.arange(length) if padding_idx is None else np.flatnonzero(used != padding_idx)
    return BagPlan(used[positions], bags_of_entries[positions], positions, starts.size)


def _on(weight: Tensor, array: np.ndarray) -> Tensor:
    """A host array as a tensor on the weight's device."""
    return Tensor(weight._device.asarray(array), device=weight._device)


def _sums(weight: Tensor, plan: BagPlan, weights: Tensor | None, mean: bool) -> Tensor:
    rows = embedding(_on(weight, plan.rows), weight)
    if weights is not None:
        rows = rows * index_select(weights.reshape(-1), 0, _on(weight, plan.positions)).unsqueeze(1)
    empty = Tensor(weight._device.xp.zeros((plan.bags, weight.shape[1]), weight.dtype), device=weight._device)
    sums = index_add(empty, 0, _on(weight, plan.bags_of_rows), rows)
    if not mean:
        return sums
    counts = np.bincount(plan.bags_of_rows, minlength=plan.bags)
    return sums / _on(weight, np.maximum(counts, 1).astype(weight.dtype)[:, None])  # an empty bag's sum is 0


def _maxima(weight: Tensor, plan: BagPlan) -> Tensor:
    """Per bag and column, the row PyTorch's kernel keeps: the bag's first, replaced only by a greater value (so a
    NaN wins only where it comes first, and of equal maxima the first stays)."""
    device = weight._device
    xp = device.xp
    counts = np.bincount(plan.bags_of_rows, minlength=plan.bags)
    slots = np.arange(plan.rows.size) - (np.cumsum(counts) - counts)[plan.bags_of_rows]
    placed = (device.asarray(plan.bags_of_rows), device.asarray(slots))  # each entry's (bag, slot in its bag)
    rows = device.asarray(plan.rows)
    values = xp.full((plan.bags, int(counts.max()), weight.shape[1]), -np.inf, weight.dtype)
    values[placed] = weight._data[rows]
    nan = xp.isnan(values)
    winners = xp.where(nan, -np.inf, values).argmax(1)
    winners[nan[:, 0]] = 0
    rows_in_slots = xp.zeros(values.shape[:2], np.int64)
    rows_in_slots[placed] = rows
    maxima = gather(weight, 0, Tensor(xp.take_along_axis(rows_in_slots, winners, 1), device=device))
    if counts.all():
        return maxima
    return where(_on(weight, counts[:, None] > 0), maxima, 0.0)
