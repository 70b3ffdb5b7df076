"""Layers without parameters: the activations and Dropout."""

from __future__ import annotations

from actorgrad.nn import functional as F
from actorgrad.nn.module import Module
from actorgrad.ops import relu, tanh
from actorgrad.tensor import Tensor


class ReLU(Module):
    def forward(self, input: Tensor) -> Tensor:
        return relu(input)


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return tanh(input)


class GELU(Module):
    """x * Phi(x), exactly (`approximate='none'`) or with PyTorch's tanh approximation (`'tanh'`)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Dropout(Module):
    """Zeroes each element with probability p while training and scales the rest by 1/(1-p); identity in eval."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
