"""Python's protocols on a tensor: as a number (`float(t)`, `int(t)`, `bool(t)`, `items[t]`, `f"{t:.4f}"`) and as a
container (`len(t)`, `for row in t`, `x in t`), with PyTorch's errors and warnings. A base of Tensor, holding no
state of its own."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Iterator
from typing import Any


class PythonProtocols:
    """The methods Python's built-ins call on a tensor; Tensor keeps its array in `_data`."""

    __slots__ = ()
    _data: Any

    def item(self) -> float | int | bool:
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._data.item()

    def tolist(self) -> Any:
        return self._data.tolist()

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Any]:
        """The sub-tensors along the first dim, from one unbind (one UnbindBackward0 node, as in PyTorch); a 0-d
        tensor has none to give: PyTorch's TypeError."""
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __reversed__(self) -> Any:
        """The tensor flipped along its first dim (iterating it gives the rows last first), as PyTorch's."""
        return self if self._data.ndim == 0 else self.flip(0)

    def __contains__(self, element: Any) -> bool:
        """`element in t`: does any element equal it (a tensor or any number: complex, numpy's scalars), as in
        PyTorch."""
        if not isinstance(element, PythonProtocols | numbers.Number):
            raise RuntimeError(
                f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}."
            )
        return bool((element == self)._data.any())

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its value (`f"{loss:.4f}"`), as in PyTorch; others as their repr."""
        if self._data.ndim == 0:
            return self._data.item().__format__(spec)
        return object.__format__(self, spec)

    def __bool__(self) -> bool:
        if self._data.size != 1:
            count = "no values" if self._data.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {count} is ambiguous")
        return bool(self._data)

    def _scalar(self) -> float | int | bool:
        """The one element, for int() and float(): PyTorch raises ValueError there, where item() raises
        RuntimeError."""
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self._data.item()

    def _real_scalar(self, target: str) -> float | int | bool:
        """The one element for float() and int(): a complex one only when its imaginary part is zero, as in
        PyTorch (`target` names the C type its error names)."""
        value = self._scalar()
        if isinstance(value, complex):
            if value.imag:
                raise RuntimeError(f"value cannot be converted to type {target} without overflow")
            return value.real
        return value

    def _warn_if_tracked(self) -> None:
        """float() and complex() of a tensor that requires grad: the number leaves the graph, so PyTorch warns
        (where `.item()` and int() do not)."""
        if self.requires_grad:
            warnings.warn(
                "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                "Consider using tensor.detach() first.", UserWarning, stacklevel=3,
            )

    def __float__(self) -> float:
        self._warn_if_tracked()
        return float(self._real_scalar("double"))

    def __int__(self) -> int:
        return int(self._real_scalar("int64_t"))

    def __complex__(self) -> complex:
        self._warn_if_tracked()
        return complex(self._scalar())

    def __delitem__(self, index: Any) -> None:
        raise TypeError("Tensor does not support deleting items")

    def __index__(self) -> int:
        """Lets an integer tensor of one element index a list or slice a sequence (`items[t]`)."""
        if self._data.size != 1 or self._data.dtype.kind not in "biu":
            raise TypeError(
                f"only integer tensors of a single element can be converted to an index (got dtype "
                f"{self._data.dtype}, {self._data.size} elements)"
            )
        return int(self._data.item())
