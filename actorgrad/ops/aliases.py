"""Ops PyTorch spells in terms of others, so they record the same nodes its versions do: expand_as, view_as,
reshape_as, ravel, swapaxes, movedim, unflatten, narrow, select, tile, take_along_dim, diff, `.H` and `.mH`, the
`new_*` creation methods, and the arithmetic aliases (divide, with div's rounding modes, true_divide, multiply,
subtract)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from actorgrad.memory_formats import contiguous_format, formatted, preserve_format
from actorgrad.ops import arithmetic
from actorgrad.ops.arithmetic import DIV, FLOOR_QUOTIENT, _binary, mul, sub
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.float_kernels import float16_scalar_divisor
from actorgrad.ops.indexing import INDEX_RULES, gather, getitem, take_index
from actorgrad.ops.joining import cat
from actorgrad.ops.operand_checks import check_unsigned_number
from actorgrad.ops.operands import (
    SCALAR_NAMES,
    as_operand,
    broadcast_error,
    data_as,
    kernel_operands,
    not_implemented,
    result_type,
)
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.ops.selection import where
from actorgrad.ops.shape import (
    broadcast_to,
    clone,
    permute,
    repeat,
    reshape,
    single_dim,
    transpose,
    view,
)
from actorgrad.ops.size_arguments import int_sizes
from actorgrad.tensor import Tensor, bool_, int64
from actorgrad.tensor_construction import COPY_CONSTRUCT, copied_leaf
from actorgrad.user_warnings import warn, warn_once

__all__ = [
    "diff", "div", "divide", "empty_like", "moveaxis", "movedim", "multiply", "narrow", "narrow_copy", "ravel",
    "select", "subtract", "swapaxes", "swapdims", "take_along_dim", "tile", "true_divide", "unflatten",
]

# PyTorch's div.Tensor_mode, taken whenever rounding_mode is passed, even as None: a true division then records
# DivBackward2 (with div's gradients), a rounded one DivBackward2 with zero gradients (FLOOR_QUOTIENT).
DIV_MODE = Rule("DivBackward2", *DIV.grads, broadcasts=True)
TRUE_DIVISION: Any = object()  # divide's rounding_mode when none is passed: div.Tensor, DivBackward0


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return broadcast_to(input, other.shape)


def view_as(input: Tensor, other: Tensor) -> Tensor:
    return view(input, other.shape)


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    return reshape(input, other.shape)


def ravel(input: Tensor) -> Tensor:
    """The elements in one dim: a view of a contiguous input, else of a row-major copy (as PyTorch's, which copies
    even where a reshape could view)."""
    return reshape(input if input._data.flags.c_contiguous else clone(input, memory_format=contiguous_format), -1)


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """Alias of transpose."""
    return transpose(input, axis0, axis1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Alias of transpose."""
    return transpose(input, dim0, dim1)


def _dims_list(dims: int | tuple[int, ...] | list[int], ndim: int, what: str) -> list[int]:
    """Dims in the order given, non-negative, with PyTorch's movedim errors."""
    given = list(int_sizes("movedim", (dims,), None, what))
    out = [single_dim(d, ndim, "movedim") for d in given]
    if len(set(out)) != len(out):
        raise RuntimeError(f"movedim: repeated dim in `{what}` ({given})")
    return out


def movedim(input: Tensor, source: int | tuple[int, ...], destination: int | tuple[int, ...]) -> Tensor:
    """The dims at `source` moved to `destination`; the other dims keep their order."""
    ndim = input.ndim
    src, dst = _dims_list(source, ndim, "source"), _dims_list(destination, ndim, "destination")
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({src} dims) should contain the same number of "
            f"dims as destination ({dst} dims)"
        )
    if not ndim:  # nothing to move: PyTorch's alias
        return getitem(input, Ellipsis)
    rest = iter(d for d in range(ndim) if d not in src)
    placed = dict(zip(dst, src))
    return permute(input, tuple(placed[d] if d in placed else next(rest) for d in range(ndim)))


def moveaxis(input: Tensor, source: int | tuple[int, ...], destination: int | tuple[int, ...]) -> Tensor:
    """Alias of movedim."""
    return movedim(input, source, destination)


def unflatten(input: Tensor, dim: int, sizes: tuple[int, ...]) -> Tensor:
    """Dim `dim` split into `sizes` (one of them may be -1, inferred)."""
    shape = input.shape
    d = single_dim(dim, input.ndim, "unflatten")
    sizes = int_sizes("unflatten", (), sizes, "sizes")  # a sequence only, as the keyword
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    unexpected = "unflatten got an unexpected error:\n"  # how PyTorch words the errors of its inner size checks
    if not input.ndim:
        raise RuntimeError(f"{unexpected}Dimension specified as {d} but tensor has no dimensions")
    inferred, known = None, 1
    for i, n in enumerate(sizes):
        if n == -1:
            if inferred is not None:
                raise RuntimeError(f"{unexpected}only one dimension can be inferred")
            inferred = i
        elif n < 0:
            raise RuntimeError(f"{unexpected}invalid shape dimension {n} at index {i} of shape {list(sizes)}")
        else:
            known *= n
    size = shape[d]
    if inferred is not None and not size and not known:
        raise RuntimeError(f"{unexpected}cannot reshape tensor of 0 elements into shape {list(sizes)} because the "
                           "unspecified dimension size -1 can be any value and is ambiguous")
    if size != known and (inferred is None or not known or size % known):
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} ({size}) in the "
            "input tensor"
        )
    if inferred is not None:
        sizes = sizes[:inferred] + (size // known,) + sizes[inferred + 1:]
    return view(input, shape[:d] + sizes + shape[d + 1:])


def narrow(input: Tensor, dim: int, start: int | Tensor, length: int) -> Tensor:
    """The `length` elements of dim `dim` from `start` (an int or a 0-dim integer tensor) on: a view, recorded as
    PyTorch's SliceBackward0 even where it keeps the whole dim."""
    if not input.ndim:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if isinstance(start, Tensor):
        if start.ndim or start._data.dtype.kind not in "iu":
            raise RuntimeError("start must be an 0-dim integral Tensor.")
        start = int(start)
    elif isinstance(start, bool) or not isinstance(start, int | np.integer):
        raise TypeError(f"narrow(): argument 'start' (position 3) must be int or Tensor, not {type(start).__name__}")
    if length < 0:  # before the dim and start, as PyTorch checks
        raise RuntimeError("narrow(): length must be non-negative.")
    d = single_dim(dim, input.ndim, "narrow")
    size = input.shape[d]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    basic = (slice(None),) * d + (slice(start, start + length),) + (slice(None),) * (input.ndim - d - 1)
    return take_index(input, basic, None, INDEX_RULES["SliceBackward0"])


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """narrow, copied out of the input (no view); `start` is an int (a one-element integer tensor reads as one)."""
    return narrow(input, dim, operator.index(start), length).clone(memory_format=contiguous_format)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at `index` of dim `dim`, without that dim (a view)."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = single_dim(dim, input.ndim, "select")
    size = input.shape[d]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} at dimension {d}"
        )
    return getitem(input, (slice(None),) * d + (index % size,))


def tile(input: Tensor, *sizes: Any, dims: Any = None) -> Tensor:
    """repeat, with `dims` padded by leading 1s to the input's number of dims."""
    dims = int_sizes("tile", sizes, dims, "dims")
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """input's elements at `indices` along `dim` (the other dims broadcast); without `dim`, of the flattened
    input. Recorded as gather, after an expand where broadcasting needs one, as in PyTorch."""
    if indices.dtype != int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{SCALAR_NAMES.get(indices.dtype, indices.dtype)}")
    if dim is None:
        return gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    if input.ndim != indices.ndim:
        raise RuntimeError(
            f"torch.take_along_dim(): input and indices should have the same number of dimensions, but got "
            f"{input.ndim} dimensions for input, and {indices.ndim} dimensions for indices"
        )
    d = single_dim(dim, input.ndim, "take_along_dim")
    if input.ndim == 0:  # PyTorch reads the 0-dim input's size along dim
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    common = [a if b == 1 else b for a, b in zip(input.shape, indices.shape)]
    for k in reversed(range(input.ndim)):  # from the last dim, as PyTorch's broadcast names a clash
        a, b = input.shape[k], indices.shape[k]
        if k != d and a != b and 1 not in (a, b):
            raise RuntimeError(
                f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton dimension {k}"
            )
    input_shape = tuple(common[:d]) + (input.shape[d],) + tuple(common[d + 1:])
    indices_shape = tuple(common[:d]) + (indices.shape[d],) + tuple(common[d + 1:])
    if input.shape != input_shape:
        input = broadcast_to(input, input_shape)
    if indices.shape != indices_shape:
        indices = broadcast_to(indices, indices_shape)
    return gather(input, d, _from_start(indices, input.shape[d]))


def _from_start(indices: Tensor, size: int) -> Tensor:
    """take_along_dim's indices along a dim of `size`, those in [-size, 0) counted from the end, as PyTorch's."""
    from_end = (indices < 0) & (indices >= -size)
    return where(from_end, indices + size, indices) if from_end.any() else indices


def diff(
    input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None
) -> Tensor:
    """The n-th forward difference along `dim`, after joining `prepend` and `append` to the input there; bool
    tensors give `!=` (logical xor), as in PyTorch."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = single_dim(dim, input.ndim, "diff")
    for extra in (prepend, append):
        if extra is not None and extra.ndim != input.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    if n == 0:  # PyTorch joins nothing when it takes no difference
        return input
    if prepend is not None or append is not None:
        input = cat([t for t in (prepend, input, append) if t is not None], d)
    lead = (slice(None),) * d
    for _ in range(min(n, input.shape[d])):  # each step shortens the dim by one, down to empty
        later, earlier = getitem(input, lead + (slice(1, None),)), getitem(input, lead + (slice(None, -1),))
        input = later != earlier if input.dtype == bool_ else later - earlier
    return input


def empty_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False, device: Any = None,
               memory_format: Any = preserve_format, layout: Any = None, pin_memory: bool | None = False) -> Tensor:
    from actorgrad.creation import empty  # creation imports the ops package: at call time, not import time
    from actorgrad.creation_args import check_layout

    if not isinstance(input, Tensor):
        raise TypeError(f"empty_like(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    check_layout("empty_like", layout, pin_memory)
    leaf = empty(input.shape, dtype=input.dtype if dtype is None else dtype, requires_grad=requires_grad,
                 device=input.device if device is None else device)
    return formatted("empty_like", leaf, memory_format, input)


def multiply(input: Any, other: Any) -> Tensor:
    """Alias of mul."""
    return mul(input, other)


def subtract(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """Alias of sub."""
    return sub(input, other, alpha=alpha)


def true_divide(input: Any, other: Any) -> Tensor:
    """Alias of div (true division)."""
    return arithmetic.div(input, other)


def _integer_trunc_quotient(xp: Any, x: Any, y: Any) -> Any:
    """x / y rounded toward 0 for integers: the floor quotient, plus one where it rounded an inexact negative
    quotient down (exact, where x / y in floats is not; int8's -128 / -1 wraps, as in C)."""
    q = xp.floor_divide(x, y)
    return q + ((q < 0) & (q * y != x))


def _trunc_divide(input: Any, other: Any) -> Tensor:
    """input / other rounded toward 0, in the operands' promoted dtype (integers stay integers); floats as
    PyTorch's kernel, trunc(x / y)."""
    check_unsigned_number(input, other)
    dtype = result_type(input, other)
    a, b = as_operand(input, dtype, other, wrap=True), as_operand(other, dtype, input, wrap=True)
    device = common_device((a, b))
    if dtype.kind in "bc":  # complex numbers have no trunc
        raise not_implemented(f"div_trunc_{device.type}", dtype)
    x, y = kernel_operands(data_as(a, dtype), data_as(b, dtype))
    divisor = float16_scalar_divisor(input, other)
    if divisor is not None:  # float16 by a scalar: in float32, the scalar unrounded, as PyTorch's kernel
        x, y = kernel_operands(x.astype(np.float32), divisor)
    xp = device.xp
    if dtype.kind in "iu" and bool((y == 0).any()):
        raise RuntimeError("ZeroDivisionError")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        try:
            data = xp.trunc(x / y) if dtype.kind == "f" else _integer_trunc_quotient(xp, x, y)
        except ValueError:
            raise broadcast_error("div", x.shape, y.shape) from None
        data = xp.asarray(data, dtype=dtype)  # a float32 quotient past float16's range is inf there too
    return record(FLOOR_QUOTIENT, data, (a, b))


def divide(input: Any, other: Any, *, rounding_mode: str | None = TRUE_DIVISION) -> Tensor:
    """input / other: true division by default; rounding_mode 'trunc' rounds toward 0 and 'floor' toward -inf,
    both in the operands' promoted dtype and with zero gradients, as PyTorch's div."""
    if rounding_mode is TRUE_DIVISION:
        return arithmetic.div(input, other)
    if rounding_mode is None:
        return _binary("div", input, other, DIV_MODE)
    if rounding_mode == "trunc":
        return _trunc_divide(input, other)
    if rounding_mode == "floor":
        return _binary("floor_divide", input, other, FLOOR_QUOTIENT)
    raise RuntimeError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'"
    )


div = divide  # one function with its rounding modes; the `/` operator is arithmetic's div


def _new(name: str) -> Any:
    """A `new_*` method: the creation function `name`, whose dtype and device default to the tensor's."""

    def method(self: Tensor, *args: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
               **kwargs: Any) -> Tensor:
        from actorgrad import creation  # creation imports the ops package: at call time, not import time

        try:
            return getattr(creation, name)(*args, dtype=self.dtype if dtype is None else dtype,
                        device=self.device if device is None else device, requires_grad=requires_grad, **kwargs)
        except TypeError as error:  # the creation function's errors name it, PyTorch's name the method
            if not str(error).startswith(f"{name}("):
                raise
            raise TypeError(f"new_{error}") from None

    method.__name__ = method.__qualname__ = f"new_{name}"
    return method


def _new_tensor(self: Tensor, data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False):
    """A new leaf holding a copy of `data` (never its graph), with this tensor's dtype and device by default."""
    if requires_grad.__class__ is not bool:  # not even None, as PyTorch's
        raise not_bool("new_tensor", "requires_grad", requires_grad)
    if isinstance(data, Tensor):
        warn(COPY_CONSTRUCT.format("tensor.new_tensor(sourceTensor)"))
        data = data.detach()
    return copied_leaf(data, self.dtype if dtype is None else dtype, self.device if device is None else device,
                       requires_grad)


def _adjoint(input: Tensor, name: str, batched: bool) -> Tensor:
    """`.H` (a matrix) or `.mH` (a batch of matrices): the conjugate transpose (the transpose of real values); a
    0-d tensor is its own conjugate, deprecated as in PyTorch (`name`: how its warning, once per process, names the
    op). Not a view of a complex tensor, as conj makes its result at once (see actorgrad.ops.complex_parts)."""
    ndim = input.ndim
    if ndim == 0:
        warn_once(f"{name} is deprecated on 0-D tensors. Consider using x.conj().")
        return input.conj() if input._data.dtype.kind == "c" else input
    if batched and ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {ndim}-D tensor.")
    if not batched and ndim != 2:
        hint = " For batches of matrices, consider using tensor.mH" if ndim > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {ndim}-D tensor.{hint}")
    transposed = transpose(input, -2, -1)
    return transposed.conj() if input._data.dtype.kind == "c" else transposed


METHODS: dict[str, Any] = {
    "expand_as": expand_as, "view_as": view_as, "reshape_as": reshape_as, "ravel": ravel, "swapaxes": swapaxes,
    "swapdims": swapdims, "movedim": movedim, "moveaxis": moveaxis, "unflatten": unflatten, "narrow": narrow,
    "narrow_copy": narrow_copy,
    "select": select, "tile": tile, "take_along_dim": take_along_dim,
    "diff": diff, "div": divide, "divide": divide, "multiply": multiply, "subtract": subtract,
    "true_divide": true_divide, "new_zeros": _new("zeros"), "new_ones": _new("ones"),
    "new_empty": _new("empty"), "new_full": _new("full"), "new_tensor": _new_tensor,
    "H": property(lambda self: _adjoint(self, "Tensor.H", batched=False)),
    "mH": property(lambda self: _adjoint(self, "Tensor.mH", batched=True)),
}
