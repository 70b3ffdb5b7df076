"""actorgrad backward benchmarks against a plain-numpy floor, torch and HIPS autograd.

Run `python -m benchmarks.bench` or `python benchmarks/bench.py` [--repeat N | --quick] [--only W1,W3]
[--json PATH]. Engines are interleaved within each repetition; medians are reported.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

# Idle BLAS threads must sleep, not spin, or they take a core from whatever runs next. torch's OpenMP threads spin
# for a while after each parallel op (HIPS W2 went from 148 to 210 ms when it followed torch); OpenBLAS's spin for
# 2**28 cycles (0.1 s) after each multithreaded call, so a backward held at one BLAS thread right after a forward at
# two lost a core (numpy floor 2 threads: 145 ms instead of 98 ms). Both read these before they load.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np
import trio
from threadpoolctl import threadpool_info, threadpool_limits

import actorgrad as ag
import actorgrad.nn.functional as agF

try:
    import torch
except ImportError:  # optional peer
    torch = None
try:
    import autograd as hips
    import autograd.numpy as anp
except ImportError:  # optional peer
    hips = anp = None

CORES = os.cpu_count() or 1
DEFAULT_WORKERS = ag.get_num_workers()
Engines = dict[str, Callable[[], float]]
Workload = tuple[Engines, Callable[[], float]]  # timed engines, and a gradient check returning its max error


class Timer:
    """Wall time of a region, with the garbage collector off inside it."""

    def __enter__(self) -> Timer:
        gc.collect()
        gc.disable()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = time.perf_counter() - self.start
        gc.enable()


def timed(fn: Callable[[], Any]) -> float:
    """Seconds of one call of `fn`."""
    with Timer() as t:
        fn()
    return t.elapsed


def timed_trio(body: Callable[[], Awaitable[Any]]) -> float:
    """Seconds of `await body()`, measured inside trio.run (starting the loop is not counted)."""

    async def main() -> float:
        with Timer() as t:
            await body()
        return t.elapsed

    return trio.run(main)


def check(what: str, got: np.ndarray, ref: np.ndarray, tol: float = 1e-6) -> float:
    """Max |got - ref| / max |ref|; exits loudly when actorgrad's gradient does not match the floor."""
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    err = float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300))
    if got.shape != ref.shape or not np.all(np.isfinite(got)) or not np.any(ref) or err > tol:
        raise SystemExit(f"GRADIENT MISMATCH in {what}: shape {got.shape} vs {ref.shape}, error {err:.3g}")
    return err


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

    engines = {"ag": ag_run, "floor": floor, "torch": torch_run, "hips": hips_estimate}
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
def w2(branches: int = 8, depth: int = 4) -> Workload:
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
    return engines, verify


# --- W3: MLP 784-512-512-10, float32, batch 128, forward + backward ----------------------------------------
# A sample times a training loop of STEPS steps, as training runs; one step alone after a gc.collect() and a fresh
# trio.run measured mostly cold caches and page faults (actorgrad's first backward in a trio run took 2.6 ms here,
# its second 1.7 ms).
STEPS = 10


def w3(batch: int = 128) -> Workload:
    rng = np.random.default_rng(3)
    f32 = np.float32
    X = rng.normal(size=(batch, 784)).astype(f32)
    Y = np.eye(10, dtype=f32)[rng.integers(0, 10, batch)]
    params: list[np.ndarray] = []
    for fan_in, fan_out in [(784, 512), (512, 512), (512, 10)]:
        params += [(rng.normal(size=(fan_in, fan_out)) * np.sqrt(2 / fan_in)).astype(f32),
                   (rng.normal(size=fan_out) * 0.01).astype(f32)]

    def mlp(x: Any, y: Any, p: list, relu: Callable[[Any], Any], log_softmax: Callable[[Any], Any]) -> Any:
        """Cross-entropy from log_softmax and a one-hot matrix (no indexing needed)."""
        h = relu(relu(x @ p[0] + p[1]) @ p[2] + p[3])
        return -(log_softmax(h @ p[4] + p[5]) * y).sum() / batch

    def ag_loss(leaves: list, x: ag.Tensor, y: ag.Tensor) -> ag.Tensor:
        return mlp(x, y, leaves, lambda v: v.relu(), lambda v: v.log_softmax(1))

    def floor_grads() -> list:
        W1, b1, W2, b2, W3, b3 = params
        a1 = np.maximum(X @ W1 + b1, 0)
        a2 = np.maximum(a1 @ W2 + b2, 0)
        z = a2 @ W3 + b3
        shifted = z - z.max(1, keepdims=True)
        ls = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        _loss = -(ls * Y).sum() / batch
        g = -Y / f32(batch)
        gz = g - np.exp(ls) * g.sum(1, keepdims=True)
        ga2 = (gz @ W3.T) * (a2 > 0)
        ga1 = (ga2 @ W2.T) * (a1 > 0)
        return [X.T @ ga1, ga1.sum(0), a1.T @ ga2, ga2.sum(0), a2.T @ gz, gz.sum(0)]

    def ag_run() -> float:
        leaves, x, y = [ag.tensor(p, requires_grad=True) for p in params], ag.tensor(X), ag.tensor(Y)

        async def steps() -> None:
            for _ in range(STEPS):
                for leaf in leaves:
                    leaf.grad = None
                await ag.backward(ag_loss(leaves, x, y))

        return timed_trio(steps) / STEPS

    def torch_run() -> float:
        torch.set_num_threads(CORES)
        leaves = [torch.tensor(p, requires_grad=True) for p in params]
        x, y = torch.from_numpy(X), torch.from_numpy(Y)

        def steps() -> None:
            for _ in range(STEPS):
                for leaf in leaves:
                    leaf.grad = None
                mlp(x, y, leaves, torch.relu, lambda v: torch.log_softmax(v, 1)).backward()

        return timed(steps) / STEPS

    def hips_loss(p: list) -> Any:
        z = anp.maximum(anp.maximum(X @ p[0] + p[1], 0) @ p[2] + p[3], 0) @ p[4] + p[5]
        shifted = z - anp.max(z, 1, keepdims=True)
        return -anp.sum((shifted - anp.log(anp.sum(anp.exp(shifted), 1, keepdims=True))) * Y) / batch

    def verify() -> float:
        leaves = [ag.tensor(p, requires_grad=True) for p in params]
        ag_loss(leaves, ag.tensor(X), ag.tensor(Y)).backward()
        return max(check(f"W3 grad param {i}", leaf.grad.numpy(), ref)
                   for i, (leaf, ref) in enumerate(zip(leaves, floor_grads())))

    def per_step(step: Callable[[], Any]) -> Callable[[], float]:
        def steps() -> None:
            for _ in range(STEPS):
                step()

        return lambda: timed(steps) / STEPS

    engines = {"ag": ag_run, "floor": per_step(floor_grads), "torch": torch_run,
               "hips": per_step(lambda: hips.grad(hips_loss)(params))}
    return engines, verify


# --- W5: CNN on 1x28x28, float32, batch 32, forward + backward ---------------------------------------------
# conv(1->16, 3x3, pad 1), relu, max_pool 2, conv(16->32, 3x3, pad 1), relu, max_pool 2, linear(1568 -> 10),
# cross_entropy. The floor is a hand-written im2col + BLAS forward and backward that keeps activations
# channel-major, (C, N, H, W), so each convolution is one matmul with no layout copies; timed like W3 (STEPS).
def floor_conv3x3(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 3x3 convolution with padding 1 on a channel-major (C, N, H, W) input: the (O, N, H, W) output and the
    im2col matrix (C*9, N*H*W), kept for the backward."""
    c, n, h, wd = x.shape
    padded = np.zeros((c, n, h + 2, wd + 2), x.dtype)
    padded[:, :, 1:-1, 1:-1] = x
    s0, s1, s2, s3 = padded.strides
    windows = np.lib.stride_tricks.as_strided(padded, (c, 3, 3, n, h, wd), (s0, s2, s3, s1, s2, s3))
    cols = windows.reshape(c * 9, n * h * wd)
    y = w.reshape(w.shape[0], -1) @ cols + b[:, None]
    return y.reshape(-1, n, h, wd), cols


def floor_conv3x3_backward(gy: np.ndarray, cols: np.ndarray, w: np.ndarray, need_input: bool) -> tuple:
    """(grad input or None, grad weight, grad bias) of floor_conv3x3; col2im loops over the 9 kernel offsets."""
    o, n, h, wd = gy.shape
    gmat = gy.reshape(o, -1)
    gw = (gmat @ cols.T).reshape(w.shape)
    gx = None
    if need_input:
        gcols = (w.reshape(o, -1).T @ gmat).reshape(-1, 3, 3, n, h, wd)
        padded = np.zeros((gcols.shape[0], n, h + 2, wd + 2), gy.dtype)
        for i in range(3):
            for j in range(3):
                padded[:, :, i:i + h, j:j + wd] += gcols[:, i, j]
        gx = padded[:, :, 1:-1, 1:-1]
    return gx, gw, gmat.sum(1)


POOL_OFFSETS = ((0, 0), (0, 1), (1, 0), (1, 1))  # row-major: the first maximum wins ties, as in torch


def floor_pool2(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2x2 max pooling: a running max over the 4 offsets, and which offset won each window."""
    views = [x[..., a::2, b::2] for a, b in POOL_OFFSETS]
    out, arg = views[0].copy(), np.zeros(views[0].shape, np.uint8)
    for k, v in enumerate(views[1:], 1):
        np.maximum(arg, (v > out).view(np.uint8) * np.uint8(k), out=arg)
        np.maximum(out, v, out=out)
    return out, arg


def floor_unpool2(g: np.ndarray, arg: np.ndarray) -> np.ndarray:
    out = np.empty((*g.shape[:-2], 2 * g.shape[-2], 2 * g.shape[-1]), g.dtype)
    for k, (a, b) in enumerate(POOL_OFFSETS):
        np.multiply(g, arg == k, out=out[..., a::2, b::2])
    return out


def w5(batch: int = 32) -> Workload:
    rng = np.random.default_rng(5)
    f32 = np.float32
    X = rng.normal(size=(batch, 1, 28, 28)).astype(f32)
    labels = rng.integers(0, 10, batch)
    params = [(rng.normal(size=(16, 1, 3, 3)) * np.sqrt(2 / 9)).astype(f32), np.zeros(16, f32),
              (rng.normal(size=(32, 16, 3, 3)) * np.sqrt(2 / 144)).astype(f32), np.zeros(32, f32),
              (rng.normal(size=(10, 32 * 7 * 7)) * np.sqrt(2 / 1568)).astype(f32), np.zeros(10, f32)]

    def cnn(x: Any, y: Any, p: list, F: Any) -> Any:
        """The same code for actorgrad.nn.functional and torch.nn.functional."""
        h = F.max_pool2d(F.relu(F.conv2d(x, p[0], p[1], padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, p[2], p[3], padding=1)), 2)
        return F.cross_entropy(F.linear(h.reshape(batch, -1), p[4], p[5]), y)

    def floor_grads() -> list:
        W1, b1, W2, b2, W3, b3 = params
        c1, cols1 = floor_conv3x3(X.transpose(1, 0, 2, 3), W1, b1)
        p1, arg1 = floor_pool2(np.maximum(c1, 0))
        c2, cols2 = floor_conv3x3(p1, W2, b2)
        p2, arg2 = floor_pool2(np.maximum(c2, 0))
        flat = p2.transpose(1, 0, 2, 3).reshape(batch, -1)
        z = flat @ W3.T + b3
        e = np.exp(z - z.max(1, keepdims=True))
        gz = e / e.sum(1, keepdims=True)
        gz[np.arange(batch), labels] -= 1
        gz /= batch
        gp2 = (gz @ W3).reshape(batch, *p2.shape[:1], *p2.shape[2:]).transpose(1, 0, 2, 3)
        gp1, gW2, gb2 = floor_conv3x3_backward(floor_unpool2(gp2, arg2) * (c2 > 0), cols2, W2, True)
        _, gW1, gb1 = floor_conv3x3_backward(floor_unpool2(gp1, arg1) * (c1 > 0), cols1, W1, False)
        return [gW1, gb1, gW2, gb2, gz.T @ flat, gz.sum(0)]

    def ag_run() -> float:
        leaves, x, y = [ag.tensor(p, requires_grad=True) for p in params], ag.tensor(X), ag.tensor(labels)

        async def steps() -> None:
            for _ in range(STEPS):
                for leaf in leaves:
                    leaf.grad = None
                await ag.backward(cnn(x, y, leaves, agF))

        return timed_trio(steps) / STEPS

    def torch_run() -> float:
        torch.set_num_threads(CORES)
        leaves = [torch.tensor(p, requires_grad=True) for p in params]
        x, y = torch.from_numpy(X), torch.from_numpy(labels)

        def steps() -> None:
            for _ in range(STEPS):
                for leaf in leaves:
                    leaf.grad = None
                cnn(x, y, leaves, torch.nn.functional).backward()

        return timed(steps) / STEPS

    def verify() -> float:
        leaves = [ag.tensor(p, requires_grad=True) for p in params]
        cnn(ag.tensor(X), ag.tensor(labels), leaves, agF).backward()
        return max(check(f"W5 grad param {i}", leaf.grad.numpy(), ref, tol=1e-4)
                   for i, (leaf, ref) in enumerate(zip(leaves, floor_grads())))

    def floor_run() -> float:
        def steps() -> None:
            for _ in range(STEPS):
                floor_grads()

        return timed(steps) / STEPS

    return {"ag": ag_run, "floor": floor_run, "torch": torch_run}, verify


# --- table -------------------------------------------------------------------------------------------------
# Rows: (key, label, floor key, torch key, target). A key "a/b" is the ratio of two medians (a speedup).
# A target (den, op, bound) compares median[key] / median[den] (or the ratio row itself when den is None).
LAYOUT: dict[str, dict[str, Any]] = {
    "W1": {"unit": "us/node", "scale": 1e6 / 2000, "make": w1, "rows": [
        ("ag", "actorgrad backward", "floor", "torch", None), ("floor", "numpy floor", None, None, None),
        ("torch", "torch backward (1 thread)", "floor", None, None),
        ("hips", "HIPS autograd (grad - fwd estimate)", "floor", "torch", None)]},
    "W2": {"unit": "ms", "scale": 1e3, "make": w2, "rows": [
        ("ag_1w", "(a) actorgrad 1 worker, BLAS 1", "floor_1t", None, None),
        ("ag_2w", "(b) actorgrad 2 workers, BLAS 1", "floor_2t", None, ("floor_2t", "<=", 1.1)),
        ("ag_1w/ag_2w", "    speedup (a)/(b)", None, None, (None, ">=", 1.8)),
        ("ag_default", f"(c) actorgrad {DEFAULT_WORKERS} workers, BLAS free", "floor_2t", "torch",
         ("torch", "<=", 1.0)),
        ("floor_1t", "(d) numpy floor, 1 thread", None, None, None),
        ("floor_2t", "(d) numpy floor, 2 threads x 4 branches", None, None, None),
        ("floor_1t/floor_2t", "    floor speedup 1t/2t (machine)", None, None, None),
        ("torch", "(e) torch, 2 threads", "floor_2t", None, None),
        ("hips", "(e) HIPS full grad (fwd+bwd, BLAS free)", "floor_1t", "torch", None)]},
    "W3": {"unit": "ms", "scale": 1e3, "make": w3, "rows": [
        ("ag", "actorgrad fwd+bwd", "floor", "torch", ("floor", "<=", 1.15)),
        ("floor", "numpy floor fwd+bwd", None, None, None), ("hips", "HIPS grad", "floor", "torch", None),
        ("torch", f"torch fwd+bwd ({CORES} threads)", "floor", None, None)]},
    "W4": {"unit": "ms", "scale": 1e3, "make": w4, "rows": [
        ("ag_seq", "actorgrad sequential", "floor", "torch", None),
        ("ag_conc", "actorgrad concurrent (one nursery)", "floor", "torch", ("torch", "<=", 1.0)),
        ("torch", "torch sequential (1 thread)", "floor", None, None),
        ("floor", "numpy floor sequential", None, None, None)]},
    "W5": {"unit": "ms", "scale": 1e3, "make": w5, "rows": [
        ("ag", "actorgrad fwd+bwd", "floor", "torch", ("torch", "<=", 1.5)),
        ("floor", "numpy floor fwd+bwd (im2col + BLAS)", None, None, None),
        ("torch", f"torch fwd+bwd ({CORES} threads)", "floor", None, None)]},
}
PEERS = {"torch": torch, "hips": hips}


def run_workload(name: str, repeat: int) -> tuple[list[dict[str, Any]], float]:
    """Verify gradients, warm up, time `repeat` interleaved repetitions; one result row per table line."""
    spec = LAYOUT[name]
    engines, verify = spec["make"]()
    engines = {k: fn for k, fn in engines.items() if PEERS.get(k, True) is not None}
    err = verify()
    for fn in engines.values():
        fn()
    samples: dict[str, list[float]] = {key: [] for key in engines}
    for _ in range(repeat):
        for key, fn in engines.items():
            samples[key].append(fn())
    med = {key: statistics.median(values) for key, values in samples.items()}
    rows = []
    for key, label, floor_key, torch_key, target in spec["rows"]:
        row: dict[str, Any] = {"workload": name, "engine": label, "unit": spec["unit"], "median": None,
                               "vs_floor": None, "vs_torch": None, "target": None, "passed": None}
        if "/" in key:
            a, b = key.split("/")
            row.update(unit="x", median=med[a] / med[b])
        elif key in med:
            row.update(median=med[key] * spec["scale"], samples=[v * spec["scale"] for v in samples[key]])
            row["vs_floor"] = med[key] / med[floor_key] if floor_key in med else None
            row["vs_torch"] = med[key] / med[torch_key] if torch_key in med else None
        if target is not None:
            den, op, bound = target
            row["target"] = f"{op} {bound}x" + (f" {den}" if den else "")
            value = row["median"] if den is None else med[key] / med[den] if {key, den} <= set(med) else None
            if value is not None:
                row["passed"] = value <= bound if op == "<=" else value >= bound
        rows.append(row)
    return rows, err


def print_table(rows: list[dict[str, Any]]) -> None:
    def num(value: float | None, width: int, spec: str, suffix: str = "") -> str:
        return f"{'n/a' if value is None else format(value, spec) + suffix:>{width}}"

    head = f"{'work':<5}{'engine / variant':<42}{'median':>10} {'unit':<8}{'vs floor':>9}{'vs torch':>9}  "
    head += "target"
    print(head + "\n" + "-" * (len(head) + 22))
    for r in rows:
        verdict = "" if r["target"] is None else f"{r['target']}: " + (
            "n/a" if r["passed"] is None else "PASS" if r["passed"] else "FAIL")
        print(f"{r['workload']:<5}{r['engine']:<42}{num(r['median'], 10, '.3f')} {r['unit']:<8}"
              f"{num(r['vs_floor'], 9, '.2f', 'x')}{num(r['vs_torch'], 9, '.2f', 'x')}  {verdict}")


def machine() -> dict[str, Any]:
    blas = [f"{i['internal_api']} {i['version']} ({i['num_threads']} threads, {i.get('architecture')})"
            for i in threadpool_info() if i["user_api"] == "blas"]
    return {"cores": CORES, "platform": platform.platform(), "python": sys.version.split()[0],
            "numpy": np.__version__, "blas": blas, "actorgrad_workers": DEFAULT_WORKERS,
            "torch": torch.__version__ if torch else "n/a",
            "autograd": importlib.metadata.version("autograd") if hips else "n/a"}


def foreign_cpu() -> float:
    """CPU seconds the whole machine spent busy minus this process's own (Linux; 0 elsewhere)."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:9]]
    except OSError:
        return 0.0
    own = os.times()
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK") - own.user - own.system


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed repetitions (medians reported)")
    parser.add_argument("--quick", action="store_true", help="3 repetitions, for CI smoke runs")
    parser.add_argument("--only", default=",".join(LAYOUT), help="comma-separated workloads, e.g. W1,W3")
    parser.add_argument("--json", metavar="PATH", help="also write the results (with all samples) as JSON")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else args.repeat
    chosen = [w.strip().upper() for w in args.only.split(",") if w.strip()]
    if unknown := [w for w in chosen if w not in LAYOUT]:
        parser.error(f"unknown workloads {unknown}; choose from {list(LAYOUT)}")
    info = machine()
    print(f"machine: {CORES} cores, {info['platform']}, python {info['python']}, numpy {info['numpy']}")
    print(f"numpy BLAS: {'; '.join(info['blas']) or 'n/a'}; load average {os.getloadavg()[0]:.2f}")
    print(f"actorgrad default workers {DEFAULT_WORKERS}; torch {info['torch']}; "
          f"HIPS autograd {info['autograd']}; repeat {repeat} (medians)\n")
    rows: list[dict[str, Any]] = []
    info["gradient_max_rel_err"], info["other_processes_cores"] = {}, {}
    for name in chosen:
        start, foreign = time.perf_counter(), foreign_cpu()
        workload_rows, err = run_workload(name, repeat)
        rows += workload_rows
        wall = time.perf_counter() - start
        other = info["other_processes_cores"][name] = max(0.0, (foreign_cpu() - foreign) / wall)
        info["gradient_max_rel_err"][name] = err
        print(f"{name}: gradients match the numpy floor (max rel err {err:.1e}); timed in {wall:.1f}s; other "
              f"processes used {other:.2f} cores" + (" -- NOISY, timings unreliable" if other > 0.2 else ""),
              flush=True)
    print()
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "repeat": repeat, "results": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
