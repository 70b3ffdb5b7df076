"""FisherSnedecor, the F-distribution (PyTorch's torch.distributions.FisherSnedecor): the ratio of two independent
chi-squared draws, each over its degrees of freedom, reparameterizable through the gamma sampler's implicit
gradient."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from actorgrad.distributions import constraints
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.gamma_family import Gamma
from actorgrad.distributions.utils import batch_shape_of, broadcast_all
from actorgrad.ops.gamma import lgamma
from actorgrad.ops.selection import where
from actorgrad.tensor import Tensor

__all__ = ["FisherSnedecor"]


def _where_above(bound: float, df: Tensor, formula: Callable[[Tensor], Tensor]) -> Tensor:
    """formula(df) where df > bound, else NaN; df is replaced by bound + 1 where the formula is not taken, so that
    it makes no NaN gradient there."""
    above = df > bound
    return where(above, formula(where(above, df, bound + 1.0)), math.nan)


class FisherSnedecor(Distribution):
    """The F-distribution of `df1` and `df2` degrees of freedom: (X1 / df1) / (X2 / df2) for X1, X2 chi-squared.

    Deviation from PyTorch: `validate_args` reaches the inner Gammas too, so that validate_args=False lets any df
    through (PyTorch's inner Gammas still check them)."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Tensor | float, df2: Tensor | float, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1, validate_args=validate_args)  # chi2(df1) / df1
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2, validate_args=validate_args)
        super().__init__(batch_shape_of(self.df1, df1, df2), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> FisherSnedecor:
        shape = tuple(batch_shape)
        return self._expanded(
            FisherSnedecor, shape, _instance, df1=self.df1.expand(shape), df2=self.df2.expand(shape),
            _gamma1=self._gamma1.expand(shape), _gamma2=self._gamma2.expand(shape),
        )

    @property
    def mean(self) -> Tensor:
        """df2 / (df2 - 2), undefined (NaN) for df2 <= 2."""
        return _where_above(2.0, self.df2, lambda df2: df2 / (df2 - 2))

    @property
    def mode(self) -> Tensor:
        """(df1 - 2) / df1 * df2 / (df2 + 2), undefined (NaN) for df1 <= 2."""
        return _where_above(2.0, self.df1, lambda df1: (df1 - 2) / df1 * self.df2 / (self.df2 + 2))

    @property
    def variance(self) -> Tensor:
        """2 df2^2 (df1 + df2 - 2) / (df1 (df2 - 2)^2 (df2 - 4)), undefined (NaN) for df2 <= 4."""
        df1 = self.df1
        return _where_above(
            4.0, self.df2, lambda df2: 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        )

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """The ratio of the two scaled gamma draws, its denominator and the ratio kept at least the dtype's
        smallest normal number."""
        tiny = float(np.finfo(self.df1.dtype).tiny)
        x1 = self._gamma1.rsample(sample_shape)
        x2 = self._gamma2.rsample(sample_shape).clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        half1, half2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        t1 = lgamma(half1 + half2) - lgamma(half1) - lgamma(half2)
        t2 = half1 * ratio.log() + (half1 - 1) * value.log()
        t3 = (half1 + half2) * (ratio * value).log1p()
        return t1 + t2 - t3
