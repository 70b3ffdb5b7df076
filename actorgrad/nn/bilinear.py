"""Bilinear: y = x1ᵀ A x2 + b, one (in1_features, in2_features) matrix A per output feature, initialised as PyTorch
initialises it (weight and bias ~ U(-1/sqrt(in1_features), 1/sqrt(in1_features)))."""

from __future__ import annotations

import math
from typing import Any

from actorgrad.creation import empty
from actorgrad.nn import init
from actorgrad.nn.module import Module
from actorgrad.nn.parameter import Parameter
from actorgrad.ops.bilinear import bilinear
from actorgrad.tensor import Tensor


class Bilinear(Module):
    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in1_features, in2_features, **factory))
        self.register_parameter("bias", Parameter(empty(out_features, **factory)) if bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
