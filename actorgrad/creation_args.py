"""The arguments every creation function shares, read as PyTorch reads them: sizes (`f(2, 3)`, `f((2, 3))`,
`size=`), dtype and device, and `layout` / `pin_memory`, which PyTorch's creation functions all take."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from actorgrad.default_device import default_device
from actorgrad.devices import cpu
from actorgrad.devices import device as as_device
from actorgrad.ops.operands import type_name
from actorgrad.ops.storage_methods import strided
from actorgrad.tensor import Tensor
from actorgrad.tensor_construction import new_leaf


def check_device(device: Any) -> None:
    """Fail before any work on a device name that does not parse."""
    if device is not None:
        as_device(device)


def is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def int_like(dim: Any) -> bool:
    """Whether PyTorch reads `dim` as one size: an int, or a one-element integer tensor."""
    return is_int(dim) or (isinstance(dim, Tensor) and dim.dtype.kind in "iu" and dim.numel() == 1)


def _dim(op: str, dim: Any, position: int) -> int:
    """One size as PyTorch reads it: an int (a one-element integer tensor counts as one) that fits int64."""
    if isinstance(dim, Tensor) and dim.dtype.kind in "iu" and dim.numel() == 1:
        dim = dim.item()
    elif isinstance(dim, np.ndarray) and dim.ndim == 0 and is_int(dim[()]):
        dim = dim[()]
    if not is_int(dim):
        raise TypeError(f"{op}(): argument 'size' failed to unpack the object at pos {position} with error \"type must "
                        f"be tuple of ints,but got {type_name(dim)}\"")
    if not -(1 << 63) <= dim < 1 << 63:  # PyTorch's text has no closing quote
        raise TypeError(f"{op}(): argument 'size' failed to unpack the object at pos {position} with error "
                        f"\"Overflow when unpacking long long")
    return int(dim)


def checked_shape(op: str, size: tuple, position: int | None = 1) -> tuple[int, ...]:
    """`*size` as PyTorch takes it: `f(2, 3)` or `f((2, 3))`; every dimension an int >= 0. `position` is where a
    sequence of sizes was passed, None when it came by keyword."""
    if len(size) == 1 and isinstance(size[0], np.ndarray) and size[0].ndim:  # a 0-d one is one size, as an int
        where = "" if position is None else f" (position {position})"
        raise TypeError(f"{op}(): argument 'size'{where} must be tuple of ints, not numpy.ndarray")
    if len(size) == 1 and isinstance(size[0], Sequence) and not isinstance(size[0], str | bytes):
        sequence, size = size[0], tuple(size[0])
        # PyTorch matches a sequence to the signature by its first element alone, so only that one gets this text
        if size and not int_like(size[0]):
            if position is None:
                raise TypeError(f"{op}(): argument 'size' must be tuple of ints, not {type(sequence).__name__}")
            raise TypeError(f"{op}(): argument 'size' (position {position}) must be tuple of ints, but found element "
                            f"of type {type_name(size[0])} at pos 0")
    elif len(size) == 1 and not (int_like(size[0]) or isinstance(size[0], np.ndarray) and is_int(size[0][()])):
        raise TypeError(f"{op}(): argument 'size' (position 1) must be tuple of ints, not {type_name(size[0])}")
    shape = tuple(_dim(op, dim, position) for position, dim in enumerate(size, 1))
    negative = [dim for dim in shape if dim < 0]
    if negative and op == "zeros":  # PyTorch's zeros checks its sizes itself
        raise RuntimeError("zeros: Dimension size must be non-negative.")
    if negative:
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative[0]}: {list(shape)}")
    check_storage(op, shape)
    return shape


def size_argument(op: str, args: tuple, size: Any) -> tuple[int, ...]:
    """The shape from `f(2, 3)`, `f((2, 3))` or `f(size=(2, 3))`; PyTorch has no default size."""
    if size is not None:
        if args:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        if not isinstance(size, Sequence | np.ndarray):
            raise TypeError(f"{op}(): argument 'size' must be tuple of ints, not {type(size).__name__}")
        return checked_shape(op, (size,), None)
    if not args:
        raise TypeError(f'{op}() missing 1 required positional arguments: "size"')
    return checked_shape(op, args)


def check_storage(op: str, shape: tuple[int, ...]) -> None:
    """Sizes whose bytes overflow an index get PyTorch's RuntimeError (numpy raises ValueError, "too big")."""
    if math.prod(shape) > sys.maxsize // 8:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")


def dtype_or(dtype: Any, default: np.dtype) -> np.dtype:
    return default if dtype is None else np.dtype(dtype)


def leaf_on(data: np.ndarray, requires_grad: bool, device: Any = None) -> Tensor:
    """The leaf holding `data` (made on the host) on `device`; in inference mode, an inference tensor."""
    where = default_device() if device is None else as_device(device)
    return new_leaf(data if where is cpu else where.asarray(data), requires_grad, where)


def check_layout(op: str, layout: Any, pin_memory: Any) -> None:
    """PyTorch's `layout` and `pin_memory` arguments: every actorgrad tensor is strided, and pinning host memory
    changes nothing here (as `Tensor.pin_memory()` returns the tensor), so only their types are checked."""
    if layout is not None and layout is not strided:
        raise TypeError(f"{op}(): argument 'layout' must be torch.layout, not {type_name(layout)}")
    if pin_memory is not None and not isinstance(pin_memory, bool):
        raise TypeError(f"{op}(): argument 'pin_memory' must be bool, not {type_name(pin_memory)}")
