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


# Non-leaf tensors cut from their graph by `detach_()`, by id, with the stamp of that change: a node recorded before
# it that saved such a tensor refuses to run, as PyTorch's. Keyed by id, not a WeakKeyDictionary, which would compare
# two tensors with `==`; an entry leaves with its tensor. `last_detach` holds the latest such stamp, so a node
# recorded after it (every node, in a program that never calls detach_()) looks nothing up.
detached_in_place: dict[int, tuple[weakref.ref, int]] = {}
last_detach = [0]

DETACHED_SAVED = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is not supported, "
    "please use out-of-place `.detach()` instead"
)


def mark_detached(t: Tensor) -> None:
    """Record that a non-leaf `t` was detached in place, as a change that sends nodes recorded before it to their
    check of saved values (a new stamp), where its entry here refuses it."""
    stamp = last_change[0] = last_detach[0] = next(_stamps)
    key = id(t)
    detached_in_place[key] = (weakref.ref(t, lambda _, key=key: detached_in_place.pop(key, None)), stamp)


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
