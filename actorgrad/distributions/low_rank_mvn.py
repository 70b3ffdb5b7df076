"""LowRankMultivariateNormal (PyTorch's torch.distributions.LowRankMultivariateNormal): the Gaussian over vectors
of n entries whose covariance is W W^T + D, W an n x m factor and D a positive diagonal. Densities and entropies
never form the n x n covariance: they go through the m x m capacitance matrix C = I + W^T D^-1 W, by the Woodbury
identity (W W^T + D)^-1 = D^-1 - D^-1 W C^-1 W^T D^-1 and the matrix determinant lemma
det(W W^T + D) = det(C) det(D)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from actorgrad.creation import eye
from actorgrad.distributions import constraints
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.multivariate_normal import VectorNormal, mahalanobis, solve_lower
from actorgrad.distributions.utils import lazy_property
from actorgrad.ops.linalg import matmul
from actorgrad.ops.linalg_cholesky import cholesky
from actorgrad.random_tensors import randn
from actorgrad.tensor import Tensor

__all__ = ["LowRankMultivariateNormal"]

LOG_2PI = math.log(2 * math.pi)


def matrix_vector(matrix: Tensor, vector: Tensor) -> Tensor:
    """matrix @ vector over the last dims, batch dims broadcast."""
    return matmul(matrix, vector.unsqueeze(-1)).squeeze(-1)


def capacitance_tril(W: Tensor, D: Tensor) -> Tensor:
    """The lower Cholesky factor of C = I + W^T D^-1 W (W: n x m, D: the n diagonal entries)."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    return cholesky(matmul(Wt_Dinv, W) + eye(W.shape[-1], dtype=W.dtype, device=W.device))


def lowrank_logdet(D: Tensor, C_tril: Tensor) -> Tensor:
    """log det(W W^T + D) = log det C + log det D."""
    return 2 * C_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def lowrank_mahalanobis(W: Tensor, D: Tensor, x: Tensor, C_tril: Tensor) -> Tensor:
    """x^T (W W^T + D)^-1 x = x^T D^-1 x - |L_C^-1 W^T D^-1 x|^2."""
    Wt_Dinv_x = matrix_vector(W.mT / D.unsqueeze(-2), x)
    return (x.pow(2) / D).sum(-1) - mahalanobis(C_tril, Wt_Dinv_x)


def woodbury_factor(W: Tensor, D: Tensor, C_tril: Tensor) -> Tensor:
    """A = L_C^-1 W^T D^-1 (m x n), so that (W W^T + D)^-1 = D^-1 - A^T A."""
    return solve_lower(C_tril, W.mT / D.unsqueeze(-2))


class LowRankMultivariateNormal(VectorNormal):
    """The normal distribution over vectors of mean `loc` and covariance cov_factor @ cov_factor.T +
    diag(cov_diag): `cov_factor` of shape batch_shape + (n, m), `cov_diag` (positive) of shape batch_shape + (n,),
    the batch dims of all three broadcast together. Cheap for m much smaller than n."""

    arg_constraints = {
        "loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor, validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2] != n:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if cov_diag.shape[-1:] != (n,):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {(n,)}")
        try:
            shape = tuple(np.broadcast_shapes(loc.shape + (1,), cov_factor.shape, cov_diag.shape + (1,)))
        except ValueError as error:
            raise ValueError(f"Incompatible batch shapes: loc {tuple(loc.shape)}, cov_factor "
                             f"{tuple(cov_factor.shape)}, cov_diag {tuple(cov_diag.shape)}") from error
        self.loc = loc.expand(shape[:-1])
        self.cov_factor = cov_factor.expand(shape)
        self.cov_diag = cov_diag.expand(shape[:-1])
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = capacitance_tril(cov_factor, cov_diag)
        super().__init__(shape[:-2], (n,), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> LowRankMultivariateNormal:
        shape = tuple(batch_shape) + self._event_shape
        return self._expanded(
            LowRankMultivariateNormal, tuple(batch_shape), _instance, loc=self.loc.expand(shape),
            cov_diag=self.cov_diag.expand(shape), cov_factor=self.cov_factor.expand(shape + self.cov_factor.shape[-1:]),
            _unbroadcasted_cov_factor=self._unbroadcasted_cov_factor,
            _unbroadcasted_cov_diag=self._unbroadcasted_cov_diag, _capacitance_tril=self._capacitance_tril,
        )

    @lazy_property
    def variance(self) -> Tensor:
        variance = self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag
        return variance.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The Cholesky factor of W W^T + D = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2, the middle matrix's (its
        eigenvalues are at least 1, so its factorization is well conditioned) scaled by D^1/2."""
        sqrt_D = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled_W = self._unbroadcasted_cov_factor / sqrt_D
        n = self._event_shape[0]
        middle = matmul(scaled_W, scaled_W.mT) + eye(n, dtype=scaled_W.dtype, device=scaled_W.device)
        return (sqrt_D * cholesky(middle)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        W = self._unbroadcasted_cov_factor
        return (matmul(W, W.mT) + self._unbroadcasted_cov_diag.diag_embed()).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        A = woodbury_factor(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril)
        precision = self._unbroadcasted_cov_diag.reciprocal().diag_embed() - matmul(A.mT, A)
        return precision.expand(self._matrix_shape())

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """loc + W e_W + D^1/2 e_D for standard normal e_W (m entries) and e_D (n entries)."""
        shape = self._extended_shape(sample_shape)
        eps_W = randn(shape[:-1] + self.cov_factor.shape[-1:], dtype=self.loc.dtype, device=self.loc.device)
        eps_D = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + matrix_vector(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def _log_det(self) -> Tensor:
        return lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        distance = lowrank_mahalanobis(
            self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, value - self.loc, self._capacitance_tril
        )
        return -0.5 * (self._event_shape[0] * LOG_2PI + self._log_det() + distance)

    def entropy(self) -> Tensor:
        entropy = 0.5 * (self._event_shape[0] * (1.0 + LOG_2PI) + self._log_det())
        return entropy.expand(self._batch_shape)
