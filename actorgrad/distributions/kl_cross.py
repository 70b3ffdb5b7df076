"""The KL divergences PyTorch registers between different families of 1-d distributions, registered on import.

Each finite one is KL(p || q) = -H(p) + CE(p, q), where the cross entropy CE(p, q) = -E_p[log q] needs only a few
expectations under p: its mean and variance, E_p[log x], or E_p[exp(-(x - loc) / scale)] (for a Gumbel q). These
expectations are tables keyed by p's family, the cross entropies one function per q's family, and the pairs one
table, so a pair is one row. KL(p || q) is infinite where p's support reaches outside q's, and where the moment
that q's log density needs is infinite under a Pareto p, as PyTorch's."""

from __future__ import annotations

import math
from collections.abc import Callable

from actorgrad.creation import full_like
from actorgrad.distributions.continuous import Exponential, Laplace, Normal, Uniform
from actorgrad.distributions.counts import Binomial, Poisson
from actorgrad.distributions.discrete import Bernoulli
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.gamma_family import Beta, Gamma
from actorgrad.distributions.kl_registry import register_kl
from actorgrad.distributions.transformed_families import EULER_GAMMA, Gumbel, Pareto
from actorgrad.ops.gamma import digamma, lgamma
from actorgrad.ops.selection import where
from actorgrad.ops.special import erf, xlogy
from actorgrad.tensor import Tensor

__all__: list[str] = []


def _x_log_x(x: Tensor) -> Tensor:
    """x log x, 0 at 0; clamped at 0 so that bounds outside q's support (whose result is inf) stay finite here."""
    x = x.clamp(min=0)
    return xlogy(x, x)


def _uniform_log_mean(low: Tensor, high: Tensor) -> Tensor:
    """E[log x] for x uniform on [low, high]: the mean of the antiderivative x log x - x's increments."""
    return (_x_log_x(high) - _x_log_x(low)) / (high - low) - 1


# -- expectations under p, by p's family (looked up along p's type's MRO, so that Chi2 uses Gamma's row) -----------
_LOG_MEAN: dict[type, Callable[[Distribution], Tensor]] = {  # E_p[log x]
    Beta: lambda p: digamma(p.concentration1) - digamma(p.concentration1 + p.concentration0),
    Exponential: lambda p: -EULER_GAMMA - p.rate.log(),
    Gamma: lambda p: digamma(p.concentration) - p.rate.log(),
    Pareto: lambda p: p.scale.log() + p.alpha.reciprocal(),
    Uniform: lambda p: _uniform_log_mean(p.low, p.high),
}

_LOG_ONE_MINUS_MEAN: dict[type, Callable[[Distribution], Tensor]] = {  # E_p[log(1 - x)]
    Uniform: lambda p: _uniform_log_mean(1 - p.high, 1 - p.low),
}

# E_p[exp(-(x - loc) / scale)]: exp(loc / scale) times p's moment generating function at -1 / scale
_EXP_DECAY_MEAN: dict[type, Callable[[Distribution, Tensor, Tensor], Tensor]] = {
    Exponential: lambda p, loc, scale: (loc / scale).exp() * (p.rate * scale) / (p.rate * scale + 1),
    Gamma: lambda p, loc, scale: (loc / scale - p.concentration * (p.rate * scale).reciprocal().log1p()).exp(),
    Normal: lambda p, loc, scale: ((loc - p.loc) / scale + 0.5 * (p.scale / scale).pow(2)).exp(),
    Uniform: lambda p, loc, scale: (scale / (p.high - p.low)
                                    * (((loc - p.low) / scale).exp() - ((loc - p.high) / scale).exp())),
}


def _under(table: dict[type, Callable], p: Distribution, *args: Tensor) -> Tensor:
    for cls in type(p).__mro__:
        if cls in table:
            return table[cls](p, *args)
    raise NotImplementedError(f"no expectation under {type(p).__name__} is tabled here")


# -- the cross entropies -E_p[log q], by q's family ----------------------------------------------------------------
def _cross_entropy_normal(p: Distribution, q: Normal) -> Tensor:
    squared_distance = p.variance + (p.mean - q.loc).pow(2)
    return 0.5 * math.log(2 * math.pi) + q.scale.log() + squared_distance / (2 * q.scale.pow(2))


def _cross_entropy_exponential(p: Distribution, q: Exponential) -> Tensor:
    return q.rate * p.mean - q.rate.log()


def _cross_entropy_gamma(p: Distribution, q: Gamma) -> Tensor:
    log_normalizer = lgamma(q.concentration) - q.concentration * q.rate.log()
    return log_normalizer - (q.concentration - 1) * _under(_LOG_MEAN, p) + q.rate * p.mean


def _cross_entropy_gumbel(p: Distribution, q: Gumbel) -> Tensor:
    return q.scale.log() + (p.mean - q.loc) / q.scale + _under(_EXP_DECAY_MEAN, p, q.loc, q.scale)


def _cross_entropy_laplace(p: Normal, q: Laplace) -> Tensor:
    """log(2 b) + E_p|x - loc| / b, the folded normal's mean for E_p|x - loc|."""
    shift = p.loc - q.loc
    abs_mean = (math.sqrt(2 / math.pi) * p.scale * (-0.5 * (shift / p.scale).pow(2)).exp()
                + shift * erf(shift / (math.sqrt(2) * p.scale)))
    return (2 * q.scale).log() + abs_mean / q.scale


def _cross_entropy_beta(p: Distribution, q: Beta) -> Tensor:
    a, b = q.concentration1, q.concentration0
    log_beta = lgamma(a) + lgamma(b) - lgamma(a + b)
    return log_beta - (a - 1) * _under(_LOG_MEAN, p) - (b - 1) * _under(_LOG_ONE_MINUS_MEAN, p)


def _cross_entropy_pareto(p: Distribution, q: Pareto) -> Tensor:
    return (q.alpha + 1) * _under(_LOG_MEAN, p) - q.alpha.log() - q.alpha * q.scale.log()


def _cross_entropy_uniform(p: Distribution, q: Uniform) -> Tensor:
    return (q.high - q.low).log()


# -- the pairs -------------------------------------------------------------------------------------------------------
_PAIRS: list[tuple[tuple[type, ...], type, Callable[[Distribution, Distribution], Tensor]]] = [
    ((Beta, Exponential, Gamma, Gumbel, Laplace, Pareto, Uniform), Normal, _cross_entropy_normal),
    ((Beta, Gamma, Pareto, Uniform), Exponential, _cross_entropy_exponential),
    ((Beta, Exponential, Pareto, Uniform), Gamma, _cross_entropy_gamma),
    ((Exponential, Gamma, Normal, Uniform), Gumbel, _cross_entropy_gumbel),
    ((Normal,), Laplace, _cross_entropy_laplace),
    ((Uniform,), Beta, _cross_entropy_beta),
    ((Uniform,), Pareto, _cross_entropy_pareto),
    ((Beta,), Uniform, _cross_entropy_uniform),
]

# The order of the moment of a Pareto p that q's log density needs: infinite for alpha at or below it.
_PARETO_MOMENT_ORDER = {Normal: 2, Exponential: 1, Gamma: 1}


def _bounds(d: Distribution) -> tuple[Tensor | float, Tensor | float]:
    support = d.support
    return getattr(support, "lower_bound", -math.inf), getattr(support, "upper_bound", math.inf)


def _infinite_outside_support(result: Tensor, p: Distribution, q: Distribution) -> Tensor:
    """`result`, inf where p's support reaches below or above q's."""
    (p_low, p_high), (q_low, q_high) = _bounds(p), _bounds(q)
    for escapes in (p_low < q_low, p_high > q_high):
        if isinstance(escapes, Tensor):
            result = where(escapes, math.inf, result)
        elif escapes:
            result = full_like(result, math.inf)
    return result


def _with_finite_moment(p: Pareto, order: int) -> tuple[Pareto, Tensor]:
    """p with alpha moved above `order` where it is not (so that the formula and its gradient stay finite there),
    and where it was moved: there KL(p || q) is inf."""
    infinite = p.alpha <= order
    alpha = where(infinite, order + 1.0, p.alpha)
    return Pareto(p.scale, alpha, validate_args=False), infinite


def _cross_family_kl(q_type: type, cross_entropy: Callable[[Distribution, Distribution], Tensor]) -> Callable:
    def kl(p: Distribution, q: Distribution) -> Tensor:
        if isinstance(p, Pareto):
            finite_p, infinite = _with_finite_moment(p, _PARETO_MOMENT_ORDER[q_type])
            result = where(infinite, math.inf, -finite_p.entropy() + cross_entropy(finite_p, q))
        else:
            result = -p.entropy() + cross_entropy(p, q)
        return _infinite_outside_support(result, p, q)

    kl.__doc__ = f"KL(p || q) for q a {q_type.__name__}: -H(p) + {cross_entropy.__name__}(p, q)."
    return kl


for _p_types, _q_type, _cross_entropy in _PAIRS:
    for _p_type in _p_types:
        register_kl(_p_type, _q_type)(_cross_family_kl(_q_type, _cross_entropy))


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    """-H(p) - E_p[x log rate - rate - log x!], where log x! is 0 for x in {0, 1}."""
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


# -- the pairs where p's support always reaches outside q's -----------------------------------------------------------
_ALWAYS_INFINITE: list[tuple[type, tuple[type, ...]]] = [
    (Beta, (Pareto,)),
    (Exponential, (Beta, Pareto, Uniform)),
    (Gamma, (Beta, Pareto, Uniform)),
    (Gumbel, (Beta, Exponential, Gamma, Pareto, Uniform)),
    (Laplace, (Beta, Exponential, Gamma, Pareto, Uniform)),
    (Normal, (Beta, Exponential, Gamma, Pareto, Uniform)),
    (Pareto, (Beta, Uniform)),
    (Poisson, (Bernoulli, Binomial)),
]


def _kl_infinite(p: Distribution, q: Distribution) -> Tensor:
    """inf over p's batch: q has no mass where p has some."""
    return full_like(p.mean, math.inf)


for _p_type, _q_types in _ALWAYS_INFINITE:
    for _q_type in _q_types:
        register_kl(_p_type, _q_type)(_kl_infinite)
