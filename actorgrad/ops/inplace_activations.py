"""nn.functional's in-place activations (relu_, elu_, celu_, selu_, leaky_relu_, hardtanh_, rrelu_, threshold_):
each the activation with `inplace=True`, which writes the result into the input through `write_in_place` (a
version bump, the history rebased onto the op's node, a leaf that requires grad refused), and returns the input.
"""

from __future__ import annotations

from actorgrad.ops import activations, piecewise_linear_activations
from actorgrad.tensor import Tensor

__all__: list[str] = []


def relu_(input: Tensor) -> Tensor:
    return piecewise_linear_activations.relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return activations.elu(input, alpha, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return activations.celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    return activations.selu(input, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return piecewise_linear_activations.leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return piecewise_linear_activations.hardtanh(input, min_val, max_val, inplace=True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    return piecewise_linear_activations.rrelu(input, lower, upper, training, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return piecewise_linear_activations.threshold(input, threshold, value, inplace=True)
