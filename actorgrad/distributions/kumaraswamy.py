"""Kumaraswamy (PyTorch's torch.distributions.Kumaraswamy): the distribution on [0, 1] with density
a b x^(a - 1) (1 - x^a)^(b - 1), a Beta look-alike whose CDF 1 - (1 - x^a)^b inverts in closed form; as in PyTorch,
a transformed distribution of uniform noise U: (1 - U^(1/b))^(1/a)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from actorgrad.creation import full_like
from actorgrad.distributions import constraints
from actorgrad.distributions.continuous import Uniform
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.transformed import TransformedDistribution
from actorgrad.distributions.transformed_families import EULER_GAMMA
from actorgrad.distributions.transforms import AffineTransform, PowerTransform
from actorgrad.distributions.utils import broadcast_all
from actorgrad.ops.gamma import digamma, lgamma
from actorgrad.ops.selection import where
from actorgrad.tensor import Tensor

__all__ = ["Kumaraswamy"]


def _moment(a: Tensor, b: Tensor, n: int) -> Tensor:
    """E[X^n] = b B(1 + n/a, b)."""
    shifted = 1 + n / a
    return b * (lgamma(shifted) + lgamma(b) - lgamma(shifted + b)).exp()


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution of concentrations `concentration1` (a) and `concentration0` (b)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self, concentration1: Tensor | float, concentration0: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(full_like(self.concentration0, 0), full_like(self.concentration0, 1),
                       validate_args=validate_args)
        transforms = [
            PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=self.concentration1.reciprocal()),
        ]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Kumaraswamy:
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return _moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        """((a - 1) / (ab - 1))^(1/a), NaN where a < 1 or b < 1 (as PyTorch's, whose formula gives NaN
        everywhere)."""
        a, b = self.concentration1, self.concentration0
        with np.errstate(invalid="ignore", divide="ignore"):
            mode = ((a - 1) / (a * b - 1)).pow(a.reciprocal())
        return where((a < 1) | (b < 1), math.nan, mode)

    @property
    def variance(self) -> Tensor:
        return _moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self) -> Tensor:
        """(1 - 1/b) + (1 - 1/a) H_b - log(a b), with H_b = digamma(b + 1) + Euler's gamma the harmonic number."""
        a, b = self.concentration1, self.concentration0
        harmonic = digamma(b + 1) + EULER_GAMMA
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - a.log() - b.log()
