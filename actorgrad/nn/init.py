"""Parameter initialisation, in place and without recording, drawing from actorgrad's generators.

Each function fills `tensor`'s array with values drawn from `generator` (the default one unless given), so
`actorgrad.manual_seed` makes a model's initial weights repeatable. The formulas are PyTorch's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices import cpu, is_writeable
from actorgrad.random import Generator, numpy_generator
from actorgrad.tensor import Tensor, bump_version

__all__ = [
    "calculate_gain", "constant_", "kaiming_uniform_", "normal_", "ones_", "uniform_", "xavier_uniform_", "zeros_",
]

_LINEAR_GAINS = ("linear", "conv1d", "conv2d", "conv3d", "sigmoid")


def _fill(tensor: Tensor, values: Any) -> Tensor:
    """Write `values` (a number, or an array drawn on the host) into the tensor's own array, on its device (a
    fresh array where the held one is read-only, which only a numpy array can be)."""
    if isinstance(values, np.ndarray) and tensor._device is not cpu:
        values = tensor._device.asarray(values)
    if is_writeable(tensor._data):
        tensor._data[...] = values
        bump_version(tensor)
    else:
        tensor._data = np.array(np.broadcast_to(values, tensor.shape), dtype=tensor.dtype)
    return tensor


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended scale of weights feeding `nonlinearity`."""
    if nonlinearity in _LINEAR_GAINS:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    return _fill(tensor, numpy_generator(generator).uniform(a, b, tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    return _fill(tensor, numpy_generator(generator).normal(mean, std, tensor.shape))


def constant_(tensor: Tensor, val: float) -> Tensor:
    return _fill(tensor, val)


def zeros_(tensor: Tensor) -> Tensor:
    return _fill(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    return _fill(tensor, 1)


def kaiming_uniform_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan), He et al. (2015)."""
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _fans(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    if fan == 0:
        return tensor
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan)
    return uniform_(tensor, -bound, bound, generator)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(6 / (fan_in + fan_out)), Glorot and Bengio (2010)."""
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def fan_in_bound(weight: Tensor) -> float:
    """1/sqrt(fan_in): the bound PyTorch's Linear and Conv layers draw their bias from (0 for an empty fan)."""
    fan_in, _ = _fans(weight)
    return 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
