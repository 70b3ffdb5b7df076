"""W2: eight independent tanh(h @ W) branches in one backward, float64: worker parallelism."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

import actorgrad as ag
from actorgrad.bench.peers import anp, hips, torch
from actorgrad.bench.timing import DEFAULT_WORKERS, Timer, Workload, check, timed, timed_trio


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

