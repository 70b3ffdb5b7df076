"""Parameter and Buffer: the Tensor subclasses a Module registers, when one is assigned as an attribute, as a learnable
weight or as state (a buffer, kept in the state dict unless it is not persistent)."""

from __future__ import annotations

import numpy as np

from actorgrad.default_dtype import default_float
from actorgrad.tensor import Tensor
from actorgrad.version_counter import version_counter


class Parameter(Tensor):
    """A leaf Tensor that requires grad by default and that Modules collect in `parameters()`.

    It shares `data`'s array, as PyTorch's does; an optimizer copies a shared array before its first update.
    """

    __slots__ = ()

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            data = Tensor(np.empty(0, default_float()))
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, got {type(data).__name__}")
        if requires_grad and data.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        super().__init__(data._data, requires_grad=requires_grad, device=data._device)

    def __deepcopy__(self, memo: dict) -> Parameter:
        """A new Parameter of a copy of the data, as PyTorch's: no `.grad`, a fresh version counter."""
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.detach().clone(), self.requires_grad)
        return memo[id(self)]

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __format__(self, spec: str) -> str:
        """As PyTorch's: only a plain 0-d Tensor formats as its value, so a Parameter formats as its repr and
        refuses a format spec (`f"{p.item():.3f}"` is the way)."""
        return object.__format__(self, spec)


class Buffer(Tensor):
    """A tensor that a Module registers as a buffer when it is assigned as an attribute, `persistent` or not (in
    `state_dict()` or not), as PyTorch's nn.Buffer. Its data is `data`'s, detached, requiring grad as `data` does."""

    __slots__ = ("persistent",)

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        if data is None:
            data = Tensor(np.empty(0, default_float()))
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer(): data must be a Tensor, got {type(data).__name__}")
        super().__init__(data._data, device=data._device)
        self._vc = version_counter(data)  # as detach(): in-place changes of either show in both
        self.requires_grad = data.requires_grad
        self.persistent = persistent
