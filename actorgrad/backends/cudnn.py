"""`torch.backends.cudnn`: actorgrad uses no cuDNN, so it is never available and its flags change nothing;
they keep PyTorch's defaults and what scripts set."""

from __future__ import annotations

enabled = True
benchmark = False
benchmark_limit: int | None = None  # None: PyTorch's value on a build without cuDNN
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version() -> int | None:
    """None: no cuDNN, as PyTorch reports on a build without it."""
    return None
