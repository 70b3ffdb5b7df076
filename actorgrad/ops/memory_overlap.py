"""Memory that elements share, as PyTorch's in-place writes see it: an expanded tensor repeats elements in one
place, and a value may lie in the memory it is written to.

PyTorch refuses a write to several elements in one place (`x.expand(3, 5).add_(1)`), but writes an expanded
tensor where the written elements do not share memory (`x.expand(3, 5)[0, 0] = 1`, a view `[0]` of it changed in
place), fills it (fill_, zero_) and, deprecated, index_put_s into it. numpy guards a broadcast view by making it
read-only, so such writes go through a writeable view of the same memory. PyTorch also refuses a value that lies
partly in the memory written to (`a[1:] = a[:-1]`), where both fill one block of memory. A view's elements are
found in its base's memory by their addresses (`positions_in`), for the history of a write through the view.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.tensor import array_storage

SHARED_MEMORY = (
    "unsupported operation: more than one element of the written-to tensor refers to a single memory location. "
    "Please clone() the tensor before performing the operation."
)
PARTLY_SHARED = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory "
    "location. Please clone() the tensor before performing the operation."
)


# The ops whose `out=` PyTorch refuses to write where it lies partly in an input's memory
# (`add(b[:3], 1, out=b[1:4])`): its elementwise kernels and a few more, as found by running PyTorch 2.13 (the
# special functions by their names without `special_`).
_PARTLY_SHARED_OUT = (
    "abs", "absolute", "acos", "acosh", "add", "addcdiv", "addcmul", "angle", "arccos", "arccosh", "arcsin",
    "arcsinh", "arctan", "arctan2", "arctanh", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "cat", "ceil",
    "chain_matmul", "clamp", "clamp_max", "clamp_min", "clip", "concat", "concatenate", "conj_physical", "copysign",
    "cos", "cosh", "cross", "cumsum", "deg2rad", "digamma", "div", "divide", "eq", "erf", "erfc", "erfinv", "exp",
    "exp2", "expm1", "fix", "floor", "floor_divide", "fmax", "fmin", "fmod", "frac", "gather", "gcd", "ge", "greater",
    "greater_equal", "gt", "heaviside", "hypot", "i0", "igamma", "igammac", "index_select", "kron", "lcm", "ldexp",
    "le", "lerp", "less", "less_equal", "lgamma", "log", "log10", "log1p", "log2", "logaddexp", "logaddexp2",
    "logical_and", "logical_not", "logical_or", "logical_xor", "logit", "lt", "maximum", "minimum", "msort", "mul",
    "multiply", "nan_to_num", "ne", "neg", "negative", "nextafter", "not_equal", "pow", "rad2deg", "reciprocal",
    "remainder", "round", "rsqrt", "sgn", "sigmoid", "sign", "sin", "sinc", "sinh", "sqrt", "square", "stack", "sub",
    "subtract", "take_along_dim", "tan", "tanh", "true_divide", "trunc", "where", "xlogy",
)
_PARTLY_SHARED_SPECIAL = (
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
    "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0",
    "i0e", "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr", "logit",
    "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "ndtri", "psi", "round",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
)
PARTLY_SHARED_OUT = frozenset(_PARTLY_SHARED_OUT + tuple("special_" + name for name in _PARTLY_SHARED_SPECIAL))


def has_internal_overlap(array: Any) -> bool:
    """PyTorch's has_internal_overlap: a dim of more than one element that repeats them (stride 0); an empty array
    has no elements to repeat."""
    return array.size > 0 and any(stride == 0 and size > 1 for stride, size in zip(array.strides, array.shape))


def spread_over_repeats(mask: Any, array: Any) -> Any:
    """A boolean `mask` (of no more dims than `array`, broadcasting to it) true at every repeat of an element of
    `array` (an expand) where it is true at any: PyTorch's masked_fill_ writes a place in memory if any of its
    repeats is masked, and a write of the whole result must agree at all repeats."""
    axes = tuple(d for d, (stride, size) in enumerate(zip(array.strides, array.shape)) if stride == 0 and size > 1)
    return mask.reshape((1,) * (array.ndim - mask.ndim) + mask.shape).any(axis=axes, keepdims=True)


def writeable_region(region: Any, overlapping: bool) -> Any:
    """A read-only numpy view (of an expand) as a writeable view of the same memory; a write to several elements
    in one place is refused unless the op allows it (`overlapping`)."""
    if not overlapping and has_internal_overlap(region):
        raise RuntimeError(SHARED_MEMORY)
    alias = region.view()
    try:
        alias.flags.writeable = True
    except ValueError:  # the memory itself is read-only (a frozen buffer)
        raise RuntimeError("the tensor's array is read-only; clone() it before changing it in place") from None
    return alias


def one_per_place(positions: np.ndarray, kept: np.ndarray | None) -> np.ndarray:
    """For a view whose elements share places in its base (`positions`: their flat indices there): True at one
    element per place, one the op wrote if it wrote any there (`kept`: where it kept the old values, None if it
    wrote them all), so the base's gradient at each place goes back once, not once per element."""
    flat = positions.ravel()
    written_first = np.zeros(flat.size, np.bool_) if kept is None else kept.ravel()
    order = np.lexsort((written_first, flat))
    first = np.ones(flat.size, np.bool_)
    first[1:] = flat[order][1:] != flat[order][:-1]
    chosen = np.zeros(flat.size, np.bool_)
    chosen[order[first]] = True
    return chosen.reshape(positions.shape)


def check_partly_shared(region: Any, values: Any, puts: bool) -> None:
    """PyTorch's refusal of a value lying partly in the memory written to (`a[1:] = a[:-1]`), which it finds where
    both fill one block of memory each; `puts`: index_put_, which refuses the very same memory too."""
    if not values.size or not region.size or not is_dense(region) or not is_dense(values):
        return
    begin, other = _start(region), _start(values)
    end, other_end = begin + region.nbytes, other + values.nbytes
    if begin == other and end == other_end and _layout(region) == _layout(values) and not puts:
        return
    if begin < other_end and other < end:
        raise RuntimeError(PARTLY_SHARED)


def same_storage(array: Any, other: Any) -> bool:
    """Whether two arrays lie in the memory of one numpy or CuPy array."""
    return array_storage(array) is array_storage(other)


def check_operands_shared(target: Any, operands: tuple, same: bool) -> None:
    """`check_partly_shared` of each tensor among `operands` on the storage of the tensor `target` (itself, one
    sharing its version counter, or one whose array lies in the same numpy or CuPy array's memory: a `.data`
    alias, which PyTorch finds by its storage too; also two `from_numpy` tensors of one numpy array, which PyTorch,
    seeing two storages, lets through); `same`: the very same memory is refused too (scatter_, index_add_ ...)."""
    vc = target._vc
    owner = None
    for operand in operands:
        values = getattr(operand, "_data", None)
        if values is None:  # a number
            continue
        if operand is target or (vc is not None and operand._vc is vc):
            check_partly_shared(target._data, values, same)
            continue
        if owner is None:
            owner = array_storage(target._data)
        if array_storage(values) is owner:
            check_partly_shared(target._data, values, same)


def _layout(array: Any) -> tuple:
    """The sizes and strides of `array`'s dims of more than one element: PyTorch drops a written value's leading
    size-1 dims, and numpy's strides of size-1 dims are not PyTorch's."""
    return tuple((n, stride) for n, stride in zip(array.shape, array.strides) if n != 1)


def _start(array: Any) -> int:
    return array.__array_interface__["data"][0] if isinstance(array, np.ndarray) else array.data.ptr


def is_dense(array: Any) -> bool:
    """PyTorch's is_non_overlapping_and_dense: the elements fill one block of memory, each once (PyTorch has no
    negative strides: a numpy view with one is a copy there, so it counts as not dense)."""
    step = array.itemsize
    for stride, size in sorted((stride, size) for stride, size in zip(array.strides, array.shape) if size != 1):
        if stride != step:
            return False
        step *= size
    return True


def _addresses(array: Any) -> np.ndarray:
    """The memory address of each element of `array` (a numpy or a CuPy array), computed on the host."""
    out = np.full(array.shape, _start(array), np.int64)
    for d, (n, stride) in enumerate(zip(array.shape, array.strides)):
        out += (np.arange(n, dtype=np.int64) * stride).reshape((-1,) + (1,) * (array.ndim - d - 1))
    return out


def positions_in(view: np.ndarray, base: np.ndarray) -> np.ndarray:
    """The flat (row-major) index in `base` of each element of `view`, an array viewing base's memory."""
    base_addresses = _addresses(base).ravel()
    view_addresses = _addresses(view)
    order = np.argsort(base_addresses)
    found = order[np.searchsorted(base_addresses[order], view_addresses).clip(max=base.size - 1)]
    if not np.array_equal(base_addresses[found], view_addresses):
        raise RuntimeError(
            "a view no longer lies in its base's memory (the base was given a new array since the view was made), "
            "so its history cannot follow the base's in-place change; make the view again"
        )
    return found
