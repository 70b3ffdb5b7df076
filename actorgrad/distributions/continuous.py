"""Normal, Uniform, Exponential, Laplace and Cauchy: the location-scale distributions on the real line (and
Exponential on [0, inf)), each reparameterizable as a transform of uniform or standard normal noise."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from actorgrad.creation import empty, full, zeros_like
from actorgrad.distributions import constraints
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.exp_family import ExponentialFamily
from actorgrad.distributions.utils import batch_shape_of, broadcast_all
from actorgrad.random_tensors import rand, randn
from actorgrad.tensor import Tensor

__all__ = ["Cauchy", "Exponential", "Laplace", "Normal", "Uniform"]

HALF_LOG_2PI = math.log(math.sqrt(2 * math.pi))


class _LocationScale(Distribution):
    """A distribution on the real line given by a location `loc` (its mean and mode) and a positive `scale`."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(batch_shape_of(self.loc, loc, scale), validate_args=validate_args)

    def _expanded_to(self, cls: type, batch_shape: Sequence[int], _instance: Distribution | None) -> Distribution:
        shape = tuple(batch_shape)
        return self._expanded(cls, shape, _instance, loc=self.loc.expand(shape), scale=self.scale.expand(shape))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc


class Normal(_LocationScale, ExponentialFamily):
    """The normal (Gaussian) distribution of mean `loc` and standard deviation `scale`."""

    _mean_carrier_measure = 0

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Normal:
        return self._expanded_to(Normal, batch_shape, _instance)

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        eps = randn(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -((value - self.loc) ** 2) / (2 * self.scale**2) - self.scale.log() - HALF_LOG_2PI

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)).erf())

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal()

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()


class Uniform(Distribution):
    """The uniform distribution on the half-open interval [low, high)."""

    has_rsample = True

    def __init__(self, low: Tensor | float, high: Tensor | float, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(batch_shape_of(self.low, low, high), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Uniform:
        shape = tuple(batch_shape)
        return self._expanded(Uniform, shape, _instance, low=self.low.expand(shape), high=self.high.expand(shape))

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        noise = rand(self._extended_shape(sample_shape), dtype=self.low.dtype, device=self.low.device)
        return self.low + noise * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = self.low.le(value).type_as(self.low) * self.high.gt(value).type_as(self.low)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()


class Exponential(ExponentialFamily):
    """The exponential distribution of rate `rate` (1 / its mean)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(batch_shape_of(self.rate, rate), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Exponential:
        shape = tuple(batch_shape)
        return self._expanded(Exponential, shape, _instance, rate=self.rate.expand(shape))

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return empty(shape, dtype=self.rate.dtype, device=self.rate.device).exponential_() / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return -(-x).log()


class Laplace(_LocationScale):
    """The Laplace (double exponential) distribution of location `loc` and scale `scale`."""

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Laplace:
        return self._expanded_to(Laplace, batch_shape, _instance)

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return 2**0.5 * self.scale

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """The inverse CDF of noise u in (-1, 1): its lower end moved in by eps, where log1p(-|u|) is -inf."""
        shape = self._extended_shape(sample_shape)
        eps = float(np.finfo(self.loc.dtype).eps)
        u = empty(shape, dtype=self.loc.dtype, device=self.loc.device).uniform_(eps - 1, 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        offset = value - self.loc
        return 0.5 - 0.5 * offset.sign() * (-offset.abs() / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()


class Cauchy(_LocationScale):
    """The Cauchy (Lorentz) distribution of median `loc` and half width at half maximum `scale`: it has no mean
    (nan) and an infinite variance."""

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Cauchy:
        return self._expanded_to(Cauchy, batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return full(self._extended_shape(), math.nan, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def variance(self) -> Tensor:
        return full(self._extended_shape(), math.inf, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        eps = empty(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - ((value - self.loc) / self.scale).pow(2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()
