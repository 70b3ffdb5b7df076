"""Slow variants, excluded from the default run: `pytest -m heavy`."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import actorgrad as ag

pytestmark = pytest.mark.heavy


async def test_many_concurrent_passes_with_worker_kernels_into_a_shared_leaf(concurrent_matches_sequential):
    rng = np.random.default_rng(7)
    w = ag.tensor(rng.normal(size=(128, 128)) * 0.1, requires_grad=True)
    xs = [ag.tensor(rng.normal(size=(128, 128))) for _ in range(24)]
    losses = [((x @ w).tanh() @ w).tanh().sum() + ((x @ w).sigmoid() @ w).sum() for x in xs]
    await concurrent_matches_sequential(losses, w)


def test_benchmark_runs_and_its_gradients_match_the_floor():
    bench = Path(__file__).resolve().parent.parent / "benchmarks" / "bench.py"
    if not bench.exists():
        pytest.skip("benchmarks/ is not part of this checkout")
    result = subprocess.run(
        [sys.executable, str(bench), "--quick", "--only", "W1,W3,W4"], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gradients match the numpy floor" in result.stdout
