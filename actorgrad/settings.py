"""PyTorch's process settings for threads and determinism, mapped onto what actorgrad has.

Threads. PyTorch's intra-op threads split one kernel over the cores; actorgrad's kernels are numpy's, whose only
multi-threaded part is BLAS, so `set_num_threads` sets the BLAS thread count (threadpoolctl) and
`get_num_threads` reads it back. PyTorch's inter-op threads run independent ops at once; actorgrad's worker
threads run independent backward kernels at once, so `set_num_interop_threads` is `set_num_workers`. While
kernels overlap on workers, the scheduler holds BLAS at cores // workers threads and then restores the count set
here (`scheduler/workers.py`).

Determinism. actorgrad's CPU kernels are deterministic, and a backward pass sums each gradient's messages in the
senders' order, so its results are bitwise the same however many workers run it. The flags are kept, and read
back, as PyTorch's, for code that sets or checks them; no op changes behaviour under them (CuPy's scatter-adds use
atomics and are not covered).

Warnings. `set_warn_always(True)` makes the warnings PyTorch gives once per process (deprecations, beta APIs) warn
every time, as PyTorch's flag does for its warn-once warnings.

Denormals. `set_flush_denormal` would set the calling thread's flush-to-zero flags, as PyTorch's does on x86 with
SSE3; numpy has no control over them, and actorgrad runs backward kernels on worker threads the flag would not
reach, so actorgrad flushes nothing and returns False, as PyTorch does on a CPU without them.

Matmul precision. `set_float32_matmul_precision` lets PyTorch use TF32 or bfloat16 passes for float32 products;
actorgrad's float32 products always run in full float32, so the setting is kept and read back only.
"""

from __future__ import annotations

import warnings
from typing import Any

from actorgrad.scheduler import get_num_workers, set_num_workers
from actorgrad.scheduler.workers import _blas, blas_threads
from actorgrad.user_warnings import warn_always

__all__ = [
    "are_deterministic_algorithms_enabled", "get_deterministic_debug_mode", "get_num_interop_threads",
    "get_float32_matmul_precision", "get_num_threads", "is_deterministic_algorithms_warn_only_enabled",
    "is_warn_always_enabled", "set_deterministic_debug_mode", "set_float32_matmul_precision", "set_flush_denormal",
    "set_num_interop_threads", "set_num_threads", "set_warn_always", "use_deterministic_algorithms",
]


def _positive_int(op: str, n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"{op} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{op} expects a positive integer")
    return n


def get_num_threads() -> int:
    """How many threads a BLAS kernel runs on."""
    return blas_threads()


def set_num_threads(n: int) -> None:
    """Run BLAS kernels on `n` threads (process-wide, as PyTorch's intra-op setting)."""
    _blas().limit(limits=_positive_int("set_num_threads", n))


def get_num_interop_threads() -> int:
    """How many backward kernels may run at once (actorgrad's worker count)."""
    return get_num_workers()


def set_num_interop_threads(n: int) -> None:
    """Let `n` backward kernels run at once: `set_num_workers(n)`."""
    set_num_workers(_positive_int("set_num_interop_threads", n))


_deterministic = [False, False]  # enabled, warn_only


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record PyTorch's determinism flag (actorgrad's CPU results are deterministic either way)."""
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    _deterministic[:] = [mode, mode and bool(warn_only)]


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic[0]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _deterministic[1]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """0 / 'default': off; 1 / 'warn': on, warn only; 2 / 'error': on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    enabled, warn_only = _deterministic
    return 0 if not enabled else 1 if warn_only else 2


_MATMUL_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = ["highest"]


def set_float32_matmul_precision(precision: str) -> None:
    """Record PyTorch's float32 matmul precision ('highest', 'high' or 'medium'); any other name warns and
    changes nothing, as in PyTorch."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in _MATMUL_PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision[0] = precision


def get_float32_matmul_precision() -> str:
    return _matmul_precision[0]


def set_warn_always(b: bool) -> None:
    """Whether PyTorch's warn-once warnings warn every time (process-wide, as PyTorch's flag)."""
    if b.__class__ is not bool:
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    warn_always[0] = b


def is_warn_always_enabled() -> bool:
    return warn_always[0]


def set_flush_denormal(mode: bool) -> bool:
    """False: actorgrad cannot flush denormals to zero (the module's docstring says why); nothing changes."""
    if mode.__class__ is not bool:
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return False
