"""What moves actorgrad's W3 time on a GPU machine, beside torch's (a diagnostic for `gpu_check.py`'s W3 row).

On 2026-11-27 one H200 machine timed the same W3 step at 1.4 ms in some minutes and 2.1 to 2.4 ms in others, in
one process, while torch's stayed at 1.0 to 1.25 ms. This runs W3 under each condition in turn, twice in
alternation (so that a slow spell of the machine shows as a difference between the two passes, not between the
conditions): alone, with the collector off, beside a torch process timed between its rounds, then with torch
imported into this process (its objects make each garbage collection walk more). Prints the median, best and
worst round of each, the host's own time of a step (issued without waiting for the GPU: far below the step's
time when the GPU bounds it), the full collections each caused and the GPU's SM clock after it (a GPU that has
not yet raised its clock takes longer over the same kernels). Run `python benchmarks/gpu_w3_conditions.py` on the
GPU machine after `gpu_check.py`'s install.
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

ROUNDS = 15


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

    async def host_time() -> float:
        """The host's time to issue 5 steps, per step (the GPU's queue holds far more than 5 steps' kernels)."""
        check.synchronize_cuda()
        start = time.perf_counter()
        for _ in range(5):
            await step()
        return (time.perf_counter() - start) / 5

    async def condition(label: str, torch: check.TorchElsewhere | None = None, collector: bool = True) -> None:
        full_collections = gc.get_stats()[2]["collections"]
        times, hosts, torch_times = [], [], []
        if not collector:
            gc.disable()
        try:
            for _ in range(ROUNDS):
                times.append(await check.median_time(step, check.synchronize_cuda))
                hosts.append(await host_time())
                if torch is not None:
                    torch_times.append(await torch.round())
        finally:
            gc.enable()
        beside = f", torch {statistics.median(torch_times) * 1e3:.2f} ms" if torch_times else ""
        print(f"{label:32s} {statistics.median(times) * 1e3:.2f} ms (best {min(times) * 1e3:.2f}, worst "
              f"{max(times) * 1e3:.2f}), host {statistics.median(hosts) * 1e3:.2f}{beside}; full collections "
              f"{gc.get_stats()[2]['collections'] - full_collections}; SM clock {sm_clock()}; at "
              f"{time.perf_counter() - started:.0f} s", flush=True)

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
