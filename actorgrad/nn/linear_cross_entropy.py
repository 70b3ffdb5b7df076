"""LinearCrossEntropyLoss: a Linear layer to logits and the cross entropy against the target in one module, so
the chunked linear_cross_entropy can skip materializing the logits (PyTorch's torch.nn.LinearCrossEntropyLoss)."""

from __future__ import annotations

import math
from typing import Any

from actorgrad.nn.layers import Linear
from actorgrad.nn.loss import _WeightedLoss
from actorgrad.ops.linear_cross_entropy import LinearCrossEntropyOptions, linear_cross_entropy
from actorgrad.tensor import Tensor


class LinearCrossEntropyLoss(_WeightedLoss):
    """The loss of `linear_cross_entropy` with its own `linear` (weight and optional bias). For a K-dimensional
    loss (`out_features=(d1, ..., dK)`) the linear layer stores C * d1 * ... * dK rows, reshaped in `forward`."""

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        out_features: tuple[int, ...] = (),
        bias: bool = False,
        device: Any = None,
        dtype: Any = None,
        reduction: str = "mean",
        weight: Tensor | None = None,
        ignore_index: int | None = None,
        label_smoothing: float = 0.0,
        options: LinearCrossEntropyOptions | None = None,
    ) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if not 0 <= label_smoothing <= 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(
            in_features, math.prod(out_features, start=num_classes), bias=bias, dtype=dtype, device=device
        )
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        linear_weight = self.linear.weight.reshape((self.num_classes, *self.out_features, self.linear.in_features))
        bias = self.linear.bias
        linear_bias = None if bias is None else bias.reshape((self.num_classes, *self.out_features))
        return linear_cross_entropy(
            input, linear_weight, target, linear_bias=linear_bias, weight=self.weight, reduction=self.reduction,
            ignore_index=self.ignore_index, label_smoothing=self.label_smoothing, options=self.options,
        )

    def extra_repr(self) -> str:
        return (
            f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
            f"out_features={self.out_features}, bias={self.linear.bias is not None}, reduction={self.reduction}, "
            f"ignore_index={self.ignore_index}, label_smoothing={self.label_smoothing}, options={self.options}"
        )
