"""Gamma, Dirichlet and Beta (a two-component Dirichlet, as in PyTorch): reparameterizable through the gamma
sampler's implicit gradient (`gamma_sampling`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from actorgrad.creation import as_tensor
from actorgrad.default_dtype import default_float
from actorgrad.distributions import constraints
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.exp_family import ExponentialFamily
from actorgrad.distributions.gamma_sampling import sample_dirichlet, standard_gamma
from actorgrad.distributions.utils import batch_shape_of, broadcast_all, is_number
from actorgrad.ops.embeddings import one_hot
from actorgrad.ops.gamma import digamma, lgamma
from actorgrad.ops.joining import stack
from actorgrad.ops.selection import where
from actorgrad.ops.special import xlogy
from actorgrad.ops.special_functions import special_gammainc
from actorgrad.tensor import Tensor
from actorgrad.tensor_construction import tensor

__all__ = ["Beta", "Dirichlet", "Gamma"]


class Gamma(ExponentialFamily):
    """The gamma distribution of shape `concentration` and rate `rate` (1 / scale)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(
        self, concentration: Tensor | float, rate: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(batch_shape_of(self.rate, concentration, rate), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Gamma:
        shape = tuple(batch_shape)
        return self._expanded(
            Gamma, shape, _instance, concentration=self.concentration.expand(shape), rate=self.rate.expand(shape)
        )

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=float(np.finfo(value.dtype).tiny))  # an underflow to 0 is no sample: not recorded
        return value

    def log_prob(self, value: Tensor) -> Tensor:
        value = as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (
            xlogy(self.concentration, self.rate) + xlogy(self.concentration - 1, value) - self.rate * value
            - lgamma(self.concentration)
        )

    def cdf(self, value: Tensor) -> Tensor:
        """The regularized lower incomplete gamma function P(concentration, rate * value): differentiable in rate
        and value, not in concentration (as PyTorch's). A tensor value keeps its dtype, so that a float64 value
        promotes float32 parameters as PyTorch's does; a number takes the parameters' dtype."""
        if not isinstance(value, Tensor):
            value = as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return special_gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - self.rate.log() + lgamma(c) + (1.0 - c) * digamma(c)

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return lgamma(x + 1) + (x + 1) * (-y.reciprocal()).log()


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the simplex of the last dim of `concentration`."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Dirichlet:
        shape = tuple(batch_shape)
        return self._expanded(
            Dirichlet, shape, _instance, concentration=self.concentration.expand(shape + self._event_shape)
        )

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return sample_dirichlet(self.concentration.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return xlogy(c - 1.0, value).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        """The peak of the density; where every concentration is below 1, the corner of the largest one."""
        c = self.concentration
        shifted = (c - 1).clamp(min=0.0)
        mode = shifted / shifted.sum(-1, keepdim=True)
        corner = one_hot(mode.argmax(-1), c.shape[-1]).to(mode)
        return where((c < 1).all(-1).unsqueeze(-1), corner, mode)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        total = c.sum(-1, keepdim=True)
        return c * (total - c) / (total.pow(2) * (total + 1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k = c.shape[-1]
        total = c.sum(-1)
        return lgamma(c).sum(-1) - lgamma(total) - (k - total) * digamma(total) - ((c - 1.0) * digamma(c)).sum(-1)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return lgamma(x).sum(-1) - lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """The beta distribution on [0, 1] of concentrations `concentration1` (alpha) and `concentration0` (beta)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self, concentration1: Tensor | float, concentration0: Tensor | float, validate_args: bool | None = None
    ) -> None:
        if is_number(concentration1) and is_number(concentration0):
            both = tensor([float(concentration1), float(concentration0)], dtype=default_float())
        else:
            both = stack(broadcast_all(concentration1, concentration0), -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Beta:
        shape = tuple(batch_shape)
        return self._expanded(Beta, shape, _instance, _dirichlet=self._dirichlet.expand(shape))

    @property
    def concentration1(self) -> Tensor:
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return lgamma(x) + lgamma(y) - lgamma(x + y)
