"""The distributions PyTorch builds as transformed distributions: LogNormal (exp of a normal), HalfNormal and
HalfCauchy (|x| of a centred normal or Cauchy), Gumbel (a double log of uniform noise), Weibull (a power of a
unit exponential), Pareto (exp of an exponential) and LogisticNormal (a normal vector broken onto the simplex);
each adds what it has in closed form (moments, entropy)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from actorgrad.creation import as_tensor, full, full_like, ones_like, zeros_like
from actorgrad.distributions import constraints
from actorgrad.distributions.continuous import Cauchy, Exponential, Normal, Uniform
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.transformed import TransformedDistribution
from actorgrad.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    ExpTransform,
    PowerTransform,
    StickBreakingTransform,
)
from actorgrad.distributions.utils import broadcast_all, is_number
from actorgrad.ops.selection import where
from actorgrad.tensor import Tensor

__all__ = ["Gumbel", "HalfCauchy", "HalfNormal", "LogNormal", "LogisticNormal", "Pareto", "Weibull"]

EULER_GAMMA = 0.57721566490153286060651209008240243


class LogNormal(TransformedDistribution):
    """exp(X) for X normal of mean `loc` and standard deviation `scale`."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        base = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> LogNormal:
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogNormal, _instance))

    @property
    def loc(self) -> Tensor:
        return self.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self) -> Tensor:
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc


class _Folded(TransformedDistribution):
    """|X| for X from a family symmetric about 0 (`_family(0, scale)`): twice its density on [0, inf)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _family: type

    def __init__(self, scale: Tensor | float, validate_args: bool | None = None) -> None:
        base = self._family(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.scale)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._folded_log_prob(value)

    def _folded_log_prob(self, value: Tensor) -> Tensor:
        return where(value >= 0, self.base_dist.log_prob(value) + math.log(2), -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """|X| for X normal of mean 0 and standard deviation `scale`."""

    _family = Normal

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> HalfNormal:
        return super().expand(batch_shape, _instance=self._get_checked_instance(HalfNormal, _instance))

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    """|X| for X Cauchy of median 0 and scale `scale`: its mean and variance are infinite."""

    _family = Cauchy

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> HalfCauchy:
        return super().expand(batch_shape, _instance=self._get_checked_instance(HalfCauchy, _instance))

    @property
    def mean(self) -> Tensor:
        return full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def log_prob(self, value: Tensor) -> Tensor:
        """The value read at the scale's dtype, as PyTorch's HalfCauchy reads it (a bool or float64 value included;
        HalfNormal's promotes)."""
        if self._validate_args:
            self._validate_sample(value)
        return self._folded_log_prob(as_tensor(value, dtype=self.scale.dtype, device=self.scale.device))


class Gumbel(TransformedDistribution):
    """The Gumbel (type I extreme value) distribution of location `loc` and scale `scale`:
    loc - scale * log(-log U) for U uniform on [tiny, 1 - eps] of the dtype."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        info = np.finfo(self.loc.dtype)
        low, high = float(info.tiny), 1 - float(info.eps)
        if is_number(loc) and is_number(scale):
            base = Uniform(low, high, validate_args=validate_args)
        else:
            base = Uniform(full_like(self.loc, low), full_like(self.loc, high), validate_args=validate_args)
        transforms = [
            ExpTransform().inv, AffineTransform(loc=0, scale=-ones_like(self.scale)), ExpTransform().inv,
            AffineTransform(loc=loc, scale=-self.scale),
        ]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Gumbel:
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc, new.scale = self.loc.expand(tuple(batch_shape)), self.scale.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value: Tensor) -> Tensor:
        """In closed form: through the transforms it would lose precision in the tails."""
        if self._validate_args:
            self._validate_sample(value)
        z = (self.loc - value) / self.scale
        return (z - z.exp()) - self.scale.log()

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + EULER_GAMMA)


class Weibull(TransformedDistribution):
    """The two-parameter Weibull distribution: scale * E ** (1 / concentration) for E unit exponential."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(
        self, scale: Tensor | float, concentration: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(ones_like(self.scale), validate_args=validate_args)
        super().__init__(base, self._transforms(), validate_args=validate_args)

    def _transforms(self) -> list:
        return [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Weibull:
        shape = tuple(batch_shape)
        new = self._get_checked_instance(Weibull, _instance)
        new.scale, new.concentration = self.scale.expand(shape), self.concentration.expand(shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        TransformedDistribution.__init__(new, self.base_dist.expand(shape), new._transforms(), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.scale * (1 + self.concentration_reciprocal).lgamma().exp()

    @property
    def mode(self) -> Tensor:
        """nan where concentration < 1 (the density is infinite at 0), silently, as PyTorch's."""
        with np.errstate(invalid="ignore"):
            return self.scale * ((self.concentration - 1) / self.concentration) ** self.concentration_reciprocal

    @property
    def variance(self) -> Tensor:
        first = (1 + self.concentration_reciprocal).lgamma()
        return self.scale.pow(2) * ((1 + 2 * self.concentration_reciprocal).lgamma().exp() - (2 * first).exp())

    def entropy(self) -> Tensor:
        k_inv = self.concentration_reciprocal
        return EULER_GAMMA * (1 - k_inv) + (self.scale * k_inv).log() + 1


class Pareto(TransformedDistribution):
    """The Pareto type I distribution on [scale, inf) of tail index `alpha`: scale * exp(E) for E exponential of
    rate alpha."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale: Tensor | float, alpha: Tensor | float, validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        super().__init__(base, [ExpTransform(), AffineTransform(loc=0, scale=self.scale)], validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Pareto:
        new = self._get_checked_instance(Pareto, _instance)
        new.scale, new.alpha = self.scale.expand(tuple(batch_shape)), self.alpha.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self) -> Tensor:
        """inf where alpha <= 1 (a division by 0, silently, as PyTorch's)."""
        a = self.alpha.clamp(min=1)
        with np.errstate(divide="ignore"):
            return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        """inf where alpha <= 2."""
        a = self.alpha.clamp(min=2)
        with np.errstate(divide="ignore"):
            return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class LogisticNormal(TransformedDistribution):
    """Points of the simplex of K + 1 entries from normal vectors of K entries (mean `loc`, standard deviations
    `scale`) by `StickBreakingTransform`: log(y_i / (1 - y_0 - ... - y_i)) + log(K - i) is normal."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        base: Distribution = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand((1,))
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> LogisticNormal:
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogisticNormal, _instance))

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale
