"""Grad mode and inference mode: whether ops record the backward graph, and whether new tensors are inference
tensors.

Held in ContextVars so that `with no_grad()` in one trio task (or thread) never changes another.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

_grad_enabled: ContextVar[bool] = ContextVar("actorgrad_grad_enabled", default=True)

F = TypeVar("F", bound=Callable)

INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it in "
    "autograd, or use `actorgrad.no_grad()` instead of `actorgrad.inference_mode()`."
)
INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal "
    "tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details."
)


class InferenceVersion:
    """The version counter that every inference tensor shares (its `_vc`): it counts nothing, as PyTorch's
    inference tensors track no version. Recording an op reads the version of each tensor it saves, so reading
    this one raises PyTorch's error for saving an inference tensor: the check costs the per-op path nothing."""

    __slots__ = ()

    @property
    def value(self) -> int:
        raise RuntimeError(INFERENCE_SAVED)

    @property
    def views(self) -> set:
        """Views of inference tensors need no refresh (an in-place change outside inference mode is refused), so
        none is kept: a fresh set each time."""
        return set()


INFERENCE = InferenceVersion()

# INFERENCE while inference mode is on (a new Tensor takes it as its version counter), None while off.
_inference_mode: ContextVar[InferenceVersion | None] = ContextVar("actorgrad_inference_mode", default=None)


# Grad mode as `is_grad_enabled()` reports it while inference mode is on. `_grad_enabled` says whether ops record,
# which they never do in inference mode: as in PyTorch, `enable_grad()` inside `inference_mode()` turns the
# reported mode on but records nothing (and the per-op path still reads one flag).
_grad_in_inference: ContextVar[bool] = ContextVar("actorgrad_grad_in_inference", default=False)


def is_grad_enabled() -> bool:
    return _grad_enabled.get() if _inference_mode.get() is None else _grad_in_inference.get()


def _set_grad_mode(mode: bool) -> tuple:
    """Switch grad mode (recording only outside inference mode); the tokens undo it."""
    if _inference_mode.get() is None:
        return _grad_enabled.set(mode), None
    return _grad_enabled.set(False), _grad_in_inference.set(mode)


def _reset_grad_mode(tokens: tuple) -> None:
    grad, reported = tokens
    if reported is not None:
        _grad_in_inference.reset(reported)
    _grad_enabled.reset(grad)


def is_inference_mode_enabled() -> bool:
    return _inference_mode.get() is not None


def grad_mode_on(fn: Callable, *args: Any) -> Any:
    """`fn(*args)` with grad mode on: a recorded pass's sums are ops of the graph it records, whatever mode its
    caller is in (PyTorch's engine runs a create_graph pass with grad mode on)."""
    token = _grad_enabled.set(True)
    try:
        return fn(*args)
    finally:
        _grad_enabled.reset(token)


def _wrap_generator(clone: Callable[[], Any], fn: Callable) -> Callable:
    """A generator function whose body runs under a fresh `clone()` each time it resumes, and under its caller's
    mode in between (as PyTorch wraps generators): a `with` around the call alone would end before the body runs."""

    @functools.wraps(fn)
    def generator(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            with clone():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with clone():
                        gen.close()
                    raise
                except BaseException as error:
                    with clone():
                        response = gen.throw(error)
                else:
                    with clone():
                        response = gen.send(request)
        except StopIteration as done:
            return done.value

    return generator


class _DecoratorContextManager:
    """A context manager that also decorates a function, a coroutine function or a generator function: the mode
    holds inside each call (each resumption of a generator), every call with a guard of its own, since calls may
    overlap in several tasks."""

    def clone(self) -> _DecoratorContextManager:
        raise NotImplementedError

    def __call__(self, fn: F) -> F:
        if inspect.isclass(fn):
            raise RuntimeError(
                "Cannot decorate classes; it is ambiguous whether or not only the constructor or all methods should "
                "have the context manager applied; decorate each method instead."
            )
        clone = self.clone
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(clone, fn)
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args, **kwargs):
                with clone():
                    return await fn(*args, **kwargs)

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with clone():
                return fn(*args, **kwargs)

        return wrapper


class _GradMode(_DecoratorContextManager):
    """`mode` holds inside, and the mode from before comes back on the way out. Used bare as a decorator
    (`@no_grad`), the class itself decorates, as in PyTorch."""

    mode: bool

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __init__(self, orig_func: Callable | None = None) -> None:
        self._tokens: list = []

    def clone(self) -> _GradMode:
        return self.__class__()

    def __enter__(self) -> None:
        self._tokens.append(_set_grad_mode(self.mode))

    def __exit__(self, *exc_info: object) -> None:
        _reset_grad_mode(self._tokens.pop())


class no_grad(_GradMode):
    """Ops inside do not record the graph (`with no_grad():`, `@no_grad()` or `@no_grad`)."""

    mode = False


class enable_grad(_GradMode):
    """Ops inside record the graph even within `no_grad` (`with enable_grad():`, `@enable_grad()` or
    `@enable_grad`)."""

    mode = True


def _as_flag(mode: Any, fn_name: str, arg_name: str) -> bool:
    if mode.__class__ is not bool:  # PyTorch's bindings take no other type, not even 0 or 1
        raise TypeError(f"{fn_name}(): argument '{arg_name}' (position 1) must be bool, not {type(mode).__name__}")
    return mode


class set_grad_enabled(_DecoratorContextManager):
    """Turns graph recording on or off: at once when called alone (`set_grad_enabled(False)` holds until
    `set_grad_enabled(True)`), or only inside when used as a context manager or decorator, as in PyTorch."""

    def __init__(self, mode: bool) -> None:
        self.mode = _as_flag(mode, "set_grad_enabled", "enabled")
        self._before = (_grad_enabled.get(), _grad_in_inference.get())
        _set_grad_mode(mode)

    def clone(self) -> _GradMode:
        return enable_grad() if self.mode else no_grad()

    def __enter__(self) -> None:
        _set_grad_mode(self.mode)

    def _restore(self) -> None:
        """The mode from before `set_grad_enabled(...)` switched it."""
        _grad_enabled.set(self._before[0])
        _grad_in_inference.set(self._before[1])

    def __exit__(self, *exc_info: object) -> None:
        self._restore()

    def __call__(self, fn: F) -> F:
        self._restore()  # a decorator switches the mode only around each call
        return super().__call__(fn)

    def __repr__(self) -> str:
        return f"actorgrad.grad_mode.set_grad_enabled(mode={self.mode})"


class inference_mode(_DecoratorContextManager):
    """Inference mode (`with inference_mode():`, `@inference_mode()` or `@inference_mode`): grad mode off, and
    every tensor made inside is an inference tensor (`is_inference()`), except views of normal tensors, as in
    PyTorch. An inference tensor cannot be saved for backward, cannot be set to require grad outside inference
    mode, and refuses in-place changes outside it. `inference_mode(False)` turns both off inside (grad mode on).

    Unlike PyTorch, an in-place change of an inference tensor outside inference mode raises after the values were
    written, and inference mode leaves forward-mode AD on."""

    def __new__(cls, mode: Any = True) -> Any:
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode
        self._tokens: list = []

    def clone(self) -> inference_mode:
        return self.__class__(self.mode)

    def __enter__(self) -> None:
        self._tokens.append((
            _grad_enabled.set(not self.mode),
            _grad_in_inference.set(False),
            _inference_mode.set(INFERENCE if self.mode else None),
        ))

    def __exit__(self, *exc_info: object) -> None:
        grad, reported, inference = self._tokens.pop()
        _inference_mode.reset(inference)
        _grad_in_inference.reset(reported)
        _grad_enabled.reset(grad)
