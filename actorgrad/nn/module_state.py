"""state_dict and load_state_dict: a module's parameters and persistent buffers by dotted name (`encoder.0.weight`),
saved and loaded as PyTorch's are, with a module's extra state (`get_extra_state` / `set_extra_state`, under
`<prefix>_extra_state`) and the four state-dict hooks. Module inherits them from StateDictMethods, which walks the
registries module.py keeps."""

from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Self

import numpy as np

from actorgrad.hooks import RemovableHandle
from actorgrad.nn.module_hooks import add_hook
from actorgrad.nn.parameter import Parameter
from actorgrad.tensor import Tensor
from actorgrad.version_counter import bump_version

EXTRA_STATE = "_extra_state"
POSITIONAL_STATE_DICT = (
    "Positional args are being deprecated, use kwargs instead. Refer to "
    "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict for details."
)
POST_HOOK_RETURNED = (
    "Hooks registered with ``register_load_state_dict_post_hook`` are not expected to return new values, if "
    "incompatible_keys need to be modified, it should be done inplace."
)


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _is_placeholder(value: Any) -> bool:
    """Is `value` a lazy module's parameter or buffer whose shape is not known yet (nn.lazy's placeholders)?"""
    return hasattr(type(value), "materialize")


def _as_array(value: Any) -> np.ndarray:
    return value._data if isinstance(value, Tensor) else np.asarray(value)


def _hooks(module: Any, kind: str) -> tuple[Callable, ...]:
    """The module's hooks of one kind, in order (none before the first is registered)."""
    return tuple(module.__dict__.get(kind, {}).values())


def _without_module(hook: Callable) -> Callable:
    """`hook` called without the module its caller passes first."""
    return lambda module, *args: hook(*args)


def _prepare_keys(module: Any, state_dict: OrderedDict, prefix: str, local_metadata: dict,
                  hooks: tuple[Callable, ...], lists: tuple[list, list, list]) -> OrderedDict:
    """`state_dict` after `module`'s upgrade and load pre-hooks. As PyTorch's recursion hands each module only the
    keys under its prefix, they see (and edit) those alone (and `strict` True, as PyTorch passes them); what they
    leave under the prefix takes the place of those keys."""
    local = OrderedDict((key, value) for key, value in state_dict.items() if key.startswith(prefix))
    module._upgrade_state_dict(local, prefix, local_metadata.get("version"))
    for hook in hooks:
        hook(module, local, prefix, local_metadata, True, *lists)
    if not prefix:
        return local
    kept = [(key, value) for key, value in local.items() if key.startswith(prefix)]
    merged = OrderedDict()
    for key, value in state_dict.items():
        if not key.startswith(prefix):
            merged[key] = value
        elif kept:  # the prefix's keys go where its first one was
            merged.update(kept)
            kept = []
    merged.update(kept)
    return merged


def _run_post_hooks(module: Any, keys: _IncompatibleKeys) -> None:
    """A module's load post-hooks, once its children are loaded, as PyTorch's recursion runs them: they see the
    missing and unexpected keys found so far (this module's, its children's and those of the modules before it)."""
    for hook in _hooks(module, "_load_state_dict_post_hooks"):
        if hook(module, keys) is not None:
            raise AssertionError(POST_HOOK_RETURNED)


def _never_called(method: str) -> RuntimeError:
    return RuntimeError(f"Reached a code path in Module.{method}() that should never be called: a module with extra "
                        f"state overrides both get_extra_state() and set_extra_state()")


class StateDictMethods:
    """Module's state: its own slots, and those of every module below it, under dotted names."""

    def state_dict(self, *args: Any, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name, detached unless `keep_vars` (they share the
        module's arrays until something writes a new one), and each module's extra state. Keys are `prefix` +
        name, as in PyTorch (so pass a prefix ending in '.'); `_metadata` holds each module's version by its
        dotted path. A module's pre-hooks run before its entries are added, its post-hooks after its children's.
        Positional `destination, prefix, keep_vars` still work, with PyTorch's FutureWarning."""
        if args:
            warnings.warn(POSITIONAL_STATE_DICT, FutureWarning, stacklevel=2)
            if len(args) > 3:
                raise TypeError(f"state_dict() takes at most 3 positional arguments ({len(args)} given)")
            destination, prefix, keep_vars = (*args, *(destination, prefix, keep_vars)[len(args):])
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        return self._save_state(destination, prefix, keep_vars)

    def _save_state(self, destination: dict, prefix: str, keep_vars: bool) -> dict:
        """Add this module's entries and its children's; what a private hook returns replaces the dict
        returned (the children's replacements are dropped, as PyTorch's recursion drops them)."""
        for hook in _hooks(self, "_state_dict_pre_hooks"):
            hook(self, prefix, keep_vars)
        local_metadata = {"version": self._version}
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            metadata[prefix[:-1]] = local_metadata
        for key, value in self._own_state(prefix).items():
            destination[key] = value if keep_vars or _is_placeholder(value) else value.detach()
        if type(self).get_extra_state is not StateDictMethods.get_extra_state:
            destination[prefix + EXTRA_STATE] = self.get_extra_state()
        for name, module in self._modules.items():
            if module is None:
                continue
            if type(module).state_dict is StateDictMethods.state_dict:
                module._save_state(destination, f"{prefix}{name}.", keep_vars)
            else:  # a child's own state_dict, as PyTorch's recursion calls it (what it returns is dropped)
                module.state_dict(destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars)
        may_return = self.__dict__.get("_state_dict_hooks_may_return", ())
        for hook_id, hook in self.__dict__.get("_state_dict_hooks", {}).items():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                if hook_id not in may_return:
                    raise RuntimeError("state_dict post-hook must return None")
                destination = result
        return destination

    def get_extra_state(self) -> Any:
        """State beyond parameters and buffers that `state_dict()` should hold (any picklable value); a module
        that has some overrides this and `set_extra_state`."""
        raise _never_called("get_extra_state")

    def set_extra_state(self, state: Any) -> None:
        """Take back what `get_extra_state` returned, from `load_state_dict`."""
        raise _never_called("set_extra_state")

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(module, prefix, keep_vars)` runs before `state_dict()` adds this module's entries."""
        return add_hook(self.__dict__.setdefault("_state_dict_pre_hooks", OrderedDict()), hook, False)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(module, state_dict, prefix, local_metadata)` runs after `state_dict()` added this module's entries
        and its children's, and may change `state_dict` in place (it must return None)."""
        return add_hook(self.__dict__.setdefault("_state_dict_hooks", OrderedDict()), hook, False)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """PyTorch's private post-hook, which libraries use: as `register_state_dict_post_hook`'s, but a state dict
        it returns replaces the one `state_dict()` returns."""
        may_return = self.__dict__.setdefault("_state_dict_hooks_may_return", {})
        return add_hook(self.__dict__.setdefault("_state_dict_hooks", OrderedDict()), hook, False, may_return)

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False) -> RemovableHandle:
        """PyTorch's private pre-hook, which libraries use: `hook(state_dict, prefix, local_metadata, strict,
        missing_keys, unexpected_keys, error_msgs)`, taking the module first only `with_module`."""
        if not with_module:
            hook = _without_module(hook)
        return self.register_load_state_dict_pre_hook(hook)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)`
        runs before anything is loaded; it may edit `state_dict` (load_state_dict's own copy), and a message it
        appends to `error_msgs` makes the load fail."""
        return add_hook(self.__dict__.setdefault("_load_state_dict_pre_hooks", OrderedDict()), hook, False)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(module, incompatible_keys)` runs after the values are loaded; it may edit the lists
        `incompatible_keys.missing_keys` / `unexpected_keys` in place, which the strict check then reads."""
        return add_hook(self.__dict__.setdefault("_load_state_dict_post_hooks", OrderedDict()), hook, False)

    # The version `state_dict()` records for each module in `_metadata`; a layer raises it when its saved
    # format changes.
    _version: int = 1

    def _prefixed_modules(self, prefix: str) -> Iterator[tuple[str, Self]]:
        """(prefix of its keys, module) for this module and every module below it, a module reached by two
        names under both, as PyTorch's `state_dict()` walks them."""
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module._prefixed_modules(f"{prefix}{name}.")

    def _own_state(self, prefix: str) -> dict[str, Tensor]:
        slots = {prefix + name: param for name, param in self._parameters.items() if param is not None}
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                slots[prefix + name] = buffer
        return slots

    def _state_slots(self) -> dict[str, Tensor]:
        """Every tensor `state_dict()` holds, by dotted name."""
        slots = {}
        for module_prefix, module in self._prefixed_modules(""):
            slots.update(module._own_state(module_prefix))
        return slots

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy the values of `state_dict` (Tensors or numpy arrays) into this module's parameters and buffers,
        and each module's extra state into its `set_extra_state`. With `assign`, the checkpoint's tensors
        themselves take the slots (keeping their dtype and device; a tensor for a parameter becomes a Parameter
        with the old one's requires_grad), as PyTorch's `assign=True` for modules built on the meta device.

        Nothing is loaded when a shape mismatches, a pre-hook reports an error or, with `strict` and no post-hooks
        to see them first, when keys are missing or unexpected; the error lists them all, in PyTorch's words.
        With post-hooks the values load first, as in PyTorch, and the strict check reads the keys they leave.
        Each module's pre-hooks see only the keys under its prefix, as PyTorch's; they all run before anything is
        loaded (PyTorch runs each module's just before loading it). Post-hooks run children first, each seeing the
        keys found in the modules loaded so far, as PyTorch's recursion runs them.
        Each tensor receives a new array, so earlier `state_dict()` results keep their values, and its version
        goes up as after PyTorch's in-place copy.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # the pre-hooks' own copy
        modules = list(self._prefixed_modules(""))
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        for prefix, module in modules:
            hooks = _hooks(module, "_load_state_dict_pre_hooks")
            if hooks or type(module)._upgrade_state_dict is not StateDictMethods._upgrade_state_dict:
                local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
                if assign:
                    local_metadata["assign_to_params_buffers"] = True
                state_dict = _prepare_keys(module, state_dict, prefix, local_metadata, hooks,
                                           (missing, unexpected, errors))
        slots = self._state_slots()
        extras = {prefix + EXTRA_STATE: module for prefix, module in modules
                  if type(module).set_extra_state is not StateDictMethods.set_extra_state}
        missing_by = [[key for key in (*module._own_state(prefix), prefix + EXTRA_STATE)
                       if key not in state_dict and (key in slots or key in extras)] for prefix, module in modules]
        unexpected_by = self._unexpected_keys(state_dict, slots, extras, modules)
        all_missing = missing + [key for keys in missing_by for key in keys]
        all_unexpected = unexpected + [key for keys in unexpected_by for key in keys]
        loaded = {}  # the arrays to copy in, or with `assign` the tensors to put in place
        for key, current in slots.items():
            if key not in state_dict:
                continue
            incoming = state_dict[key]
            if _is_placeholder(incoming) and _is_placeholder(current):
                continue  # neither has a shape yet: both stay lazy, as in PyTorch
            if not isinstance(incoming, (Tensor, np.ndarray)) and not _is_placeholder(incoming):
                errors.append(f'While copying the parameter named "{key}", expected actorgrad.Tensor or Tensor-like '
                              f"object from checkpoint but received {type(incoming)}")
                continue
            if not _is_placeholder(current) and not _is_placeholder(incoming) and current.ndim == 0 \
                    and incoming.shape == (1,):
                # PyTorch's reading of old checkpoints that saved a scalar as a one-element vector
                incoming = incoming[0] if isinstance(incoming, Tensor) else np.asarray(incoming[0])
            array = _as_array(incoming)
            # a placeholder's shape raises PyTorch's error for loading it into a materialized tensor
            shape = incoming.shape if _is_placeholder(incoming) else array.shape
            if _is_placeholder(current):
                current.materialize(shape)  # a lazy module's parameter takes the checkpoint's shape
            if shape != current.shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {shape} from checkpoint, "
                    f"the shape in current model is {current.shape}."
                )
            elif assign and isinstance(current, Parameter) and current.requires_grad and array.dtype.kind not in "fc":
                errors.append(  # the Parameter that assign makes of it could not require grad
                    f'While copying the parameter named "{key}", whose dimensions in the model are {current.shape} and '
                    f"whose dimensions in the checkpoint are {shape}, an exception occurred : ('Only Tensors of "
                    "floating point and complex dtype can require gradients',)."
                )
            loaded[key] = incoming if assign else array
        post_hooked = any(_hooks(module, "_load_state_dict_post_hooks") for _, module in modules)
        if errors or (strict and not post_hooked and (all_missing or all_unexpected)):
            self._refuse_load(strict, all_missing, all_unexpected, errors)
        if assign:
            self._assign_state(loaded, slots)
        else:
            # An entry that holds a slot's own array (a state_dict() of this module, tied weights) reads what was
            # loaded into that slot before it, as PyTorch's entries, views of the slots, see its in-place copies.
            owners = {id(slot._data): (slot._data, slot) for slot in slots.values()}  # (array, the slot holding it)
            for key, array in loaded.items():
                current = slots[key]
                held, owner = owners.get(id(array), (None, None))
                if held is array:
                    array = owner._data
                current._data = current._device.asarray(array).astype(current.dtype, copy=False)  # a copy on its device
                bump_version(current)  # PyTorch copies in place, so graphs that saved the old value refuse backward
        keys = _IncompatibleKeys(missing, unexpected)
        open_modules = []  # the modules whose children are being walked, innermost last
        for (prefix, module), missing_here, unexpected_here in zip(modules, missing_by, unexpected_by, strict=True):
            while open_modules and not prefix.startswith(open_modules[-1][0]):
                _run_post_hooks(open_modules.pop()[1], keys)
            missing += missing_here
            unexpected += unexpected_here
            if prefix + EXTRA_STATE in extras and prefix + EXTRA_STATE in state_dict:
                module.set_extra_state(state_dict[prefix + EXTRA_STATE])
            open_modules.append((prefix, module))
        while open_modules:
            _run_post_hooks(open_modules.pop()[1], keys)
        if strict and (missing or unexpected):
            self._refuse_load(strict, missing, unexpected, errors)
        return keys

    def _unexpected_keys(self, state_dict: dict, slots: dict, extras: dict, modules: list) -> list[list[str]]:
        """The keys no slot takes, listed for each of `modules` under the one PyTorch's recursion reports each under
        (the deepest one their dotted path reaches); keys under a child set to None are ignored, as in PyTorch."""
        order = {prefix: place for place, (prefix, _) in enumerate(modules)}
        owned: list[list[str]] = [[] for _ in modules]
        for key in state_dict:
            if key in slots or key in extras:
                continue
            module, prefix, *path = self, "", *key.split(".")
            while len(path) > 1 and path[0] in module._modules:
                module, prefix = module._modules[path[0]], f"{prefix}{path[0]}."
                path = path[1:]
                if module is None:
                    break
            if module is not None:
                owned[order[prefix]].append(key)
        return owned

    def _assign_state(self, incoming: dict[str, Any], slots: dict[str, Tensor]) -> None:
        """`load_state_dict(assign=True)`: set each slot's attribute to the checkpoint's own tensor (a slot shared
        under several names takes the last one, as in PyTorch)."""
        owners = {}
        for prefix, module in self._prefixed_modules(""):
            for name in module._own_state(""):
                owners[prefix + name] = (module, name)
        for key, value in incoming.items():
            if not isinstance(value, Tensor):
                value = Tensor(value)
            if isinstance(slots[key], Parameter):
                if isinstance(value, Parameter):
                    value.requires_grad_(slots[key].requires_grad)
                else:
                    value = Parameter(value, requires_grad=slots[key].requires_grad)
            module, name = owners[key]
            setattr(module, name, value)

    def _upgrade_state_dict(self, state_dict: dict, prefix: str, version: int | None) -> None:
        """Bring a checkpoint this module's class saved at an older `version` (None: unknown) up to the current
        format, in place, before the keys are matched; layers whose format changed override it."""

    def _refuse_load(self, strict: bool, missing: list, unexpected: list, errors: list) -> None:
        listed = []
        if strict and missing:
            listed.append("Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if strict and unexpected:
            listed.append("Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
        raise RuntimeError(
            f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(listed + errors)
        )
