"""How a Tensor prints: PyTorch's layout of the values (one shared format and width, summarized past the
print options' threshold), and the suffixes naming what the values do not show."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from actorgrad.default_dtype import default_complex, default_float
from actorgrad.devices import cpu
from actorgrad.print_options import PRINT_OPTIONS

if TYPE_CHECKING:
    from actorgrad.tensor import Tensor

_INT64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)

# Torch's print options (`set_printoptions`): tensors over `threshold` elements show only `edgeitems` items at
# each end of every axis, and rows wrap at `linewidth` characters.
_PREFIX = "tensor("


def _edges(data: np.ndarray) -> np.ndarray:
    """The elements a summarized tensor shows, so the shared width is measured on what is printed."""
    edge = PRINT_OPTIONS.edgeitems
    for axis, n in enumerate(data.shape):
        if n > 2 * edge:
            data = np.take(data, [*range(edge), *range(n - edge, n)], axis=axis)
    return data


def _whole(v: float) -> str:
    """A whole float as torch prints it, `3.`, so it still reads as a float; nan and inf stay bare."""
    return f"{v:.0f}." if np.isfinite(v) else f"{v:.0f}"


def _element_format(data: np.ndarray) -> tuple[Any, int]:
    """One format for every element and the width they are right-aligned to, chosen as torch does: floats print
    as `1.` when all finite nonzero values are whole, `%.4e` when their magnitudes span over 1000x or leave
    [1e-4, 1e8], else `%.4f` (the precision and a forced sci_mode from the print options); the width ignores zeros
    and non-finite values."""
    if data.dtype.kind != "f":
        return str, max(len(str(v)) for v in data.ravel().tolist())
    values = data[np.isfinite(data) & (data != 0)].astype(np.float64)
    if not values.size:
        return _whole, 1
    magnitudes = np.abs(values)
    low, high = magnitudes.min(), magnitudes.max()
    precision, sci_mode = PRINT_OPTIONS.precision, PRINT_OPTIONS.sci_mode
    if sci_mode is None:
        sci_mode = high / low > 1000 or high > 1e8 or low < 1e-4
    if sci_mode:
        text = f"{{:.{precision}e}}".format
    elif np.all(values == np.ceil(values)):
        text = _whole
    else:
        text = f"{{:.{precision}f}}".format
    return text, max(len(text(v)) for v in values.tolist())


def _complex_format(data: np.ndarray) -> tuple[Any, int]:
    """torch's complex elements: the real parts formatted and right-aligned as a tensor of them would be, then the
    imaginary parts, formatted so on their own but never padded, signed and with a j; a line is laid out with the
    width of both parts."""
    real_text, real_width = _element_format(data.real)
    imag_text, imag_width = _element_format(data.imag)

    def text(v: complex) -> str:
        imag = imag_text(v.imag) + "j"
        return real_text(v.real).rjust(real_width) + (imag if imag[0] in "+-" else "+" + imag)

    return text, real_width + imag_width + 1


def _format_values(data: np.ndarray, text: Any, width: int, indent: int, summarize: bool, pad: bool = True) -> str:
    """`data` nested in brackets; `indent` is the column its opening bracket sits in. Elements are right-aligned
    to `width` when `pad` (complex ones align only their real parts, as torch's)."""
    if data.ndim == 0:
        return text(data.item()).rjust(width if pad else 0)
    edge = PRINT_OPTIONS.edgeitems
    cut = summarize and len(data) > 2 * edge
    if data.ndim == 1:
        items = [text(v).rjust(width if pad else 0) for v in data.tolist()]
        if cut:
            items[edge:-edge] = [" ..."]
        per_line = max(1, (PRINT_OPTIONS.linewidth - indent) // (width + 2))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = [_format_values(row, text, width, indent + 1, summarize, pad) for row in data]
    if cut:
        rows[edge:-edge] = ["..."]
    return "[" + ("," + "\n" * (data.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def format_tensor(t: Tensor) -> str:
    """`repr(t)` as PyTorch prints it: the values, then what they do not show (device, dtype, grad_fn)."""
    data = t._data
    suffixes = []
    if t._device is not cpu:
        suffixes.append(f"device='{t._device}'")
        data = cpu.asarray(data)
    if data.size:
        summarize = data.size > PRINT_OPTIONS.threshold
        if not PRINT_OPTIONS.edgeitems:
            # torch names the shape whenever edgeitems is 0, since a summary then shows no values at all.
            suffixes.append(f"size={data.shape}")
        if summarize and not PRINT_OPTIONS.edgeitems and data.ndim:
            text = _PREFIX + "[...]"
        else:
            is_complex = data.dtype.kind == "c"
            element_text, width = (_complex_format if is_complex else _element_format)(
                _edges(data) if summarize else data)
            text = _PREFIX + _format_values(data, element_text, width, len(_PREFIX), summarize, not is_complex)
        shown_dtypes = (default_float(), default_complex(), _INT64, _BOOL)
    else:
        # No values show the shape or whether it holds ints or bools, so those are named.
        text = _PREFIX + "[]"
        if data.ndim != 1:
            suffixes.append(f"size={data.shape}")
        shown_dtypes = (default_float(),)
    if data.dtype not in shown_dtypes:
        suffixes.append(f"dtype=actorgrad.{data.dtype}")
    if t._grad_fn is not None:
        node = t._grad_fn.name().removeprefix("torch::autograd::")  # PyTorch shows its type's name: CopySlices
        suffixes.append(f"grad_fn=<{node}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    # A suffix that would run past the line width starts a new line, indented under the first value.
    line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line + len(suffix) + 2 > PRINT_OPTIONS.linewidth:
            text += ",\n" + " " * len(_PREFIX) + suffix
            line = len(_PREFIX) + len(suffix)
        else:
            text += ", " + suffix
            line += len(suffix) + 2
    return text + ")"
