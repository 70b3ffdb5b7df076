"""The benchmark's table: which rows each workload reports, their units and targets."""

from __future__ import annotations

from typing import Any

from actorgrad.bench.branches import w2
from actorgrad.bench.chains import w1, w4
from actorgrad.bench.networks import w3, w5
from actorgrad.bench.peers import hips, torch
from actorgrad.bench.timing import CORES, DEFAULT_WORKERS

# Rows: (key, label, floor key, torch key, target). A key "a/b" is the ratio of two medians (a speedup).
# `tiny`: the workload's arguments for the hidden `--size tiny` (tests), which checks the plumbing, not speed.
# A target (den, op, bound) compares median[key] / median[den] (or the ratio row itself when den is None).
LAYOUT: dict[str, dict[str, Any]] = {
    "W1": {"unit": "us/node", "scale": 1e6 / 2000, "make": w1, "tiny": {}, "rows": [
        ("ag", "actorgrad backward", "floor", "torch", ("torch", "<=", 1.0)),
        ("ag_traced", "actorgrad backward, traced (profile)", "floor", "torch", ("ag", "<=", 1.15)),
        ("floor", "numpy floor", None, None, None),
        ("torch", "torch backward (1 thread)", "floor", None, None),
        ("hips", "HIPS autograd (grad - fwd estimate)", "floor", "torch", None)]},
    "W2": {"unit": "ms", "scale": 1e3, "make": w2, "tiny": {"branches": 2, "depth": 1}, "rows": [
        ("ag_1w", "(a) actorgrad 1 worker, BLAS 1", "floor_1t", None, None),
        ("ag_2w", "(b) actorgrad 2 workers, BLAS 1", "floor_2t", None, ("floor_2t", "<=", 1.1)),
        ("ag_1w/ag_2w", "    speedup (a)/(b)", None, None, (None, ">=", 1.8)),
        ("ag_default", f"(c) actorgrad {DEFAULT_WORKERS} workers, BLAS free", "floor_2t", "torch",
         ("torch", "<=", 1.0)),
        ("floor_1t", "(d) numpy floor, 1 thread", None, None, None),
        ("floor_2t", "(d) numpy floor, 2 threads x 4 branches", None, None, None),
        ("floor_1t/floor_2t", "    floor speedup 1t/2t (machine)", None, None, None),
        ("torch", "(e) torch, 2 threads", "floor_2t", None, None),
        ("hips", "(e) HIPS full grad (fwd+bwd, BLAS free)", "floor_1t", "torch", None)]},
    "W3": {"unit": "ms", "scale": 1e3, "make": w3, "tiny": {"batch": 8}, "rows": [
        ("ag", "actorgrad fwd+bwd", "floor", "torch", ("floor", "<=", 1.15)),
        ("floor", "numpy floor fwd+bwd", None, None, None), ("hips", "HIPS grad", "floor", "torch", None),
        ("torch", f"torch fwd+bwd ({CORES} threads)", "floor", None, None)]},
    "W4": {"unit": "ms", "scale": 1e3, "make": w4, "tiny": {"graphs": 4, "n": 10}, "rows": [
        ("ag_seq", "actorgrad sequential", "floor", "torch", None),
        ("ag_conc", "actorgrad concurrent (one nursery)", "floor", "torch", ("torch", "<=", 1.0)),
        ("torch", "torch sequential (1 thread)", "floor", None, None),
        ("floor", "numpy floor sequential", None, None, None)]},
    "W5": {"unit": "ms", "scale": 1e3, "make": w5, "tiny": {"batch": 2}, "rows": [
        ("ag", "actorgrad fwd+bwd", "floor", "torch", ("torch", "<=", 1.5)),
        ("floor", "numpy floor fwd+bwd (im2col + BLAS)", None, None, None),
        ("torch", f"torch fwd+bwd ({CORES} threads)", "floor", None, None)]},
}
PEERS = {"torch": torch, "hips": hips}
