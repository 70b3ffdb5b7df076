"""The constraints on values joined from blocks (PyTorch's constraints.cat and constraints.stack): one constraint per
block along a dim, as CatTransform and StackTransform join their transforms' codomains. Reached as
`constraints.cat` and `constraints.stack`."""

from __future__ import annotations

from actorgrad.distributions.constraint_base import Constraint
from actorgrad.ops.joining import cat as _cat_tensors
from actorgrad.ops.joining import stack as _stack_tensors
from actorgrad.tensor import Tensor

__all__ = ["cat", "stack"]


def _check_dim_in_range(dim: int, value: Tensor) -> None:
    if not -value.dim() <= dim < value.dim():
        raise AssertionError(f"dim {dim} out of range for value with {value.dim()} dimensions")


def _all_rightmost(result: Tensor, n: int) -> Tensor:
    """`result` and-reduced over its `n` rightmost dims."""
    return result.reshape(result.shape[: result.dim() - n] + (-1,)).all(-1) if n > 0 else result


class _Cat(Constraint):
    """`cseq[i]` on the i-th block of `lengths[i]` entries along `dim`, as `cat` would join the blocks.

    `check` gives one answer per batch entry: each block's answer reduced over the event dims its constraint has
    fewer than the largest, then joined by `cat` where `dim` is a batch dim, and-ed where it is an event dim.
    (PyTorch's joins them by `cat` at `dim` as given: the same answer where the blocks' event dims are all 0, or
    are equal and `dim` is a batch dim counted from the left; an error or a misplaced dim elsewhere.)"""

    def __init__(self, cseq: list[Constraint], dim: int = 0, lengths: list[int] | None = None) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})")
        self.dim = dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Tensor) -> Tensor:
        _check_dim_in_range(self.dim, value)
        event_dim, checks, start = self.event_dim, [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            check = constraint.check(value.narrow(self.dim, start, length))
            checks.append(_all_rightmost(check, event_dim - constraint.event_dim))
            start += length
        dim = (self.dim - value.dim() if self.dim >= 0 else self.dim) + event_dim
        if dim < 0:
            return _cat_tensors(checks, dim)
        result = checks[0]
        for check in checks[1:]:
            result = result & check
        return result


class _Stack(Constraint):
    """`cseq[i]` on the i-th slice along `dim`, as `stack` would join the slices. Its event dims are the slices'
    (the largest of `cseq`'s), plus `dim` when it is negative and falls among them or right of them. (PyTorch adds
    `dim` when `dim + event_dim < 0`: the same for `dim >= 0` and `dim == -1 - event_dim`, the cases where its
    `check` and StackTransform's log-Jacobian come out shaped by the batch.)

    `check` gives one answer per batch entry: the slices' answers, each reduced to the same event dims, stacked at
    `dim`, or and-ed where `dim` is in the event."""

    def __init__(self, cseq: list[Constraint], dim: int = 0) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.dim = dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if -dim - 1 <= self.dim < 0 else dim

    def check(self, value: Tensor) -> Tensor:
        _check_dim_in_range(self.dim, value)
        slice_event_dim = max(c.event_dim for c in self.cseq)
        checks = [
            _all_rightmost(c.check(value.select(self.dim, i)), slice_event_dim - c.event_dim)
            for i, c in zip(range(value.shape[self.dim]), self.cseq)
        ]
        if self.event_dim == slice_event_dim:
            return _stack_tensors(checks, self.dim % value.dim())
        result = checks[0]
        for check in checks[1:]:
            result = result & check
        return result


cat = _Cat
stack = _Stack
