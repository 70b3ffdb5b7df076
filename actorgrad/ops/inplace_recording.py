"""How an in-place write is recorded: `write_in_place`, PyTorch's refusals, the rebased history, the refreshed views.
Every in-place op (actorgrad.ops.inplace, inplace_forms and the families with `_` forms) runs through it, so those
modules say only what to compute.

An in-place op writes its result into the tensor's own array, so every view of that storage sees it, and bumps
the storage's version counter, so a node that saved the old values refuses to run backward on the new ones.

When the op needs a gradient it rebases the tensor's history, as PyTorch does: the op is recorded out of place on
a stand-in for the tensor (its array, its grad_fn), and the node this makes becomes the tensor's grad_fn, with the
tensor's previous grad_fn as its first edge. The stand-in gets a copy of the array when the node saves it, since
the write would otherwise change what was saved. A leaf that requires grad, or a view of one, is refused (unless
grad mode is off, as optimizers run); so, as in PyTorch, are a view made in no_grad mode of a tensor that requires
grad (and a view made of that view), a piece of split, chunk or unbind, and a custom Function's output that is a
view of its input (or a view of either): rebasing such a view would bypass the node that made it.

A write through a view changes its base too, so, as in PyTorch, the base's history becomes a CopySlices node (the
base's old gradient path everywhere but the view's positions, the op's node there; the op's first edge reads those
positions out of the base's old history, bypassing the view's own node and any hooks on it), and every live view of the
base, the written one included, gets a fresh AsStridedBackward0 node reading its positions out of the base's new
history. The same refresh follows a write to a base that has live views.

What actorgrad treats as a view: an op's output whose array is a numpy view of an input's storage (reshape,
transpose, basic indexing, expand, squeeze ...). It shares the input's version counter; so does `detach()`.
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.devices import is_writeable
from actorgrad.grad_mode import _grad_enabled
from actorgrad.node import InputMetadata
from actorgrad.ops.indexing import KEPT_GRAD, on_device
from actorgrad.ops.inplace_messages import (
    BASE_CHANGED,
    LEAF,
    MULTI_OUTPUT,
    MULTI_OUTPUT_WITHOUT_HISTORY,
    NO_GRAD_OF_VIEW_TEMPLATE,
    NO_GRAD_TEMPLATE,
    NO_GRAD_VIEW_OF_VIEW,
    STALE_DTYPE_VIEW,
    VIEW_OF_LEAF,
)
from actorgrad.ops.joining import MULTI_OUTPUT_VIEWS
from actorgrad.ops.memory_overlap import (
    check_operands_shared,
    has_internal_overlap,
    one_per_place,
    positions_in,
    writeable_region,
)
from actorgrad.ops.operands import SCALAR_NAMES, category
from actorgrad.ops.record import Rule, record
from actorgrad.tensor import Tensor
from actorgrad.version_counter import (
    NO_GRAD_MODE,
    bump_version,
    creation_modes,
    move_saved_versions,
    refuse_inference_change,
)

# A base's history after a write through its view at `positions` (flat indices into the base).
VIEW_WRITE = Rule(
    "torch::autograd::CopySlices",
    KEPT_GRAD,
    (("positions",), lambda ops, g, positions: ops.index(ops.reshape(g, (-1,)), (), (positions,))),
    unhooked=("keep", "positions"),  # places in the base: PyTorch's CopySlices packs no tensor of its own
)


# The same through a view whose elements share places (an expand): the view's part from one element per place.
VIEW_WRITE_SHARED = Rule(
    "torch::autograd::CopySlices",
    KEPT_GRAD,
    (("positions", "chosen"), lambda ops, g, positions, chosen: ops.where(
        chosen, ops.index(ops.reshape(g, (-1,)), (), (positions,)), 0)),
    unhooked=("keep", "positions", "chosen"),
)


def _raise(ops: Any, g: Any, message: str) -> Any:
    raise RuntimeError(message)


# The history of a piece of a split, chunk or unbind, or of a custom Function's view output (or a view of either),
# after its storage changed in place: PyTorch refuses to use it, here its backward does (and an in-place change of
# it, see `_view_error`).
INVALIDATED = Rule("torch::autograd::Error", (("message",), _raise))
# Such a node -> the view's (error template, output number, node name) as PyTorch's errors name them.
INVALIDATED_VIEWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# A custom Function's node -> its outputs that are views (an input returned as is, a view made in forward), as
# output number -> the error template for changing one in place (MULTI_OUTPUT or CUSTOM_FUNCTION).
CUSTOM_FUNCTION_VIEWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# A view's history read out of its base's: its gradient goes back to its positions in the base.
AS_STRIDED = Rule(
    "AsStridedBackward0",
    (
        ("positions", "base_shape"),
        lambda ops, g, positions, base_shape: ops.reshape(
            ops.index_put_zeros(g, (math.prod(base_shape),), (), (positions,)), base_shape
        ),
    ),
    unhooked=("positions",),
)


def _requires_grad(value: Any) -> bool:
    return isinstance(value, Tensor) and value.requires_grad


def _differentiable(self: Tensor) -> bool:
    """Whether a write into `self` can take a gradient from what it writes: as in PyTorch, an integer or bool tensor
    stays out of the graph (`int_tensor.copy_(x)` with `x` requiring grad records nothing)."""
    return self._data.dtype.kind in "fc"


def _mode_template(view: Tensor) -> str | None:
    """The error template for a view made in a creation mode that PyTorch refuses to change with a gradient
    (version_counter.creation_modes), None for a view of the default mode."""
    marked = creation_modes.get(id(view))
    return None if marked is None else NO_GRAD_TEMPLATE if marked[1] == NO_GRAD_MODE else MULTI_OUTPUT_WITHOUT_HISTORY


def _check_grad_mode_view(self: Tensor) -> None:
    """Refuse an in-place change that needs a gradient (grad mode on) of a view made in no_grad mode or a piece of
    split made without a history (it has no history of its own), as PyTorch does, whether its base required grad
    then or not."""
    template = _mode_template(self) if self._grad_fn is None and self._base is not None else None
    if template is not None:
        raise RuntimeError(template.format(what="is being modified inplace"))


def _check_rebase(self: Tensor) -> None:
    """Refuse an in-place op that needs a gradient where PyTorch refuses it."""
    if self._grad_fn is None and self._requires_grad:
        raise RuntimeError(LEAF)
    base = self._base
    if base is None:
        return
    if base._grad_fn is None and base._requires_grad and self._data.dtype != base._data.dtype:
        raise RuntimeError(VIEW_OF_LEAF)  # before actorgrad's own refusal of a view as another dtype (complex_parts)
    error = _view_error(self, base._grad_fn, "is being modified inplace")
    if error is not None:
        raise error
    if _cut_from_base(self, base):
        _, nr, name = _view_name(self)
        raise RuntimeError(NO_GRAD_VIEW_OF_VIEW.format(nr=nr, name=name))
    if base._grad_fn is None and base._requires_grad:
        raise RuntimeError(VIEW_OF_LEAF)


def _cut_from_base(view: Tensor, base: Tensor) -> bool:
    """Whether `view` was made (with grad mode on) from a view taken in no_grad mode of its base, which requires
    grad, maybe through further views: its history does not reach the base's, so a write could not either;
    PyTorch refuses it."""
    return view._grad_fn is not None and base.requires_grad and _mode_template(view) is NO_GRAD_TEMPLATE


def _view_error(view: Tensor, base_node: Any, what: str) -> RuntimeError | None:
    """PyTorch's error for `view` when its history from its base (whose node is `base_node`) runs through a
    piece of a split, chunk or unbind or through a custom Function's view output, naming `view`'s own node as it
    was made; None for any other view."""
    template = _view_template(view, base_node)
    if template is None:
        return None
    _, nr, name = _view_name(view)
    return RuntimeError(template.format(nr=nr, name=name, what=what))


def _view_template(view: Tensor, base_node: Any) -> str | None:
    """The template of `_view_error`'s error, found walking `view`'s history back to its base's node."""
    node, nr = view._grad_fn, view._output_nr
    while node is not None and node is not base_node:
        invalidated = INVALIDATED_VIEWS.get(node)
        if invalidated is not None:
            return invalidated[0]
        if node in MULTI_OUTPUT_VIEWS:
            return MULTI_OUTPUT
        views = CUSTOM_FUNCTION_VIEWS.get(node)
        if views is not None and nr in views:
            return views[nr]
        edges = node.next_functions
        node, nr = edges[0] if edges else (None, 0)
    return None


def _view_name(view: Tensor) -> tuple[str | None, int, str]:
    """The error template (once its history was invalidated), output number and node name (without
    `Backward0`) of `view` in PyTorch's graph."""
    fn = view._grad_fn
    return INVALIDATED_VIEWS.get(fn) or (None, view._output_nr, re.sub(r"Backward[0-9]*$", "", fn.name()))


def _no_grad_template(view: Tensor, base: Tensor) -> str | None:
    """The error template for a view taken in no_grad mode of `base`, which requires grad, or made from such a view
    (None for any other): PyTorch refuses its history once its storage changed, as a write could not reach it."""
    if not base.requires_grad or view._requires_grad:  # a view that is a leaf of its own (a Parameter) has its own
        return None
    if view._grad_fn is None:  # None for a view made in grad mode before its base required grad
        return _mode_template(view)
    return NO_GRAD_OF_VIEW_TEMPLATE if _cut_from_base(view, base) else None


def _invalidate(view: Tensor, base_node: Any, no_grad_views: bool = True) -> bool:
    """After a change of its storage, give `view` a history that raises if PyTorch refuses to use it now (see
    `_view_template`, and `_no_grad_template` if `no_grad_views`; `base_node`: its base's node before the change);
    whether it did."""
    fresh = view._grad_fn is None
    template = None if fresh else _view_template(view, base_node)
    if template is None:
        template = _no_grad_template(view, view._base) if no_grad_views else None
        if template is None:
            return False
    _, nr, name = (None, 0, "") if fresh else _view_name(view)
    message = template.format(nr=nr, name=name, what=BASE_CHANGED)
    # a view without a history raises from its base's edge, so that a backward pass reaches the raising node
    read = record(INVALIDATED, np.empty_like(view._data), (view._base if fresh else view,), message=message)
    INVALIDATED_VIEWS[read._grad_fn] = (template, nr, name)
    _move_history(view, read._grad_fn)
    return True


def _invalidate_views(self: Tensor) -> None:
    """`_invalidate` each view of `self`'s storage after a change of it, as PyTorch refuses those views' histories
    at their next use: `_refresh_views` does it for a recorded change of their base; this is for the rest (a change
    in no_grad mode, of a tensor that does not require grad, of a `detach()` of the base). Views taken in no_grad
    mode are refused after a change in grad mode only: PyTorch refuses them after any change, but only while their
    base requires grad, which a history installed now could not follow."""
    views = self._vc.views if self._vc is not None else None
    if not views:
        return
    walk = MULTI_OUTPUT_VIEWS or CUSTOM_FUNCTION_VIEWS
    no_grad_views = _grad_enabled.get()
    if not (walk or no_grad_views):
        return
    token = _grad_enabled.set(True)  # the raising node is recorded even when the write ran in no_grad mode
    try:
        for view in list(views):
            if view._base is None:  # set_ pointed it at other memory: no longer a view
                continue
            fn = view._grad_fn
            if fn is None:  # a view taken in no_grad mode
                candidate = no_grad_views
            else:  # a view with a history, not refused yet
                candidate = fn not in INVALIDATED_VIEWS and (
                    walk or (no_grad_views and _no_grad_template(view, view._base) is not None)
                )
            if candidate:
                _invalidate(view, view._base._grad_fn, no_grad_views)
    finally:
        _grad_enabled.reset(token)


def _stand_in(self: Tensor, copy: bool, positions: np.ndarray | None = None) -> Tensor:
    """A tensor with `self`'s values and history, for recording the op out of place. For a view (`positions`: its
    flat indices in its base) that history is read afresh out of its base's, as PyTorch's CopySlices hands the op
    the view's part of the base's gradient: the view's own node, where hooks registered on the view wait, is not
    on the write's gradient path, so they do not fire for it."""
    data = self._data.copy() if copy else self._data
    if positions is None:
        return Tensor(data, grad_fn=self._grad_fn, output_nr=self._output_nr, device=self._device)
    base = self._base
    read = record(AS_STRIDED, np.empty_like(data), (base,), positions=on_device(base, positions),
                  base_shape=base.shape)
    return Tensor(data, grad_fn=read._grad_fn, device=self._device)


def _view_positions(self: Tensor) -> np.ndarray | None:
    """The flat indices of a view's elements in its base (None for a tensor that is no view)."""
    return None if self._base is None else positions_in(self._data, self._base._data)


def _store(self: Tensor, index: Any, value: Any, overlapping: bool = False) -> None:
    """`self._data[index] = value` (index: Ellipsis or a basic index). `overlapping`: the op may write elements that
    share memory (fill_ and zero_ of an expanded tensor, as PyTorch's); others are refused there."""
    refuse_inference_change(self)  # before anything is written
    try:
        self._data[index] = value
        return
    except ValueError:
        if is_writeable(self._data):
            raise
    region = self._data[index] if index is Ellipsis else self._data[index + (Ellipsis,)]
    writeable_region(region, overlapping)[...] = value  # numpy's read-only view of an expand


def _rebase(self: Tensor, result: Tensor, positions: np.ndarray | None, kept: np.ndarray | None = None) -> None:
    """Make the node that recorded `result` the history of `self`, whose values it now holds; through a view,
    the base's history takes the node in at the view's `positions` (`kept`: where the op kept the view's old
    values, None if it wrote them all). Then every view of the base reads its own."""
    node = result._grad_fn
    if node is None:
        return
    node.input_metadata = (InputMetadata(self._data.shape, self._data.dtype, self._device),)
    base = self._base
    if base is None:
        old = self._grad_fn
        _move_history(self, node)
        _refresh_views(self, old)
        return
    keep = np.ones(base._data.shape, np.bool_)
    keep.reshape(-1)[positions.ravel()] = False
    inputs = (_stand_in(base, False), Tensor(self._data, grad_fn=node, device=self._device))
    params = dict(keep=on_device(base, keep), positions=on_device(base, positions))
    if has_internal_overlap(self._data):  # an expand: its elements share places in the base
        params["chosen"] = on_device(base, one_per_place(positions, kept))
    merged = record(VIEW_WRITE_SHARED if "chosen" in params else VIEW_WRITE, np.empty_like(base._data), inputs,
                    **params)
    old = base._grad_fn
    _move_history(base, merged._grad_fn)
    _refresh_views(base, old)


def rebase_view(view: Tensor, node: Any) -> None:
    """Take in a change a custom Function's forward made to `view` in place (marked dirty; `node` is the Function's,
    `view` its only output): the base's history takes `node` in at the view's positions and the view's is read out
    of the base's, as after an in-place op through a view."""
    _check_rebase(view)
    _rebase(view, Tensor(view._data, grad_fn=node, device=view._device), _view_positions(view))


def _refresh_views(base: Tensor, old: Any) -> None:
    """Give every live view of `base` a history read out of the base's new one (PyTorch regenerates a view's
    grad_fn when its base changed); `old` is the base's node before. A view PyTorch refuses to regenerate (see
    `_view_template`) gets one that raises PyTorch's error instead."""
    views = base._vc.views if base._vc is not None else None
    for view in list(views or ()):
        if view._base is base:
            if _invalidate(view, old):
                continue
            if view._data.dtype != base._data.dtype:  # made without a history by view_as_real or the like (see
                # actorgrad.ops.complex_parts): its elements have no positions in the base to read a history from
                read = record(INVALIDATED, np.empty_like(view._data), (view,), message=STALE_DTYPE_VIEW)
                _move_history(view, read._grad_fn)
                continue
            read_out_of_base(view, base)


def read_out_of_base(view: Tensor, base: Tensor) -> None:
    """Give `view` a history that reads its positions out of `base`'s (PyTorch's regenerated AsStridedBackward0)."""
    positions = positions_in(view._data, base._data)
    read = record(AS_STRIDED, np.empty_like(view._data), (base,), positions=on_device(base, positions),
                  base_shape=base.shape)
    _move_history(view, read._grad_fn)


def _move_history(t: Tensor, node: Any) -> None:
    """Make `node` (output 0) `t`'s grad_fn; a retained gradient is now taken from it."""
    old = t._grad_fn
    retained = old.retained if old is not None else None
    if retained is not None and t._output_nr in retained:
        node.retained = {0: retained.pop(t._output_nr)}
    t._grad_fn, t._output_nr = node, 0


def write_in_place(
    self: Tensor, compute: Callable[[Tensor], Tensor], operands: tuple, saves_self: bool, overlapping: bool = False,
    sharing: str = "partly",
) -> Tensor:
    """Run `compute` (the op out of place) and write its result into `self`, rebasing `self`'s history when the
    op needs a gradient. `saves_self`: the recorded node keeps `self`'s values, which must be copied first;
    `overlapping`: the op may write an expanded tensor's repeated elements (its result is the same at each).
    `sharing`: which operands lying in self's memory PyTorch refuses: those lying there partly ("partly", its
    elementwise kernels), any ("any": scatter_, index_add_, index_copy_), none ("none": a fill value, read as a
    number)."""
    records = _grad_enabled.get() and (
        self.requires_grad or (any(_requires_grad(o) for o in operands) and _differentiable(self))
    )
    if records:
        _check_grad_mode_view(self)
        _check_rebase(self)
    if operands and sharing != "none":  # an operand may lie in self's memory (x += x[0])
        check_operands_shared(self, operands, sharing == "any")
    if records:
        positions = _view_positions(self)
        result = compute(_stand_in(self, saves_self, positions))
    else:
        result = compute(self)
    data, target = result._data, self._data
    if data.shape != target.shape:
        raise RuntimeError(
            f"output with shape {list(target.shape)} doesn't match the broadcast shape {list(data.shape)}"
        )
    if category(data.dtype) > category(target.dtype):
        raise RuntimeError(
            f"result type {SCALAR_NAMES[data.dtype]} can't be cast to the desired output type "
            f"{SCALAR_NAMES[target.dtype]}"
        )
    _store(self, Ellipsis, data, overlapping)
    bump_version(self)
    if records:
        if result._vc is not None:  # its node saved it, as `self` now: a later change of `self` is refused there
            move_saved_versions(result._grad_fn, result._vc, self._vc)
        _rebase(self, result, positions)
    _invalidate_views(self)
    return self

