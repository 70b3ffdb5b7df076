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
from collections.abc import Callable
from typing import Any

import numpy as np
import trio
from threadpoolctl import threadpool_info, threadpool_limits

import actorgrad as ag

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


class Timer:
    """Wall time of a region, with the garbage collector off inside it."""

    elapsed = 0.0

    def __enter__(self) -> Timer:
        gc.collect()
        gc.disable()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = time.perf_counter() - self.start
        gc.enable()


def timed_call(fn: Callable[[], Any]) -> float:
    with Timer() as t:
        fn()
    return t.elapsed


def ag_backward_time(loss: ag.Tensor) -> float:
    """Seconds of `await ag.backward(loss)`, measured inside trio.run (the loop start is not counted)."""

    async def main() -> float:
        with Timer() as t:
            await ag.backward(loss)
        return t.elapsed

    return trio.run(main)


def rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300))


def check(what: str, got: np.ndarray, ref: np.ndarray, tol: float = 1e-6) -> None:
    """Fail loudly when actorgrad's gradient does not match the numpy floor."""
    err = rel_err(np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64))
    if not np.all(np.isfinite(got)) or not np.any(ref) or err > tol:
        raise SystemExit(f"GRADIENT MISMATCH in {what}: max relative error {err:.3g} > {tol:g}")


# --- W1 / W4: elementwise chains ------------------------------------------------------------------------
def chain(h: Any, c: Any, n: int, tanh: Callable[[Any], Any]) -> Any:
    """n ops alternating h*c, h+c, tanh(h), then sum: the same code for every engine."""
    for i in range(n):
        k = i % 3
        h = h * c if k == 0 else h + c if k == 1 else tanh(h)
    return h.sum() if hasattr(h, "sum") else anp.sum(h)


def chain_forward_np(x: np.ndarray, c: np.ndarray, n: int) -> list:
    """Floor forward: the tanh outputs (None for the other ops), kept for the backward."""
    ys: list = [None] * n
    for i in range(n):
        x = x * c if i % 3 == 0 else x + c if i % 3 == 1 else np.tanh(x)
        ys[i] = x if i % 3 == 2 else None
    return ys


def chain_backward_np(c: np.ndarray, ys: list) -> np.ndarray:
    """Floor backward: d(sum)/dx by hand."""
    g = np.ones_like(c)
    for i in range(len(ys) - 1, -1, -1):
        if i % 3 == 0:
            g = g * c
        elif (y := ys[i]) is not None:
            g = g * (1 - y * y)
    return g


def chain_data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    # c near -1.5 keeps d(loss)/dx away from underflow, so the gradient check means something.
    return rng.normal(size=16), rng.uniform(-1.55, -1.45, 16)


def ag_chain(x: np.ndarray, c: np.ndarray, n: int) -> tuple[ag.Tensor, ag.Tensor]:
    xt = ag.tensor(x, requires_grad=True)
    return xt, chain(xt, ag.tensor(c), n, lambda t: t.tanh())


def torch_chain(x: np.ndarray, c: np.ndarray, n: int) -> tuple[Any, Any]:
    xt = torch.tensor(x, requires_grad=True)
    return xt, chain(xt, torch.tensor(c), n, torch.tanh)


def w1(n: int = 2000) -> tuple[Engines, Callable[[], None]]:
    x, c = chain_data(1)

    def floor() -> float:
        ys = chain_forward_np(x, c, n)
        return timed_call(lambda: chain_backward_np(c, ys))

    def hips_est() -> float:
        def f(v: Any) -> Any:
            return chain(v, c, n, anp.tanh)

        return timed_call(lambda: hips.grad(f)(x)) - timed_call(lambda: f(x))

    def torch_run() -> float:
        torch.set_num_threads(1)
        _, loss = torch_chain(x, c, n)
        return timed_call(loss.backward)

    def verify() -> None:
        xt, loss = ag_chain(x, c, n)
        loss.backward()
        check("W1 grad x", xt.grad.numpy(), chain_backward_np(c, chain_forward_np(x, c, n)))

    engines: Engines = {"ag": lambda: ag_backward_time(ag_chain(x, c, n)[1]), "floor": floor}
    if torch is not None:
        engines["torch"] = torch_run
    if hips is not None:
        engines["hips"] = hips_est
    return engines, verify


def w4(graphs: int = 64, n: int = 50) -> tuple[Engines, Callable[[], None]]:
    data = [chain_data(100 + i) for i in range(graphs)]

    def build() -> list:
        return [ag_chain(x, c, n) for x, c in data]

    def ag_seq() -> float:
        losses = [loss for _, loss in build()]

        async def main() -> float:
            with Timer() as t:
                for loss in losses:
                    await ag.backward(loss)
            return t.elapsed

        return trio.run(main)

    def ag_concurrent(pairs: list | None = None) -> float:
        losses = [loss for _, loss in (pairs or build())]

        async def main() -> float:
            with Timer() as t:
                async with trio.open_nursery() as nursery:
                    for loss in losses:
                        nursery.start_soon(ag.backward, loss)
            return t.elapsed

        return trio.run(main)

    def torch_seq() -> float:
        torch.set_num_threads(1)
        losses = [torch_chain(x, c, n)[1] for x, c in data]
        return timed_call(lambda: [loss.backward() for loss in losses])

    def floor() -> float:
        tapes = [chain_forward_np(x, c, n) for x, c in data]
        return timed_call(lambda: [chain_backward_np(c, ys) for (_, c), ys in zip(data, tapes)])

    def verify() -> None:
        pairs = build()
        ag_concurrent(pairs)
        for i, ((xt, _), (x, c)) in enumerate(zip(pairs, data)):
            check(f"W4 graph {i} grad x", xt.grad.numpy(), chain_backward_np(c, chain_forward_np(x, c, n)))

    engines: Engines = {"ag_seq": ag_seq, "ag_conc": ag_concurrent, "floor": floor}
    if torch is not None:
        engines["torch"] = torch_seq
    return engines, verify


# --- W2: eight independent tanh-matmul branches -----------------------------------------------------------
def w2(branches: int = 8, depth: int = 4) -> tuple[Engines, Callable[[], None]]:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(256, 512)) * 0.1
    Ws = [rng.normal(size=(512, 512)) * 0.04 for _ in range(branches)]

    def forward(W: Any, tanh: Callable[[Any], Any], Xv: Any = X) -> Any:
        h = Xv
        for _ in range(depth):
            h = tanh(h @ W)
        return h

    def build_ag() -> tuple[list, ag.Tensor]:
        Xt = ag.tensor(X)
        params = [ag.tensor(W, requires_grad=True) for W in Ws]
        loss = None
        for W in params:
            s = forward(W, lambda t: t.tanh(), Xt).sum()
            loss = s if loss is None else loss + s
        return params, loss

    def ag_variant(workers: int, blas_one: bool) -> Callable[[], float]:
        def run() -> float:
            ag.set_num_workers(workers)
            try:
                loss = build_ag()[1]
                if not blas_one:
                    return ag_backward_time(loss)
                with threadpool_limits(1, user_api="blas"):
                    return ag_backward_time(loss)
            finally:
                ag.set_num_workers(DEFAULT_WORKERS)

        return run

    def tape(W: np.ndarray) -> list:
        hs = [X]
        for _ in range(depth):
            hs.append(np.tanh(hs[-1] @ W))
        return hs

    def branch_backward(W: np.ndarray, hs: list) -> np.ndarray:
        gW = np.zeros_like(W)
        g = np.ones_like(hs[-1])
        for k in range(depth - 1, -1, -1):
            y = hs[k + 1]
            gz = g * (1 - y * y)
            gW += hs[k].T @ gz
            if k:
                g = gz @ W.T
        return gW

    def floor(threads: int) -> Callable[[], float]:
        def run() -> float:
            tapes = [tape(W) for W in Ws]
            parts = [list(range(branches))[t::threads] for t in range(threads)]

            def work(part: list) -> None:
                for i in part:
                    branch_backward(Ws[i], tapes[i])

            with threadpool_limits(1, user_api="blas"):
                if threads == 1:
                    return timed_call(lambda: work(parts[0]))
                pool = [threading.Thread(target=work, args=(p,)) for p in parts]
                with Timer() as t:
                    for th in pool:
                        th.start()
                    for th in pool:
                        th.join()
                return t.elapsed

        return run

    def torch_run() -> float:
        torch.set_num_threads(2)
        Xt = torch.from_numpy(X)
        params = [torch.tensor(W, requires_grad=True) for W in Ws]
        loss = sum(forward(W, torch.tanh, Xt).sum() for W in params)
        return timed_call(loss.backward)

    def hips_run() -> float:
        def f(ws: list) -> Any:
            return sum(anp.sum(forward(W, anp.tanh)) for W in ws)

        return timed_call(lambda: hips.grad(f)(Ws))

    def verify() -> None:
        refs = [branch_backward(W, tape(W)) for W in Ws]
        for workers in (1, 2):
            ag.set_num_workers(workers)
            try:
                params, loss = build_ag()
                loss.backward()
            finally:
                ag.set_num_workers(DEFAULT_WORKERS)
            for i, (p, ref) in enumerate(zip(params, refs)):
                check(f"W2 grad W_{i} ({workers} workers)", p.grad.numpy(), ref)

    engines: Engines = {
        "ag_1w": ag_variant(1, True), "ag_2w": ag_variant(2, True), "ag_default": ag_variant(DEFAULT_WORKERS, False),
        "floor_1t": floor(1), "floor_2t": floor(2),
    }
    if torch is not None:
        engines["torch"] = torch_run
    if hips is not None:
        engines["hips"] = hips_run
    return engines, verify


# --- W3: MLP 784-512-512-10, float32, batch 128 ----------------------------------------------------------
def w3(batch: int = 128) -> tuple[Engines, Callable[[], None]]:
    rng = np.random.default_rng(3)
    f32 = np.float32
    X = rng.normal(size=(batch, 784)).astype(f32)
    Y = np.eye(10, dtype=f32)[rng.integers(0, 10, batch)]
    sizes = [(784, 512), (512, 512), (512, 10)]
    params: list[np.ndarray] = []
    for fan_in, fan_out in sizes:
        params += [(rng.normal(size=(fan_in, fan_out)) * np.sqrt(2 / fan_in)).astype(f32),
                   (rng.normal(size=fan_out) * 0.01).astype(f32)]

    def mlp_ag(x: Any, y: Any, p: list, relu: Callable[[Any], Any], log_softmax: Callable[[Any], Any]) -> Any:
        h = relu(x @ p[0] + p[1])
        h = relu(h @ p[2] + p[3])
        return -(log_softmax(h @ p[4] + p[5]) * y).sum() / batch

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
        leaves = [ag.tensor(p, requires_grad=True) for p in params]
        x, y = ag.tensor(X), ag.tensor(Y)

        async def main() -> float:
            with Timer() as t:
                loss = mlp_ag(x, y, leaves, lambda v: v.relu(), lambda v: v.log_softmax(1))
                await ag.backward(loss)
            return t.elapsed

        return trio.run(main)

    def torch_run() -> float:
        torch.set_num_threads(CORES)
        leaves = [torch.tensor(p, requires_grad=True) for p in params]
        x, y = torch.from_numpy(X), torch.from_numpy(Y)
        return timed_call(lambda: mlp_ag(x, y, leaves, torch.relu, lambda v: torch.log_softmax(v, 1)).backward())

    def hips_loss(p: list) -> Any:
        h = anp.maximum(X @ p[0] + p[1], 0)
        h = anp.maximum(h @ p[2] + p[3], 0)
        z = h @ p[4] + p[5]
        shifted = z - anp.max(z, 1, keepdims=True)
        ls = shifted - anp.log(anp.sum(anp.exp(shifted), 1, keepdims=True))
        return -anp.sum(ls * Y) / batch

    def verify() -> None:
        leaves = [ag.tensor(p, requires_grad=True) for p in params]
        mlp_ag(ag.tensor(X), ag.tensor(Y), leaves, lambda v: v.relu(), lambda v: v.log_softmax(1)).backward()
        for i, (leaf, ref) in enumerate(zip(leaves, floor_grads())):
            check(f"W3 grad param {i}", leaf.grad.numpy(), ref)

    engines: Engines = {"ag": ag_run, "floor": lambda: timed_call(floor_grads)}
    if torch is not None:
        engines["torch"] = torch_run
    if hips is not None:
        engines["hips"] = lambda: timed_call(lambda: hips.grad(hips_loss)(params))
    return engines, verify


# --- table -------------------------------------------------------------------------------------------------
# Per workload: unit, scale from seconds, rows (key, label, floor key, torch key), targets.
# A target (num, den, op, bound) is median[num] / median[den] compared with bound; den None: the row itself.
LAYOUT: dict[str, dict[str, Any]] = {
    "W1": {"unit": "us/node", "scale": 1e6 / 2000, "make": w1, "rows": [
        ("ag", "actorgrad", "floor", "torch"), ("floor", "numpy floor", None, None),
        ("torch", "torch (1 thread)", "floor", None), ("hips", "HIPS autograd (grad - fwd)", "floor", "torch")],
        "targets": {}},
    "W2": {"unit": "ms", "scale": 1e3, "make": w2, "rows": [
        ("ag_1w", "(a) actorgrad 1 worker, BLAS 1", "floor_1t", None),
        ("ag_2w", "(b) actorgrad 2 workers, BLAS 1", "floor_2t", None),
        ("speedup", "(a)/(b) speedup", None, None),
        ("ag_default", f"(c) actorgrad {DEFAULT_WORKERS} workers, BLAS free", "floor_2t", "torch"),
        ("floor_1t", "(d) numpy floor, 1 thread", None, None),
        ("floor_2t", "(d) numpy floor, 2 threads", None, None),
        ("torch", "(e) torch, 2 threads", "floor_2t", None),
        ("hips", "(e) HIPS autograd (full grad)", "floor_1t", "torch")],
        "targets": {"ag_2w": ("ag_2w", "floor_2t", "<=", 1.1), "speedup": ("ag_1w", "ag_2w", ">=", 1.8),
                    "ag_default": ("ag_default", "torch", "<=", 1.0)}},
    "W3": {"unit": "ms", "scale": 1e3, "make": w3, "rows": [
        ("ag", "actorgrad fwd+bwd", "floor", "torch"), ("floor", "numpy floor", None, None),
        ("torch", f"torch ({CORES} threads)", "floor", None), ("hips", "HIPS autograd", "floor", "torch")],
        "targets": {"ag": ("ag", "floor", "<=", 1.15)}},
    "W4": {"unit": "ms", "scale": 1e3, "make": w4, "rows": [
        ("ag_seq", "actorgrad sequential", "floor", "torch"), ("ag_conc", "actorgrad concurrent", "floor", "torch"),
        ("torch", "torch sequential (1 thread)", "floor", None), ("floor", "numpy floor sequential", None, None)],
        "targets": {"ag_conc": ("ag_conc", "torch", "<=", 1.0)}},
}


def run_workload(name: str, repeat: int) -> list[dict[str, Any]]:
    """Verify, warm up, time `repeat` interleaved repetitions; one result row per table line."""
    spec = LAYOUT[name]
    engines, verify = spec["make"]()
    verify()
    for fn in engines.values():
        fn()
    samples: dict[str, list[float]] = {key: [] for key in engines}
    for _ in range(repeat):
        for key, fn in engines.items():
            samples[key].append(fn())
    med = {key: statistics.median(values) for key, values in samples.items()}
    rows = []
    for key, label, floor_key, torch_key in spec["rows"]:
        target = spec["targets"].get(key)
        row: dict[str, Any] = {"workload": name, "engine": label, "unit": spec["unit"], "median": None,
                               "vs_floor": None, "vs_torch": None, "target": None, "passed": None}
        if key == "speedup":
            row["unit"] = "x"
        elif key in med:
            row["median"] = med[key] * spec["scale"]
            row["samples"] = [v * spec["scale"] for v in samples[key]]
            if floor_key in med:
                row["vs_floor"] = med[key] / med[floor_key]
            if torch_key in med:
                row["vs_torch"] = med[key] / med[torch_key]
        if target is not None:
            num, den, op, bound = target
            if num in med and den in med:
                ratio = med[num] / med[den]
                row["passed"] = ratio <= bound if op == "<=" else ratio >= bound
                if key == "speedup":
                    row["median"] = ratio
            row["target"] = f"{op} {bound}x" + ("" if key == "speedup" else f" {den}")
        rows.append(row)
    return rows


def fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def print_table(rows: list[dict[str, Any]]) -> None:
    head = f"{'work':<5}{'engine / variant':<40}{'median':>11} {'unit':<8}{'vs floor':>9}{'vs torch':>9}  target"
    print(head)
    print("-" * len(head))
    for r in rows:
        verdict = "" if r["target"] is None else f"{r['target']}: " + (
            "n/a" if r["passed"] is None else "PASS" if r["passed"] else "FAIL")
        print(f"{r['workload']:<5}{r['engine']:<40}{fmt(r['median'], '11.3f')} {r['unit']:<8}"
              f"{fmt(r['vs_floor'], '8.2f')}x{fmt(r['vs_torch'], '8.2f')}x  {verdict}")


def machine() -> dict[str, Any]:
    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "n/a"

    blas = [f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} threads, {i.get('architecture')})"
            for i in threadpool_info() if i.get("user_api") == "blas"]
    return {"cores": CORES, "platform": platform.platform(), "python": sys.version.split()[0],
            "numpy": np.__version__, "blas": blas, "actorgrad_default_workers": DEFAULT_WORKERS,
            "torch": version("torch"), "autograd": version("autograd")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed repetitions per engine (median reported)")
    parser.add_argument("--quick", action="store_true", help="3 repetitions, for CI smoke runs")
    parser.add_argument("--only", default=",".join(LAYOUT), help="comma-separated workloads, e.g. W1,W3")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else args.repeat
    chosen = [w.strip().upper() for w in args.only.split(",") if w.strip()]
    unknown = [w for w in chosen if w not in LAYOUT]
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {list(LAYOUT)}")
    info = machine()
    print(f"machine: {info['cores']} cores, {info['platform']}, python {info['python']}, numpy {info['numpy']}")
    print(f"BLAS: {'; '.join(info['blas']) or 'n/a'}")
    print(f"actorgrad workers {DEFAULT_WORKERS}, torch {info['torch']}, HIPS autograd {info['autograd']}, "
          f"repeat {repeat} (medians)\n")
    rows: list[dict[str, Any]] = []
    for name in chosen:
        start = time.perf_counter()
        rows += run_workload(name, repeat)
        print(f"{name} done in {time.perf_counter() - start:.1f}s (gradients verified)", flush=True)
    print()
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "repeat": repeat, "results": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
