"""Optimizer hooks as PyTorch's: step pre/post hooks for one optimizer or all of them, and the hooks around
`state_dict()` and `load_state_dict()`. Every optimizer's `step` (its own or an inherited one) runs through
`with_step_hooks`, which calls the global pre hooks, then the optimizer's, the step, then the optimizer's post
hooks and the global ones.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from actorgrad.hooks import RemovableHandle

_global_optimizer_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_optimizer_post_hooks: OrderedDict[int, Callable] = OrderedDict()

HOOK_DICTS = (
    "_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks",
)


def add_hook(hooks: OrderedDict[int, Callable], hook: Callable, prepend: bool = False) -> RemovableHandle:
    """Register `hook` in `hooks` (first, with `prepend`) and return the handle that removes it."""
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """A pre hook for every optimizer: `hook(optimizer, args, kwargs)` returns None or (new_args, new_kwargs)."""
    return add_hook(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """A post hook for every optimizer: `hook(optimizer, args, kwargs)`, after each step."""
    return add_hook(_global_optimizer_post_hooks, hook)


def with_step_hooks(step: Callable) -> Callable:
    """`step` wrapped to run the step hooks around it (once: an already wrapped step is returned as it is)."""
    if getattr(step, "_with_step_hooks", False):
        return step

    @functools.wraps(step)
    def hooked_step(*args: Any, **kwargs: Any) -> Any:
        optimizer = args[0]
        for pre_hook in (*_global_optimizer_pre_hooks.values(), *optimizer._optimizer_step_pre_hooks.values()):
            result = pre_hook(optimizer, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{step} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                    )
                args, kwargs = result
        out = step(*args, **kwargs)
        for post_hook in (*optimizer._optimizer_step_post_hooks.values(), *_global_optimizer_post_hooks.values()):
            post_hook(optimizer, args, kwargs)
        return out

    hooked_step._with_step_hooks = True
    return hooked_step
