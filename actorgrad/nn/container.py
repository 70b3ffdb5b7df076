"""Containers: Sequential (modules applied in turn), ModuleList and ModuleDict (ParameterList and ParameterDict
live in parameter_containers).

Each registers what it holds under its index or key, so `parameters()`, `state_dict()` (`0.weight`,
`blocks.2.bias`) and `train()` reach it. Index errors and type errors are PyTorch's.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from typing import Any

from actorgrad.nn.module import Module, indent


def absolute_index(idx: Any, size: int) -> int:
    """`idx` (negative from the end) as a position among `size` items, with PyTorch's errors."""
    idx = operator.index(idx)  # a str or a float is refused, as in PyTorch
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


def _renumber(module: Module) -> None:
    """Name the remaining submodules 0, 1, ... again after a deletion, as PyTorch does."""
    modules = list(module._modules.values())
    module._modules.clear()
    module._modules.update((str(i), m) for i, m in enumerate(modules))


def update_pairs(owner: str, values: Any) -> Iterable[tuple[Any, Any]]:
    """The (key, value) pairs of an `update` argument that is no mapping, checked as PyTorch checks them."""
    for j, pair in enumerate(values):
        if not isinstance(pair, Iterable):
            raise TypeError(f"{owner} update sequence element #{j} should be Iterable; is{type(pair).__name__}")
        if len(pair) != 2:
            raise ValueError(f"{owner} update sequence element #{j} has length {len(pair)}; 2 is required")
        yield pair[0], pair[1]


class KeyedContainer:
    """The mapping protocol ModuleDict and ParameterDict share, over the dict `_ordered_keys()` of their keys in
    insertion order."""

    def _ordered_keys(self) -> dict:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._ordered_keys())

    def __iter__(self) -> Iterator[str]:
        return iter(self._ordered_keys())

    def __contains__(self, key: str) -> bool:
        return key in self._ordered_keys()

    def keys(self) -> Any:
        return self._ordered_keys().keys()

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value


class Sequential(Module):
    """`Sequential(a, b, c)` or `Sequential(OrderedDict(name=module, ...))`; forward feeds each module's output
    to the next."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(args):
                self.add_module(str(index), module)

    def _key(self, idx: Any) -> str:
        return list(self._modules)[absolute_index(idx, len(self))]

    def __getitem__(self, idx: int | slice) -> Module:
        if isinstance(idx, slice):  # keeps the names, as PyTorch's slice does
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._key(idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, self._key(idx), module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [self._key(idx)]
        for key in keys:
            delattr(self, key)
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(
                f"add operator supports only objects of Sequential class, but {type(other)} is given."
            )
        return Sequential().extend(chain(self, other))

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(
                f"add operator supports only objects of Sequential class, but {type(other)} is given."
            )
        return self.extend(list(other))

    def _check_factor(self, other: Any) -> None:
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")

    def __mul__(self, other: int) -> Sequential:
        """A new Sequential of this one's modules `other` times over (the same module objects, numbered on)."""
        self._check_factor(other)
        return Sequential().extend(list(self) * other)

    __rmul__ = __mul__

    def __imul__(self, other: int) -> Sequential:
        self._check_factor(other)
        return self.extend(list(self) * (other - 1))

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        for module in sequential:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Put `module` at `index` (-len <= index <= len), shifting the later ones up by one."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def pop(self, key: int | slice) -> Module:
        value = self[key]
        del self[key]
        return value

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules registered as `0`, `1`, ...; it has no forward of its own."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Module | ModuleList:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(absolute_index(idx, len(self)))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(absolute_index(idx, len(self))), module)

    def __delitem__(self, idx: int | slice) -> None:
        indices = range(len(self))[idx] if isinstance(idx, slice) else [absolute_index(idx, len(self))]
        for i in indices:
            delattr(self, str(i))
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList(chain(self, other))

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got {type(modules).__name__}")
        for module in list(modules):  # a list extended by itself adds each module once
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def pop(self, key: int | slice) -> Module:
        value = self[key]
        del self[key]
        return value

    def __repr__(self) -> str:
        """Runs of identical modules are folded, as PyTorch prints them: `(0-2): 3 x Linear(...)`."""
        reprs = [repr(module) for module in self]
        name = self._get_name()  # a subclass prints its own name, as in PyTorch
        if not reprs:
            return f"{name}()"
        lines = []
        start = 0
        for end in range(1, len(reprs) + 1):
            if end == len(reprs) or reprs[end] != reprs[start]:
                label = f"({start}): " if end - start == 1 else f"({start}-{end - 1}): {end - start} x "
                lines.append(indent(label + reprs[start], 2))
                start = end
        return f"{name}(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(KeyedContainer, Module):
    """Modules by name, in insertion order; it has no forward of its own."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def _ordered_keys(self) -> dict:
        return self._modules

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def clear(self) -> None:
        self._modules.clear()

    def items(self) -> Any:
        return self._modules.items()

    def values(self) -> Any:
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace modules from a mapping (in its order) or from (name, module) pairs."""
        if not isinstance(modules, Iterable):
            raise TypeError(
                f"ModuleDict.update should be called with an iterable of key/value pairs, but got "
                f"{type(modules).__name__}"
            )
        pairs = modules.items() if isinstance(modules, Mapping | ModuleDict) else update_pairs("ModuleDict", modules)
        for key, module in pairs:
            self[key] = module
