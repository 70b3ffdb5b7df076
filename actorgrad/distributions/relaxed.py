"""The Concrete (Gumbel-softmax) relaxations of Bernoulli and OneHotCategorical (Maddison et al. 2017, Jang et al.
2017; PyTorch's torch.distributions.RelaxedBernoulli and RelaxedOneHotCategorical): reparameterizable draws in
(0, 1) or on the simplex that approach the discrete ones as `temperature` goes to 0. Each is, as in PyTorch, a
transformed distribution of the relaxation's logit (LogitRelaxedBernoulli) or log (ExpRelaxedCategorical)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from actorgrad.creation import as_tensor
from actorgrad.distributions import constraints
from actorgrad.distributions.discrete import Categorical, OverCategories, ProbsOrLogits, _expanded_parameters
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.transformed import TransformedDistribution
from actorgrad.distributions.transforms import ExpTransform, SigmoidTransform
from actorgrad.distributions.utils import batch_shape_of, broadcast_all, clamp_probs
from actorgrad.ops.special import logaddexp
from actorgrad.random_tensors import rand
from actorgrad.tensor import Tensor

__all__ = ["ExpRelaxedCategorical", "LogitRelaxedBernoulli", "RelaxedBernoulli", "RelaxedOneHotCategorical"]


def _as_tensor_like(temperature: Tensor | float, like: Tensor) -> Tensor:
    """A temperature given as a number, as a tensor of the parameters' dtype and device."""
    if isinstance(temperature, Tensor):
        return temperature
    return as_tensor(temperature, dtype=like.dtype, device=like.device)


def _clamped_uniforms(shape: tuple[int, ...], like: Tensor) -> Tensor:
    """Uniform noise kept inside [eps, 1 - eps], where its logs are finite."""
    return clamp_probs(rand(shape, dtype=like.dtype, device=like.device))


class LogitRelaxedBernoulli(ProbsOrLogits):
    """The logit of a RelaxedBernoulli draw: (logit(U) + logits) / temperature for U uniform, given by `probs` or
    `logits` (not both). `temperature` (a tensor, or a number) is not broadcast into the batch."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(
        self, temperature: Tensor | float, probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        given = self._set_probs_or_logits(probs, logits)
        self.temperature = _as_tensor_like(temperature, self._param)
        super().__init__(batch_shape_of(self._param, given), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> LogitRelaxedBernoulli:
        shape = tuple(batch_shape)
        return self._expanded(LogitRelaxedBernoulli, shape, _instance, temperature=self.temperature,
                              **_expanded_parameters(self, shape))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = _clamped_uniforms(shape, probs)
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        """log t + d - 2 log(1 + e^d) with d = logits - t value, the last term as logaddexp(0, d), finite for any d."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * logaddexp(diff, diff.new_zeros(()))


class _Relaxed(TransformedDistribution):
    """A relaxed distribution: a transform of a base that holds its temperature, logits and probs."""

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs


class RelaxedBernoulli(_Relaxed):
    """A relaxed Bernoulli draw in (0, 1) at `temperature`, given by `probs` or `logits` (not both): the sigmoid of
    a LogitRelaxedBernoulli draw.

    Deviation from PyTorch: `validate_args` reaches the inner LogitRelaxedBernoulli too."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    base_dist: LogitRelaxedBernoulli

    def __init__(
        self, temperature: Tensor | float, probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> RelaxedBernoulli:
        return super().expand(batch_shape, _instance=self._get_checked_instance(RelaxedBernoulli, _instance))


class ExpRelaxedCategorical(OverCategories):
    """The log of a RelaxedOneHotCategorical draw: log_softmax((logits + G) / temperature) for G standard Gumbel
    noise, given by `probs` or `logits` (not both) over K categories (the event). Its support is really a
    (K - 1)-dimensional surface in R^K."""

    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self, temperature: Tensor | float, probs: Tensor | None = None, logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = _as_tensor_like(temperature, self._param)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> ExpRelaxedCategorical:
        shape = tuple(batch_shape)
        return self._expanded(ExpRelaxedCategorical, shape, _instance, temperature=self.temperature,
                              _categorical=self._categorical.expand(shape))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        uniforms = _clamped_uniforms(self._extended_shape(sample_shape), self.logits)
        gumbels = -(-uniforms.log()).log()
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        """The density of the log-simplex point: log (K - 1)! + (K - 1) log t + sum_i s_i - K logsumexp(s), with
        s = logits - t value (Maddison et al.'s eq. 6 in log coordinates)."""
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        score = logits - value * self.temperature
        score = (score - score.logsumexp(-1, keepdim=True)).sum(-1)
        return score + math.lgamma(k) + (k - 1) * self.temperature.log()


class RelaxedOneHotCategorical(_Relaxed):
    """A relaxed one-hot draw on the simplex of K categories at `temperature`, given by `probs` or `logits` (not
    both): the exp of an ExpRelaxedCategorical draw."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True
    base_dist: ExpRelaxedCategorical

    def __init__(
        self, temperature: Tensor | float, probs: Tensor | None = None, logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> RelaxedOneHotCategorical:
        return super().expand(batch_shape, _instance=self._get_checked_instance(RelaxedOneHotCategorical, _instance))

