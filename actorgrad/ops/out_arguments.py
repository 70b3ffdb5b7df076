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
from actorgrad.ops.linalg import TYPE_META_NAMES
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


# A rule for `out`'s dtype: check(op, result dtype, out dtype, the op's operands) gives PyTorch's refusal or None.
Check = Callable[[str, Any, Any, tuple], "str | None"]


def _named(template: str, result: Any, out: Any) -> str:
    """`template` with the dtypes named: `{r}`/`{o}` as PyTorch's Double..., `{cr}`/`{co}` as C++'s double ..."""
    return template.format(r=SCALAR_NAMES[result], o=SCALAR_NAMES[out], cr=TYPE_META_NAMES[result],
                           co=TYPE_META_NAMES[out])


def exact_dtype(template: str) -> Check:
    """Only the result's dtype, refused in `template`'s words."""
    def check(op: str, result: Any, out: Any, operands: tuple) -> str | None:
        return None if out == result else _named(template, result, out)

    return check


def castable_dtype(template: str) -> Check:
    """Any dtype the result casts to within or up its category (bool < integer < floating < complex), as
    TensorIterator's rule; refused in `template`'s words."""
    def check(op: str, result: Any, out: Any, operands: tuple) -> str | None:
        return None if category(result) <= category(out) else _named(template, result, out)

    return check


CASTABLE = castable_dtype("result type {r} can't be cast to the desired output type {o}")
EXACT = exact_dtype("Found dtype {o} but expected {r}")  # abs, floor, clamp with number bounds ...


def _clamp(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    """clamp with number bounds (where a zero-dim tensor beside a number is one) takes `out` only in the result's
    dtype, with tensor bounds any it casts to."""
    numbers = any(b is not None and not isinstance(b, Tensor) for b in operands[1:])
    tensors = not numbers and any(isinstance(b, Tensor) for b in operands[1:])
    return (CASTABLE if tensors else EXACT)(op, result, out, operands)


def _lerp(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    """lerp with a weight of dimensions takes `out` only in the result's dtype, with a number or a zero-dim
    weight any it casts to."""
    weight = operands[2] if len(operands) > 2 else None
    return (EXACT if isinstance(weight, Tensor) and weight.ndim else CASTABLE)(op, result, out, operands)


def _abs(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    """abs of a complex tensor (a real result) casts into `out`; of a real one, `out` has its dtype."""
    return (CASTABLE if operands[0].dtype.kind == "c" else EXACT)(op, result, out, operands)


def _boolean(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    return None if out == bool_ else f"{op} does not support non-boolean outputs."


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
# Each elementwise public name that takes `out=`, with its rule for `out`'s dtype.
OUT_DTYPE_RULES: dict[str, Check] = {
    **dict.fromkeys(CASTABLE_OPS, CASTABLE),
    **dict.fromkeys(EXACT_OPS, EXACT),
    **dict.fromkeys(("clamp", "clip", "clamp_min", "clamp_max"), _clamp),
    **dict.fromkeys(("abs", "absolute"), _abs),
    "lerp": _lerp,
    **dict.fromkeys(("signbit", "isposinf", "isneginf"), _boolean),
    "nan_to_num": exact_dtype("nan_to_num: dtype of out: {o} should be same as input: {r}"),
    "float_power": exact_dtype("the output given to float_power has dtype {o} but the operation's result "
                               "requires dtype {r}"),
    "heaviside": exact_dtype("heaviside is not yet implemented for tensors with different dtypes."),
    "where": exact_dtype("Expected out type to be {r} but got {o}"),
}
# The ops PyTorch does not refuse `out=` for beside arguments that require grad: those without a derivative,
# and conj_physical.
NO_AUTOGRAD_CHECK = frozenset((
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal", "logical_and",
    "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "bitwise_left_shift", "bitwise_right_shift", "signbit", "isposinf", "isneginf", "floor_divide", "heaviside",
    "gcd", "lcm", "conj_physical",
))


# PyTorch's name of each op given `out=` (`add`, `linalg_inv`) -> its rule: give_out_by_rules fills it.
_RULES: dict[str, Check] = {}


def write_out(op: str, fn: Callable[..., Tensor], args: tuple, kwargs: dict, out: Any) -> Tensor:
    """`fn(*args, **kwargs)` written into `out`, with PyTorch's refusals; returns `out`."""
    operands = (*args, *kwargs.values())
    check_out(op, out, () if op in NO_AUTOGRAD_CHECK else tuple(
        v for operand in operands for v in (operand if isinstance(operand, list | tuple) else (operand,))
    ))  # multi_dot's tensors come as a list
    result = fn(*args, **kwargs)
    refusal = _RULES[op](op, result.dtype, out.dtype, operands)
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


def give_out_by_rules(namespace: dict, rules: dict[str, Check], prefix: str = "") -> None:
    """Give each name of `rules` in `namespace` (a module's public names) PyTorch's `out=`, checked by its rule;
    `prefix` is the one PyTorch puts before the name in its errors (linalg_inv())."""
    _RULES.update({prefix + name: check for name, check in rules.items()})
    give_out(namespace, rules, write_out, prefix)
