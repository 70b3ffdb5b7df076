"""W1, W4: elementwise chains on (16,) float64, one graph or many concurrent ones; W2: eight independent
tanh(h @ W) branches."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import trio
from threadpoolctl import threadpool_limits

import actorgrad as ag
from actorgrad.bench.peers import anp, hips, torch
from actorgrad.bench.timing import Timer, Workload, check, timed, timed_trio

DEFAULT_WORKERS = ag.get_num_workers()


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


# --- W2: eight independent tanh(h @ W) branches, float64 ------------------------------------------------
def w2(branches: int = 8, depth: int = 4, scale: tuple[int, ...] = ()) -> Workload:
    """`scale`: more worker counts k to time as `ag_{k}w` (BLAS 1), with the floor on k threads as `floor_{k}t`."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(256, 512)) * 0.1
    Ws = [rng.normal(size=(512, 512)) * 0.04 for _ in range(branches)]

    def forward(W: Any, tanh: Callable[[Any], Any], h: Any = X) -> Any:
        for _ in range(depth):
            h = tanh(h @ W)
        return h

    def build_ag() -> tuple[list, ag.Tensor]:
        Xt, params = ag.tensor(X), [ag.tensor(W, requires_grad=True) for W in Ws]
        sums = [forward(W, lambda t: t.tanh(), Xt).sum() for W in params]
        return params, sum(sums[1:], sums[0])

    def ag_variant(workers: int, blas_one: bool) -> Callable[[], float]:
        def run() -> float:
            ag.set_num_workers(workers)
            try:
                loss = build_ag()[1]
                with threadpool_limits(1 if blas_one else None, user_api="blas"):
                    return timed_trio(lambda: ag.backward(loss))
            finally:
                ag.set_num_workers(DEFAULT_WORKERS)

        return run

    def tape(W: np.ndarray) -> list:
        hs = [X]
        for _ in range(depth):
            hs.append(np.tanh(hs[-1] @ W))
        return hs

    def branch_backward(W: np.ndarray, hs: list) -> np.ndarray:
        gW, g = np.zeros_like(W), np.ones_like(hs[-1])
        for k in range(depth - 1, -1, -1):
            gz = g * (1 - hs[k + 1] * hs[k + 1])
            gW += hs[k].T @ gz
            if k:
                g = gz @ W.T
        return gW

    def floor(threads: int) -> Callable[[], float]:
        def run() -> float:
            tapes = [tape(W) for W in Ws]

            def work(part: range) -> None:
                for i in part:
                    branch_backward(Ws[i], tapes[i])

            parts = [range(i, branches, threads) for i in range(threads)]
            pool = [threading.Thread(target=work, args=(part,)) for part in parts]
            with threadpool_limits(1, user_api="blas"):
                if threads == 1:  # the plain loop on this thread
                    return timed(lambda: work(parts[0]))
                with Timer() as t:
                    for th in pool:
                        th.start()
                    for th in pool:
                        th.join()
                return t.elapsed

        return run

    def torch_run() -> float:
        torch.set_num_threads(2)
        Xt, params = torch.from_numpy(X), [torch.tensor(W, requires_grad=True) for W in Ws]
        return timed(sum(forward(W, torch.tanh, Xt).sum() for W in params).backward)

    def hips_run() -> float:
        def f(ws: list) -> Any:
            return sum(anp.sum(forward(W, anp.tanh)) for W in ws)

        return timed(lambda: hips.grad(f)(Ws))

    def verify() -> float:
        refs, err = [branch_backward(W, tape(W)) for W in Ws], 0.0
        for workers in (1, 2):
            ag.set_num_workers(workers)
            try:
                params, loss = build_ag()
                loss.backward()
            finally:
                ag.set_num_workers(DEFAULT_WORKERS)
            for i, (p, ref) in enumerate(zip(params, refs)):
                err = max(err, check(f"W2 grad W_{i} ({workers} workers)", p.grad.numpy(), ref))
        return err

    engines = {"ag_1w": ag_variant(1, True), "ag_2w": ag_variant(2, True),
               "ag_default": ag_variant(DEFAULT_WORKERS, False), "floor_1t": floor(1), "floor_2t": floor(2),
               "torch": torch_run, "hips": hips_run}
    for k in scale:
        engines[f"ag_{k}w"], engines[f"floor_{k}t"] = ag_variant(k, True), floor(k)
    return engines, verify

