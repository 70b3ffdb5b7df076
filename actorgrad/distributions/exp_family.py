"""`ExponentialFamily`, the base of the distributions whose density is exp(<t(x), theta> - F(theta) + k(x))
(PyTorch's torch.distributions.ExponentialFamily): given the natural parameters theta and the log normalizer F, the
entropy and the KL divergence within a family follow from F's gradient as Bregman divergences (Nielsen and Nock,
"Entropies and cross-entropies of exponential families"), which actorgrad's own autograd computes."""

from __future__ import annotations

from typing import Any

from actorgrad.autograd import grad
from actorgrad.distributions.distribution import Distribution
from actorgrad.grad_mode import enable_grad
from actorgrad.tensor import Tensor

__all__ = ["ExponentialFamily", "bregman_terms"]


class ExponentialFamily(Distribution):
    """A distribution of an exponential family. A subclass gives `_natural_params` (theta, a tuple of tensors),
    `_log_normalizer(*theta)` (F) and `_mean_carrier_measure` (E[k(X)]); `entropy` is then
    F(theta) - <theta, grad F(theta)> - E[k(X)]. Families with a closed-form entropy override it."""

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The Bregman form, differentiable in nothing (the natural parameters are taken detached, as PyTorch's);
        it works under no_grad too."""
        result: Any = -self._mean_carrier_measure
        log_normalizer, params, gradients = bregman_terms(self)
        result = result + log_normalizer
        for param, gradient in zip(params, gradients):
            result = result - (param * gradient).reshape(self._batch_shape + (-1,)).sum(-1)
        return result


def bregman_terms(dist: ExponentialFamily) -> tuple[Tensor, list[Tensor], tuple[Tensor, ...]]:
    """F(theta) at `dist`'s natural parameters theta (taken detached, as new leaves), those leaves, and the
    gradient of F at them, recorded (create_graph) so that the terms built from it stay differentiable."""
    with enable_grad():
        params = [p.detach().requires_grad_() for p in dist._natural_params]
        log_normalizer = dist._log_normalizer(*params)
        gradients = grad(log_normalizer.sum(), params, create_graph=True)
    return log_normalizer, params, gradients
