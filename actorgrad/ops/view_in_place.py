"""The in-place view methods (squeeze_, unsqueeze_, transpose_, t_, swapaxes_, swapdims_): the tensor itself takes
the shape and strides of its view, as PyTorch's.

Its elements and memory stay what they were, so, as in PyTorch, its history gains the view op's node (a
non-leaf's grad_fn becomes SqueezeBackward..., with the old one as its edge), its version goes up, and a leaf that
requires grad (or a view of one) is refused while grad mode is on. Views made from it before keep their shapes and
their histories (they read the same memory). In no_grad mode nothing is recorded, but a view with a history takes a
new one read out of its base's, as PyTorch regenerates it: its node expected the old shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actorgrad.grad_mode import _grad_enabled
from actorgrad.ops.inplace_recording import (
    INVALIDATED_VIEWS,
    _check_grad_mode_view,
    _check_rebase,
    _invalidate_views,
    _move_history,
    read_out_of_base,
)
from actorgrad.ops.record import Rule
from actorgrad.ops.shape import SQUEEZE, SQUEEZE_DIM, SQUEEZE_DIMS, TRANSPOSE, UNSQUEEZE, squeeze, transpose, unsqueeze
from actorgrad.tensor import Tensor
from actorgrad.version_counter import bump_version, refuse_inference_change

__all__: list[str] = []


# The out-of-place view's rule -> the same gradient under the name PyTorch gives the in-place form's node.
_IN_PLACE_RULES = {
    rule: Rule(name, *rule.grads) for rule, name in (
        (TRANSPOSE, "TransposeBackward1"), (SQUEEZE, "SqueezeBackward3"), (SQUEEZE_DIM, "SqueezeBackward4"),
        (SQUEEZE_DIMS, "SqueezeBackward5"), (UNSQUEEZE, "UnsqueezeBackward1"),
    )
}
_T_RULE = Rule("TBackward1", *TRANSPOSE.grads)  # t_ runs transpose(0, 1)


def _in_place_view(name: str, view: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The method `name`: `view(self, ...)` made this tensor's own shape, strides and history."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        recorded = _grad_enabled.get() and self.requires_grad
        if recorded:
            _check_grad_mode_view(self)
            _check_rebase(self)
        refuse_inference_change(self)
        out = view(self, *args, **kwargs)
        reshaped_view = False
        if out is not self:
            self._data = out._data
            if recorded:
                node = out._grad_fn
                node._rule = _T_RULE if name == "t_" else _IN_PLACE_RULES[node._rule]
                _move_history(self, node)
            else:
                reshaped_view = self._grad_fn is not None and self._base is not None
        bump_version(self)
        _invalidate_views(self)
        if reshaped_view and self._grad_fn not in INVALIDATED_VIEWS:  # (a piece of a split is refused instead)
            token = _grad_enabled.set(True)  # recorded in no_grad and inference mode too
            try:
                read_out_of_base(self, self._base)
            finally:
                _grad_enabled.reset(token)
        return self

    method.__name__ = method.__qualname__ = name
    return method


def _t(self: Tensor) -> Tensor:
    if self.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return transpose(self, 0, -1)  # swaps nothing below 2 dims, but is recorded (TBackward1), as in PyTorch


METHODS: dict[str, Any] = {
    "squeeze_": _in_place_view("squeeze_", squeeze), "unsqueeze_": _in_place_view("unsqueeze_", unsqueeze),
    "transpose_": _in_place_view("transpose_", transpose), "swapaxes_": _in_place_view("swapaxes_", transpose),
    "swapdims_": _in_place_view("swapdims_", transpose), "t_": _in_place_view("t_", _t),
}
