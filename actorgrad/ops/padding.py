"""torch.nn.functional.pad: constant padding (ConstantPadNdBackward0), and the reflect, replicate and circular
modes, which index the input so that their gradients add up where an element was read more than once."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices import cpu
from actorgrad.devices.array_ops import padded
from actorgrad.ops.operands import C_TYPES, type_name
from actorgrad.ops.record import Rule, record, zeros_grad
from actorgrad.tensor import Tensor

CONSTANT_PAD = Rule("ConstantPadNdBackward0", (("pad",), lambda ops, g, pad: ops.pad(g, tuple(-p for p in pad))))


def _index_pad_rule(name: str) -> Rule:
    """`<name>Backward0` of a padding by `input[index]`: the gradient added back through the index. It saves the
    input, as PyTorch's: in a recorded backward the gradient is one node on (g, input) whose gradient for the input
    is zero (PyTorch's <name>BackwardBackward0), so a double backward from a `g` that needs no gradient gives zeros
    rather than failing."""

    def grad(ops: Any, g: Any, self: Any, index: tuple) -> Any:
        if isinstance(g, Tensor):
            data = g._device.ops.index_put_zeros(g._data, self.shape, (), index)
            return record(backward, data, (g, self), index=index)
        return ops.index_put_zeros(g, self.shape, (), index)

    backward = Rule(
        name + "BackwardBackward0", (("index",), lambda ops, g, index: ops.index(g, (), index)), ((), zeros_grad)
    )
    return Rule(name + "Backward0", (("self", "index"), grad))


INDEX_PAD = {
    (mode, k): _index_pad_rule(f"{kind}Pad{k}D")
    for mode, kind in (("reflect", "Reflection"), ("replicate", "Replication"))
    for k in (1, 2, 3)
}

NON_CONSTANT_PADDING = (
    "Padding size {size} is not supported for {ndim}D input tensor.\nSupported combinations for non-constant "
    "padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D input: padding size = 4 "
    "(pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
)


def _pad_widths(pad: Any) -> tuple[int, ...]:
    """PyTorch's parsing of `pad`, a tuple of ints: a tuple or list of integers or one-element integer tensors (a
    width computed as `k / 2` is refused there, not deep in a kernel)."""
    head = "pad(): argument 'pad' (position 2) must be tuple of ints"
    if not isinstance(pad, tuple | list):
        raise TypeError(f"{head}, not {type_name(pad)}")
    widths = []
    for i, width in enumerate(pad):
        if isinstance(width, Tensor) and width.ndim == 0 and width.dtype.kind in "iu":
            width = width.item()
        if isinstance(width, bool) or not isinstance(width, int | np.integer):
            raise TypeError(f"{head}, but found element of type {type_name(width)} at pos {i}")
        widths.append(int(width))
    return tuple(widths)


def pad(input: Tensor, pad: tuple[int, ...], mode: str = "constant", value: float | None = None) -> Tensor:
    """torch.nn.functional.pad: `pad` holds (before, after) pairs from the last dim back; negative widths crop.
    Mode 'constant' fills with `value`; 'reflect', 'replicate' and 'circular' pad the last 1, 2 or 3 dims of a
    (batch of) (C, ...) input by indexing it, so the gradient adds up where an element was taken more than once."""
    x = input._data
    pad = _pad_widths(pad)
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if mode != "constant" and value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if len(pad) // 2 > x.ndim:
        raise RuntimeError(
            f"Padding length should be less than or equal to two times the input dimension but got padding "
            f"length {len(pad)} and input of dimension {x.ndim}"
        )
    if mode != "constant":
        return _index_pad(input, pad, mode)
    for i in range(len(pad) // 2):
        if x.shape[x.ndim - 1 - i] + min(pad[2 * i], 0) + min(pad[2 * i + 1], 0) < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
    if value is not None:
        _check_value(value, x.dtype)
    data = padded(input._device.xp, x, pad, 0 if value is None else value)
    return record(CONSTANT_PAD, data, (input,), pad=pad)


def _check_value(value: Any, dtype: np.dtype) -> None:
    """PyTorch takes a constant pad's value as a Python float, then converts it to the tensor's dtype with a
    check: a complex number is refused, and so is one past the dtype's range (its int64 check lets any finite
    number through)."""
    if isinstance(value, complex | np.complexfloating):
        raise TypeError(f"pad(): argument 'value' (position 4) must be float, not {type_name(value)}")
    if not isinstance(value, int | float | np.number) or dtype.kind == "b":
        return
    number = float(value)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        fits = math.isfinite(number) and (dtype.itemsize == 8 or info.min <= number <= info.max)
    else:
        fits = dtype.itemsize == 8 or not math.isfinite(number) or abs(number) <= float(np.finfo(dtype).max)
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {C_TYPES.get(dtype, dtype.name)} without overflow")


def _index_pad(input: Tensor, pad: tuple[int, ...], mode: str) -> Tensor:
    """Non-constant padding as an index into the input: for each padded dim, the input position each output
    position reads (its own, shifted by the padding before it, then reflected, clamped or wrapped)."""
    x = input._data
    k = len(pad) // 2
    if k not in (1, 2, 3) or x.ndim not in (k + 1, k + 2):
        raise NotImplementedError(NON_CONSTANT_PADDING.format(size=len(pad), ndim=x.ndim))
    dims = range(x.ndim - 1, x.ndim - 1 - k, -1)  # the padded dims, last first, as `pad` names them
    sizes = [x.shape[d] + pad[2 * i] + pad[2 * i + 1] for i, d in enumerate(dims)]
    if mode == "circular":
        for i, d in reversed(list(enumerate(dims))):
            if max(pad[2 * i], pad[2 * i + 1]) > x.shape[d]:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if sizes[i] < 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
    else:
        _check_reflect_replicate(x, pad, mode, sizes)
    positions = []
    for i, d in reversed(list(enumerate(dims))):
        n, before, after = x.shape[d], pad[2 * i], pad[2 * i + 1]
        j = np.arange(sizes[i])
        if mode == "circular":  # PyTorch wraps around what is left after negative pads have cropped the input
            start, kept = max(-before, 0), n - max(-before, 0) - max(-after, 0)
            if kept <= 0 < sizes[i]:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            j = start + (j - max(before, 0)) % max(kept, 1)
        elif mode == "reflect":
            j = np.abs(j - before)
            j = np.where(j > n - 1, 2 * (n - 1) - j, j)
        else:
            j = np.clip(j - before, 0, n - 1)
        positions.append(j)
    index = np.ix_(*positions)
    if mode == "circular":
        return input[(Ellipsis,) + index]
    if input._device is not cpu:  # built on the host, used on the input's device
        index = tuple(input._device.asarray(a) for a in index)
    index = (Ellipsis,) + index
    return record(INDEX_PAD[mode, k], x[index], (input,), index=index)


def _check_reflect_replicate(x: np.ndarray, pad: tuple[int, ...], mode: str, sizes: list[int]) -> None:
    """PyTorch's checks of reflection and replication padding, in its order and with its texts."""
    k = len(pad) // 2
    shape = list(x.shape)
    if not all(shape[x.ndim - k - 1:]):  # every dim but a batch dim
        raise RuntimeError(
            f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other non-zero "
            f"dimensions for input, but got: {shape}"
        )
    if mode == "reflect":
        for i in range(k):
            d = x.ndim - 1 - i
            if max(pad[2 * i], pad[2 * i + 1]) >= shape[d]:
                raise RuntimeError(
                    f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input dimension, "
                    f"but got: padding ({pad[2 * i]}, {pad[2 * i + 1]}) at dimension {d} of input {shape}"
                )
    if all(n < 1 for n in sizes) or any(n < 0 for n in sizes):
        w, ow = shape[-1], sizes[0]
        if k == 1:
            raise RuntimeError(f"input (W: {w}) is too small. Calculated output W: {ow}")
        h, oh = shape[-2], sizes[1]
        if k == 2:
            space = " " if mode == "replicate" else ""  # PyTorch's two texts differ by this space
            raise RuntimeError(f"input (H: {h}, W: {w}{space}) is too small. Calculated output H: {oh} W: {ow}")
        raise RuntimeError(
            f"input (D: {shape[-3]} H: {h}, W: {w}) is too small. Calculated output D: {sizes[2]} H: {oh} W: {ow}"
        )
    if x.dtype.kind == "b":
        kernel = "reflection" if mode == "reflect" else "replication"
        raise NotImplementedError(f"\"{kernel}_pad{k}d\" not implemented for 'Bool'")

