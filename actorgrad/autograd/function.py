"""Custom Functions: `class MyFn(Function)` with static `forward(ctx, ...)` and `backward(ctx, *grads)`, used as
`MyFn.apply(...)`, as in PyTorch. PyTorch 2's other style works too: `forward(*args)` without ctx plus a static
`setup_context(ctx, inputs, output)`, which gets the positional inputs (defaults filled in) and forward's result.

The ctx is the backward node itself (an instance of `MyFnBackward`, made for each Function subclass), so what
forward saves on it is what the node holds. `backward` may be `async def`: the engine runs it as a task of its
own, so it can await I/O or a nested `await actorgrad.backward(...)` without holding up other ready actors. A
backward pass started inside `backward` is nested one reentrant level deeper than the pass running the node.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

from actorgrad.accumulate_grad import gradient_edge
from actorgrad.autograd.function_outputs import alias_input, note_views, pack_function_saved, take_dirty, wrap_output
from actorgrad.formula_node import MODIFIED, SECOND_BACKWARD, modified_error
from actorgrad.grad_mode import _grad_enabled, no_grad, set_grad_enabled
from actorgrad.hooks import grad_tensor, own_staged_grads
from actorgrad.node import InputMetadata, Node, expandable_to
from actorgrad.saved_tensors import _saved_tensors_hooks
from actorgrad.tensor import Tensor

__all__ = ["BackwardCFunction", "Function", "FunctionCtx", "InplaceFunction", "once_differentiable"]


class FunctionCtx:
    """What `forward` may tell `backward` (PyTorch's ctx methods); any other attribute may be set on it too."""

    needs_input_grad: tuple[bool, ...]

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
        self._saved = tensors

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        """Kept for code written for PyTorch, whose `jvp` reads them; actorgrad's forward AD uses `backward`."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise AssertionError("save_for_forward expects all arguments to be tensors; you should save "
                                     "non-tensors as attributes on ctx.")
        self.saved_for_forward = tensors

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        """The saved tensors, refused (as in PyTorch) if any was changed in place after forward returned."""
        if self._saved is None:
            raise RuntimeError(SECOND_BACKWARD)
        for i, (t, version) in enumerate(zip(self._saved, self._saved_versions)):
            if t is not None and t._version != version:
                nr = self._saved_output_nrs[i]
                if nr is not None:  # a saved output names this node (its history when saved), as in PyTorch
                    raise RuntimeError(MODIFIED.format(
                        dtype=t._data.dtype, shape=list(t.shape), now=t._version, saved=version,
                        source=f", which is output {nr} of {self._forward_cls.__name__},",
                    ))
                raise modified_error(self, t, version)
        if self._packed:
            return tuple(None if p is None else p.value(False) for p in self._saved)
        return self._saved

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Tensors forward modified in place: they are returned as outputs whose history is this node."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Outputs that get no gradient: they do not require grad, and backward gets None (or zeros) for them."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward gets None (not zeros) for outputs that received no gradient."""
        self._materialize_grads = bool(value)


class BackwardCFunction(FunctionCtx, Node):
    """The node of one `Function.apply`, named after the Function (`MyFnBackward`); it is also the ctx."""

    _forward_cls: type[Function]
    _user_backward: Callable | None  # the Function's backward, or its vjp; None: it defines both

    def __init__(self) -> None:
        self._saved: tuple | None = ()
        self._saved_versions: tuple = ()  # taken when forward returns: its own in-place changes are allowed
        self._dirty: tuple = ()
        self._non_differentiable: tuple = ()
        self._materialize_grads = True
        self._saved_output_nrs: tuple = ()  # per saved tensor: which output of this node it is, or None
        self._packed = False  # True: `_saved` holds values packed by saved-tensor hooks
        self.needs_input_grad = ()

    def apply(self, grads: list, task: Any) -> Any:
        backward = self._user_backward
        if backward is None:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
                               "should only implement one of them.")
        grads = self._gradients_in(grads, task.ops is not None)
        own_staged_grads(task)  # backward may change its gradients in place, as a hook may
        if self.async_backward:
            async def run() -> tuple:
                with set_grad_enabled(task.ops is not None), task.nested():
                    result = await backward(self, *grads)
                return self._gradients_out(result, task)

            return task.run_async(self, run)
        with set_grad_enabled(task.ops is not None), task.nested():
            result = backward(self, *grads)
        return self._gradients_out(result, task)

    def _gradients_in(self, grads: list, recorded: bool) -> list:
        """The output gradients as Tensors, zeros for outputs that got none unless materializing is off."""
        out = []
        for g, meta in zip(grads, self.input_metadata):
            if g is None:
                if self._materialize_grads and meta is not None:
                    g = Tensor(meta.device.xp.zeros(meta.shape, meta.dtype), device=meta.device)
            elif not recorded:
                g = grad_tensor(g, self.device if meta is None else meta.device)
            out.append(g)
        return out

    def _gradients_out(self, result: Any, task: Any) -> list:
        """Check backward's gradients against the inputs, one per forward argument (None for those that are not
        tensors), and pass on one per edge: per tensor input, as PyTorch's node has."""
        if not task.keep_graph:
            self._saved = None
        grads = result if isinstance(result, tuple) else (result,)  # as PyTorch: a list is one (bad) gradient
        inputs = self._forward_inputs
        expected = len(inputs)
        if len(grads) > expected and all(g is None for g in grads[expected:]):
            grads = grads[:expected]
        if len(grads) != expected:
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients (expected {expected}, got "
                f"{len(grads)})"
            )
        ops = task.ops
        recorded = ops is not None
        if not recorded:
            ops = self.device.ops
        out = []  # one per edge: per tensor input
        edges = iter(self.next_functions)
        for i, (g, input_metadata) in enumerate(zip(grads, inputs)):
            if input_metadata is None:
                if g is not None:
                    raise RuntimeError(
                        f"function {self.name()} returned a gradient different than None at position {i + 1}, but "
                        f"the corresponding forward input was not a Variable"
                    )
                continue
            node = next(edges)[0]
            if g is None:
                out.append(None)
                continue
            if not isinstance(g, Tensor):
                kind = type(g).__name__  # PyTorch's words first
                raise RuntimeError(
                    f"expected Variable or None (got {kind}): function {self.name()} returned a gradient of type "
                    f"{kind} at index {i}"
                )
            if node is None:  # an input that needs no gradient: none flows, but post hooks see it, as in PyTorch
                out.append(g if recorded else g._data)
                continue
            shape, dtype, device = input_metadata
            if g.shape != shape and not expandable_to(shape, g.shape):
                raise RuntimeError(
                    f"Function {self.name()} returned an invalid gradient at index {i} - got {list(g.shape)} "
                    f"but expected shape compatible with {list(shape)}"
                )
            if g._device is not device and not g.ndim:  # a scalar moves to its input's device, as in PyTorch
                g = g.to(device)
            if g._device is not device:
                raise RuntimeError(
                    f"Function {self.name()} returned an invalid gradient at index {i} - expected device {device} "
                    f"but got {g._device}"
                )
            kind = g.dtype.kind  # as PyTorch: a float gradient casts to any input; others only within real/complex
            if kind != "f" and (kind == "c") != (dtype.kind == "c"):
                raise RuntimeError(
                    f"Function {self.name()} returned an invalid gradient at index {i} - got a gradient of dtype "
                    f"{g.dtype} for an input of dtype {dtype}: a complex gradient needs a complex input (return "
                    f"grad.real for a real one), and a complex input a floating or complex gradient"
                )
            g = g if recorded else g._data
            out.append(ops.cast(ops.sum_to(g, shape), dtype))
        return out


class Function:
    """Subclass with static `forward(ctx, *args, **kwargs)` and `backward(ctx, *grad_outputs)`, then call
    `MyFn.apply(*args, **kwargs)`. backward returns one gradient (or None) per forward argument. Or override
    `setup_context(ctx, inputs, output)` and write `forward(*args, **kwargs)` without ctx."""

    _backward_cls: type[BackwardCFunction]
    _forward_signature: inspect.Signature | None  # None: forward takes ctx

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        has_vjp, has_backward = cls.vjp is not Function.vjp, cls.backward is not Function.backward
        backward = None if has_vjp and has_backward else cls.vjp if has_vjp else cls.backward  # vjp: its alias
        cls._backward_cls = type(
            f"{cls.__name__}Backward",
            (BackwardCFunction,),
            {"_forward_cls": cls, "_user_backward": staticmethod(backward) if backward else None,
             "async_backward": inspect.iscoroutinefunction(backward)},
        )
        # taken once: inspect.signature costs as much as the rest of apply
        setup_context = cls.setup_context is not Function.setup_context
        cls._forward_signature = inspect.signature(cls.forward) if setup_context else None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Allowed with PyTorch's deprecation warning (its `apply` still works); calling the instance is refused."""
        warnings.warn(
            f"{type(self)} should not be instantiated. Methods on autograd functions are all static, so you should "
            "invoke them on the class itself. Instantiating an autograd function will raise an error in a future "
            "version of PyTorch.", DeprecationWarning, stacklevel=2,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(LEGACY_CALL)

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Function:  # PyTorch runs the base forward, which raises
            raise NotImplementedError("You must implement the forward function for custom autograd.Function.")
        signature = cls._forward_signature
        if signature is not None:  # as PyTorch: inputs are forward's positional parameters, defaults filled in
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        elif kwargs:  # tensors passed by keyword are inputs too, in the forward's order (as PyTorch binds them)
            bound = inspect.signature(cls.forward).bind(None, *args, **kwargs)
            args, kwargs = bound.args[1:], bound.kwargs
        ctx = cls._backward_cls()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        with no_grad():
            if signature is not None:
                result = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, result)
            else:
                result = cls.forward(ctx, *args, **kwargs)
        outputs = result if isinstance(result, tuple) else (result,)
        if ctx._dirty:
            take_dirty(ctx, args, outputs)
        if not (_grad_enabled.get() and any(ctx.needs_input_grad)):
            if isinstance(result, tuple):
                return tuple(alias_input(ctx, o, args) for o in result)
            return alias_input(ctx, result, args)
        edges = tuple(gradient_edge(a) for a in args if isinstance(a, Tensor))  # as PyTorch: one per tensor input
        metadata = tuple(
            InputMetadata(o.shape, o.dtype, o.device) if isinstance(o, Tensor) else None for o in outputs
        )
        Node.__init__(ctx, edges, metadata, args[ctx.needs_input_grad.index(True)].device)
        # The counter's value, not `_version`: an inference tensor's raises PyTorch's error for saving one.
        ctx._saved_versions = tuple(None if t is None else 0 if t._vc is None else t._vc.value for t in ctx._saved)
        ctx._forward_inputs = tuple(
            InputMetadata(a.shape, a.dtype, a.device) if isinstance(a, Tensor) else None for a in args
        )
        wrapped = tuple(wrap_output(ctx, o, k, args) for k, o in enumerate(outputs))
        if ctx._saved:
            ctx._saved_output_nrs = tuple(
                next((k for k, o in enumerate(wrapped) if t is not None and o is t), None) for t in ctx._saved
            )
            hooks = _saved_tensors_hooks.get()
            if hooks is not None:
                pack_function_saved(ctx, wrapped, hooks)
        note_views(ctx, wrapped)
        return wrapped if isinstance(result, tuple) else wrapped[0]


LEGACY_CALL = (
    "Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd function "
    "with static forward method. (Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
)


class InplaceFunction(Function):
    """PyTorch's legacy base for Functions that may work in place, kept for code that subclasses it: an
    instance only carries the `inplace` flag (with PyTorch's deprecation warning); forward and backward stay
    static and run through `apply`, where forward may take the flag as an argument."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


class _DelayedErrorNode(Node):
    """Stands for a @once_differentiable backward in the graph: differentiating through it raises."""

    __slots__ = ()

    def name(self) -> str:
        return "DelayedError"

    def apply(self, grads: list, task: Any) -> tuple:
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


def once_differentiable(backward: Callable) -> Callable:
    """Decorate a Function's backward that cannot itself be differentiated: it runs without recording, and
    a gradient taken through its results raises instead of being silently wrong."""

    def attach_delayed_error(result: Any, grads: tuple) -> Any:
        needs = [g for g in grads if isinstance(g, Tensor) and g.requires_grad]
        if not needs or not _grad_enabled.get():
            return result
        edges = tuple(gradient_edge(g) for g in needs)
        results = result if isinstance(result, tuple | list) else (result,)
        marked = []
        for r in results:
            if isinstance(r, Tensor):
                node = _DelayedErrorNode(edges, (InputMetadata(r.shape, r.dtype, r.device),), r.device)
                r = Tensor(r._data, grad_fn=node, device=r._device)
            marked.append(r)
        return tuple(marked) if isinstance(result, tuple | list) else marked[0]

    if inspect.iscoroutinefunction(backward):

        @functools.wraps(backward)
        async def run_async(ctx: Any, *grads: Any) -> Any:
            with no_grad():
                result = await backward(ctx, *grads)
            return attach_delayed_error(result, grads)

        return run_async

    @functools.wraps(backward)
    def run(ctx: Any, *grads: Any) -> Any:
        with no_grad():
            result = backward(ctx, *grads)
        return attach_delayed_error(result, grads)

    return run

