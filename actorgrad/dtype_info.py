"""`finfo` and `iinfo`: the limits of a floating-point or integer dtype, with PyTorch's attribute names (`eps`,
`tiny`, `smallest_normal`, `resolution`, `bits`, and `dtype` as a name such as 'float32')."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.default_dtype import default_float

__all__ = ["finfo", "iinfo"]


def _limits_repr(kind: str, fields: dict[str, Any]) -> str:
    """PyTorch's repr: each number in %g form, the dtype by name."""
    shown = ", ".join(f"{name}={value:g}" if name != "dtype" else f"dtype={value}" for name, value in fields.items())
    return f"{kind}({shown})"


class finfo:  # noqa: N801  (PyTorch's name)
    """The limits of a floating-point dtype (the default dtype when none is given); a complex dtype gives those of
    its real and imaginary parts."""

    __hash__ = None  # type: ignore[assignment]  # as PyTorch's: equal when the dtypes are, but unhashable

    def __init__(self, type: Any = None) -> None:
        dtype = default_float() if type is None else np.dtype(type)
        if dtype.kind not in "fc":
            raise TypeError("actorgrad.finfo() requires a floating point input type. Use actorgrad.iinfo to handle "
                            "'actorgrad.finfo'")
        info = np.finfo(dtype)  # a complex dtype's finfo is its parts' dtype's
        self.bits = int(info.bits)
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)  # numpy's is this rounded to the dtype
        self.dtype = str(info.dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __repr__(self) -> str:
        return _limits_repr("finfo", {
            "resolution": self.resolution, "min": self.min, "max": self.max, "eps": self.eps,
            "smallest_normal": self.smallest_normal, "tiny": self.tiny, "dtype": self.dtype,
        })


class iinfo:  # noqa: N801  (PyTorch's name)
    """The limits of an integer dtype (bool has none, as in PyTorch)."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, type: Any) -> None:
        dtype = np.dtype(type)
        if dtype.kind == "b":
            raise TypeError("actorgrad.bool is not supported by actorgrad.iinfo")
        if dtype.kind not in "iu":
            raise TypeError("actorgrad.iinfo() requires an integer input type. Use actorgrad.finfo to handle "
                            "'actorgrad.iinfo'")
        info = np.iinfo(dtype)
        self.bits, self.max, self.min, self.dtype = int(info.bits), int(info.max), int(info.min), str(dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __repr__(self) -> str:
        return _limits_repr("iinfo", {"min": self.min, "max": self.max, "dtype": self.dtype})
