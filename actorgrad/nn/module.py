"""Module: the base class of layers and models; it registers parameters, buffers and submodules by attribute.

Assigning a Parameter, a Module or (after `register_buffer`) a Tensor to an attribute files it in the
module's `_parameters`, `_modules` or `_buffers`, which `parameters()`, `state_dict()`, `train()` and
`zero_grad()` walk recursively with dotted names (`encoder.0.weight`), as PyTorch does.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from actorgrad.devices.array_ops import is_writeable
from actorgrad.devices.device import Device
from actorgrad.devices.device import device as as_device
from actorgrad.hooks import RemovableHandle
from actorgrad.nn.module_hooks import HOOK_DICTS, MIXED_BACKWARD_HOOKS, add_hook, call_with_hooks
from actorgrad.nn.parameter import Parameter
from actorgrad.ops.casts import TYPE_BY_NAME, _is_device
from actorgrad.tensor import Tensor, bump_version


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _indent(text: str, spaces: int) -> str:
    first, *rest = text.split("\n")
    return "\n".join([first, *(" " * spaces + line for line in rest)])


def _type_name(value: Any) -> str:
    """The name PyTorch's registration errors give a value: a tensor's legacy type ('actorgrad.FloatTensor')."""
    return value.type() if isinstance(value, Tensor) else type(value).__name__


def _as_array(value: Any) -> np.ndarray:
    return value._data if isinstance(value, Tensor) else np.asarray(value)


class Module:
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
        object.__setattr__(self, "_non_persistent_buffers", set())
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
        if self._is_full_backward_hook is False:
            raise RuntimeError(MIXED_BACKWARD_HOOKS.format(where="on a single Module"))
        object.__setattr__(self, "_is_full_backward_hook", True)
        return self._add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Deprecated, as in PyTorch: `hook(module, grad_input, grad_output)` becomes a hook on the node of the
        module's first output, whose own inputs and outputs it sees. Use `register_full_backward_hook`."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(MIXED_BACKWARD_HOOKS.format(where="on a single Module"))
        object.__setattr__(self, "_is_full_backward_hook", False)
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
            self._non_persistent_buffers.discard(name)
        self.__dict__.pop(name, None)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        registry = self._registry("_parameters", "parameter")
        self._check_name("parameter", name, registry)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_type_name(param)}' object to parameter '{name}' "
                "(actorgrad.nn.Parameter or None required)"
            )
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
        registry[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        registry = self._registry("_modules", "module")
        self._check_name("module", name, registry)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_type_name(module)} is not a Module subclass")
        registry[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Parameter):
            self._registry("_parameters", "parameters")
            self._forget(name, "_parameters")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            self._registry("_modules", "module")
            self._forget(name, "_modules")
            self._modules[name] = value
        elif name in self.__dict__.get("_parameters", ()):
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                    "(actorgrad.nn.Parameter or None expected)"
                )
            self._parameters[name] = None
        elif name in self.__dict__.get("_modules", ()):
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_type_name(value)}' as child module '{name}' "
                    "(actorgrad.nn.Module or None expected)"
                )
            self._modules[name] = None
        elif name in self.__dict__.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                "(actorgrad.Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: registered names live in the registries.
        for kind in ("_parameters", "_buffers", "_modules"):
            registry = self.__dict__.get(kind)
            if registry is not None and name in registry:
                return registry[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for kind in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[kind]:
                del self.__dict__[kind][name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    # -- traversal -----------------------------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True) -> Iterator:
        """(dotted name, module) for this module and every module below it, each once."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
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
        """Set training mode (Dropout drops) here and in every submodule."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def to(self, *args: Any, dtype: Any = None, device: Any = None, non_blocking: bool = False,
           memory_format: Any = None) -> Module:
        """`to(device)`, `to(dtype)`, `to(device, dtype)`, `to(tensor)` (its device and dtype) or keywords, as
        PyTorch's: casts floating parameters and buffers (and their gradients) and moves them. The Parameter
        objects stay the same, so cast or move a model before building its optimizer."""
        rest = list(args)
        if rest and isinstance(rest[0], Tensor):
            other = rest.pop(0)
            device, dtype = other._device, other.dtype
        elif rest and _is_device(rest[0]):
            device = rest.pop(0)
            if rest and not isinstance(rest[0], bool):
                dtype = rest.pop(0)
        elif rest and not isinstance(rest[0], bool):
            dtype = rest.pop(0)
        if len(rest) > 2 or not all(isinstance(flag, bool) for flag in rest):  # non_blocking, copy
            raise TypeError(f"to() received an invalid combination of arguments: {args!r}")
        if dtype is not None:
            dtype = np.dtype(dtype)
            if dtype.kind not in "fc":
                raise TypeError(
                    f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                    f"dtype=actorgrad.{dtype}"
                )
        if device is not None:
            self._move(as_device(device))
        if dtype is not None:
            self._cast(dtype, floating_only=True)
        return self

    def _cast(self, dtype: np.dtype, floating_only: bool) -> Module:
        """Cast parameters and buffers (and gradients) in place: the floating ones, or all of them."""
        tensors = [*self.parameters(), *self.buffers()]
        if dtype.kind not in "fc" and any(t.requires_grad for t in tensors):
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        for tensor in tensors:
            if tensor.dtype.kind == "f" or not floating_only:
                tensor._data = tensor._data.astype(dtype)
                if tensor.grad is not None:
                    tensor.grad = Tensor(tensor.grad._data.astype(dtype), device=tensor._device)
        return self

    def type(self, dst_type: Any) -> Module:
        """Cast every parameter and buffer, integer ones included, to `dst_type`: a dtype, or a legacy name, which
        also picks the device as Tensor.type's does ('actorgrad.DoubleTensor' the cpu, 'actorgrad.cuda.FloatTensor'
        a GPU)."""
        if isinstance(dst_type, str):
            name = dst_type.removeprefix("actorgrad.")
            on_cuda = name.startswith("cuda.")
            dtype = TYPE_BY_NAME.get(name.removeprefix("cuda.")) if name != dst_type else None
            if dtype is None:
                raise ValueError(f"invalid type: '{dst_type}'")
            for tensor in [*self.parameters(), *self.buffers()]:
                if (tensor._device.type == "cuda") != on_cuda:
                    self._move_tensor(tensor, as_device("cuda" if on_cuda else "cpu"))
            dst_type = dtype
        return self._cast(np.dtype(dst_type), floating_only=False)

    def _move(self, where: Device) -> Module:
        for tensor in [*self.parameters(), *self.buffers()]:
            if tensor._device is not where:
                self._move_tensor(tensor, where)
        return self

    @staticmethod
    def _move_tensor(tensor: Tensor, where: Device) -> None:
        """Move a parameter or buffer (and its gradient) in place: it stays the same object."""
        tensor._data = where.asarray(tensor._data)
        tensor._device = where
        if tensor.grad is not None:
            tensor.grad = Tensor(where.asarray(tensor.grad._data), device=where)

    def cpu(self) -> Module:
        return self._move(as_device("cpu"))

    def cuda(self, index: int = 0) -> Module:
        return self._move(as_device("cuda", index))

    def double(self) -> Module:
        return self.to(np.float64)

    def float(self) -> Module:
        return self.to(np.float32)

    def half(self) -> Module:
        return self.to(np.float16)

    # -- lookup by dotted name -----------------------------------------------------------------------------
    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path `target` ('' is this module), with PyTorch's errors."""
        module = self
        for item in target.split(".") if target else ():
            if not hasattr(module, item):
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def _get_member(self, target: str, kind: str, what: str) -> Any:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
        if name not in module.__dict__[kind]:
            raise AttributeError(f"`{name}` is not {what}")
        return module.__dict__[kind][name]

    def get_parameter(self, target: str) -> Parameter:
        return self._get_member(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target: str) -> Tensor:
        return self._get_member(target, "_buffers", "a buffer")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's gradient, or zero it where `set_to_none=False`."""
        for param in self.parameters():
            zero_grad_of(param, set_to_none)

    # -- state -----------------------------------------------------------------------------------------------
    def state_dict(self, destination: dict | None = None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name, detached unless `keep_vars` (they share the
        module's arrays until something writes a new one). Keys are `prefix` + name, as in PyTorch (so pass a
        prefix ending in '.'); `_metadata` holds each module's version by its dotted path."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        metadata = getattr(destination, "_metadata", None)
        for module_prefix, module in self._prefixed_modules(prefix):
            if metadata is not None:
                metadata[module_prefix[:-1]] = {"version": module._version}
            for key, value in module._own_state(module_prefix).items():
                destination[key] = value if keep_vars else value.detach()
        return destination

    # The version `state_dict()` records for each module in `_metadata`; a layer raises it when its saved
    # format changes.
    _version: int = 1

    def _prefixed_modules(self, prefix: str) -> Iterator[tuple[str, Module]]:
        """(prefix of its keys, module) for this module and every module below it, a module reached by two
        names under both, as PyTorch's `state_dict()` walks them."""
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module._prefixed_modules(f"{prefix}{name}.")

    def _own_state(self, prefix: str) -> dict[str, Tensor]:
        slots = {prefix + name: param for name, param in self._parameters.items() if param is not None}
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers:
                slots[prefix + name] = buffer
        return slots

    def _state_slots(self) -> dict[str, Tensor]:
        """Every tensor `state_dict()` holds, by dotted name."""
        slots = {}
        for module_prefix, module in self._prefixed_modules(""):
            slots.update(module._own_state(module_prefix))
        return slots

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> _IncompatibleKeys:
        """Copy the values of `state_dict` (Tensors or arrays) into this module's parameters and buffers.

        Nothing is loaded when a shape mismatches or, with `strict`, when keys are missing or unexpected; the
        error lists them all, in PyTorch's words. Each tensor receives a new array, so earlier
        `state_dict()` results keep their values, and its version goes up as after PyTorch's in-place copy.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        slots = self._state_slots()
        missing = [key for key in slots if key not in state_dict]
        unexpected = [key for key in state_dict if key not in slots]
        errors = []
        if strict and missing:
            errors.append("Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if strict and unexpected:
            errors.append("Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
        arrays = {}
        for key, current in slots.items():
            if key not in state_dict:
                continue
            array = _as_array(state_dict[key])
            if array.shape != current.shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {array.shape} from checkpoint, "
                    f"the shape in current model is {current.shape}."
                )
            arrays[key] = array
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors)
            )
        for key, array in arrays.items():
            current = slots[key]
            current._data = current._device.asarray(array).astype(current.dtype, copy=False)  # a copy on its device
            bump_version(current)  # PyTorch copies in place, so graphs that saved the old value refuse backward
        return _IncompatibleKeys(missing, unexpected)

    # -- repr --------------------------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The layer's own settings, shown inside its parentheses; layers override it."""
        return ""

    def __repr__(self) -> str:
        lines = self.extra_repr().split("\n") if self.extra_repr() else []
        lines += [f"({name}): {_indent(repr(module), 2)}" for name, module in self._modules.items()]
        if not self._modules and len(lines) <= 1:
            return f"{type(self).__name__}({''.join(lines)})"
        return f"{type(self).__name__}(\n" + "\n".join("  " + line for line in lines) + "\n)"


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
