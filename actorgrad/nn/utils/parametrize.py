"""`actorgrad.nn.utils.parametrize`: a module's parameter or buffer seen through a function of other tensors, as
torch.nn.utils.parametrize.

`register_parametrization(module, "weight", p)` moves the weight to `module.parametrizations.weight.original` (or
`original0`, `original1`, ... when `p.right_inverse` returns several tensors) and swaps the module's class for a
`Parametrized<Name>` subclass whose `weight` property computes `p(original)` on each access, so gradients reach
`original`. Assigning to `module.weight` stores `right_inverse(value)` in the originals.
"""

from __future__ import annotations

import copy
import copyreg
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from actorgrad.grad_mode import no_grad
from actorgrad.nn.container import ModuleDict, ModuleList
from actorgrad.nn.module import Module
from actorgrad.nn.parameter import Parameter
from actorgrad.tensor import Tensor
from actorgrad.version_counter import bump_version

__all__ = [
    "ParametrizationList", "cached", "is_parametrized", "register_parametrization", "remove_parametrizations",
    "transfer_parametrizations_and_params", "type_before_parametrizations",
]

# Within `cached()`, each parametrized tensor is computed once and kept here by (id(module), tensor name).
_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Compute each parametrized tensor once inside this block (an RNN's recurrent kernel, a shared weight) and
    reuse it; the values are dropped on leaving the outermost block."""
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_in_place(dest: Tensor, src: Tensor) -> None:
    """Give `dest` the array of `src`, as PyTorch's `dest.set_(src)`: the same tensor object (so an optimizer
    holding it keeps it) with a new value, and a new version, so graphs that saved the old value refuse backward."""
    if dest is not src:
        dest.data = src
        bump_version(dest)


def _dtype(value: Tensor) -> str:
    return f"actorgrad.{value.dtype}"


class ParametrizationList(ModuleList):
    """The parametrizations registered on one tensor, in order, and the unconstrained tensors they start from:
    `original`, or `original0`, `original1`, ... when the first parametrization's `right_inverse` returns a
    sequence. `module.parametrizations[tensor_name]`; made by `register_parametrization`, not by users."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            self._register_one(original, new)
        else:
            self._register_several(original, new)
        if not self.unsafe:
            _check_same_kind(self(), original_dtype, original_shape)

    def _register_one(self, original: Tensor, new: Tensor) -> None:
        """Keep `original` itself (the object an optimizer may hold) as `original`, holding `new`'s value."""
        if original.dtype != new.dtype:
            raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                             f"original.dtype: {_dtype(original)}\nright_inverse(original).dtype: {_dtype(new)}")
        if original.device != new.device:
            raise ValueError("When `right_inverse` outputs one tensor, it may not change the device.\n"
                             f"original.device: {original.device}\nright_inverse(original).device: {new.device}")
        with no_grad():
            _set_in_place(original, new)
        _register_parameter_or_buffer(self, "original", original)

    def _register_several(self, original: Tensor, new: Sequence) -> None:
        """Register `new`'s tensors as `original0`, `original1`, ...: parameters if `original` was one."""
        for i, tensor in enumerate(new):
            if not isinstance(tensor, Tensor):
                raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                 f"Got element {i} of the sequence with type {type(tensor).__name__}.")
            if isinstance(original, Parameter):
                tensor = Parameter(tensor, original.requires_grad)
            tensor.requires_grad_(original.requires_grad)
            _register_parameter_or_buffer(self, f"original{i}", tensor)

    def right_inverse(self, value: Tensor) -> None:
        """Store `value` as the originals: the parametrizations' `right_inverse`s applied in reverse order."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {_dtype(value)} "
                                     f"while `original` has dtype {_dtype(self.original)}")
                _set_in_place(self.original, value)
                return
            if not isinstance(value, Sequence):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                                 f"Got a sequence of length {len(value)}.")
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor):
                    raise ValueError(f"`right_inverse` must return a sequence of tensors. "
                                     f"Got element {i} of type {type(tensor).__name__}")
                if original_i.dtype != tensor.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {_dtype(tensor)} "
                                     f"while `original{i}` has dtype {_dtype(original_i)}")
                _set_in_place(original_i, tensor)

    def forward(self) -> Tensor:
        first, *rest = self
        if self.is_tensor:
            x = first(self.original)
        else:
            x = first(*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in rest:
            x = module(x)
        return x


def _check_same_kind(value: object, dtype: object, shape: tuple[int, ...]) -> None:
    """A safe parametrization returns a tensor of the unparametrized one's dtype and shape."""
    if not isinstance(value, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
    if value.dtype != dtype:
        raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag "
                         f"is enabled.\nunparametrized dtype: actorgrad.{dtype}\nparametrized dtype: {_dtype(value)}")
    if value.shape != shape:
        raise ValueError("Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag "
                         f"is enabled.\nunparametrized shape: {shape}\nparametrized shape: {value.shape}")


def _refuse_pickling(self: Module) -> None:
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training"
    )


def _deepcopy_by_dict(self: Module, memo: dict) -> Module:
    """deepcopy without pickling's `__getstate__` (which a parametrized module refuses): copy the instance dict."""
    if id(self) in memo:
        return memo[id(self)]
    replica = self.__new__(type(self))
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(type(self)):
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _inject_new_class(module: Module) -> None:
    """Swap the module's class for a `Parametrized<Name>` subclass, which will hold the parametrized properties
    (one module's properties must not appear on its class's other instances)."""
    cls = type(module)
    namespace = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _deepcopy_by_dict
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module: Module, tensor_name: str) -> None:
    """Make `module.<tensor_name>` compute its parametrizations (once per `cached()` block) and assigning to it
    call their `right_inverse`."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(get_parametrized, set_original))


def _check_appended(module: Module, tensor_name: str, parametrization: Module) -> None:
    """A safe parametrization added to a parametrized tensor keeps its dtype and shape, and so does its
    `right_inverse` where it has one."""
    y = getattr(module, tensor_name)
    x = parametrization(y)
    if not isinstance(x, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
    if x.dtype != y.dtype:
        raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless the `unsafe` "
                         f"flag is enabled.\nmodule.{tensor_name}.dtype: {_dtype(y)}\n"
                         f"parametrization(module.{tensor_name}).dtype: {_dtype(x)}")
    if x.shape != y.shape:
        raise ValueError("Registering a parametrization may not change the shape of the tensor, unless the `unsafe` "
                         f"flag is enabled.\nmodule.{tensor_name}.shape: {y.shape}\n"
                         f"parametrization(module.{tensor_name}).shape: {x.shape}")
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        z = parametrization.right_inverse(x)
    except NotImplementedError:
        return
    if not isinstance(z, Tensor):
        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(z).__name__}")
    if z.dtype != y.dtype:
        raise ValueError("The tensor returned by parametrization.right_inverse must have the same dtype as "
                         f"module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
                         f"module.{tensor_name}.dtype: {_dtype(y)}\nreturned dtype: {_dtype(z)}")
    if z.shape != y.shape:
        raise ValueError("The tensor returned by parametrization.right_inverse must have the same shape as "
                         f"module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
                         f"module.{tensor_name}.shape: {y.shape}\nreturned shape: {z.shape}")


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make `module.<tensor_name>` read as `parametrization(original)`; a second registration on the same name
    applies after the first. With `unsafe`, the parametrization may change the tensor's dtype and shape."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_appended(module, tensor_name, parametrization)
        parametrizations = module.parametrizations[tensor_name]
        parametrizations.append(parametrization)
        parametrizations.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        parametrizations = ParametrizationList([parametrization], getattr(module, tensor_name), unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether `module` has a parametrization on `tensor_name` (on anything, when it is None)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register `from_module`'s parametrizations (of `tensor_name`, or all) on `to_module` too, its originals
    sharing `from_module`'s arrays, as PyTorch's `set_`; a tensor `to_module` lacks is first made a Parameter of
    `from_module`'s value. Does nothing when `from_module` is not parametrized."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        originals = ["original"] if hasattr(source, "original") else [f"original{i}" for i in range(source.ntensors)]
        with no_grad():
            for original in originals:
                _set_in_place(getattr(target, original), getattr(source, original))
    return to_module


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Put a plain parameter or buffer back under `tensor_name`: its current parametrized value (with
    `leave_parametrized`), or else the unparametrized `original`. The module gets its own class back once
    nothing on it is parametrized."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                _set_in_place(original, getattr(module, tensor_name))
    elif leave_parametrized:
        t = getattr(module, tensor_name)
        original = Parameter(t) if t.requires_grad else t
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in "
                         "terms of a sequence of tensors.")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before parametrizations swapped it for `Parametrized<Name>`."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)
