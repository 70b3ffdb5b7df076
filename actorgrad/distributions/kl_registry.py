"""The registry behind `kl_divergence`: `register_kl` records fn(p, q) for a pair of distribution types, and
`kl_divergence` calls the most specific registered pair for the types of its arguments (PyTorch's lookup, with its
warning where two pairs are equally specific)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

from actorgrad.distributions.distribution import Distribution
from actorgrad.tensor import Tensor

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict[tuple[type, type], Callable] = {}  # what register_kl registered
_KL_MEMOIZE: dict[tuple[type, type], Callable] = {}  # the function found for each pair of types looked up


def register_kl(type_p: type, type_q: type) -> Callable[[Callable], Callable]:
    """Decorate `fn(p, q)` as the KL divergence of distributions of types `type_p` and `type_q` (and of their
    subclasses, where no more specific pair is registered)."""
    for name, given in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(given, type) and issubclass(given, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {given}")

    def decorator(fn: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()  # a new pair may be the closer match for pairs looked up before
        return fn

    return decorator


@functools.total_ordering
class _Match:
    """A registered pair of types, ordered by how specifically it matches: lexicographically by subclassing."""

    __slots__ = ("types",)

    def __init__(self, *types: type) -> None:
        self.types = types

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Match) and self.types == other.types

    def __le__(self, other: _Match) -> bool:
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p: type, type_q: type) -> Callable:
    """The most specific registered match, warning when ordering by p first and by q first disagree."""
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left, right = _KL_REGISTRY[left_p, left_q], _KL_REGISTRY[right_p, right_q]
    if left is not right:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please register_kl("
                      f"{left_p.__name__}, {right_q.__name__})", RuntimeWarning, stacklevel=3)
    return left


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q), batched over the batch shape; NotImplementedError for a pair of types with no formula."""
    try:
        fn = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fn = _KL_MEMOIZE[type(p), type(q)] = _dispatch_kl(type(p), type(q))
    if fn is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {type(p).__name__} and q type {type(q).__name__}"
        )
    return fn(p, q)
