"""What moves actorgrad's W3 time on a GPU machine, beside torch's (a diagnostic for `gpu_check.py`'s W3 row).

On 2026-11-27 one H200 machine timed the same W3 step at 1.4 ms in some minutes and 2.1 to 2.4 ms in others, in
one process, while torch's stayed at 1.0 to 1.25 ms. This runs W3 under each condition in turn, twice in
alternation (so that a slow spell of the machine shows as a difference between the two passes, not between the
conditions): alone, with the collector off, beside a torch process timed between its rounds, then with torch
imported into this process (its objects make each garbage collection walk more). Prints the median, best and
worst round of each, the host's own time of a step (issued without waiting for the GPU: far below the step's
time when the GPU bounds it), the full collections each caused and the GPU's SM clock after it (a GPU that has
not yet raised its clock takes longer over the same kernels), beside its anatomy: steps issued in a row, the GPU's
own span of a step (CUDA events) and the cost of synchronizing an idle device. Run
`python benchmarks/gpu_w3_conditions.py` on the GPU machine after `gpu_check.py`'s install.
"""

from __future__ import annotations

import gc
import statistics
import subprocess
import sys
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_check as check  # noqa: E402

import actorgrad as ag  # noqa: E402

ROUNDS = 9


def sm_clock() -> str:
    """The GPU's SM clock now, against its maximum, as nvidia-smi reads them."""
    query = ["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm", "--format=csv,noheader"]
    try:
        return subprocess.run(query, capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return "no nvidia-smi"


async def main() -> None:
    X, Y, params = check.w3_data(4096)
    leaves = [ag.tensor(p, device="cuda", requires_grad=True) for p in params]
    x, y = ag.tensor(X, device="cuda"), ag.tensor(Y, device="cuda")

    async def step() -> None:
        for leaf in leaves:
            leaf.grad = None
        await ag.backward(check.mlp(x, y, leaves, lambda v: v.log_softmax(1)))

    async def anatomy() -> tuple[float, float, float, float]:
        """(the host's time to issue 5 steps, per step (the GPU's queue holds far more than 5 steps' kernels);
        the same until the GPU has finished them, per step; the GPU's span of one step by CUDA events, from its
        first kernel's start to its last's end; a synchronize of the idle device)."""
        import cupy

        check.synchronize_cuda()
        start = time.perf_counter()
        for _ in range(5):
            await step()
        issued = time.perf_counter()
        check.synchronize_cuda()
        done = time.perf_counter()
        first, last = cupy.cuda.Event(), cupy.cuda.Event()
        first.record()
        await step()
        last.record()
        last.synchronize()
        idle = time.perf_counter()
        check.synchronize_cuda()
        synced = time.perf_counter()
        return ((issued - start) / 5, (done - start) / 5, cupy.cuda.get_elapsed_time(first, last) / 1e3,
                synced - idle)

    async def condition(label: str, torch: check.TorchElsewhere | None = None, collector: bool = True) -> None:
        full_collections = gc.get_stats()[2]["collections"]
        times, parts, torch_times = [], [], []
        if not collector:
            gc.disable()
        try:
            for _ in range(ROUNDS):
                times.append(await check.median_time(step, check.synchronize_cuda))
                parts.append(await anatomy())
                if torch is not None:
                    torch_times.append(await torch.round())
        finally:
            gc.enable()
        host, through, span, idle = (statistics.median(p[i] for p in parts) * 1e3 for i in range(4))
        beside = f", torch {statistics.median(torch_times) * 1e3:.2f} ms" if torch_times else ""
        print(f"{label:32s} {statistics.median(times) * 1e3:.2f} ms (best {min(times) * 1e3:.2f}, worst "
              f"{max(times) * 1e3:.2f}), host {host:.2f}, 5 in a row {through:.2f}, GPU span {span:.2f}, idle sync "
              f"{idle * 1e3:.0f} us{beside}; full collections {gc.get_stats()[2]['collections'] - full_collections}; "
              f"SM clock {sm_clock()}; at {time.perf_counter() - started:.0f} s", flush=True)

    started = time.perf_counter()
    torch = check.TorchElsewhere(4096)
    try:
        for _ in range(2):
            await condition("alone")
            await condition("collector off", collector=False)
            await condition("torch timed between rounds", torch)
        import torch as torch_here

        torch_here.ones(1, device="cuda")
        for _ in range(2):
            await condition("torch imported here")
            await condition("torch imported, collector off", collector=False)
            await condition("torch imported, timed between", torch)
    finally:
        torch.close()


if __name__ == "__main__":
    trio.run(main)
