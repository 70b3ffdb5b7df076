"""The counting distributions (PyTorch's): Poisson, Geometric, Binomial, NegativeBinomial and Multinomial. Their
samples are counts in the parameters' floating dtype, drawn without history; their log-probabilities are
differentiable in the parameters."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from actorgrad.creation import arange, empty, zeros_like
from actorgrad.distributions import constraints
from actorgrad.distributions.discrete import (
    Categorical,
    OverCategories,
    ProbsOrLogits,
    _enumeration,
)
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.exp_family import ExponentialFamily
from actorgrad.distributions.gamma_family import Gamma
from actorgrad.distributions.utils import (
    batch_shape_of,
    broadcast_all,
)
from actorgrad.grad_mode import no_grad
from actorgrad.ops.activations import logsigmoid
from actorgrad.ops.binary_cross_entropies import binary_cross_entropy_with_logits
from actorgrad.ops.gamma import lgamma
from actorgrad.ops.index_parsing import host_array
from actorgrad.ops.indexing import on_device
from actorgrad.ops.selection import where
from actorgrad.random import numpy_generator
from actorgrad.random_tensors import poisson
from actorgrad.tensor import Tensor

__all__ = ["Binomial", "Geometric", "Multinomial", "NegativeBinomial", "Poisson"]


def _counts_like(like: Tensor, counts: np.ndarray) -> Tensor:
    """Host-drawn counts (a Python int where numpy drew one for a 0-d parameter) as a tensor of `like`'s dtype, on
    its device."""
    return Tensor(on_device(like, np.asarray(counts, like.dtype)), device=like._device)


def _host_float64(t: Tensor, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(host_array(t._data), shape).astype(np.float64)


class Poisson(ExponentialFamily):
    """The number of events of a Poisson process of rate `rate` in unit time. Its entropy has no closed form: it
    raises NotImplementedError (no mean carrier measure), as PyTorch's."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(batch_shape_of(self.rate, rate), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Poisson:
        shape = tuple(batch_shape)
        return self._expanded(Poisson, shape, _instance, rate=self.rate.expand(shape))

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            return poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - lgamma(value + 1)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.rate.log(),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.exp()


class Geometric(ProbsOrLogits):
    """The number of failures before the first success of Bernoulli trials of success probability `probs`."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(
        self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        given = self._set_probs_or_logits(probs, logits)
        super().__init__(batch_shape_of(self._param, given), validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            value, flat = self.probs, self.probs.detach().reshape(-1)  # a 1-d list of the bad values, as PyTorch's
            raise ValueError(
                f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) of distribution "
                f"{self!r} to be positive but found invalid values:\n{flat[~(flat > 0)]}"
            )

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Geometric:
        return self._expanded_like(Geometric, batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """floor(log u / log(1 - p)) for u uniform on [tiny, 1): the inverse CDF, kept away from log 0."""
        with no_grad():
            probs = self.probs
            tiny = float(np.finfo(probs.dtype).tiny)
            u = empty(self._extended_shape(sample_shape), dtype=probs.dtype, device=probs.device).uniform_(tiny, 1)
            return (u.log() / (-probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = where((probs == 1) & (value == 0), 0.0, probs)  # 0 * log(0) is 0 here: certain success at once
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs


class Binomial(ProbsOrLogits):
    """The number of successes in `total_count` Bernoulli trials of success probability `probs`."""

    arg_constraints = {
        "total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(
        self, total_count: Tensor | float = 1, probs: Tensor | float | None = None,
        logits: Tensor | float | None = None, validate_args: bool | None = None,
    ) -> None:
        self._set_probs_or_logits(probs, logits, total_count)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Binomial:
        return self._expanded_like(Binomial, batch_shape, _instance)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            counts = _host_float64(self.total_count, shape).astype(np.int64)
            draws = numpy_generator(None).binomial(counts, _host_float64(self.probs, shape))
            return _counts_like(self._param, draws)

    def log_prob(self, value: Tensor) -> Tensor:
        """k logit - n log(1 + e^logit) - log B(k, n): the log1p term written as max(logit, 0) + log1p(e^-|logit|)
        so that it never overflows."""
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        positive_part = (logits.clamp(min=0) + logits - logits.clamp(max=0)) / 2  # a gradient of 1/2 at 0
        normalizer = n * positive_part + n * (-logits.abs()).exp().log1p() - lgamma(n + 1)
        return value * logits - normalizer - lgamma(value + 1) - lgamma(n - value + 1)

    def _homogeneous_count(self, method: str) -> int:
        count = int(self.total_count.max())
        if not self.total_count.min().item() == count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{method}`.")
        return count

    def entropy(self) -> Tensor:
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        count = self._homogeneous_count("enumerate_support")
        values = arange(1 + count, dtype=self._param.dtype, device=self._param.device)
        return _enumeration(values, self._batch_shape, (), expand)


class NegativeBinomial(ProbsOrLogits):
    """The number of successes before `total_count` failures in Bernoulli trials of success probability `probs`
    (PyTorch's convention: the mean is total_count * probs / (1 - probs))."""

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(
        self, total_count: Tensor | float, probs: Tensor | float | None = None,
        logits: Tensor | float | None = None, validate_args: bool | None = None,
    ) -> None:
        self._set_probs_or_logits(probs, logits, total_count)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> NegativeBinomial:
        return self._expanded_like(NegativeBinomial, batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """A Poisson count of a Gamma(total_count, rate e^-logits) rate: the gamma-Poisson mixture."""
        with no_grad():
            # a total_count of 0 is allowed here, though not by Gamma's checks
            rates = Gamma(self.total_count, (-self.logits).exp(), validate_args=False).sample(sample_shape)
            return poisson(rates)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        unnormalized = n * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        normalizer = -lgamma(n + value) + lgamma(1.0 + value) + lgamma(n)
        # no trials and no successes is certain, though lgamma(0) is infinite
        return unnormalized - where(n + value == 0, 0.0, normalizer)


class Multinomial(OverCategories):
    """The counts of each of K categories (the event, the last dim of `probs` or `logits`) in `total_count`
    independent Categorical draws."""

    def __init__(
        self, total_count: int = 1, probs: Tensor | None = None, logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Multinomial:
        shape = tuple(batch_shape)
        return self._expanded(Multinomial, shape, _instance, total_count=self.total_count,
                              _categorical=self._categorical.expand(shape))

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            probs = _host_float64(self.probs, shape)
            draws = numpy_generator(None).multinomial(self.total_count, probs / probs.sum(-1, keepdims=True))
            return _counts_like(self.probs, draws)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = where((value == 0) & (logits == -math.inf), 0.0, logits)  # an impossible category not drawn
        return lgamma(value.sum(-1) + 1) - lgamma(value + 1).sum(-1) + (logits * value).sum(-1)

    def entropy(self) -> Tensor:
        """n H(categorical) - log n! + sum over categories of E[log x_k!], each x_k binomial."""
        n = self.total_count
        marginals = Binomial(n, self.probs, validate_args=False)
        counts = marginals.enumerate_support(expand=False)[1:]
        weights = marginals.log_prob(counts).exp() * lgamma(counts + 1)
        return n * self._categorical.entropy() - math.lgamma(n + 1) + weights.sum(0).sum(-1)
