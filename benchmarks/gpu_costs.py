"""Where W3's host time goes on a GPU machine: a diagnostic beside `gpu_check.py` (about a minute).

1. The host's cost of one call of each CuPy call W3's step issues (its large and its small shapes), and of the
   gemv that sums a bias's gradient (actorgrad.devices.cublas): each is issued 200 times without waiting; "host"
   is the issuing time per call, "step" the time per call until the GPU has finished them all (the GPU's time
   where it exceeds the host's).
2. How fast this host runs actorgrad's Python: W3's step on the cpu device with 8-wide layers and a batch of 2
   (numpy's work negligible), to compare with the same line on another machine.
3. W3 on cuda: its host time split into forward and backward, its step against torch's (timed in a process of
   its own), and a profile of its steps (own time, then cumulative), written to PROFILE_FILE (or printed).

Run `python benchmarks/gpu_costs.py [PROFILE_FILE]` on the GPU machine after `gpu_check.py`'s install.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_check as check  # noqa: E402

import actorgrad as ag  # noqa: E402

CALLS = 200


def per_call(label: str, call: Callable[[], Any]) -> None:
    for _ in range(5):
        call()
    check.synchronize_cuda()
    start = time.perf_counter()
    for _ in range(CALLS):
        call()
    issued = time.perf_counter()
    check.synchronize_cuda()
    done = time.perf_counter()
    print(f"{label:44s} host {(issued - start) / CALLS * 1e6:6.1f} us, step {(done - start) / CALLS * 1e6:6.1f} us",
          flush=True)


def primitives() -> None:
    import cupy

    cuda = ag.device("cuda:0")
    x = cupy.ones((4096, 784), cupy.float32)
    w = cupy.ones((784, 512), cupy.float32)
    g = cupy.ones((4096, 512), cupy.float32)
    w2 = cupy.ones((512, 512), cupy.float32)
    bias = cupy.ones(512, cupy.float32)
    stream = cuda.current_stream()
    z = cupy.ones((4096, 10), cupy.float32)
    scalar = cupy.ones((), cupy.float32)
    per_call("x @ w (4096x784 @ 784x512)", lambda: x @ w)
    per_call("g @ w2.T", lambda: g @ w2.T)
    per_call("x.T @ g (784x4096 @ 4096x512)", lambda: x.T @ g)
    per_call("g.sum(axis=0)", lambda: g.sum(axis=0))
    per_call("row sums by gemv (g)", lambda: cuda.ops.sum_to(g, (512,)))
    per_call("z (4096x10) * z", lambda: z * z)
    per_call("z.sum()", lambda: z.sum())
    per_call("z.max(axis=1, keepdims=True)", lambda: z.max(axis=1, keepdims=True))
    per_call("log_softmax(z) (a row kernel)", lambda: cuda.ops.log_softmax(z, (1,)))
    per_call("log_softmax_grad(z) (a row kernel)", lambda: cuda.ops.log_softmax_grad(z, z, (1,)))
    per_call("scalar / 4096.0 (0-d)", lambda: scalar / 4096.0)
    per_call("-scalar (0-d)", lambda: -scalar)
    per_call("cupy.ones(())", lambda: cupy.ones((), cupy.float32))
    per_call("cupy g + bias", lambda: g + bias)
    per_call("cupy relu_grad kernel", lambda: cuda.ops.relu_grad(g, g))
    per_call("cupy.empty((4096, 512))", lambda: cupy.empty((4096, 512), cupy.float32))
    def device_context() -> None:
        with cupy.cuda.Device(0):
            pass

    per_call("cuda.Device(0) enter and exit", device_context)
    per_call("CudaStream.launch(nothing)", lambda: stream.launch(lambda: None))
    per_call("cupy.cuda.get_current_stream()", cupy.cuda.get_current_stream)


async def python_speed() -> None:
    rng = np.random.default_rng(0)
    shapes = [(8, 8), (8,), (8, 8), (8,), (8, 10), (10,)]
    leaves = [ag.tensor(rng.normal(size=shape), dtype=ag.float32, requires_grad=True) for shape in shapes]
    x = ag.tensor(rng.normal(size=(2, 8)), dtype=ag.float32)
    y = ag.tensor(np.eye(10, dtype=np.float32)[[1, 2]])

    async def step() -> None:
        for leaf in leaves:
            leaf.grad = None
        await ag.backward(check.mlp(x, y, leaves, lambda v: v.log_softmax(1)))

    steps, forwards = [], []
    for _ in range(50):
        await step()
    for _ in range(11):
        start = time.perf_counter()
        for _ in range(100):
            await step()
        steps.append((time.perf_counter() - start) / 100)
        start = time.perf_counter()
        for _ in range(100):
            check.mlp(x, y, leaves, lambda v: v.log_softmax(1))
        forwards.append((time.perf_counter() - start) / 100)
    print(f"tiny W3 on the cpu device: step {statistics.median(steps) * 1e6:.0f} us, forward "
          f"{statistics.median(forwards) * 1e6:.0f} us", flush=True)


async def w3_cuda(profile_file: str | None) -> None:
    X, Y, params = check.w3_data(4096)
    leaves = [ag.tensor(p, device="cuda", requires_grad=True) for p in params]
    x, y = ag.tensor(X, device="cuda"), ag.tensor(Y, device="cuda")

    def forward() -> ag.Tensor:
        for leaf in leaves:
            leaf.grad = None
        return check.mlp(x, y, leaves, lambda v: v.log_softmax(1))

    async def step() -> None:
        await ag.backward(forward())

    forward_hosts, backward_hosts = [], []
    for _ in range(30):
        check.synchronize_cuda()
        start = time.perf_counter()
        loss = forward()
        middle = time.perf_counter()
        await ag.backward(loss)
        forward_hosts.append(middle - start)
        backward_hosts.append(time.perf_counter() - middle)
    print(f"W3 cuda host time: forward {statistics.median(forward_hosts) * 1e3:.2f} ms, backward "
          f"{statistics.median(backward_hosts) * 1e3:.2f} ms", flush=True)

    torch = check.TorchElsewhere(4096)
    times: dict[str, list[float]] = {"actorgrad": [], "torch": []}
    try:
        for _ in range(8):
            times["actorgrad"].append(await check.median_time(step, check.synchronize_cuda))
            times["torch"].append(await torch.round())
    finally:
        torch.close()
    medians = {label: statistics.median(t) for label, t in times.items()}
    for label, median in medians.items():
        print(f"W3 {label:9s} {median * 1e3:.2f} ms ({median / medians['torch']:.2f}x torch; rounds "
              f"{', '.join(f'{t * 1e3:.2f}' for t in times[label])})", flush=True)

    profile = cProfile.Profile()
    check.synchronize_cuda()
    profile.enable()
    for _ in range(30):
        await step()
    check.synchronize_cuda()
    profile.disable()
    report = io.StringIO()
    stats = pstats.Stats(profile, stream=report)
    stats.sort_stats("tottime").print_stats(50)
    stats.sort_stats("cumulative").print_stats(40)
    if profile_file:
        Path(profile_file).write_text(report.getvalue())
    else:
        print(report.getvalue())


async def main(profile_file: str | None) -> None:
    await python_speed()
    await w3_cuda(profile_file)


if __name__ == "__main__":
    primitives()
    trio.run(main, sys.argv[1] if len(sys.argv) > 1 else None)
