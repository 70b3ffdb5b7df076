"""Pictures of a recorded `actorgrad.profile()`: Chrome trace / Perfetto JSON and a PNG timeline."""

from actorgrad.profiler.chrome import chrome_trace, write_chrome_trace
from actorgrad.profiler.timeline import save_timeline_png

__all__ = ["chrome_trace", "save_timeline_png", "write_chrome_trace"]
