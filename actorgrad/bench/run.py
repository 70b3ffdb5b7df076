"""Running the suite: interleaved timed repetitions, one row per table line, and the scaling runs."""

from __future__ import annotations

import statistics
from typing import Any

from actorgrad.bench.branches import w2
from actorgrad.bench.chains import w4
from actorgrad.bench.layout import LAYOUT, PEERS
from actorgrad.bench.timing import Engines


class Progress:
    """What the suite reports as it goes; the plain one stays silent (the rich bar is in `actorgrad.bench.console`)."""

    def start(self, what: str, steps: int) -> None:
        pass

    def advance(self) -> None:
        pass


def measure(engines: Engines, repeat: int, progress: Progress, what: str) -> dict[str, list[float]]:
    """Warm every engine up once, then time `repeat` repetitions with the engines interleaved in each."""
    progress.start(what, len(engines) * (repeat + 1))
    for fn in engines.values():
        fn()
        progress.advance()
    samples: dict[str, list[float]] = {key: [] for key in engines}
    for _ in range(repeat):
        for key, fn in engines.items():
            samples[key].append(fn())
            progress.advance()
    return samples


def run_workload(name: str, repeat: int, progress: Progress | None = None,
                 tiny: bool = False) -> tuple[list[dict[str, Any]], float]:
    """Verify gradients, warm up, time `repeat` interleaved repetitions; one result row per table line."""
    spec = LAYOUT[name]
    engines, verify = spec["make"](**(spec["tiny"] if tiny else {}))
    engines = {k: fn for k, fn in engines.items() if PEERS.get(k, True) is not None}
    err = verify()
    samples = measure(engines, repeat, progress or Progress(), name)
    med = _medians(samples, scale=1)
    rows = []
    for key, label, floor_key, torch_key, target in spec["rows"]:
        row: dict[str, Any] = {"workload": name, "engine": label, "unit": spec["unit"], "median": None,
                               "vs_floor": None, "vs_torch": None, "target": None, "passed": None}
        if "/" in key:
            a, b = key.split("/")
            row.update(unit="x", median=med[a] / med[b])
        elif key in med:
            row.update(median=med[key] * spec["scale"], samples=[v * spec["scale"] for v in samples[key]])
            row["vs_floor"] = med[key] / med[floor_key] if floor_key in med else None
            row["vs_torch"] = med[key] / med[torch_key] if torch_key in med else None
        if target is not None:
            den, op, bound = target
            row["target"] = f"{op} {bound}x" + (f" {den}" if den else "")
            value = row["median"] if den is None else med[key] / med[den] if {key, den} <= set(med) else None
            if value is not None:
                row["passed"] = value <= bound if op == "<=" else value >= bound
        rows.append(row)
    return rows, err


W4_CONCURRENT_GRAPHS = (1, 4, 16, 64)


def worker_counts(cores: int) -> tuple[int, ...]:
    """1, 2, ... up to the core count (powers of two past 4, and the count itself)."""
    counts = [k for k in range(1, min(cores, 4) + 1)] + [k for k in (8, 16, 32, 64) if k < cores]
    return tuple(sorted({*counts, cores}))


def scaling_runs(repeat: int, cores: int, progress: Progress | None = None,
                 tiny: bool = False) -> dict[str, Any]:
    """W2 with 1..cores workers (BLAS 1, against the numpy floor on as many threads) and W4 with 1, 4, 16 and 64
    concurrent graphs (per-graph time, sequential and in one nursery). Medians in ms."""
    progress = progress or Progress()
    counts = worker_counts(cores)
    engines, verify = w2(scale=counts, **(LAYOUT["W2"]["tiny"] if tiny else {}))
    verify()
    keys = [f"ag_{k}w" for k in counts] + [f"floor_{k}t" for k in counts]
    med = _medians(measure({key: engines[key] for key in keys}, repeat, progress, "W2 scaling"))
    result: dict[str, Any] = {"W2": {"workers": list(counts), "actorgrad_ms": [med[f"ag_{k}w"] for k in counts],
                                     "floor_ms": [med[f"floor_{k}t"] for k in counts]}}
    w4_result: dict[str, list] = {"graphs": list(W4_CONCURRENT_GRAPHS), "concurrent_ms_per_graph": [],
                                  "sequential_ms_per_graph": []}
    for graphs in W4_CONCURRENT_GRAPHS:
        engines, verify = w4(graphs=graphs, **({"n": LAYOUT["W4"]["tiny"]["n"]} if tiny else {}))
        verify()
        med = _medians(measure({k: engines[k] for k in ("ag_seq", "ag_conc")}, repeat, progress,
                               f"W4 x{graphs}"))
        w4_result["concurrent_ms_per_graph"].append(med["ag_conc"] / graphs)
        w4_result["sequential_ms_per_graph"].append(med["ag_seq"] / graphs)
    result["W4"] = w4_result
    return result


def _medians(samples: dict[str, list[float]], scale: float = 1e3) -> dict[str, float]:
    """Each engine's median sample times `scale` (seconds to ms by default)."""
    return {key: statistics.median(values) * scale for key, values in samples.items()}
