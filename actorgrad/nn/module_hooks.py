"""Module hooks, as PyTorch's: the hooks a module's call runs around its forward (`call_with_hooks`), the
deprecated backward hooks, the global hooks on every module, and the handles that remove them. The full backward
hooks' machinery is in `backward_hooks`."""

from __future__ import annotations

import functools
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from actorgrad.hooks import RemovableHandle
from actorgrad.nn.backward_hooks import BackwardHook
from actorgrad.tensor import Tensor

# Every module's hook registries, under PyTorch's attribute names (code that reads them directly finds them).
HOOK_DICTS = (
    "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called", "_backward_pre_hooks", "_backward_hooks", "_state_dict_pre_hooks",
    "_state_dict_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
)
USE_FULL = " Please use register_full_backward_hook to get the documented behavior."
MIXED_BACKWARD_HOOKS = (
    "Cannot use both regular backward hooks and full backward hooks {where}. Please use only one of them."
)


def backward_hook_kind(held: bool | None, full: bool, where: str) -> bool:
    """The kind of backward hooks registered `where` once one of kind `full` is added: PyTorch refuses a mix."""
    if held is not None and held is not full:
        raise RuntimeError(MIXED_BACKWARD_HOOKS.format(where=where))
    return full

# Hooks on every module (for debugging and profiling, as PyTorch's): they run before each module's own.
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
_global_is_full_backward_hook: bool | None = None
GLOBAL, ON_A_MODULE = "as a global Module hook", "on a single Module"  # where one kind is held


class _ModuleHookHandle(RemovableHandle):
    """A module hook's handle: removing it also drops the hook's flags (with_kwargs, always_call)."""

    __slots__ = ("_flags",)

    def __init__(self, hooks: dict, flags: tuple[dict, ...]) -> None:
        super().__init__(hooks)
        self._flags = flags

    def remove(self) -> None:
        super().remove()
        for flags in self._flags:
            flags.pop(self.id, None)


def add_hook(hooks: OrderedDict, hook: Callable, prepend: bool, *flags: dict) -> RemovableHandle:
    handle = _ModuleHookHandle(hooks, flags)
    hooks[handle.id] = hook
    for flag in flags:
        flag[handle.id] = True
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _global_hook(hooks: OrderedDict, hook: Callable, *flags: dict) -> RemovableHandle:
    from actorgrad.nn.module import Module  # here: module.py imports this module

    Module._with_hooks = True  # every module's call now looks for hooks
    return add_hook(hooks, hook, False, *flags)


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """`hook(module, args)` before every module's forward, as `Module.register_forward_pre_hook`'s."""
    return _global_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """`hook(module, args, output)` after every module's forward, as `Module.register_forward_hook`'s."""
    flags = [d for d, on in ((_global_forward_hooks_with_kwargs, with_kwargs),
                             (_global_forward_hooks_always_called, always_call)) if on]
    return _global_hook(_global_forward_hooks, hook, *flags)


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    return _global_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    global _global_is_full_backward_hook
    _global_is_full_backward_hook = backward_hook_kind(_global_is_full_backward_hook, True, GLOBAL)
    return _global_hook(_global_backward_hooks, hook)


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """Deprecated, as `Module.register_backward_hook`."""
    global _global_is_full_backward_hook
    _global_is_full_backward_hook = backward_hook_kind(_global_is_full_backward_hook, False, GLOBAL)
    return _global_hook(_global_backward_hooks, hook)


# Hooks on every registration of a buffer, a child module or a parameter, by any module (PyTorch's, for tools
# that swap what is registered): `hook(module, name, value)`, whose non-None result is registered instead.
_global_buffer_registration_hooks: OrderedDict = OrderedDict()
_global_module_registration_hooks: OrderedDict = OrderedDict()
_global_parameter_registration_hooks: OrderedDict = OrderedDict()


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    return add_hook(_global_buffer_registration_hooks, hook, False)


def register_module_module_registration_hook(hook: Callable) -> RemovableHandle:
    return add_hook(_global_module_registration_hooks, hook, False)


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    return add_hook(_global_parameter_registration_hooks, hook, False)


def registered(hooks: OrderedDict, module: Any, name: str, value: Any) -> Any:
    """What registering `value` as `name` files: `value`, or what the registration hooks return in its place."""
    for hook in hooks.values():
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


def _backward_hooks(module: Any, full: bool) -> list[Callable]:
    """The global and the module's backward hooks of one kind (full, or the deprecated ones)."""
    hooks = list(_global_backward_hooks.values()) if _global_is_full_backward_hook is full else []
    if module._is_full_backward_hook is full:
        hooks += module._backward_hooks.values()
    return hooks


def call_with_hooks(module: Any, args: tuple, kwargs: dict) -> Any:
    """A call of a module that has (or may have) hooks, as PyTorch's `_call_impl`: forward pre-hooks, the
    backward hooks' identity around the inputs, forward, forward hooks, the identity around the outputs."""
    result = None
    called = set()  # the always_call hooks that ran
    forward_hooks = {**_global_forward_hooks, **module._forward_hooks}
    with_kwargs = {**_global_forward_hooks_with_kwargs, **module._forward_hooks_with_kwargs}
    always_called = {**_global_forward_hooks_always_called, **module._forward_hooks_always_called}
    try:
        full_hooks = _backward_hooks(module, True)
        old_hooks = _backward_hooks(module, False)
        pre_hooks = [*_global_backward_pre_hooks.values(), *module._backward_pre_hooks.values()]
        for hook_id, hook in [*_global_forward_pre_hooks.items(), *module._forward_pre_hooks.items()]:
            if hook_id in module._forward_pre_hooks_with_kwargs:
                new = hook(module, args, kwargs)
                if new is not None:
                    if not (isinstance(new, tuple) and len(new) == 2):
                        raise RuntimeError(
                            f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got {new}."
                        )
                    args, kwargs = new
            else:
                new = hook(module, args)
                if new is not None:
                    args = new if isinstance(new, tuple) else (new,)
        backward_hook = None
        if full_hooks or pre_hooks:
            backward_hook = BackwardHook(module, full_hooks, pre_hooks)
            args = backward_hook.setup_input_hook(args)
        result = module.forward(*args, **kwargs)
        for hook_id, hook in forward_hooks.items():
            if hook_id in always_called:
                called.add(hook_id)
            new = hook(module, args, kwargs, result) if hook_id in with_kwargs else hook(module, args, result)
            if new is not None:
                result = new
        if backward_hook is not None:
            if not isinstance(result, Tensor | tuple):
                warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                              f"Tensors but received {type(result)}", stacklevel=3)
            result = backward_hook.setup_output_hook(result)
        if old_hooks:
            _attach_old_backward_hooks(module, old_hooks, args, result)
        return result
    except Exception:
        for hook_id, hook in forward_hooks.items():
            if hook_id in always_called and hook_id not in called:
                try:
                    new = hook(module, args, kwargs, result) if hook_id in with_kwargs else hook(module, args, result)
                    if new is not None:
                        result = new
                except Exception as error:
                    where = "global module" if hook_id in _global_forward_hooks else "module"
                    warnings.warn(f"{where} forward hook with ``always_call=True`` raised an exception that was "
                                  f"silenced as another error was raised in forward: {error}", stacklevel=3)
        raise


def _attach_old_backward_hooks(module: Any, hooks: list[Callable], args: tuple, result: Any) -> None:
    """The deprecated backward hooks: each becomes a hook on the node of the first output tensor, seeing that
    node's gradients, with PyTorch's warnings where those are not the module's."""
    first = result
    while not isinstance(first, Tensor):
        first = next(v for v in first.values() if isinstance(v, Tensor)) if isinstance(first, dict) else first[0]
    node = first.grad_fn
    if node is None:
        return
    module_ref = weakref.ref(module)
    for hook in hooks:
        node.register_hook(functools.partial(_call_old_hook, module_ref, hook))
    _warn_old_backward_hooks(args, result, node)


def _call_old_hook(module_ref: weakref.ref, hook: Callable, grad_inputs: tuple, grad_outputs: tuple) -> Any:
    module = module_ref()
    if module is None:
        raise RuntimeError("You are trying to call the hook of a dead Module!")
    return hook(module, grad_inputs, grad_outputs)


def _warn_old_backward_hooks(inputs: tuple, result: Any, node: Any) -> None:
    """PyTorch's warnings where a deprecated backward hook will not see the module's own gradients."""
    results = (result,) if isinstance(result, Tensor) else result
    if not (isinstance(results, tuple) and all(isinstance(r, Tensor) for r in results)):
        message = ("Using non-full backward hooks on a Module that does not return a single Tensor or a tuple of "
                   "Tensors is deprecated and will be removed in future versions. This hook will be missing some of "
                   "the grad_output." + USE_FULL)
    elif not all(isinstance(i, Tensor) for i in inputs):
        message = ("Using non-full backward hooks on a Module that does not take as input a single Tensor or a tuple "
                   "of Tensors is deprecated and will be removed in future versions. This hook will be missing some "
                   "of the grad_input." + USE_FULL)
    else:
        out_nodes = {r.grad_fn for r in results if r.grad_fn is not None}
        if not out_nodes or (len(out_nodes) == 1 and node not in out_nodes):
            message = ("Using a non-full backward hook when outputs are nested in python data structure is "
                       "deprecated and will be removed in future versions. This hook will be missing some grad_output.")
        elif len(out_nodes) > 1:
            message = ("Using a non-full backward hook when outputs are generated by different autograd Nodes is "
                       "deprecated and will be removed in future versions. This hook will be missing some "
                       "grad_output." + USE_FULL)
        elif {i.grad_fn for i in inputs if i.grad_fn is not None} != {edge[0] for edge in node.next_functions}:
            message = ("Using a non-full backward hook when the forward contains multiple autograd Nodes is "
                       "deprecated and will be removed in future versions. This hook will be missing some "
                       "grad_input." + USE_FULL)
        else:
            return
    warnings.warn(message, FutureWarning, stacklevel=5)
