"""The rules of `out=` for the reductions, scans and joins (`actorgrad.sum(x, 0, out=y)`, `cat(ts, out=y)`), as
PyTorch's.

`actorgrad.ops.out_arguments` writes `out` for these as for the elementwise ops: the op runs, its result is written
into `out` (resized to the result's shape first, with PyTorch's deprecation warning when `out` had elements), and
autograd through `out=` is refused. Two differences are PyTorch's own:
- sum, nansum, prod, cumsum and cumprod compute in `out`'s dtype, as if given it as `dtype=` (so a float sum into
  an integer `out` sums the truncated values); a `dtype=` given as well must be `out`'s. mean and nanmean of a
  floating input compute in a floating `out`'s dtype too.
- the joins refuse an `out` that shares memory with one of the tensors joined, and name `torch.cat()` in their
  dtype refusal, a TypeError.
- all and any into a uint8 `out` test the input cast to uint8 (where 0.5 and 256 are 0).
Each other op checks `out`'s dtype by its kernel's rule, in its own words.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.ops.memory_overlap import check_operands_shared
from actorgrad.ops.operands import SCALAR_NAMES, category
from actorgrad.ops.out_arguments import (
    CASTABLE,
    EXPECTED,
    Check,
    exact_dtype,
    give_out_by_rules,
    write_out,
)
from actorgrad.ops.public_names import give_out
from actorgrad.tensor import Tensor, bool_

__all__: list[str] = []

UINT8 = np.dtype(np.uint8)


def logsumexp_out_dtype(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    """logsumexp writes into any floating or complex `out`; its refusal names logsumexp() whichever public name
    ran it (special.logsumexp's too)."""
    if out.kind in "fc":
        return None
    return f"logsumexp(): Expected floating point type for result tensor, but got: {SCALAR_NAMES[out]}"


def _boolean_result(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    """all and any write bool, or uint8 as their uint8 results are."""
    return None if out in (bool_, UINT8) else f"{op} only supports bool tensor for result, got: {SCALAR_NAMES[out]}"


def _variance(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    """var and std write a real result into an `out` it casts to; a complex `out` only for a complex input."""
    if out.kind == "c" and operands[0].dtype.kind != "c":
        raise NotImplementedError(f'"std_cpu" not implemented for \'{SCALAR_NAMES[out]}\'')
    return CASTABLE(op, result, out, operands)


def _joined(op: str, result: Any, out: Any, operands: tuple) -> None:
    if category(result) > category(out):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type {SCALAR_NAMES[out]}")


JOINS = ("cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack")
# Each public name's rule for `out`'s dtype, checked on the op's result.
REDUCTION_OUT: dict[str, Check] = {
    **dict.fromkeys(("sum", "nansum", "prod", "cumsum", "cumprod", "norm", "argmax", "argmin"), EXPECTED),
    **dict.fromkeys(("mean", "nanmean", "diff"), CASTABLE),
    **dict.fromkeys(("var", "std"), _variance),
    "logcumsumexp": exact_dtype("expected scalar_type {r} but found {o}"),
    **dict.fromkeys(("amax", "amin"), exact_dtype(
        "Expected the dtype for input and out to match, but got {r} for input's dtype and {o} for out's dtype.")),
    "logsumexp": logsumexp_out_dtype,
    **dict.fromkeys(("all", "any"), _boolean_result),
    **dict.fromkeys(JOINS, _joined),
}


def _in_outs_dtype(op: str, fn: Callable[..., Any], args: tuple, kwargs: dict, out: Any) -> Any:
    """sum, prod, the scans (and mean of a floating input): computed in `out`'s dtype, unless `dtype=` is given,
    which must then be `out`'s; checked after write_out's own refusals, as PyTorch orders them."""
    input = args[0] if args else kwargs.get("input")
    if isinstance(out, Tensor) and isinstance(input, Tensor):  # else write_out refuses either as PyTorch does
        fn = functools.partial(_computed_in_outs_dtype, op, fn, input, out)
    return write_out(op, fn, args, kwargs, out)


def _computed_in_outs_dtype(op: str, fn: Callable[..., Any], input: Tensor, out: Tensor, *args: Any,
                            **kwargs: Any) -> Any:
    dtype = kwargs.get("dtype")
    if dtype is not None:
        refusal = EXPECTED(op, np.dtype(dtype), out.dtype, ())
        if refusal is not None:
            raise RuntimeError(refusal)
    elif op in ("mean", "nanmean"):
        if input.dtype.kind in "fc" and out.dtype.kind in "fc":
            kwargs["dtype"] = out.dtype
    else:
        _refuse_kernel(op, input.dtype, out.dtype)
        kwargs["dtype"] = out.dtype
    return fn(*args, **kwargs)


def _refuse_kernel(op: str, input: Any, out: Any) -> None:
    """The dtypes PyTorch's kernels of the scans and nansum have none for."""
    if op in ("cumsum", "cumprod") and out == bool_:
        raise NotImplementedError(f'"{op}_out_cpu" not implemented for \'Bool\'')
    if op == "nansum" and input.kind == "f" and out.kind != "f":
        raise NotImplementedError(f'"nansum_cpu" not implemented for \'{SCALAR_NAMES[out]}\'')


def _join_out(op: str, fn: Callable[..., Any], args: tuple, kwargs: dict, out: Any) -> Any:
    """A join refuses an `out` that shares memory with a tensor it joins."""
    if isinstance(out, Tensor) and args and isinstance(args[0], list | tuple):
        check_operands_shared(out, tuple(t for t in args[0] if isinstance(t, Tensor)), True)
    return write_out(op, fn, args, kwargs, out)


def _truth_out(op: str, fn: Callable[..., Any], args: tuple, kwargs: dict, out: Any) -> Any:
    """all and any into a uint8 `out` test the input cast to uint8, as PyTorch's do: 0.5 and 256 test false."""
    if isinstance(out, Tensor) and out.dtype == UINT8:
        fn = functools.partial(_in_uint8, fn)
    return write_out(op, fn, args, kwargs, out)


def _in_uint8(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    if args:
        args = (_as_uint8(args[0]), *args[1:])
    elif "input" in kwargs:
        kwargs["input"] = _as_uint8(kwargs["input"])
    return fn(*args, **kwargs)


def _as_uint8(input: Any) -> Any:
    return input.detach().to(UINT8) if isinstance(input, Tensor) and input.dtype != UINT8 else input


def give_reduction_out(namespace: dict) -> None:
    """Give the reductions, scans and joins of `namespace` (actorgrad.ops' public names) PyTorch's `out=`: each
    checked by its rule, those that take more than write_out's steps through their own writer."""
    give_out_by_rules(namespace, REDUCTION_OUT)
    give_out(namespace, ("sum", "nansum", "prod", "cumsum", "cumprod", "mean", "nanmean"), _in_outs_dtype)
    give_out(namespace, JOINS, _join_out)
    give_out(namespace, ("all", "any"), _truth_out)
