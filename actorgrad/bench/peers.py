"""The optional engines the benchmark compares against: torch and HIPS autograd (None when missing)."""

from typing import Any

torch: Any
hips: Any
anp: Any
try:
    import torch
except ImportError:  # optional peer
    torch = None
try:
    import autograd as hips
    import autograd.numpy as anp
except ImportError:  # optional peer
    hips = anp = None
