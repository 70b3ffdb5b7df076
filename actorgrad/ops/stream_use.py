"""Tensor.record_stream: keep a tensor's memory from reuse until the work another stream has queued on it is done.

A CUDA memory pool (CuPy's, as PyTorch's caching allocator) hands freed memory to the next allocation on the
stream that allocated it, so a kernel still reading or writing the tensor on another stream could race a new
tensor's writes; an async_cpu stream's kernels likewise run on their own thread. As PyTorch's, `record_stream(s)`
makes the tensor's deallocation wait for the work queued on `s` at that moment: when the tensor dies, an event is
recorded on `s`, and its array is held until the event completes (freed at a later `record_stream`, or by
`release_recorded()`), the event-based synchronization actorgrad's streams use everywhere else.
"""

from __future__ import annotations

import weakref
from typing import Any

from actorgrad.tensor import Tensor

__all__: list[str] = []

# (event, array) pairs: arrays of dead tensors held until their stream passes the event.
_held: list[tuple[Any, Any]] = []


def release_recorded() -> int:
    """Free the held arrays whose streams have finished the recorded work; returns how many are still held."""
    _held[:] = [(event, array) for event, array in _held if not event.query()]
    return len(_held)


def _hold_until_done(stream: Any, array: Any) -> None:
    _held.append((stream.record_event(), array))


def record_stream(self: Tensor, stream: Any) -> None:
    """Mark the tensor as used by `stream` (a stream of the tensor's device): its memory is not freed for reuse
    until the work queued on `stream` when the tensor is deallocated has completed."""
    if not hasattr(stream, "record_event"):
        raise RuntimeError("unknown parameter type")
    device = self._device
    if device.streams is None:
        raise RuntimeError(f"record_stream: a tensor on {device} has no streams to record: its kernels run "
                           f"synchronously, so its memory is never reused early")
    if getattr(stream, "device", device) is not device:
        raise RuntimeError(f"record_stream: the stream belongs to {stream.device}, the tensor is on {device}")
    release_recorded()
    weakref.finalize(self, _hold_until_done, stream, self._data)


METHODS = {"record_stream": record_stream}
