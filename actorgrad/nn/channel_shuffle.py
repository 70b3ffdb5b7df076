"""ChannelShuffle: channel_shuffle's group count held as a layer."""

from __future__ import annotations

from actorgrad.nn.module import Module
from actorgrad.ops.channel_shuffle import channel_shuffle
from actorgrad.tensor import Tensor


class ChannelShuffle(Module):
    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
