"""Making tensors from Python data and arrays: `tensor()`, new leaves and copies, with PyTorch's dtypes (Python
floats the default float dtype, ints int64, nested sequences checked for ragged shapes and mixed kinds)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from actorgrad.default_device import default_device
from actorgrad.default_dtype import default_complex, default_float
from actorgrad.devices import Device, cpu
from actorgrad.grad_mode import _inference_mode
from actorgrad.memory_formats import preserved
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.tensor import Tensor, bool_, float64, int64
from actorgrad.user_warnings import warn_once

# The numpy dtypes PyTorch makes tensors of, in the order its error names them.
NUMPY_TYPES = (
    "float64", "float32", "float16", "complex64", "complex128", "int64", "int32", "int16", "int8", "uint64", "uint32",
    "uint16", "uint8",
)
_NUMPY_DTYPES = {np.dtype(name) for name in NUMPY_TYPES} | {bool_}
COPY_CONSTRUCT = (
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
    "sourceTensor.detach().clone().requires_grad_(True), rather than {}."
)
_PLAIN = {bool, int, float}
REQUIRES_GRAD_TO_SCALAR = (
    "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
    "Consider using tensor.detach() first."
)


def checked_numpy(array: np.ndarray | np.generic) -> np.ndarray | np.generic:
    """A numpy array PyTorch can make a tensor of as a whole: one of its dtypes, in the machine's byte order, with no
    negative stride (a tensor has none; PyTorch refuses to copy such an array silently)."""
    # an unsupported dtype is named before a negative stride, as by PyTorch
    if array.strides and min(array.strides) < 0 and array.dtype.newbyteorder("=") in _NUMPY_DTYPES:
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative strides are not "
            "currently supported. (You can probably work around this by making a copy of your array  with "
            "array.copy().) "
        )
    _checked_dtype(array.dtype)
    return array


def _checked_dtype(dtype: np.dtype) -> np.dtype:
    """A numpy dtype PyTorch makes tensors of (an array inside a list is read value by value: any strides)."""
    if dtype in _NUMPY_DTYPES:  # the common case, checked without making a dtype
        return dtype
    if dtype.newbyteorder("=") not in _NUMPY_DTYPES:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{dtype.type.__name__}. The only supported types are: "
            f"{', '.join(NUMPY_TYPES)}, and bool."
        )
    if not dtype.isnative:
        raise ValueError(
            "given numpy array has byte order different from the native byte order. Conversion between byte "
            "orders is currently not supported."
        )
    return dtype


def as_array(data: Any, dtype: Any = None) -> Any:
    """The array for `tensor()`, with PyTorch's dtypes: Python floats become float32, ints int64; numpy arrays,
    numpy numbers and tensors keep their dtypes, and promote with the rest as torch.promote_types does. A tensor's
    array is copied on its own device (a CuPy array stays on its GPU)."""
    if isinstance(data, Tensor):  # a copy laid out as PyTorch's clone lays it out (numpy's keeps broadcast strides)
        x = data._data
        return preserved(data._device.xp, x if dtype is None else x.astype(np.dtype(dtype), copy=False), x)
    if isinstance(data, np.ndarray):  # cast as numpy casts, wrapping out-of-range values, as PyTorch does
        if dtype is None or np.dtype(dtype) == data.dtype:  # no cast: nothing to warn of
            return np.array(checked_numpy(data))
        with np.errstate(over="ignore", invalid="ignore"):  # silently, as PyTorch's cast (inf, nan as an int)
            return np.array(checked_numpy(data), dtype=np.dtype(dtype))
    wide = None
    if type(data) in _PLAIN or type(data) in (list, tuple) and (leaves := _leaf_types(data)) <= _PLAIN:
        try:
            wide = np.array(data)
        except ValueError:  # ragged: PyTorch's reading below says where
            pass
        if wide is not None and wide.dtype.kind == "f" and type(data) in (list, tuple) and float not in leaves:
            wide = None  # ints past int64's range, which numpy reads as floats: PyTorch's reading below refuses them
    if wide is None or wide.dtype.kind not in "bif":  # big ints, tensors, numpy values: read as PyTorch reads
        wide, inferred = _nested_array(data, dtype)
    else:
        inferred = default_float() if wide.dtype == float64 else wide.dtype
    target = inferred if dtype is None else np.dtype(dtype)
    if inferred.kind == "c" and target.kind in "iuf" and complex in _leaf_types([data]):
        # PyTorch reads each Python number as the dtype's C type: a complex one is no real number
        raise TypeError("must be real number, not complex" if target.kind == "f"
                        else "'complex' object cannot be interpreted as an integer")
    if target.kind in "iu" and wide.dtype.kind in "iuf" and wide.size:
        # a number is stored checked, as PyTorch stores a Python number: an unsigned dtype takes a negative int
        # down to -max (it wraps), nothing takes nan or a value past its range
        info = np.iinfo(target)
        low = -int(info.max) if target.kind == "u" and wide.dtype.kind in "iu" else int(info.min)
        if not np.all((wide >= low) & (wide < int(info.max) + 1)):
            raise RuntimeError(f"value cannot be converted to type {target} without overflow")
    with np.errstate(over="ignore"):  # a float past float32's range is inf, silently as in PyTorch
        return wide.astype(target, copy=False)


def _leaf_types(data: list | tuple) -> set[type]:
    """The types of the items of a nested list or tuple (set() and map() keep this quick for big lists)."""
    found = set(map(type, data))
    for kind in (list, tuple):
        if kind in found:
            found.discard(kind)
            for item in data:
                if type(item) is kind:
                    found |= _leaf_types(item)
    return found


def _infer_dtype(data: Any) -> np.dtype:
    """The dtype PyTorch infers for `data`: each number's, tensor's or array's dtype, promoted over a sequence."""
    if isinstance(data, Tensor):
        return data._data.dtype
    if isinstance(data, np.ndarray | np.generic):
        return _checked_dtype(data.dtype)
    if isinstance(data, bool):
        return bool_
    if isinstance(data, int):
        if not -(1 << 63) <= data < 1 << 63:
            raise ValueError("Overflow when unpacking long long")
        return int64
    if isinstance(data, float):
        return default_float()
    if isinstance(data, str | bytes):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if _is_sequence(data):
        from actorgrad.ops.operands import promote_types  # operands imports this module

        found = default_float() if not data else _infer_dtype(data[0])
        for item in data[1:]:
            found = promote_types(found, _infer_dtype(item))
        return found
    if isinstance(data, complex):
        return default_complex()
    raise RuntimeError(f"Could not infer dtype of {type(data).__name__}")


def _is_sequence(data: Any) -> bool:
    return isinstance(data, Sequence) and not isinstance(data, str | bytes)


def _nested_shape(data: Any) -> tuple[int, ...]:
    """The shape PyTorch reads off a nested sequence: the lengths along its first items (and an array's shape;
    a tensor in a sequence is one number)."""
    shape: list[int] = []
    while _is_sequence(data):
        shape.append(len(data))
        if not data:
            return tuple(shape)
        data = data[0]
    if isinstance(data, np.ndarray):
        shape.extend(data.shape)
    return tuple(shape)


def _nested_values(data: Any, shape: tuple[int, ...], dim: int) -> Any:
    """`data` with its tensors as numbers (0-d host arrays, keeping their dtypes), checked to fill `shape` as
    PyTorch checks it."""
    if dim == len(shape):
        if _is_sequence(data) or isinstance(data, np.ndarray) and data.ndim:
            raise ValueError(f"expected sequence of length 0 at dim {dim} (got {len(data)})")
        if isinstance(data, Tensor):
            if data._data.size != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            if data.requires_grad:  # its value leaves the graph (`tensor([loss_a, loss_b])`): PyTorch warns once
                warn_once(REQUIRES_GRAD_TO_SCALAR)
            return cpu.asarray(data._data).reshape(())
        return data
    if isinstance(data, np.ndarray) and data.ndim:
        if data.shape != shape[dim:]:
            got = next(i for i, (a, b) in enumerate(zip(data.shape, shape[dim:])) if a != b)
            raise ValueError(
                f"expected sequence of length {shape[dim + got]} at dim {dim + got} (got {data.shape[got]})"
            )
        return data
    if not _is_sequence(data):
        raise TypeError("not a sequence")
    if len(data) != shape[dim]:
        raise ValueError(f"expected sequence of length {shape[dim]} at dim {dim} (got {len(data)})")
    return [_nested_values(item, shape, dim + 1) for item in data]


def _nested_array(data: Any, dtype: Any = None) -> tuple[np.ndarray, np.dtype]:
    """PyTorch's reading of sequences holding tensors, numpy values or what numpy cannot read: the values (in
    a dtype wide enough for them) and the dtype PyTorch infers."""
    values = _nested_values(data, _nested_shape(data), 0)
    try:
        inferred = _infer_dtype(data)
    except ValueError:
        if dtype is None or np.dtype(dtype).kind not in "ufc":
            raise
        # ints past int64's range, for a dtype that holds them (uint64 up to 2**64, a float or complex one):
        # Python's ints, converted exactly by numpy (a negative one into uint64 is an OverflowError, as PyTorch's)
        return np.array(values, dtype=object), np.dtype(dtype)
    return np.array(values), inferred


def new_leaf(data: Any, requires_grad: bool = False, device: Device = cpu) -> Tensor:
    """A new tensor that views no other (made by a creation function): an inference tensor in inference mode."""
    out = Tensor(data, device=device)
    out._vc = _inference_mode.get()
    if requires_grad is not False:
        if requires_grad is True:
            out._set_requires_grad(True, "Only Tensors of floating point and complex dtype can require gradients")
        elif requires_grad is not None:  # 1, numpy's True: PyTorch's creation functions take a bool or None
            raise not_bool(called_name(), "requires_grad", requires_grad)
    return out


def called_name() -> str:
    """The name of the actorgrad function the user called: the outermost actorgrad frame, passing over wrappers
    (nested functions, such as the public names' type checks). Looked up only for an error raised below it, so
    the creation functions need not pass their names down to the leaf they make."""
    frame, name = sys._getframe(1), "tensor"
    while frame is not None and frame.f_globals.get("__name__", "").startswith("actorgrad."):
        if "<locals>" not in frame.f_code.co_qualname:
            name = frame.f_code.co_name
        frame = frame.f_back
    return name


def tensor(
    data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, pin_memory: bool | None = False
) -> Tensor:
    """A new leaf tensor holding a copy of `data`, on `device` (default: the cpu, or the device of a tensor
    `data`, as PyTorch copies one). `pin_memory` is accepted as `Tensor.pin_memory()` is: nothing to pin here."""
    if pin_memory is not None and not isinstance(pin_memory, bool):
        raise TypeError(f"tensor(): argument 'pin_memory' must be bool, not {type(pin_memory).__name__}")
    if requires_grad.__class__ is not bool:  # unlike the other creation functions', tensor()'s may not be None
        raise not_bool("tensor", "requires_grad", requires_grad)
    if isinstance(data, Tensor):
        warnings.warn(COPY_CONSTRUCT.format("actorgrad.tensor(sourceTensor)"), UserWarning, stacklevel=2)
    return copied_leaf(data, dtype, device, requires_grad)


def copied_leaf(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """`tensor()` without its warning about copying a tensor."""
    array = as_array(data, dtype)
    here = data._device if isinstance(data, Tensor) else cpu
    if device is None:
        if here is not cpu or default_device() is cpu:
            return new_leaf(array, requires_grad, here)
        device = default_device()
    from actorgrad.devices import device as as_device

    where = as_device(device)
    return new_leaf(array if where is here else where.asarray(array), requires_grad, where)
