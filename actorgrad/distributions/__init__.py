"""`actorgrad.distributions`: probability distributions with PyTorch's torch.distributions interface (sampling,
reparameterized sampling, log densities, entropies, KL divergences), built from differentiable ops."""

from actorgrad.distributions import constraints, transforms
from actorgrad.distributions.continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from actorgrad.distributions.counts import Binomial, Geometric, Multinomial, NegativeBinomial, Poisson
from actorgrad.distributions.discrete import Bernoulli, Categorical, OneHotCategorical
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.gamma_family import Beta, Dirichlet, Gamma
from actorgrad.distributions.independent import Independent
from actorgrad.distributions.kl import kl_divergence, register_kl
from actorgrad.distributions.multivariate_normal import MultivariateNormal
from actorgrad.distributions.student_t import Chi2, StudentT
from actorgrad.distributions.transformed import TransformedDistribution
from actorgrad.distributions.transformed_families import (
    Gumbel,
    HalfCauchy,
    HalfNormal,
    LogisticNormal,
    LogNormal,
    Pareto,
    Weibull,
)

__all__ = [
    "Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Exponential", "Gamma", "Independent", "Laplace",
    "Normal", "OneHotCategorical", "Uniform", "constraints", "kl_divergence", "register_kl",
    "Cauchy", "Gumbel", "HalfCauchy", "HalfNormal", "LogNormal", "LogisticNormal", "Pareto", "TransformedDistribution",
    "Weibull", "transforms",
    "Binomial", "Chi2", "Geometric", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Poisson", "StudentT",
]
