"""`actorgrad.autograd.profiler`: PyTorch's older home of the profiler, for code written against it.

`profile` is `actorgrad.profile` (it records the backward nodes the engine runs; PyTorch's keyword switches
beyond `enabled` have no counterpart), `record_function` labels ranges in it, `key_averages()` sums it up.
"""

from actorgrad.profiler.events import EventList, FunctionEventAvg, record_function
from actorgrad.scheduler.trace import profile

__all__ = ["EventList", "FunctionEventAvg", "profile", "record_function"]
