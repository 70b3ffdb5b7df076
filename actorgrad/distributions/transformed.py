"""`TransformedDistribution`: a base distribution pushed through a chain of transforms (PyTorch's
torch.distributions.TransformedDistribution), its density by the change of variables
log p(y) = log p(x) - log |dy/dx| with x the transforms' inverse at y."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from actorgrad.distributions import constraints
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.independent import Independent
from actorgrad.distributions.transforms import ComposeTransform, Transform
from actorgrad.distributions.utils import sum_rightmost
from actorgrad.grad_mode import no_grad
from actorgrad.tensor import Tensor

__all__ = ["TransformedDistribution"]


class TransformedDistribution(Distribution):
    """Y = f(X) for X from `base_distribution` and f the `transforms` (one, or a list applied in order).

    Its event shape is the larger of what the base and the transforms couple: a transform over vectors turns a
    batch of scalar base draws into one vector event (the base is then wrapped in `Independent`).
    """

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(
        self, base_distribution: Distribution, transforms: Transform | list[Transform],
        validate_args: bool | None = None,
    ) -> None:
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        chain = ComposeTransform(self.transforms)
        domain_event_dim, codomain_event_dim = chain.domain.event_dim, chain.codomain.event_dim
        if len(base_shape) < domain_event_dim:
            raise ValueError(
                f"base_distribution needs to have shape with size at least {domain_event_dim}, but got {base_shape}."
            )
        shape = chain.forward_shape(base_shape)
        expanded_base_shape = chain.inverse_shape(shape)
        if base_shape != expanded_base_shape:  # a transform's parameters broadcast the base's batch
            base_distribution = base_distribution.expand(
                expanded_base_shape[: len(expanded_base_shape) - base_event_dim]
            )
        if domain_event_dim > base_event_dim:
            base_distribution = Independent(base_distribution, domain_event_dim - base_event_dim)
        self.base_dist = base_distribution
        event_dim = max(codomain_event_dim, base_event_dim + codomain_event_dim - domain_event_dim)
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> TransformedDistribution:
        shape = tuple(batch_shape)
        base_shape = shape + self._event_shape
        for transform in reversed(self.transforms):
            base_shape = transform.inverse_shape(base_shape)
        base = self.base_dist.expand(base_shape[: len(base_shape) - len(self.base_dist.event_shape)])
        return self._expanded(TransformedDistribution, shape, _instance, base_dist=base, transforms=self.transforms)

    @constraints.dependent_property(is_discrete=False)
    def support(self) -> constraints.Constraint:
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self._event_shape) > support.event_dim:
            support = constraints.independent(support, len(self._event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """A base sample (which need not be reparameterizable) through the transforms, without history."""
        with no_grad():
            value = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                value = transform(value)
            return value

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        value = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            value = transform(value)
        return value

    def log_prob(self, value: Tensor) -> Tensor:
        """The value mapped back through each transform, each log-Jacobian summed over the event dims that
        transform treats as batch dims, then the base's log density summed likewise."""
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self._event_shape)
        log_prob: Any = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            log_prob = log_prob - sum_rightmost(
                transform.log_abs_det_jacobian(x, y), event_dim - transform.domain.event_dim
            )
            y = x
        return log_prob + sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """`value` as is under increasing transforms, 1 - value where the chain decreases."""
        sign: Any = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        """The base's CDF at the transforms' inverse (for monotone univariate transforms)."""
        for transform in reversed(self.transforms):
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for transform in self.transforms:
            value = transform(value)
        return value
