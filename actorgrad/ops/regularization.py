"""dropout: a product with a random mask, drawn from actorgrad's generator so `manual_seed` repeats it."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops.arithmetic import mul
from actorgrad.ops.inplace import mul_
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.random import numpy_generator
from actorgrad.tensor import Tensor

__all__ = ["dropout"]


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes each element with probability p and scales the rest by 1/(1-p); recorded as MulBackward0, as in
    PyTorch; `inplace` multiplies `input` itself by the mask and returns it, as PyTorch does."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    x = input._data
    if p == 1.0:  # all zeros, which any dtype holds, as PyTorch's
        mask = np.zeros(x.shape, x.dtype)
    elif x.dtype.kind != "f":  # the 1 / (1 - p) scale is a float, as in PyTorch
        raise RuntimeError(f"result type Float can't be cast to the desired output type {SCALAR_NAMES[x.dtype]}")
    else:
        dtype = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float64)  # random() draws only these
        keep = numpy_generator(None).random(x.shape, dtype=dtype) >= p
        mask = (keep * (1.0 / (1.0 - p))).astype(x.dtype)
    where = input._device
    mask = Tensor(mask if where.type != "cuda" else where.asarray(mask), device=where)
    return mul_(input, mask) if inplace else mul(input, mask)


METHODS: dict[str, Any] = {}
