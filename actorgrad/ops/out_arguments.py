"""`out=` for the elementwise ops' public names (`actorgrad.add(a, b, out=c)`), as PyTorch's.

The op runs as it would without `out`, and its result is then written into `out`: cast to `out`'s dtype, with
`out` resized to the result's shape first (with PyTorch's deprecation warning when `out` had elements). So the
values are those PyTorch computes, in the op's own dtype (`sin` of an int tensor into a float64 `out` is float32's
sine, as there). PyTorch's refusals come first: no autograd through `out=` (an argument that requires grad), and
a result dtype that `out` cannot take, checked by the op's own rule (most ops: no cast down a category, so no
float result into an integer `out`; some: `out`'s dtype must be the result's). Tensor methods and operators take
no `out`, so they pay nothing for it; a public name pays one `is None` test (its wrapper here also makes the
check of its tensor arguments, in the one call frame that check costs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actorgrad.grad_mode import _grad_enabled, no_grad
from actorgrad.ops.inplace import copy_
from actorgrad.ops.operands import SCALAR_NAMES, category, type_name
from actorgrad.ops.public_names import give_out
from actorgrad.ops.storage_methods import resize_
from actorgrad.tensor import Tensor, bool_
from actorgrad.user_warnings import warn

__all__: list[str] = []

RESIZED = (
    "An output with one or more elements was resized since it had shape {old}, which does not match the required "
    "output shape {new}. This behavior is deprecated, and in a future PyTorch release outputs will not be resized "
    "unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
    "elements with t.resize_(0)."
)


def _castable(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    """TensorIterator's rule: the result casts to `out` within or up its category (bool < integer < floating <
    complex)."""
    if category(result) > category(out):
        return f"result type {SCALAR_NAMES[result]} can't be cast to the desired output type {SCALAR_NAMES[out]}"
    return None


def _exact(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    """The ops whose kernels take `out` only in the result's dtype (abs, floor, clamp with number bounds ...)."""
    if out != result:
        return f"Found dtype {SCALAR_NAMES[out]} but expected {SCALAR_NAMES[result]}"
    return None


def _clamp(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    """clamp with number bounds (where a zero-dim tensor beside a number is one) takes `out` only in the result's
    dtype, with tensor bounds any it casts to."""
    numbers = any(b is not None and not isinstance(b, Tensor) for b in operands[1:])
    tensors = not numbers and any(isinstance(b, Tensor) for b in operands[1:])
    return (_castable if tensors else _exact)(op, result, out, operands)


def _lerp(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    """lerp with a weight of dimensions takes `out` only in the result's dtype, with a number or a zero-dim
    weight any it casts to."""
    weight = operands[2] if len(operands) > 2 else None
    return (_exact if isinstance(weight, Tensor) and weight.ndim else _castable)(op, result, out, operands)


def _abs(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    """abs of a complex tensor (a real result) casts into `out`; of a real one, `out` has its dtype."""
    return (_castable if operands[0].dtype.kind == "c" else _exact)(op, result, out, operands)


def _boolean(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    return None if out == bool_ else f"{op} does not support non-boolean outputs."


def _worded(template: str) -> Callable[..., str | None]:
    """An exact-dtype rule in an op's own words (`{out}`, `{result}`: PyTorch's names of the dtypes)."""
    def check(op: str, result: Any, out: Any, operands: tuple) -> str | None:
        if out == result:
            return None
        return template.format(out=SCALAR_NAMES[out], result=SCALAR_NAMES[result])

    return check


CASTABLE_OPS = (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos",
    "atan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "arcsinh", "arccosh",
    "arctanh", "sigmoid", "erf", "erfc", "erfinv", "lgamma", "digamma", "polygamma", "mvlgamma", "reciprocal",
    "square", "logical_not", "angle", "i0", "sinc", "deg2rad", "rad2deg", "logit", "igamma", "igammac",
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder", "fmod",
    "pow", "atan2", "arctan2", "hypot", "maximum", "minimum", "fmax", "fmin", "copysign", "nextafter", "ldexp",
    "xlogy", "logaddexp", "logaddexp2", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
    "bitwise_right_shift", "logical_and", "logical_or", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge", "greater",
    "greater_equal", "less", "less_equal", "not_equal", "gcd", "lcm", "addcmul", "addcdiv",
)
EXACT_OPS = (
    "neg", "negative", "sign", "sgn", "floor", "ceil", "round", "trunc", "fix", "frac",
    "bitwise_not", "conj_physical",
)
# Each public name that takes `out=`, with its rule for `out`'s dtype.
OUT_DTYPE_RULES: dict[str, Callable[..., str | None]] = {
    **dict.fromkeys(CASTABLE_OPS, _castable),
    **dict.fromkeys(EXACT_OPS, _exact),
    **dict.fromkeys(("clamp", "clip", "clamp_min", "clamp_max"), _clamp),
    **dict.fromkeys(("abs", "absolute"), _abs),
    "lerp": _lerp,
    **dict.fromkeys(("signbit", "isposinf", "isneginf"), _boolean),
    "nan_to_num": _worded("nan_to_num: dtype of out: {out} should be same as input: {result}"),
    "float_power": _worded("the output given to float_power has dtype {out} but the operation's result requires "
                           "dtype {result}"),
    "heaviside": _worded("heaviside is not yet implemented for tensors with different dtypes."),
    "where": _worded("Expected out type to be {result} but got {out}"),
}
# The ops PyTorch does not refuse `out=` for beside arguments that require grad: those without a derivative,
# and conj_physical.
NO_AUTOGRAD_CHECK = frozenset((
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal", "logical_and",
    "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "bitwise_left_shift", "bitwise_right_shift", "signbit", "isposinf", "isneginf", "floor_divide", "heaviside",
    "gcd", "lcm", "conj_physical",
))


def write_out(op: str, fn: Callable[..., Tensor], args: tuple, kwargs: dict, out: Any) -> Tensor:
    """`fn(*args, **kwargs)` written into `out`, with PyTorch's refusals; returns `out`."""
    operands = (*args, *kwargs.values())
    check_out(op, out, () if op in NO_AUTOGRAD_CHECK else operands)
    result = fn(*args, **kwargs)
    refusal = OUT_DTYPE_RULES[op](op, result.dtype, out.dtype, operands)
    if refusal is not None:
        raise RuntimeError(refusal)
    return store_out(result, out)


def check_out(op: str, out: Any, operands: tuple) -> None:
    """PyTorch's refusals before an op runs: an `out` that is no tensor, and autograd through `out=` (`out` or one
    of `operands` requiring grad, in grad mode)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type_name(out)}")
    if _grad_enabled.get() and any(isinstance(v, Tensor) and v.requires_grad for v in (out, *operands)):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, but "
                           "one of the arguments requires grad.")


def store_out(result: Tensor, out: Tensor) -> Tensor:
    """`result` written into `out` (whose dtype it may take), `out` resized to its shape first with PyTorch's
    deprecation warning when `out` had elements; returns `out`."""
    if out.shape != result.shape:
        if out.numel():
            warn(RESIZED.format(old=list(out.shape), new=list(result.shape)))
        resize_(out, result.shape)
    with no_grad():
        return copy_(out, result)


def accept_out(namespace: dict) -> None:
    """Give each name of OUT_DTYPE_RULES in `namespace` (the ops' public names) PyTorch's `out=`."""
    give_out(namespace, OUT_DTYPE_RULES, write_out)
