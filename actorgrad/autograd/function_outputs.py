"""How a custom Function's forward results become its node's: outputs wrapped with the node as their history
(inputs returned as is, views, tensors marked dirty), and saved tensors handed to the saved-tensor hooks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actorgrad.accumulate_grad import gradient_edge
from actorgrad.grad_mode import no_grad
from actorgrad.ops.inplace_messages import CUSTOM_FUNCTION, MULTI_OUTPUT
from actorgrad.ops.inplace_recording import CUSTOM_FUNCTION_VIEWS, rebase_view
from actorgrad.ops.record import share_if_view
from actorgrad.saved_tensors import INPUT, Packed, packing_node
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn
from actorgrad.version_counter import bump_version

DIRTY_VIEW = (
    "If your Function modifies inplace an input that is a view of another Tensor, your Function cannot return more "
    "than one Tensor. This is not supported by the current autograd engine. You should either make sure the input is "
    "not a view (using .clone() for example) or make your Function only return one Tensor (potentially splitting it "
    "into two Functions: one doing the inplace that returns a single Tensor and a second one that does the other "
    "operations). You can ask on the forum https://discuss.pytorch.org/ if you need help to do this change."
)


def pack_function_saved(ctx: Any, outputs: tuple, hooks: tuple[Callable, Callable]) -> None:
    """Hand what forward saved to the saved-tensor hooks in force (as PyTorch does for save_for_backward), keeping
    only what `pack` returns; `saved_tensors` unpacks it. An unpacked output has this node as its history, an
    unpacked input its own gradient edge. Packed values are not checked for in-place changes, as in PyTorch."""
    pack, unpack = hooks
    token = packing_node.set((ctx, outputs[0]))
    try:
        with no_grad():
            ctx._saved = tuple(
                None if t is None else Packed(pack(t), unpack, INPUT, gradient_edge(t) if nr is None else (ctx, nr),
                                              ctx.device)
                for t, nr in zip(ctx._saved, ctx._saved_output_nrs)
            )
    finally:
        packing_node.reset(token)
    ctx._saved_versions = ()
    ctx._packed = True


DIRTY_NOT_RETURNED = (
    "Some elements marked as dirty during the forward method were not returned as output. The inputs that are "
    "modified inplace must all be outputs of the Function."
)


def take_dirty(ctx: Any, args: tuple, outputs: tuple) -> None:
    """Count the change to each tensor marked dirty (PyTorch bumps their versions once more when forward returns),
    and refuse a dirty tensor forward did not return, whose history could not be rebased."""
    for t in ctx._dirty:
        if not any(t is a for a in args):
            warn("ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have been "
                 "mutated should be passed to ctx.mark_dirty().")
        bump_version(t)
    if not all(any(t is o for o in outputs) for t in ctx._dirty):
        raise RuntimeError(DIRTY_NOT_RETURNED)


def alias_input(ctx: Any, output: Any, args: tuple) -> Any:
    """For a Function that records nothing: an output that is an input returned as is, as a new tensor without
    history on its data, sharing its version counter, as PyTorch returns `input.detach()` for it. An input marked
    dirty comes back as itself, unless it requires grad (under no_grad), as in PyTorch."""
    if isinstance(output, Tensor) and any(output is a for a in args):
        if output.requires_grad or not any(output is t for t in ctx._dirty):
            return output.detach()
    return output


def wrap_output(ctx: Any, output: Any, k: int, args: tuple) -> Any:
    """Output k as a tensor whose history is the node: a tensor marked dirty is rebased in place (through its
    base, for a view); an input returned as is becomes a view of it (a new tensor on its data, sharing its version
    counter). Outputs marked non-differentiable, and those of a dtype that cannot have gradients (integers, bools),
    get no history."""
    if not isinstance(output, Tensor):
        return output
    dirty = any(output is t for t in ctx._dirty)
    differentiable = output.dtype.kind in "fc" and not any(output is t for t in ctx._non_differentiable)
    if dirty:
        if output._grad_fn is None and output._requires_grad:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        if output._base is not None and differentiable:
            if len(ctx.input_metadata) > 1:
                raise RuntimeError(DIRTY_VIEW)
            rebase_view(output, ctx)
            return output
    elif any(output is a for a in args):
        if not differentiable:
            return output.detach()
        view = Tensor(output._data, device=output._device)
        share_if_view(view, (output,))
        output = view
    if not differentiable:
        output._grad_fn = None
        return output
    old = output._grad_fn
    if dirty and old is not None and old.retained is not None and output._output_nr in old.retained:
        ctx.retained = ctx.retained or {}  # retain_grad() follows the tensor to its new history, as in PyTorch
        ctx.retained[k] = old.retained.pop(output._output_nr)
    output._grad_fn = ctx
    output._output_nr = k
    return output


def note_views(ctx: Any, outputs: tuple) -> None:
    """Tell the in-place ops which outputs with this node as history are views (an input returned as is, a view
    made in forward, not one marked dirty): as in PyTorch they refuse to change those (or views of them), which
    would bypass this node's backward, with PyTorch's error for a function returning several views when it has
    more than one differentiable output."""
    ours = [k for k, o in enumerate(outputs) if isinstance(o, Tensor) and o._grad_fn is ctx]
    views = [k for k in ours if outputs[k]._base is not None and not any(outputs[k] is t for t in ctx._dirty)]
    if views:
        CUSTOM_FUNCTION_VIEWS[ctx] = dict.fromkeys(views, MULTI_OUTPUT if len(ours) > 1 else CUSTOM_FUNCTION)
