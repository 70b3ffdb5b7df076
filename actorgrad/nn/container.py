"""Sequential: modules applied one after another, indexable and iterable like a list."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from actorgrad.nn.module import Module


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

    def _index(self, idx: int) -> str:
        size = len(self)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        return list(self._modules)[idx % size]

    def __getitem__(self, idx: int | slice) -> Module:
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._index(idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(self._index(idx), module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input
