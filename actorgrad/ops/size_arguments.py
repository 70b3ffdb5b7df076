"""PyTorch's parsing of a method's `tuple of ints` argument (sizes, repeats, dims): separate ints, one sequence, or
the keyword, each element an int, a numpy integer or an integer tensor of one element; anything else (a float, a
bool first, None, a numpy array) refused with PyTorch's TypeError rather than failing later inside numpy."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops.operands import type_name
from actorgrad.tensor import Tensor

_SEQUENCES = (tuple, list)


def int_sizes(op: str, positional: tuple, keyword: Any, name: str) -> tuple[int, ...]:
    """The ints of `op`'s argument `name`, given as `positional` (a method's `*sizes`) or as the keyword `keyword`
    (None when not given)."""
    if keyword is not None:
        if positional:
            raise TypeError(f"{op}() got multiple values for argument '{name}'")
        sizes = keyword
    elif len(positional) == 1 and positional[0].__class__ in _SEQUENCES:
        sizes = positional[0]
    else:
        sizes = positional
    if sizes.__class__ in _SEQUENCES and (positional or keyword is not None):
        for n in sizes:
            if n.__class__ is not int:
                break
        else:  # the common case: Python ints
            return tuple(sizes)
    return _checked_sizes(op, positional, keyword, name)


def _checked_sizes(op: str, positional: tuple, keyword: Any, name: str) -> tuple[int, ...]:
    """int_sizes' slow path: every spelling PyTorch takes, as ints, or its error."""
    where = "" if keyword is not None else " (position 1)"
    if keyword is None and not positional:
        raise TypeError(f'{op}() missing 1 required positional arguments: "{name}"')
    if keyword is None and (len(positional) > 1 or _one_int(positional[0])):
        sizes = positional  # separate ints
    else:  # one sequence, as the keyword or the only positional
        sizes = positional[0] if keyword is None else keyword
        if not isinstance(sizes, _SEQUENCES):
            raise TypeError(f"{op}(): argument '{name}'{where} must be tuple of ints, not {type_name(sizes)}")
    for i, n in enumerate(sizes):
        if not _one_int(n) and not (i and isinstance(n, bool)):  # PyTorch reads a bool as an int past the first
            raise TypeError(f"{op}(): argument '{name}'{where} must be tuple of ints, but found element of type "
                            f"{type_name(n)} at pos {i}")
    return tuple(int(n) for n in sizes)


def _one_int(value: Any) -> bool:
    """An int (not a bool), a numpy integer or an integer tensor of one element."""
    if isinstance(value, Tensor):
        return value.dtype.kind in "iu" and value.numel() == 1
    return isinstance(value, int | np.integer) and not isinstance(value, bool)
