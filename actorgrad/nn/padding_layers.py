"""The padding layers: `nn.functional.pad` with a fixed padding and mode. A padding given as one int pads every
side of the last 1, 2 or 3 dims by it; a sequence is taken as it is, (before, after) pairs from the last dim back."""

from __future__ import annotations

from collections.abc import Sequence

from actorgrad.nn.module import Module
from actorgrad.ops.shape import pad
from actorgrad.tensor import Tensor


class _PadNd(Module):
    """Pads the last `dims` dims in `mode`."""

    mode = ""
    dims = 0

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__()
        self.padding = tuple(padding) if isinstance(padding, Sequence) else (padding,) * (2 * self.dims)

    def forward(self, input: Tensor) -> Tensor:
        return pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    mode = "constant"

    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    dims = 1


class ConstantPad2d(_ConstantPadNd):
    dims = 2


class ConstantPad3d(_ConstantPadNd):
    dims = 3


class _ZeroPad:
    """Constant padding with 0, whose repr shows the padding alone (mixed in before a ConstantPad class)."""

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    pass


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    pass


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    pass


class ReflectionPad1d(_PadNd):
    mode, dims = "reflect", 1


class ReflectionPad2d(_PadNd):
    mode, dims = "reflect", 2


class ReflectionPad3d(_PadNd):
    mode, dims = "reflect", 3


class ReplicationPad1d(_PadNd):
    mode, dims = "replicate", 1


class ReplicationPad2d(_PadNd):
    mode, dims = "replicate", 2


class ReplicationPad3d(_PadNd):
    mode, dims = "replicate", 3


class _CircularPadNd(_PadNd):
    """Circular padding, which checks the input's rank itself, as PyTorch's layer does: (C, ...) or (N, C, ...)."""

    mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got {input.dim()}D input)")
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    dims = 1


class CircularPad2d(_CircularPadNd):
    dims = 2


class CircularPad3d(_CircularPadNd):
    dims = 3
