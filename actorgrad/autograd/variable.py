"""`autograd.Variable`, PyTorch's deprecated name from before Variables and Tensors merged: every Tensor is one."""

from __future__ import annotations

import warnings
from typing import Any

from actorgrad.creation import empty
from actorgrad.tensor import Tensor

VOLATILE_REMOVED = "volatile was removed and now has no effect. Use `with actorgrad.no_grad():` instead."


class _VariableMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, Tensor)


class Variable(metaclass=_VariableMeta):
    """`Variable(t, requires_grad=False)` is a new leaf sharing `t`'s data (as `t.detach()`), requiring grad as
    asked; `Variable()` is an empty tensor. Kept for old code: write the tensor itself instead. `volatile`, long
    gone from PyTorch, is taken and warned about as PyTorch does, so that such code still runs."""

    def __new__(  # type: ignore[misc]
        cls, data: Tensor | None = None, requires_grad: bool = False, volatile: bool = False
    ) -> Tensor:
        if volatile:
            warnings.warn(VOLATILE_REMOVED, UserWarning, stacklevel=2)
            if requires_grad:
                raise ValueError("Variable can't be volatile and require_grad at the same time!")
        if data is None:
            data = empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
