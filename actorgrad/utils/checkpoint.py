"""Activation checkpointing: run a segment without keeping its intermediates, and recompute it in backward.

`checkpoint(fn, *args, use_reentrant=True)` runs `fn` under no_grad, saving only its inputs (and the random
generator's state). In backward, CheckpointFunction runs `fn` again on detached copies of the inputs, with grad
mode on and the saved random state (so dropout draws the same mask), and backpropagates through the recomputed
segment in a pass nested in the running one (PyTorch's reentrant checkpoint). Parameters the segment uses get
their gradients staged into the outer pass's commit; the inputs' gradients are handed back as the Function's own.
`use_reentrant=False` records the segment as usual but drops what its ops save, for a rerun when backward first
needs it (checkpoint_hooks.py), with selective checkpointing (selective_checkpoint.py) through `context_fn`.

`get_device_states` / `set_device_states` are not here: actorgrad draws random numbers for every device from the
one default generator, whose state `preserve_rng_state` already saves and restores.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from actorgrad.autograd.function import Function
from actorgrad.engine import backward_collecting
from actorgrad.grad_mode import enable_grad, is_grad_enabled
from actorgrad.nn.container import Sequential
from actorgrad.random import default_generator
from actorgrad.scheduler.graph_task import enclosing_task
from actorgrad.tensor import Tensor
from actorgrad.utils.checkpoint_hooks import checkpoint_without_reentrant, detach_variable
from actorgrad.utils.selective_checkpoint import (
    CheckpointError,
    CheckpointPolicy,
    SelectiveCheckpointContext,
    create_selective_checkpoint_contexts,
)

__all__ = [
    "CheckpointError", "CheckpointPolicy", "SelectiveCheckpointContext", "checkpoint", "checkpoint_sequential",
    "create_selective_checkpoint_contexts", "detach_variable", "noop_context_fn", "set_checkpoint_debug_enabled",
    "set_checkpoint_early_stop",
]


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
        inputs = detach_variable(tuple(arg if t is None else t for t, arg in zip(ctx.saved_tensors, ctx.args)))
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


def noop_context_fn() -> tuple[contextlib.nullcontext, contextlib.nullcontext]:
    """The default `context_fn`: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


_early_stop: bool = True
_debug: bool | None = None


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool) -> Iterator[None]:
    """Whether non-reentrant checkpoints made inside stop their rerun once it has every value backward needs
    (default True; their `early_stop` argument is overridden while this is entered)."""
    global _early_stop
    previous, _early_stop = _early_stop, enable
    try:
        yield
    finally:
        _early_stop = previous


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None) -> Iterator[None]:
    """Override `debug` for the checkpoints made inside (None: leave it to each checkpoint): in debug mode a
    CheckpointError lists the ops that saved values in the forward and in the rerun."""
    global _debug
    previous, _debug = _debug, enabled
    try:
        yield
    finally:
        _debug = previous


USE_REENTRANT_OMITTED = (
    "actorgrad.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch 2.9, "
    "calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is recommended, but if "
    "you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more "
    "details on the differences between the two variants."
)
DETERMINISM_CHECKS = ["default", "none"]


def checkpoint(
    function: Callable,
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable = noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """`function(*args, **kwargs)`, keeping none of its intermediates for backward: they are recomputed there.

    With use_reentrant=True, as in PyTorch, `determinism_check` and `early_stop` have no effect, `context_fn`
    and `debug` are refused, and so are keyword arguments for `function`. Errors and warnings are PyTorch's,
    naming this module."""
    if use_reentrant is None:
        warnings.warn(USE_REENTRANT_OMITTED, stacklevel=2)
        use_reentrant = True
    if not use_reentrant:
        if determinism_check not in DETERMINISM_CHECKS:
            raise ValueError(
                f"determinism_check should be one of {DETERMINISM_CHECKS}, but got {determinism_check}"
            )
        return checkpoint_without_reentrant(
            function, args, kwargs, context_fn=context_fn, determinism_check=determinism_check,
            debug=debug if _debug is None else _debug, early_stop=early_stop and _early_stop,
            preserve_rng_state=preserve_rng_state,
        )
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if context_fn is not noop_context_fn or debug is not False:
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    if is_grad_enabled() and not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        warnings.warn(  # PyTorch's reentrant checkpoint has the same limit, and warns the same way
            "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2
        )
    return CheckpointFunction.apply(function, preserve_rng_state, *args)


USE_REENTRANT_OMITTED_SEQUENTIAL = (
    "actorgrad.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed explicitly. In "
    "version 2.9 we will raise an exception if use_reentrant is not passed. use_reentrant=False is recommended, but "
    "if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more "
    "details on the differences between the two variants."
)


def checkpoint_sequential(
    functions: Sequence[Callable], segments: int, input: Tensor, use_reentrant: bool | None = None, **kwargs: Any
) -> Tensor:
    """Run `functions` (a Sequential or a list of modules or functions) one after another on `input`, in
    `segments` chunks of len(functions) // segments each: every chunk but the last (which takes the remainder)
    is checkpointed, keeping only its input. `preserve_rng_state=False` may be passed."""
    if use_reentrant is None:
        warnings.warn(USE_REENTRANT_OMITTED_SEQUENTIAL, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run(start: int, end: int) -> Callable:
        def chunk(x: Tensor) -> Tensor:
            for f in functions[start:end]:
                x = f(x)
            return x

        return chunk

    size = len(functions) // segments
    end = 0
    for start in range(0, size * (segments - 1), size):
        end = start + size
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end, len(functions))(input)
