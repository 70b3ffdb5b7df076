"""The GPU check of the devices issue, in one run (under 5 minutes): the GPU benchmarks, then the gpu tests, as
one table. Needs cupy, torch with CUDA, trio and pytest-trio; run `python benchmarks/gpu_check.py` on the GPU
machine after `pip install --no-deps -e .` (`--only W3,gpu tests` runs the stages named).

- W3 MLP (784-512-512-10) at batch 4096, float32, forward + backward on cuda:0, against torch CUDA (<= 1.5x),
  torch timed in a process of its own, round by round between actorgrad's; then both again with torch imported
  in actorgrad's process.
- A heavy CPU branch and a heavy GPU branch in one backward, against the longer branch alone (<= 1.15x).
- W2 (eight tanh(h @ W) branches) on cuda:0 with each branch on a stream of its own, against one stream.
- Awaiting a CUDA event from trio, each way actorgrad.devices.events offers: wake-up latency (the await's time
  beyond a blocking `synchronize()` of the same tiny kernel) and the CPU the loop spends while a GPU works.

Each time is the median of several runs after a warm-up (CuPy compiles a kernel on first use), taken after
synchronizing the device. Everything runs inside one trio run, as in a trio app. A stage that fails prints its
traceback and shows as an error row; the rest still run.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import trio

import actorgrad as ag
from actorgrad.devices.events import WAIT_MODES, wait_async

REPEAT = 9
ROUNDS = 5
W3_ROUNDS = 15  # W3's steps are short, and this machine's speed changes from second to second


async def median_time(step: Callable[[], Any], sync: Callable[[], None], repeat: int = REPEAT) -> float:
    """The median wall time of `step()` (sync, or async and awaited), from a synchronized device to one."""

    async def once() -> None:
        result = step()
        if inspect.isawaitable(result):
            await result

    for _ in range(3):
        await once()
    sync()
    times = []
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        await once()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


ROOT = Path(__file__).resolve().parents[1]
RUN_LIMIT_S = 280  # the whole check stays under 5 minutes
TESTS_MIN_S = 60  # the gpu tests get what the benchmarks left of RUN_LIMIT_S, and at least this


def test_workers() -> list[str]:
    """pytest-xdist's options to run the tests in parallel processes, where it is installed (the GPU machine has
    it): CuPy compiles each new kernel on the host's CPU, which is most of a fresh machine's test time, and its
    kernel cache on disk is shared between the processes."""
    workers = min(8, (os.cpu_count() or 1) - 2)
    return ["-n", str(workers)] if workers > 1 and importlib.util.find_spec("xdist") is not None else []


def gpu_tests(limit_s: float) -> str:
    """The gpu tests (every test marked `gpu`), bounded as a whole: pytest-timeout cannot interrupt a thread stuck
    in a CUDA wait, and CuPy compiles each new kernel on first use (minutes on a fresh machine), so they run after
    the benchmarks."""
    command = [sys.executable, "-m", "pytest", "-q", "--tb=short", "-p", "no:cacheprovider", "--timeout=60",
               *test_workers(),
               "-m", "gpu", str(ROOT / "tests")]
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=limit_s)
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout or ""
        print(out[-4000:], file=sys.stderr)
        return f"stopped after {limit_s:.0f} s: its output so far is above"
    if done.returncode:
        print(done.stdout[-40000:], done.stderr[-2000:], file=sys.stderr)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-200:]


def mlp_params(rng: np.random.Generator) -> list[np.ndarray]:
    params = []
    for fan_in, fan_out in [(784, 512), (512, 512), (512, 10)]:
        params += [(rng.normal(size=(fan_in, fan_out)) * np.sqrt(2 / fan_in)).astype(np.float32),
                   (rng.normal(size=fan_out) * 0.01).astype(np.float32)]
    return params


def synchronize_cuda() -> None:
    import cupy

    cupy.cuda.Device(0).synchronize()


def w3_data(batch: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(batch, 784)).astype(np.float32)
    Y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    return X, Y, mlp_params(rng)


def mlp(x: Any, y: Any, p: list, log_softmax: Callable[[Any], Any]) -> Any:
    h = (((x @ p[0] + p[1]).relu()) @ p[2] + p[3]).relu()
    return -(log_softmax(h @ p[4] + p[5]) * y).sum() / x.shape[0]


async def torch_w3(batch: int) -> None:
    """In a process of its own (`--torch-w3 BATCH`), serving its parent over stdin/stdout: each `round` line is
    answered with the median time of torch's W3 step, a `grads PATH` line by saving its gradients (.npz)."""
    import torch

    X, Y, params = w3_data(batch)
    leaves = [torch.tensor(p, device="cuda", requires_grad=True) for p in params]
    x, y = torch.tensor(X, device="cuda"), torch.tensor(Y, device="cuda")

    def step() -> None:
        for leaf in leaves:
            leaf.grad = None
        mlp(x, y, leaves, lambda v: v.log_softmax(1)).backward()

    step()  # torch's start-up (CUDA context, cuBLAS) done before the parent times anything
    torch.cuda.synchronize()
    print("ready", flush=True)
    for line in sys.stdin:
        command, _, path = line.strip().partition(" ")
        if command == "round":
            print(await median_time(step, torch.cuda.synchronize), flush=True)
        elif command == "grads":
            np.savez(path, **{f"grad{i}": leaf.grad.cpu().numpy() for i, leaf in enumerate(leaves)})
            print("saved", flush=True)


class TorchElsewhere:
    """torch's W3, timed in a child process round by round between actorgrad's rounds (a slow spell of the machine
    falls on both). Imported here, torch's Python objects (some 200,000) would make each garbage collection of
    actorgrad's process walk them too: the in-process row shows what that costs."""

    def __init__(self, batch: int) -> None:
        self.child = subprocess.Popen([sys.executable, __file__, "--torch-w3", str(batch)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
        # Its start-up takes the host's cores and the GPU's driver for seconds: not while actorgrad is timed.
        if self.child.stdout.readline().strip() != "ready":
            raise RuntimeError("the torch process did not start: its error is above")

    def ask(self, line: str) -> str:
        self.child.stdin.write(line + "\n")
        self.child.stdin.flush()
        return self.child.stdout.readline().strip()

    async def round(self) -> float:
        return float(await trio.to_thread.run_sync(self.ask, "round"))

    def grads(self) -> list[np.ndarray]:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "torch_w3.npz")
            self.ask(f"grads {path}")
            saved = np.load(path)
            return [saved[f"grad{i}"] for i in range(6)]

    def close(self) -> None:
        self.child.stdin.close()
        self.child.wait(timeout=60)


async def w3_cuda(batch: int = 4096) -> tuple[float, float, float, float, float]:
    """(actorgrad's time, torch's, the largest gradient difference, then actorgrad's and torch's with torch
    imported in actorgrad's process)."""
    X, Y, params = w3_data(batch)
    leaves = [ag.tensor(p, device="cuda", requires_grad=True) for p in params]
    x, y = ag.tensor(X, device="cuda"), ag.tensor(Y, device="cuda")

    async def step() -> None:
        for leaf in leaves:
            leaf.grad = None
        await ag.backward(mlp(x, y, leaves, lambda v: v.log_softmax(1)))

    async def interleaved() -> tuple[float, float]:
        ag_times, torch_times = [], []
        for _ in range(W3_ROUNDS):
            ag_times.append(await median_time(step, synchronize_cuda))
            torch_times.append(await torch.round())
        return statistics.median(ag_times), statistics.median(torch_times)

    torch = TorchElsewhere(batch)
    try:
        ag_time, torch_time = await interleaved()
        error = 0.0  # the same gradients as torch's, to float32 rounding: reported as a row of its own
        for leaf, want in zip(leaves, torch.grads()):
            got = leaf.grad.cpu().numpy()
            error = max(error, float(np.max(np.abs(got - want) / (np.abs(want) + 0.01))))
        import torch as torch_here

        torch_here.ones(1, device="cuda")  # torch's objects now share this process, as in an app that uses both
        beside_torch = await interleaved()
    finally:
        torch.close()
    return ag_time, torch_time, error, *beside_torch


async def heavy_branches(cpu_n: int = 1024, gpu_n: int = 4096) -> tuple[float, float, float]:
    """(both, cpu alone, gpu alone): a CPU branch and a GPU branch of several large matmuls each. The GPU branch
    is recorded first, so its forward kernels queue while the CPU computes its own forward."""
    rng = np.random.default_rng(4)
    a = ag.tensor(rng.normal(size=(cpu_n, cpu_n)) / np.sqrt(cpu_n), dtype=ag.float32, requires_grad=True)
    b = ag.tensor(rng.normal(size=(gpu_n, gpu_n)) / np.sqrt(gpu_n), dtype=ag.float32, device="cuda",
                  requires_grad=True)

    def chain(w: ag.Tensor, depth: int) -> ag.Tensor:
        h = w
        for _ in range(depth):
            h = (h @ w).tanh()
        return h.sum()

    async def both() -> None:
        a.grad = b.grad = None
        on_gpu = chain(b, 24)
        await ag.backward(chain(a, 4) + on_gpu.cpu())

    async def cpu_alone() -> None:
        a.grad = None
        await ag.backward(chain(a, 4))

    async def gpu_alone() -> None:
        b.grad = None
        await ag.backward(chain(b, 24).cpu())

    return (await median_time(both, synchronize_cuda), await median_time(cpu_alone, synchronize_cuda),
            await median_time(gpu_alone, synchronize_cuda))


async def w2_streams(branches: int = 8, depth: int = 4, n: int = 1024) -> tuple[float, float]:
    """(one stream, a stream per branch) for W2's eight independent branches on cuda:0."""
    rng = np.random.default_rng(5)
    dev = ag.device("cuda:0")
    ws = [ag.tensor(rng.normal(size=(n, n)) / np.sqrt(n), dtype=ag.float32, device="cuda", requires_grad=True)
          for _ in range(branches)]
    x = ag.tensor(rng.normal(size=(n, n)), dtype=ag.float32, device="cuda")
    streams = [dev.new_stream() for _ in ws]

    def run(separate: bool) -> Callable[[], Any]:
        async def go() -> None:
            total = None
            for w, s in zip(ws, streams):
                w.grad = None
                with ag.stream(s if separate else None):
                    h = x
                    for _ in range(depth):
                        h = (h @ w).tanh()
                    total = h.sum() if total is None else total + h.sum()
            await ag.backward(total)

        return go

    return await median_time(run(False), synchronize_cuda), await median_time(run(True), synchronize_cuda)


async def event_waits(events: int = 200, work_n: int = 4096) -> list[tuple[str, float, float]]:
    """(mode, median wake-up latency in µs beyond a blocking synchronize, loop CPU share while a GPU works)."""
    import cupy

    stream = ag.device("cuda:0").new_stream()
    small = cupy.ones(16, cupy.float32)

    def tiny() -> Any:
        stream.launch(lambda: small + 1)
        return stream.record_event()

    base = []
    for _ in range(events):
        start = time.perf_counter()
        tiny().synchronize()
        base.append(time.perf_counter() - start)
    big = cupy.ones((work_n, work_n), cupy.float32)
    out = []
    for mode in WAIT_MODES:
        times = []
        for _ in range(events):
            start = time.perf_counter()
            await wait_async(tiny(), mode)
            times.append(time.perf_counter() - start)

        def long_work() -> None:
            for _ in range(200):
                big @ big

        stream.launch(long_work)
        event = stream.record_event()
        cpu, wall = time.process_time(), time.perf_counter()
        await wait_async(event, mode)
        share = (time.process_time() - cpu) / (time.perf_counter() - wall)
        out.append((mode, (statistics.median(times) - statistics.median(base)) * 1e6, share))
    return out


async def w3_rows() -> list[tuple[str, str, str, str]]:
    ag_t, torch_t, error, beside_torch, torch_then = await w3_cuda()
    return [
        ("W3 MLP b4096 f32 cuda", f"{ag_t * 1e3:.2f} ms", f"torch {torch_t * 1e3:.2f} ms, {ag_t / torch_t:.2f}x",
         "<= 1.5x: " + ("PASS" if ag_t <= 1.5 * torch_t else "FAIL")),
        ("W3 gradients vs torch", f"{error:.1e}", "largest |ag - torch| / (|torch| + 0.01)",
         "<= 1e-3: " + ("PASS" if error <= 1e-3 else "FAIL")),
        ("W3, torch imported here", f"{beside_torch * 1e3:.2f} ms", f"torch {torch_then * 1e3:.2f} ms, "
         f"{beside_torch / torch_then:.2f}x", "report"),
    ]


async def branch_rows() -> list[tuple[str, str, str, str]]:
    both, cpu_alone, gpu_alone = await heavy_branches()
    longer = max(cpu_alone, gpu_alone)
    return [("cpu + gpu branches", f"{both * 1e3:.1f} ms", f"cpu {cpu_alone * 1e3:.1f} ms, gpu "
             f"{gpu_alone * 1e3:.1f} ms, {both / longer:.2f}x",
             "<= 1.15x: " + ("PASS" if both <= 1.15 * longer else "FAIL"))]


async def stream_rows() -> list[tuple[str, str, str, str]]:
    one, separate = await w2_streams()
    return [("W2 cuda, streams", f"{separate * 1e3:.1f} ms", f"one stream {one * 1e3:.1f} ms, "
             f"ratio {separate / one:.2f}", "report")]


async def event_rows() -> list[tuple[str, str, str, str]]:
    return [(f"event wait: {mode}", f"{latency:.0f} us", f"loop CPU {share:.0%} while GPU works", "report")
            for mode, latency, share in await event_waits()]


_started = time.perf_counter()


async def test_rows() -> list[tuple[str, str, str, str]]:
    limit_s = max(TESTS_MIN_S, RUN_LIMIT_S - (time.perf_counter() - _started))
    return [("gpu tests", await trio.to_thread.run_sync(gpu_tests, limit_s), "", "all pass")]


STAGES = [("W3", w3_rows), ("cpu + gpu branches", branch_rows), ("W2 streams", stream_rows),
          ("event waits", event_rows), ("gpu tests", test_rows)]


async def rows(only: set[str]) -> list[tuple[str, str, str, str]]:
    """Each stage's rows, printed as soon as it ends (a run cut short still shows the stages it finished); only
    the stages named in `only`, where it names any."""
    table = []
    for name, stage in STAGES:
        if only and name not in only:
            continue
        start = time.perf_counter()
        try:
            got = await stage()
        except Exception as error:
            got = [failed(name, error)]
        for row in got:
            print(" | ".join(row), f"| {time.perf_counter() - start:.0f} s", flush=True)
        table += got
    return table


def failed(name: str, error: Exception) -> tuple[str, str, str, str]:
    traceback.print_exception(error)
    return (name, "ERROR", f"{type(error).__name__}: {error}"[:160], "FAIL")


def main() -> None:
    if sys.argv[1:2] == ["--torch-w3"]:
        trio.run(torch_w3, int(sys.argv[2]))
        return
    only = set(sys.argv[2].split(",")) if sys.argv[1:2] == ["--only"] else set()
    table = trio.run(rows, only)
    width = [max(len(r[i]) for r in table) for i in range(4)]
    print()
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, width)))


if __name__ == "__main__":
    main()
