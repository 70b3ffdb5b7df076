"""PyTorch's legacy layers kept for old code: CrossMapLRN2d (Lua Torch's cross-channel LRN), and the deprecated
NLLLoss2d and Container, which warn as PyTorch's do."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.nn.loss import NLLLoss
from actorgrad.nn.module import Module
from actorgrad.ops.einsum_contraction import einsum
from actorgrad.ops.indexing import on_device
from actorgrad.tensor import Tensor
from actorgrad.user_warnings import warn


def _cross_map_window(size: int, channels: int) -> np.ndarray:
    """(channels, channels) 0/1: row c marks the channels whose squares make channel c's scale. As in Lua Torch's
    running sum, which PyTorch keeps: the channels from c - (size - 1) // 2 - 1 + 1 up to c + (size - 1) // 2
    (clipped to the tensor), and channel 0 always, since the running sum never takes it back out."""
    reach = (size - 1) // 2 + 1
    c = np.arange(channels)[:, None]
    j = np.arange(channels)[None, :]
    return ((j <= c + reach - 1) & ((j == 0) | (j >= c - reach + 1))).astype(np.float64)


class CrossMapLRN2d(Module):
    """Local response normalization across the channels of a 4-d input: x / (k + alpha / size * s) ** beta, s the
    sum of squares over a window of channels (see `_cross_map_window`). Its gradient is the true one of this
    forward; PyTorch's hand-written backward differs from finite differences."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        window = _cross_map_window(self.size, input.shape[1]).astype(input.dtype)
        sums = einsum("dc,nchw->ndhw", Tensor(on_device(input, window), device=input.device), input * input)
        return input * (sums * (self.alpha / self.size) + self.k) ** -self.beta

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class NLLLoss2d(NLLLoss):
    """NLLLoss under its old name (NLLLoss takes inputs of any number of dims)."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None, ignore_index: int = -100,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement and see "
             "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.", FutureWarning)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class Container(Module):
    """The old base of modules that hold others, each keyword a submodule; Module does all of it now."""

    def __init__(self, **kwargs: Any) -> None:
        warn("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
             "Subclass that instead.", FutureWarning)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)
