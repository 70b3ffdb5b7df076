"""InverseGamma (PyTorch's torch.distributions.InverseGamma): 1 / X for X gamma, built as a transformed
distribution, so that its samples are reparameterized through the gamma sampler's implicit gradient and its CDF is
the gamma's upper tail at 1 / y."""

from __future__ import annotations

import math
from collections.abc import Sequence

from actorgrad.distributions import constraints
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.gamma_family import Gamma
from actorgrad.distributions.transformed import TransformedDistribution
from actorgrad.distributions.transforms import PowerTransform
from actorgrad.ops.gamma import digamma, lgamma
from actorgrad.ops.selection import where
from actorgrad.tensor import Tensor

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """1 / X for X gamma of shape `concentration` (alpha) and rate `rate` (beta): the density
    beta^alpha / Gamma(alpha) y^(-alpha - 1) exp(-beta / y) on (0, inf)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True
    base_dist: Gamma

    def __init__(
        self, concentration: Tensor | float, rate: Tensor | float, validate_args: bool | None = None
    ) -> None:
        base = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base, PowerTransform(-base.rate.new_ones(())), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> InverseGamma:
        return super().expand(batch_shape, _instance=self._get_checked_instance(InverseGamma, _instance))

    @property
    def concentration(self) -> Tensor:
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        return self.base_dist.rate

    @property
    def mean(self) -> Tensor:
        """rate / (concentration - 1), infinite for concentration <= 1 (where the formula is fed a stand-in, so
        that its gradient there is 0, not NaN)."""
        finite = self.concentration > 1
        c = where(finite, self.concentration, 2.0)
        return where(finite, self.rate / (c - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        """rate^2 / ((concentration - 1)^2 (concentration - 2)), infinite for concentration <= 2."""
        finite = self.concentration > 2
        c = where(finite, self.concentration, 3.0)
        return where(finite, self.rate.square() / ((c - 1).square() * (c - 2)), math.inf)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c + self.rate.log() + lgamma(c) - (1 + c) * digamma(c)
