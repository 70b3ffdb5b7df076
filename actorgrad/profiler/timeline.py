"""A PNG Gantt chart of a profile: one row per device track, one bar per node, coloured by pass and labelled with
its node's name where it is wide enough; or, for a single pass, coloured by node name with a legend."""

from __future__ import annotations

from typing import Any

from actorgrad.profiler.chrome import track_name

MIN_LABEL_FRACTION = 0.06  # label a bar with its node's name when it spans this share of the time axis


def save_timeline_png(prof: Any, path: str, title: str = "actorgrad backward") -> None:
    """Needs matplotlib (the `cli` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events = list(prof.events)
    origin = min((e.start_ns for e in events), default=0)
    span_ms = max(((e.end_ns - origin) / 1e6 for e in events), default=1.0) or 1.0
    tracks = sorted({(e.device, e.worker) for e in events})
    rows = {track: index for index, track in enumerate(tracks)}
    tasks = sorted({e.graph_task for e in events})
    by_name = len(tasks) == 1
    keys = sorted({e.name for e in events}) if by_name else tasks
    colours = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.5 * max(len(tracks), 1)), dpi=100)
    for e in events:
        row = rows[(e.device, e.worker)]
        start, width = (e.start_ns - origin) / 1e6, max((e.end_ns - e.start_ns) / 1e6, span_ms * 1e-4)
        colour = colours(keys.index(e.name if by_name else e.graph_task) % 10)
        ax.broken_barh([(start, width)], (row - 0.4, 0.8), facecolors=colour, edgecolors="black", linewidth=0.3)
        if not by_name and width >= span_ms * MIN_LABEL_FRACTION:  # by name, the legend says what a bar is
            ax.text(start + width / 2, row, e.name, ha="center", va="center", fontsize=7, clip_on=True)
    if by_name:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(facecolor=colours(i % 10), label=key) for i, key in enumerate(keys)], fontsize=7,
                  loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)
    ax.set_yticks(range(len(tracks)), [f"{device} {track_name(worker)}" for device, worker in tracks])
    ax.invert_yaxis()
    ax.set_xlabel("ms since the first node started")
    ax.set_title(f"{title}: {len(events)} nodes, {len(tasks)} pass(es), colour = {'node' if by_name else 'pass'}")
    ax.set_xlim(0, span_ms * 1.01)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
