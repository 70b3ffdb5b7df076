"""`assert_close`: PyTorch's comparison of actual and expected values, with its default tolerances per dtype and
its failure messages (how many elements differ, the greatest differences and where)."""

from __future__ import annotations

import cmath
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from actorgrad.ops.operands import promote_types
from actorgrad.tensor import Tensor

__all__ = ["assert_close"]

# (rtol, atol) per dtype, as torch.testing's; every other dtype compares for equality.
_TOLERANCES = {
    np.dtype(np.float16): (1e-3, 1e-5), np.dtype(np.float32): (1.3e-6, 1e-5), np.dtype(np.float64): (1e-7, 1e-7),
    np.dtype(np.complex64): (1.3e-6, 1e-5), np.dtype(np.complex128): (1e-7, 1e-7),
}


class _Mismatch(Exception):
    """A failed comparison: the error to raise, its message, and where in the inputs' nesting it happened."""

    def __init__(self, kind: type[Exception], message: str, path: tuple = (), structural: bool = False) -> None:
        super().__init__(message)
        self.kind, self.message, self.path, self.structural = kind, message, path, structural


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Raise AssertionError unless `actual` and `expected` (tensors, numpy arrays, numbers, None, or sequences and
    mappings of them) are close: |actual - expected| <= atol + rtol * |expected| elementwise, and their shapes,
    devices and dtypes agree (strides too with `check_stride`). `msg` replaces the message, or, called, edits it."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'atol' if atol is None else 'rtol'}.")
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                   check_stride=check_stride, allow_subclasses=allow_subclasses)
    try:
        # as PyTorch's: the inputs' structure is checked as a whole before any values are compared
        pairs: list[tuple[Callable, Any, Any, tuple]] = []
        _pair_up(actual, expected, (), options["allow_subclasses"], pairs)
        for compare, a, e, path in pairs:
            compare(a, e, path, **options)
    except _Mismatch as mismatch:
        if isinstance(msg, str) and not mismatch.structural:
            raise mismatch.kind(msg) from None
        message = mismatch.message
        if mismatch.path:
            message += f"\n\nThe failure occurred for item {''.join(f'[{key!r}]' for key in mismatch.path)}"
        raise mismatch.kind(msg(message) if callable(msg) and not mismatch.structural else message) from None


def _pair_up(actual: Any, expected: Any, path: tuple, allow_subclasses: bool, pairs: list) -> None:
    """Walk both inputs' nesting, appending (comparison, actual, expected, path) for each leaf pair; a mismatch of
    the nesting itself (lengths, keys, types) is raised at once, and `msg` does not replace it, as in PyTorch."""
    if actual is None or expected is None:
        pairs.append((_compare_none, actual, expected, path))
    elif _same_kind_of_array(actual, expected, allow_subclasses):
        pairs.append((_compare_arrays, actual, expected, path))
    elif isinstance(actual, bool | np.bool_) and isinstance(expected, bool | np.bool_):
        pairs.append((_compare_booleans, actual, expected, path))
    elif _is_number(actual) and _is_number(expected):
        pairs.append((_compare_numbers, actual, expected, path))
    elif isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if actual.keys() != expected.keys():
            raise _Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {sorted(expected.keys() - actual.keys())}\n"
                            f"Additional keys in the actual mapping: {sorted(actual.keys() - expected.keys())}",
                            path, structural=True)
        for key in actual:
            _pair_up(actual[key], expected[key], (*path, key), allow_subclasses, pairs)
    elif _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                            path, structural=True)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _pair_up(a, e, (*path, i), allow_subclasses, pairs)
    else:
        raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                        f"{type(expected)}.", path, structural=True)


def _compare_none(actual: Any, expected: Any, path: tuple, **_: Any) -> None:
    if actual is not expected:
        raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", path)


def _compare_booleans(actual: Any, expected: Any, path: tuple, **_: Any) -> None:
    if bool(actual) is not bool(expected):
        raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}", path)


def _same_kind_of_array(actual: Any, expected: Any, allow_subclasses: bool) -> bool:
    """Both tensors (a Parameter is one, unless `allow_subclasses` is off) or both numpy arrays."""
    if not allow_subclasses and type(actual) is not type(expected):
        return False
    return any(isinstance(actual, kind) and isinstance(expected, kind) for kind in (Tensor, np.ndarray))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | complex | np.number) and not isinstance(value, bool)


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str)  # bytes compare as their numbers, as in PyTorch


def _finite(value: int | float | complex) -> bool:
    return isinstance(value, int) or cmath.isfinite(value)


def _compare_numbers(actual: Any, expected: Any, path: tuple, *, rtol: float | None, atol: float | None,
                     equal_nan: bool, check_dtype: bool, **_: Any) -> None:
    # numpy scalars compare as the Python numbers they hold, as PyTorch's NumberPair takes them
    actual, expected = (value.item() if isinstance(value, np.number) else value for value in (actual, expected))
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.", path)
    if rtol is None:
        kinds = {type(actual), type(expected)}
        dtype = np.complex128 if complex in kinds else np.float64 if float in kinds else np.int64
        rtol, atol = _TOLERANCES.get(np.dtype(dtype), (0.0, 0.0))
    if actual == expected or (equal_nan and actual != actual and expected != expected):
        return
    # an infinity is close only to itself: inf - -inf would otherwise be within rtol * inf
    if _finite(actual) and _finite(expected) and abs(actual - expected) <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_message(actual, expected, rtol, atol), path)


def _compare_arrays(actual: Any, expected: Any, path: tuple, *, rtol: float | None, atol: float | None,
                    equal_nan: bool, check_device: bool, check_dtype: bool, check_stride: bool, **_: Any) -> None:
    def attribute(name: str, a: Any, e: Any) -> None:
        if a != e:
            raise _Mismatch(AssertionError, f"The values for attribute '{name}' do not match: {a} != {e}.", path)

    attribute("shape", tuple(actual.shape), tuple(expected.shape))
    if isinstance(actual, Tensor):
        if check_device:
            attribute("device", str(actual.device), str(expected.device))
        if check_stride:
            attribute("stride()", actual.stride(), expected.stride())
        a, e = actual.detach().cpu().numpy(), expected.detach().cpu().numpy()
    else:
        if check_stride:  # in elements, as the tensors PyTorch makes of the arrays count them
            attribute("stride()", *(tuple(step // array.itemsize for step in array.strides)
                                    for array in (actual, expected)))
        a, e = actual, expected
    if check_dtype and a.dtype != e.dtype:
        raise _Mismatch(AssertionError, f"The values for attribute 'dtype' do not match: actorgrad.{a.dtype} != "
                        f"actorgrad.{e.dtype}.", path)
    if rtol is None:
        rtol, atol = map(max, zip(_TOLERANCES.get(a.dtype, (0.0, 0.0)), _TOLERANCES.get(e.dtype, (0.0, 0.0))))
    common = promote_types(a.dtype, e.dtype)  # PyTorch's promotion: int64 with float32 compares in float32
    a, e = a.astype(common), e.astype(common)
    if a.ndim == 0 and common == np.bool_ and a != e:
        raise _Mismatch(AssertionError, _scalar_message(a.item(), e.item(), 0, 0), path)
    if common.kind not in "fc":
        matches = a == e
        if rtol or atol:  # tolerances given for integers apply to them, as in PyTorch's isclose
            wide_a, wide_e = a.astype(np.float64), e.astype(np.float64)
            matches |= np.abs(wide_a - wide_e) <= atol + rtol * np.abs(wide_e)
        a, e = a.astype(np.int64), e.astype(np.int64)
    else:
        matches = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if matches.all():
        return
    if a.ndim == 0:
        raise _Mismatch(AssertionError, _scalar_message(a.item(), e.item(), rtol, atol), path)
    abs_diff = np.abs(a - e)
    abs_diff[matches] = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_diff = abs_diff / np.abs(e) if common.kind in "fc" else (abs_diff / np.abs(e)).astype(np.float32)
    rel_diff[matches] = 0
    mismatched = matches.size - int(matches.sum())
    counts = f"Mismatched elements: {mismatched} / {matches.size} ({mismatched / matches.size:.1%})"
    raise _Mismatch(AssertionError, _message("Tensor-likes", rtol, atol, counts, _greatest(abs_diff),
                                             _greatest(rel_diff)), path)


def _scalar_message(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _message("Scalars", rtol, atol, f"Expected {expected} but got {actual}.", (abs_diff, None),
                    (rel_diff, None))


def _greatest(diff: np.ndarray) -> tuple[Any, tuple[int, ...]]:
    """The greatest entry and its index, a NaN winning as in torch.max."""
    nans = np.isnan(diff)
    flat = int(np.argmax(nans)) if nans.any() else int(np.argmax(diff))
    index = tuple(int(i) for i in np.unravel_index(flat, diff.shape))
    return diff.reshape(-1)[flat].item(), index


def _message(identifier: str, rtol: float, atol: float, extra: str, abs_diff: tuple, rel_diff: tuple) -> str:
    lines = [f"{identifier} are not {'equal' if rtol == 0 and atol == 0 else 'close'}!", "", extra]
    for kind, (diff, index), tol in (("absolute", abs_diff, atol), ("relative", rel_diff, rtol)):
        line = (f"{kind.title()} difference: {diff}" if index is None
                else f"Greatest {kind} difference: {diff} at index {index}")
        lines.append(line + ("" if rtol == 0 and atol == 0 else f" (up to {tol} allowed)"))
    return "\n".join(lines)
