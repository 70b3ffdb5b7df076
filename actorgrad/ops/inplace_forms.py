"""The in-place forms (`x.sin_()`, `x.pow_(2)`, `x.addcmul_(t1, t2, value=0.5)`, `x.eq_(y)` ...) of ops that exist
out of place, as PyTorch's Tensor methods.

Each form is its out-of-place method written back into the tensor by `write_in_place`, which already does what an
in-place op must (a version bump, a history rebased onto the op's node, a write through a view recorded as
CopySlices, a leaf that requires grad refused, a result dtype that cannot be cast back refused), so the forms
differ only in their names: they are rows of one table, with a check for the few refusals PyTorch words its own way.

`saves_self=True` has `write_in_place` copy the tensor's old values for the recorded node, since many of these ops'
gradients read their input (sin's, pow's, atan2's ...), which the write overwrites; the copy is made only when a
gradient is recorded. The comparisons pass False: their node keeps nothing, and the copy made a recording `x.eq_(y)`
on 10**6 float64 elements 60% slower (0.75 ms -> 1.2 ms).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.grad_mode import _grad_enabled
from actorgrad.ops.inplace_recording import write_in_place
from actorgrad.ops.linalg import TYPE_META_NAMES
from actorgrad.ops.operands import SCALAR_NAMES, category
from actorgrad.ops.record import Rule, record, zeros_grad
from actorgrad.tensor import Tensor

__all__: list[str] = []


def _same_size(self: Tensor, result: Tensor, *args: Any, **kwargs: Any) -> None:
    """addmm_, addmv_ and baddbmm_ refuse a `self` their product would broadcast, in PyTorch's words."""
    if result.shape != self.shape:
        raise RuntimeError(
            f"Bad in-place call: input tensor size {list(self.shape)} and output tensor size {list(result.shape)} "
            "should match"
        )


def _scan_check(name: str) -> Callable[..., None]:
    """cumsum_ and cumprod_ take no bool tensor, and a `dtype=` only if it is the tensor's own."""

    def check(self: Tensor, result: Tensor, *args: Any, dtype: Any = None, **kwargs: Any) -> None:
        if self.dtype == np.bool_:
            raise NotImplementedError(f'"{name}_out_cpu" not implemented for \'Bool\'')
        if dtype is not None and np.dtype(dtype) != self.dtype:
            raise RuntimeError(
                f"Bad in-place call: input tensor dtype {TYPE_META_NAMES[self.dtype]} and output tensor dtype "
                f"{TYPE_META_NAMES[np.dtype(dtype)]} should match"
            )

    return check


def _castable_bound(self: Tensor, result: Tensor, *args: Any, **kwargs: Any) -> None:
    """clamp_min_ and clamp_max_ with a number name the dtypes in C++ (`long int`) when the result can't be cast."""
    (bound,) = (*args, *kwargs.values())  # one, or the out-of-place op would have refused
    if not isinstance(bound, Tensor) and category(result.dtype) > category(self.dtype):
        raise RuntimeError(
            f"result type {SCALAR_NAMES[result.dtype]} can't be cast to the desired output type "
            f"{TYPE_META_NAMES[self.dtype]}"
        )


def _float64_base(self: Tensor, result: Tensor, *args: Any, **kwargs: Any) -> None:
    """float_power_ computes in float64, which only a float64 tensor can hold."""
    if result.dtype != self.dtype:
        raise RuntimeError(
            f"the base given to float_power_ has dtype {SCALAR_NAMES[self.dtype]} but the operation's result "
            f"requires dtype {SCALAR_NAMES[result.dtype]}"
        )


# name -> a check of (self, the out-of-place result, the op's arguments), run before the write
CHECKED = {
    "float_power": _float64_base,
    "addmm": _same_size, "addmv": _same_size, "baddbmm": _same_size,
    "cumsum": _scan_check("cumsum"), "cumprod": _scan_check("cumprod"),
    "clamp_min": _castable_bound, "clamp_max": _castable_bound,
}
NAMES = (
    "acos", "arccos", "asin", "arcsin", "atan", "arctan", "atan2", "arctan2", "ceil", "cos", "cosh", "erf", "erfc",
    "exp2", "expm1", "fix", "floor", "frac", "log", "log10", "log1p", "log2", "logit", "nan_to_num", "reciprocal",
    "round", "rsqrt", "sin", "sinh", "sqrt", "square", "tan", "trunc", "pow", "fmod", "remainder", "floor_divide",
    "xlogy", "lerp", "addcmul", "addcdiv", "clamp_min", "clamp_max", "addmm", "addmv", "baddbmm", "cumsum",
    "cumprod", "tril", "triu", "scatter_add", "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor",
    "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "sinc", "hypot", "copysign",
    "heaviside", "float_power", "ldexp", "divide", "multiply", "subtract", "true_divide", "gcd", "lcm",
    "bitwise_left_shift", "bitwise_right_shift", "nextafter", "renorm", "addbmm", "addr",
)
# PyTorch's logical ops have no derivative and, in place, leave the tensor's history as it was (a leaf that requires
# grad included), so their forms never record.
UNRECORDED = ("logical_not", "logical_and", "logical_or", "logical_xor")
# each comparison and its alias -> the name PyTorch's node takes from it (greater_ records GtBackward0)
COMPARISONS = {
    "eq": "Eq", "ne": "Ne", "lt": "Lt", "le": "Le", "gt": "Gt", "ge": "Ge", "not_equal": "Ne", "less": "Lt",
    "less_equal": "Le", "greater": "Gt", "greater_equal": "Ge",
}


def _tensors(args: tuple, kwargs: dict) -> tuple:
    return tuple(a for a in (*args, *kwargs.values()) if isinstance(a, Tensor))


def _form(name: str, write: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The method `<name>_`: `write(self, *args, **kwargs)`, with the out-of-place op's argument errors (`atan2():
    argument 'other' ...`) naming the in-place form that was called."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        try:
            return write(self, *args, **kwargs)
        except TypeError as error:
            text = str(error)
            if not text.startswith(name + "("):
                raise
            raise TypeError(name + "_" + text[len(name):]) from None

    method.__name__ = method.__qualname__ = name + "_"
    return method


def _written(name: str) -> Callable[..., Tensor]:
    """`self.<name>(*args, **kwargs)` written into self."""
    check = CHECKED.get(name)

    def write(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        def compute(s: Tensor) -> Tensor:
            result = getattr(s, name)(*args, **kwargs)
            if check is not None:
                check(s, result, *args, **kwargs)
            return result

        return write_in_place(self, compute, _tensors(args, kwargs), True)

    return write


def _unrecorded(name: str) -> Callable[..., Tensor]:
    """`self.<name>(*args, **kwargs)` written into self as in no_grad mode, whatever the mode."""
    def write(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        token = _grad_enabled.set(False)
        try:
            return write_in_place(self, lambda s: getattr(s, name)(*args, **kwargs), (), False)
        finally:
            _grad_enabled.reset(token)

    return write


def _comparison(name: str, title: str) -> Callable[..., Tensor]:
    """PyTorch records a comparison written in place (its gradient is zero), as <Title>Backward0 against a number
    and <Title>Backward1 against a tensor; out of place it records nothing, so the node is made here."""
    against_number = Rule(f"{title}Backward0", ((), zeros_grad))
    against_tensor = Rule(f"{title}Backward1", ((), zeros_grad), ((), zeros_grad), broadcasts=True)

    def write(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        operands = _tensors(args, kwargs)

        def compute(s: Tensor) -> Tensor:
            data = getattr(s, name)(*args, **kwargs)._data
            return record(against_tensor if operands else against_number, data, (s, *operands))

        return write_in_place(self, compute, operands, False)

    return write


METHODS = {
    **{name + "_": _form(name, _written(name)) for name in NAMES},
    **{name + "_": _form(name, _unrecorded(name)) for name in UNRECORDED},
    **{name + "_": _form(name, _comparison(name, title)) for name, title in COMPARISONS.items()},
}
