"""Bernoulli, Categorical and OneHotCategorical, each given by `probs` or by `logits` (not both); the other
parameterization is derived on first use. None is reparameterizable (samples carry no gradient) but
OneHotCategoricalStraightThrough, whose gradient is the straight-through estimate."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from actorgrad.creation import arange, eye, full
from actorgrad.distributions import constraints
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.exp_family import ExponentialFamily
from actorgrad.distributions.utils import (
    batch_shape_of,
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from actorgrad.grad_mode import no_grad
from actorgrad.ops.binary_cross_entropies import binary_cross_entropy_with_logits
from actorgrad.ops.embeddings import one_hot
from actorgrad.ops.operands import broadcast_error
from actorgrad.ops.selection import where
from actorgrad.ops.unary import logit
from actorgrad.random_tensors import bernoulli, multinomial
from actorgrad.tensor import Tensor, int64

__all__ = ["Bernoulli", "Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough"]

BOTH_OR_NEITHER = "Either `probs` or `logits` must be specified, but not both."


def _expanded_parameters(dist: Distribution, shape: tuple[int, ...]) -> dict[str, Tensor]:
    """Those of probs and logits that `dist` has computed, expanded to `shape`, with `_param` the one that
    defines the expanded distribution (logits, when both are there)."""
    parameters = {name: dist.__dict__[name].expand(shape) for name in ("probs", "logits") if name in dist.__dict__}
    parameters["_param"] = parameters.get("logits", parameters.get("probs"))
    return parameters


def _enumeration(values: Tensor, batch_shape: tuple[int, ...], event_shape: tuple[int, ...], expand: bool) -> Tensor:
    """The support's values along dim 0, with the batch dims as singletons, or broadcast over them."""
    n = values.shape[0]
    values = values.view((n,) + (1,) * len(batch_shape) + event_shape)
    return values.expand((n,) + batch_shape + event_shape) if expand else values


class ProbsOrLogits(Distribution):
    """A distribution given by a success probability `probs` or its log-odds `logits` (not both), the other derived
    on first use."""

    def _set_probs_or_logits(self, probs: Tensor | float | None, logits: Tensor | float | None,
                             total_count: Tensor | float | None = None) -> Tensor | float:
        """Set the given parameter (and `total_count`, broadcast with it, in its dtype); returns the one given."""
        if (probs is None) == (logits is None):
            raise ValueError(BOTH_OR_NEITHER)
        name, given = ("probs", probs) if probs is not None else ("logits", logits)
        if total_count is None:
            (param,) = broadcast_all(given)
        else:
            count, param = broadcast_all(total_count, given)
            self.total_count = count.type_as(param)
        setattr(self, name, param)
        self._param = param
        return given

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> tuple[int, ...]:
        return self._param.shape

    def _expanded_like(self, cls: type, batch_shape: Sequence[int], _instance: Distribution | None) -> Distribution:
        shape = tuple(batch_shape)
        parameters = _expanded_parameters(self, shape)
        if "total_count" in self.__dict__:
            parameters["total_count"] = self.total_count.expand(shape)
        return self._expanded(cls, shape, _instance, **parameters)


class Bernoulli(ProbsOrLogits, ExponentialFamily):
    """1 with probability `probs` (log-odds `logits`), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(
        self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        given = self._set_probs_or_logits(probs, logits)
        super().__init__(batch_shape_of(self._param, given), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Bernoulli:
        return self._expanded_like(Bernoulli, batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        """1 where probs > 1/2, 0 where below, NaN at a tie."""
        mode = (self.probs >= 0.5).to(self.probs)
        return where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            return bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(2, dtype=self._param.dtype, device=self._param.device)
        return _enumeration(values, self._batch_shape, (), expand)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (logit(self.probs),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.exp().log1p()


class Categorical(Distribution):
    """Indices 0 .. K - 1 drawn with the probabilities (or unnormalized log-probabilities) along the last dim of
    `probs` (or `logits`), which are normalized; the leading dims are the batch."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(
        self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args: bool | None = None
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError(BOTH_OR_NEITHER)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> Categorical:
        shape = tuple(batch_shape)
        parameters = _expanded_parameters(self, shape + (self._num_events,))
        return self._expanded(Categorical, shape, _instance, _num_events=self._num_events, **parameters)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> tuple[int, ...]:
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        sample_shape = tuple(map(operator.index, sample_shape))  # 0-d integer tensors too, as torch.Size takes them
        rows = self.probs.reshape(-1, self._num_events)
        draws = multinomial(rows, math.prod(sample_shape), True).T
        return draws.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        try:
            shape = np.broadcast_shapes(value.shape, self.logits.shape)
        except ValueError:  # PyTorch's RuntimeError, as its broadcast_tensors raises it
            raise broadcast_error("broadcast_tensors", value.shape, self.logits.shape) from None
        return self.logits.expand(shape).gather(-1, value.expand(shape)[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=float(np.finfo(self.logits.dtype).min))  # -inf logits: 0 * -inf is NaN
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(self._num_events, dtype=int64, device=self._param.device)
        return _enumeration(values, self._batch_shape, (), expand)


class OverCategories(Distribution):
    """A distribution over K categories (the event) whose parameters are those of the Categorical it holds in
    `_categorical`: its probs, logits and their shape."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    _categorical: Categorical

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple[int, ...]:
        return self._categorical.param_shape


class OneHotCategorical(OverCategories):
    """Categorical's draws as one-hot vectors of length K (the event)."""

    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(
        self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args: bool | None = None
    ) -> None:
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> OneHotCategorical:
        shape = tuple(batch_shape)
        return self._expanded(OneHotCategorical, shape, _instance, _categorical=self._categorical.expand(shape))

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        return one_hot(self.probs.argmax(-1), self.probs.shape[-1]).to(self.probs)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        indices = self._categorical.sample(sample_shape)
        return one_hot(indices, self._categorical._num_events).to(self.probs)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self._event_shape[0]
        values = eye(n, dtype=self._param.dtype, device=self._param.device)
        return _enumeration(values, self._batch_shape, (n,), expand)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical with reparameterized samples by the straight-through estimator (Bengio et al. 2013): the
    one-hot draw in the forward pass, the gradient of `probs` in the backward one."""

    has_rsample = True

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
