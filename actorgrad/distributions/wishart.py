"""Wishart (PyTorch's torch.distributions.Wishart): the distribution of the scatter matrix of `df` normal vectors
of covariance S, over positive definite p x p matrices. Given, as MultivariateNormal, by S, its inverse or its
lower Cholesky factor L, and working from L; samples by the Bartlett decomposition (L A)(L A)^T, A lower with
chi draws on its diagonal (reparameterized in df through the gamma sampler) and normal draws below it."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from actorgrad.creation import arange, eye
from actorgrad.distributions import constraints
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.exp_family import ExponentialFamily
from actorgrad.distributions.multivariate_normal import (
    MATRIX_NAMES,
    half_log_det,
    precision_to_scale_tril,
    solve_lower,
)
from actorgrad.distributions.student_t import Chi2
from actorgrad.distributions.utils import is_number, lazy_property
from actorgrad.ops.gamma import digamma, mvlgamma
from actorgrad.ops.index_sets import broadcast_shapes  # PyTorch's error for shapes that do not broadcast
from actorgrad.ops.linalg import matmul
from actorgrad.ops.linalg_cholesky import cholesky
from actorgrad.ops.linalg_decompositions import slogdet
from actorgrad.ops.sections import diag_embed
from actorgrad.ops.selection import where
from actorgrad.random_tensors import randn
from actorgrad.tensor import Tensor
from actorgrad.tensor_construction import tensor

__all__ = ["Wishart"]

LOG_2 = math.log(2)


def mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma of dimension p, the derivative of mvlgamma: sum over j < p of digamma(x - j / 2)."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    halves = arange(p, dtype=x.dtype, device=x.device) / 2
    return digamma(x.unsqueeze(-1) - halves).sum(-1)


def _trace_of_solve(L: Tensor, X: Tensor) -> Tensor:
    """tr((L L^T)^-1 X) of symmetric X, as tr(L^-1 X L^-T): two triangular solves, no inverse."""
    return solve_lower(L, solve_lower(L, X).mT).diagonal(dim1=-2, dim2=-1).sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution of `df` degrees of freedom (> p - 1) and scale matrix S, given by exactly one of
    `covariance_matrix` (S), `precision_matrix` (S^-1) and `scale_tril` (L, S = L L^T). Its mean is df S.

    Deviations from PyTorch: a number `df` is broadcast to the batch of a batched matrix (PyTorch's mean and
    variance then fail); `rsample` warns "Singular sample detected." only where a draw is singular (PyTorch's
    warns on every call) and redraws those sample entries whole."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        return {
            "covariance_matrix": constraints.positive_definite, "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky, "df": constraints.greater_than(self._event_shape[-1] - 1),
        }

    def __init__(
        self, df: Tensor | float, covariance_matrix: Tensor | None = None, precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None, validate_args: bool | None = None,
    ) -> None:
        given = [(name, m) for name, m in zip(MATRIX_NAMES, (covariance_matrix, precision_matrix, scale_tril))
                 if m is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        ((name, matrix),) = given
        if matrix.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if is_number(df):
            batch_shape = matrix.shape[:-2]
            self.df = tensor(df, dtype=matrix.dtype, device=matrix.device).expand(batch_shape)
        else:
            batch_shape = tuple(broadcast_shapes(matrix.shape[:-2], df.shape))
            self.df = df.expand(batch_shape)
        p = matrix.shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, matrix.expand(batch_shape + matrix.shape[-2:]))
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df "
                          "< ndim.", stacklevel=2)
        super().__init__(batch_shape, matrix.shape[-2:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(matrix)
        # the squared diagonal of the Bartlett factor: chi-squared of df, df - 1, ..., df - p + 1
        dfs = self.df.unsqueeze(-1) - arange(p, dtype=matrix.dtype, device=matrix.device)
        self._dist_chi2 = Chi2(dfs, validate_args=False)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Wishart:
        shape = tuple(batch_shape)
        matrix_shape = shape + self._event_shape
        matrices = {name: self.__dict__[name].expand(matrix_shape) for name in MATRIX_NAMES if name in self.__dict__}
        return self._expanded(
            Wishart, shape, _instance, df=self.df.expand(shape),
            _unbroadcasted_scale_tril=self._unbroadcasted_scale_tril.expand(matrix_shape),
            _dist_chi2=self._dist_chi2.expand(shape + self._event_shape[-1:]), **matrices,
        )

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return matmul(L, L.mT).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        inverse = solve_lower(L, eye(L.shape[-1], dtype=L.dtype, device=L.device))
        return matmul(inverse.mT, inverse).expand(self._batch_shape + self._event_shape)

    def _per_matrix(self, value: Tensor) -> Tensor:
        """A batch-shaped value with two singleton dims added, to scale matrices."""
        return value.reshape(self._batch_shape + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._per_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        """(df - p - 1) S, undefined (NaN) where df <= p + 1."""
        factor = self.df - self._event_shape[-1] - 1
        return self._per_matrix(where(factor <= 0, math.nan, factor)) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        """Var(X_ij) = df (S_ij^2 + S_ii S_jj)."""
        V = self.covariance_matrix
        diagonal = V.diagonal(dim1=-2, dim2=-1)
        return self._per_matrix(self.df) * (V.pow(2) + diagonal.unsqueeze(-1) * diagonal.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape: Sequence[int]) -> Tensor:
        L = self._unbroadcasted_scale_tril
        tiny_chi = float(np.finfo(L.dtype).eps)
        chi = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=tiny_chi)
        below = randn(self._extended_shape(sample_shape), dtype=L.dtype, device=L.device).tril(-1)
        factor = matmul(L, diag_embed(chi) + below)
        return matmul(factor, factor.mT)

    def _singular(self, sample: Tensor, sample_shape: tuple[int, ...]) -> Tensor:
        """Per entry of the sample shape: whether any of its matrices is not positive definite."""
        valid = self.support.check(sample).reshape(sample_shape + (-1,))
        return ~valid.all(-1)

    def rsample(self, sample_shape: Sequence[int] = (), max_try_correction: int | None = None) -> Tensor:
        """A Bartlett draw; entries of the sample shape with a singular matrix (possible for df near p - 1) are
        drawn again, up to `max_try_correction` (10) times, after a warning; some may stay singular (their
        log_prob is -inf)."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = tuple(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        singular = self._singular(sample, sample_shape)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                redraw = self._bartlett_sampling(sample_shape)
                mask = singular.reshape(sample_shape + (1,) * (len(self._batch_shape) + 2))
                sample = where(mask, redraw, sample)
                singular = singular & self._singular(redraw, sample_shape)
                if not bool(singular.any()):
                    break
        return sample

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (
            -nu * (p * LOG_2 / 2 + half_log_det(L)) - mvlgamma(nu / 2, p)
            + (nu - p - 1) / 2 * slogdet(value).logabsdet - _trace_of_solve(L, value) / 2
        )

    def entropy(self) -> Tensor:
        nu, p = self.df, self._event_shape[-1]
        return (
            (p + 1) * (p * LOG_2 / 2 + half_log_det(self._unbroadcasted_scale_tril)) + mvlgamma(nu / 2, p)
            - (nu - p - 1) / 2 * mvdigamma(nu / 2, p) + nu * p / 2
        )

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-slogdet(-2 * x).logabsdet + LOG_2 * p) + mvlgamma(y + (p + 1) / 2, p)
