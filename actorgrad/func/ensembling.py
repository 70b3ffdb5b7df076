"""torch.func's helpers around the transforms: `stack_module_state` (the parameters and buffers of M models of one
class stacked along a new leading dim, for ensembling with vmap and functional_call), `replace_all_batch_norm_modules_`
(BatchNorm without running statistics, which vmap cannot update per example) and `functionalize`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from actorgrad.func.pytree import tree_flatten, tree_unflatten
from actorgrad.nn.module import Module
from actorgrad.nn.normalization import _BatchNorm, _InstanceNorm
from actorgrad.ops.stacking import stack
from actorgrad.tensor import Tensor

__all__ = ["functionalize", "replace_all_batch_norm_modules_", "stack_module_state"]

REMOVE_OPTIONS = (
    "Valid options are:\n"
    "     remove='mutations': all inplace and out= operators will be removed from the program, and replaced with "
    "their out-of-place equivalents.\n"
    "     remove='mutations_and_views': In addition to the above, all aliasing operators {view} will be replaced "
    "with their non-aliasing counterparts, {view}_copy.\n"
)


def _stacked_leaf(tensors: tuple[Tensor, ...], name: str) -> Tensor:
    requires_grad = tensors[0].requires_grad
    if any(t.requires_grad != requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    return stack(tensors).detach().requires_grad_(requires_grad)


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """(params, buffers): each of the models' parameters and buffers stacked along a new dim 0, by name. The
    stacked parameters are new leaves (an optimizer can hold them), unrelated to the models' own."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if len({type(m) for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    buffers = {k: stack(tuple(b[k] for b in all_buffers)) for k in all_buffers[0]}
    return params, buffers


def replace_all_batch_norm_modules_(root: Module) -> Module:
    """Every BatchNorm in `root` made to keep no running statistics (its running_mean, running_var and
    num_batches_tracked None, track_running_stats False), in place: it then always normalizes with the batch's."""
    for module in root.modules():
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """`func` run on copies of its tensor inputs, whose changes are copied back into the inputs at the end.

    PyTorch's functionalize rewrites a program's in-place ops and views as out-of-place ones for tracing
    compilers; run eagerly, its results and its inputs' final values are func's, its outputs are new tensors
    (never an input itself), and an input func changes takes the change once func returns. actorgrad traces
    nothing, so this keeps exactly that observable behaviour (the copies are recorded, so gradients flow back to
    the inputs)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           + REMOVE_OPTIONS)

    @functools.wraps(func)
    def functionalized(*args: Any, **kwargs: Any) -> Any:
        leaves, spec = tree_flatten((args, kwargs))
        copies = [leaf.clone() if isinstance(leaf, Tensor) else leaf for leaf in leaves]
        copied_args, copied_kwargs = tree_unflatten(copies, spec)
        out = func(*copied_args, **copied_kwargs)
        for leaf, copy in zip(leaves, copies):
            if isinstance(leaf, Tensor) and copy._version:
                leaf.copy_(copy)
        return out

    return functionalized

