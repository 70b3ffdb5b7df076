"""The GPU check of the devices issue, in one run (under 5 minutes): the gpu tests, then the GPU benchmarks, as
one table. Needs cupy, torch with CUDA, trio and pytest-trio; run `python benchmarks/gpu_check.py` on the GPU
machine after `pip install --no-deps -e .`.

- W3 MLP (784-512-512-10) at batch 4096, float32, forward + backward on cuda:0, against torch CUDA (<= 1.5x).
- A heavy CPU branch and a heavy GPU branch in one backward, against the longer branch alone (<= 1.15x).
- W2 (eight tanh(h @ W) branches) on cuda:0 with each branch on a stream of its own, against one stream.

Each time is the median of several runs after a warm-up (CuPy compiles a kernel on first use), taken after
synchronizing the device.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np
import trio

import actorgrad as ag

REPEAT = 7


def median_time(run: Callable[[], None], sync: Callable[[], None], repeat: int = REPEAT) -> float:
    run()
    sync()
    times = []
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gpu_tests() -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "tests/test_cuda.py", "-p", "no:cacheprovider"],
                          capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-200:]


def mlp_params(rng: np.random.Generator) -> list[np.ndarray]:
    params = []
    for fan_in, fan_out in [(784, 512), (512, 512), (512, 10)]:
        params += [(rng.normal(size=(fan_in, fan_out)) * np.sqrt(2 / fan_in)).astype(np.float32),
                   (rng.normal(size=fan_out) * 0.01).astype(np.float32)]
    return params


def w3_cuda(batch: int = 4096) -> tuple[float, float]:
    import cupy
    import torch

    rng = np.random.default_rng(3)
    X = rng.normal(size=(batch, 784)).astype(np.float32)
    Y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    params = mlp_params(rng)

    def mlp(x, y, p, log_softmax):
        h = (((x @ p[0] + p[1]).relu()) @ p[2] + p[3]).relu()
        return -(log_softmax(h @ p[4] + p[5]) * y).sum() / batch

    leaves = [ag.tensor(p, device="cuda", requires_grad=True) for p in params]
    x, y = ag.tensor(X, device="cuda"), ag.tensor(Y, device="cuda")

    def ag_step() -> None:
        for leaf in leaves:
            leaf.grad = None
        trio.run(ag.backward, mlp(x, y, leaves, lambda v: v.log_softmax(1)))

    t_leaves = [torch.tensor(p, device="cuda", requires_grad=True) for p in params]
    tx, ty = torch.tensor(X, device="cuda"), torch.tensor(Y, device="cuda")

    def torch_step() -> None:
        for leaf in t_leaves:
            leaf.grad = None
        mlp(tx, ty, t_leaves, lambda v: v.log_softmax(1)).backward()

    ag_time = median_time(ag_step, cupy.cuda.Device(0).synchronize)
    torch_time = median_time(torch_step, torch.cuda.synchronize)
    return ag_time, torch_time


def heavy_branches() -> tuple[float, float, float]:
    """(both, cpu alone, gpu alone): a CPU branch and a GPU branch of a few large matmuls each."""
    import cupy

    rng = np.random.default_rng(4)
    a = ag.tensor(rng.normal(size=(1024, 1024)), dtype=ag.float32, requires_grad=True)
    b = ag.tensor(rng.normal(size=(4096, 4096)) / 64, dtype=ag.float32, device="cuda", requires_grad=True)

    def cpu_branch():
        h = a
        for _ in range(4):
            h = (h @ a).tanh()
        return h.sum()

    def gpu_branch():
        h = b
        for _ in range(24):
            h = (h @ b).tanh()
        return h.sum().cpu()

    def run(*branches: Callable) -> Callable[[], None]:
        def go() -> None:
            a.grad = b.grad = None
            trio.run(ag.backward, sum(branch() for branch in branches))

        return go

    sync = cupy.cuda.Device(0).synchronize
    return (median_time(run(cpu_branch, gpu_branch), sync), median_time(run(cpu_branch), sync),
            median_time(run(gpu_branch), sync))


def w2_streams(branches: int = 8, depth: int = 4, n: int = 1024) -> tuple[float, float]:
    """(one stream, a stream per branch) for W2's eight independent branches on cuda:0."""
    import cupy

    rng = np.random.default_rng(5)
    dev = ag.device("cuda:0")
    ws = [ag.tensor(rng.normal(size=(n, n)) / np.sqrt(n), dtype=ag.float32, device="cuda", requires_grad=True)
          for _ in range(branches)]
    x = ag.tensor(rng.normal(size=(n, n)), dtype=ag.float32, device="cuda")
    streams = [dev.new_stream() for _ in ws]

    def run(separate: bool) -> Callable[[], None]:
        def go() -> None:
            total = None
            for w, s in zip(ws, streams):
                w.grad = None
                with ag.stream(s if separate else None):
                    h = x
                    for _ in range(depth):
                        h = (h @ w).tanh()
                    total = h.sum() if total is None else total + h.sum()
            trio.run(ag.backward, total)

        return go

    sync = cupy.cuda.Device(0).synchronize
    return median_time(run(False), sync), median_time(run(True), sync)


def main() -> None:
    rows = [("gpu tests", gpu_tests(), "", "all pass")]
    ag_t, torch_t = w3_cuda()
    rows.append(("W3 MLP b4096 f32 cuda", f"{ag_t * 1e3:.2f} ms", f"torch {torch_t * 1e3:.2f} ms, "
                 f"{ag_t / torch_t:.2f}x", "<= 1.5x: " + ("PASS" if ag_t <= 1.5 * torch_t else "FAIL")))
    both, cpu_alone, gpu_alone = heavy_branches()
    longer = max(cpu_alone, gpu_alone)
    rows.append(("cpu + gpu branches", f"{both * 1e3:.1f} ms", f"cpu {cpu_alone * 1e3:.1f} ms, gpu "
                 f"{gpu_alone * 1e3:.1f} ms, {both / longer:.2f}x", "<= 1.15x: " + ("PASS" if both <= 1.15 * longer
                                                                                  else "FAIL")))
    one, separate = w2_streams()
    rows.append(("W2 cuda, streams", f"{separate * 1e3:.1f} ms", f"one stream {one * 1e3:.1f} ms, "
                 f"ratio {separate / one:.2f}", "report"))
    width = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, width)))


if __name__ == "__main__":
    main()
