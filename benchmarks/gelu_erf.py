"""Exact gelu, erf and erfc on a float32 tensor (actorgrad.devices.erf_float32), against the tanh gelu as the floor.

Each row is the best time per call over many short repetitions taken round-robin, so that load from other
processes falls on all rows alike; ratios are to actorgrad's gelu(approximate="tanh") forward+backward measured in
the same run. torch's rows are added when torch is installed (one thread). Run with
`python benchmarks/gelu_erf.py [--shape 128 512] [--repeat 200]`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import actorgrad as ag
import actorgrad.nn.functional as F


def best_times(rows: dict[str, Callable[[], object]], repeat: int, calls: int = 3) -> dict[str, float]:
    """Microseconds per call of each row: the minimum over `repeat` rounds of `calls` calls, rows interleaved."""
    for run in rows.values():
        run()
    best = dict.fromkeys(rows, float("inf"))
    for _ in range(repeat):
        for name, run in rows.items():
            start = time.perf_counter()
            for _ in range(calls):
                run()
            best[name] = min(best[name], (time.perf_counter() - start) / calls)
    return {name: seconds * 1e6 for name, seconds in best.items()}


def actorgrad_rows(data: np.ndarray) -> dict[str, Callable[[], object]]:
    x = ag.tensor(data, requires_grad=True)
    seed = ag.ones_like(x)

    def forward_backward(approximate: str) -> Callable[[], None]:
        return lambda: F.gelu(x, approximate=approximate).backward(seed)

    plain = x.detach()
    return {
        "gelu tanh fwd+bwd": forward_backward("tanh"),
        "gelu exact fwd+bwd": forward_backward("none"),
        "gelu exact fwd": lambda: F.gelu(plain),
        "erf": lambda: ag.erf(plain),
        "erfc": lambda: ag.erfc(plain),
    }


def torch_rows(data: np.ndarray) -> dict[str, Callable[[], object]]:
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(1)
    x = torch.tensor(data, requires_grad=True)
    seed = torch.ones_like(x)
    plain = x.detach()
    return {
        "torch gelu tanh fwd+bwd": lambda: torch.nn.functional.gelu(x, approximate="tanh").backward(seed),
        "torch gelu exact fwd+bwd": lambda: torch.nn.functional.gelu(x).backward(seed),
        "torch erf": lambda: torch.erf(plain),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    data = np.random.default_rng(0).standard_normal(args.shape).astype(np.float32)
    times = best_times({**actorgrad_rows(data), **torch_rows(data)}, args.repeat)
    floor = times["gelu tanh fwd+bwd"]
    print(f"float32 {tuple(args.shape)}; floor: actorgrad gelu tanh fwd+bwd {floor:.1f} us")
    for name, us in times.items():
        print(f"{name:<26}{us:>10.1f} us{us / floor:>8.2f}x")


if __name__ == "__main__":
    main()
