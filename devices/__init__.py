"""What a device is: its array module, the raw array helpers gradient rules run on, and its streams and events.

Knows nothing of graphs. The CPU device is numpy; CUDA devices are CuPy (imported on first use); `async_cpu`
devices are numpy with asynchronous streams, for testing the stream and event path without a GPU.
"""

from actorgrad.devices.array_ops import ArrayOps, is_writeable
from actorgrad.devices.device import Device, cpu, device, stream
from actorgrad.devices.events import wait_async

__all__ = ["ArrayOps", "Device", "cpu", "device", "is_writeable", "stream", "wait_async"]
