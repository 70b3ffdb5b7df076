"""`actorgrad.func`: PyTorch's torch.func (functorch) transforms on actorgrad's autograd: grad, grad_and_value,
vjp, jvp, linearize, jacrev, jacfwd, hessian, vmap and functional_call, and the helpers stack_module_state,
replace_all_batch_norm_modules_ and functionalize (in ensembling).

They are pure functions of their inputs: each is built on `actorgrad.autograd.grad` (never `backward`), so no
`.grad` is touched, and they compose (`grad(grad(f))`, `jacfwd(jacrev(f))`, `vmap(grad(f))` for per-sample
gradients). As in PyTorch they are sync functions; they run the sync engine, so inside a running trio loop they
are refused, as `actorgrad.autograd.grad` is. Inputs and outputs may be pytrees (tuples, lists, dicts,
namedtuples) of tensors.

How they differ from PyTorch's: jvp, linearize and jacfwd use the double-vjp trick (two reverse passes, the
first shared by every tangent pushed through one call), not forward-mode kernels; vmap runs the function once
per example and stacks the results, where PyTorch batches each op (see batching).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from actorgrad.func.batching import vmap
from actorgrad.func.ensembling import functionalize, replace_all_batch_norm_modules_, stack_module_state
from actorgrad.func.forward import hessian, jacfwd, jvp, linearize
from actorgrad.func.reverse import grad, grad_and_value, jacrev, vjp
from actorgrad.nn.module import Module
from actorgrad.nn.utils import stateless

__all__ = ["functional_call", "functionalize", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "replace_all_batch_norm_modules_", "stack_module_state", "vjp", "vmap"]


def functional_call(module: Module, parameter_and_buffer_dicts: dict | Sequence[dict], args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True, strict: bool = False) -> Any:
    """`module(*args, **kwargs)` with its parameters and buffers replaced by the given tensors for the call (a
    dict by dotted name, or several dicts whose names must not repeat): how a module becomes a function of its
    parameters for the transforms. See `actorgrad.nn.utils.stateless.functional_call`."""
    if isinstance(parameter_and_buffer_dicts, dict):
        merged = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            for key in d:
                counts[key] = counts.get(key, 0) + 1
        repeated = [key for key, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        merged = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return stateless._functional_call(module, merged, args, kwargs, tie_weights=tie_weights, strict=strict)
