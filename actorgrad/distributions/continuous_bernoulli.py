"""ContinuousBernoulli (Loaiza-Ganem & Cunningham 2019; PyTorch's torch.distributions.ContinuousBernoulli): the
density C(l) l^x (1 - l)^(1 - x) on [0, 1], normalized by C(l) = 2 artanh(1 - 2l) / (1 - 2l). Its closed forms
divide 0 by 0 at l = 1/2, so inside the window `lims` around it they are replaced by Taylor expansions in l - 1/2,
and the exact forms are evaluated at the window's lower end instead (which keeps their gradients finite)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from actorgrad.distributions import constraints
from actorgrad.distributions.discrete import ProbsOrLogits, _expanded_parameters
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.exp_family import ExponentialFamily
from actorgrad.distributions.utils import (
    batch_shape_of,
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
)
from actorgrad.grad_mode import no_grad
from actorgrad.ops.binary_cross_entropies import binary_cross_entropy_with_logits
from actorgrad.ops.selection import where
from actorgrad.random_tensors import rand
from actorgrad.tensor import Tensor

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ProbsOrLogits, ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1], given by `probs` in (0, 1) or `logits` (not both). Unlike
    Bernoulli's, `probs` is not the mean and `logits` not its log-odds: they name the shape parameter l and
    logit(l). Probabilities are clamped into [eps, 1 - eps] of their dtype.

    Deviation from PyTorch: `validate_args=False` lets probs outside [0, 1] through (PyTorch checks them whenever
    validate_args is given, True or False)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(
        self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
        lims: tuple[float, float] = (0.499, 0.501), validate_args: bool | None = None,
    ) -> None:
        given = self._set_probs_or_logits(probs, logits)
        if probs is not None:
            if validate_args and not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(batch_shape_of(self._param, given), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Distribution | None = None) -> ContinuousBernoulli:
        shape = tuple(batch_shape)
        return self._expanded(ContinuousBernoulli, shape, _instance, _lims=self._lims,
                              **_expanded_parameters(self, shape))

    @lazy_property
    def probs(self) -> Tensor:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        """probs, with those inside the window moved to its lower end."""
        return where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self) -> Tensor:
        """log C(l) = log |log(1 - l) - log l| - log |1 - 2l|; log 2 + 4/3 x + 104/45 x^2 (x = (l - 1/2)^2) inside
        the window."""
        cut = self._cut_probs()
        below_half = where(cut <= 0.5, cut, 0.0)  # each branch fed values where its log is finite
        above_half = where(cut >= 0.5, cut, 1.0)
        log_abs_1_minus_2l = where(cut <= 0.5, (-2.0 * below_half).log1p(), (2.0 * above_half - 1.0).log())
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - log_abs_1_minus_2l
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        """l / (2l - 1) + 1 / (log(1 - l) - log l); 1/2 + x/3 + 16/45 x^3 (x = l - 1/2) inside the window."""
        cut = self._cut_probs()
        exact = cut / (2.0 * cut - 1.0) + ((-cut).log1p() - cut.log()).reciprocal()
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return where(self._outside_unstable_region(), exact, taylor)

    @property
    def variance(self) -> Tensor:
        """l (l - 1) / (1 - 2l)^2 + 1 / (log(1 - l) - log l)^2; 1/12 - x/15 - 128/945 x^2 (x = (l - 1/2)^2) inside
        the window.

        Deviation from PyTorch: its expansion adds the x^2 term (the true series subtracts it), which shows only in
        a window wider than the default (within 1.4e-13 of the variance there)."""
        cut = self._cut_probs()
        exact = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + ((-cut).log1p() - cut.log()).pow(-2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 + 128.0 / 945.0 * x) * x
        return where(self._outside_unstable_region(), exact, taylor)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """The inverse CDF of uniform noise."""
        u = rand(self._extended_shape(sample_shape), dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        """(l^x (1 - l)^(1 - x) + l - 1) / (2l - 1), x itself inside the window; 0 below 0 and 1 above 1."""
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        exact = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        inside = where(self._outside_unstable_region(), exact, value)
        return where(value <= 0.0, 0.0, where(value >= 1.0, 1.0, inside))

    def icdf(self, value: Tensor) -> Tensor:
        """(log(1 - l + u (2l - 1)) - log(1 - l)) / (log l - log(1 - l)), u itself inside the window."""
        cut = self._cut_probs()
        exact = ((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p()) / (cut.log() - (-cut).log1p())
        return where(self._outside_unstable_region(), exact, value)

    def entropy(self) -> Tensor:
        log_probs0, log_probs1 = (-self.probs).log1p(), self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        """log((e^x - 1) / x) of the logits x; x/2 + x^2/24 - x^4/2880 inside the window, which is PyTorch's: the
        logits within `lims` - 1/2 of 0 (not the probs within `lims`)."""
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = where(outside, x, self._lims[0] - 0.5)
        log_norm = cut.expm1().abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return where(outside, log_norm, taylor)
