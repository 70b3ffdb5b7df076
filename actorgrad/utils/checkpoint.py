"""Activation checkpointing: run a segment without keeping its intermediates, and recompute it in backward.

`checkpoint(fn, *args)` runs `fn` under no_grad, saving only its inputs (and the random generator's state). In
backward, CheckpointFunction runs `fn` again on detached copies of the inputs, with grad mode on and the saved
random state (so dropout draws the same mask), and backpropagates through the recomputed segment in a pass
nested in the running one (PyTorch's reentrant checkpoint). Parameters the segment uses get their gradients
staged into the outer pass's commit; the inputs' gradients are handed back as the Function's own.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from actorgrad.autograd.function import Function
from actorgrad.engine import backward_collecting
from actorgrad.grad_mode import enable_grad, is_grad_enabled
from actorgrad.random import default_generator
from actorgrad.scheduler.graph_task import enclosing_task
from actorgrad.tensor import Tensor

__all__ = ["checkpoint"]


class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx: Any, run_function: Callable, preserve_rng_state: bool, *args: Any) -> Any:
        ctx.run_function = run_function
        ctx.rng_state = default_generator.get_state() if preserve_rng_state else None
        ctx.args = tuple(None if isinstance(a, Tensor) else a for a in args)
        ctx.save_for_backward(*(a if isinstance(a, Tensor) else None for a in args))
        return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Tensor | None) -> tuple:
        outer = enclosing_task.get()
        if not outer.accumulate or outer.captures is not None:
            raise RuntimeError(
                "When use_reentrant=True, actorgrad.utils.checkpoint is incompatible with .grad() or passing an "
                "`inputs` parameter to .backward(). To resolve this error, you can either set use_reentrant=False, or "
                "call .backward() without passing the `inputs` argument."
            )
        inputs = [
            arg if t is None else Tensor(t._data, requires_grad=t.requires_grad, device=t._device)
            for t, arg in zip(ctx.saved_tensors, ctx.args)
        ]
        with _random_state(ctx.rng_state), enable_grad():
            outputs = ctx.run_function(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [
            (o, g) for o, g in zip(outputs, grad_outputs) if isinstance(o, Tensor) and o.requires_grad and g is not None
        ]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        wanted = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
        collected = backward_collecting([o for o, _ in pairs], [g for _, g in pairs], wanted)
        grads = dict(zip(map(id, wanted), collected))
        return (None, None, *(_as_tensor(grads.get(id(t)), t) if isinstance(t, Tensor) else None for t in inputs))


def _as_tensor(grad: Any, input: Tensor) -> Tensor | None:
    """A collected gradient as a Tensor on its input's device."""
    return grad if grad is None or isinstance(grad, Tensor) else Tensor(grad, device=input._device)


class _random_state:
    """Run the recomputation with the random state the forward saw, and then go on from where it was."""

    def __init__(self, state: dict | None) -> None:
        self.state = state

    def __enter__(self) -> None:
        if self.state is not None:
            self.current = default_generator.get_state()
            default_generator.set_state(self.state)

    def __exit__(self, *exc_info: object) -> None:
        if self.state is not None:
            default_generator.set_state(self.current)


USE_REENTRANT_OMITTED = (
    "actorgrad.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch 2.9, "
    "calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is recommended, but if "
    "you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more "
    "details on the differences between the two variants."
)


def checkpoint(
    function: Callable,
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable | None = None,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """`function(*args)`, keeping none of its intermediates for backward: they are recomputed there.

    Only PyTorch's reentrant variant exists here, so, as there, `determinism_check` and `early_stop` have no
    effect and `context_fn` and `debug` are refused. Errors and warnings are PyTorch's, naming this module."""
    if use_reentrant is None:
        warnings.warn(USE_REENTRANT_OMITTED, stacklevel=2)
        use_reentrant = True
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if not use_reentrant:
        raise NotImplementedError(
            "checkpoint(use_reentrant=False) is not supported: actorgrad checkpoints by recomputing in a nested "
            "(reentrant) backward; pass use_reentrant=True"
        )
    if context_fn is not None or debug is not False:
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    if is_grad_enabled() and not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        warnings.warn(  # PyTorch's reentrant checkpoint has the same limit, and warns the same way
            "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2
        )
    return CheckpointFunction.apply(function, preserve_rng_state, *args)
