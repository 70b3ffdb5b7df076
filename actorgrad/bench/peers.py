"""The optional engines the benchmark compares against: torch and HIPS autograd (None when missing, or when
ACTORGRAD_BENCH_PEERS=0, which `--no-peers` sets before these modules load)."""

import os
from typing import Any

__all__ = ["anp", "hips", "torch"]

torch: Any = None
hips: Any = None
anp: Any = None
if os.environ.get("ACTORGRAD_BENCH_PEERS", "1") != "0":
    try:
        import torch
    except ImportError:  # optional peer
        pass
    try:
        import autograd as hips
        import autograd.numpy as anp
    except ImportError:  # optional peer
        pass
