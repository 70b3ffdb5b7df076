"""GeneralizedPareto (PyTorch's torch.distributions.GeneralizedPareto, after TensorFlow Probability's): the
distribution of threshold excesses, with survival function (1 + c z)^(-1/c) of z = (x - loc) / scale, and exp(-z)
at c = 0. Each formula divides by the concentration c, so where c is 0 (to within isclose) it is fed c = 1 and its
c = 0 limit taken instead."""

from __future__ import annotations

import math
from collections.abc import Sequence

from actorgrad.creation import ones_like, zeros_like
from actorgrad.distributions import constraints
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.utils import batch_shape_of, broadcast_all
from actorgrad.ops.comparison import isclose
from actorgrad.ops.selection import where
from actorgrad.random_tensors import rand
from actorgrad.tensor import Tensor

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution of location `loc`, scale `scale` and shape `concentration` (c): on
    [loc, inf) for c >= 0, on [loc, loc - scale / c] for c < 0. Exponential at loc = 0, c = 0; uniform at c = -1."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(
        self, loc: Tensor | float, scale: Tensor | float, concentration: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(batch_shape_of(self.loc, loc, scale, concentration), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> GeneralizedPareto:
        shape = tuple(batch_shape)
        return self._expanded(
            GeneralizedPareto, shape, _instance, loc=self.loc.expand(shape), scale=self.scale.expand(shape),
            concentration=self.concentration.expand(shape),
        )

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        negative = self.concentration < 0
        c = where(negative, self.concentration, -1.0)
        return constraints.interval(self.loc, where(negative, self.loc - self.scale / c, math.inf))

    def _safe_concentration(self) -> tuple[Tensor, Tensor]:
        """Where c is 0 (isclose), and c with 1 there."""
        c = self.concentration
        at_zero = isclose(c, zeros_like(c))
        return at_zero, where(at_zero, ones_like(c), c)

    def _z(self, value: Tensor) -> Tensor:
        return (value - self.loc) / self.scale

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        u = rand(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        """-log scale - (1 / c + 1) log1p(c z); -log scale - z at c = 0."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        at_zero, c = self._safe_concentration()
        y = 1 / c + ones_like(z)
        nonzero = where(y == 0, y, y * (c * z).log1p())
        return -self.scale.log() - where(at_zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """log P(X > value): -log1p(c z) / c; -z at c = 0."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        at_zero, c = self._safe_concentration()
        return where(at_zero, -z, -(c * z).log1p() / c)

    def log_cdf(self, value: Tensor) -> Tensor:
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        """loc + scale / c expm1(-c log1p(-u)); loc - scale log1p(-u) at c = 0."""
        at_zero, c = self._safe_concentration()
        log_u = (-value).log1p()
        return where(at_zero, self.loc - self.scale * log_u, self.loc + self.scale / c * (-c * log_u).expm1())

    @property
    def mean(self) -> Tensor:
        """loc + scale / (1 - c), undefined (NaN) for c >= 1."""
        valid = self.concentration < 1
        c = where(valid, self.concentration, 0.5)
        return where(valid, self.loc + self.scale / (1 - c), math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        """scale^2 / ((1 - c)^2 (1 - 2c)), undefined (NaN) for c >= 1/2."""
        valid = self.concentration < 0.5
        c = where(valid, self.concentration, 0.25)
        return where(valid, self.scale.pow(2) / ((1 - c).pow(2) * (1 - 2 * c)), math.nan)

    def entropy(self) -> Tensor:
        return (self.scale.log() + self.concentration + 1).expand(self._batch_shape)
