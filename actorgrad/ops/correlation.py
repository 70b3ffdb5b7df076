"""Covariance and correlation (cov, corrcoef), dist, cross, and the value tests isposinf, isneginf and isreal.

cov and corrcoef are composites of recorded ops, as in PyTorch, so their gradients and nodes come from those ops;
dist and cross record PyTorch's own nodes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.complex_parts import complex as _complex
from actorgrad.ops.operands import (
    SCALAR_NAMES,
    broadcast_error,
    data_as,
    dim_in_range,
    kernel_operands,
    require_tensors,
    result_type,
)
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.ops.shape import single_dim
from actorgrad.ops.statistics import _inf_norm_grad, _pnorm_grad, norm
from actorgrad.tensor import Tensor, bool_
from actorgrad.user_warnings import warn, warn_once

__all__ = ["corrcoef", "cov", "cross", "dist", "isneginf", "isposinf", "isreal"]


# -- cov, corrcoef ----------------------------------------------------------------------------------------------
def _check_weights(kind: str, w: Tensor, observations: int, integral: bool) -> None:
    """PyTorch's checks of fweights (integral) or aweights (floating)."""
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {kind} to have one or fewer dimensions but got {kind} with {w.ndim} "
                           "dimensions")
    if (w.dtype.kind in "iu") != integral or (not integral and w.dtype.kind != "f"):
        wanted = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {kind} to have {wanted} dtype but got {kind} with "
                           f"{SCALAR_NAMES.get(w.dtype, w.dtype)} dtype")
    if w.numel() != observations:
        raise RuntimeError(f"cov(): expected {kind} to have the same numel as there are observations in the input "
                           f"but got {w.numel()} != {observations}")
    if observations and bool((w._data < 0).any()):
        raise RuntimeError(f"cov(): {kind} cannot be negative")


def cov(
    input: Tensor, *, correction: int = 1, fweights: Tensor | None = None, aweights: Tensor | None = None
) -> Tensor:
    """The covariance matrix of the variables in input's rows (observations in its columns), weighted by the
    observations' integer frequencies `fweights` and importances `aweights`, divided by the weights' sum less
    `correction` (PyTorch's formula, as numpy.cov's)."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with {input.ndim} "
                           "dimensions")
    if input.dtype == bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    if not isinstance(correction, int | np.integer) or isinstance(correction, bool):
        raise TypeError(f"cov(): argument 'correction' must be int, not {type(correction).__name__}")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    observations = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, observations, True)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, observations, False)
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum: Any = observations
        norm_factor: Any = observations - correction
    else:
        w_sum = w.sum()
        if not bool(w_sum._data != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        norm_factor = w_sum - correction
        if correction and aweights is not None:
            norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
    if float(norm_factor if w is None else norm_factor._data) <= 0:
        warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of observations.")
        norm_factor = 0  # as PyTorch: the covariances become inf (or nan), never of the wrong sign
    centered = x - ((x if w is None else x * w).sum(1) / w_sum).unsqueeze(1)
    products = centered.mm((centered if w is None else centered * w).t().conj())  # X X^H: Hermitian for complex x
    with np.errstate(divide="ignore", invalid="ignore"):
        return (products / norm_factor).squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """Pearson's correlation coefficients of the variables in input's rows: cov normalised by the variables'
    standard deviations, clipped to [-1, 1] (complex ones: their real and imaginary parts, as PyTorch's)."""
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    c = cov(input)
    with np.errstate(divide="ignore", invalid="ignore"):
        if c.ndim == 0:  # one variable: 1, or nan where its covariance is nan, inf or 0
            return c / c
        variances = c.diagonal()
        stddev = (variances.real if variances.dtype.kind == "c" else variances).sqrt()
        c = c / stddev.reshape(-1, 1) / stddev.reshape(1, -1)
    if c.dtype.kind == "c":
        return _complex(c.real.clamp(-1, 1), c.imag.clamp(-1, 1))
    return c.clamp(-1, 1)


# -- dist -------------------------------------------------------------------------------------------------------
def _dist_grad(ops: Any, g: Any, self: Any, other: Any, result: Any, p: float, dims: tuple, kept_shape: tuple):
    """The gradient for the broadcast difference self - other. Each input's is this summed back to its shape by
    its own formula: the node's broadcast undoing compares an input with the 0-dim output, which a 0-dim input
    matches while it was still broadcast against the other."""
    diff = self - other
    if math.isinf(p):
        return _inf_norm_grad(ops, g, diff, result, dims, kept_shape)
    return _pnorm_grad(ops, g, diff, result, p, kept_shape)


_DIST_SAVED = ("self", "other", "result", "p", "dims", "kept_shape")
DIST = Rule(
    "DistBackward0",
    (_DIST_SAVED, lambda ops, g, self, *saved: ops.sum_to(_dist_grad(ops, g, self, *saved), self.shape)),
    (_DIST_SAVED, lambda ops, g, self, other, *saved: -ops.sum_to(_dist_grad(ops, g, self, other, *saved),
                                                                  other.shape)),
)
# PyTorch's p=0 dist gives no gradient (an undefined one): grad() reports its inputs unused.
ZERO_DIST = Rule("DistBackward0", ((), lambda ops, g: None), ((), lambda ops, g: None), broadcasts=True)


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The p-norm of input - other (broadcast), as a 0-dim tensor."""
    if autocast_state.get() is not None:
        return autocast_call(dist, "dist", input, other, p)
    require_tensors("dist", input=input, other=other)
    device = common_device((input, other))
    dtype = result_type(input, other)
    if dtype.kind not in "fc":
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{SCALAR_NAMES.get(dtype, dtype)} instead.")
    x, y = kernel_operands(data_as(input, dtype), data_as(other, dtype))
    try:
        diff = x - y
    except ValueError:
        raise broadcast_error("dist", x.shape, y.shape) from None
    data = norm(Tensor(diff, device=device), float(p))._data
    if p == 0:
        return record(ZERO_DIST, data, (input, other))
    return record(DIST, data, (input, other), p=float(p), dims=tuple(range(diff.ndim)), kept_shape=(1,) * diff.ndim)


# -- cross ------------------------------------------------------------------------------------------------------
def _cross(roll: Any, a: Any, b: Any) -> Any:
    """a x b along the dim `roll(x, shift)` rolls: component i is a[i+1] b[i+2] - a[i+2] b[i+1]."""
    return roll(a, -1) * roll(b, -2) - roll(a, -2) * roll(b, -1)


def _cross_grad(ops: Any, a: Any, b: Any, dim: int) -> Any:
    return _cross(lambda x, shift: ops.roll(x, (shift,), (dim,)), a, b)


CROSS = Rule(
    "LinalgCrossBackward0",
    (("other", "dim"), lambda ops, g, other, dim: _cross_grad(ops, ops.conj(other), g, dim)),  # conj: complex inputs
    (("self", "dim"), lambda ops, g, self, dim: _cross_grad(ops, g, ops.conj(self), dim)),
    broadcasts=True,
)
CROSS_DEFAULT_DIM = (
    "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim explicitly or "
    "simply use torch.linalg.cross.\nThe default value of dim will change to agree with that of linalg.cross in a "
    "future release."
)


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The cross product of 3-vectors along `dim` (other dims broadcast). Without `dim`, PyTorch's deprecated
    default: the first dim of input of size 3."""
    if autocast_state.get() is not None:
        return autocast_call(cross, "cross", input, other, dim)
    require_tensors("cross", input=input, other=other)
    if dim is None:
        warn_once(CROSS_DEFAULT_DIM)
        dim = next((d for d, size in enumerate(input.shape) if size == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = dim_in_range(dim, input.ndim) if isinstance(dim, int) else single_dim(dim, input.ndim, "cross")
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    if input.dtype == np.bool_:
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    if input.dtype != other.dtype:
        raise RuntimeError(f"expected scalar type {SCALAR_NAMES[input.dtype]} but found {SCALAR_NAMES[other.dtype]}")
    device = common_device((input, other))
    xp = device.xp
    a, b = input._data, other._data
    try:
        data = _cross(lambda x, shift: xp.roll(x, shift, d), a, b)
    except ValueError:
        raise broadcast_error("cross", a.shape, b.shape) from None
    return record(CROSS, data, (input, other), dim=d)


# -- value tests ------------------------------------------------------------------------------------------------
def _test(input: Tensor, floating: Any, otherwise: bool) -> Tensor:
    """`floating(x)` for a floating tensor; a bool or integer one is `otherwise` everywhere."""
    x, device = input._data, input._device
    return Tensor(floating(x) if x.dtype.kind == "f" else device.xp.full(x.shape, otherwise, bool_), device=device)


def _refuse_complex(op: str, input: Tensor) -> None:
    """PyTorch's error for a signed infinity test of a complex tensor, whose infinities have no sign."""
    if input._data.dtype.kind == "c":
        raise RuntimeError(f"{op} does not support complex inputs.")


def isposinf(input: Tensor) -> Tensor:
    _refuse_complex("isposinf", input)
    return _test(input, lambda x: x == math.inf, False)


def isneginf(input: Tensor) -> Tensor:
    _refuse_complex("isneginf", input)
    return _test(input, lambda x: x == -math.inf, False)


def isreal(input: Tensor) -> Tensor:
    """Whether each element's imaginary part is 0 (True everywhere for a real dtype)."""
    xp = input._device.xp
    x = input._data
    return Tensor(xp.asarray(x.imag == 0) if x.dtype.kind == "c" else xp.ones(x.shape, bool_), device=input._device)


METHODS: dict[str, Any] = {
    "cov": cov, "corrcoef": corrcoef, "dist": dist, "cross": cross,
    "isposinf": isposinf, "isneginf": isneginf, "isreal": isreal,
}
