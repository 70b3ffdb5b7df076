"""Warnings that name the user's line: the first frame outside actorgrad, however deep the op that warns.

A fixed `stacklevel` names the right line only for one way of reaching the op: a public name's argument check,
a Tensor method, an nn module or a helper each add frames, and `warnings` also remembers "once per location" by
that line.
"""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep

# numpy warns of floating-point conditions (log(0), inf - inf, a cast past float16's range) where PyTorch gives
# inf or NaN silently. A filter for the warnings numpy raises inside actorgrad's modules (numpy names the module
# of the Python line that called the kernel) silences ops at no cost per op, where an errstate around each op
# costs 1-4 us; numpy called from user code still warns, and a filter the user adds later comes first.
warnings.filterwarnings(
    "ignore", r"(divide by zero|invalid value|overflow|underflow) encountered", RuntimeWarning, r"actorgrad(\.|$)"
)


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


# The messages `warn_once` has given in this process.
_warned_once: set[str] = set()
# PyTorch's `set_warn_always`: True makes `warn_once` warn every time.
warn_always = [False]


def warn_once(message: str, category: type[Warning] = UserWarning) -> None:
    """`warn`, once per process for each message, as PyTorch's TORCH_WARN_ONCE (every time under
    `set_warn_always(True)`)."""
    if warn_always[0] or message not in _warned_once:
        _warned_once.add(message)
        warn(message, category)
