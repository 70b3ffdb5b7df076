"""MultivariateNormal, the Gaussian over vectors (PyTorch's torch.distributions.MultivariateNormal): given by its
covariance matrix, its precision matrix or the lower Cholesky factor of its covariance (`scale_tril`). Densities,
samples, entropies and divergences all work from that factor, kept at its own (unbroadcast) batch shape."""

from __future__ import annotations

import math
from collections.abc import Sequence

from actorgrad.creation import eye
from actorgrad.distributions import constraints
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.utils import lazy_property
from actorgrad.ops.index_sets import broadcast_shapes  # PyTorch's error for shapes that do not broadcast
from actorgrad.ops.linalg import matmul
from actorgrad.ops.linalg_cholesky import cholesky
from actorgrad.ops.linalg_triangular import solve_triangular
from actorgrad.random_tensors import randn
from actorgrad.tensor import Tensor

__all__ = ["MultivariateNormal"]

LOG_2PI = math.log(2 * math.pi)
MATRIX_NAMES = ("covariance_matrix", "precision_matrix", "scale_tril")


def solve_lower(L: Tensor, B: Tensor) -> Tensor:
    """X with L X = B, batch dims broadcast, reading only L's lower triangle (so that the entries above the diagonal
    get no gradient). A triangular solve, never a general one: `linalg.solve` reads a B of shape L.shape[:-1] (an
    identity beside a batch of n matrices of size n) as a batch of vectors."""
    return solve_triangular(L, B, upper=False)


def mahalanobis(L: Tensor, x: Tensor) -> Tensor:
    """The squared Mahalanobis length x^T (L L^T)^-1 x of each vector x (last dim), batch dims broadcast."""
    return solve_lower(L, x.unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)


def half_log_det(L: Tensor) -> Tensor:
    """Half the log-determinant of L L^T: the sum of the logs of L's diagonal."""
    return L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def precision_to_scale_tril(P: Tensor) -> Tensor:
    """The lower Cholesky factor of P^-1, without inverting P: the Cholesky factor of P with its rows and columns
    reversed, flipped back, is the upper factor U of P = U U^T; L = U^-T is then lower with L L^T = P^-1."""
    flipped_factor = cholesky(P.flip(-2, -1))
    inverse_scale = flipped_factor.flip(-2, -1).mT
    identity = eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return solve_lower(inverse_scale, identity)


class VectorNormal(Distribution):
    """A normal distribution over vectors (the event, of size n) centred at `loc`, its mean and mode; subclasses
    say how its covariance is given."""

    support = constraints.real_vector
    has_rsample = True

    def _matrix_shape(self) -> tuple[int, ...]:
        return self._batch_shape + self._event_shape * 2

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc


class MultivariateNormal(VectorNormal):
    """The normal distribution over vectors of mean `loc`, given by exactly one of `covariance_matrix`,
    `precision_matrix` (its inverse) and `scale_tril` (its lower Cholesky factor, positive diagonal). The batch
    dims of `loc` and of the matrix broadcast together.

    Deviation from PyTorch: a matrix whose size does not match loc's last dim is refused here (PyTorch accepts it
    and fails later)."""

    arg_constraints = {
        "loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
    }

    def __init__(
        self, loc: Tensor, covariance_matrix: Tensor | None = None, precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None, validate_args: bool | None = None,
    ) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [(name, m) for name, m in zip(MATRIX_NAMES, (covariance_matrix, precision_matrix, scale_tril))
                 if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        ((name, matrix),) = given
        if matrix.dim() < 2:
            shown = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{shown} must be at least two-dimensional, with optional leading batch dimensions")
        n = loc.shape[-1]
        if matrix.shape[-1] != n:
            raise ValueError(f"{name} must be of shape (..., {n}, {n}) to match loc's last dim {n}, got "
                             f"{tuple(matrix.shape)}")
        batch_shape = tuple(broadcast_shapes(matrix.shape[:-2], loc.shape[:-1]))
        setattr(self, name, matrix.expand(batch_shape + matrix.shape[-2:]))
        self.loc = loc.expand(batch_shape + (n,))
        super().__init__(batch_shape, (n,), validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(matrix)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> MultivariateNormal:
        shape = tuple(batch_shape)
        matrix_shape = shape + self._event_shape * 2
        matrices = {name: self.__dict__[name].expand(matrix_shape) for name in MATRIX_NAMES if name in self.__dict__}
        return self._expanded(
            MultivariateNormal, shape, _instance, loc=self.loc.expand(shape + self._event_shape),
            _unbroadcasted_scale_tril=self._unbroadcasted_scale_tril, **matrices,
        )

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return matmul(L, L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        identity = eye(L.shape[-1], dtype=L.dtype, device=L.device)
        inverse = solve_lower(L, identity)
        return matmul(inverse.mT, inverse).expand(self._matrix_shape())

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        eps = randn(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + matmul(self._unbroadcasted_scale_tril, eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        L = self._unbroadcasted_scale_tril
        distance = mahalanobis(L, value - self.loc)
        return -0.5 * (self._event_shape[0] * LOG_2PI + distance) - half_log_det(L)

    def entropy(self) -> Tensor:
        entropy = 0.5 * self._event_shape[0] * (1.0 + LOG_2PI) + half_log_det(self._unbroadcasted_scale_tril)
        return entropy.expand(self._batch_shape)
