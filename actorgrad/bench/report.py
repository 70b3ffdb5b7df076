"""The plain-text report: the machine the numbers came from and the table of medians."""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info

from actorgrad.bench.peers import hips, torch
from actorgrad.bench.timing import CORES, DEFAULT_WORKERS


def verdict(row: dict[str, Any]) -> str:
    if row["target"] is None:
        return ""
    return f"{row['target']}: " + ("n/a" if row["passed"] is None else "PASS" if row["passed"] else "FAIL")


def print_table(rows: list[dict[str, Any]]) -> None:
    def num(value: float | None, width: int, spec: str, suffix: str = "") -> str:
        return f"{'n/a' if value is None else format(value, spec) + suffix:>{width}}"

    head = f"{'work':<5}{'engine / variant':<42}{'median':>10} {'unit':<8}{'vs floor':>9}{'vs torch':>9}  "
    head += "target"
    print(head + "\n" + "-" * (len(head) + 22))
    for r in rows:
        print(f"{r['workload']:<5}{r['engine']:<42}{num(r['median'], 10, '.3f')} {r['unit']:<8}"
              f"{num(r['vs_floor'], 9, '.2f', 'x')}{num(r['vs_torch'], 9, '.2f', 'x')}  {verdict(r)}")


def machine() -> dict[str, Any]:
    blas = [f"{i['internal_api']} {i['version']} ({i['num_threads']} threads, {i.get('architecture')})"
            for i in threadpool_info() if i["user_api"] == "blas"]
    return {"cores": CORES, "platform": platform.platform(), "python": sys.version.split()[0],
            "numpy": np.__version__, "blas": blas, "actorgrad_workers": DEFAULT_WORKERS,
            "torch": torch.__version__ if torch else "n/a",
            "autograd": importlib.metadata.version("autograd") if hips else "n/a"}

