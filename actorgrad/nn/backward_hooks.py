"""A module's full backward hooks, as PyTorch builds them: an identity Function around the module's tensor
inputs and one around its tensor outputs. When the gradients for the outputs reach the outer one, the backward
pre-hooks see them (and may replace them) and the pass keeps them; when the gradients for the inputs reach the
inner one, the backward hooks see both (and may replace the inputs' ones).

The identity's outputs are views of its inputs made by a custom Function, so, as in PyTorch, the in-place ops refuse
to change them (the forward's view of an input, or the caller's view of an output) with grad mode on, and a later
use of one changed in no_grad mode raises at backward.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from actorgrad.autograd.function import Function
from actorgrad.grad_mode import is_grad_enabled
from actorgrad.ops.casts import TYPE_NAMES
from actorgrad.tensor import Tensor

NO_INPUT_GRAD = (
    "Full backward hook is firing when gradients are computed with respect to module outputs since no inputs require "
    "gradients. See https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
    "#torch.nn.Module.register_full_backward_hook for more details."
)


class BackwardHookFunction(Function):
    """The identity on a module's tensor inputs (or outputs); its node calls the BackwardHook's `on_grads`."""

    @staticmethod
    def forward(ctx: Any, *args: Tensor) -> tuple[Tensor, ...]:
        ctx.mark_non_differentiable(*[arg for arg in args if not arg.requires_grad])
        ctx.set_materialize_grads(False)  # the pre-hooks see None for an output that got no gradient
        return args

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> tuple:
        return ctx.on_grads(ctx, grads)


def _pack_with_none(indices: list[int], values: Any, size: int) -> tuple:
    packed = [None] * size
    for i, value in zip(indices, values, strict=True):
        packed[i] = value
    return tuple(packed)


def _type_name(meta: Any) -> str:
    cuda = "cuda." if meta.device.type == "cuda" else ""
    return f"actorgrad.{cuda}{TYPE_NAMES.get(meta.dtype, str(meta.dtype))}"


def _checked(ctx: Any, values: Any) -> tuple:
    """The hooks' gradients for the identity's inputs, checked as PyTorch checks a node hook's results (the hook
    PyTorch names is its own wrapper, 'hook')."""
    for value, meta in zip(values, ctx.input_metadata):
        if value is None:
            continue
        if not isinstance(value, Tensor):
            raise TypeError(f"expected Variable, but hook returned '{type(value).__name__}'")
        if value.shape != meta.shape:
            raise RuntimeError("hook 'hook' has changed the size of value")
        if value.dtype != meta.dtype:
            raise RuntimeError(
                f"hook 'hook' has changed the type of value (was {_type_name(meta)} got {value.type()})"
            )
    return tuple(values)


class BackwardHook:
    """One module call's full backward hooks and pre-hooks: what links the gradients of its outputs to those of
    its inputs."""

    def __init__(self, module: Any, hooks: list[Callable], pre_hooks: list[Callable]) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs: tuple | None = None
        self.n_inputs = self.n_outputs = -1
        self.input_index: list[int] | None = None  # positions of the tensors; None: none required grad
        self.output_index: list[int] | None = None

    def setup_input_hook(self, args: tuple) -> tuple:
        result, self.input_index = self._apply(args, self._on_input_grads)
        self.n_inputs = len(args)
        return result

    def setup_output_hook(self, result: Any) -> Any:
        outputs = result if isinstance(result, tuple) else (result,)
        wrapped, self.output_index = self._apply(outputs, self._on_output_grads)
        self.n_outputs = len(outputs)
        return wrapped if isinstance(result, tuple) else wrapped[0]

    @staticmethod
    def _apply(args: tuple, on_grads: Callable) -> tuple[tuple, list[int] | None]:
        """`args` with each tensor replaced by the identity's output, and the tensors' positions."""
        index = [i for i, arg in enumerate(args) if isinstance(arg, Tensor)]
        tensors = [args[i] for i in index]
        if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return args, None
        new = BackwardHookFunction.apply(*tensors)
        node = next(t.grad_fn for t in new if t.grad_fn is not None)
        node.on_grads = on_grads
        wrapped = list(args)
        for i, tensor in zip(index, new):
            wrapped[i] = tensor
        return (tuple(wrapped) if type(args) is tuple else type(args)(*wrapped)), index

    def _on_output_grads(self, ctx: Any, grads: tuple) -> tuple:
        grad_outputs = _replaced_by_hooks(
            self.pre_hooks, lambda hook, values: hook(self.module, values),
            _pack_with_none(self.output_index, grads, self.n_outputs), "Backward pre hook", "grad_output",
        )
        self.grad_outputs = grad_outputs
        if self.input_index is None:  # no input requires grad: the hooks fire here, with no grad_input
            warnings.warn(NO_INPUT_GRAD, UserWarning, stacklevel=2)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                result = hook(self.module, grad_inputs, self.grad_outputs)
                if result is not None and not (isinstance(result, tuple) and all(r is None for r in result)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return _checked(ctx, [grad_outputs[i] for i in self.output_index])

    def _on_input_grads(self, ctx: Any, grads: tuple) -> tuple:
        # PyTorch's identity hands on zeros for an input that got no gradient, and its hooks see them
        grads = [
            Tensor(meta.device.xp.zeros(meta.shape, meta.dtype), device=meta.device) if g is None else g
            for g, meta in zip(grads, ctx.input_metadata)
        ]
        if self.grad_outputs is None:  # the gradient reached the inputs without passing the outputs
            return tuple(grads)
        grad_inputs = _replaced_by_hooks(
            self.hooks, lambda hook, values: hook(self.module, values, self.grad_outputs),
            _pack_with_none(self.input_index, grads, self.n_inputs), "Backward hook", "grad_input",
        )
        self.grad_outputs = None
        return _checked(ctx, [grad_inputs[i] for i in self.input_index])


def _replaced_by_hooks(hooks: Any, call: Callable, values: tuple, kind: str, what: str) -> tuple:
    """`values` passed through each hook in turn (`call(hook, values)`); a hook's non-None result replaces them,
    and must hold as many (PyTorch's error)."""
    for hook in hooks:
        result = call(hook, values)
        if result is None:
            continue
        if len(result) != len(values):
            raise RuntimeError(f"{kind} returned an invalid number of {what}, got {len(result)}, but expected "
                               f"{len(values)}")
        values = result
    return values
