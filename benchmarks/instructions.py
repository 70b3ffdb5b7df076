"""Instructions per recorded op, per backward node and per backward call, counted by valgrind's callgrind.

Wall-clock ratios on the project's shared 2-core machine move by up to 10% between runs: more than most changes
to the per-op, per-node and per-call Python paths. Instruction counts hardly move (0.02% between runs here, with
the hash seed, address randomization and the dispatcher's time-based checkpoints held fixed), so this script
tells whether such a change helps: run it on two checkouts and compare. Needs valgrind, its headers and a C
compiler (Debian: valgrind, gcc).

`python benchmarks/instructions.py` (about a minute) re-runs itself under callgrind once per workload; each run
counts only its measured region (two iterations, after two to warm up), switched on and off through callgrind's
client requests from a small C helper built on the fly. `--inner NAME` runs one workload without valgrind.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import trio

import actorgrad as ag
import actorgrad.scheduler.dispatch as dispatch
from actorgrad.bench.chains import ag_chain, chain_data

HELPER = """
#include <valgrind/callgrind.h>
void region_start(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_ZERO_STATS; }
void region_stop(void) { CALLGRIND_DUMP_STATS_AT("region"); CALLGRIND_STOP_INSTRUMENTATION; }
"""
HELPER_ENV = "ACTORGRAD_CALLGRIND_HELPER"
ITERATIONS = 2
CHAINS, CHAIN_OPS = 16, 50  # the W1 chain's ops (*c, +c, tanh) on (16,) float64
CALLS = 100  # backward calls of a 3-node graph per iteration
MLP_STEPS = 10  # W3's MLP shrunk to 8-8-8-3 at batch 4: its Python costs without its BLAS time

Workload = Callable[[Callable[[], None], Callable[[], None]], Awaitable[None]]


_CHAIN_DATA = [chain_data(100 + i) for i in range(CHAINS)]


def _chains() -> list[ag.Tensor]:
    return [ag_chain(x, c, CHAIN_OPS)[1] for x, c in _CHAIN_DATA]


async def _ops(start: Callable[[], None], stop: Callable[[], None]) -> None:
    start()
    for _ in range(ITERATIONS):
        _chains()
    stop()


async def _nodes(start: Callable[[], None], stop: Callable[[], None]) -> None:
    batches = [_chains() for _ in range(ITERATIONS)]
    start()
    for losses in batches:
        for loss in losses:
            await ag.backward(loss)
    stop()


async def _concurrent_nodes(start: Callable[[], None], stop: Callable[[], None]) -> None:
    batches = [_chains() for _ in range(ITERATIONS)]
    start()
    for losses in batches:
        async with trio.open_nursery() as nursery:
            for loss in losses:
                nursery.start_soon(ag.backward, loss)
    stop()


async def _calls(start: Callable[[], None], stop: Callable[[], None]) -> None:
    x = ag.tensor(np.ones(4), requires_grad=True)
    losses = [(x * 2).sum() for _ in range(ITERATIONS * CALLS)]
    start()
    for loss in losses:
        await ag.backward(loss)
    stop()


async def _mlp_steps(start: Callable[[], None], stop: Callable[[], None]) -> None:
    rng = np.random.default_rng(3)
    x = ag.tensor(rng.normal(size=(4, 8)).astype(np.float32))
    y = ag.tensor(np.eye(3, dtype=np.float32)[rng.integers(0, 3, 4)])
    p = [ag.tensor(rng.normal(size=shape).astype(np.float32), requires_grad=True)
         for shape in [(8, 8), (8,), (8, 8), (8,), (8, 3), (3,)]]
    start()
    for _ in range(ITERATIONS * MLP_STEPS):
        for leaf in p:
            leaf.grad = None
        h = ((x @ p[0] + p[1]).relu() @ p[2] + p[3]).relu()
        await ag.backward(-((h @ p[4] + p[5]).log_softmax(1) * y).sum() / 4)
    stop()


# name -> (what one unit is, units per iteration, the workload)
WORKLOADS: dict[str, tuple[str, int, Workload]] = {
    "op": ("recorded op (W1 chain forward)", CHAINS * CHAIN_OPS, _ops),
    "node": ("backward node (W1 chains, one call after another)", CHAINS * CHAIN_OPS, _nodes),
    "concurrent": ("backward node (W1 chains, all calls in one nursery)", CHAINS * CHAIN_OPS, _concurrent_nodes),
    "call": ("backward call of a 3-node graph", CALLS, _calls),
    "mlp": ("training step of an 8-8-8-3 MLP (13 ops, 20 nodes)", MLP_STEPS, _mlp_steps),
}


def run_inner(name: str) -> None:
    """One workload, twice to warm up, then its measured region (counted when the helper is loaded)."""
    helper = os.environ.get(HELPER_ENV)
    lib = ctypes.CDLL(helper) if helper else None

    def start() -> None:
        if lib is not None:
            lib.region_start()

    def stop() -> None:
        if lib is not None:
            lib.region_stop()

    def ignore() -> None:
        pass

    workload = WORKLOADS[name][2]
    dispatch.CHECKPOINT_INTERVAL_S = math.inf  # checkpoints every 0.5 ms would count valgrind's slowness
    gc.disable()

    async def main() -> None:
        for _ in range(2):
            await workload(ignore, ignore)
        await workload(start, stop)

    trio.run(main)


def count(name: str, helper: Path, scratch: Path) -> int:
    """Instructions in one workload's measured region, from callgrind's dump of it."""
    out = scratch / name
    env = {**os.environ, HELPER_ENV: str(helper), "PYTHONHASHSEED": "0"}
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
               sys.executable, __file__, "--inner", name]
    subprocess.run(["setarch", "-R", *command], env=env, check=True, capture_output=True)
    region = Path(f"{out}.1")  # the region's dump; `out` itself is the empty one at exit
    for line in region.read_text().splitlines() if region.exists() else ():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"no callgrind dump of the measured region of {name!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help=f"comma-separated workloads of {', '.join(WORKLOADS)}")
    parser.add_argument("--inner", choices=WORKLOADS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        run_inner(args.inner)
        return 0
    names = args.only.split(",") if args.only else list(WORKLOADS)
    unknown = [name for name in names if name not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        (scratch / "helper.c").write_text(HELPER)
        helper = scratch / "helper.so"
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(helper), str(scratch / "helper.c")], check=True)
        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            counts = dict(zip(names, pool.map(lambda name: count(name, helper, scratch), names)))
    print(f"{'instructions':>12}  per")
    for name in names:
        unit, units, _ = WORKLOADS[name]
        print(f"{counts[name] / (ITERATIONS * units):12,.0f}  {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
