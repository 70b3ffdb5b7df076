"""max and min (over all elements, or along a dim with their indices), argmax, argmin and aminmax.

Over all elements, ties share the gradient evenly (as amax does); along a dim, the gradient goes to the one
element whose index is returned, as in PyTorch. Indices are int64 tensors without a gradient.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.operands import not_implemented, refuse_complex
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import _amax_grad, input_size, is_one_dim, kept, normalize_dims, numpy_names, one_dim
from actorgrad.ops.selection import maximum, minimum
from actorgrad.tensor import Tensor

__all__ = ["aminmax", "argmax", "argmin", "max", "min"]

# The (values, indices) pairs of max and min along a dim, named as torch.return_types names them.
MaxResult = namedtuple("max", ["values", "indices"])
MinResult = namedtuple("min", ["values", "indices"])
AminmaxResult = namedtuple("aminmax", ["min", "max"])


def _select_grad(ops: Any, g: Any, indices: Any, dim: int, rows_shape: tuple, self_shape: tuple) -> Any:
    g = ops.reshape(g, indices.shape)
    return ops.reshape(ops.scatter_along(g, indices, dim, rows_shape), self_shape)


def _extreme_all_grad(ops: Any, g: Any, self: Any, result: Any, dim: tuple[int, ...], kept_shape: tuple) -> Any:
    """Ties share the gradient evenly; a NaN extreme shares it among the NaNs (PyTorch's evenly_distribute_backward;
    amax instead gives NaN gradients there)."""
    mask = ops.same_mask(self, ops.reshape(result, kept_shape))
    return ops.reshape(g, kept_shape) * mask / ops.sum(mask, dim, keepdim=True)


_EXTREME_ALL = (("self", "result", "dim", "kept_shape"), _extreme_all_grad)
MAX_ALL = Rule("MaxBackward1", _EXTREME_ALL, cost=input_size)
MIN_ALL = Rule("MinBackward1", _EXTREME_ALL, cost=input_size)
_SELECT = (("indices", "dim", "rows_shape", "self_shape"), _select_grad)
MAX_DIM = Rule("MaxBackward0", _SELECT, cost=input_size)
MIN_DIM = Rule("MinBackward0", _SELECT, cost=input_size)

# aminmax's two results, each with amin's or amax's rule (ties share the gradient evenly). PyTorch gives both one
# node; here each has its own, of the same name.
AMINMAX = Rule("AminmaxBackward0", (("self", "result", "dim", "kept_shape"), _amax_grad), cost=input_size)

_ARG_KERNELS = {"max": np.argmax, "argmax": np.argmax, "min": np.argmin, "argmin": np.argmin}


def _along_dim(op: str, input: Tensor, dim: int, keepdim: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The input as rows (a 0-d tensor is one row), and the extreme values and their indices along `dim`, the
    indices with `dim` kept."""
    x = input._data
    if keepdim.__class__ is not bool:
        raise not_bool(op, "keepdim", keepdim)
    if dim.__class__ is not int and not is_one_dim(dim):
        raise TypeError(f"{op}(): dim must be an int, got {dim!r}")
    (d,) = normalize_dims(dim, x.ndim, op)
    rows = x.reshape(x.shape or (1,))
    if rows.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    indices = _ARG_KERNELS[op](rows, axis=d, keepdims=True)
    values = np.take_along_axis(rows, indices, axis=d)
    out_shape = kept(x.shape, (d,)) if keepdim else x.shape[:d] + x.shape[d + 1:]
    return rows, values.reshape(out_shape), indices, d


def _index_tensor(indices: np.ndarray, values: np.ndarray, input: Tensor) -> Tensor:
    """The int64 indices of `_along_dim`, shaped as its values, on the input's device."""
    return Tensor(indices.reshape(values.shape).astype(np.int64, copy=False), device=input._device)


def _extreme(op: str, rule_all: Rule, rule_dim: Rule, input: Tensor, dim: Any, keepdim: bool) -> Any:
    x = input._data
    if isinstance(dim, Tensor):  # max(input, other): the elementwise form, as in PyTorch
        return (maximum if op == "max" else minimum)(input, dim)
    if x.dtype.kind == "c":  # complex numbers have no order
        if dim is None:
            raise not_implemented(f"{op}_all", x.dtype)
        raise RuntimeError(f"{op}(): does not support complex input")
    if dim is None:
        if x.size == 0:
            raise RuntimeError(
                f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
                "dim with the 'dim' argument."
            )
        dims = tuple(range(x.ndim))
        data = np.amax(x) if op == "max" else np.amin(x)
        return record(rule_all, data, (input,), dim=dims, kept_shape=(1,) * x.ndim, self_shape=x.shape)
    rows, values, indices, d = _along_dim(op, input, dim, keepdim)
    out = record(rule_dim, values, (input,), indices=indices, dim=d, rows_shape=rows.shape, self_shape=x.shape)
    result = MaxResult if op == "max" else MinResult
    return result(out, _index_tensor(indices, values, input))


def max(
    input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """The largest element (a tensor), along `dim` the named tuple (values, indices), or with a tensor in
    place of `dim` the elementwise maximum."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _extreme("max", MAX_ALL, MAX_DIM, input, dim, keepdim)


def min(
    input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False, *, axis: Any = None,
    keepdims: bool | None = None,
) -> Any:
    """The smallest element (a tensor), along `dim` the named tuple (values, indices), or with a tensor in
    place of `dim` the elementwise minimum."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _extreme("min", MIN_ALL, MIN_DIM, input, dim, keepdim)


def _arg(op: str, input: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    x = input._data
    if x.dtype.kind in "cb":
        raise RuntimeError(f"{op}(): does not support {'complex' if x.dtype.kind == 'c' else 'bool'} input")
    if dim is None:
        if x.size == 0:
            raise IndexError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0.")
        if keepdim.__class__ is not bool:
            raise not_bool(op, "keepdim", keepdim)
        xp = input._device.xp
        index = xp.asarray(getattr(xp, op)(x), dtype=np.int64)  # into the flattened tensor, as in PyTorch
        return Tensor(index.reshape((1,) * x.ndim if keepdim else ()), device=input._device)
    _, values, indices, _ = _along_dim(op, input, dim, keepdim)
    return _index_tensor(indices, values, input)


def argmax(
    input: Tensor, dim: int | None = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None
) -> Tensor:
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _arg("argmax", input, dim, keepdim)


def argmin(
    input: Tensor, dim: int | None = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None
) -> Tensor:
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _arg("argmin", input, dim, keepdim)


def aminmax(
    input: Tensor, *, dim: int | None = None, keepdim: bool = False, axis: Any = None, keepdims: bool | None = None
) -> AminmaxResult:
    """The smallest and largest elements, over all elements or along `dim`, as the named tuple (min, max)."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    x = input._data
    if keepdim.__class__ is not bool:
        raise not_bool("aminmax", "keepdim", keepdim)
    refuse_complex(x.dtype, "aminmax_cpu")
    if dim is None:
        if x.size == 0:
            raise RuntimeError(
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity."
            )
        dims = tuple(range(x.ndim))
    else:
        dims = normalize_dims(dim, x.ndim, "aminmax") if x.ndim else one_dim(dim, 0, "aminmax")
        if x.ndim and x.shape[dims[0]] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {dims[0]} to have non-zero size.")
    params = {"dim": dims, "kept_shape": kept(x.shape, dims), "self_shape": x.shape}
    low = record(AMINMAX, x.min(axis=dims, keepdims=keepdim), (input,), **params)
    high = record(AMINMAX, x.max(axis=dims, keepdims=keepdim), (input,), **params)
    return AminmaxResult(low, high)


METHODS = {"max": max, "min": min, "argmax": argmax, "argmin": argmin, "aminmax": aminmax}
