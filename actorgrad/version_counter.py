"""Version counters: how many times a storage was changed in place, which a node that saved a tensor compares at
backward to refuse values changed since (PyTorch's "modified by an inplace operation")."""

from __future__ import annotations

import itertools
import weakref
from typing import TYPE_CHECKING, Any

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


# Views PyTorch makes with a creation mode other than the default (its CreationMeta), by id, as `detached_in_place`:
# NO_GRAD_MODE for a view made in no_grad mode, MULTI_OUTPUT_MODE for a piece of split, chunk or unbind made
# without a history (of a tensor that did not require grad), and a view made from either takes its mode. An in-place
# change through one that needs a gradient is refused, and so is its history once its base changed that way. A view
# made with grad mode on of a tensor that did not require grad has no history either, but the default mode: its
# history is read out of its base's after a change. (A piece with a history is known by its node,
# MULTI_OUTPUT_VIEWS.)
NO_GRAD_MODE, MULTI_OUTPUT_MODE = "no_grad", "multi_output"
creation_modes: dict[int, tuple[weakref.ref, str]] = {}


def _remember(table: dict, t: Tensor, value: Any) -> None:
    """`table[id(t)] = (a weak reference to t, value)`, the entry dropped when `t` dies (the reference, held in the
    entry, calls back then)."""
    key = id(t)
    table[key] = (weakref.ref(t, lambda _, key=key: table.pop(key, None)), value)


def mark_creation_mode(t: Tensor, mode: str) -> None:
    """Record that the view `t` was made in creation `mode` (NO_GRAD_MODE or MULTI_OUTPUT_MODE)."""
    _remember(creation_modes, t, mode)


def mark_detached(t: Tensor) -> None:
    """Record that a non-leaf `t` was detached in place, as a change that sends nodes recorded before it to their
    check of saved values (a new stamp), where its entry here refuses it."""
    stamp = last_change[0] = last_detach[0] = next(_stamps)
    _remember(detached_in_place, t, stamp)


def move_saved_versions(node: Any, old: VersionCounter, new: VersionCounter) -> None:
    """Make `node` check the values it saved under the counter `old` against `new`, from its current version: an
    in-place op's node saves its result (sigmoid_, exp_ ...), whose values were written into the changed tensor,
    so, as in PyTorch, a later change of that tensor makes the node refuse to run."""
    versions = list(node.versions)
    moved = {id(value) for value in versions[::2] if value._vc is old}  # a value may be saved for several inputs
    for i in range(0, len(versions), 2):
        if id(versions[i]) in moved:
            versions[i]._vc = new
            versions[i + 1] = new.value
    node.versions = tuple(versions)


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
