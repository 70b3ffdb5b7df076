"""Chi2 (a Gamma of shape df / 2 and rate 1 / 2) and StudentT, whose reparameterized samples are a normal draw
scaled by sqrt(df / chi2 draw): differentiable in df through the gamma sampler's implicit gradient."""

from __future__ import annotations

import math
from collections.abc import Sequence

from actorgrad.distributions import constraints
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.gamma_family import Gamma
from actorgrad.distributions.utils import batch_shape_of, broadcast_all
from actorgrad.ops.gamma import digamma, lgamma
from actorgrad.ops.selection import where
from actorgrad.random_tensors import randn
from actorgrad.tensor import Tensor

__all__ = ["Chi2", "StudentT"]

HALF_LOG_PI = 0.5 * math.log(math.pi)


class Chi2(Gamma):
    """The chi-squared distribution of `df` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Tensor | float, validate_args: bool | None = None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Chi2:
        return super().expand(batch_shape, self._get_checked_instance(Chi2, _instance))

    @property
    def df(self) -> Tensor:
        return self.concentration * 2


class StudentT(Distribution):
    """Student's t-distribution of `df` degrees of freedom, shifted by `loc` and scaled by `scale`.

    Deviation from PyTorch: `validate_args` reaches the inner Chi2 too, so that validate_args=False lets any df
    through (PyTorch's inner Chi2 still checks df)."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(
        self, df: Tensor | float, loc: Tensor | float = 0.0, scale: Tensor | float = 1.0,
        validate_args: bool | None = None,
    ) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df, validate_args=validate_args)
        super().__init__(batch_shape_of(self.df, df, loc, scale), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> StudentT:
        shape = tuple(batch_shape)
        return self._expanded(
            StudentT, shape, _instance, df=self.df.expand(shape), loc=self.loc.expand(shape),
            scale=self.scale.expand(shape), _chi2=self._chi2.expand(shape),
        )

    @property
    def mean(self) -> Tensor:
        """loc, undefined (NaN) for df <= 1."""
        return where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        """scale^2 df / (df - 2) for df > 2, infinite for 1 < df <= 2, undefined (NaN) for df <= 1."""
        finite = self.df > 2
        df = where(finite, self.df, 3.0)  # the formula where it is not taken must not make NaN gradients
        variance = where(finite, self.scale.pow(2) * df / (df - 2), math.inf)
        return where(self.df <= 1, math.nan, variance)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        normal = randn(self._extended_shape(sample_shape), dtype=self.df.dtype, device=self.df.device)
        chi2 = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * normal * (chi2 / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        normalizer = (
            self.scale.log() + 0.5 * self.df.log() + HALF_LOG_PI + lgamma(0.5 * self.df) - lgamma(0.5 * (self.df + 1))
        )
        return -0.5 * (self.df + 1) * (y.pow(2) / self.df).log1p() - normalizer

    def entropy(self) -> Tensor:
        half_df, half_df_plus = 0.5 * self.df, 0.5 * (self.df + 1)
        log_beta = lgamma(half_df) + math.lgamma(0.5) - lgamma(half_df_plus)
        return (
            self.scale.log() + half_df_plus * (digamma(half_df_plus) - digamma(half_df)) + 0.5 * self.df.log()
            + log_beta
        )
