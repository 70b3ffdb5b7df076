"""`nn.utils.prune`, as PyTorch's: zero out parts of a parameter through a mask kept beside it.

Pruning `module.<name>` moves the parameter to `<name>_orig`, stores the mask as the buffer `<name>_mask`, and
registers a forward pre-hook (the pruning method itself) that recomputes `module.<name> = orig * mask` before
every forward, so gradients reach `<name>_orig` only where the mask keeps it. Pruning the same parameter again
folds the methods into one PruningContainer, whose new mask prunes only among the entries still kept. `remove`
makes the pruning permanent: `<name>` is a parameter again, holding `orig * mask`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

import actorgrad as ag
from actorgrad.nn.module import Module
from actorgrad.nn.utils.convert_parameters import parameters_to_vector
from actorgrad.nn.utils.pruning_methods import (
    BasePruningMethod,
    CustomFromMask,
    Identity,
    L1Unstructured,
    LnStructured,
    PruningContainer,
    RandomStructured,
    RandomUnstructured,
)
from actorgrad.tensor import Tensor

__all__ = [
    "BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured", "PruningContainer",
    "RandomStructured", "RandomUnstructured", "custom_from_mask", "global_unstructured", "identity", "is_pruned",
    "l1_unstructured", "ln_structured", "random_structured", "random_unstructured", "remove",
]

ModuleT = TypeVar("ModuleT", bound=Module)


def identity(module: ModuleT, name: str) -> ModuleT:
    """Give `module.<name>` an all-ones mask (the pruning attributes without pruning anything)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: ModuleT, name: str, amount: int | float) -> ModuleT:
    """Prune `amount` entries of `module.<name>` chosen at random."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: ModuleT, name: str, amount: int | float,
                    importance_scores: Tensor | None = None) -> ModuleT:
    """Prune the `amount` entries of `module.<name>` of smallest |value| (or smallest importance score)."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: ModuleT, name: str, amount: int | float, dim: int) -> ModuleT:
    """Prune `amount` channels along `dim` of `module.<name>` chosen at random."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: ModuleT, name: str, amount: int | float, n: int | float | str, dim: int,
                  importance_scores: Tensor | None = None) -> ModuleT:
    """Prune the `amount` channels along `dim` of `module.<name>` of smallest L`n` norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters: Iterable[tuple[Module, str]], pruning_method: type[BasePruningMethod],
                        importance_scores: dict | None = None, **kwargs: Any) -> None:
    """Prune the `(module, name)` parameters together, as one vector: with L1Unstructured, the smallest entries
    across all of them go, however they are spread among the parameters."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for module, name in parameters])
    default_mask = parameters_to_vector([getattr(module, name + "_mask") if hasattr(module, name + "_mask")
                                         else ag.ones_like(getattr(module, name)) for module, name in parameters])
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container = PruningContainer()
    container._tensor_name = "temp"
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        custom_from_mask(module, name, mask=final_mask[start:start + param.numel()].view_as(param))
        start += param.numel()


def custom_from_mask(module: ModuleT, name: str, mask: Tensor) -> ModuleT:
    """Prune `module.<name>` where `mask` is zero."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: ModuleT, name: str) -> ModuleT:
    """Make the pruning of `module.<name>` permanent and drop its hook, `<name>_orig` and `<name>_mask`."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether `module` or any module inside it carries a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())
