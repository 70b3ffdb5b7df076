"""matmul in all its forms (dot, mv, mm, batched with broadcasting) and its gradient rule.

1-D operands are promoted to matrices (a row for the left, a column for the right), the gradient is taken in
the promoted, broadcast form, then summed back and reshaped to each operand's shape.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.ops.loss_arguments import size_mismatch
from actorgrad.ops.operands import SCALAR_NAMES, require_tensors
from actorgrad.ops.record import Rule, common_device, record
from actorgrad.ops.shape import _expanded_shape
from actorgrad.tensor import Tensor

__all__ = ["bmm", "matmul", "mm", "outer"]

# Measured here: numpy float64 matmul runs about 25 multiply-adds per nanosecond on one core.
MACS_PER_NS = 25


# A complex operand's gradient takes the other's conjugate transpose (PyTorch's convention); ops.conj returns a
# real array itself.
def _grad_self(ops: Any, g: Any, other: Any, self_shape: tuple, a2: tuple, b2: tuple, out2: tuple) -> Any:
    grad = ops.reshape(g, out2) @ ops.swapaxes(ops.conj(ops.reshape(other, b2)), -1, -2)
    return ops.reshape(ops.sum_to(grad, a2), self_shape)


def _grad_other(ops: Any, g: Any, self: Any, other_shape: tuple, a2: tuple, b2: tuple, out2: tuple) -> Any:
    grad = ops.swapaxes(ops.conj(ops.reshape(self, a2)), -1, -2) @ ops.reshape(g, out2)
    return ops.reshape(ops.sum_to(grad, b2), other_shape)


def _cost(data: Any, params: dict) -> float:
    return 2 * data.size * params["inner"] / MACS_PER_NS


def _matmul_rule(name: str) -> Rule:
    return Rule(
        name,
        (("other", "self_shape", "a2", "b2", "out2"), _grad_self),
        (("self", "other_shape", "a2", "b2", "out2"), _grad_other),
        cost=_cost,
        multithreaded=True,
    )


def _mm_grad_self(ops: Any, g: Any, other: Any) -> Any:
    return g @ ops.swapaxes(ops.conj(other), 0, 1)


def _mm_grad_other(ops: Any, g: Any, self: Any) -> Any:
    return ops.swapaxes(ops.conj(self), 0, 1) @ g


# Two matrices, the common case, need no promoted shapes: a node that saves fewer values costs less to record.
MM = Rule("MmBackward0", (("other",), _mm_grad_self), (("self",), _mm_grad_other), cost=_cost, multithreaded=True)
RULES = {
    (1, 1): _matmul_rule("DotBackward0"),
    (2, 1): _matmul_rule("MvBackward0"),
    (2, 2): MM,
    (3, 3): _matmul_rule("BmmBackward0"),
}
MATMUL = _matmul_rule("MatmulBackward0")


BOOL = np.dtype(np.bool_)
# PyTorch's C++ names of dtypes, as its matmul and convolution errors print them
TYPE_META_NAMES = {
    np.dtype(t): name for t, name in (
        (np.float64, "double"), (np.float32, "float"), (np.float16, "c10::Half"), (np.int64, "long int"),
        (np.int32, "int"), (np.int16, "short int"), (np.int8, "signed char"), (np.uint8, "unsigned char"),
        (np.bool_, "bool"), (np.complex64, "c10::complex<float>"), (np.complex128, "c10::complex<double>"),
    )
}


def _check_same_dtype(a: np.ndarray, b: np.ndarray) -> None:
    """PyTorch multiplies matrices of one dtype only: numpy would promote float32 with float64 silently."""
    if a.dtype != b.dtype:
        first, second = (TYPE_META_NAMES.get(d, d) for d in (a.dtype, b.dtype))
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {first} != {second}")


def vector_sizes_error(a: tuple, b: tuple) -> RuntimeError:
    """PyTorch's dot's error for vectors of shapes a and b, of different lengths."""
    return RuntimeError(f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have the same "
                        f"number of elements, but got {a[0]} and {b[0]} elements respectively")


def _shape_error(a: tuple, b: tuple) -> RuntimeError:
    """PyTorch's error for operands matmul cannot multiply, from the kernel its shapes lead to: dot, mv or mm
    (a left operand of 3 or more dims folded into one matrix), else bmm after broadcasting the batch dims."""
    if len(a) == len(b) == 1:
        return vector_sizes_error(a, b)
    rows = math.prod(a[:-1])
    if len(b) == 1:
        return RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{a[-1]}), vec ({b[0]})")
    if len(b) == 2:
        return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{a[-1]} and {b[0]}x{b[1]})")
    try:
        batch = math.prod(np.broadcast_shapes(a[:-2], b[:-2]))
    except ValueError:
        return size_mismatch(a[:-2], b[:-2])
    return RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {a[-1]}] but got: "
                        f"[{batch}, {b[-2]}].")


def _dtype_error(a: Any, b: Any) -> Exception:
    """PyTorch's error for operands of two dtypes, or booleans, from the kernel their shapes lead to."""
    kernel = "dot" if a.ndim == b.ndim == 1 else "addmv_impl_cpu" if b.ndim == 1 else (
        "addmm_impl_cpu_" if b.ndim == 2 else "bmm")
    if a.dtype == b.dtype:
        return NotImplementedError(f"\"{kernel}\" not implemented for '{SCALAR_NAMES[a.dtype]}'")
    first, second = SCALAR_NAMES[a.dtype], SCALAR_NAMES[b.dtype]
    if kernel == "dot":
        return RuntimeError(f"dot : expected both vectors to have same dtype, but found {first} and {second}")
    if kernel == "addmv_impl_cpu":  # PyTorch names the result's dtype (the vector's) first
        return RuntimeError(f"addmv input tensors must have the same dtype, but got {second}, {first}, and {second}")
    if kernel == "bmm":
        return RuntimeError(f"expected scalar type {first} but found {second}")
    first, second = (TYPE_META_NAMES.get(d, d) for d in (a.dtype, b.dtype))
    return RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {first} != {second}")


def matmul(input: Tensor, other: Tensor) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(matmul, "matmul", input, other)
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        require_tensors("matmul", input=input, other=other)
    a, b = input._data, other._data
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D"
        )
    a2 = (1, *a.shape) if a.ndim == 1 else a.shape
    b2 = (*b.shape, 1) if b.ndim == 1 else b.shape
    if a2[-1] != b2[-2]:
        raise _shape_error(a.shape, b.shape)
    try:
        batch = np.broadcast_shapes(a2[:-2], b2[:-2]) if a.ndim > 2 or b.ndim > 2 else ()
    except ValueError:
        raise _shape_error(a.shape, b.shape) from None
    if a.dtype != b.dtype or a.dtype is BOOL:  # PyTorch multiplies one dtype only, and no booleans
        raise _dtype_error(a, b)
    if a.__class__ is not b.__class__:
        common_device((input, other))
    data = a @ b  # the array's own matmul (numpy's would reach CuPy's only through __array_ufunc__)
    rule = RULES.get((a.ndim, b.ndim), MATMUL)
    if rule is MM:
        return record(MM, data, (input, other), inner=a2[-1])
    if rule.name == "BmmBackward0" and a.shape[0] != b.shape[0]:
        rule = MATMUL
    out2 = (*batch, a2[-2], b2[-1])
    return record(
        rule, data, (input, other), self_shape=a.shape, other_shape=b.shape, a2=a2, b2=b2, out2=out2,
        inner=a2[-1],
    )


def _linear_weight_grad(ops: Any, g: Any, self: Any) -> Any:
    return ops.swapaxes(g, 0, 1) @ ops.conj(self)


_LINEAR_GRADS = ((("other",), lambda ops, g, weight: g @ ops.conj(weight)), (("self",), _linear_weight_grad))
LINEAR = {
    # edges in addmm's order, as PyTorch's linear records addmm(bias, input, weight.t()): bias, input, weight
    True: Rule(
        "AddmmBackward0",
        (("bias_shape",), lambda ops, g, bias_shape: ops.sum_to(g, bias_shape)),
        (("weight",), lambda ops, g, weight: g @ ops.conj(weight)),
        (("mat1",), _linear_weight_grad),
        cost=_cost,
        multithreaded=True,
    ),
    False: Rule("MmBackward0", *_LINEAR_GRADS, cost=_cost, multithreaded=True),
}


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias, down PyTorch's two paths and with their errors: with a bias and a matrix input
    (or a 1-D bias) its fused addmm (other ranks than 2 through a matrix view), else a matmul with the bias added
    after. A 1-D weight is a vector, so only the matmul path takes one."""
    if autocast_state.get() is not None:
        return autocast_call(linear, "linear", input, weight, bias)
    x, w = input._data, weight._data
    if x.ndim == 0 or w.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {x.ndim}D and {w.ndim}D")
    if w.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {w.ndim}D")
    fused = bias is not None and (x.ndim == 2 or bias.ndim == 1)
    if w.ndim == 1:
        if fused:
            raise RuntimeError("mat2 must be a matrix, got 1-D tensor")
        out = matmul(input, weight)
        return out if bias is None else _bias_added(out, bias)
    if bias is not None and not fused:
        return _bias_added(linear(input, weight), bias)
    if fused:  # addmm checks its operands' dtypes before their shapes
        for name, operand in (("self", bias._data), ("mat1", x)):
            if operand.dtype != w.dtype:
                raise RuntimeError(f"{name} and mat2 must have the same dtype, but got {SCALAR_NAMES[operand.dtype]} "
                                   f"and {SCALAR_NAMES[w.dtype]}")
    if x.shape[-1] != w.shape[1]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({math.prod(x.shape[:-1])}x{x.shape[-1]} "
                           f"and {w.shape[1]}x{w.shape[0]})")
    _check_same_dtype(x, w)
    common_device((input, weight) if bias is None else (input, weight, bias))
    if x.ndim != 2:
        out = linear(input.reshape(math.prod(x.shape[:-1]), x.shape[-1]), weight, bias)  # -1: ambiguous if empty
        return out.reshape(*x.shape[:-1], w.shape[0])
    if bias is None:
        return record(LINEAR[False], x @ w.T, (input, weight), inner=w.shape[1])
    _expanded_shape(bias.shape, (x.shape[0], w.shape[0]))  # addmm expands its bias to the product's shape
    return record(LINEAR[True], x @ w.T + bias._data, (bias, input, weight), inner=w.shape[1],
                  bias_shape=bias.shape, mat1=input, weight=weight)


def _bias_added(out: Tensor, bias: Tensor) -> Tensor:
    """out + bias off addmm's path: PyTorch adds it in place, so the bias must broadcast to the output's shape."""
    result = out + bias
    if result.shape != out.shape:
        raise RuntimeError(
            f"output with shape {list(out.shape)} doesn't match the broadcast shape {list(result.shape)}"
        )
    return result


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """A strict matmul of two matrices, with PyTorch's errors."""
    if autocast_state.get() is not None:
        return autocast_call(mm, "mm", input, mat2)
    a, b = input._data, mat2._data
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                           f"{b.shape[0]}x{b.shape[1]})")
    return matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """A strict batched matmul of two 3-D tensors with equal batch sizes, with PyTorch's errors."""
    if autocast_state.get() is not None:
        return autocast_call(bmm, "bmm", input, mat2)
    a, b = input._data, mat2._data
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if b.shape[:2] != (a.shape[0], a.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
                           f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    return matmul(input, mat2)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """input[i] * vec2[j], recorded as a product (MulBackward0), as PyTorch does."""
    for name, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return input.reshape(-1, 1) * vec2


METHODS = {
    "matmul": matmul,
    "mm": mm, "bmm": bmm, "outer": outer,
}
