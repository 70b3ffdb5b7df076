"""CUDA devices through CuPy, imported only when a CUDA device is first used.

A CudaStream wraps a `cupy.cuda.Stream`: `launch(kernel)` runs the kernel's Python on the calling thread with
the stream current, so the CuPy kernels it issues queue on that stream. Events are `cupy.cuda.Event`s; one is
awaited from trio by a host function queued after it on its stream (`launch_host_func`), which wakes the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actorgrad.devices.device import Device


def _cupy() -> Any:
    try:
        import cupy
    except ImportError as error:
        raise RuntimeError("CUDA devices need CuPy (pip install cupy-cuda12x or cupy-cuda13x)") from error
    if not cupy.cuda.is_available():
        raise RuntimeError("Torch not compiled with CUDA enabled: no CUDA driver or device found")
    return cupy


class CudaEvent:
    __slots__ = ("event", "stream")

    def __init__(self, stream: CudaStream) -> None:
        self.stream = stream
        self.event = stream.cupy.cuda.Event(block=True, disable_timing=True)  # block: synchronize() sleeps
        self.event.record(stream.stream)

    def query(self) -> bool:
        return self.event.done

    def synchronize(self) -> None:
        self.event.synchronize()

    def add_done_callback(self, callback: Callable[[], None]) -> None:
        """Call `callback` from CUDA's host-function thread once the stream has passed this event."""
        self.stream.stream.launch_host_func(lambda _: callback(), None)


class CudaStream:
    """The default stream wraps CUDA's legacy default stream, which orders itself with every blocking stream, so
    backward kernels on it follow the forward's kernels; new streams are non-blocking."""

    issues_inline = True  # launch() runs the kernel's Python now: the arrays it returns are its outputs

    def __init__(self, device: Device, default: bool = False) -> None:
        self.device = device
        self.cupy = device.xp
        with self.cupy.cuda.Device(device.index):
            self.stream = self.cupy.cuda.Stream.null if default else self.cupy.cuda.Stream(non_blocking=True)

    def context(self) -> Any:
        """Make this CuPy's current stream (forward ops inside `actorgrad.stream(s)` queue on it)."""
        return self.stream

    def launch(self, kernel: Callable[[], None]) -> None:
        with self.cupy.cuda.Device(self.device.index), self.stream:
            kernel()

    def enqueue(self, kernel: Callable[[], None]) -> None:
        self.launch(kernel)

    def wait_event(self, event: CudaEvent) -> None:
        self.stream.wait_event(event.event)

    def record_event(self) -> CudaEvent:
        return CudaEvent(self)

    def synchronize(self) -> None:
        self.stream.synchronize()


def cuda_device(index: int) -> Device:
    cupy = _cupy()
    count = cupy.cuda.runtime.getDeviceCount()
    if index >= count:
        raise RuntimeError(f"CUDA error: invalid device ordinal (cuda:{index}, {count} device(s) present)")
    return Device("cuda", index, cupy, CudaStream)
