"""Pictures of a recorded `actorgrad.profile()`: Chrome trace / Perfetto JSON and a PNG timeline; labelled ranges
(`record_function`) and the summary by name (`key_averages`)."""

from actorgrad.profiler.chrome import chrome_trace, write_chrome_trace
from actorgrad.profiler.events import EventList, FunctionEventAvg, record_function
from actorgrad.profiler.timeline import save_timeline_png
from actorgrad.scheduler.trace import profile

__all__ = [
    "EventList", "FunctionEventAvg", "chrome_trace", "profile", "record_function", "save_timeline_png",
    "write_chrome_trace",
]
