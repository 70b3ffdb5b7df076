"""`kl_divergence(p, q)`, KL(p || q) in closed form: the pairs PyTorch registers among the distributions here, with
its formulas, registered in `kl_registry`'s table (which `register_kl` extends), and the Bregman fallback for two
distributions of one exponential family."""

from __future__ import annotations

import math

from actorgrad.creation import full_like
from actorgrad.distributions.continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from actorgrad.distributions.continuous_bernoulli import ContinuousBernoulli
from actorgrad.distributions.counts import Binomial, Geometric, Poisson
from actorgrad.distributions.discrete import Bernoulli, Categorical, OneHotCategorical
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.exp_family import ExponentialFamily, bregman_terms
from actorgrad.distributions.gamma_family import Beta, Dirichlet, Gamma
from actorgrad.distributions.independent import Independent
from actorgrad.distributions.kl_registry import kl_divergence, register_kl
from actorgrad.distributions.low_rank_mvn import (
    LowRankMultivariateNormal,
    lowrank_logdet,
    lowrank_mahalanobis,
    woodbury_factor,
)
from actorgrad.distributions.multivariate_normal import (
    MultivariateNormal,
    half_log_det,
    mahalanobis,
    solve_lower,
)
from actorgrad.distributions.transformed import TransformedDistribution
from actorgrad.distributions.transformed_families import EULER_GAMMA, Gumbel, HalfNormal, Pareto
from actorgrad.distributions.utils import sum_rightmost
from actorgrad.ops.activations import softplus
from actorgrad.ops.gamma import digamma, lgamma
from actorgrad.ops.linalg import matmul
from actorgrad.ops.selection import where
from actorgrad.tensor import Tensor

__all__ = ["kl_divergence", "register_kl"]

# -- the same family on both sides ---------------------------------------------------------------------------------
@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """The Bregman divergence of the log normalizer F: F(theta_q) - F(theta_p) - <theta_q - theta_p,
    grad F(theta_p)>, for two distributions of the same family without a closed form registered. Differentiable
    in q's parameters only (p's are taken detached, as PyTorch's).

    Deviation from PyTorch: each inner product is summed over the dims right of the batch (PyTorch sums over as
    many dims as the event has, which mixes the batch into the sum where a natural parameter has fewer event dims
    than the distribution, as Wishart's df)."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot"
                                  + " " * 29 + "be computed using Bregman divergences")  # PyTorch's spacing
    log_normalizer, p_params, gradients = bregman_terms(p)
    result = q._log_normalizer(*q._natural_params) - log_normalizer
    for p_param, q_param, gradient in zip(p_params, q._natural_params, gradients):
        result = result - sum_rightmost((q_param - p_param) * gradient, p_param.dim() - len(p.batch_shape))
    return result


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = where(p.probs == 0, 0.0, where(q.probs == 0, math.inf, t1))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = where(p.probs == 1, 0.0, where(q.probs == 1, math.inf, t2))
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = lgamma(q.concentration1) + lgamma(q.concentration0) + lgamma(sum_p)
    t2 = lgamma(p.concentration1) + lgamma(p.concentration0) + lgamma(sum_q)
    t3 = (p.concentration1 - q.concentration1) * digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * digamma(p.concentration0)
    t5 = (sum_q - sum_p) * digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = where(p.probs == 0, 0.0, where(q.probs == 0, math.inf, t))
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = lgamma(sum_p) - lgamma(sum_q)
    t2 = (lgamma(p.concentration) - lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = digamma(p.concentration) - digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return t1 + t2 + t3 - 1


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return where((q.low > p.low) | (q.high < p.high), math.inf, result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


# -- the transformed distributions and Cauchy ----------------------------------------------------------------------
@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    scale_ratio = p.scale / q.scale
    q_loc, p_loc = q.loc / q.scale, p.loc / q.scale
    t1 = -scale_ratio.log() - q_loc + p_loc
    t2 = scale_ratio * EULER_GAMMA
    t3 = (q_loc + (1 + scale_ratio).lgamma() - p_loc).exp()
    return t1 + t2 + t3 - (1 + EULER_GAMMA)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return where(p.scale < q.scale, math.inf, result)  # q has no density below its scale


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    """KL(f(X) || f(Y)) = KL(X || Y) for one invertible f (LogNormal pairs, Weibull pairs of equal parameters),
    and for |x| of bases symmetric about 0 (HalfCauchy pairs); other transforms are not implemented."""
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


# -- the counting distributions and the multivariate normal --------------------------------------------------------
@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    """Infinite where p has more trials than q (counts q cannot reach); q with more trials is not implemented."""
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return where(p.total_count > q.total_count, math.inf, kl)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    """log(det Sq / det Sp) / 2 + (tr(Sq^-1 Sp) + Mahalanobis(q.loc - p.loc under Sq) - n) / 2, the trace as the
    squared Frobenius norm of Lq^-1 Lp."""
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    p_tril, q_tril = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    trace = solve_lower(q_tril, p_tril).pow(2).flatten(-2).sum(-1)
    distance = mahalanobis(q_tril, q.loc - p.loc)
    return half_log_det(q_tril) - half_log_det(p_tril) + 0.5 * (trace + distance - p.event_shape[0])


# -- the low-rank multivariate normal --------------------------------------------------------------------------------
def _gram_trace(X: Tensor) -> Tensor:
    """tr(X X^T): the squared Frobenius norm of each matrix."""
    return X.pow(2).flatten(-2).sum(-1)


def _check_same_event_shape(p: Distribution, q: Distribution, names: str) -> None:
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {names} with different event shapes cannot be computed")


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(
    p: LowRankMultivariateNormal, q: LowRankMultivariateNormal
) -> Tensor:
    """The MultivariateNormal formula with Sq^-1 = Dq^-1 - A^T A (Woodbury): tr(Sq^-1 (Wp Wp^T + Dp)) expands into
    four Frobenius norms, none n x n."""
    _check_same_event_shape(p, q, "Low Rank Multivariate Normals")
    p_W, p_D = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    q_W, q_D = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    A = woodbury_factor(q_W, q_D, q._capacitance_tril)
    trace = ((p_D / q_D).sum(-1) + _gram_trace(p_W * q_D.rsqrt().unsqueeze(-1))
             - _gram_trace(A * p_D.sqrt().unsqueeze(-2)) - _gram_trace(matmul(A, p_W)))
    distance = lowrank_mahalanobis(q_W, q_D, q.loc - p.loc, q._capacitance_tril)
    log_det_ratio = lowrank_logdet(q_D, q._capacitance_tril) - lowrank_logdet(p_D, p._capacitance_tril)
    return 0.5 * (log_det_ratio + trace + distance - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p: MultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _check_same_event_shape(p, q, "(Low Rank) Multivariate Normals")
    p_tril = p._unbroadcasted_scale_tril
    q_W, q_D = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    A = woodbury_factor(q_W, q_D, q._capacitance_tril)
    trace = _gram_trace(p_tril * q_D.rsqrt().unsqueeze(-1)) - _gram_trace(matmul(A, p_tril))
    distance = lowrank_mahalanobis(q_W, q_D, q.loc - p.loc, q._capacitance_tril)
    log_det_ratio = lowrank_logdet(q_D, q._capacitance_tril) - 2 * half_log_det(p_tril)
    return 0.5 * (log_det_ratio + trace + distance - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p: LowRankMultivariateNormal, q: MultivariateNormal) -> Tensor:
    _check_same_event_shape(p, q, "(Low Rank) Multivariate Normals")
    q_tril = q._unbroadcasted_scale_tril
    p_W, p_D = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    trace = _gram_trace(solve_lower(q_tril, p_W)) + _gram_trace(solve_lower(q_tril, p_D.sqrt().diag_embed()))
    distance = mahalanobis(q_tril, q.loc - p.loc)
    log_det_ratio = 2 * half_log_det(q_tril) - lowrank_logdet(p_D, p._capacitance_tril)
    return 0.5 * (log_det_ratio + trace + distance - p.event_shape[0])


# -- the continuous Bernoulli ------------------------------------------------------------------------------------
# log q(x) = log C(l) + log(1 - l) + x logit(l) for q continuous Bernoulli, so E_p[log q] needs only p's mean.
def _cross_entropy_to_continuous_bernoulli(p_mean: Tensor, q: ContinuousBernoulli) -> Tensor:
    return -p_mean * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() + _cross_entropy_to_continuous_bernoulli(p.mean, q)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() + _cross_entropy_to_continuous_bernoulli(p.mean, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    """Infinite where p reaches outside [0, 1].

    Deviation from PyTorch: PyTorch's is infinite also where p.low == 0 or p.high == 1."""
    result = -p.entropy() + _cross_entropy_to_continuous_bernoulli(p.mean, q)
    return where((p.low < 0) | (p.high > 1), math.inf, result)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    """-H(p) + log(sqrt(2 pi) scale) + E_p[(x - loc)^2] / (2 scale^2)."""
    squared_distance = p.variance + (p.mean - q.loc).pow(2)
    return -p.entropy() + 0.5 * math.log(2 * math.pi) + q.scale.log() + squared_distance / (2 * q.scale.pow(2))


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    """Infinite where q does not cover [0, 1].

    Deviation from PyTorch: PyTorch's is infinite where q.low >= 0 or q.high <= 1 (so for q on [0, 1] itself)."""
    result = -p.entropy() + (q.high - q.low).log()
    return where((q.low > 0) | (q.high < 1), math.inf, result)


def _infinite_like(value: Tensor) -> Tensor:
    return full_like(value, math.inf)


@register_kl(ContinuousBernoulli, Pareto)
def _kl_continuous_bernoulli_pareto(p: ContinuousBernoulli, q: Pareto) -> Tensor:
    """p has mass below q's scale, where q has none."""
    return _infinite_like(p.probs)


@register_kl(Exponential, ContinuousBernoulli)
@register_kl(Gamma, ContinuousBernoulli)
@register_kl(Gumbel, ContinuousBernoulli)
@register_kl(Laplace, ContinuousBernoulli)
@register_kl(Normal, ContinuousBernoulli)
@register_kl(Pareto, ContinuousBernoulli)
def _kl_unbounded_continuous_bernoulli(p: Distribution, q: ContinuousBernoulli) -> Tensor:
    """p has mass above 1, where q has none."""
    return _infinite_like(p.mean)
