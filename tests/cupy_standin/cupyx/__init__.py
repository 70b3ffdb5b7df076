"""cupyx for the stand-in: only `errstate(linalg=...)`, per thread, as cupyx/_ufunc_config.py has it (the other
error kinds are accepted and kept, never acted on)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

_config = threading.local()


def get_config_linalg() -> str:
    return getattr(_config, "linalg", "ignore")


@contextlib.contextmanager
def errstate(*, divide: str | None = None, over: str | None = None, under: str | None = None,
             invalid: str | None = None, linalg: str | None = None) -> Iterator[None]:
    if linalg not in (None, "ignore", "raise"):
        raise NotImplementedError(f"linalg configuration {linalg!r} is not supported")
    before = get_config_linalg()
    if linalg is not None:
        _config.linalg = linalg
    try:
        yield
    finally:
        _config.linalg = before
