"""`set_printoptions`: how Tensor's repr shows values, as PyTorch's (precision, threshold, edgeitems, linewidth,
profile, sci_mode). A module-global holder read by the formatter in `actorgrad/tensor.py`: printing is process-wide
in PyTorch too, and only repr reads it."""

from __future__ import annotations

import math

__all__ = ["set_printoptions"]


class PrintOptions:
    """The current options; `sci_mode` None lets the values choose (PyTorch's rule), True / False force it."""

    __slots__ = ("edgeitems", "linewidth", "precision", "sci_mode", "threshold")

    def __init__(self) -> None:
        self.precision, self.threshold, self.edgeitems, self.linewidth = PROFILES["default"]
        self.sci_mode: bool | None = None


# profile: (precision, threshold, edgeitems, linewidth)
PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}
PRINT_OPTIONS = PrintOptions()


def set_printoptions(
    precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
    linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None,
) -> None:
    """Set the print options: a profile ('default', 'short', 'full') first, then any option named. sci_mode is
    always set (None: automatic), as PyTorch's."""
    options = PRINT_OPTIONS
    if profile in PROFILES:
        options.precision, options.threshold, options.edgeitems, options.linewidth = PROFILES[profile]
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None:
            setattr(options, name, value)
    options.sci_mode = sci_mode
