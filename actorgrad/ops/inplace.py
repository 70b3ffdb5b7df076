"""In-place ops (add_, sub_, mul_, div_, relu_, exp_, sigmoid_, tanh_, abs_, neg_, sign_, sgn_, zero_, fill_, clamp_,
copy_, `tensor[index] = value`, `+=` ...) and their autograd.

Each op is its out-of-place computation handed to `write_in_place` (actorgrad.ops.inplace_recording), which
writes the result into the tensor, bumps its version and rebases its history; `tensor[index] = value` does those
steps itself, since it writes only the indexed positions: as PyTorch's, it records CopySlices where the index makes a
view of the tensor to write through, else CopyBackwards (IndexPutBackward0 for an advanced index).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.devices import is_writeable
from actorgrad.grad_mode import _grad_enabled
from actorgrad.ops.aliases import TRUE_DIVISION, divide
from actorgrad.ops.arithmetic import add, mul, sub
from actorgrad.ops.arithmetic_unary import exp, neg, relu, sigmoid, tanh
from actorgrad.ops.casts import legacy_type
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.index_parsing import BYTE_FILL, filled_mask, keeps_whole, parse_index
from actorgrad.ops.indexing import KEPT_GRAD, fill_value, masked_filled, on_device, placed_index
from actorgrad.ops.inplace_messages import NO_GRAD_VIEW, NO_GRAD_VIEW_OF_VIEW, VIEW_OF_LEAF
from actorgrad.ops.inplace_recording import (
    _check_grad_mode_view,
    _check_rebase,
    _differentiable,
    _invalidate_views,
    _rebase,
    _requires_grad,
    _stand_in,
    _store,
    _view_positions,
    _view_template,
    write_in_place,
)
from actorgrad.ops.memory_overlap import (
    check_partly_shared,
    has_internal_overlap,
    same_storage,
    spread_over_repeats,
    writeable_region,
)
from actorgrad.ops.operands import SCALAR_NAMES, broadcast_error, checked_int, fitted_number, type_name
from actorgrad.ops.record import Rule, record, zeros_grad
from actorgrad.ops.selection import clamp
from actorgrad.ops.shape import _expanded_shape
from actorgrad.ops.unary import abs, sgn, sign
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn
from actorgrad.version_counter import bump_version, refuse_inference_change

__all__: list[str] = []


def _written_grad(ops: Any, g: Any, basic: tuple, advanced: tuple | None, value_shape: tuple) -> Any:
    """The gradient of the value written by `self[index] = value`: the output's gradient at the written
    positions, summed back over the value's broadcasting (its leading 1s, which the write drops, put back)."""
    return ops.reshape(ops.sum_to(ops.index(g, basic, advanced), _without_leading_ones(value_shape)), value_shape)


def _without_leading_ones(shape: tuple) -> tuple:
    """PyTorch drops a written value's leading size-1 dims, so `y[1] = ones(1)` writes a (1,) value at a () place."""
    lead = 0
    while lead < len(shape) and shape[lead] == 1:
        lead += 1
    return shape[lead:]


ZERO = Rule("ZeroBackward0", ((), zeros_grad))
FILL_NUMBER = Rule("FillBackward2", ((), zeros_grad))
FILL_TENSOR = Rule("FillBackward3", ((), zeros_grad), ((), None), broadcasts=True)
COPY = Rule("torch::autograd::CopyBackwards", ((), zeros_grad), ((), None), broadcasts=True)
_SETITEM_GRADS = (KEPT_GRAD, (("basic", "advanced", "value_shape"), _written_grad))
_PLACES = ("keep", "basic", "advanced")  # where a write went: PyTorch's nodes keep sizes and offsets, no tensor
COPY_SLICES = Rule("torch::autograd::CopySlices", *_SETITEM_GRADS, unhooked=_PLACES)
COPY_WHOLE = Rule("torch::autograd::CopyBackwards", *_SETITEM_GRADS, unhooked=_PLACES)  # `x[...] = value`
FILL_WHOLE = Rule("FillBackward3", *_SETITEM_GRADS, unhooked=_PLACES)  # the same with a zero-dim value (or a number)
INDEX_PUT = Rule("IndexPutBackward0", *_SETITEM_GRADS, unhooked=("keep",))  # PyTorch's packs only the indices
EXPANDED_WRITE = (
    "Use of {op} on expanded tensors is deprecated. Please clone() the tensor before performing this operation. This "
    "also applies to advanced indexing e.g. tensor{example}"
)


# -- arithmetic ----------------------------------------------------------------------------------------------------
def add_(self: Tensor, other: Any, alpha: Any = 1) -> Tensor:
    return write_in_place(self, lambda s: add(s, other, alpha=alpha), (other,), False)


def sub_(self: Tensor, other: Any, alpha: Any = 1) -> Tensor:
    return write_in_place(self, lambda s: sub(s, other, alpha=alpha), (other,), False)


def mul_(self: Tensor, other: Any) -> Tensor:
    return write_in_place(self, lambda s: mul(s, other), (other,), _requires_grad(other))


def div_(self: Tensor, other: Any, *, rounding_mode: Any = TRUE_DIVISION) -> Tensor:
    return write_in_place(self, lambda s: divide(s, other, rounding_mode=rounding_mode), (other,),
                          _requires_grad(other))


def clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
    return write_in_place(self, lambda s: clamp(s, min, max), (min, max), True)


def _unary_inplace(op: Callable[[Tensor], Tensor], saves_self: bool = False) -> Callable[[Tensor], Tensor]:
    """The in-place form of a unary op; `saves_self`: its node keeps the input's values (abs), which the write
    would change, rather than its result or nothing."""
    return lambda self: write_in_place(self, op, (), saves_self)


def abs_(self: Tensor) -> Tensor:
    """|x| written in place; refused for a complex tensor, as in PyTorch, since its absolute values are real."""
    if self._data.dtype.kind == "c":
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return write_in_place(self, abs, (), True)


def sgn_(self: Tensor) -> Tensor:
    """sgn written in place; a complex tensor's node keeps the input's values, as its gradient divides by |z|."""
    return write_in_place(self, sgn, (), self._data.dtype.kind == "c")


# -- filling and copying -------------------------------------------------------------------------------------------
def zero_(self: Tensor) -> Tensor:
    """Zeros written in place; as in PyTorch, this (and fill_ with a number) may fill an expanded tensor."""
    return write_in_place(self, lambda s: record(ZERO, np.zeros_like(s._data), (s,)), (), False, True)


def fill_(self: Tensor, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        fill = fill_value(value, self._data.dtype)[()]  # checked before anything is written
        return write_in_place(self, lambda s: record(FILL_NUMBER, np.full_like(s._data, fill), (s,)), (), False,
                              True)
    if value.ndim:
        raise RuntimeError(
            f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions."
        )
    if value._device is not self._device:  # from another device, as PyTorch: its gradient goes back there
        value = value.to(self._device)
    return write_in_place(
        self, lambda s: record(FILL_TENSOR, np.full_like(s._data, value._data), (s, value)), (value,), False,
        sharing="none",
    )


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    return len(shape) <= len(target) and all(n in (1, m) for n, m in zip(reversed(shape), reversed(target)))


def masked_fill_(self: Tensor, mask: Tensor, value: Any) -> Tensor:
    """`value` written where `mask` (broadcasting to this tensor's shape) is True; into an expanded tensor, with
    PyTorch's deprecation warning, at each place in memory that is masked at any of its repeats."""
    overlapping = has_internal_overlap(self._data)
    if overlapping and isinstance(mask, Tensor) and mask.dtype == np.bool_ and _broadcasts_to(mask.shape, self.shape):
        warn(EXPANDED_WRITE.format(op="masked_fill_", example="[mask] = scalar"))
        mask = Tensor(spread_over_repeats(mask._data, self._data), device=mask._device)

    def fill(s: Tensor) -> Tensor:
        return masked_filled(s, mask, value, in_place=True)

    return write_in_place(self, fill, (value,), False, overlapping, "none")


def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """`src`'s values (broadcast to this tensor's shape, cast to its dtype) written into this tensor; a number
    fills it, as PyTorch's copy_ takes one as a 0-d tensor (a complex number's real part into a real tensor)."""
    if non_blocking is not False and non_blocking is not True:
        raise not_bool("copy_", "non_blocking", non_blocking)
    if not isinstance(src, Tensor):
        src = _number_source(src, self._data.dtype)
    if src._device is not self._device:  # a copy across devices; its gradient goes back through ToCopyBackward0
        src = src.to(self._device)

    def compute(s: Tensor) -> Tensor:
        try:
            data = s._device.xp.broadcast_to(src._data, s.shape).astype(s.dtype)  # astype copies
        except ValueError:
            try:
                shape = np.broadcast_shapes(s.shape, src.shape)
            except ValueError:
                raise broadcast_error("copy_", s.shape, src.shape) from None
            raise RuntimeError(  # src broadcasts with this tensor but would make it bigger
                f"output with shape {list(s.shape)} doesn't match the broadcast shape {list(shape)}"
            ) from None
        return record(COPY, data, (s, src))

    return write_in_place(self, compute, (src,), False)


def _number_source(value: Any, dtype: np.dtype) -> Tensor:
    """copy_'s number as the 0-d tensor PyTorch makes of it (a Python int int64, a float float64), else its error."""
    if not isinstance(value, bool | int | float | complex | np.number | np.bool_):
        raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not {type_name(value)}")
    if isinstance(value, int) and not isinstance(value, bool):
        checked_int(value)
    elif isinstance(value, complex | np.complexfloating) and dtype.kind != "c":
        value = value.real
    return Tensor(np.asarray(value))


# -- tensor[index] = value -----------------------------------------------------------------------------------------
def setitem(self: Tensor, index: Any, value: Any) -> None:
    """Write `value` (a number or a tensor broadcasting to the indexed shape) at `index`, any index kind that
    `tensor[index]` takes; with a gradient, the written positions get none from the old values."""
    basic, advanced, _ = parse_index(index, self._data.shape)
    placed = placed_index(self, advanced)
    region = self._data[basic]
    shape = (region if advanced is None else region[placed]).shape
    given = value
    puts = advanced is not None and index.__class__ is not bool  # PyTorch writes x[True] = v into x[None]
    fill_mask = filled_mask(index, value) if puts else None
    if fill_mask == np.uint8:
        raise RuntimeError(BYTE_FILL)
    if isinstance(value, Tensor):
        if value._device is not self._device:
            value = value.to(self._device)  # as PyTorch, a tensor from another device is copied over
        values = value._data
        # a value in self's memory (a view, or a `.data` alias) is refused, unless zero-dim and filled in, which
        # PyTorch reads as a number
        if (values.ndim or (puts and fill_mask is None)) and (
            (self._vc is not None and value._vc is self._vc) or same_storage(self._data, values)
        ):
            check_partly_shared(self._data[basic + (Ellipsis,)], values, puts)  # an array even for ints alone
    else:
        values = _written_number(self, value)
    written = values.reshape(_without_leading_ones(values.shape))
    try:
        np.broadcast_to(written, shape)
    except ValueError:
        if advanced is None:  # PyTorch copies into the view `self[index]`: its expand words the refusal
            _expanded_shape(written.shape, shape)
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(written.shape)} cannot be broadcast to indexing result of "
            f"shape {list(shape)}"
        ) from None
    if puts and values.dtype != self._data.dtype:
        _check_put_dtype(self, given, fill_mask)
    records = _grad_enabled.get() and (self.requires_grad or (_requires_grad(value) and _differentiable(self)))
    if records:
        view = _index_view(basic, self._data.shape)
        try:
            _check_grad_mode_view(self)
        except RuntimeError as error:
            raise _through_view_error(self, view, error) from None
        if view is not None and self._grad_fn is None and self._requires_grad:
            raise RuntimeError(VIEW_OF_LEAF)  # PyTorch writes through self[index], a view of the leaf
        try:
            _check_rebase(self)
        except RuntimeError as error:
            raise _through_view_error(self, view, error) from None
    if advanced is None:
        _store(self, basic, written)
    else:
        _store_advanced(self, basic, placed, written, fill_mask is not None)
    bump_version(self)
    if not records:
        _invalidate_views(self)
        return
    keep = np.ones(self._data.shape, np.bool_)
    if advanced is None:
        keep[basic] = False
    else:
        keep[basic][advanced] = False
    if view is not None:
        rule = COPY_SLICES
    elif advanced is not None:
        rule = INDEX_PUT
    else:  # PyTorch's copy_ of a zero-dim value into more dims is a fill_
        rule = FILL_WHOLE if not values.ndim and self._data.ndim else COPY_WHOLE
    positions = _view_positions(self)
    written_value = value if isinstance(value, Tensor) else Tensor(values, device=self._device)
    inputs = (_stand_in(self, False, positions), written_value)
    params = dict(keep=on_device(self, keep), basic=basic, advanced=placed, value_shape=values.shape)
    _rebase(self, record(rule, np.empty_like(self._data), inputs, **params), positions, keep)
    _invalidate_views(self)


def _check_put_dtype(self: Tensor, value: Tensor, fill_mask: np.dtype | None) -> None:
    """PyTorch's index_put_ writes only a value of self's dtype, unless it fills a mask (see `filled_mask`)."""
    if fill_mask is not None:
        return
    raise RuntimeError(
        f"Index put requires the source and destination dtypes match, got {SCALAR_NAMES[self._data.dtype]} for the "
        f"destination and {SCALAR_NAMES[value._data.dtype]} for the source."
    )


def _written_number(self: Tensor, value: Any) -> Any:
    """`value` as PyTorch stores a number written by `self[index] = value`: a Python number, a numpy integer or
    a numpy subclass of float or complex (float64, complex128), checked to fit (int8[0] = 1000 raises); nothing
    else (no list, array or other numpy scalar)."""
    if isinstance(value, np.integer):
        value = int(value)
    if isinstance(value, int | float | complex):
        if value.__class__ is int and not -(1 << 63) <= value < 1 << 63:
            raise ValueError("Overflow when unpacking long long")
        return on_device(self, fitted_number(value, self._data.dtype))
    kind = type(value)
    name = f"numpy.{kind.__name__}" if kind.__module__ == "numpy" else kind.__name__
    raise TypeError(f"can't assign a {name} to a {legacy_type(self)}")


def _index_view(basic: tuple, shape: tuple) -> str | None:
    """The view of self that PyTorch writes `self[index] = value` through, named by its last op (Select, Slice,
    Unsqueeze), or None where the index's basic part keeps self whole (Ellipsis, whole slices, an advanced index
    alone), so the write goes into self itself. That decides the write's node (CopySlices through a view, else
    CopyBackwards or IndexPutBackward0) and how its refusals read."""
    name, dim = None, 0
    for entry in basic:
        if entry is None:
            name = "Unsqueeze"
            continue
        if isinstance(entry, int):
            name = "Select"
        elif not keeps_whole(entry, shape[dim]):
            name = "Slice"
        dim += 1
    return name


def _through_view_error(self: Tensor, view: str | None, error: RuntimeError) -> RuntimeError:
    """`error`, self's refusal of an in-place change, as PyTorch words it for the `view` of self that a write
    `self[index] = value` goes through: a view of a view made in no_grad mode, or of a piece of split ..."""
    if view is None:
        return error
    if str(error) == NO_GRAD_VIEW:  # the view has a history (a view of a view) only if self requires grad
        return RuntimeError(NO_GRAD_VIEW_OF_VIEW.format(nr=0, name=view)) if self.requires_grad else error
    template = None if self._base is None else _view_template(self, self._base._grad_fn)
    if template is None:
        return error
    return RuntimeError(template.format(nr=0, name=view, what="is being modified inplace"))


def _store_advanced(
    self: Tensor, basic: tuple, advanced: tuple, values: np.ndarray, fills_mask: bool
) -> None:
    """`self[basic][advanced] = values`; into an expanded tensor's repeated elements with PyTorch's deprecation
    warnings (`fills_mask`: PyTorch writes this one by masked_fill_, which warns too)."""
    refuse_inference_change(self)  # before anything is written
    region = self._data[basic]
    if not is_writeable(region):
        if has_internal_overlap(region):
            warn(EXPANDED_WRITE.format(op="index_put_", example="[indices] = tensor"))
            if fills_mask:
                warn(EXPANDED_WRITE.format(op="masked_fill_", example="[mask] = scalar"))
        region = writeable_region(region, True)
    region[advanced] = values


METHODS = {
    "add_": add_, "sub_": sub_, "mul_": mul_, "div_": div_, "clamp_": clamp_, "clip_": clamp_,
    "relu_": _unary_inplace(relu), "exp_": _unary_inplace(exp), "sigmoid_": _unary_inplace(sigmoid),
    "tanh_": _unary_inplace(tanh), "abs_": abs_, "absolute_": abs_,
    "neg_": _unary_inplace(neg), "negative_": _unary_inplace(neg), "sign_": _unary_inplace(sign),
    "sgn_": sgn_,
    "zero_": zero_, "fill_": fill_, "masked_fill_": masked_fill_, "copy_": copy_, "__setitem__": setitem,
}
