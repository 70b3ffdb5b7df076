"""Transforms from the real numbers onto a constraint's region (PyTorch's torch.distributions.constraint_registry).

`biject_to(constraint)` gives a bijection, with a log-Jacobian: what HMC needs to move in unconstrained space.
`transform_to(constraint)` gives a map that need not be one (softmax onto the simplex, a Cholesky factor from a
whole matrix): what unconstrained optimization of a parameter needs. Both look a constraint up by its class, and
take more entries by `register`, as a call or as a decorator over a factory.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Real
from typing import Any

from actorgrad.distributions import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]

Factory = Callable[[Any], transforms.Transform]


class ConstraintRegistry:
    """Constraint classes to factories that build a transform from a constraint of that class."""

    def __init__(self) -> None:
        self._registry: dict[type, Factory] = {}

    def register(self, constraint: Any, factory: Factory | None = None) -> Any:
        """`factory` for `constraint`'s class (a Constraint subclass, or an instance of one); without a factory,
        a decorator that registers the function it wraps."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(
                f"Expected constraint to be either a Constraint subclass or instance, but got {constraint}"
            )
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: constraints.Constraint) -> transforms.Transform:
        """The transform onto `constraint`'s region, or NotImplementedError when its class is not registered."""
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _identity(constraint: Any) -> transforms.Transform:
    return transforms.identity_transform


def _exp_then_shift(constraint: Any) -> transforms.Transform:
    """exp onto (0, inf), then shifted to start at the lower bound (positive and nonnegative too, whose classes
    are those of greater_than and greater_than_eq)."""
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


def _exp_then_flip(constraint: Any) -> transforms.Transform:
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


def _sigmoid_then_stretch(constraint: Any) -> transforms.Transform:
    """sigmoid onto (0, 1), then stretched over the interval unless it is the unit interval."""
    lower, upper = constraint.lower_bound, constraint.upper_bound
    if isinstance(lower, Real) and lower == 0 and isinstance(upper, Real) and upper == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(),
                                        transforms.AffineTransform(lower, upper - lower)])


_SHARED = (  # in both registries
    (constraints.real, _identity),
    (constraints.greater_than, _exp_then_shift),
    (constraints.greater_than_eq, _exp_then_shift),
    (constraints.less_than, _exp_then_flip),
    (constraints.interval, _sigmoid_then_stretch),
    (constraints.half_open_interval, _sigmoid_then_stretch),
    (constraints.corr_cholesky, lambda constraint: transforms.CorrCholeskyTransform()),
)


def _fill(registry: ConstraintRegistry) -> None:
    """The shared entries, and those that follow `registry` itself into the constraint's parts (independent,
    cat, stack)."""
    for constraint, factory in _SHARED:
        registry.register(constraint, factory)

    @registry.register(constraints.independent)
    def _independent(constraint: Any) -> transforms.Transform:
        return transforms.IndependentTransform(registry(constraint.base_constraint),
                                               constraint.reinterpreted_batch_ndims)

    @registry.register(constraints.cat)
    def _cat(constraint: Any) -> transforms.Transform:
        return transforms.CatTransform([registry(c) for c in constraint.cseq], constraint.dim, constraint.lengths)

    @registry.register(constraints.stack)
    def _stack(constraint: Any) -> transforms.Transform:
        return transforms.StackTransform([registry(c) for c in constraint.cseq], constraint.dim)


_fill(biject_to)
_fill(transform_to)
biject_to.register(constraints.simplex, lambda constraint: transforms.StickBreakingTransform())
transform_to.register(constraints.simplex, lambda constraint: transforms.SoftmaxTransform())
transform_to.register(constraints.lower_cholesky, lambda constraint: transforms.LowerCholeskyTransform())
transform_to.register(constraints.positive_definite, lambda constraint: transforms.PositiveDefiniteTransform())
transform_to.register(constraints.positive_semidefinite, lambda constraint: transforms.PositiveDefiniteTransform())
