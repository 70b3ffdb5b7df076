"""bilinear: y = x1ᵀ A x2 + b for each pair of rows (over any leading dims), one A per output feature. Composed as
PyTorch composes it: the leading dims flattened, one three-operand contraction (its gradients are einsum's), the
bias added after, and PyTorch's checks in its order."""

from __future__ import annotations

import math
from typing import Any

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.einsum_contraction import einsum
from actorgrad.ops.linalg import TYPE_META_NAMES
from actorgrad.tensor import Tensor

__all__ = ["bilinear"]
METHODS: dict[str, Any] = {}


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(bilinear, "bilinear", input1, input2, weight, bias)
    named = {"input1": input1, "input2": input2, "weight": weight}
    if bias is not None:
        named["bias"] = bias
    if len({t.dtype for t in named.values()}) > 1:
        got = ", ".join(f"{name}: {TYPE_META_NAMES.get(t.dtype, t.dtype)}" for name, t in named.items())
        raise RuntimeError(f"All tensors must have the same dtype, got {got}")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for dim, (a, b) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
        if a != b:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {dim}: got {a} and {b}")
    for name, given, expected in (("input1", input1.size(-1), weight.size(1)),
                                  ("input2", input2.size(-1), weight.size(2))):
        if given != expected:
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got {given} but expected "
                               f"{expected}")
    if bias is not None and bias.size(0) != weight.size(0):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.size(0)} but expected "
                           f"{weight.size(0)}")
    lead = input1.shape[:-1]
    rows1, rows2 = (x.reshape(math.prod(lead), x.shape[-1]) for x in (input1, input2))
    output = einsum("ni,oij,nj->no", rows1, weight, rows2).reshape(*lead, weight.shape[0])
    return output if bias is None else output + bias
