"""Version counters: how many times a storage was changed in place, which a node that saved a tensor compares at
backward to refuse values changed since (PyTorch's "modified by an inplace operation")."""

from __future__ import annotations

import itertools
import weakref
from typing import TYPE_CHECKING

from actorgrad.grad_mode import INFERENCE, INFERENCE_INPLACE, _inference_mode

if TYPE_CHECKING:
    from actorgrad.tensor import Tensor


class VersionCounter:
    """How many times a storage was changed in place, shared by every tensor on it (a base, its views, its
    `detach()`), so a node that saved one of them can tell at backward that its values changed since.
    `views` holds the views made from the storage by ops (weakly), which a recorded in-place op must not
    leave with a stale history."""

    __slots__ = ("value", "views")

    def __init__(self) -> None:
        self.value = 0
        self.views: weakref.WeakSet | None = None


def version_counter(t: Tensor) -> VersionCounter:
    """`t`'s version counter, made now if it has none yet."""
    vc = t._vc
    if vc is None:
        vc = t._vc = VersionCounter()
    return vc


# The latest in-place change in this process, as a stamp from `_stamps`: a node whose saved values were recorded
# under the stamp still current has nothing to check at backward (one comparison instead of one per saved value).
# Stamps only grow and each is written once, so a change after a recording always leaves a different one.
_stamps = itertools.count(1)
last_change = [0]


def refuse_inference_change(t: Tensor) -> None:
    """PyTorch's refusal to change an inference tensor in place outside inference mode."""
    if t._vc is INFERENCE and _inference_mode.get() is None:
        raise RuntimeError(INFERENCE_INPLACE)


def bump_version(t: Tensor) -> None:
    """Record that `t`'s storage was changed in place (an inference tensor's is not counted)."""
    vc = version_counter(t)
    if vc is INFERENCE:
        refuse_inference_change(t)
        return
    vc.value += 1
    last_change[0] = next(_stamps)
