"""Sliding blocks: unfold (im2col) and fold (col2im).

Both are composites of differentiable ops, so their gradients come from the ops they are made of. fold is unfold's
adjoint: unfold gathers a padded image's flat positions with `index_select`, fold adds columns back at the same
positions with `index_add`, and each one's gradient is the other.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.padding import pad
from actorgrad.tensor import Tensor

__all__ = ["fold", "unfold"]


def _pair(value: Any, name: str, op: str, position: int) -> tuple[int, int]:
    """F.unfold's `_pair` (a sequence as it is, anything else twice), then the kernel's argument checks."""
    values = tuple(value) if isinstance(value, (list, tuple)) else (value, value)
    for i, v in enumerate(values):
        if not isinstance(v, (int, np.integer)):
            raise TypeError(f"{op}(): argument '{name}' (position {position}) must be tuple of ints, but found "
                            f"element of type {type(v).__name__} at pos {i}")
    if len(values) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(values)}")
    return int(values[0]), int(values[1])


def _check_window(kernel: tuple[int, int], dilation: tuple[int, int], padding: tuple[int, int],
                  stride: tuple[int, int], fold: bool) -> None:
    """im2col's and col2im's checks of the window (col2im checks stride before dilation and padding)."""
    checks = {
        "kernel": (min(kernel) > 0, f"kernel size should be greater than zero, but got kernel_height: {kernel[0]} "
                                    f"kernel_width: {kernel[1]}"),
        "dilation": (min(dilation) > 0, "dilation should be greater than zero, but got dilation_height: "
                                        f"{dilation[0]} dilation_width: {dilation[1]}"),
        "padding": (min(padding) >= 0, f"padding should be non-negative, but got pad_height: {padding[0]} "
                                       f"pad_width: {padding[1]}"),
        "stride": (min(stride) > 0, f"stride should be greater than zero, but got stride_height: {stride[0]} "
                                    f"stride_width: {stride[1]}"),
    }
    order = ("kernel", "stride", "dilation", "padding") if fold else ("kernel", "dilation", "padding", "stride")
    for name in order:
        ok, message = checks[name]
        if not ok:
            raise RuntimeError(message)


def _check_float(input: Tensor, kernel: str) -> None:
    """PyTorch's im2col and col2im take floating, complex and bool tensors (overlapping bools fold as an or)."""
    if input.dtype.kind not in "fcb":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{SCALAR_NAMES.get(input.dtype, input.dtype)}\'')


def _blocks(size: int, kernel: int, dilation: int, padding: int, stride: int) -> int:
    """How many windows fit along a dim (the kernels' count rounds toward negative infinity)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _block_index(kernel: tuple[int, int], dilation: tuple[int, int], stride: tuple[int, int],
                 blocks: tuple[int, int], padded_width: int) -> np.ndarray:
    """The flat position in a padded (H, W) image of each (kernel row, kernel column, block row, block column)."""
    (kh, kw), (dh, dw), (sh, sw), (bh, bw) = kernel, dilation, stride, blocks
    rows = np.arange(kh)[:, None] * dh + np.arange(bh)[None] * sh  # (kh, bh)
    cols = np.arange(kw)[:, None] * dw + np.arange(bw)[None] * sw  # (kw, bw)
    return (rows[:, None, :, None] * padded_width + cols[None, :, None, :]).reshape(-1)


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """im2col: (N, C, H, W) -> (N, C*kh*kw, L), each column one window's values, channel-major."""
    kernel = _pair(kernel_size, "kernel_size", "im2col", 2)
    dilation, padding, stride = (_pair(v, name, "im2col", i) for i, (v, name) in enumerate(
        ((dilation, "dilation"), (padding, "padding"), (stride, "stride")), 3))
    _check_window(kernel, dilation, padding, stride, fold=False)
    shape = input.shape
    if input.ndim < 3:  # the kernel reads input.size(2) before it checks the rank
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, {input.ndim - 1}], "
                         "but got 2)")
    if input.ndim not in (3, 4) or 0 in shape[-3:]:
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(shape)}")
    h, w = shape[-2:]
    blocks = tuple(_blocks(n, k, d, p, s) for n, k, d, p, s in zip((h, w), kernel, dilation, padding, stride))
    if min(blocks) < 1:
        raise RuntimeError(
            f"Given input with spatial size ({h}, {w}), kernel_size=({kernel[0]}, {kernel[1]}), dilation="
            f"({dilation[0]}, {dilation[1]}), padding=({padding[0]}, {padding[1]}), calculated shape of the array "
            f"of sliding blocks as ({blocks[0]}, {blocks[1]}), but its components must be at least one."
        )
    _check_float(input, "im2col_out_cpu")
    x = input if input.ndim == 4 else input.unsqueeze(0)
    if any(padding):
        x = pad(x, (padding[1], padding[1], padding[0], padding[0]))
    n, c, padded_height, padded_width = x.shape
    index = _block_index(kernel, dilation, stride, blocks, padded_width)
    cols = x.reshape(n, c, padded_height * padded_width).index_select(2, index)
    cols = cols.reshape(n, c * kernel[0] * kernel[1], blocks[0] * blocks[1])
    return cols if input.ndim == 4 else cols.squeeze(0)


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    """col2im, unfold's adjoint: (N, C*kh*kw, L) -> (N, C, H, W), overlapping windows summed."""
    size = _pair(output_size, "output_size", "col2im", 2)
    kernel = _pair(kernel_size, "kernel_size", "col2im", 3)
    dilation, padding, stride = (_pair(v, name, "col2im", i) for i, (v, name) in enumerate(
        ((dilation, "dilation"), (padding, "padding"), (stride, "stride")), 4))
    _check_window(kernel, dilation, padding, stride, fold=True)
    shape = input.shape
    if not (input.ndim == 2 and 0 not in shape or input.ndim == 3 and 0 not in shape[1:]):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(shape)}")
    planes, length = shape[-2:]
    if planes % (kernel[0] * kernel[1]):
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={planes} and kernel_size=({kernel[0]}, {kernel[1]}).")
    blocks = tuple(_blocks(n, k, d, p, s) for n, k, d, p, s in zip(size, kernel, dilation, padding, stride))
    given = (f"Given output_size=({size[0]}, {size[1]}), kernel_size=({kernel[0]}, {kernel[1]}), dilation="
             f"({dilation[0]}, {dilation[1]}), padding=({padding[0]}, {padding[1]}), stride=({stride[0]}, "
             f"{stride[1]}), ")
    if length != blocks[0] * blocks[1]:
        raise RuntimeError(f"{given}expected size of input's dimension 2 to match the calculated number of sliding "
                           f"blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={length}.")
    if min(blocks) < 1:
        raise RuntimeError(f"{given}calculated shape of the array of sliding blocks as ({blocks[0]}, {blocks[1]}), "
                           "which is too small (non-positive)")
    _check_float(input, "col2im_out_cpu")
    cols = input if input.ndim == 3 else input.unsqueeze(0)
    if input.dtype.kind == "b":  # summed as integers (CuPy's scatter-add takes no bools), then != 0: an or
        cols = cols.int()
    n, c = cols.shape[0], planes // (kernel[0] * kernel[1])
    height, width = size[0] + 2 * padding[0], size[1] + 2 * padding[1]
    index = _block_index(kernel, dilation, stride, blocks, width)
    xp = input._device.xp
    zeros = Tensor(xp.zeros((n, c, height * width), cols.dtype), device=input._device)
    image = zeros.index_add(2, Tensor(index), cols.reshape(n, c, planes // c * length)).reshape(n, c, height, width)
    image = image[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]]
    if input.dtype.kind == "b":
        image = image != 0
    return image if input.ndim == 3 else image.squeeze(0)
