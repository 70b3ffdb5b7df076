"""Module's remaining PyTorch methods: set_submodule, share_memory, to_empty, compile, unpickling, and the moves and
casts to what actorgrad lacks (ipu, xpu, mtia devices; the bfloat16 dtype), refused with errors that say so. Module
inherits them from ModuleExtras."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Self, TypeVar

import numpy as np

from actorgrad.devices.device import device as as_device
from actorgrad.nn.module_hooks import HOOK_DICTS
from actorgrad.ops.tensor_kinds import MISSING_DEVICES


class ModuleExtras:
    """PyTorch's Module methods beyond registration, state, casts and hooks."""

    # PyTorch's class flags: Module.__init__ does not call super().__init__(), and unpickling keeps no old source;
    # and the type variable its state_dict() signature names.
    call_super_init: bool = False
    dump_patches: bool = False
    T_destination = TypeVar("T_destination", bound=dict)

    def set_submodule(self, target: str, module: Any, strict: bool = False) -> None:
        """Put `module` at dotted path `target` (its parent must exist); with `strict`, only in place of a
        submodule that is already there."""
        from actorgrad.nn.module import Module  # module.py builds Module on this mixin

        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        path, _, name = target.rpartition(".")
        parent = self.get_submodule(path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def __setstate__(self, state: dict) -> None:
        """Unpickling, as PyTorch's: the saved attributes, and empty hook registries and non-persistent buffer names
        where a module pickled without them lacks them (so a subclass's `super().__setstate__(state)` works). The
        names' set has PyTorch's attribute name, `_non_persistent_buffers_set`; older actorgrad pickles name it
        `_non_persistent_buffers`."""
        self.__dict__.update(state)
        for name in HOOK_DICTS:
            self.__dict__.setdefault(name, OrderedDict())
        self.__dict__.setdefault("_non_persistent_buffers_set", self.__dict__.pop("_non_persistent_buffers", set()))
        self.__dict__.setdefault("_is_full_backward_hook", None)

    def share_memory(self) -> Self:
        """`share_memory_()` on every parameter and buffer (a no-op for actorgrad's tensors)."""
        for tensor in (*self.parameters(), *self.buffers()):
            tensor.share_memory_()
        return self

    def to_empty(self, *, device: Any, recurse: bool = True) -> Self:
        """Every parameter and buffer replaced, in place, by an uninitialized tensor of its shape and dtype on
        `device` (None: its own), for a module built without real values, to be filled by `load_state_dict` or an
        init. Gradients are replaced alike, as PyTorch's."""
        target = None if device is None else as_device(device)
        modules = self.modules() if recurse else (self,)
        for module in modules:
            for tensor in (*module._parameters.values(), *module._buffers.values()):
                for t in (tensor, None if tensor is None else tensor._grad):
                    if t is not None:
                        where = t._device if target is None else target
                        t._data, t._device = where.asarray(np.empty(t.shape, t.dtype)), where
        return self

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """PyTorch compiles the module's forward in place; actorgrad has no compiler and runs it eagerly, which by
        torch.compile's own contract gives the same results, so this changes nothing."""

    def bfloat16(self) -> Self:
        raise TypeError("actorgrad has no bfloat16 dtype; cast the module with half() or float() instead")

    def ipu(self, device: Any = None) -> Self:
        raise RuntimeError(MISSING_DEVICES["ipu"])

    def xpu(self, device: Any = None) -> Self:
        raise RuntimeError(MISSING_DEVICES["xpu"])

    def mtia(self, device: Any = None) -> Self:
        raise RuntimeError(MISSING_DEVICES["mtia"])
