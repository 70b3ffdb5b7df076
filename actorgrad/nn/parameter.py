"""Parameter: the Tensor subclass a Module registers as a learnable weight when it is assigned as an attribute."""

from __future__ import annotations

import numpy as np

from actorgrad.tensor import Tensor


class Parameter(Tensor):
    """A leaf Tensor that requires grad by default and that Modules collect in `parameters()`.

    It shares `data`'s array, as PyTorch's does; an optimizer copies a shared array before its first update.
    """

    __slots__ = ()

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            data = Tensor(np.empty(0, np.float32))
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, got {type(data).__name__}")
        super().__init__(data._data, requires_grad=requires_grad, device=data._device)

    def __deepcopy__(self, memo: dict) -> Parameter:
        """A new Parameter of a copy of the data, as PyTorch's: no `.grad`, a fresh version counter."""
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.detach().clone(), self.requires_grad)
        return memo[id(self)]

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
