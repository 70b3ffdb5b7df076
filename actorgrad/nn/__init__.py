"""Neural-network building blocks; `actorgrad.nn.functional` holds the stateless ops."""

from actorgrad.nn import functional

__all__ = ["functional"]
