"""The `actorgrad` command (also `python -m actorgrad`): bench, trace and graph.

`bench` re-executes itself first when the BLAS and OpenMP settings it needs are not in the environment: they are
read when numpy loads, and importing this module has loaded it (see actorgrad/bench/environment.py).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from actorgrad.bench.environment import exec_with_blas_env
from actorgrad.bench.main import DESCRIPTION
from actorgrad.bench.main import add_arguments as add_bench_arguments
from actorgrad.bench.main import run as run_bench

PLOT_HINT = "pictures need matplotlib: pip install 'actorgrad[cli]'"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="actorgrad", description="actorgrad's benchmark, timelines and graphs")
    commands = parser.add_subparsers(dest="command", required=True)
    bench = commands.add_parser("bench", help="the throughput suite W1-W5 and the scaling runs",
                                description=DESCRIPTION)
    add_bench_arguments(bench, scaling=True)
    trace = commands.add_parser("trace", help="run a script under actorgrad.profile() and write its trace")
    trace.add_argument("-o", "--out", default="trace.json", help="Chrome trace / Perfetto JSON (default trace.json)")
    trace.add_argument("--png", metavar="PATH", help="also a PNG timeline (needs matplotlib)")
    trace.add_argument("script", help="the Python script to run")
    trace.add_argument("args", nargs=argparse.REMAINDER,
                       help="the script's arguments (options for trace go before SCRIPT)")
    graph = commands.add_parser("graph", help="the backward graph of a script's result, as DOT, SVG or PNG")
    graph.add_argument("script", help="a Python script whose last expression (or --var) is a tensor")
    graph.add_argument("--var", help="the script's variable to draw instead of its last expression")
    graph.add_argument("-o", "--out", help="output file: .dot, .svg or .png (default: DOT on stdout)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        exec_with_blas_env(["-m", "actorgrad", *argv])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "bench":
        return run_bench(args, parser)
    if args.command == "trace":
        return trace(args)
    return graph(args)


def trace(args: argparse.Namespace) -> int:
    import actorgrad as ag

    status = 0
    with ag.profile() as prof:
        try:
            _run_script(args.script, args.args)
        except SystemExit as exit_:  # a script that ends with sys.exit(main()) still gets its trace
            status = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    prof.export_chrome_trace(args.out)
    print(f"{len(prof.events)} nodes in {len(prof.passes)} backward pass(es): {args.out} "
          "(open it in https://ui.perfetto.dev or chrome://tracing)")
    if args.png:
        try:
            from actorgrad.profiler import save_timeline_png

            save_timeline_png(prof, args.png, Path(args.script).name)
        except ImportError:
            print(f"no timeline written: {PLOT_HINT}", file=sys.stderr)
            return 1
        print(f"timeline: {args.png}")
    return status


def graph(args: argparse.Namespace) -> int:
    from actorgrad.viz import GraphvizNotFound, render, to_dot

    source = to_dot(_script_value(args.script, args.var), title=Path(args.script).name)
    if args.out is None:
        sys.stdout.write(source)
        return 0
    out = Path(args.out)
    if out.suffix == ".dot":
        out.write_text(source)
        print(f"graph: {out}")
        return 0
    try:
        render(source, out)
    except GraphvizNotFound as missing:
        fallback = out.with_suffix(".dot")
        fallback.write_text(source)
        print(f"{missing}\nwrote the DOT source to {fallback} instead", file=sys.stderr)
        return 1
    print(f"graph: {out}")
    return 0


@contextlib.contextmanager
def _argv(script: str, args: list[str]) -> Iterator[None]:
    """The script sees `args` as its sys.argv[1:], as when run by python."""
    saved_argv = sys.argv
    sys.argv = [script, *args]
    try:
        yield
    finally:
        sys.argv = saved_argv


def _run_script(script: str, args: list[str]) -> dict[str, Any]:
    """Run `script` as __main__; its globals afterwards."""
    with _argv(script, args):
        return runpy.run_path(script, run_name="__main__")


def _script_value(script: str, var: str | None) -> Any:
    """The script's variable `var`, or the value of its last statement when that is an expression."""
    if var is not None:
        namespace = _run_script(script, [])
        if var not in namespace:
            raise SystemExit(f"{script} defines no variable {var!r}")
        return namespace[var]
    tree = ast.parse(Path(script).read_text(), filename=script)
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        raise SystemExit(f"{script} does not end with an expression: name the tensor to draw with --var")
    last = ast.Expression(tree.body.pop().value)
    namespace: dict[str, Any] = {"__name__": "__main__", "__file__": script}
    with _argv(script, []):
        exec(compile(tree, script, "exec"), namespace)
        return eval(compile(last, script, "eval"), namespace)
