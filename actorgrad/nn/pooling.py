"""MaxPool1d/2d/3d, AvgPool1d/2d/3d, the adaptive and fractional poolings, MaxUnpool1d/2d/3d and LPPool1d/2d/3d:
the settings of the matching function of `nn.functional` held as a layer; a pooling's stride defaults to the kernel
size."""

from __future__ import annotations

from typing import Any

from actorgrad.nn import functional as F
from actorgrad.nn.module import Module
from actorgrad.ops import adaptive_pooling, fractional_pooling, lp_pooling, pooling, unpooling
from actorgrad.tensor import Tensor


class _Pool2d(Module):
    """The settings both poolings take first; the stride defaults to the kernel size."""

    def __init__(self, kernel_size: Any, stride: Any, padding: Any) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _MaxPoolNd(_Pool2d):
    """The max poolings' settings; MaxPool1d, 2d and 3d are siblings, as PyTorch's."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__(kernel_size, stride, padding)
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, dilation={self.dilation}, ceil_mode={self.ceil_mode}"


class MaxPool2d(_MaxPoolNd):
    def forward(self, input: Tensor) -> Any:
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class _AvgPoolNd(_Pool2d):
    """AvgPool2d's and AvgPool3d's settings; the two are siblings, as PyTorch's."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__(kernel_size, stride, padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override


class AvgPool2d(_AvgPoolNd):
    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class MaxPool3d(_MaxPoolNd):
    def forward(self, input: Tensor) -> Any:
        return pooling.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                  ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool3d(_AvgPoolNd):
    def forward(self, input: Tensor) -> Tensor:
        return pooling.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                  self.count_include_pad, self.divisor_override)


class MaxPool1d(_MaxPoolNd):
    def forward(self, input: Tensor) -> Any:
        return pooling.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                  ceil_mode=self.ceil_mode, return_indices=self.return_indices)


def _single(value: Any) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, tuple | list) else (value,)


class AvgPool1d(Module):
    """Keeps its settings as one-int tuples, as PyTorch's does."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(kernel_size if stride is None else stride)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return pooling.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                  self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptivePool(Module):
    """An output size (an int, or a tuple whose None keeps that dim's input size)."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    def forward(self, input: Tensor) -> Tensor:
        return adaptive_pooling.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    def forward(self, input: Tensor) -> Tensor:
        return adaptive_pooling.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptivePool):
    def forward(self, input: Tensor) -> Tensor:
        return adaptive_pooling.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMaxPool(_AdaptivePool):
    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    def forward(self, input: Tensor) -> Any:
        return adaptive_pooling.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    def forward(self, input: Tensor) -> Any:
        return adaptive_pooling.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    def forward(self, input: Tensor) -> Any:
        return adaptive_pooling.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _MaxUnpool(Module):
    """Keeps its settings as tuples of one int per spatial dim, as PyTorch's do; forward takes the pooling's output,
    its indices and optionally the size to unpool to."""

    dims = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = unpooling.repeated(kernel_size, self.dims)
        self.stride = unpooling.repeated(kernel_size if stride is None else stride, self.dims)
        self.padding = unpooling.repeated(padding, self.dims)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    dims = 1

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        return unpooling.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool2d(_MaxUnpool):
    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        return unpooling.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool3d(_MaxUnpool):
    dims = 3

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        return unpooling.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class _LPPool(Module):
    """Keeps its settings as given (a stride of None stays None: the function defaults it to the kernel size)."""

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPool):
    def forward(self, input: Tensor) -> Tensor:
        return lp_pooling.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPool):
    def forward(self, input: Tensor) -> Tensor:
        return lp_pooling.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPool):
    def forward(self, input: Tensor) -> Tensor:
        return lp_pooling.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class _FractionalMaxPool(Module):
    """A kernel size and an output size or ratio (each an int or float for every dim, or one per dim); fixed
    samples, if given, are a buffer (`_random_samples`), as PyTorch's."""

    dims = 2

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        self.kernel_size = unpooling.repeated(kernel_size, self.dims)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = None if output_size is None else unpooling.repeated(output_size, self.dims)
        self.output_ratio = None if output_ratio is None else unpooling.repeated(output_ratio, self.dims)
        if output_size is None and output_ratio is None:
            raise ValueError(f"{type(self).__name__} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")


class FractionalMaxPool2d(_FractionalMaxPool):
    def forward(self, input: Tensor) -> Any:
        return fractional_pooling.fractional_max_pool2d(input, self.kernel_size, self.output_size, self.output_ratio,
                                                        self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool3d(_FractionalMaxPool):
    dims = 3

    def forward(self, input: Tensor) -> Any:
        return fractional_pooling.fractional_max_pool3d(input, self.kernel_size, self.output_size, self.output_ratio,
                                                        self.return_indices, _random_samples=self._random_samples)
