"""numpy's floating-point error setting, switched off where actorgrad computes as PyTorch does: quietly.

numpy >= 2 holds the setting in a ContextVar, which every task and worker thread inherits; setting it directly
costs a few hundred instructions, where `with np.errstate(all="ignore")` costs 10,000, mostly its Python. Most
forward ops need neither (a warnings filter in `actorgrad.user_warnings` silences the warnings numpy raises in
actorgrad's modules); these are for a backward pass and for kernels numpy runs through its own Python (the
`ndarray.sum` family), whose warnings name numpy's modules.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

import numpy as np

try:
    from numpy._core._ufunc_config import _extobj_contextvar as float_errors
except ImportError:  # numpy 1.x keeps it per thread, not per task: its warnings stay on
    float_errors = ContextVar("actorgrad_float_errors_unused", default=None)
with np.errstate(all="ignore"):
    FLOAT_ERRORS_IGNORED = float_errors.get()


class quiet_float_errors:
    """`with quiet_float_errors():` numpy's floating-point warnings off, as `np.errstate(all="ignore")`."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token: Token = float_errors.set(FLOAT_ERRORS_IGNORED)

    def __exit__(self, *exc_info: Any) -> None:
        float_errors.reset(self._token)
