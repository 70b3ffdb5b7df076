"""`nn.utils.stateless.functional_call`: run a module with some of its parameters and buffers replaced by given
tensors for the one call, as PyTorch's; deprecated there, as here, in favour of `func.functional_call`."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from actorgrad.nn.module import Module
from actorgrad.tensor import Tensor

__all__ = ["functional_call"]

_MISSING = object()


def functional_call(module: Module, parameters_and_buffers: dict[str, Tensor], args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True, strict: bool = False) -> Any:
    """Deprecated, as in PyTorch (in favour of `actorgrad.func.functional_call`): `module(*args, **kwargs)` with
    each dotted name of `parameters_and_buffers` ('0.weight') standing for its tensor, which gradients then reach.
    With `tie_weights`, a tensor given for one of several names of one shared parameter stands for all of them;
    with `strict`, the names must be exactly the module's. The module is left as it was, even if the call
    raises."""
    warnings.warn("`actorgrad.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be "
                  "removed in a future version of PyTorch. Please use `actorgrad.func.functional_call` instead "
                  "which is a drop-in replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)


def _functional_call(module: Module, parameters_and_buffers: dict[str, Tensor], args: Any = None,
                     kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True, strict: bool = False) -> Any:
    """`functional_call` without its deprecation warning, for `actorgrad.func.functional_call`."""
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrized(module, parameters_and_buffers, tie_weights, strict):
        return module(*args, **kwargs)


def _named_tensors(module: Module) -> dict[str, Tensor]:
    return {**dict(module.named_parameters(remove_duplicate=False)), **dict(module.named_buffers(
        remove_duplicate=False))}


def _untie(module: Module, given: dict[str, Tensor]) -> dict[str, Tensor]:
    """`given`, with a tensor given for one name of a shared tensor given for all its names."""
    names_of: dict[int, set[str]] = {}
    for name, tensor in _named_tensors(module).items():
        names_of.setdefault(id(tensor), set()).add(name)
    tied = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    untied = dict(given)
    for name in [n for n in given if n in tied]:
        values = {id(given[n]) for n in tied[name] if n in given}
        if len(values) > 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(tied[name])}, which are tied. Consider using "
                "tie_weights=False"
            )
        untied.update(dict.fromkeys(tied[name], given[name]))
    return untied


def _check_keys(module: Module, names: dict[str, Tensor]) -> None:
    valid = set(_named_tensors(module))
    unexpected, missing = sorted(set(names) - valid), sorted(valid - set(names))
    messages = []
    if unexpected:
        messages.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        messages.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if messages:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(type(module).__name__,
                                                                             "\n\t".join(messages)))


def _owner(module: Module, path: list[str]) -> Module:
    """The submodule at `path`, with the errors of PyTorch's accessor (which names the whole path to a member
    that is not a module)."""
    for depth, item in enumerate(path):
        if not hasattr(module, item):
            raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
        module = getattr(module, item)
        if not isinstance(module, Module):
            raise TypeError(f"submodule `{'.'.join(path[:depth + 1])}`: {module} is not an instance of "
                            "actorgrad.nn.Module")
    return module


def _swap(module: Module, dotted: str, value: Any) -> Any:
    """Put `value` (or, for _MISSING, nothing) where `dotted` names a parameter, buffer or attribute; return what
    was there. As PyTorch's, only a tensor (or None) may go there, and only in place of one."""
    if value is not _MISSING and value is not None and not isinstance(value, Tensor):
        raise TypeError(f"{value} is not an instance of actorgrad.Tensor")
    *path, name = dotted.split(".")
    owner = _owner(module, path)
    for registry in (owner._parameters, owner._buffers):
        if name in registry:
            old = registry[name]
            if value is _MISSING:
                del registry[name]
            else:
                registry[name] = value
            return old
    current = getattr(owner, name, None)
    if current is not None and not isinstance(current, Tensor):
        raise TypeError(f"attribute `{name}`: {current} is not an instance of actorgrad.Tensor")
    old = owner.__dict__.get(name, _MISSING)
    if value is _MISSING:
        owner.__dict__.pop(name, None)
    else:
        object.__setattr__(owner, name, value)
    return old


@contextmanager
def _reparametrized(module: Module, given: dict[str, Tensor], tie_weights: bool, strict: bool) -> Iterator[None]:
    names = _untie(module, given) if tie_weights else given
    if strict:
        _check_keys(module, names)
    originals: dict[str, Any] = {}
    try:
        for name, tensor in names.items():
            originals[name] = _swap(module, name, tensor)
        yield
    finally:
        for name, original in reversed(originals.items()):
            _swap(module, name, original)
