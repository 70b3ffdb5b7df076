"""PyTorch's refusal of a flag that is no Python bool.

PyTorch's argument parser takes only True or False where a signature says `bool` (keepdim, descending,
requires_grad, ...): an int, numpy's bool or a tensor is a TypeError, where a Python `if` would take any of them.
Ops on a hot path (sum along a dim, dropout, the creation functions' leaf) test `flag.__class__ is not bool`
inline and build the error only then; the others call check_flags.
"""

from __future__ import annotations

from typing import Any

from actorgrad.ops.operands import type_name


def not_bool(op: str, name: str, value: Any, position: int | None = None) -> TypeError:
    """PyTorch's error for `value`, given as `op`'s flag `name` (at `position` of PyTorch's kernel, where its
    error names one), that is no bool."""
    where = "" if position is None else f" (position {position})"
    return TypeError(f"{op}(): argument '{name}'{where} must be bool, not {type_name(value)}")


def check_flags(op: str, **flags: Any) -> None:
    """Refuse the first of `flags` (name=value, in the signature's order) that is no bool, as PyTorch does."""
    for name, value in flags.items():
        if value.__class__ is not bool:
            raise not_bool(op, name, value)

