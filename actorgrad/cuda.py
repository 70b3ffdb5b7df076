"""`actorgrad.cuda`: the part of `torch.cuda` that ordinary training scripts call (`is_available()`,
`device_count()`, `manual_seed_all(...)`, `synchronize()`, streams), on CuPy.

CuPy is imported only to answer, and never when it is not installed: `is_available()` is then False, as
`torch.cuda.is_available()` on a machine without CUDA. actorgrad draws every device's random numbers from its one
default generator, so the CUDA seeding functions seed that generator when CUDA is available, and do nothing
otherwise (PyTorch's CUDA seeds leave the CPU's generator alone, and are ignored without CUDA).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from actorgrad.devices import Device
from actorgrad.devices import device as as_device
from actorgrad.devices import stream as _stream
from actorgrad.random import default_generator

__all__ = [
    "current_device", "current_stream", "default_stream", "device_count", "empty_cache", "get_device_name",
    "initial_seed", "is_available", "manual_seed", "manual_seed_all", "memory_allocated", "memory_reserved", "seed",
    "seed_all", "set_device", "stream", "Stream", "synchronize",
]

NO_CUDA = "Torch not compiled with CUDA enabled: no CuPy or no CUDA driver or device found"


def _cupy_or_none() -> Any:
    if importlib.util.find_spec("cupy") is None:
        return None
    import cupy

    return cupy if cupy.cuda.is_available() else None


def _cupy() -> Any:
    cupy = _cupy_or_none()
    if cupy is None:
        raise RuntimeError(NO_CUDA)
    return cupy


def is_available() -> bool:
    """Whether CuPy is installed and sees a CUDA driver and device."""
    return _cupy_or_none() is not None


def device_count() -> int:
    """The number of CUDA devices (0 without CUDA, as PyTorch's)."""
    cupy = _cupy_or_none()
    return 0 if cupy is None else cupy.cuda.runtime.getDeviceCount()


def _index(device: Any) -> int:
    """The CUDA device index `device` names (None: the current device)."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    where = device if isinstance(device, Device) else as_device(device)
    if where.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {where}")
    return where.index or 0


def _cuda_device(device: Any) -> Device:
    """The CUDA Device `device` names (None: the current one)."""
    return as_device(f"cuda:{_index(device)}")


def current_device() -> int:
    """The index of the current CUDA device of this thread."""
    return _cupy().cuda.runtime.getDevice()


def set_device(device: Any) -> None:
    """Make `device` the current CUDA device of this thread (a negative index changes nothing, as PyTorch's)."""
    index = _index(device)
    if index >= 0:
        _cupy().cuda.Device(index).use()


def get_device_name(device: Any = None) -> str:
    return _cupy().cuda.runtime.getDeviceProperties(_index(device))["name"].decode()


def synchronize(device: Any = None) -> None:
    """Wait until every kernel queued on `device` (default: the current one) has run."""
    _cupy().cuda.Device(_index(device)).synchronize()


def manual_seed(seed: int) -> None:
    """Seed the generator CUDA's random numbers come from (see the module's docstring)."""
    if is_available():
        default_generator.manual_seed(int(seed))


manual_seed_all = manual_seed


def seed() -> None:
    """Seed the generator CUDA's random numbers come from with a random number (see the module's docstring)."""
    if is_available():
        default_generator.seed()


seed_all = seed


def initial_seed() -> int:
    _cupy()
    return default_generator.initial_seed()


def Stream(device: Any = None, priority: int = 0) -> Any:  # noqa: N802 - PyTorch's class name
    """A new stream of a CUDA device, for `with actorgrad.cuda.stream(s):`."""
    return _cuda_device(device).new_stream()


def current_stream(device: Any = None) -> Any:
    return _cuda_device(device).current_stream()


def default_stream(device: Any = None) -> Any:
    """The device's default stream, whatever stream is current."""
    return _cuda_device(device).default_stream()


@contextmanager
def stream(s: Any) -> Iterator[Any]:
    """`with actorgrad.cuda.stream(s):`, as `actorgrad.stream(s)`."""
    with _stream(s):
        yield s


def empty_cache() -> None:
    """Give the memory CuPy's pool holds but no array uses back to the driver."""
    cupy = _cupy_or_none()
    if cupy is not None:
        cupy.get_default_memory_pool().free_all_blocks()


def memory_allocated(device: Any = None) -> int:
    """Bytes held by live arrays in CuPy's pool (of the current device's pool)."""
    return _cupy().get_default_memory_pool().used_bytes()


def memory_reserved(device: Any = None) -> int:
    """Bytes CuPy's pool holds, in use or cached."""
    return _cupy().get_default_memory_pool().total_bytes()
