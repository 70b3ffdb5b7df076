"""W1, W4: elementwise chains on (16,) float64, one long graph or many small ones run concurrently."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import trio

import actorgrad as ag
from actorgrad.bench.peers import anp, hips, torch
from actorgrad.bench.timing import Workload, check, timed, timed_trio


# --- W1 / W4: elementwise chains on (16,) float64 ----------------------------------------------------------
def chain(h: Any, c: Any, n: int, tanh: Callable[[Any], Any]) -> Any:
    """n ops alternating h*c, h+c, tanh(h), then sum: the same code for every engine."""
    for i in range(n):
        h = h * c if i % 3 == 0 else h + c if i % 3 == 1 else tanh(h)
    return h.sum()


def chain_forward_np(x: np.ndarray, c: np.ndarray, n: int) -> list:
    """Floor forward: the tanh outputs (None for the other ops), kept for the backward."""
    ys: list = [None] * n
    for i in range(n):
        x = x * c if i % 3 == 0 else x + c if i % 3 == 1 else np.tanh(x)
        ys[i] = x if i % 3 == 2 else None
    return ys


def chain_backward_np(c: np.ndarray, ys: list) -> np.ndarray:
    """Floor backward: d(sum)/dx by hand (g*c, g, g*(1-y*y))."""
    g = np.ones_like(c)
    for i in range(len(ys) - 1, -1, -1):
        if i % 3 == 0:
            g = g * c
        elif (y := ys[i]) is not None:
            g = g * (1 - y * y)
    return g


def chain_data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    # c near -1.5 keeps d(loss)/dx clear of underflow over 2000 ops, so the gradient check means something.
    return rng.normal(size=16), rng.uniform(-1.55, -1.45, 16)


def ag_chain(x: np.ndarray, c: np.ndarray, n: int) -> tuple[ag.Tensor, ag.Tensor]:
    xt = ag.tensor(x, requires_grad=True)
    return xt, chain(xt, ag.tensor(c), n, lambda t: t.tanh())


def torch_chain(x: np.ndarray, c: np.ndarray, n: int) -> Any:
    return chain(torch.tensor(x, requires_grad=True), torch.tensor(c), n, torch.tanh)


def w1(n: int = 2000) -> Workload:
    x, c = chain_data(1)

    def floor() -> float:
        ys = chain_forward_np(x, c, n)
        return timed(lambda: chain_backward_np(c, ys))

    def hips_estimate() -> float:  # HIPS has no separate backward: full grad minus a forward-only run
        def f(v: Any) -> Any:
            return chain(v, c, n, anp.tanh)

        return timed(lambda: hips.grad(f)(x)) - timed(lambda: f(x))

    def torch_run() -> float:
        torch.set_num_threads(1)
        return timed(torch_chain(x, c, n).backward)

    def verify() -> float:
        xt, loss = ag_chain(x, c, n)
        loss.backward()
        return check("W1 grad x", xt.grad.numpy(), chain_backward_np(c, chain_forward_np(x, c, n)))

    def ag_run() -> float:
        loss = ag_chain(x, c, n)[1]  # built outside the timed region
        return timed_trio(lambda: ag.backward(loss))

    def ag_traced() -> float:
        loss = ag_chain(x, c, n)[1]
        with ag.profile():
            return timed_trio(lambda: ag.backward(loss))

    engines = {"ag": ag_run, "ag_traced": ag_traced, "floor": floor, "torch": torch_run, "hips": hips_estimate}
    return engines, verify


def w4(graphs: int = 64, n: int = 50) -> Workload:
    data = [chain_data(100 + i) for i in range(graphs)]

    def ag_sequential() -> float:
        losses = [ag_chain(x, c, n)[1] for x, c in data]

        async def body() -> None:
            for loss in losses:
                await ag.backward(loss)

        return timed_trio(body)

    def ag_concurrent(pairs: list | None = None) -> float:
        losses = [loss for _, loss in pairs or [ag_chain(x, c, n) for x, c in data]]

        async def body() -> None:
            async with trio.open_nursery() as nursery:
                for loss in losses:
                    nursery.start_soon(ag.backward, loss)

        return timed_trio(body)

    def torch_sequential() -> float:
        torch.set_num_threads(1)
        losses = [torch_chain(x, c, n) for x, c in data]
        return timed(lambda: [loss.backward() for loss in losses])

    def floor() -> float:
        tapes = [chain_forward_np(x, c, n) for x, c in data]
        return timed(lambda: [chain_backward_np(c, ys) for (_, c), ys in zip(data, tapes)])

    def verify() -> float:
        pairs = [ag_chain(x, c, n) for x, c in data]
        ag_concurrent(pairs)
        refs = [chain_backward_np(c, chain_forward_np(x, c, n)) for x, c in data]
        return max(check(f"W4 graph {i} grad x", xt.grad.numpy(), ref)
                   for i, ((xt, _), ref) in enumerate(zip(pairs, refs)))

    engines = {"ag_seq": ag_sequential, "ag_conc": ag_concurrent, "floor": floor, "torch": torch_sequential}
    return engines, verify
