"""scatter_reduce: each of src's elements combined into the position along a dim that an index names ('sum',
'prod', 'mean', 'amax' or 'amin', over the input's value there too with include_self), with PyTorch's gradients;
also the kernel scatter's reduce= forms share with it (their shared checks are indexing.check_scatter).

The index is checked and parsed on the host (as every scatter's), into a `ScatterPlan`: where its elements land, and for
prod, amax and amin the elements sorted by position. Sums add with `add.at`; the others scan each position's group
of sorted elements with plain array ops (CuPy's `ufunc.at` takes no `multiply`), which keeps numpy's NaN
propagation for amax and amin on both devices, and the data on its device.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from actorgrad.grad_mode import _grad_enabled
from actorgrad.ops.flag_arguments import check_flags
from actorgrad.ops.index_parsing import host_copy
from actorgrad.ops.indexing import _along, _padded, at_least_1d, check_scatter, on_device, placed_index
from actorgrad.ops.inplace_recording import INVALIDATED, write_in_place
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.record import Rule, record, same_device
from actorgrad.ops.shape import single_dim
from actorgrad.tensor import Tensor

__all__ = ["scatter_reduce"]


# -- the checks scatter shares -------------------------------------------------------------------------------------
def on_at_least_1d(op: Any, input: Tensor, *operands: Any) -> Tensor:
    """op on 0-dim tensors as PyTorch runs it, as on tensors of shape (1,), then back to the input's shape."""
    out = op(at_least_1d(input), *(at_least_1d(o) if isinstance(o, Tensor) else o for o in operands))
    return out.reshape(input.shape)


def scatter_index(op: str, input: Tensor, dim: int, index: Tensor, src: Any) -> tuple[int, np.ndarray]:
    """The dim and the index (on the host) after PyTorch's checks of dims, dtypes and devices, in its order."""
    d = single_dim(dim, input.ndim, op)
    positions = host_copy(index._data)
    if positions.dtype.kind != "i" or positions.dtype.itemsize < 4:  # unsigned ones too, as in PyTorch
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if isinstance(src, Tensor):
        same_device(input, src, index)
        if src._data.dtype != input._data.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    return d, positions


# -- where an index's elements land, and combining them there -------------------------------------------------------
class _Groups(NamedTuple):
    """An index's elements sorted by the position they land on (stably), for a scan within each position's group."""

    order: Any  # the flat positions in the index, sorted by their target
    rank: Any  # each sorted element's place in its group
    last: Any  # the sorted element that ends each group
    targets: Any  # each group's flat position in the input
    longest: int  # the most elements in a group


class ScatterPlan(NamedTuple):
    """Where an index's elements land in the input: parsed on the host, its arrays on the input's device."""

    where: tuple  # their positions in the input, as an advanced index in the index's shape
    crop: tuple  # the part of src they take (src may be larger than the index)
    src_pad: tuple  # the pad widths from the index's shape back to src's: the crop's gradient
    counts: Any  # how many land on each position of the input
    groups: _Groups | None  # for the scans of prod, amax and amin


def scatter_plan(input: Tensor, d: int, positions: np.ndarray, src_shape: tuple, grouped: bool) -> ScatterPlan:
    if positions.size:
        along = _along(positions, d)
    else:  # PyTorch takes an empty index of any shape: as one of src's dims, reaching nothing
        positions = np.zeros((0,) * len(src_shape), np.int64)
        along = (positions,) * input.ndim
    flat = np.ravel_multi_index(np.broadcast_arrays(*along), input.shape).reshape(-1)
    groups = None
    if grouped:
        order = np.argsort(flat, kind="stable")
        ordered = flat[order]
        starts = np.flatnonzero(np.diff(ordered, prepend=-1))
        sizes = np.diff(starts, append=flat.size)
        rank = np.arange(flat.size) - np.repeat(starts, sizes)
        groups = _Groups(*(on_device(input, a) for a in (order, rank, starts + sizes - 1, ordered[starts])),
                         int(sizes.max(initial=0)))
    counts = on_device(input, np.bincount(flat, minlength=input._data.size).reshape(input.shape))
    src_pad = tuple(p for k in reversed(range(len(src_shape))) for p in (0, src_shape[k] - positions.shape[k]))
    return ScatterPlan(placed_index(input, along), tuple(slice(0, n) for n in positions.shape), src_pad, counts, groups)


_COMBINE = {"prod": "multiply", "amax": "maximum", "amin": "minimum"}  # the ufuncs of the scanned reductions


def reduced_into(ops: Any, x: Any, values: Any, plan: ScatterPlan, reduce: str, include_self: bool) -> Any:
    """x with `values` (in the index's shape) combined into the positions `plan` names, on arrays (`ops`: the
    device's ArrayOps)."""
    xp = ops.xp
    data = x.copy()
    if reduce in ("sum", "mean"):
        if not include_self:
            data[plan.where] = 0
        ops.add_at(data, plan.where, values)
        if reduce == "sum":
            return data
        count = xp.maximum(plan.counts + include_self, 1).astype(x.dtype)
        return data / count if x.dtype.kind in "fc" else data // count  # PyTorch floors an integer mean
    combine = getattr(xp, _COMBINE[reduce])
    groups = plan.groups
    v = values.reshape(-1)[groups.order]
    k = 1
    while k < groups.longest:  # an inclusive scan in log2(longest) steps: each combines with the one k back
        v[k:] = xp.where(groups.rank[k:] >= k, combine(v[k:], v[:-k]), v[k:])
        k *= 2
    flat = data.reshape(-1)  # a view: data is a fresh contiguous copy
    reduced = v[groups.last]
    flat[groups.targets] = combine(flat[groups.targets], reduced) if include_self else reduced
    return data


def _record_reduction(input: Tensor, src: Tensor, reduce: str, include_self: bool, plan: ScatterPlan) -> Tensor:
    data = reduced_into(input._device.ops, input._data, src._data[plan.crop], plan, reduce, include_self)
    return record(SCATTER_REDUCE[reduce], data, (input, src), src=src, where=plan.where, plan=plan,
                  include_self=include_self)


def _reduction(ops: Any, input: Any, src: Any, plan: ScatterPlan, reduce: str, include_self: bool) -> Any:
    """scatter_reduce in a gradient rule: recorded on tensors, on arrays otherwise."""
    if isinstance(input, Tensor):
        return _record_reduction(input, src, reduce, include_self, plan)
    return reduced_into(ops, input, src[plan.crop], plan, reduce, include_self)


def _constant(g: Any, array: Any) -> Any:
    """An array a rule computed from saved values, beside the gradient: a tensor in a recorded backward."""
    return Tensor(array, device=g._device) if isinstance(g, Tensor) else array


def _raw(value: Any) -> Any:
    return getattr(value, "_data", value)


def _array_ops(ops: Any, g: Any) -> Any:
    """The helpers on raw arrays of g's device, for the constants of a rule (masks, counts)."""
    return g._device.ops if isinstance(g, Tensor) else ops


def _kept(ops: Any, g: Any, plan: ScatterPlan, include_self: bool) -> Any:
    """The input's gradient: 0 where include_self=False left its values out (PyTorch's grad.scatter(dim, index, 0),
    which also zeroes a NaN)."""
    return g if include_self else ops.where(_constant(g, plan.counts == 0), g, 0)


def _gathered(ops: Any, g: Any, where: tuple, plan: ScatterPlan) -> Any:
    """src's gradient from the values at its elements' positions (0 where src is larger than the index)."""
    return _padded(ops, ops.index(g, (), where), plan.src_pad)


def _mean_share(ops: Any, g: Any, plan: ScatterPlan, include_self: bool) -> Any:
    """g over how many values each position averaged."""
    count = _array_ops(ops, g).xp.maximum(plan.counts + include_self, 1).astype(_raw(g).dtype)
    return g / _constant(g, count)


def _tie_share(ops: Any, g: Any, where: tuple, plan: ScatterPlan, self: Any, src: Any, result: Any) -> tuple:
    """For amax and amin: which of self's and src's elements equal their position's result, and g split evenly
    among them, as PyTorch splits it (with include_self=False it still counts self's ties)."""
    x, s, r = _raw(self), _raw(src)[plan.crop], _raw(result)  # comparisons: constants of the rule
    self_is = (x == r).astype(x.dtype)
    src_is = (s == r[where]).astype(x.dtype)
    ties = self_is + _array_ops(ops, g).index_put_zeros(src_is, x.shape, (), where)
    share = g / _constant(g, ties)  # no ties at a NaN result: 0 / 0 there, a NaN gradient as PyTorch's
    return _constant(g, self_is), _constant(g, src_is), share


def _extreme_self_grad(ops: Any, g: Any, where: tuple, plan: ScatterPlan, include_self: bool, self: Any, src: Any,
                       result: Any) -> Any:
    self_is, _, share = _tie_share(ops, g, where, plan, self, src, result)
    return _kept(ops, self_is * share, plan, include_self)


def _extreme_src_grad(ops: Any, g: Any, where: tuple, plan: ScatterPlan, self: Any, src: Any, result: Any) -> Any:
    _, src_is, share = _tie_share(ops, g, where, plan, self, src, result)
    return _padded(ops, src_is * ops.index(share, (), where), plan.src_pad)


def _prod_self_grad(ops: Any, g: Any, where: tuple, plan: ScatterPlan, include_self: bool, self: Any, src: Any) -> Any:
    """g times the product of the other values at each position: the product taken with self's zeros as 1, over
    self (PyTorch's formula, exact where self holds zeros)."""
    masked = ops.where(self == 0, 1, self)
    return _kept(ops, g * _reduction(ops, masked, src, plan, "prod", include_self) / masked, plan, include_self)


SEVERAL_ZEROS = ("scatter_reduce(): Double backward is unsupported for src when >1 zeros in src are scattered to "
                 "the same position in self")


def _prod_src_grad(ops: Any, g: Any, where: tuple, plan: ScatterPlan, include_self: bool, self: Any, src: Any,
                   result: Any) -> Any:
    """result / src; for the only zero at a position, the product recomputed with that zero as 1. As PyTorch's,
    its own gradient raises where several zeros meet at one position."""
    array_ops = _array_ops(ops, g)
    s = _raw(src)
    zero = s == 0
    zeros_at = array_ops.index_put_zeros(zero[plan.crop].astype(s.dtype), _raw(self).shape, (), where)
    lone = _constant(g, zero & (array_ops.pad(array_ops.index(zeros_at, (), where), plan.src_pad) == 1))
    others = _reduction(ops, self, ops.where(lone, 1, src), plan, "prod", include_self)
    grad = ops.where(lone, _gathered(ops, g * others, where, plan),
                     _gathered(ops, g * result, where, plan) / ops.where(_constant(g, zero), 1, src))
    if isinstance(g, Tensor) and bool((zeros_at > 1).any()):  # the node PyTorch's DelayedError records
        grad = record(INVALIDATED, grad._data, (grad,), message=SEVERAL_ZEROS)
    return grad


# -- the gradients: PyTorch's scatter_reduce_backward --------------------------------------------------------------
_NAME = "ScatterReduceBackward0"
_SELF, _SRC = ("where", "plan", "include_self"), ("where", "plan")
SCATTER_REDUCE = {
    "sum": Rule(_NAME, (_SELF, lambda ops, g, where, plan, include_self: _kept(ops, g, plan, include_self)),
                (_SRC, _gathered)),
    "mean": Rule(
        _NAME,
        (_SELF, lambda ops, g, where, plan, include_self: _kept(ops, _mean_share(ops, g, plan, include_self), plan,
                                                                include_self)),
        (_SRC + ("include_self",),
         lambda ops, g, where, plan, include_self: _gathered(ops, _mean_share(ops, g, plan, include_self), where,
                                                             plan)),
    ),
    "prod": Rule(_NAME, (_SELF + ("self", "src"), _prod_self_grad),
                 (_SRC + ("include_self", "self", "src", "result"), _prod_src_grad)),
}
SCATTER_REDUCE["amax"] = SCATTER_REDUCE["amin"] = Rule(
    _NAME, (_SELF + ("self", "src", "result"), _extreme_self_grad),
    (_SRC + ("self", "src", "result"), _extreme_src_grad),
)
_REDUCTIONS = "sum, prod, mean, amax or amin"


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """A copy of the input with each of src's elements combined into the position along `dim` that `index` names:
    reduce is 'sum', 'prod', 'mean', 'amax' or 'amin', over the input's value there too when include_self."""
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce(): argument 'src' (position 4) must be Tensor, not {type(src).__name__}")
    check_flags("scatter_reduce", include_self=include_self)
    result = _scatter_reduce(input, dim, index, src, reduce, include_self)  # first: PyTorch refuses after its checks
    if input._data.dtype.kind == "c" and _grad_enabled.get() and (input.requires_grad or src.requires_grad):
        raise RuntimeError("scatter_reduce does not support automatic differentiation for outputs with complex dtype.")
    return result


def _scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, include_self: bool) -> Tensor:
    """scatter_reduce without PyTorch's refusal of complex gradients, which its in-place form does not make."""
    d, positions = scatter_index("scatter_reduce", input, dim, index, src)
    x = input._data
    if x.ndim == 0 or positions.ndim == 0 or src.ndim == 0:
        return on_at_least_1d(lambda *a: _scatter_reduce(*a, reduce, include_self), input, d, index, src)
    refusal = _kernel_refusal(x.dtype, reduce, positions.size)
    known = reduce in _COMBINE or reduce in ("sum", "mean")
    # a kernel's refusal comes before the bounds check, unless (without include_self) PyTorch first writes the
    # reduction's identity at the index, which checks them
    check_scatter(x, d, positions, src._data, refusal if include_self or not known else None)
    if refusal is not None:
        raise refusal
    plan = scatter_plan(input, d, positions, src.shape, reduce in _COMBINE)
    return _record_reduction(input, src, reduce, include_self, plan)


def _kernel_refusal(dtype: np.dtype, reduce: str, count: int) -> Exception | None:
    """PyTorch's refusal of a reduction it does not know (a RuntimeError), or one its kernels lack for `dtype`
    (complex numbers have no order), else None."""
    if reduce not in _COMBINE and reduce not in ("sum", "mean"):
        return RuntimeError(f"reduce argument must be either {_REDUCTIONS}, got {reduce}")
    if reduce == "mean" and dtype == np.bool_:
        kernel = "scatter_gather_tensor_cpu_reduce_mean" if count else "div_floor_cpu"
        return NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if dtype.kind == "c" and reduce in ("amax", "amin") and count:
        return NotImplementedError(f"\"scatter_gather_tensor_cpu_reduce_{reduce}\" not implemented for "
                                   f"'{SCALAR_NAMES[dtype]}'")
    return None


def scatter_reduce_(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    return write_in_place(self, lambda s: _scatter_reduce(s, dim, index, src, reduce, include_self),
                          (src,), reduce in _COMBINE)  # prod's, amax's and amin's rules keep self's values


METHODS: dict[str, Any] = {"scatter_reduce": scatter_reduce, "scatter_reduce_": scatter_reduce_}
