"""view(dtype): a tensor's memory read as another dtype, its bits reinterpreted, as PyTorch's `Tensor.view(dtype)`
(the shape form of view is in shape.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.tensor import Tensor
from actorgrad.version_counter import version_counter


def is_dtype(value: Any) -> bool:
    return isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic))


def view_as_dtype(input: Tensor, dtype: np.dtype) -> Tensor:
    """The input's memory read as `dtype` (bits reinterpreted, no gradient, as PyTorch's view(dtype)); a dtype of
    another size scales the last dim, on PyTorch's conditions on the layout."""
    x = input._data
    if dtype.itemsize != x.dtype.itemsize:
        names = (SCALAR_NAMES.get(d, d) for d in (x.dtype, dtype))
        pair = "view {} as {} (different element sizes)".format(*names)
        if not x.ndim:
            raise RuntimeError(f"self.dim() cannot be 0 to {pair}")
        strides, ratio = input.stride(), dtype.itemsize // x.dtype.itemsize
        if strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 to {pair}, but got {strides[-1]}")
        if ratio > 1:
            checks = [("size(-1)", x.shape[-1]), ("storage_offset()", input.storage_offset())]
            for what, n in checks + [(f"stride({d})", st) for d, st in enumerate(strides[:-1])]:
                if n % ratio:
                    raise RuntimeError(f"self.{what} must be divisible by {ratio} to {pair}, but got {n}")
        if not x.size:
            last = x.shape[-1] * x.dtype.itemsize // dtype.itemsize
            x = input._device.xp.empty(x.shape[:-1] + (last,), dtype)  # numpy views no empty array as another size
    out = Tensor(x.view(dtype), device=input._device)
    out._vc = version_counter(input)  # a write through either is a change of both, as for detach()
    return out
