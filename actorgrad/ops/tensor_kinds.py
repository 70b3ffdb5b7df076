"""What PyTorch lets you ask about a tensor's kind and layout, and the small conversions beside them.

actorgrad's tensors are dense and strided, on the cpu or a CUDA/async_cpu device, never sparse, quantized, nested,
meta or on PyTorch's other backends, so the `is_*` properties for those answer False as PyTorch's do for such a
tensor, and moves to those devices are refused. Also: `dim_order` (the dims from outermost to innermost in
memory), `is_set_to`, `as_subclass` (an alias of the same data as another Tensor class), `cfloat` / `cdouble`,
`const_data_ptr`, `new_empty_strided` and `nonzero_static` (nonzero padded or cut to a fixed number of rows, as
compilers want)."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.tensor import Tensor, int64, memory_owner

__all__ = ["nonzero_static"]

# PyTorch's device-kind and layout properties that are False for every tensor actorgrad can hold.
NEVER = (
    "is_ipu", "is_maia", "is_meta", "is_mkldnn", "is_mps", "is_mtia", "is_nested", "is_quantized", "is_sparse",
    "is_sparse_csr", "is_vulkan", "is_xla", "is_xpu",
)

# PyTorch's backends actorgrad lacks, and what moving a tensor (or a module) to one says.
MISSING_DEVICES = {
    "ipu": "actorgrad is not linked with support for ipu devices (it has cpu, cuda and async_cpu)",
    "xpu": "actorgrad is not compiled with XPU enabled (it has cpu, cuda and async_cpu)",
    "mtia": "actorgrad is not compiled with MTIA enabled (it has cpu, cuda and async_cpu)",
}

AMBIGUOUS_ORDER = "The tensor does not have unique dim order, or cannot map to exact one of the given memory formats."


def _outer_first(size: tuple[int, ...], stride: tuple[int, ...]) -> list[int]:
    """The dims sorted from the largest stride to the smallest by PyTorch's insertion sort (TensorIterator's
    order): a zero stride compares with nothing, and equal strides put the larger size outside."""
    def swaps(a: int, b: int) -> int:
        if stride[a] == 0 or stride[b] == 0:
            return 0
        if stride[a] != stride[b]:
            return 1 if stride[a] > stride[b] else -1
        return 1 if size[a] > size[b] else 0

    perm = list(reversed(range(len(size))))  # innermost first while sorting
    for i in range(1, len(perm)):
        j = i
        for k in range(i - 1, -1, -1):
            order = swaps(perm[k], perm[j])
            if order > 0:
                perm[k], perm[j] = perm[j], perm[k]
                j = k
            elif order < 0:
                break
    return perm[::-1]


def dim_order(self: Tensor, *, ambiguity_check: Any = False) -> tuple[int, ...]:
    """The dims from outermost to innermost in memory. `ambiguity_check=True` refuses a tensor with several
    legal orders (a size-1 dim, or two neighbouring dims of equal stride). PyTorch also takes a list of memory
    formats, of which exactly one must fit an ambiguous tensor; actorgrad names no memory formats, so a list
    refuses an ambiguous tensor as PyTorch's empty list does."""
    if not isinstance(ambiguity_check, bool | list):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    size, stride = self.shape, self.stride()
    several = any(n == 1 for n in size) or any(a == b for a, b in zip(stride, stride[1:]))
    if ambiguity_check is not False and several:
        raise RuntimeError(AMBIGUOUS_ORDER)
    return tuple(_outer_first(size, stride))


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors view the same memory with the same size, strides and offset."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not {type(tensor).__name__}")
    return (memory_owner(self) is memory_owner(tensor) and self.shape == tensor.shape
            and self.stride() == tensor.stride() and self.storage_offset() == tensor.storage_offset())


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """An instance of `cls` aliasing this tensor: the same data (changes show in both) and, recorded, an
    AliasBackward0 node, so the result stays in the graph, as PyTorch's."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. "
                        "Make sure your class inherits from Tensor.")
    alias = self[...]
    out = cls.__new__(cls)
    for slot in Tensor.__slots__:
        if slot != "__weakref__":
            setattr(out, slot, getattr(alias, slot))
    return out


def new_empty_strided(self: Tensor, size: Any, stride: Any, *, dtype: Any = None, device: Any = None,
                      requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """`empty_strided` with this tensor's dtype and device unless given."""
    from actorgrad.interop import empty_strided  # interop imports the ops package: at call time, not import time
    return empty_strided(size, stride, dtype=self.dtype if dtype is None else dtype,
                         device=self.device if device is None else device, requires_grad=requires_grad)


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """nonzero(input) as a (size, ndim) int64 tensor: its first `size` rows, padded with `fill_value` rows when
    there are fewer."""
    if not isinstance(size, int | np.integer) or isinstance(size, bool):
        raise TypeError(f"nonzero_static(): argument 'size' must be int, not {type(size).__name__}")
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    xp = input._device.xp
    found = xp.argwhere(input._data)[:size].astype(int64, copy=False)
    out = xp.full((int(size), input.ndim), fill_value, int64)
    out[: len(found)] = found
    return Tensor(out, device=input._device)


def _refused_move(kind: str) -> Any:
    def move(self: Tensor, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Tensor:
        raise RuntimeError(MISSING_DEVICES[kind])

    move.__name__ = kind
    return move


METHODS: dict[str, Any] = {
    **{kind: _refused_move(kind) for kind in MISSING_DEVICES},
    "const_data_ptr": lambda self: self.data_ptr(),
    **{name: property(lambda self: False) for name in NEVER},
    "is_distributed": lambda self: False,
    "dim_order": dim_order, "is_set_to": is_set_to, "as_subclass": as_subclass,
    "cfloat": lambda self: self.to(np.dtype(np.complex64)), "cdouble": lambda self: self.to(np.dtype(np.complex128)),
    "new_empty_strided": new_empty_strided,
    "nonzero_static": lambda self, *, size, fill_value=-1: nonzero_static(self, size=size, fill_value=fill_value),
}
