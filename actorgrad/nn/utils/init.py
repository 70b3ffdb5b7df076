"""`nn.utils.skip_init`: build a module without initialising its parameters and buffers, as PyTorch's."""

from __future__ import annotations

import inspect
from typing import Any, TypeVar

from actorgrad.nn.init import skipping_init
from actorgrad.nn.module import Module

ModuleT = TypeVar("ModuleT", bound=Module)


def skip_init(module_cls: type[ModuleT], *args: Any, **kwargs: Any) -> ModuleT:
    """`module_cls(*args, **kwargs)` with every `nn.init` initialiser it runs left out, for a module about to be
    initialised otherwise (or loaded): its tensors hold what `empty` gave them. PyTorch builds the module on its
    meta device for this, and so asks for a `device` argument; actorgrad, which has none, asks the same."""
    if not issubclass(module_cls, Module):  # a TypeError for a non-class, as PyTorch's
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    with skipping_init():
        return module_cls(*args, **kwargs)
