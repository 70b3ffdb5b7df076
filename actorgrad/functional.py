"""`actorgrad.functional`: the awaitable twins of `actorgrad.autograd.functional`, for trio apps.

The same algorithms, each gradient pass answered with `await actorgrad.grad(...)`; the function itself is
called synchronously, as in the sync versions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from actorgrad.autograd import functional as steps
from actorgrad.engine import grad

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


async def _run(algorithm: steps.Steps) -> Any:
    """Run an algorithm, answering each of its gradient passes with the async engine."""
    await trio.lowlevel.checkpoint()
    try:
        request = algorithm.send(None)
        while True:
            request = algorithm.send(await request.answer(grad))
    except StopIteration as done:
        return done.value
    finally:
        algorithm.close()


async def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """`await`able `actorgrad.autograd.functional.vjp`."""
    return await _run(steps.vjp_steps(func, inputs, v, create_graph, strict))


async def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """`await`able `actorgrad.autograd.functional.jvp`."""
    return await _run(steps.jvp_steps(func, inputs, v, create_graph, strict))


async def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
                   vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """`await`able `actorgrad.autograd.functional.jacobian`."""
    return await _run(steps.jacobian_steps(func, inputs, create_graph, strict, vectorize, strategy))


async def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
                  vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """`await`able `actorgrad.autograd.functional.hessian`."""
    return await _run(steps.hessian_steps(func, inputs, create_graph, strict, vectorize, outer_jacobian_strategy))


async def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """`await`able `actorgrad.autograd.functional.vhp`."""
    return await _run(steps.vhp_steps(func, inputs, v, create_graph, strict))


async def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """`await`able `actorgrad.autograd.functional.hvp`."""
    return await _run(steps.hvp_steps(func, inputs, v, create_graph, strict))
