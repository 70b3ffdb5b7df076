"""What the adaptive optimizers (RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam) share: a step counter kept as
PyTorch keeps it, and running averages on raw arrays in the order PyTorch's kernels compute them, so float64 results
match its unfused CPU kernels bit for bit (its vectorised ones fuse multiply-adds and can differ in the last bit)."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.default_dtype import default_float
from actorgrad.devices import Device
from actorgrad.optim.optimizer import Optimizer
from actorgrad.tensor import Tensor


class CountingOptimizer(Optimizer):
    """An optimizer whose per-parameter counters (`step`, and what `_counters` adds) are 0-d CPU tensors of the
    default float dtype; a state dict that saved them as numbers (an older PyTorch did) loads them as tensors
    again."""

    _counters: tuple[str, ...] = ("step",)

    def _fill_loaded(self) -> None:
        super()._fill_loaded()
        for state in self.state.values():
            for name in self._counters:
                if name in state and not isinstance(state[name], Tensor):
                    state[name] = counter(float(state[name]))


def counter(value: float = 0.0) -> Tensor:
    """A 0-d tensor of the default float dtype (float32 unless set to float64) on the CPU, as PyTorch keeps a
    step count (when not capturable)."""
    return Tensor(np.array(value, default_float()))


def next_step(state: dict) -> float:
    """Advance the parameter's step count and return it (1 on the first step)."""
    state["step"]._data += 1
    return state["step"].item()


def zeros_state(param: Any, device: Device) -> Tensor:
    """A state tensor of zeros shaped and typed as the parameter's array, on its device."""
    return Tensor(device.xp.zeros_like(param), device=device)


def lerp_(average: Any, target: Any, weight: float) -> None:
    """`average.lerp_(target, weight)` in place, from whichever end is nearer, as PyTorch's kernel computes it."""
    if abs(weight) < 0.5:
        average += weight * (target - average)
    else:
        average[...] = target - (target - average) * (1 - weight)


def decay_square_(average: Any, value: Any, decay: float) -> None:
    """`average.mul_(decay).addcmul_(value, value, value=1 - decay)`: a running average of `value` squared."""
    average *= decay
    average += (1 - decay) * value * value
