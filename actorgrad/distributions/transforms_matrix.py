"""Transforms onto sets of matrices (PyTorch's LowerCholeskyTransform, PositiveDefiniteTransform and
CorrCholeskyTransform): the Cholesky factors, the positive-definite matrices, the Cholesky factors of correlation
matrices. `transforms` re-exports them."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from actorgrad.creation import eye
from actorgrad.distributions import constraints
from actorgrad.distributions.transform_base import Transform
from actorgrad.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix
from actorgrad.ops.activations import softplus
from actorgrad.ops.linalg_cholesky import cholesky
from actorgrad.ops.padding import pad
from actorgrad.tensor import Tensor

__all__ = ["CorrCholeskyTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform"]


class LowerCholeskyTransform(Transform):
    """A square matrix to a Cholesky factor: the part below the diagonal kept, the diagonal exponentiated, the
    part above dropped (so not a bijection, and without a log-Jacobian, as in PyTorch)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """A square matrix to L L^T, L its `LowerCholeskyTransform`; the inverse goes through the Cholesky factor."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    def _call(self, x: Tensor) -> Tensor:
        factor = LowerCholeskyTransform()(x)
        return factor @ factor.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(cholesky(y))


class CorrCholeskyTransform(Transform):
    """A real vector of length D (D - 1) / 2 to the Cholesky factor of a D x D correlation matrix (lower-triangular,
    a positive diagonal, rows of unit norm). The vector fills the part below the diagonal row by row after tanh
    (r in (-1, 1)); each row then breaks a stick of squared length 1: entry j is r_j times the square root of what
    r_1..r_{j-1} left, the diagonal takes the rest.

    The domain and codomain differ in dimension, so `log_abs_det_jacobian` is, as in PyTorch, that of the map from
    x to the part of y below the diagonal (row by row), which fixes the diagonal.
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        eps = float(np.finfo(x.dtype).eps)
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        left = (1 - r**2).sqrt().cumprod(-1)  # the square root of the stick left after each entry
        r = r + eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * pad(left[..., :-1], [1, 0], value=1)

    def _inverse(self, y: Tensor) -> Tensor:
        left = pad((1 - (y * y).cumsum(-1))[..., :-1], [1, 0], value=1)  # the stick left before each entry
        r = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left, diag=-1).sqrt()
        return (r.log1p() - (-r).log1p()) / 2

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """Triangular in row order: dy_ij/dr_ij is the square root of the stick left before entry j (the entries
        at diag -2 of the stick left after each one), and dr/dx = 1 - tanh(x)^2 = 4 / (e^x + e^-x)^2."""
        left_after = 1 - (y * y).cumsum(-1)
        stick_breaking = 0.5 * tril_matrix_to_vec(left_after, diag=-2).log().sum(-1)
        tanh = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)
