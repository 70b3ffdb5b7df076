"""The PNG of the scaling runs (matplotlib, the `cli` extra)."""

from __future__ import annotations

from typing import Any


def save_scaling_png(scaling: dict[str, Any], path: str, machine: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=100)
    w2 = scaling["W2"]
    workers = w2["workers"]
    base_ag, base_floor = w2["actorgrad_ms"][0], w2["floor_ms"][0]
    left.plot(workers, [base_ag / t for t in w2["actorgrad_ms"]], "o-", label="actorgrad (workers, BLAS 1)")
    left.plot(workers, [base_floor / t for t in w2["floor_ms"]], "s--", label="numpy floor (threads)")
    left.plot(workers, workers, ":", color="grey", label="ideal")
    left.set(xlabel="workers / threads", ylabel="speedup over 1", title="W2: 8 independent branches",
             xticks=workers)
    left.legend()
    w4 = scaling["W4"]
    right.plot(w4["graphs"], [1e3 / t for t in w4["concurrent_ms_per_graph"]], "o-", label="concurrent (one nursery)")
    right.plot(w4["graphs"], [1e3 / t for t in w4["sequential_ms_per_graph"]], "s--", label="sequential")
    right.set(xscale="log", xlabel="graphs", ylabel="backward passes / s", title="W4: many small graphs",
              xticks=w4["graphs"], xticklabels=[str(g) for g in w4["graphs"]])
    right.set_ylim(bottom=0)
    right.legend()
    fig.suptitle(f"actorgrad scaling on {machine}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
