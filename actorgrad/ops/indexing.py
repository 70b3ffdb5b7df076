"""Indexing ops (`tensor[index]`, gather, scatter_add, index_select, masked_fill) and their gradient rules.

Every index is brought to one form, `(basic, advanced)`: basic indexing (ints, slices, None) applied first, then
advanced indexing (integer arrays) on the result, with `advanced=None` when there is none. Applying ints first is
what makes PyTorch's `x[0, :, [0, 1]]` differ from numpy's. The gradient of every op here writes `g` through the
same index into zeros (`ops.index_put_zeros`), whose own gradient is the indexing again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.devices import cpu
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.index_parsing import checked_ints, host_copy, parse_index
from actorgrad.ops.operands import SCALAR_NAMES, broadcast_error, checked_int, fitted_number, kernel_operands
from actorgrad.ops.record import Rule, record
from actorgrad.ops.reductions import input_size
from actorgrad.ops.shape import MASKED_GRAD, single_dim
from actorgrad.tensor import Tensor

__all__ = ["gather", "index_select", "masked_fill", "scatter_add"]


def _put_back(ops: Any, g: Any, self_shape: tuple, basic: tuple, advanced: tuple | None) -> Any:
    return ops.index_put_zeros(g, self_shape, basic, advanced)


_PUT_BACK = (("self_shape", "basic", "advanced"), _put_back)
INDEX_RULES = {
    name: Rule(name, _PUT_BACK, cost=input_size)
    for name in ("SelectBackward0", "SliceBackward0", "UnsqueezeBackward0", "AliasBackward0", "IndexBackward0",
                 "IndexSelectBackward0", "GatherBackward0")
}
INDEX_PUT = Rule("IndexPutBackward0", (("basic", "advanced"), lambda ops, g, basic, adv: ops.index(g, basic, adv)))


def _padded(ops: Any, g: Any, pad: tuple[int, ...]) -> Any:
    """The gradient of a scatter_add source larger than its index: zero where the index does not reach."""
    return ops.pad(g, pad) if any(pad) else g


SCATTER_ADD = Rule(
    "ScatterAddBackward0",
    ((), None),
    (("where", "src_pad"), lambda ops, g, where, src_pad: _padded(ops, ops.index(g, (), where), src_pad)),
)
SCATTER_ADD_NOTHING = Rule("ScatterAddBackward0", ((), None), (("other",), lambda ops, g, other: ops.zeros_like(other)))
# The gradient where the input was kept, 0 where it was written over (even from a NaN, as PyTorch's masked_fill).
KEPT_GRAD = (("keep",), lambda ops, g, keep: ops.where(keep, g, 0))
MASKED_FILL = Rule("MaskedFillBackward0", KEPT_GRAD, broadcasts=True)
MASKED_FILL_TENSOR = Rule("MaskedFillBackward1", KEPT_GRAD, MASKED_GRAD, broadcasts=True)


def on_device(t: Tensor, array: np.ndarray) -> Any:
    """A mask or index array built on the host (where indexes are parsed and checked), on `t`'s device."""
    return array if t._device is cpu else t._device.asarray(array)


def placed_index(t: Tensor, advanced: tuple | None) -> tuple | None:
    """An advanced index parsed on the host, its arrays on `t`'s device."""
    if advanced is None or t._device is cpu:
        return advanced
    return tuple(a if isinstance(a, int | slice) else t._device.asarray(a) for a in advanced)


def take_index(input: Tensor, basic: tuple, advanced: tuple | None, rule: Rule) -> Tensor:
    """`input[basic][advanced]` as one node; `index_put_zeros` is its gradient."""
    x = input._data
    advanced = placed_index(input, advanced)
    if advanced is None:
        data = x[basic + (Ellipsis,)]  # with the Ellipsis, ints alone give a 0-dim view, not a numpy scalar copy
    else:  # row-major, as PyTorch's (numpy's result of an index off dim 0 is transposed)
        data = x[basic][advanced]
        data = data if data.flags.c_contiguous else input._device.xp.ascontiguousarray(data)
    return record(rule, data, (input,), self_shape=x.shape, basic=basic, advanced=advanced)


def index_put_zeros(g: Tensor, shape: tuple[int, ...], basic: tuple, advanced: tuple | None) -> Tensor:
    """Zeros of `shape` with `g` written (added, for advanced indexes) through `[basic][advanced]`."""
    out = g._device.ops.index_put_zeros(g._data, shape, basic, advanced)
    return record(INDEX_PUT, out, (g,), basic=basic, advanced=advanced)


# -- tensor[index] -----------------------------------------------------------------------------------------------
def getitem(input: Tensor, index: Any) -> Tensor:
    basic, advanced, name = parse_index(index, input._data.shape)
    return take_index(input, basic, advanced, INDEX_RULES[name])


# -- gather, scatter_add, index_select, masked_fill --------------------------------------------------------------
def _int_index(index: Any, op: str, dtypes: str) -> np.ndarray:
    """The index as a host array of the caller's (see host_copy), after PyTorch's checks of its type."""
    if isinstance(index, Tensor):
        array = host_copy(index._data)
    elif isinstance(index, np.ndarray):  # a host array is taken too, as a tensor of it would be
        array = index.copy()
    else:  # PyTorch takes no list or number here
        raise TypeError(f"{op}(): argument 'index' (position 3) must be Tensor, not {type(index).__name__}")
    if array.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype {dtypes} for index, got {array.dtype}")
    return array


def _along(index: np.ndarray, dim: int) -> tuple:
    """The advanced index that picks `index`'s entries along `dim` and its own position along the others."""
    return tuple(
        index if d == dim else np.arange(n).reshape((-1,) + (1,) * (index.ndim - 1 - d))
        for d, n in enumerate(index.shape)
    )


def _check_along(x: np.ndarray, dim: int, index: np.ndarray) -> None:
    """PyTorch's gather_shape_check, then the index's bounds."""
    if index.ndim != x.ndim:
        raise RuntimeError(
            f"Index tensor must have the same number of dimensions as input tensor: index {list(index.shape)}, "
            f"input {list(x.shape)}"
        )
    for d, n in enumerate(index.shape):
        if d != dim and n > x.shape[d]:
            raise RuntimeError(
                f"Size does not match at dimension {d} expected index {list(index.shape)} to be no larger than "
                f"self {list(x.shape)} apart from dimension {dim}"
            )
    checked_ints(index, x.shape[dim], dim, negative=False, error=RuntimeError)  # gather's error type in PyTorch


def check_scatter(x: Any, d: int, positions: Any, s: Any, refusal: Exception | None = None) -> None:
    """PyTorch's scatter_shape_check (skipped for an empty index, as there), then `refusal` (a bad reduce argument,
    which PyTorch finds next), then the index's bounds."""
    if positions.size:
        if positions.ndim != x.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
        if s is not None and s.ndim != positions.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        too_big = any(n > x.shape[k] for k, n in enumerate(positions.shape) if k != d)
        if s is not None:
            too_big = too_big or any(n > s.shape[k] for k, n in enumerate(positions.shape))
        if too_big:
            src = "" if s is None else f" and to be no larger size than src {list(s.shape)}"
            raise RuntimeError(f"Expected index {list(positions.shape)} to be no larger than self {list(x.shape)} "
                               f"apart from dimension {d}{src}")
    if refusal is not None:
        raise refusal
    checked_ints(positions, x.shape[d], d, negative=False, error=RuntimeError)


def at_least_1d(t: Tensor) -> Tensor:
    """A 0-dim tensor as one of shape (1,), as PyTorch's gather and scatter kernels read it."""
    return t.reshape(1) if t._data.ndim == 0 else t


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """input's elements at `index` along `dim`, at index's own positions along the other dims; a 0-dim input or
    index counts as one of shape (1,), as in PyTorch."""
    if sparse_grad is not False:
        if sparse_grad is not True:
            raise not_bool("gather", "sparse_grad", sparse_grad)
        raise NotImplementedError("gather: sparse gradients are not supported by actorgrad (it has no sparse tensors)")
    positions = _int_index(index, "gather", "int32/int64")
    x = input._data
    dim = single_dim(dim, x.ndim, "gather")
    if not positions.size:  # PyTorch checks no shape against an empty index
        where = (np.zeros(positions.shape, np.intp),) * max(x.ndim, 1)
        return take_index(at_least_1d(input), (), where, INDEX_RULES["GatherBackward0"])
    if not x.ndim or not positions.ndim:
        x, positions = x.reshape(x.shape or (1,)), positions.reshape(positions.shape or (1,))
        _check_along(x, dim, positions)
        out = take_index(at_least_1d(input), (), _along(positions, dim), INDEX_RULES["GatherBackward0"])
        return out.reshape(index.shape)
    _check_along(x, dim, positions)
    return take_index(input, (), _along(positions, dim), INDEX_RULES["GatherBackward0"])


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of the input with src's elements added along `dim` at `index` (repeats add up); a 0-dim input,
    index or src counts as one of shape (1,), as in PyTorch."""
    if autocast_state.get() is not None:
        return autocast_call(scatter_add, "scatter_add", input, dim, index, src)
    x, s = input._data, src._data
    positions = _int_index(index, "scatter_add", "int64")
    if x.dtype != s.dtype:
        raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype, got {x.dtype} and {s.dtype}")
    dim = single_dim(dim, x.ndim, "scatter_add")
    if not x.ndim or not positions.ndim or not s.ndim:
        flat_index = Tensor(positions.reshape(positions.shape or (1,)))
        return scatter_add(at_least_1d(input), dim, flat_index, at_least_1d(src)).reshape(x.shape)
    check_scatter(x, dim, positions, s)
    if not positions.size:  # PyTorch adds nothing, and checks no shape against an empty index
        return record(SCATTER_ADD_NOTHING, x.copy(), (input, src))
    where = placed_index(input, _along(positions, dim))
    data = x.copy()
    input._device.ops.add_at(data, where, s[tuple(slice(0, n) for n in positions.shape)])
    src_pad = tuple(p for d in reversed(range(s.ndim)) for p in (0, s.shape[d] - positions.shape[d]))
    return record(SCATTER_ADD, data, (input, src), where=where, src_pad=src_pad)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """input's slices along `dim` at the positions a vector (or 0-dim) index names, which must lie in
    [0, size), as in PyTorch."""
    x = input._data
    positions = _int_index(index, "index_select", "int32 or int64")
    if positions.ndim > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got shape {list(positions.shape)}")
    dim = single_dim(dim, x.ndim, "index_select")
    positions = positions.reshape(-1)
    if not x.ndim and positions.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {positions.size} value(s)")
    size = x.shape[dim] if x.ndim else 1
    if positions.size and (positions.min() < 0 or positions.max() >= size):
        raise _outside(x, dim, positions, size)
    if not x.ndim:
        return take_index(input.reshape(1), (), (positions,), INDEX_RULES["IndexSelectBackward0"]).reshape(())
    where = (slice(None),) * dim + (positions,)
    return take_index(input, (), where, INDEX_RULES["IndexSelectBackward0"])


def _outside(x: Any, dim: int, positions: np.ndarray, size: int) -> Exception:
    """index_select's error for a position outside [0, size): PyTorch's kernels for an empty input or one read along
    dim 1, of several dims, word it their own way, naming the first such position."""
    if x.ndim < 2 or (x.size and dim != 1):
        return IndexError("index out of range in self")
    if size == 0:
        return RuntimeError("index_select(): self indexing axis dim should be positive")
    first = positions[(positions < 0) | (positions >= size)][0]
    return RuntimeError(f"INDICES element is out of DATA bounds, id={first} axis_dim={size}")


def fill_value(value: Any, dtype: np.dtype) -> np.ndarray:
    """A number as PyTorch's fill_ and masked_fill take one: an int must fit int64 or uint64 (Python's
    OverflowError), then `dtype` (PyTorch's RuntimeError, for int8_tensor.fill_(1000) say: see fitted_number)."""
    if value.__class__ is int:
        checked_int(value)
    return fitted_number(value, dtype)


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """A copy of the input with `value` where the mask holds."""
    return refuse_integer_grad(masked_filled(input, mask, value))


def refuse_integer_grad(result: Tensor) -> Tensor:
    """`result`, unless it is an integer or bool tensor that requires grad (the fill value of masked_fill or
    index_fill does): PyTorch refuses such a result, which could not carry a gradient. The in-place forms write it
    out of the graph instead, as PyTorch's."""
    if result.requires_grad and result._data.dtype.kind not in "fc":
        raise RuntimeError(f"Autograd not support dtype: {SCALAR_NAMES[result._data.dtype]}")
    return result


def masked_filled(input: Tensor, mask: Tensor, value: Any, *, in_place: bool = False) -> Tensor:
    """masked_fill without its refusal of an integer result that requires grad: masked_fill_ (`in_place`) writes
    that result out of the graph."""
    x = input._data
    m = mask._data if isinstance(mask, Tensor) else on_device(input, np.asarray(mask))
    if isinstance(mask, Tensor) and mask._device is not input._device:
        raise RuntimeError(
            f"expected self and mask to be on the same device, but got mask on {mask._device} and self on "
            f"{input._device}"
        )
    if m.dtype != np.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {m.dtype}")
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(
            f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.ndim} "
            f"dimension(s)."
        )
    fill = fill_value(value.item() if isinstance(value, Tensor) else value, x.dtype)
    try:
        data = np.where(*kernel_operands(m, fill), x)
    except ValueError:  # PyTorch's broadcast names the mask first, its in-place form self first
        shapes = (x.shape, m.shape) if in_place else (m.shape, x.shape)
        raise broadcast_error("masked_fill", *shapes) from None
    keep = ~m
    if isinstance(value, Tensor):  # its own mask: a later write to the caller's must not reach the backward
        return record(MASKED_FILL_TENSOR, data, (input, value), keep=keep, mask=~keep)
    return record(MASKED_FILL, data, (input,), keep=keep)


METHODS = {
    "__getitem__": getitem, "gather": gather, "scatter_add": scatter_add, "index_select": index_select,
    "masked_fill": masked_fill,
}
