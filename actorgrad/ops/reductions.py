"""Reductions (sum, mean, prod, amax, amin, logsumexp), the softmaxes and cumsum, with their gradient rules."""

from __future__ import annotations

import math
from operator import index as _index
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.devices.array_ops import kept_max
from actorgrad.devices.float_errors import quiet_float_errors
from actorgrad.grad_mode import _grad_enabled
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.operands import SCALAR_NAMES, floating_or_complex, not_implemented, refuse_complex
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor

__all__ = ["amax", "amin", "cumsum", "log_softmax", "logsumexp", "mean", "prod", "softmax", "sum"]


def input_size(data: Any, params: dict) -> int:
    """A backward's cost: one unit per input element (the default counts output elements)."""
    return math.prod(params["self_shape"])


def _spread(ops: Any, g: Any, kept_shape: tuple[int, ...], self_shape: tuple[int, ...]) -> Any:
    """Send a reduced gradient back over the reduced dims."""
    return ops.broadcast_to(ops.reshape(g, kept_shape), self_shape)


SUM = Rule(
    "SumBackward0", (("kept_shape", "self_shape"), _spread), cost=input_size
)
SUM_DIM = Rule("SumBackward1", (("kept_shape", "self_shape"), _spread), cost=input_size)
MEAN = Rule(
    "MeanBackward0",
    (("kept_shape", "self_shape", "count"), lambda ops, g, k, s, count: _spread(ops, g, k, s) / count),
    cost=input_size,
)
MEAN_DIM = Rule("MeanBackward1", *MEAN.grads, cost=input_size)


def _amax_grad(ops: Any, g: Any, self: Any, result: Any, dim: tuple[int, ...], kept_shape: tuple) -> Any:
    # Ties share the gradient evenly, as PyTorch's amax does.
    mask = ops.equal_mask(self, ops.reshape(result, kept_shape))
    return ops.reshape(g, kept_shape) * mask / ops.sum(mask, dim, keepdim=True)


AMAX = Rule("AmaxBackward0", (("self", "result", "dim", "kept_shape"), _amax_grad), cost=input_size)
AMIN = Rule("AminBackward0", *AMAX.grads, cost=input_size)


def _prod_grad(ops: Any, g: Any, self: Any, dims: tuple[int, ...], kept_shape: tuple) -> Any:
    # The product of the others, never result / self: exact where the input holds zeros. A 0-d input is its own
    # product: the gradient passes as it is, not depending on the input, as PyTorch's.
    if not self.ndim:
        return g
    return ops.reshape(g, kept_shape) * ops.conj(ops.prod_others(self, dims))


PROD = Rule("ProdBackward0", (("self", "dims", "kept_shape"), _prod_grad), cost=input_size)
PROD_DIM = Rule("ProdBackward1", *PROD.grads, cost=input_size)
LOGSUMEXP = Rule(
    "LogsumexpBackward0",
    (
        ("self", "result", "kept_shape"),
        lambda ops, g, self, result, kept_shape: ops.reshape(g, kept_shape)
        * ops.conj(ops.exp(self - ops.reshape(result, kept_shape))),
    ),
    cost=input_size,
)

FLOAT32 = np.dtype(np.float32)


def float16_in_float32(formula: Any) -> Any:
    """`formula` (a gradient rule's, which sums along dims) run in float32 for a float16 gradient and cast back,
    as PyTorch's float16 kernels accumulate: a float16 sum along a long dim stops growing at 2048."""

    def run(ops: Any, g: Any, *saved: Any) -> Any:
        if g.dtype != np.float16:
            return formula(ops, g, *saved)
        wide = [ops.cast(v, FLOAT32) if getattr(v, "dtype", None) == np.float16 else v for v in saved]
        return ops.cast(formula(ops, ops.cast(g, FLOAT32), *wide), g.dtype)

    return run


LOG_SOFTMAX = Rule(
    "LogSoftmaxBackward0",
    (("result", "dim"), float16_in_float32(lambda ops, g, result, dim: ops.log_softmax_grad(g, result, dim))),
)
SOFTMAX = Rule(
    "SoftmaxBackward0",
    (("result", "dim"),
     float16_in_float32(lambda ops, g, result, dim: result * (g - ops.sum(g * result, dim, keepdim=True)))),
)
CUMSUM = Rule("CumsumBackward0", (("dim",), float16_in_float32(lambda ops, g, dim: ops.reverse_cumsum(g, dim))))
CUMSUM_SCALAR = Rule("CumsumBackward0", ((), None))


def normalize_dims(dim: int | tuple[int, ...] | list[int], ndim: int, op: str) -> tuple[int, ...]:
    """Dims as sorted non-negative ints, with PyTorch's error for one out of range."""
    if dim.__class__ is int and -ndim <= dim < ndim:
        return (dim % ndim,)
    try:
        dims = (_index(dim),) if is_one_dim(dim) else tuple(dim)
    except TypeError:
        raise TypeError(f"{op}(): dim must be an int or a tuple of ints, got {dim!r}") from None
    low, high = (-ndim, ndim - 1) if ndim else (-1, 0)
    out = []
    for d in dims:
        if not is_one_dim(d):
            raise TypeError(f"{op}(): dim must be an int or a tuple of ints, got {d!r}")
        d = _index(d)
        if not low <= d <= high:
            raise IndexError(
                f"{op}(): Dimension out of range (expected to be in range of [{low}, {high}], but got {d})"
            )
        d = d % ndim if ndim else 0
        if d in out:
            raise RuntimeError(f"{op}(): dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(sorted(out))


def is_one_dim(dim: Any) -> bool:
    """Whether `dim` names one dim as PyTorch takes it: an int (not a bool), a numpy integer or an integer 0-d
    tensor."""
    if isinstance(dim, Tensor):
        return dim.ndim == 0 and dim._data.dtype.kind in "iu"
    return isinstance(dim, int | np.integer) and not isinstance(dim, bool)


def reduced_dims(dim: Any, ndim: int, op: str) -> tuple[int, ...]:
    """The dims a reduction runs over: all of them for None or an empty list, as in PyTorch."""
    if dim is None or (isinstance(dim, tuple | list) and not dim):  # reduces_all(dim) written out: runs per call
        return tuple(range(ndim))
    return normalize_dims(dim, ndim, op)


def numpy_names(dim: Any, keepdim: bool, axis: Any, keepdims: bool | None) -> tuple[Any, bool]:
    """dim and keepdim given under numpy's names, `axis` and `keepdims`, which PyTorch takes as well."""
    return (dim if axis is None else axis), (keepdim if keepdims is None else keepdims)


def reduces_all(dim: Any) -> bool:
    """Whether `dim` names every dim: None or an empty list, as in PyTorch."""
    return dim is None or (isinstance(dim, tuple | list) and not dim)


def one_dim(dim: int, ndim: int, op: str) -> tuple[int, ...]:
    """The dim of an op along one dim, as a tuple; a 0-d tensor takes dim 0 or -1 but has no dim to run along."""
    dims = normalize_dims(dim, ndim, op)
    return dims if ndim else ()


def kept(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[int, ...]:
    """The reduced shape with the reduced dims kept as size 1 (keepdim=True)."""
    return tuple(1 if i in dims else n for i, n in enumerate(shape))


def accumulation_dtype(dtype: np.dtype) -> Any:
    """The dtype a sum of `dtype` runs in: float32 for float16, as PyTorch's (numpy's float16 sum along a strided
    dim stops growing at 2048), else None (the array's own)."""
    return np.float32 if dtype == np.float16 else None


def refuse_integer_result(input: Tensor, dtype: Any) -> None:
    """PyTorch's error for an integer or bool `dtype=` where the input requires grad: such a result cannot carry a
    gradient. Called only where a dtype is given, so the plain path pays nothing."""
    if input.requires_grad and np.dtype(dtype).kind in "biu" and _grad_enabled.get():
        raise RuntimeError(f"Autograd not support dtype: {SCALAR_NAMES[np.dtype(dtype)]}")


def _reduce(rule_all: Rule, rule_dim: Rule, input: Tensor, dim: Any, keepdim: bool, op: str, dtype: Any):
    """`op` over `dim`; with `dtype`, the input is cast to it first, as PyTorch does (the gradient comes back in
    the input's dtype)."""
    x = input._data if dtype is None else input._data.astype(dtype, copy=False)
    if dim is not None and isinstance(dim, tuple | list) and not dim:
        dim = None  # an empty dim list reduces every dim, as in PyTorch
    acc = accumulation_dtype(x.dtype)
    kernel = getattr(x, op) if x.size or op != "mean" else _empty_mean(x)  # the ndarray method
    if dim is None:
        dims, rule, kept_shape, count = None, rule_all, (1,) * x.ndim, x.size
    else:
        if keepdim.__class__ is not bool:  # read only along a dim: a plain sum pays nothing
            raise not_bool(op, "keepdim", keepdim)
        dims = normalize_dims(dim, x.ndim, op) if x.ndim else one_dim(dim, 0, op)  # a 0-d tensor has no dim to reduce
        rule, kept_shape, count = rule_dim, kept(x.shape, dims), math.prod(x.shape[d] for d in dims)
    with quiet_float_errors():  # inf - inf is NaN, quietly as in PyTorch (these kernels are numpy's Python)
        data = kernel(axis=dims, keepdims=keepdim, dtype=acc).astype(x.dtype, copy=False)
    return record(rule, data, (input,), kept_shape=kept_shape, self_shape=x.shape, count=count)


def _empty_mean(x: Any) -> Any:
    """The mean of an empty array, quietly NaN as PyTorch's (numpy's warns): its sum over 0. Every reduction of an
    empty array either reduces a dim of size 0 or gives an empty result, so the count can be taken as 0."""

    def kernel(**kwargs: Any) -> Any:
        return x.sum(**kwargs) / 0

    return kernel


def sum(
    input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: bool | None = None,
) -> Tensor:
    if autocast_state.get() is not None and dtype is None:
        return autocast_call(sum, "sum", input, dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    if dtype is None:
        if input._data.dtype.kind in "biu":
            dtype = np.int64  # integers and bools sum in int64, as in PyTorch (numpy's sum of uint8 is uint64)
    else:
        refuse_integer_result(input, dtype)
    return _reduce(SUM, SUM_DIM, input, dim, keepdim, "sum", dtype)


def mean(
    input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: bool | None = None,
) -> Tensor:
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Optional dtype must be either a floating point or complex dtype. "
            f"Got: {SCALAR_NAMES.get(np.dtype(dtype), dtype)}"
        )
    if dtype is None and input._data.dtype.kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
            f"Got: {SCALAR_NAMES.get(input._data.dtype, input._data.dtype)}"
        )
    return _reduce(MEAN, MEAN_DIM, input, dim, keepdim, "mean", dtype)


def _extreme(rule: Rule, kernel: Any, op: str, input: Tensor, dim: Any, keepdim: bool) -> Tensor:
    x = input._data
    if keepdim.__class__ is not bool:
        raise not_bool(op, "keepdim", keepdim)
    refuse_complex(x.dtype, "max_values_cpu" if op == "amax" else "min_values_cpu")
    dims = reduced_dims(dim, x.ndim, op) if x.ndim else one_dim(dim or 0, 0, op)
    if x.size == 0:
        if reduces_all(dim):
            raise RuntimeError(
                f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
                "with the 'dim' argument."
            )
        for d in (dim,) if is_one_dim(dim) else dim:  # as given: PyTorch's error names the dim as it was given
            if x.shape[_index(d)] == 0:  # no element to pick; reducing only non-empty dims gives an empty result
                raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    data = kernel(x, axis=dims, keepdims=keepdim)
    return record(rule, data, (input,), dim=dims, kept_shape=kept(x.shape, dims), self_shape=x.shape)


def amax(
    input: Tensor, dim: Any = (), keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None
) -> Tensor:
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _extreme(AMAX, np.amax, "amax", input, dim, keepdim)


def amin(
    input: Tensor, dim: Any = (), keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None
) -> Tensor:
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    return _extreme(AMIN, np.amin, "amin", input, dim, keepdim)


def prod_over_dims(
    input: Tensor, dims: tuple[int, ...], keepdim: bool = False, *, dtype: Any = None, rule: Rule = PROD_DIM
) -> Tensor:
    """The product over sorted non-negative `dims` (PyTorch's prod takes one dim; gradient rules need more)."""
    x = input._data
    with quiet_float_errors():  # 0 * inf is NaN, quietly as in PyTorch
        data = np.prod(x, axis=dims, keepdims=keepdim, dtype=dtype)
    return record(rule, data, (input,), dims=dims, kept_shape=kept(x.shape, dims), self_shape=x.shape)


def prod(
    input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None, axis: Any = None,
    keepdims: bool | None = None,
) -> Tensor:
    if autocast_state.get() is not None and dtype is None:
        return autocast_call(prod, "prod", input, dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    x = input._data
    if keepdim.__class__ is not bool:
        raise not_bool("prod", "keepdim", keepdim)
    if dim is None:
        dims, rule, keepdim = tuple(range(x.ndim)), PROD, False
    elif dim.__class__ is not int and not is_one_dim(dim):
        raise TypeError(f"prod(): dim must be an int (PyTorch's prod reduces one dim), got {dim!r}")
    else:
        dims, rule = one_dim(dim, x.ndim, "prod"), PROD_DIM
    if dtype is None:
        if x.dtype.kind in "biu":
            dtype = np.int64  # integers and bools multiply in int64, as in PyTorch
    elif input.requires_grad and x.dtype != dtype:
        refuse_integer_result(input, dtype)
        input = input.to(dtype)  # a product's gradient needs the values as multiplied (complex ones cast to real)
    return prod_over_dims(input, dims, keepdim, dtype=dtype, rule=rule)


def logsumexp(
    input: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = None, keepdims: bool | None = None
) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(logsumexp, "logsumexp", input, dim, keepdim, axis=axis, keepdims=keepdims)
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    if dim is None:  # required, as PyTorch's (optional here only so that `axis` can stand in for it)
        raise TypeError('logsumexp() missing 1 required positional arguments: "dim"')
    if keepdim.__class__ is not bool:
        raise not_bool("logsumexp", "keepdim", keepdim)
    x = input._data
    x = x.astype(floating_or_complex(x.dtype), copy=False)  # integers give the default float dtype, as in PyTorch
    dims = reduced_dims(dim, x.ndim, "logsumexp") if x.ndim else one_dim(dim, 0, "logsumexp")
    kept_shape = kept(x.shape, dims)
    w = x.astype(accumulation_dtype(x.dtype) or x.dtype, copy=False)  # float16 runs in float32, as PyTorch's
    shift = kept_max(w.real, dims)  # complex inputs shift by the largest real part; the log is the principal one
    shift = np.where(np.isfinite(shift), shift, 0)  # a row of -inf (or an empty one) sums to 0: its log is -inf
    with np.errstate(divide="ignore"):
        data = (np.log(np.exp(w - shift).sum(axis=dims, keepdims=True)) + shift).astype(x.dtype, copy=False)
    if not keepdim:
        data = data.reshape([n for i, n in enumerate(x.shape) if i not in dims])
    return record(LOGSUMEXP, data, (input,), kept_shape=kept_shape, self_shape=x.shape)


def _softmax_input(input: Tensor, dim: Any, dtype: Any, op: str) -> tuple[Any, tuple[int, ...]]:
    """The array a softmax runs on (cast to `dtype` first) and its dim as a tuple (empty for a 0-d input), with
    PyTorch's errors: an int dim in range, a floating array."""
    x = input._data if dtype is None else input._data.astype(dtype)
    n = x.ndim or 1  # a 0-d tensor takes dims -1 and 0
    if dim.__class__ is not int:
        if not isinstance(dim, int | np.integer) or isinstance(dim, bool):
            raise TypeError(f"{op}(): argument 'dim' (position 1) must be int, not {type(dim).__name__}")
        dim = int(dim)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    if x.dtype.kind != "f":
        kernel = f"{op}_lastdim_kernel_impl" if dim % n == n - 1 else f"{op}_kernel_impl"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{SCALAR_NAMES.get(x.dtype, x.dtype)}'")
    return x, ((dim % n,) if x.ndim else ())


def log_softmax(input: Tensor, dim: int | None = None, dtype: Any = None, *, axis: Any = None) -> Tensor:
    """log(softmax(x)) over `dim`; `dtype` may come third by position, as PyTorch's torch.log_softmax and
    Tensor.log_softmax take it."""
    if autocast_state.get() is not None and dtype is None:
        return autocast_call(log_softmax, "log_softmax", input, dim, dtype, axis=axis)
    if axis is not None:  # numpy's name, which PyTorch takes too
        dim = axis
    x, dims = _softmax_input(input, dim, dtype, "log_softmax")
    acc = accumulation_dtype(x.dtype)  # float16 normalises in float32, as PyTorch's
    # an empty input has nothing to normalise (its empty sums would take log(0) and warn)
    data = input._device.ops.log_softmax(x.astype(acc or x.dtype, copy=False), dims) if x.size else x.copy()
    return record(LOG_SOFTMAX, data.astype(x.dtype, copy=False), (input,), dim=dims)


def softmax(input: Tensor, dim: int | None = None, dtype: Any = None, *, axis: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) over `dim`; `dtype` may come third by position, as PyTorch's torch.softmax and
    Tensor.softmax take it."""
    if autocast_state.get() is not None and dtype is None:
        return autocast_call(softmax, "softmax", input, dim, dtype, axis=axis)
    if axis is not None:  # numpy's name, which PyTorch takes too
        dim = axis
    x, dims = _softmax_input(input, dim, dtype, "softmax")
    with np.errstate(invalid="ignore"):  # a row of -inf gives nan, as in PyTorch
        e = np.exp(x - kept_max(x, dims))
        data = e / e.sum(axis=dims, keepdims=True, dtype=accumulation_dtype(x.dtype))  # float16 sums in float32
    return record(SOFTMAX, data.astype(x.dtype, copy=False), (input,), dim=dims)


def cumsum(input: Tensor, dim: int | None = None, *, dtype: Any = None, axis: Any = None) -> Tensor:
    """The running sum along `dim`; integers and bools sum in int64, as in PyTorch."""
    if autocast_state.get() is not None and dtype is None:
        return autocast_call(cumsum, "cumsum", input, dim, dtype=dtype, axis=axis)
    if axis is not None:  # numpy's name, which PyTorch takes too
        dim = axis
    x = input._data
    if dtype is None and x.dtype.kind in "biu":
        dtype = np.int64
    if dim.__class__ is not int and not is_one_dim(dim):
        raise TypeError(f"cumsum(): argument 'dim' must be int, not {type(dim).__name__}")
    (d,) = normalize_dims(dim, x.ndim, "cumsum")  # a 0-d tensor takes dim 0 or -1
    if dtype is not None:
        if np.dtype(dtype) == np.bool_:
            raise not_implemented("cumsum_out_cpu", np.dtype(dtype))
        refuse_integer_result(input, dtype)
    if x.ndim == 0:
        return record(CUMSUM_SCALAR, x.astype(dtype or x.dtype), (input,))
    with quiet_float_errors():  # inf - inf is NaN, quietly as in PyTorch
        if np.dtype(dtype or x.dtype) == np.float16:  # accumulated in float32, as PyTorch's (numpy's stalls at 2048)
            data = np.cumsum(x, axis=d, dtype=np.float32).astype(np.float16)
        else:
            data = np.cumsum(x, axis=d, dtype=dtype)
    return record(CUMSUM, data, (input,), dim=d)


METHODS = {
    "sum": sum, "mean": mean, "prod": prod, "amax": amax, "amin": amin, "logsumexp": logsumexp,
    "log_softmax": log_softmax, "softmax": softmax, "cumsum": cumsum,
}
