"""The gamma family (lgamma, digamma, polygamma, mvlgamma) and erfinv, their in-place forms and gradient rules; the
kernels are `actorgrad.devices.gamma`, run in float64 and rounded to the op's floating dtype."""

from __future__ import annotations

import math
from numbers import Integral
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.devices import gamma as kernels
from actorgrad.ops.inplace_recording import write_in_place
from actorgrad.ops.operands import SCALAR_NAMES, floating, refuse_complex, require_tensors
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor

__all__ = ["digamma", "erfinv", "lgamma", "mvlgamma", "polygamma"]

HALF_SQRT_PI = math.sqrt(math.pi) / 2


def _erfinv_grad(ops: Any, g: Any, self: Any) -> Any:
    y = ops.erfinv(self)
    return g * HALF_SQRT_PI * ops.exp(y * y)


def _mvlgamma_grad(ops: Any, g: Any, self: Any, p: int) -> Any:
    """The sum of digamma(self - j / 2) over j < p."""
    total = ops.polygamma(0, self)
    for j in range(1, p):
        total = total + ops.polygamma(0, self - 0.5 * j)
    return g * total


def _per_element(ns: float) -> Any:
    return lambda data, params: ns * data.size


def _polygamma_cost(data: Any, params: dict) -> float:
    return (550 + 45 * min(params["n"] + 1, 180)) * data.size  # the direct terms stop growing there


# The backward kernels' nanoseconds per element, measured here on 2e5 float64 elements: digamma 145, erfinv 225,
# polygamma(m >= 1) about 550 + 45 m (its Hurwitz zeta sums m + 10 terms directly), so that the scheduler sends
# large ones to worker threads (the default estimate is 1 ns per element).
_POLYGAMMA_GRAD = (("n", "self"), lambda ops, g, n, self: g * ops.polygamma(n + 1, self))
LGAMMA = Rule("LgammaBackward0", (("self",), lambda ops, g, self: g * ops.polygamma(0, self)), cost=_per_element(150))
DIGAMMA = Rule("DigammaBackward0", (("self",), lambda ops, g, self: g * ops.polygamma(1, self)),
               cost=_per_element(600))
POLYGAMMA = Rule("PolygammaBackward0", _POLYGAMMA_GRAD, cost=_polygamma_cost)
POLYGAMMA_INPLACE = Rule("PolygammaBackward1", _POLYGAMMA_GRAD, cost=_polygamma_cost)  # torch's polygamma_(self, n)
ERFINV = Rule("ErfinvBackward0", (("self",), _erfinv_grad), cost=_per_element(230))
MVLGAMMA = Rule("MvlgammaBackward0", (("self", "p"), _mvlgamma_grad),
                cost=lambda data, params: 150 * params["p"] * data.size)


def _int(value: Any, name: str, argument: str, position: int) -> int:
    """An int argument as PyTorch parses one: no bool, no float, and it must fit int64."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be int, not "
                        f"{type(value).__name__}")
    value = int(value)
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError("Overflow when unpacking long long")
    return value


def _order(n: Any, name: str) -> int:
    n = _int(n, name, "n", 1)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return n


def float64_kernel_op(rule: Rule, kernel: Any, input: Tensor, kernel_name: str, **params: Any) -> Tensor:
    """One of our float64 kernels (the gamma family, erf, the Bessel and normal functions) on `input`, rounded to
    the op's floating dtype (an integer or bool input gives the default float dtype) and recorded with `rule`; a
    complex input gets PyTorch's error for its kernel `kernel_name` before anything is computed. Values past a
    dtype's range (lgamma beyond float32's, say) round to inf silently, as in PyTorch."""
    x = input._data
    refuse_complex(x.dtype, kernel_name)
    with np.errstate(all="ignore"):
        data = kernel(input._device.xp, x).astype(floating(x.dtype), copy=False)
    return record(rule, data, (input,), **params)


def _lgamma(input: Tensor, name: str) -> Tensor:
    require_tensors(name, input=input)
    return float64_kernel_op(LGAMMA, kernels.lgamma, input, "lgamma_vml_cpu")


def _digamma(input: Tensor, name: str) -> Tensor:
    require_tensors(name, input=input)
    return float64_kernel_op(DIGAMMA, kernels.digamma, input, "digamma")


def _erfinv(input: Tensor, name: str) -> Tensor:
    require_tensors(name, input=input)
    return float64_kernel_op(ERFINV, kernels.erfinv, input, "erfinv_vml_cpu")


def _polygamma(rule: Rule, n: int, input: Tensor) -> Tensor:
    kernel_name = ("digamma", "trigamma")[n] if n < 2 else "polygamma"
    return float64_kernel_op(rule, lambda xp, x: kernels.polygamma(xp, n, x), input, kernel_name, n=n)


def _mvlgamma_order(input: Tensor, p: Any, name: str, position: int) -> int:
    p = _int(p, name, "p", position)
    if input.dtype.kind == "b":
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return p


def _mvlgamma(input: Tensor, p: int) -> Tensor:
    # "arange_cpu": the kernel PyTorch names in its error for a complex input
    return float64_kernel_op(MVLGAMMA, lambda xp, x: kernels.mvlgamma(xp, x, p), input, "arange_cpu", p=p)


def lgamma(input: Tensor) -> Tensor:
    """log |Gamma(input)|; inf at the poles (0 and the negative integers)."""
    return _lgamma(input, "lgamma")


def digamma(input: Tensor) -> Tensor:
    """The derivative of lgamma; -inf at 0 (inf at -0), NaN at the negative integers."""
    return _digamma(input, "digamma")


def polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of digamma (n >= 0; polygamma(0, x) is digamma(x))."""
    n = _order(n, "polygamma")
    require_tensors("polygamma", 2, input=input)
    return _polygamma(POLYGAMMA, n, input)


def erfinv(input: Tensor) -> Tensor:
    """The inverse of erf: +-inf at +-1, NaN outside [-1, 1]."""
    if autocast_state.get() is not None:
        return autocast_call(erfinv, "erfinv", input)
    return _erfinv(input, "erfinv")


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma of dimension p >= 1: sum over j < p of lgamma(input - j / 2), plus
    p (p - 1) / 4 log(pi)."""
    require_tensors("mvlgamma", input=input)
    return _mvlgamma(input, _mvlgamma_order(input, p, "mvlgamma", 2))


# -- torch.special's names, whose errors say special_<name> ----------------------------------------------------------
def special_gammaln(input: Tensor) -> Tensor:
    """log |Gamma(input)| (lgamma)."""
    return _lgamma(input, "special_gammaln")


def special_digamma(input: Tensor) -> Tensor:
    """The derivative of lgamma (digamma)."""
    return _digamma(input, "special_digamma")


def special_psi(input: Tensor) -> Tensor:
    """The derivative of lgamma (digamma)."""
    return _digamma(input, "special_psi")


def special_polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of digamma (polygamma)."""
    n = _order(n, "special_polygamma")
    require_tensors("special_polygamma", 2, input=input)
    return _polygamma(POLYGAMMA, n, input)


def special_multigammaln(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma of dimension p (mvlgamma)."""
    require_tensors("special_multigammaln", input=input)
    return _mvlgamma(input, _mvlgamma_order(input, p, "special_multigammaln", 2))


def special_erfinv(input: Tensor) -> Tensor:
    """The inverse of erf (erfinv)."""
    return _erfinv(input, "special_erfinv")


# -- Tensor methods: the order and p come first -----------------------------------------------------------------------
def _polygamma_method(self: Tensor, n: int) -> Tensor:
    return _polygamma(POLYGAMMA, _order(n, "polygamma"), self)


def _mvlgamma_method(self: Tensor, p: int) -> Tensor:
    return _mvlgamma(self, _mvlgamma_order(self, p, "mvlgamma", 1))


def polygamma_(self: Tensor, n: int) -> Tensor:
    n = _order(n, "polygamma_")
    return write_in_place(self, lambda s: _polygamma(POLYGAMMA_INPLACE, n, s), (), True)


def mvlgamma_(self: Tensor, p: int) -> Tensor:
    p = _mvlgamma_order(self, p, "mvlgamma_", 1)
    if self.dtype.kind != "f":  # PyTorch's mvlgamma_ names the two dtypes the other way round
        raise RuntimeError(f"mvlgamma: result type {SCALAR_NAMES[self.dtype]} can't be cast to the desired output "
                           f"type {SCALAR_NAMES[floating(self.dtype)]}")
    return write_in_place(self, lambda s: _mvlgamma(s, p), (), True)


METHODS = {
    "lgamma": lgamma, "digamma": digamma, "polygamma": _polygamma_method, "erfinv": erfinv,
    "mvlgamma": _mvlgamma_method,
    "lgamma_": lambda self: write_in_place(self, lgamma, (), True),
    "digamma_": lambda self: write_in_place(self, digamma, (), True),
    "erfinv_": lambda self: write_in_place(self, erfinv, (), True),
    "polygamma_": polygamma_, "mvlgamma_": mvlgamma_,
}
