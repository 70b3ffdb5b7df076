"""Contractions: addmm, addmv and baddbmm (beta * input + alpha * product); dot, vdot and mv; tensordot and inner
(einsum: `einsum_contraction.py`; diagonals and trace: `diagonals.py`). Each gradient is itself an einsum, so a
recorded backward differentiates again.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.arithmetic import mul
from actorgrad.ops.linalg import MACS_PER_NS, TYPE_META_NAMES, mm
from actorgrad.ops.operands import SCALAR_NAMES, number_array
from actorgrad.ops.record import Rule, common_device, record, same_device
from actorgrad.ops.shape import _expanded_shape, permute, reshape, single_dim
from actorgrad.tensor import Tensor

__all__ = [
    "addmm", "addmv", "baddbmm", "dot", "inner", "mv", "tensordot", "vdot",
]


# -- beta * input + alpha * product -----------------------------------------------------------------------------
def _factor_grad(k: int) -> Any:
    """Factor k's gradient: alpha times the einsum of the output's gradient with the other factor (conjugates for
    complex factors, as PyTorch's)."""

    def formula(ops: Any, g: Any, subs: tuple, alpha: Any, other: Any) -> Any:
        a, b, out = subs
        other = ops.conj(other)
        grad = ops.einsum(f"{out},{b}->{a}", g, other) if k == 0 else ops.einsum(f"{a},{out}->{b}", other, g)
        return grad if alpha == 1 else grad * alpha.conjugate()

    return formula


def _add_product_rule(name: str) -> Rule:
    return Rule(
        name,
        (("beta",), lambda ops, g, beta: g if beta == 1 else g * beta.conjugate()),
        (("subs", "alpha", "factor2"), _factor_grad(0)),
        (("subs", "alpha", "factor1"), _factor_grad(1)),
        broadcasts=True, cost=lambda data, params: 3 * params["macs"] / MACS_PER_NS, multithreaded=True,
    )


ADDMM = _add_product_rule("AddmmBackward0")
ADDMV = _add_product_rule("AddmvBackward0")
BADDBMM = _add_product_rule("BaddbmmBackward0")


# PyTorch's addmm, addmv and addbmm do not read the product with alpha 0 (its NaNs do not spread); baddbmm and
# addr do.
_UNREAD_AT_ZERO_ALPHA = frozenset({"AddmmBackward0", "AddmvBackward0", "AddbmmBackward0"})
# The kernels that refuse booleans (addr takes them), when they run.
_BOOL_REFUSED = {"AddmmBackward0": "addmm_impl_cpu_", "AddmvBackward0": "addmv_impl_cpu",
                 "AddbmmBackward0": "addmm_impl_cpu_", "BaddbmmBackward0": "baddbmm"}


def _add_product(rule: Rule, subs: tuple, input: Tensor, a: Tensor, b: Tensor, beta: Any, alpha: Any) -> Tensor:
    """beta * input + alpha * einsum(subs)(a, b), input broadcast to the product's shape; with beta 0 the input
    is not read (its NaNs do not spread), as in PyTorch, nor for some ops the product with alpha 0."""
    same_device(a, b)
    device = common_device((input, a, b))
    xp = device.xp
    x, y = a._data, b._data
    dtype = x.dtype
    if dtype.kind == "b" and rule.name in _BOOL_REFUSED and x.size and y.size:  # empty: no kernel runs
        raise NotImplementedError(f"\"{_BOOL_REFUSED[rule.name]}\" not implemented for 'Bool'")
    product = xp.einsum(f"{subs[0]},{subs[1]}->{subs[2]}", x, y)
    _expanded_shape(input.shape, product.shape)  # PyTorch's expand errors
    if alpha == 0 and rule.name in _UNREAD_AT_ZERO_ALPHA:
        scaled = xp.zeros_like(product)
    else:
        scaled = product if alpha == 1 else product * number_array(alpha, dtype)[()]
    data = scaled if beta == 0 else input._data * number_array(beta, dtype)[()] + scaled
    data = xp.asarray(data, dtype=dtype)
    if data.shape != product.shape:
        data = xp.broadcast_to(data, product.shape).copy()
    sizes = dict(zip(subs[0] + subs[1], x.shape + y.shape))
    macs = math.prod(sizes.values())
    return record(rule, data, (input, a, b), subs=subs, alpha=alpha, beta=beta, factor1=a, factor2=b, macs=macs)


def _dtype_name(t: Tensor) -> str:
    return SCALAR_NAMES.get(t.dtype, str(t.dtype))


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2), input broadcasting to the product."""
    if autocast_state.get() is not None:
        return autocast_call(addmm, "addmm", input, mat1, mat2, beta=beta, alpha=alpha)
    for name, t in (("mat1", mat1), ("mat2", mat2)):
        if t.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {t.ndim}-D tensor")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} and "
                           f"{mat2.shape[0]}x{mat2.shape[1]})")
    for name, t in (("self", input), ("mat1", mat1)):
        if t.dtype != mat2.dtype:
            raise RuntimeError(f"{name} and mat2 must have the same dtype, but got {_dtype_name(t)} and "
                               f"{_dtype_name(mat2)}")
    return _add_product(ADDMM, ("ij", "jk", "ik"), input, mat1, mat2, beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (mat @ vec)."""
    if autocast_state.get() is not None:
        return autocast_call(addmv, "addmv", input, mat, vec, beta=beta, alpha=alpha)
    if (input.ndim, mat.ndim, vec.ndim) not in ((0, 2, 1), (1, 2, 1)):
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    if mat.shape[1] != vec.shape[0] or input.ndim and input.shape[0] not in (1, mat.shape[0]):
        raise RuntimeError(f"size mismatch, got input ({input.shape[0] if input.ndim else 1}), mat "
                           f"({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    if not input.dtype == mat.dtype == vec.dtype:
        names = [_dtype_name(t) for t in (input, mat, vec)]
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {names[0]}, {names[1]}, and "
                           f"{names[2]}")
    return _add_product(ADDMV, ("ij", "j", "i"), input, mat, vec, beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (batch1 @ batch2), one matrix product per batch, input broadcasting."""
    if autocast_state.get() is not None:
        return autocast_call(baddbmm, "baddbmm", input, batch1, batch2, beta=beta, alpha=alpha)
    for name, t in (("batch1", batch1), ("batch2", batch2)):
        if t.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    expected = [batch1.shape[0], batch1.shape[2]]
    if list(batch2.shape[:2]) != expected:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: {expected} but got: "
                           f"{list(batch2.shape[:2])}.")
    if input.dtype != batch1.dtype:
        names = [TYPE_META_NAMES.get(t.dtype, t.dtype) for t in (input, batch1, batch2)]
        raise RuntimeError(f"Input dtypes must be the same, got: input {names[0]}, batch1: {names[1]}, batch2: "
                           f"{names[2]}")
    if batch1.dtype != batch2.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_name(batch1)} but found {_dtype_name(batch2)}")
    return _add_product(BADDBMM, ("bij", "bjk", "bik"), input, batch1, batch2, beta, alpha)


# -- dot, vdot, mv: products without the added input ------------------------------------------------------------
def _product_rule(name: str) -> Rule:
    return Rule(
        name,
        (("subs", "alpha", "factor2"), _factor_grad(0)),
        (("subs", "alpha", "factor1"), _factor_grad(1)),
        cost=lambda data, params: 2 * params["macs"] / MACS_PER_NS, multithreaded=True,
    )


DOT = _product_rule("DotBackward0")
MV = _product_rule("MvBackward0")
# vdot = sum(conj(input) * other): antiholomorphic in input, whose gradient is conj(g) * other (PyTorch's formulas)
VDOT = Rule(
    "VdotBackward0",
    (("factor2",), lambda ops, g, other: ops.conj(g) * other),
    (("factor1",), lambda ops, g, self: g * self),
    cost=lambda data, params: 2 * params["macs"] / MACS_PER_NS, multithreaded=True,
)


def _product(rule: Rule, subs: tuple, a: Tensor, b: Tensor) -> Tensor:
    same_device(a, b)
    x, y = a._data, b._data
    data = a._device.xp.asarray(a._device.xp.einsum(f"{subs[0]},{subs[1]}->{subs[2]}", x, y))
    macs = math.prod(dict(zip(subs[0] + subs[1], x.shape + y.shape)).values())
    return record(rule, data, (a, b), subs=subs, alpha=1, factor1=a, factor2=b, macs=macs)


def _vectors(op: str, input: Tensor, other: Tensor) -> None:
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.shape != other.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{other.shape[0]}] "
                           f"to have the same number of elements, but got {input.shape[0]} and {other.shape[0]} "
                           "elements respectively")
    if input.dtype != other.dtype:
        raise RuntimeError(f"{op} : expected both vectors to have same dtype, but found {_dtype_name(input)} and "
                           f"{_dtype_name(other)}")
    if input.dtype == np.bool_:
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool'")


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """The sum of the products of two 1-D tensors' elements."""
    if autocast_state.get() is not None:
        return autocast_call(dot, "dot", input, tensor)
    _vectors("dot", input, tensor)
    return _product(DOT, ("i", "i", ""), input, tensor)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """dot, conjugating the first vector (dot itself for real tensors)."""
    if autocast_state.get() is not None:
        return autocast_call(vdot, "vdot", input, other)
    _vectors("dot", input, other)  # PyTorch's vdot checks its vectors as dot
    same_device(input, other)
    x, y = input._data, other._data
    xp = input._device.xp
    data = xp.asarray(xp.vdot(x, y))
    return record(VDOT, data, (input, other), factor1=input, factor2=other, macs=x.shape[0])


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The product of a matrix and a vector."""
    if autocast_state.get() is not None:
        return autocast_call(mv, "mv", input, vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat ({input.shape[0]}x{input.shape[1]}), "
                           f"vec ({vec.shape[0]})")
    if input.dtype != vec.dtype:
        names = [_dtype_name(t) for t in (vec, input, vec)]  # PyTorch names its result (dtype of vec) first
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {names[0]}, {names[1]}, and "
                           f"{names[2]}")
    if input.dtype.kind == "b" and input._data.size:
        raise NotImplementedError("\"addmv_impl_cpu\" not implemented for 'Bool'")
    return _product(MV, ("ij", "j", "i"), input, vec)


# -- tensordot, inner --------------------------------------------------------------------------------------------
def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """The sum over the dims `dims` names (the last n of a with the first n of b, or two lists) of a * b,
    as one matrix product between permutes and reshapes, as PyTorch computes it. A tensor of dims is read as
    PyTorch reads one: one element is the count, two rows are the lists."""
    if autocast_state.get() is not None:
        return autocast_call(tensordot, "tensordot", a, b, dims)
    if isinstance(dims, Tensor):
        dims = int(dims.item()) if dims.numel() == 1 else dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        given_a, given_b = list(range(-dims, 0)), list(range(dims))  # a's as PyTorch counts them: from the end
    else:
        given_a, given_b = ([d] if isinstance(d, int) else list(d) for d in dims)
        if len(given_a) != len(given_b):
            raise RuntimeError("both dimension lists should have same length")
    dims_a = [single_dim(d, a.ndim, "tensordot") for d in given_a]
    dims_b = [single_dim(d, b.ndim, "tensordot") for d in given_b]
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    for da, db, ga, gb in zip(dims_a, dims_b, given_a, given_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim {ga} "
                               f"and second has size {b.shape[db]} in dim {gb}")
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    size = math.prod(a.shape[d] for d in dims_a)
    left = reshape(permute(a, tuple(free_a + dims_a)), (-1, size))
    right = reshape(permute(b, tuple(dims_b + free_b)), (size, -1))
    return reshape(mm(left, right), tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b))


def inner(input: Tensor, other: Tensor) -> Tensor:
    """The sum over the last dims of input * other (a product when either is 0-dim)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"inner(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    if input.ndim == 0 or other.ndim == 0:
        return mul(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


METHODS: dict[str, Any] = {
    "addmm": addmm, "addmv": addmv, "baddbmm": baddbmm, "dot": dot, "vdot": vdot, "mv": mv, "inner": inner,
}
