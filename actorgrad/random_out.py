"""`out=` for the random tensor functions (rand, randn, randint, randperm, normal, bernoulli, multinomial), as
PyTorch's.

A factory (rand, randn, randint, randperm, normal of two numbers) draws in `out`'s dtype, refuses a `dtype=` that
differs from it, resizes `out` without a warning and leaves it requiring grad when `requires_grad=True` is given.
normal of tensors draws as without `out` and writes the result into `out` (cast to its dtype, resized with
PyTorch's deprecation warning when it had elements); bernoulli does the same without the warning; multinomial
takes only an int64 `out`. As everywhere, no autograd goes through `out=`: an `out` (or an operand) that requires
grad is refused in grad mode. A call without `out` pays one `is None` test.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.grad_mode import no_grad
from actorgrad.ops.inplace import copy_
from actorgrad.ops.operands import SCALAR_NAMES, not_implemented, type_name
from actorgrad.ops.out_arguments import CASTABLE, refuse_autograd, store_out
from actorgrad.ops.storage_methods import resize_
from actorgrad.tensor import Tensor, int64

__all__: list[str] = []

BERNOULLI_OUT_SIGNATURES = (
    " * (Tensor input, *, actorgrad.Generator generator = None, Tensor out = None)\n"
    " * (Tensor input, float p, *, actorgrad.Generator generator = None)\n"
)


def _check_tensor(op: str, out: Any) -> None:
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type_name(out)}")


def _write(result: Tensor, out: Tensor) -> Tensor:
    """`result` copied into `out` (cast to its dtype), `out` resized to its shape first without a warning."""
    if out.shape != result.shape:
        resize_(out, result.shape)
    with no_grad():
        return copy_(out, result)


def _draw_into(op: str, fn: Callable[..., Tensor], args: tuple, kwargs: dict, out: Any) -> Tensor:
    """A factory's draws made in `out`'s dtype (and on its device unless `device=` says otherwise) and written
    into `out`."""
    _check_tensor(op, out)
    refuse_autograd(f"aten::{op}", (out,))
    dtype = kwargs.get("dtype")
    if dtype is not None and np.dtype(dtype) != out.dtype:
        raise RuntimeError(f"dtype {SCALAR_NAMES[np.dtype(dtype)]} does not match dtype of out parameter "
                           f"({SCALAR_NAMES[out.dtype]})")
    requires_grad = kwargs.pop("requires_grad", False)
    result = fn(*args, **{**kwargs, "dtype": out.dtype, "device": kwargs.get("device") or out.device})
    if requires_grad and out.dtype.kind not in "fc":  # checked after the draw's own checks, as in PyTorch
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    _write(result, out)
    return out.requires_grad_() if requires_grad else out


def factory_out(op: str) -> Callable[[Callable[..., Tensor]], Callable[..., Tensor]]:
    """Give the random factory `op` PyTorch's `out=`."""
    def give(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
        @functools.wraps(fn)
        def with_out(*args: Any, out: Any = None, **kwargs: Any) -> Tensor:
            if out is None:
                return fn(*args, **kwargs)
            return _draw_into(op, fn, args, kwargs, out)

        return with_out

    return give


def _cast(value: Any, dtype: np.dtype) -> Any:
    return value.to(dtype) if isinstance(value, Tensor) else value


def normal_out(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """normal's `out=`: of two numbers (with a size) a factory's, of tensors the result written into `out`."""
    @functools.wraps(fn)
    def with_out(*args: Any, out: Any = None, **kwargs: Any) -> Tensor:
        if out is None:
            return fn(*args, **kwargs)
        operands = (*args[:2], *(kwargs[name] for name in ("mean", "std") if name in kwargs))
        tensors = tuple(v for v in operands if isinstance(v, Tensor))
        if not tensors:
            return _draw_into("normal", fn, args, kwargs, out)
        _check_tensor("normal", out)
        refuse_autograd("normal", (out, *tensors))
        if out.numel() and out.dtype.kind not in "fc":
            raise not_implemented("normal_kernel_cpu", out.dtype)
        for operand in tensors:  # PyTorch scales and shifts draws made in `out` by std and mean in place
            refusal = CASTABLE("normal", np.result_type(operand.dtype, out.dtype), out.dtype, ())
            if refusal is not None:
                raise RuntimeError(refusal)
        args = tuple(_cast(v, out.dtype) for v in args)
        return store_out(fn(*args, **{name: _cast(v, out.dtype) for name, v in kwargs.items()}), out)

    return with_out


def bernoulli_out(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """bernoulli's `out=`, which PyTorch takes only without `p`: 0/1 drawn from input's probabilities into `out`."""
    @functools.wraps(fn)
    def with_out(input: Tensor, p: Any = None, *, out: Any = None, **kwargs: Any) -> Tensor:
        if out is None:
            return fn(input, p, **kwargs)
        if p is not None:
            got = ", ".join((type_name(input), type_name(p), f"out={type_name(out)}"))
            raise TypeError(f"bernoulli() received an invalid combination of arguments - got ({got}), but expected "
                            f"one of:\n{BERNOULLI_OUT_SIGNATURES}")
        _check_tensor("bernoulli", out)
        refuse_autograd("bernoulli", (out, input))
        if not input.numel():  # PyTorch's kernel, which checks the dtypes, does not run
            return resize_(out, input.shape)
        if out.dtype.kind == "c":  # `out` is the kernel's self, input its p
            raise not_implemented("bernoulli_tensor_cpu_self_", out.dtype)
        if input.dtype.kind != "f":
            raise not_implemented("bernoulli_tensor_cpu_p_", input.dtype)
        return _write(fn(input, **kwargs).detach(), out)

    return with_out


def multinomial_out(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """multinomial's `out=`: an int64 tensor the drawn indices are written into."""
    @functools.wraps(fn)
    def with_out(*args: Any, out: Any = None, **kwargs: Any) -> Tensor:
        if out is None:
            return fn(*args, **kwargs)
        _check_tensor("multinomial", out)
        if out.dtype != int64:
            raise RuntimeError(f"multinomial expects Long tensor out, got: {SCALAR_NAMES[out.dtype]}")
        return _write(fn(*args, **kwargs), out)

    return with_out
