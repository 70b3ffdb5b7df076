"""What a device is: its array module and the raw array helpers gradient rules run on.

Knows nothing of graphs. The CPU device is numpy; CUDA devices come with the devices issue.
"""

from actorgrad.devices.array_ops import ArrayOps
from actorgrad.devices.device import Device, cpu

__all__ = ["ArrayOps", "Device", "cpu"]
