"""Module: the base class of layers and models; it registers parameters, buffers and submodules by attribute.

Assigning a Parameter, a Module, a Buffer or (after `register_buffer`) a Tensor to an attribute files it in the
module's `_parameters`, `_modules` or `_buffers`, which `parameters()`, `state_dict()`, `train()` and
`zero_grad()` walk recursively with dotted names (`encoder.0.weight`), as PyTorch does. The state dicts live in
module_state.py, the casts and moves (`to`, `cuda`, `double`, ...) in module_casts.py, the hooks' machinery in
module_hooks.py, set_submodule, to_empty and the refused moves in module_extras.py.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from actorgrad.devices.array_ops import is_writeable
from actorgrad.hooks import RemovableHandle
from actorgrad.nn.module_casts import CastMethods
from actorgrad.nn.module_extras import ModuleExtras
from actorgrad.nn.module_hooks import (
    HOOK_DICTS,
    ON_A_MODULE,
    _global_buffer_registration_hooks,
    _global_module_registration_hooks,
    _global_parameter_registration_hooks,
    add_hook,
    backward_hook_kind,
    call_with_hooks,
    registered,
)
from actorgrad.nn.module_state import StateDictMethods
from actorgrad.nn.parameter import Buffer, Parameter
from actorgrad.tensor import Tensor
from actorgrad.version_counter import bump_version


def indent(text: str, spaces: int) -> str:
    """`text` with every line but the first indented, for a child's repr nested in its parent's."""
    first, *rest = text.split("\n")
    return "\n".join([first, *(" " * spaces + line for line in rest)])


def _type_name(value: Any) -> str:
    """The name PyTorch's registration errors give a value (its `typename`): a tensor's legacy type
    ('actorgrad.FloatTensor'), a builtin's bare name ('int'), any other class's dotted path."""
    if isinstance(value, Tensor):
        return value.type()
    cls = type(value)
    return cls.__qualname__ if cls.__module__ in ("builtins", "") else f"{cls.__module__}.{cls.__qualname__}"


class Module(StateDictMethods, CastMethods, ModuleExtras):
    """Base class for all layers: subclasses set attributes in `__init__` (after `super().__init__()`) and
    define `forward`; calling the module calls `forward`."""

    training: bool

    # True on a module once a hook is registered on it, and on Module once a global one is: until then a call
    # costs this one check for hooks.
    _with_hooks: bool = False

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", {})
        for name in HOOK_DICTS:
            object.__setattr__(self, name, OrderedDict())
        object.__setattr__(self, "_is_full_backward_hook", None)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self._with_hooks:
            return self.forward(*args, **kwargs)
        return call_with_hooks(self, args, kwargs)

    # -- hooks -----------------------------------------------------------------------------------------------
    def _add_hook(self, hooks: OrderedDict, hook: Callable, prepend: bool, *flags: dict) -> RemovableHandle:
        """File `hook` in `hooks` (first, with `prepend`) and its id in each of `flags`."""
        object.__setattr__(self, "_with_hooks", True)
        return add_hook(hooks, hook, prepend, *flags)

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """`hook(module, args)` runs before each `forward` and may return new args (a value that is no tuple
        stands for a 1-tuple); with `with_kwargs`, `hook(module, args, kwargs)` may return new `(args, kwargs)`."""
        flags = [self._forward_pre_hooks_with_kwargs] if with_kwargs else []
        return self._add_hook(self._forward_pre_hooks, hook, prepend, *flags)

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """`hook(module, args, output)` (or `hook(module, args, kwargs, output)`) runs after each `forward` and may
        return a new output; with `always_call` it runs even when the call raises."""
        flags = [d for d, on in ((self._forward_hooks_with_kwargs, with_kwargs),
                                 (self._forward_hooks_always_called, always_call)) if on]
        return self._add_hook(self._forward_hooks, hook, prepend, *flags)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_output)` runs when the gradients for the module's outputs are computed and may return
        new ones (None for a non-tensor output or one that got no gradient)."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_input, grad_output)` runs when the gradients for the module's positional inputs are
        computed and may return new `grad_input` (None for a non-tensor input). If no input requires grad it runs
        with the outputs' gradients, and with none if no output requires grad."""
        kind = backward_hook_kind(self._is_full_backward_hook, True, ON_A_MODULE)
        object.__setattr__(self, "_is_full_backward_hook", kind)
        return self._add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Deprecated, as in PyTorch: `hook(module, grad_input, grad_output)` becomes a hook on the node of the
        module's first output, whose own inputs and outputs it sees. Use `register_full_backward_hook`."""
        kind = backward_hook_kind(self._is_full_backward_hook, False, ON_A_MODULE)
        object.__setattr__(self, "_is_full_backward_hook", kind)
        return self._add_hook(self._backward_hooks, hook, False)

    # -- registration --------------------------------------------------------------------------------------
    def _registry(self, kind: str, what: str) -> dict:
        registry = self.__dict__.get(kind)
        if registry is None:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")
        return registry

    def _check_name(self, kind: str, name: Any, registry: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."' + (f", got: {name}" if kind == "module" else ""))
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in registry:
            raise KeyError(f"attribute '{name}' already exists")

    def _forget(self, name: str, keep: str) -> None:
        """Drop `name` from the instance dict and every registry but `keep`, so one name lives in one place;
        in `keep` it stays where it is, so replacing a child, parameter or buffer keeps its position (and a
        Sequential its order), as in PyTorch."""
        for kind in ("_parameters", "_buffers", "_modules"):
            if kind != keep:
                self.__dict__[kind].pop(name, None)
        if keep != "_buffers":
            self._non_persistent_buffers_set.discard(name)
        self.__dict__.pop(name, None)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        registry = self._registry("_parameters", "parameter")
        self._check_name("parameter", name, registry)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_type_name(param)}' object to parameter '{name}' "
                "(actorgrad.nn.Parameter or None required)"
            )
        if param is not None and _global_parameter_registration_hooks:
            param = registered(_global_parameter_registration_hooks, self, name, param)
        registry[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor that is state but not a parameter (running statistics, masks); saved in `state_dict()`
        unless `persistent=False`."""
        registry = self._registry("_buffers", "buffer")
        self._check_name("buffer", name, registry)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{_type_name(tensor)}' object to buffer '{name}' (actorgrad Tensor or None required)"
            )
        registry[name] = registered(_global_buffer_registration_hooks, self, name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register `module` as child `name`; PyTorch checks the module's type before the name."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_type_name(module)} is not a Module subclass")
        registry = self._registry("_modules", "module")
        self._check_name("module", name, registry)
        registry[name] = registered(_global_module_registration_hooks, self, name, module)

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Parameter):
            self._registry("_parameters", "parameters")
            self._forget(name, "_parameters")
            self.register_parameter(name, value)
        elif name in self.__dict__.get("_parameters", ()):
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                    "(actorgrad.nn.Parameter or None expected)"
                )
            self._parameters[name] = None
        elif isinstance(value, Module):
            self._registry("_modules", "module")
            self._forget(name, "_modules")
            self._modules[name] = registered(_global_module_registration_hooks, self, name, value)
        elif name in self.__dict__.get("_modules", ()):
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_type_name(value)}' as child module '{name}' "
                    "(actorgrad.nn.Module or None expected)"
                )
            self._modules[name] = registered(_global_module_registration_hooks, self, name, None)
        elif isinstance(value, Buffer):
            self.register_buffer(name, value, value.persistent)
        elif name in self.__dict__.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                "(actorgrad.nn.Buffer, actorgrad.Tensor or None expected)")
            self._buffers[name] = registered(_global_buffer_registration_hooks, self, name, value)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: registered names live in the registries.
        for kind in ("_parameters", "_buffers", "_modules"):
            registry = self.__dict__.get(kind)
            if registry is not None and name in registry:
                return registry[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __dir__(self) -> list[str]:
        """Attributes, parameters, buffers and submodules, for completion; names that start with a digit (a
        Sequential's `0`) are left out, as in PyTorch."""
        names = [*dir(type(self)), *self.__dict__, *self._parameters, *self._modules, *self._buffers]
        return sorted({name for name in names if not name[:1].isdigit()})

    def __delattr__(self, name: str) -> None:
        for kind in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[kind]:
                del self.__dict__[kind][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    # -- traversal -----------------------------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True) -> Iterator:
        """(dotted name, module) for this module and every module below it, each once."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:  # PyTorch's memo holds the modules themselves
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, kind: str, prefix: str, recurse: bool, remove_duplicate: bool) -> Iterator:
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        seen = set()
        for module_prefix, module in modules:
            for name, value in module.__dict__[kind].items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True) -> Iterator:
        """(dotted name, parameter) in registration order, depth first; a shared parameter comes once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True) -> Iterator:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call `fn` on every submodule (children first) and then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- modes and gradients -------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (Dropout drops) here and, through each child's own `train` (which a subclass may
        override, to keep its BatchNorm frozen say), in every submodule, as PyTorch's."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's gradient, or zero it where `set_to_none=False`."""
        for param in self.parameters():
            zero_grad_of(param, set_to_none)

    # -- lookup by dotted name -----------------------------------------------------------------------------
    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path `target` ('' is this module), with PyTorch's errors."""
        module = self
        for item in target.split(".") if target else ():
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def _get_member(self, target: str) -> tuple[Module, str, Any]:
        """(owner, name, value) of the attribute at dotted path `target`, with PyTorch's errors."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        return module, name, getattr(module, name)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path `target`; one registered as None is refused, as in PyTorch."""
        _, name, value = self._get_member(target)
        if not isinstance(value, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return value

    def get_buffer(self, target: str) -> Tensor:
        module, name, value = self._get_member(target)
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return value

    # -- repr --------------------------------------------------------------------------------------------------
    def _get_name(self) -> str:
        """The name repr and the lookup errors give the module, as PyTorch's (libraries override or call it)."""
        return type(self).__name__

    def extra_repr(self) -> str:
        """The layer's own settings, shown inside its parentheses; layers override it."""
        return ""

    def __repr__(self) -> str:
        lines = self.extra_repr().split("\n") if self.extra_repr() else []
        lines += [f"({name}): {indent(repr(module), 2)}" for name, module in self._modules.items()]
        if not self._modules and len(lines) <= 1:
            return f"{self._get_name()}({''.join(lines)})"
        return f"{self._get_name()}(\n" + "\n".join("  " + line for line in lines) + "\n)"


def zero_grad_of(param: Tensor, set_to_none: bool) -> None:
    """Drop `param.grad`, or detach and zero it in place (a fresh array where the held one is read-only)."""
    grad = param.grad
    if grad is None:
        return
    if set_to_none:
        param.grad = None
        return
    # A gradient from backward(create_graph=True) leaves its graph first, as PyTorch's detach_().
    grad._grad_fn, grad._output_nr, grad._requires_grad = None, 0, False
    if is_writeable(grad._data):
        grad._data[...] = 0
        bump_version(grad)
    else:
        param.grad = Tensor(np.zeros_like(grad._data), device=grad._device)
