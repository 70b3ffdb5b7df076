"""PyTorch's TypeError for a non-Tensor where an op's public name takes a Tensor.

Ops read their tensor arguments' attributes without checking their types first (an isinstance per argument per
call would cost every op), so a number in a tensor's place fails on a missing attribute deep inside the op. The
public names (`actorgrad.exp`, `functional.linear`, `special.expit`, `linalg.inv`) wrap their op and report such a
failure as PyTorch does, naming the op, the argument and its position. The wrapper costs one call frame (37 ns
for a unary op, 180 ns otherwise); the check runs only after an AttributeError. Tensor methods call the ops
directly: their self is a Tensor.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from actorgrad.ops.operands import type_name
from actorgrad.tensor import Tensor

TENSOR = ("Tensor", Tensor)
OPTIONAL_TENSOR = ("Tensor | None", "Optional[Tensor]")
VARIADIC = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def misplaced_tensor(fn: Callable, op: str, args: tuple, kwargs: dict) -> TypeError | None:
    """PyTorch's error for the first argument of `fn` annotated Tensor (or Tensor | None, when given) that is no
    Tensor; None when every one is."""
    signature = inspect.signature(fn)
    try:
        given = signature.bind(*args, **kwargs).arguments
    except TypeError:
        return None
    for position, (name, parameter) in enumerate(signature.parameters.items(), 1):
        value = given.get(name)
        annotation = parameter.annotation
        if (annotation in TENSOR or annotation in OPTIONAL_TENSOR and value is not None) and name in given and (
            not isinstance(value, Tensor)
        ):
            where = "" if parameter.kind is parameter.KEYWORD_ONLY else f" (position {position})"
            return TypeError(f"{op}(): argument '{name}'{where} must be Tensor, not {type_name(value)}")
    return None


def checked_tensors(fn: Callable, op: str, write_out: Callable | None = None) -> Callable:
    """`fn` with PyTorch's TypeError, under the name `op`, in place of an AttributeError met on a non-Tensor. With
    `write_out`, PyTorch's `out=` too: `write_out(args, kwargs, out)` runs the op and writes its result into
    `out`, so the `out` test costs no call frame of its own."""
    code = fn.__code__
    unary = code.co_varnames[:1] == ("input",) and code.co_argcount == 1 and not code.co_kwonlyargcount and not (
        code.co_flags & VARIADIC
    )
    if unary and write_out is None:
        def checked(input: Any) -> Any:  # the unary ops: a fixed signature costs a fifth of *args, **kwargs
            try:
                return fn(input)
            except AttributeError as error:
                raise _refusal(fn, op, (input,), {}, error) from None
    elif unary:
        def checked(input: Any, *, out: Any = None) -> Any:
            if out is not None:
                return write_out((input,), {}, out)
            try:
                return fn(input)
            except AttributeError as error:
                raise _refusal(fn, op, (input,), {}, error) from None
    elif write_out is None:
        def checked(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except AttributeError as error:
                raise _refusal(fn, op, args, kwargs, error) from None
    else:
        def checked(*args: Any, out: Any = None, **kwargs: Any) -> Any:
            if out is not None:
                return write_out(args, kwargs, out)
            try:
                return fn(*args, **kwargs)
            except AttributeError as error:
                raise _refusal(fn, op, args, kwargs, error) from None

    return functools.wraps(fn)(checked)


def _refusal(fn: Callable, op: str, args: tuple, kwargs: dict, error: AttributeError) -> Exception:
    """PyTorch's error for a non-Tensor argument, or the AttributeError itself where every argument is a Tensor."""
    return misplaced_tensor(fn, op, args, kwargs) or error


def install(namespace: dict, public: str, checked: Callable) -> None:
    """Put `checked` in `namespace` under `public`, named after its place there, so pickle (a saved module holding
    `F.relu`) finds it."""
    checked.__module__, checked.__qualname__ = namespace["__name__"], public
    namespace[public] = checked


def give_out(namespace: dict, names: Any, write_out: Callable, prefix: str = "") -> None:
    """Give each of `names` in `namespace` (public names already wrapped by check_tensor_arguments) PyTorch's
    `out=`, in place of that wrapper: `write_out(op, fn, args, kwargs, out)`, with `op` PyTorch's name for it
    (`prefix` + its name: `linalg_inv`)."""
    for public in names:
        fn, op = getattr(namespace[public], "__wrapped__", namespace[public]), prefix + public
        install(namespace, public, checked_tensors(fn, op, functools.partial(write_out, op, fn)))


def check_tensor_arguments(namespace: dict, names: list[str], prefix: str = "") -> None:
    """Wrap each function of `namespace` listed in `names` whose first parameter is annotated Tensor in
    `checked_tensors`, under PyTorch's name for it (`prefix` + its name: `special_expit`, `linalg_pinv`). The
    wrapper is named after its place in `namespace`, so pickle (a saved module holding `F.relu`) finds it there."""
    for public in names:
        fn = namespace[public]
        code = getattr(fn, "__code__", None)
        if code is not None and code.co_argcount and fn.__annotations__.get(code.co_varnames[0]) in TENSOR:
            install(namespace, public, checked_tensors(fn, prefix + public))
