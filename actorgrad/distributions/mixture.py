"""MixtureSameFamily (PyTorch's torch.distributions.MixtureSameFamily): a mixture of k components of one family,
the components being the rightmost batch dim of one distribution and the weights a Categorical over k."""

from __future__ import annotations

from collections.abc import Sequence

from actorgrad.distributions import constraints
from actorgrad.distributions.discrete import Categorical
from actorgrad.distributions.distribution import Distribution
from actorgrad.grad_mode import no_grad
from actorgrad.tensor import Tensor

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """The mixture whose component i is `component_distribution` at index i of its rightmost batch dim, drawn with
    the probabilities of `mixture_distribution` (a Categorical over those k components). The mixture's batch shape
    is the components' less that dim; the Categorical's batch shape must broadcast to it.

    Deviation from PyTorch: `sample` broadcasts a Categorical of a smaller batch shape over the components' batch
    (PyTorch's fails, or returns the Categorical's shape), and `mean` and `variance` align the Categorical's batch
    dims with the rightmost batch dims as broadcasting does."""

    arg_constraints: dict[str, constraints.Constraint] = {}
    has_rsample = False

    def __init__(
        self, mixture_distribution: Categorical, component_distribution: Distribution,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "actorgrad.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of "
                             "actorgrad.distributions.Distribution")
        mixture_batch = mixture_distribution.batch_shape
        component_batch = component_distribution.batch_shape[:-1]
        for m, c in zip(reversed(mixture_batch), reversed(component_batch)):
            if m != 1 and c != 1 and m != c:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mixture_batch}) is not compatible with "
                                 f"`component_distribution.batch_shape`({component_batch})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(component_batch, component_distribution.event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> MixtureSameFamily:
        shape = tuple(batch_shape)
        return self._expanded(
            MixtureSameFamily, shape, _instance,
            _component_distribution=self._component_distribution.expand(shape + (self._num_component,)),
            _mixture_distribution=self._mixture_distribution.expand(shape), _num_component=self._num_component,
            _event_ndims=self._event_ndims,
        )

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    def _weights(self) -> Tensor:
        """The mixture probabilities with a singleton dim per event dim: they broadcast against the components'
        batch + (k,) + event tensors."""
        probs = self._mixture_distribution.probs
        return probs.reshape(probs.shape + (1,) * self._event_ndims)

    def _pad(self, value: Tensor) -> Tensor:
        """`value` with a singleton component dim before its event dims."""
        return value.unsqueeze(-1 - self._event_ndims)

    @property
    def mean(self) -> Tensor:
        return (self._weights() * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        """The law of total variance: the mean of the components' variances plus the variance of their means."""
        weights, components = self._weights(), self._component_distribution
        dim = -1 - self._event_ndims
        mean_of_variances = (weights * components.variance).sum(dim)
        variance_of_means = (weights * (components.mean - self._pad(self.mean)).pow(2)).sum(dim)
        return mean_of_variances + variance_of_means

    def cdf(self, value: Tensor) -> Tensor:
        """The weighted sum of the components' CDFs (for univariate components with a CDF)."""
        return (self._component_distribution.cdf(self._pad(value)) * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self._component_distribution.log_prob(self._pad(value))  # sample + batch + (k,)
        log_weights = self._mixture_distribution.logits.log_softmax(-1)
        return (log_prob + log_weights).logsumexp(-1)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """A component index per draw (the Categorical expanded to the batch first, so that mixtures sharing its
        weights still choose independently), then that component's draw out of one draw of every component."""
        with no_grad():
            shape = tuple(sample_shape) + self._batch_shape
            indices = self._mixture_distribution.expand(self._batch_shape).sample(sample_shape)
            draws = self._component_distribution.sample(sample_shape)  # shape + (k,) + event_shape
            index = indices.reshape(shape + (1,) * (1 + self._event_ndims)).expand(shape + (1,) + self._event_shape)
            return draws.gather(len(shape), index).squeeze(len(shape))

    def __repr__(self) -> str:
        return f"MixtureSameFamily(\n  {self._mixture_distribution},\n  {self._component_distribution})"
