"""Device: where a tensor's data lives, which array module computes on it, its raw array helpers and its streams.

One instance per device, so identity is equality and a device can key per-device scheduling state cheaply.
`device("cpu")`, `device("cuda:0")`, `device("async_cpu:1")` look them up (CUDA devices are built on first use,
which is when CuPy is imported).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import numpy as np

from actorgrad.devices.array_ops import ArrayOps


class Device:
    """A place that holds arrays and runs kernels. `streams` is None for a synchronous device (the CPU, whose
    kernels run where they are called); a streamed device queues its backward kernels on its current stream."""

    __slots__ = ("type", "index", "xp", "ops", "streams", "default", "here")

    def __init__(
        self, type: str, index: int | None, xp: ModuleType, streams: Any = None, ops: ArrayOps | None = None
    ) -> None:
        self.type = type
        self.index = index
        self.xp = xp
        self.ops = ArrayOps(xp) if ops is None else ops  # a device may fuse some helpers into kernels of its own
        self.streams = streams  # a factory of new streams, or None
        self.default: Any = None  # the default stream, made on first use
        # Per thread, as CUDA's current stream: `chosen`, the streams of the `actorgrad.stream` blocks open on
        # the thread, in the order entered; `current`, the latest of them (None: the default stream).
        self.here = threading.local()

    def current_stream(self) -> Any:
        """The stream kernels queue on now from this thread (the default stream until `actorgrad.stream(s)` says
        otherwise)."""
        current = getattr(self.here, "current", None)
        return self.default_stream() if current is None else current

    def default_stream(self) -> Any:
        """The stream kernels queue on unless `actorgrad.stream(s)` says otherwise, made on first use."""
        if self.default is None:
            self.default = self.streams(self, default=True)
        return self.default

    def new_stream(self, **options: Any) -> Any:
        """A new stream of this device (for async_cpu, `delay_s=` injects a delay before each kernel)."""
        if self.streams is None:
            raise RuntimeError(f"device {self} has no streams: its kernels run synchronously")
        return self.streams(self, **options)

    def kernel_operand(self, array: Any) -> Any:
        """`array` as this device's kernels take it: a zero-dim host array beside GPU arrays as a Python scalar
        (CuPy rejects host arrays, and a numpy scalar on the left of an operator would become one again)."""
        if self.type == "cuda" and array.__class__ is np.ndarray and not array.ndim:
            return array.item()
        return array

    def asarray(self, array: Any) -> Any:
        """An array on this device holding a copy of `array`'s values (from any device)."""
        if self.type == "cuda":
            with self.xp.cuda.Device(self.index):
                return self.xp.array(array)
        get = getattr(array, "get", None)  # a CuPy array copies to the host with .get()
        return get() if get is not None and not isinstance(array, np.ndarray) else np.array(array)

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    def __reduce__(self) -> tuple:
        return (device, (str(self),))


cpu = Device("cpu", None, np)

_devices: dict[tuple[str, int | None], Device] = {("cpu", None): cpu, ("cpu", 0): cpu}
DEVICE_TYPES = ("cpu", "cuda", "async_cpu")


def _parse(spec: str, index: int | None) -> tuple[str, int | None]:
    kind, _, number = spec.partition(":")
    if kind not in DEVICE_TYPES:
        raise RuntimeError(
            f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device string: {spec}"
        )
    if number:
        if index is not None or not number.isdigit():
            raise RuntimeError(f"Invalid device string: '{spec}'")
        index = int(number)
    if kind != "cpu" and index is None:
        index = 0
    return kind, index


def device(spec: Any, index: int | None = None) -> Device:
    """The Device named by `spec`: a Device, 'cpu', 'cuda', 'cuda:1', 'async_cpu:0' (or a type and an index)."""
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"device() expects a string or a Device, got {type(spec).__name__}")
    key = _parse(spec, index)
    found = _devices.get(key)
    if found is None:
        found = _devices[key] = _build(*key)
    return found


def _build(kind: str, index: int) -> Device:
    if kind == "async_cpu":
        from actorgrad.devices.async_cpu import AsyncStream

        return Device(kind, index, np, AsyncStream)
    from actorgrad.devices.cuda import cuda_device

    return cuda_device(index)


@contextmanager
def stream(s: Any) -> Iterator[Any]:
    """`with actorgrad.stream(s):` makes `s` its device's current stream inside the block (as
    `torch.cuda.stream`): backward kernels of nodes on that device queue on it. None changes nothing.

    As CUDA's (and CuPy's), the current stream is one per thread, shared by the trio tasks on it: a block that
    awaits sees the stream of any block another task opens meanwhile. Blocks of several tasks may close in any
    order: each takes its own stream off the device's open blocks, and the latest one still open stays current."""
    if s is None:
        yield s
        return
    here = s.device.here
    chosen = here.__dict__.setdefault("chosen", [])
    chosen.append(s)
    here.current = s
    _tell_the_library(s.device)
    try:
        yield s
    finally:
        del chosen[len(chosen) - 1 - chosen[::-1].index(s)]  # this block's entry: its stream's latest
        here.current = chosen[-1] if chosen else None
        _tell_the_library(s.device)


def _tell_the_library(where: Device) -> None:
    """Make the device's current stream the array library's too (CuPy queues forward kernels on its own current
    stream, one per thread): set, not restored from a stack, so that it follows the open blocks whatever order
    they close in."""
    use = getattr(where.current_stream(), "use", None)
    if use is not None:
        use()
