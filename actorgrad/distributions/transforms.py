"""Transforms (PyTorch's torch.distributions.transforms): invertible maps y = f(x) with the log of their Jacobian's
absolute determinant, which `TransformedDistribution` pushes a base distribution through. The base class and the
chaining of transforms are in `transform_base`, the transforms of other transforms (per event, per block) in
`transforms_structural`, those onto sets of matrices in `transforms_matrix`; every name is imported from here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np

from actorgrad.creation import arange, full_like
from actorgrad.distributions import constraints
from actorgrad.distributions.transform_base import ComposeTransform, Transform, identity_transform
from actorgrad.distributions.transforms_matrix import (
    CorrCholeskyTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
)
from actorgrad.distributions.transforms_structural import (
    CatTransform,
    IndependentTransform,
    ReshapeTransform,
    StackTransform,
)
from actorgrad.distributions.utils import broadcast_all, sum_rightmost
from actorgrad.ops.activations import logsigmoid, softplus
from actorgrad.ops.index_sets import broadcast_shapes  # PyTorch's error for shapes that do not broadcast
from actorgrad.ops.padding import pad
from actorgrad.tensor import Tensor

if TYPE_CHECKING:
    from actorgrad.distributions.distribution import Distribution

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
    "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform", "Transform",
    "identity_transform",
]


class _Elementwise(Transform):
    """A parameterless bijection of the real line onto `codomain`, entry by entry: transforms of one class
    are equal."""

    domain = constraints.real
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self))


def _clamp_open_unit(value: Tensor) -> Tensor:
    """`value` clamped to [tiny, 1 - eps] of its dtype, where log(value) and log(1 - value) are finite."""
    info = np.finfo(value.dtype)
    return value.clamp(min=float(info.tiny), max=1.0 - float(info.eps))


class ExpTransform(_Elementwise):
    """y = exp(x)."""

    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class SigmoidTransform(_Elementwise):
    """y = 1 / (1 + exp(-x)), kept inside (0, 1) by clamping to [tiny, 1 - eps] of the dtype; x = logit(y)."""

    codomain = constraints.unit_interval

    def _call(self, x: Tensor) -> Tensor:
        return _clamp_open_unit(x.sigmoid())

    def _inverse(self, y: Tensor) -> Tensor:
        y = _clamp_open_unit(y)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x) - softplus(x)


class SoftplusTransform(_Elementwise):
    """y = log(1 + exp(x)) (linear above x = 20)."""

    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x)


class TanhTransform(_Elementwise):
    """y = tanh(x); the log-Jacobian 2 (log 2 - x - softplus(-2x)) stays finite where 1 - tanh(x)^2 rounds
    to 0."""

    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.atanh()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AbsTransform(Transform):
    """y = |x|: not a bijection; its inverse picks the non-negative preimage."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbsTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Tensor | float, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self) -> Tensor:
        return self.exponent.sign()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all().item())

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(broadcast_shapes(tuple(shape), self.exponent.shape))

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.forward_shape(shape)


def _same_parameter(a: Tensor | float, b: Tensor | float) -> bool:
    if isinstance(a, Real) and isinstance(b, Real):
        return a == b
    return bool((a == b).all().item())


class AffineTransform(Transform):
    """y = loc + scale * x, over events of `event_dim` dims (0 for scalars, 1 for vectors...)."""

    bijective = True

    def __init__(
        self, loc: Tensor | float, scale: Tensor | float, event_dim: int = 0, cache_size: int = 0
    ) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real, self._event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return self.domain

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, AffineTransform) and _same_parameter(self.loc, other.loc)
            and _same_parameter(self.scale, other.scale)
        )

    @property
    def sign(self) -> Any:
        if isinstance(self.scale, Real):
            return 1 if self.scale > 0 else -1 if self.scale < 0 else 0
        return self.scale.sign()

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shape = x.shape
        if isinstance(self.scale, Real):
            result = full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self._event_dim:
            result = sum_rightmost(result, self._event_dim)
            shape = shape[: len(shape) - self._event_dim]
        return result.expand(shape)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        loc_shape, scale_shape = getattr(self.loc, "shape", ()), getattr(self.scale, "shape", ())
        return tuple(broadcast_shapes(tuple(shape), loc_shape, scale_shape))

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.forward_shape(shape)


class StickBreakingTransform(Transform):
    """Real vectors of length K onto the simplex of length K + 1 by breaking a stick: entry i takes the fraction
    sigmoid(x_i - log(K - i)) of what is left (the shift maps x = 0 to the uniform point), the last entry the
    rest."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StickBreakingTransform)

    @staticmethod
    def _log_pieces_left(k: int, like: Tensor) -> Tensor:
        """log(K - i) for i = 0..K-1."""
        return arange(k, 0, -1, dtype=like.dtype, device=like.device).log()

    def _call(self, x: Tensor) -> Tensor:
        fraction = _clamp_open_unit((x - self._log_pieces_left(x.shape[-1], x)).sigmoid())
        left = (1 - fraction).cumprod(-1)
        return pad(fraction, [0, 1], value=1) * pad(left, [1, 0], value=1)

    def _inverse(self, y: Tensor) -> Tensor:
        taken = y[..., :-1]
        left = (1 - taken.cumsum(-1)).clamp(min=float(np.finfo(y.dtype).tiny))
        return taken.log() - left.log() + self._log_pieces_left(taken.shape[-1], y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """The Jacobian is triangular: dy_i/dx_i = (1 - fraction_i) y_i."""
        shifted = x - self._log_pieces_left(x.shape[-1], x)
        return (-shifted + logsigmoid(shifted) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class SoftmaxTransform(Transform):
    """Real vectors onto the simplex of the same length by exp and normalizing: not a bijection (adding a constant
    to x changes nothing), so there is no log-Jacobian; the inverse is log y, one of the preimages."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftmaxTransform)

    def _call(self, x: Tensor) -> Tensor:
        unnormalized = (x - x.max(-1, True)[0]).exp()
        return unnormalized / unnormalized.sum(-1, True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.forward_shape(shape)


class CumulativeDistributionTransform(Transform):
    """y = the CDF of `distribution` at x, from its support onto the unit interval; the inverse is its icdf and
    log |dy/dx| its log density."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution: Distribution, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self.distribution.support

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)
