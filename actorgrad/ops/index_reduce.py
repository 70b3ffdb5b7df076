"""index_reduce: source's slices along a dim combined ('prod', 'mean', 'amax' or 'amin') into the input's slices that
a vector of indices names, over the input's own values too when include_self.

It is scatter_reduce with the index repeated across the other dims (PyTorch's results and gradients are the same:
zeros and ties in prod, amax and amin handled as there), so it records ScatterReduceBackward0 where PyTorch records
IndexReduceBackward0; the checks and their errors are index_reduce's own.
"""

from __future__ import annotations

from typing import Any

from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.inplace_recording import write_in_place
from actorgrad.ops.operands import SCALAR_NAMES, require_tensors
from actorgrad.ops.scatter_reduce import scatter_reduce
from actorgrad.ops.shape import single_dim
from actorgrad.tensor import Tensor, bool_
from actorgrad.user_warnings import warn_once

__all__ = ["index_reduce"]

REDUCTIONS = ("prod", "mean", "amax", "amin")


def _spread_index(op: str, input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str,
                  include_self: bool) -> tuple[int, Tensor]:
    """The dim as a non-negative int and `index` repeated along source's other dims, after PyTorch's checks."""
    require_tensors(op, 2, index=index, source=source)
    if reduce not in REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = single_dim(dim, input.ndim, op)
    i = index._data
    if i.dtype.kind not in "iu" or i.dtype.itemsize < 4:
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{SCALAR_NAMES.get(i.dtype, i.dtype)}")
    if i.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {i.ndim} with type: "
                         f"{SCALAR_NAMES[i.dtype]} and size: {list(i.shape)}")
    if source.ndim and i.size != source.shape[d]:
        raise RuntimeError(f"index_reduce_(): Number of indices ({i.size}) should be equal to source.size(dim): "
                           f"({source.shape[d]}), for dim: {d}")
    if input.dtype != source.dtype:
        raise RuntimeError(f"index_reduce_(): self ({SCALAR_NAMES[input.dtype]}) and source "
                           f"({SCALAR_NAMES[source.dtype]}) must have the same scalar type")
    if source.ndim == 0 and i.size != 1:  # PyTorch reads the 0-dim source's size along dim
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    if source.ndim != input.ndim or any(a != b for k, (a, b) in enumerate(zip(input.shape, source.shape)) if k != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(input.shape)} source.shape = {list(source.shape)}")
    if i.size and (bool((i < 0).any()) or bool((i >= (input.shape[d] if input.ndim else 1)).any())):
        raise IndexError("index out of range in self")
    if input.dtype == bool_ or input.dtype.kind == "c":  # PyTorch's kernels take no bool or complex tensors
        kernel = "index_func_" if include_self else "index_reduce_func_exclude_input_init"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{SCALAR_NAMES[input.dtype]}'")
    lead = [1] * max(source.ndim, 1)
    lead[d] = -1
    warn_once("index_reduce() is in beta and the API may change at any time.")
    return d, Tensor(i.reshape(lead), device=index._device).expand(source.shape or (1,))  # a 0-dim one as (1,)


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """A copy of input with source[..., k, ...] (along `dim`) combined into input[..., index[k], ...]."""
    check_flags("index_reduce", include_self=include_self)
    d, spread = _spread_index("index_reduce", input, dim, index, source, reduce, include_self)
    return scatter_reduce(input, d, spread, source, reduce, include_self=include_self)


def index_reduce_(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    d, spread = _spread_index("index_reduce_", self, dim, index, source, reduce, include_self)
    return write_in_place(self, lambda s: scatter_reduce(s, d, spread, source, reduce, include_self=include_self),
                          (source,), True)  # prod's, amax's and amin's rules keep self's values


METHODS: dict[str, Any] = {"index_reduce": index_reduce, "index_reduce_": index_reduce_}
