"""`actorgrad bench` (and `python benchmarks/bench.py`): actorgrad's backward against a plain-numpy floor, torch
and HIPS autograd, with the scaling runs.

The workload modules are imported only once `--threads` has set actorgrad's worker count and `--no-peers` its
environment variable, since they read both when they load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from typing import Any

import actorgrad as ag

WORKLOADS = ("W1", "W2", "W3", "W4", "W5")  # LAYOUT's keys, named here so that parsing loads no workload
DESCRIPTION = "actorgrad backward benchmarks against a plain-numpy floor, torch and HIPS autograd"
TABLE_WIDTH = 130  # rich's width when writing to a file or pipe (it would wrap the table at 80 columns)


def add_arguments(parser: argparse.ArgumentParser, scaling: bool) -> None:
    parser.add_argument("--repeat", type=int, default=7, help="timed repetitions (medians reported)")
    parser.add_argument("--quick", action="store_true", help="3 repetitions, for CI smoke runs (under a minute)")
    parser.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads, e.g. W1,W3")
    parser.add_argument("--json", metavar="PATH", help="also write the results (with all samples) as JSON")
    parser.add_argument("--plot", metavar="PATH", help="write a PNG of the scaling runs (needs matplotlib)")
    parser.add_argument("--scaling", action=argparse.BooleanOptionalAction, default=scaling,
                        help="W2 with 1..cores workers, W4 with 1, 4, 16, 64 concurrent graphs (on with --plot)")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="actorgrad workers and BLAS threads (default: actorgrad's default, BLAS's own)")
    parser.add_argument("--device", default="cpu", choices=["cpu"], help="device to run on")
    parser.add_argument("--plain", action="store_true", help="plain text even when rich is installed")
    parser.add_argument("--no-peers", action="store_true", help="leave torch and HIPS autograd out")
    parser.add_argument("--size", choices=["full", "tiny"], default="full", help=argparse.SUPPRESS)


def main(argv: list[str] | None = None, scaling: bool = False) -> int:
    parser = argparse.ArgumentParser(prog="bench", description=DESCRIPTION)
    add_arguments(parser, scaling)
    return run(parser.parse_args(argv), parser)


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    repeat = 3 if args.quick else args.repeat
    chosen = [w.strip().upper() for w in args.only.split(",") if w.strip()]
    if unknown := [w for w in chosen if w not in WORKLOADS]:
        parser.error(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    if args.threads is not None:
        ag.set_num_workers(args.threads)
    if args.no_peers:
        os.environ["ACTORGRAD_BENCH_PEERS"] = "0"
    args.scaling = args.scaling or args.plot is not None  # the plot draws the scaling runs
    from threadpoolctl import threadpool_limits

    limits = threadpool_limits(args.threads, user_api="blas") if args.threads else contextlib.nullcontext()
    with limits:
        return _run(args, chosen, repeat)


def _run(args: argparse.Namespace, chosen: list[str], repeat: int) -> int:
    from actorgrad.bench.report import machine, print_table
    from actorgrad.bench.run import Progress, run_workload, scaling_runs
    from actorgrad.bench.timing import CORES, DEFAULT_WORKERS, foreign_cpu

    progress, say, table = _console(args.plain)
    tiny = args.size == "tiny"
    info = machine()
    say(f"machine: {CORES} cores, {info['platform']}, python {info['python']}, numpy {info['numpy']}")
    say(f"numpy BLAS: {'; '.join(info['blas']) or 'n/a'}; load average {os.getloadavg()[0]:.2f}")
    say(f"actorgrad default workers {DEFAULT_WORKERS}; torch {info['torch']}; "
        f"HIPS autograd {info['autograd']}; repeat {repeat} (medians)\n")
    rows: list[dict[str, Any]] = []
    info["gradient_max_rel_err"], info["other_processes_cores"] = {}, {}
    scaling = None
    with progress or contextlib.nullcontext():
        for name in chosen:
            start, foreign = time.perf_counter(), foreign_cpu()
            workload_rows, err = run_workload(name, repeat, progress, tiny)
            rows += workload_rows
            wall = time.perf_counter() - start
            other = info["other_processes_cores"][name] = max(0.0, (foreign_cpu() - foreign) / wall)
            info["gradient_max_rel_err"][name] = err
            say(f"{name}: gradients match the numpy floor (max rel err {err:.1e}); timed in {wall:.1f}s; other "
                f"processes used {other:.2f} cores" + (" -- NOISY, timings unreliable" if other > 0.2 else ""))
        if args.scaling:
            start = time.perf_counter()
            scaling = scaling_runs(repeat, CORES, progress or Progress(), tiny)
            say(f"scaling runs: timed in {time.perf_counter() - start:.1f}s")
    say("")
    (table or print_table)(rows)
    if scaling is not None:
        _print_scaling(scaling, say)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "repeat": repeat, "results": rows, "scaling": scaling}, f, indent=2)
    if args.plot:
        return _plot(scaling, args.plot, f"{CORES} cores, {info['platform']}", say)
    return 0


def _console(plain: bool) -> tuple[Any, Any, Any]:
    """(progress, print, table printer): rich's when installed and wanted, else plain print."""
    if not plain:
        try:
            from rich.console import Console

            from actorgrad.bench.console import RichProgress, print_rich_table
        except ImportError:
            pass
        else:
            console = Console(width=None if sys.stdout.isatty() else TABLE_WIDTH)
            return RichProgress(console), console.print, lambda rows: print_rich_table(console, rows)

    def say(text: str) -> None:
        print(text, flush=True)

    return None, say, None


def _print_scaling(scaling: dict[str, Any], say: Any) -> None:
    w2, w4 = scaling["W2"], scaling["W4"]
    say("\nW2 scaling (ms): " + ", ".join(f"{k} workers {a:.1f} (floor {f:.1f})" for k, a, f in
                                         zip(w2["workers"], w2["actorgrad_ms"], w2["floor_ms"])))
    say("W4 scaling (ms per graph): " + ", ".join(
        f"{g} graphs {c:.3f} concurrent / {s:.3f} sequential"
        for g, c, s in zip(w4["graphs"], w4["concurrent_ms_per_graph"], w4["sequential_ms_per_graph"])))


def _plot(scaling: Any, path: str, machine: str, say: Any) -> int:
    try:
        from actorgrad.bench.plot import save_scaling_png

        save_scaling_png(scaling, path, machine)
    except ImportError:
        print("--plot needs matplotlib: pip install 'actorgrad[cli]' (or pip install matplotlib)", file=sys.stderr)
        return 1
    say(f"scaling plot written to {path}")
    return 0
