"""`actorgrad.distributions`: probability distributions with PyTorch's torch.distributions interface (sampling,
reparameterized sampling, log densities, entropies, KL divergences), built from differentiable ops."""

from actorgrad.distributions import constraints
from actorgrad.distributions.continuous import Exponential, Laplace, Normal, Uniform
from actorgrad.distributions.discrete import Bernoulli, Categorical, OneHotCategorical
from actorgrad.distributions.distribution import Distribution
from actorgrad.distributions.gamma_family import Beta, Dirichlet, Gamma
from actorgrad.distributions.independent import Independent
from actorgrad.distributions.kl import kl_divergence, register_kl

__all__ = [
    "Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Exponential", "Gamma", "Independent", "Laplace",
    "Normal", "OneHotCategorical", "Uniform", "constraints", "kl_divergence", "register_kl",
]
