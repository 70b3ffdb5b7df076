"""Spread and size of a tensor: var, std and the vector norms, with their gradient rules, and renorm, which
caps the norms of a tensor's slices."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.linalg_decompositions import check_floating
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import (
    accumulation_dtype,
    float16_in_float32,
    input_size,
    kept,
    numpy_names,
    one_dim,
    reduced_dims,
)
from actorgrad.ops.selection import where
from actorgrad.ops.shape import single_dim, to_dtype
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn

__all__ = ["norm", "renorm", "std", "var"]


def _var_grad(ops: Any, g: Any, self: Any, dims: tuple, kept_shape: tuple, count: int, scale: float | None) -> Any:
    mean = ops.sum(self, dims, keepdim=True) / count
    g = ops.reshape(g, kept_shape)
    if scale is None:  # PyTorch's rule over all dims with no degrees of freedom left: nan where x is its mean, else inf
        with np.errstate(invalid="ignore"):  # 0 * inf is nan here, as in PyTorch
            return ops.where(self == mean, g * math.nan, g * math.inf)
    return g * (self - mean) * scale


def _std_grad(ops: Any, g: Any, self: Any, result: Any, dims: tuple, kept_shape: tuple, count: int, scale: float):
    # Where the deviation is 0 the gradient is +0, as in PyTorch (not 0/0).
    zero = result == 0
    return _var_grad(ops, ops.where(zero, 0.0, g / (2 * result + zero)), self, dims, kept_shape, count, scale)


_MOMENTS = ("self", "dims", "kept_shape", "count", "scale")
VAR = Rule("VarBackward0", (_MOMENTS, float16_in_float32(_var_grad)), cost=input_size)
STD = Rule("StdBackward0", (("self", "result", *_MOMENTS[1:]), float16_in_float32(_std_grad)), cost=input_size)


def _variance(op: str, input: Tensor, dim: Any, unbiased: bool | None, keepdim: bool, correction: Any):
    x = input._data
    if x.dtype.kind not in "fc":
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if isinstance(dim, bool):  # var(True): the legacy positional `unbiased`
        dim, unbiased = None, dim
    if unbiased is not None and unbiased.__class__ is not bool:
        raise not_bool(op, "unbiased", unbiased)
    if keepdim.__class__ is not bool:
        raise not_bool(op, "keepdim", keepdim)
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}(): give either unbiased= (legacy) or correction=, not both")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = reduced_dims(dim, x.ndim, op) if x.ndim else one_dim(0 if dim is None else dim, 0, op)
    count = math.prod(x.shape[d] for d in dims)
    dof = count - correction
    if dof <= 0:
        warn(
            f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor "
            "(input numel divided by output numel)."
        )
    # dof <= 0 gives inf or nan, and an empty reduction nan whatever the correction, as in PyTorch
    w = x.astype(accumulation_dtype(x.dtype) or x.dtype, copy=False)  # float16 in float32, as PyTorch's
    with np.errstate(divide="ignore", invalid="ignore"):
        centered = w - w.mean(axis=dims, keepdims=True) if count else w  # empty: nothing to center (mean() warns)
        if x.dtype.kind == "c":  # |x - mean|^2: a real variance, whose gradient is the same rule's
            centered = input._device.xp.abs(centered)
        data = (centered * centered).sum(axis=dims, keepdims=keepdim) / np.float64(max(dof, 0) if count else 0)
    data = data.astype(np.float16 if x.dtype == np.float16 else centered.dtype, copy=False)
    # With dof <= 0 PyTorch's gradient over given dims still scales by 2 / dof (negative, or inf at 0); over all
    # dims (dim=None or a 0-d input) it is inf, or nan where x is its mean: see _var_grad.
    if dof > 0 or (dim is not None and x.ndim):
        scale = 2 / dof if dof else math.inf
    else:
        scale = None
    return data, dict(dims=dims, kept_shape=kept(x.shape, dims), count=count, scale=scale, self_shape=x.shape)


def var(
    input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *, correction: Any = None,
    axis: Any = None, keepdims: bool | None = None,
) -> Tensor:
    """The variance over `dim`, divided by count - correction (1 by default: Bessel's correction)."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    data, params = _variance("var", input, dim, unbiased, keepdim, correction)
    return record(VAR, data, (input,), **params)


def std(
    input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *, correction: Any = None,
    axis: Any = None, keepdims: bool | None = None,
) -> Tensor:
    """The standard deviation over `dim`: the square root of var with the same arguments."""
    if axis is not None or keepdims is not None:  # numpy's names, which PyTorch takes too
        dim, keepdim = numpy_names(dim, keepdim, axis, keepdims)
    data, params = _variance("std", input, dim, unbiased, keepdim, correction)
    return record(STD, np.sqrt(data), (input,), **params)


def _pnorm_grad(ops: Any, g: Any, self: Any, result: Any, p: float, kept_shape: tuple) -> Any:
    # PyTorch's rule, down to the signs of its zeros: sign(x) |x|^(p-1) (x |x|^(p-2) for p > 2, so a -0.0 keeps its
    # sign) times g / norm^(p-1), that factor 0 where the norm is (never 0/0); for p < 1, 0 where x is (never
    # 0 * inf) times g * norm^(1-p). (A norm is 0 only where all its x are, except for p < 0, where one zero is enough.)
    g = ops.reshape(g, kept_shape)
    if p == 1:
        return g * ops.sign(self)
    result = ops.reshape(result, kept_shape)
    zero_norm = ops.equal_mask(result, ops.zeros_like(result))
    if p == 2:
        return g * ops.where(result == 0, 0, self / (result + zero_norm))
    sign = ops.sign(self)
    # |x| (x conj(sgn x) for complex x), 1 where x is 0: no 0 ** negative
    magnitude = self * ops.conj(sign) + ops.equal_mask(self, ops.zeros_like(self))
    if p < 1:
        return ops.where(self == 0, 0, sign * magnitude ** (p - 1)) * g * result ** (1 - p)
    scale = ops.where(result == 0, 0, g / (result + zero_norm) ** (p - 1))
    if p < 2:
        return sign * magnitude ** (p - 1) * scale
    # |x|^(p-2) is 0 where x is, not the 1 put in the magnitude there: a choice, so its derivative is 0 there too
    return self * ops.where(self == 0, 0, magnitude ** (p - 2)) * scale


def _inf_norm_grad(ops: Any, g: Any, self: Any, result: Any, dims: tuple, kept_shape: tuple) -> Any:
    # The elements of largest (smallest, for -inf) magnitude share the gradient evenly, as in PyTorch. A NaN counts
    # as one of them (PyTorch's mask), so a NaN norm gives its elements sign(NaN) = 0 rather than 0 / 0.
    sign = ops.sign(self)
    magnitude = abs(self)
    mask = ops.equal_mask(magnitude, ops.reshape(result, kept_shape)) + (magnitude != magnitude)  # |x| bit for bit
    return ops.reshape(g, kept_shape) * sign * mask / ops.sum(mask, dims, keepdim=True)


_NORM = "LinalgVectorNormBackward0"
P_NORM = Rule(_NORM, (("self", "result", "p", "kept_shape"), _pnorm_grad), cost=input_size)
INF_NORM = Rule(_NORM, (("self", "result", "dims", "kept_shape"), _inf_norm_grad), cost=input_size)
# PyTorch's p=0 norm gives no gradient (an undefined one, not zeros): grad() reports its input unused.
ZERO_NORM = Rule(_NORM, ((), lambda ops, g: None))


def _check_identity(p: float, dim: Any, shape: tuple[int, ...]) -> None:
    """PyTorch's errors for a norm without an identity (inf, or p < 0) over an empty tensor: it needs
    every reduced dim to be non-empty, and the dims named."""
    named = () if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    if not named:
        raise RuntimeError(
            f"linalg.vector_norm cannot compute the {p:g} norm on an empty tensor because the operation does not "
            "have an identity"
        )
    for d in named:
        if shape[d] == 0:  # (PyTorch's message lacks the space after the dim)
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {p:g} norm on the dimension {d}because this dimension is "
                "empty and the operation does not have an identity"
            )


def _norm_input(input: Tensor, dtype: Any) -> Tensor:
    """The input norm computes on: floating or complex, cast first to `dtype` when one is given (PyTorch's checks
    on it: the same kind as the input's, and no narrower)."""
    x = input._data
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{SCALAR_NAMES[x.dtype]}")
    if dtype is None or np.dtype(dtype) == x.dtype:
        return input
    dtype = np.dtype(dtype)
    name = SCALAR_NAMES.get(dtype, dtype)
    if dtype.kind not in "fc":
        raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got {name}")
    if (dtype.kind == "c") != (x.dtype.kind == "c"):
        kind = "complex for complex" if x.dtype.kind == "c" else "real for real"
        raise RuntimeError(f"linalg.vector_norm: dtype should be {kind} inputs, but got {name}")
    if dtype.itemsize < x.dtype.itemsize:
        raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({SCALAR_NAMES[x.dtype]}) should be "
                           f"convertible without narrowing to the specified dtype ({name})")
    return to_dtype(input, dtype)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The vector p-norm over `dim` (all dims by default): p = 'fro' (2), any number, inf or -inf; or the nuclear
    norm (p = 'nuc') of the matrices over two dims; with `dtype`, computed in that dtype."""
    if autocast_state.get() is not None and dtype is None:
        return autocast_call(norm, "norm", input, p, dim, keepdim, dtype=dtype)
    if keepdim.__class__ is not bool:
        raise not_bool("norm", "keepdim", keepdim)
    input = _norm_input(input, dtype)
    x = input._data
    if p == "fro" or p is None:
        p = 2
    elif p == "nuc":  # a matrix norm: over a 2-D input's dims, or the two of `dim`, as PyTorch's
        from actorgrad.linalg import matrix_norm  # linalg imports the ops package: at call time

        return matrix_norm(input, "nuc", tuple(range(x.ndim)) if dim is None else dim, keepdim)
    if isinstance(p, str) or not isinstance(p, int | float | np.integer | np.floating):
        raise RuntimeError(f"norm(): p={p!r} is not supported; use 'fro', a number, inf or -inf")
    p = float(p) if isinstance(p, np.floating) else int(p) if isinstance(p, np.integer) else p
    dims = reduced_dims(dim, x.ndim, "norm") if x.ndim else one_dim(dim or 0, 0, "norm")  # a 0-d tensor: dim 0, -1
    params = dict(dims=dims, kept_shape=kept(x.shape, dims), self_shape=x.shape)
    magnitude = np.abs(x)
    real = magnitude.dtype  # the result's dtype: real for complex x
    if x.size == 0 and (p < 0 or p == math.inf):
        _check_identity(p, dim, x.shape)
    if math.isinf(p):
        data = (np.amax if p > 0 else np.amin)(magnitude, axis=dims, keepdims=keepdim)
        return record(INF_NORM, data, (input,), **params)
    if p == 0:
        data = np.count_nonzero(x, axis=dims, keepdims=keepdim).astype(real)
        return record(ZERO_NORM, data, (input,))
    magnitude = magnitude.astype(accumulation_dtype(real) or real, copy=False)  # float16 sums in float32
    if p == 2:
        data = np.sqrt(np.sum(magnitude * magnitude, axis=dims, keepdims=keepdim))  # |x|^2: x * x for real x
    elif p == 1:
        data = np.sum(magnitude, axis=dims, keepdims=keepdim)
    else:
        with np.errstate(divide="ignore"):  # for p < 0 a zero makes the norm 0, as in PyTorch
            data = np.sum(magnitude**p, axis=dims, keepdims=keepdim) ** (1 / p)
    return record(P_NORM, data.astype(real, copy=False), (input,), p=p, **params)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """The input with each slice along `dim` whose p-norm exceeds maxnorm scaled by maxnorm / (norm + 1e-7), as
    in PyTorch; composed of norm, where and a product, so the gradient flows through the norm."""
    if autocast_state.get() is not None:
        return autocast_call(renorm, "renorm", input, p, dim, maxnorm)
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {float(maxnorm):g}")
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    d = single_dim(dim, input.ndim, "renorm")
    if input.dtype.kind != "f":
        check_floating("linalg.vector_norm", input._data)
    if input.numel() == 0:  # nothing to scale, and an inf norm over an empty dim would refuse
        return input.clone()
    norms = norm(input, p, tuple(i for i in range(input.ndim) if i != d), keepdim=True)
    # maxnorm as a tensor: a true division, as PyTorch's kernel does (a number over a tensor multiplies by the
    # reciprocal, an ulp away)
    return input * where(norms > maxnorm, norms.new_full(norms.shape, maxnorm) / (norms + 1e-7), 1.0)


METHODS = {"var": var, "std": std, "norm": norm, "renorm": renorm}
