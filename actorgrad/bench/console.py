"""The rich console: a progress bar over the suite's timed calls and the results table (the `cli` extra)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from actorgrad.bench.report import verdict
from actorgrad.bench.run import Progress as SuiteProgress


class RichProgress(SuiteProgress):
    """One bar per workload (or scaling run), advanced after every timed call."""

    def __init__(self, console: Console) -> None:
        self.bar = Progress(TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=console, transient=False)
        self.task: Any = None

    def __enter__(self) -> RichProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def start(self, what: str, steps: int) -> None:
        self.task = self.bar.add_task(what, total=steps)

    def advance(self) -> None:
        self.bar.advance(self.task)


def print_rich_table(console: Console, rows: list[dict[str, Any]]) -> None:
    table = Table(title="medians (ratios: this row's median over the floor's / torch's)")
    for name, justify in [("work", "left"), ("engine / variant", "left"), ("median", "right"), ("unit", "left"),
                          ("vs floor", "right"), ("vs torch", "right"), ("target", "left")]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        mark = verdict(r)
        style = "green" if r["passed"] else "red" if r["passed"] is False else ""
        table.add_row(r["workload"], r["engine"], _num(r["median"], ".3f"), r["unit"],
                      _num(r["vs_floor"], ".2f", "x"), _num(r["vs_torch"], ".2f", "x"),
                      f"[{style}]{mark}[/{style}]" if style else mark)
    console.print(table)


def _num(value: float | None, spec: str, suffix: str = "") -> str:
    return "n/a" if value is None else format(value, spec) + suffix
