"""Tensor.grad_dtype: the dtype a leaf's `.grad` takes, as PyTorch 2.13's settable property.

By default a leaf's gradient has the leaf's dtype. Set to another dtype, the gradients a backward pass commits
into `.grad` are cast to it (and `.grad =` takes only that dtype); set to None, `.grad =` takes any dtype. The
setting lives in `actorgrad.tensor.grad_dtypes` (by the tensor's id, dropped with the tensor), which the engine's
commit reads.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from actorgrad.tensor import Tensor, grad_dtypes

__all__: list[str] = []


def _grad_dtype(self: Tensor) -> np.dtype | None:
    if self._grad_fn is not None:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return grad_dtypes.get(id(self), self.dtype)


def _set_grad_dtype(self: Tensor, value: Any) -> None:
    if self._grad_fn is not None:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None:
        if isinstance(value, str | bool) or not isinstance(value, np.dtype | type):
            raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got {type(value).__name__}")
        value = np.dtype(value)
    held = self._grad
    if held is not None and value is not None and held.dtype != value:
        raise RuntimeError(
            f"Cannot set grad_dtype to '{value}' because there is already a gradient with dtype '{held.dtype}'. "
            f"Please clear the gradient (.grad = None) before changing grad_dtype, or ensure the new grad_dtype "
            f"matches the existing gradient's dtype."
        )
    key = id(self)
    if key not in grad_dtypes:
        weakref.finalize(self, grad_dtypes.pop, key, None)
    grad_dtypes[key] = value


METHODS = {"grad_dtype": property(_grad_dtype, _set_grad_dtype)}
