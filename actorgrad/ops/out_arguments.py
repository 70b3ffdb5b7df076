"""`out=` for the elementwise ops' public names (`actorgrad.add(a, b, out=c)`), as PyTorch's.

The op runs as it would without `out`, and its result is then written into `out`: cast to `out`'s dtype, with
`out` resized to the result's shape first (with PyTorch's deprecation warning when `out` had elements). So the
values are those PyTorch computes, in the op's own dtype (`sin` of an int tensor into a float64 `out` is float32's
sine, as there). PyTorch's refusals come first: no autograd through `out=` (an argument that requires grad), and
a result dtype that `out` cannot take, checked by the op's own rule (most ops: no cast down a category, so no
float result into an integer `out`; some: `out`'s dtype must be the result's). Tensor methods and operators take
no `out`, so they pay nothing for it; a public name pays one `is None` test (its wrapper here also makes the
check of its tensor arguments, in the one call frame that check costs).

The functions that return several tensors take a tuple (or list) of them, `max(x, 1, out=(values, indices))`,
each output checked by its own rule and written as above, and give back those tensors in PyTorch's `max_out`
named tuple.
"""

from __future__ import annotations

import inspect
from collections import namedtuple
from collections.abc import Callable
from typing import Any, NamedTuple

from actorgrad.grad_mode import _grad_enabled, no_grad
from actorgrad.ops.inplace import copy_
from actorgrad.ops.linalg import TYPE_META_NAMES
from actorgrad.ops.memory_overlap import PARTLY_SHARED_OUT, check_operands_shared
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


class Outputs(NamedTuple):
    """The rule of `out=` for a function that returns several tensors: one Check per tensor, in order, the name
    PyTorch's autograd refusal gives the function where it names the kernel behind it (`_linalg_svd`), and the
    rule of its calls that give one tensor where it has such calls (max and min without dim)."""

    checks: tuple[Check, ...]
    autograd_name: str = ""
    one: Check | None = None


def _legacy(dtype: Any) -> str:
    """A dtype as PyTorch's legacy type names write it (torch.FloatTensor; its complex ones CPUComplexFloatType)."""
    name = SCALAR_NAMES[dtype]
    return f"CPU{name}Type" if dtype.kind == "c" else f"torch.{name}Tensor"


def _named(template: str, result: Any, out: Any) -> str:
    """`template` with the dtypes named: `{r}`/`{o}` as PyTorch's Double..., `{cr}`/`{co}` as C++'s double ...,
    `{lr}`/`{lo}` as torch.DoubleTensor ..."""
    return template.format(r=SCALAR_NAMES[result], o=SCALAR_NAMES[out], cr=TYPE_META_NAMES[result],
                           co=TYPE_META_NAMES[out], lr=_legacy(result), lo=_legacy(out))


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
EXPECTED = exact_dtype("Expected out tensor to have dtype {cr}, but got {co} instead")  # the structured kernels'


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
    """abs of a complex tensor (a real result) casts into a real `out`, while a complex `out` must have the input's
    dtype, as PyTorch's kernel checks; of a real one, `out` has its dtype."""
    dtype = operands[0].dtype
    if dtype.kind == "c":
        return EXACT(op, dtype, out, operands) if out.kind == "c" else CASTABLE(op, result, out, operands)
    return EXACT(op, result, out, operands)


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
_CAN_CAST = castable_dtype(
    "Expected canCast( typeMetaToScalarType(self.dtype()), typeMetaToScalarType(out.dtype())) to be true, but got "
    "false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)"
)


def _one_extreme(op: str, result: Any, out: Any, operands: tuple) -> str | None:
    """max and min of all elements take an `out` the result casts to, in canCast's words; of two tensors, in
    maximum's and minimum's."""
    return (CASTABLE if len(operands) > 1 and isinstance(operands[1], Tensor) else _CAN_CAST)(
        op, result, out, operands)


_MEDIAN = Outputs((
    exact_dtype("Expected tensor for 'values' to have the same type as tensor for argument #2 'self'; but type {lo} "
                "does not equal {lr} (while checking arguments for median)"),
    exact_dtype("Expected tensor for argument #1 'indices' to have scalar type {r}; but got {lo} instead (while "
                "checking arguments for median)"),
))
# Each top-level function that returns several tensors and takes `out=` (a tuple), with its outputs' rules.
SEVERAL_OUTPUTS: dict[str, Outputs] = {
    **dict.fromkeys(("max", "min"), Outputs((EXPECTED, EXPECTED), one=_one_extreme)),
    **dict.fromkeys(("sort", "topk", "aminmax"), Outputs((EXPECTED, EXPECTED))),
    "kthvalue": Outputs((exact_dtype("output values must be of same type as input"),
                         exact_dtype("output indices must be of scalar type {r}"))),
    "mode": Outputs(tuple(exact_dtype(f"expected scalar type '{{r}}' but got '{{o}}' for {name} output")
                          for name in ("values", "indices"))),
    **dict.fromkeys(("median", "nanmedian"), _MEDIAN),
    **dict.fromkeys(("cummax", "cummin"), Outputs((exact_dtype("expected scalar_type {r} but found {o}"),) * 2)),
    "frexp": Outputs((exact_dtype("torch.frexp() expects mantissa to have dtype {cr} but got {co}"),
                      exact_dtype("torch.frexp() expects exponent to have int dtype but got {co}"))),
    "histogram": Outputs(tuple(
        exact_dtype(f"torch.histogram: input tensor and {name} tensor should have the same dtype, but got input "
                    f"{{cr}} and {name} {{co}}{where}")
        for name, where in (("hist", ""), ("bin_edges", " for dimension 0"))
    )),
}
# The ops PyTorch does not refuse `out=` for beside arguments that require grad: those without a derivative,
# and conj_physical (give_out_by_rules adds those of other namespaces: special_bessel_j0 ...).
NO_AUTOGRAD_CHECK = {
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal", "logical_and",
    "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "bitwise_left_shift", "bitwise_right_shift", "signbit", "isposinf", "isneginf", "floor_divide", "heaviside",
    "gcd", "lcm", "conj_physical", "histogram", "searchsorted", "bucketize", "nonzero", "histc", "all", "any",
}
# The ops whose autograd refusal of `out=` names the kernel PyTorch runs them as.
AUTOGRAD_NAMES = {"take_along_dim": "gather", "argsort": "sort", "msort": "sort"}


# PyTorch's name of each op given `out=` (`add`, `linalg_inv`) -> its rule: give_out_by_rules fills it.
_RULES: dict[str, Check | Outputs] = {}
# PyTorch's name of each function given `out=` that returns several tensors -> the named tuple it returns them in.
_OUT_TUPLES: dict[str, type] = {}
NUMPY_NAMES = ("axis", "keepdims")  # parameters PyTorch's signatures do not count


def write_out(op: str, fn: Callable[..., Any], args: tuple, kwargs: dict, out: Any) -> Any:
    """`fn(*args, **kwargs)` written into `out` (a tuple of tensors for a function that returns several), with
    PyTorch's refusals; returns `out`."""
    rule = _RULES[op]
    operands = (*args, *kwargs.values())
    if isinstance(rule, Outputs):
        if rule.one is None or not isinstance(out, Tensor):
            return _write_outs(op, rule, fn, args, kwargs, out, operands)
        rule = rule.one
    check_out(op, out, () if op in NO_AUTOGRAD_CHECK else _tensors(operands), AUTOGRAD_NAMES.get(op, op))
    if op in PARTLY_SHARED_OUT:
        check_operands_shared(out, _tensors(operands), False)
    result = fn(*args, **kwargs)
    if isinstance(result, tuple):  # max(x, 1) gives (values, indices), so its `out` is a tuple
        raise TypeError(f"{op}(): argument 'out' must be tuple of Tensors, not Tensor")
    refusal = rule(op, result.dtype, out.dtype, operands)
    if refusal is not None:
        raise RuntimeError(refusal)
    return store_out(result, out)


def _tensors(operands: tuple) -> tuple:
    """`operands` with the tensors of a list or tuple among them in its place (multi_dot's come as a list)."""
    return tuple(v for operand in operands for v in (operand if isinstance(operand, list | tuple) else (operand,)))


def _write_outs(op: str, rule: Outputs, fn: Callable[..., Any], args: tuple, kwargs: dict, outs: Any,
                operands: tuple) -> Any:
    """`fn(*args, **kwargs)`'s tensors written into those of `outs`, each checked by its rule and on the device of
    its result before any is written; returns `outs` in PyTorch's `{op}_out` named tuple."""
    _check_outs(op, fn, outs, len(rule.checks))
    if op not in NO_AUTOGRAD_CHECK:
        refuse_autograd(rule.autograd_name or op, (*outs, *_tensors(operands)))
    results = fn(*args, **kwargs)
    if not isinstance(results, tuple):  # median(x) and max(x) give one tensor: PyTorch's form with out= needs dim
        raise TypeError(f'{op}() missing 1 required positional arguments: "dim"')
    for check, result, out in zip(rule.checks, results, outs):
        refusal = check(op, result.dtype, out.dtype, operands)
        if refusal is not None:
            raise RuntimeError(refusal)
        if out.device != result.device:
            raise RuntimeError(f"Expected out tensor to have device {result.device}, but got {out.device} instead")
    for result, out in zip(results, outs):
        store_out(result, out)
    kind = _OUT_TUPLES.get(op)
    if kind is None:
        kind = _OUT_TUPLES[op] = namedtuple(f"{op}_out", results._fields)
    return kind(*outs)


def _check_outs(op: str, fn: Callable[..., Any], outs: Any, count: int) -> None:
    """PyTorch's TypeErrors for `out=` that is no tuple (or list) of `count` tensors."""
    if not isinstance(outs, tuple | list):
        raise TypeError(f"{op}(): argument 'out' must be tuple of Tensors, not {type_name(outs)}")
    if len(outs) != count:
        raise TypeError(f"expected tuple of {count} elements but got {len(outs)}")
    for index, out in enumerate(outs):
        if not isinstance(out, Tensor):  # PyTorch counts `out` after its signature's parameters
            position = sum(name not in NUMPY_NAMES for name in inspect.signature(fn).parameters)
            raise TypeError(f"expected Tensor as element {index} in argument {position}, but got {type_name(out)}")


def check_out(op: str, out: Any, operands: tuple, autograd_name: str = "") -> None:
    """PyTorch's refusals before an op runs: an `out` that is no tensor, and autograd through `out=` (`out` or one
    of `operands` requiring grad, in grad mode)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type_name(out)}")
    refuse_autograd(autograd_name or op, (out, *operands))


def refuse_autograd(op: str, tensors: tuple) -> None:
    """PyTorch's refusal of autograd through `out=`: one of `tensors` (the outs and the operands) requiring grad,
    in grad mode."""
    if _grad_enabled.get() and any(isinstance(v, Tensor) and v.requires_grad for v in tensors):
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


def give_out_by_rules(namespace: dict, rules: dict[str, Check | Outputs], prefix: str = "",
                      autograd_names: dict[str, str | None] | None = None) -> None:
    """Give each name of `rules` in `namespace` (a module's public names) PyTorch's `out=`, checked by its rule;
    `prefix` is the one PyTorch puts before the name in its errors (linalg_inv()). `autograd_names` gives the
    kernel an alias's autograd refusal names (special.expit: sigmoid), None for a function without a derivative,
    which PyTorch lets write into `out` beside arguments that require grad."""
    _RULES.update({prefix + name: check for name, check in rules.items()})
    for name, kernel in (autograd_names or {}).items():
        if kernel is None:
            NO_AUTOGRAD_CHECK.add(prefix + name)
        else:
            AUTOGRAD_NAMES[prefix + name] = kernel
    give_out(namespace, rules, write_out, prefix)
