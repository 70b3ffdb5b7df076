"""LKJCholesky (PyTorch's torch.distributions.LKJCholesky): the LKJ distribution of Lewandowski, Kurowicka and
Joe (2009) over the lower Cholesky factors L of correlation matrices, with density proportional to
det(L L^T)^(concentration - 1). Sampled by the onion method: row i of L is a point of the unit sphere in i
dimensions scaled by the root of a beta draw, its diagonal entry making the row's norm 1."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from actorgrad.creation import arange
from actorgrad.distributions import constraints
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.gamma_family import Beta
from actorgrad.distributions.utils import broadcast_all
from actorgrad.grad_mode import no_grad
from actorgrad.ops.gamma import lgamma, mvlgamma
from actorgrad.ops.joining import cat
from actorgrad.ops.sections import diag_embed
from actorgrad.random_tensors import randn
from actorgrad.tensor import Tensor

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution over Cholesky factors of `dim` x `dim` correlation matrices, of shape `concentration`
    (eta): uniform over correlation matrices at eta = 1, concentrated near the identity for eta > 1. Not
    reparameterizable.

    Deviation from PyTorch: row i's beta draw has first concentration i / 2, as the onion method's (PyTorch's has
    i - 1/2, so that for dim >= 3 the correlations past the first come out too spread: at dim 3, eta 1, their
    variance is 0.3 where the LKJ's is 1 / (2 eta + dim - 1) = 0.25). log_prob is PyTorch's. An invalid
    concentration is reported as LKJCholesky's (PyTorch's inner Beta reports it first, as a Dirichlet's, even under
    validate_args=False)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Tensor | float = 1.0, validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # the squared norm of the i entries of row i left of the diagonal is Beta(i / 2, eta + (dim - 1 - i) / 2)
        # (row 0's parameters, those of row 1, only fill the batch: its draw is unused)
        marginal = self.concentration + 0.5 * (dim - 2)
        offset = arange(dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(0.5 * offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset, validate_args=False)
        super().__init__(self.concentration.shape, (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> LKJCholesky:
        shape = tuple(batch_shape)
        return self._expanded(
            LKJCholesky, shape, _instance, dim=self.dim, concentration=self.concentration.expand(shape),
            _beta=self._beta.expand(shape + (self.dim,)),
        )

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            normal = randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            # row 0 is all zeros: dividing by a norm clamped to tiny keeps it zero
            tiny = float(np.finfo(y.dtype).tiny)
            on_sphere = normal / normal.norm(dim=-1, keepdim=True).clamp(min=tiny)
            w = y.sqrt() * on_sphere
            diagonal = (1 - w.pow(2).sum(-1)).clamp(min=tiny).sqrt()
            return w + diag_embed(diagonal)

    def log_prob(self, value: Tensor) -> Tensor:
        """sum over i >= 1 of (2 (eta - 1) + dim - 1 - i) log L_ii, less the log normalizer
        (dim - 1) / 2 log pi + mvlgamma(eta + (dim - 2) / 2, dim - 1) - (dim - 1) lgamma(eta + (dim - 1) / 2)."""
        if self._validate_args:
            self._validate_sample(value)
        diagonal = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = arange(2, self.dim + 1, dtype=self.concentration.dtype, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diagonal.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalizer = 0.5 * dm1 * math.log(math.pi) + mvlgamma(alpha - 0.5, dm1) - lgamma(alpha) * dm1
        return unnormalized - normalizer
