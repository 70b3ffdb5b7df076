"""`Constraint`, the base of the regions the distributions check their parameters and values against; the named
constraints are in `constraints`."""

from __future__ import annotations

from actorgrad.tensor import Tensor

__all__ = ["Constraint"]


class Constraint:
    """A region a value must lie in. `event_dim` dims on the right make one event, which `check` judges as a
    whole; `is_discrete` says whether the region is a discrete set."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__[1:] + "()"
