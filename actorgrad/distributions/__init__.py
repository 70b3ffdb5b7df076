"""`actorgrad.distributions`: probability distributions with PyTorch's torch.distributions interface (sampling,
reparameterized sampling, log densities, entropies, KL divergences), built from differentiable ops."""

from actorgrad.distributions import constraints, kl_cross, transforms  # noqa: F401 (kl_cross registers its pairs)
from actorgrad.distributions.circular import VonMises
from actorgrad.distributions.constraint_registry import biject_to, transform_to
from actorgrad.distributions.continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from actorgrad.distributions.continuous_bernoulli import ContinuousBernoulli
from actorgrad.distributions.counts import Binomial, Geometric, Multinomial, NegativeBinomial, Poisson
from actorgrad.distributions.discrete import (
    Bernoulli,
    Categorical,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.exp_family import ExponentialFamily
from actorgrad.distributions.fisher_snedecor import FisherSnedecor
from actorgrad.distributions.gamma_family import Beta, Dirichlet, Gamma
from actorgrad.distributions.generalized_pareto import GeneralizedPareto
from actorgrad.distributions.independent import Independent
from actorgrad.distributions.inverse_gamma import InverseGamma
from actorgrad.distributions.kl import kl_divergence, register_kl
from actorgrad.distributions.kumaraswamy import Kumaraswamy
from actorgrad.distributions.lkj_cholesky import LKJCholesky
from actorgrad.distributions.low_rank_mvn import LowRankMultivariateNormal
from actorgrad.distributions.mixture import MixtureSameFamily
from actorgrad.distributions.multivariate_normal import MultivariateNormal
from actorgrad.distributions.relaxed import RelaxedBernoulli, RelaxedOneHotCategorical
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
from actorgrad.distributions.transforms import *  # noqa: F403 (PyTorch exports every transform here)
from actorgrad.distributions.wishart import Wishart

__all__ = [
    "Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Exponential", "Gamma", "Independent", "Laplace",
    "Normal", "OneHotCategorical", "Uniform", "constraints", "kl_divergence", "register_kl",
    "Cauchy", "Gumbel", "HalfCauchy", "HalfNormal", "LogNormal", "LogisticNormal", "Pareto", "TransformedDistribution",
    "Weibull", "transforms",
    "Binomial", "Chi2", "Geometric", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Poisson", "StudentT",
    "biject_to", "transform_to",
    "ContinuousBernoulli", "FisherSnedecor", "Kumaraswamy", "LowRankMultivariateNormal", "MixtureSameFamily",
    "RelaxedBernoulli", "RelaxedOneHotCategorical", "VonMises",
    "ExponentialFamily", "GeneralizedPareto", "InverseGamma", "LKJCholesky", "OneHotCategoricalStraightThrough",
    "Wishart",
]
__all__.extend(transforms.__all__)
