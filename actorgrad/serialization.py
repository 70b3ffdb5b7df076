"""`save` and `load`, as PyTorch's torch.save / torch.load: any picklable object (a tensor, nested containers, the
state dicts of Modules and optimizers) in a zip file of our own layout.

The object is pickled with every Tensor (and Device) replaced by a reference, and each tensor's values stored
beside it as a `.npy` entry; `load` rebuilds each tensor as a new leaf (a Parameter stays one; `requires_grad` is
kept) on its saved device, or where `map_location` sends it. A tensor met twice in the object is stored once and
comes back as one tensor. As PyTorch's, a cpu tensor's whole memory is stored once per file, so tensors that shared
memory (a base and its views, a state dict's tied weights) share it again after a load onto the cpu, each at its
saved offset and strides, as pickling them together does (`Tensor.__reduce_ex__`).

`weights_only=True` (the default, as in PyTorch 2.6 and later) unpickles only containers, numbers, strings,
tensors, devices and dtypes, so loading an untrusted file cannot run code; anything else needs
`weights_only=False`, or its classes and functions allowed by `add_safe_globals` / `safe_globals`.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from actorgrad.devices import Device, cpu
from actorgrad.devices import device as as_device
from actorgrad.ops.storage_methods import memory_place, placed
from actorgrad.tensor import Tensor
from actorgrad.tensor_construction import new_leaf

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "safe_globals", "save"]

_PICKLE = "actorgrad/data.pkl"
_FORMAT = "actorgrad/format"
_FORMAT_VERSION = b"2"

# What a weights-only load may unpickle besides containers, numbers and strings (pickled without globals).
_SAFE_GLOBALS = {
    ("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "complex"),
    ("builtins", "slice"), ("builtins", "range"), ("builtins", "bytearray"), ("collections", "Counter"),
    ("numpy", "dtype"), ("_codecs", "encode"),
}
_added_globals: list[Any] = []  # what add_safe_globals allowed besides: classes, functions, (object, "module.name")


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Let weights-only loads build these classes and call these functions (each may be given as
    `(object, "module.name")` when it is pickled under another name), as PyTorch's: for checkpoints that hold
    objects of the user's own trusted classes."""
    _added_globals.extend(safe_globals)


def get_safe_globals() -> list[Any]:
    """What add_safe_globals has allowed."""
    return list(_added_globals)


def clear_safe_globals() -> None:
    """Forget what add_safe_globals allowed."""
    _added_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list[Any]) -> Iterator[None]:
    """add_safe_globals for the loads inside the block only."""
    before = list(_added_globals)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _added_globals[:] = before


def _allowed_by_user(qualified: str) -> Any:
    """The object add_safe_globals allowed under the name `qualified` ("module.name"), else None."""
    for entry in _added_globals:
        obj, name = entry if isinstance(entry, tuple) else (entry, f"{entry.__module__}.{entry.__qualname__}")
        if name == qualified:
            return obj
    return None


class _Pickler(pickle.Pickler):
    """Pickles tensors and devices as references; the tensors' arrays go to the archive."""

    def __init__(self, file: io.BytesIO, protocol: int, archive: zipfile.ZipFile) -> None:
        super().__init__(file, protocol)
        self.archive = archive
        self.keys: dict[int, int] = {}
        self.memories: dict[Any, int] = {}  # a memory's (address, bytes, dtype) -> its entry's number
        self.kept: list[Any] = []  # keeps each tensor and memory alive, so its id is not reused mid-pickle
        from actorgrad.nn.parameter import Parameter  # nn builds on the package that imports this module

        self.parameter = Parameter

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, Tensor):
            key = self.keys.get(id(obj))
            if key is None:
                key = self.keys[id(obj)] = len(self.keys)
                self.kept.append(obj)
            memory, place = self._memory(obj)
            kind = "Parameter" if isinstance(obj, self.parameter) else "Tensor"
            return ("tensor", key, kind, str(obj._device), bool(obj.requires_grad), memory, place)
        if isinstance(obj, Device):
            return ("device", str(obj))
        return None

    def _memory(self, t: Tensor) -> tuple[int, tuple | None]:
        """The number of the entry holding `t`'s values, and where `t` lies in it: (byte offset, shape, strides),
        or None when the entry holds exactly `t`'s values (a device tensor's, or one that views its memory as
        another dtype)."""
        owner, place = memory_place(t)
        shared = place is not None
        # a memory is known by where it lies: a permuted copy's is a new 1-d array over it at each call
        known = (owner.ctypes.data, owner.nbytes, owner.dtype.str) if shared else None
        number = self.memories.get(known) if shared else None
        if number is None:
            number = len(self.memories)
            self.memories[known if shared else -1 - number] = number
            self.kept.append(owner)
            values = io.BytesIO()
            np.save(values, owner if shared else t.detach().cpu().numpy(), allow_pickle=False)
            self.archive.writestr(f"actorgrad/tensors/{number}.npy", values.getvalue())
        return number, place


def save(obj: Any, f: Any, pickle_module: Any = pickle, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True) -> None:
    """Write `obj` to `f` (a path or a binary file object)."""
    if isinstance(f, str | os.PathLike):
        parent = os.path.dirname(os.fspath(f))
        if parent and not os.path.isdir(parent):
            raise RuntimeError(f"Parent directory {parent} does not exist.")
        with open(f, "wb") as opened:
            save(obj, opened, pickle_module, pickle_protocol)
        return
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(_FORMAT, _FORMAT_VERSION)
        data = io.BytesIO()
        _Pickler(data, max(pickle_protocol, 2), archive).dump(obj)
        archive.writestr(_PICKLE, data.getvalue())


def _target(map_location: Any, saved: str) -> Device | Callable | None:
    """Where a tensor saved on `saved` goes: a Device, a callable to apply, or None (its saved device)."""
    if map_location is None:
        return None
    if isinstance(map_location, dict):
        return as_device(map_location[saved]) if saved in map_location else None
    if callable(map_location) and not isinstance(map_location, Device):
        return map_location
    return as_device(map_location)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, archive: zipfile.ZipFile, map_location: Any, weights_only: bool) -> None:
        super().__init__(file)
        self.archive, self.map_location, self.weights_only = archive, map_location, weights_only
        self.tensors: dict[int, Tensor] = {}
        self.memories: dict[int, np.ndarray] = {}

    def find_class(self, module: str, name: str) -> Any:
        spelled = "builtins" if module == "__builtin__" else module  # protocol 2's name for it
        if self.weights_only and (spelled, name) not in _SAFE_GLOBALS and module != "numpy.dtypes":
            allowed = _allowed_by_user(f"{spelled}.{name}")
            if allowed is not None:
                return allowed
            qualified = f"{module}.{name}"
            raise pickle.UnpicklingError(
                "Weights only load failed. Re-running `actorgrad.load` with `weights_only` set to `False` will likely "
                "succeed, but it can result in arbitrary code execution. Do it only if you got the file from a "
                f"trusted source.\nWeightsUnpickler error: Unsupported global: GLOBAL {qualified} was not an "
                f"allowed global by default. Please use `actorgrad.serialization.add_safe_globals([{qualified}])` or "
                f"the `actorgrad.serialization.safe_globals([{qualified}])` context manager to allowlist this global "
                "if you trust this class/function.")
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        if pid[0] == "device":
            return as_device(pid[1])
        _, key, kind, saved, requires_grad, *where_stored = pid
        if key in self.tensors:
            return self.tensors[key]
        number, place = where_stored or (key, None)  # files of format 1 hold each tensor's own values
        memory = self.memories.get(number)
        if memory is None:
            entry = io.BytesIO(self.archive.read(f"actorgrad/tensors/{number}.npy"))
            memory = self.memories[number] = np.load(entry, allow_pickle=False)
        values = placed(memory, place)
        target, out = _target(self.map_location, saved), None
        if callable(target):  # as PyTorch's, it gets the values on the cpu; its None means the saved device
            out, target = target(new_leaf(values, requires_grad, cpu), saved), None
        if out is None:
            where = as_device(saved) if target is None else target
            out = new_leaf(values if where is cpu else where.asarray(values), requires_grad, where)
        if kind == "Parameter":
            from actorgrad.nn.parameter import Parameter

            out = Parameter(out, requires_grad)
        self.tensors[key] = out
        return out


def load(f: Any, map_location: Any = None, pickle_module: Any = None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """The object `save` wrote to `f`. map_location: a device (or its name) for every tensor, a dict from saved
    device names to devices, or a callable (tensor on the cpu, saved device name) -> tensor, or None for the
    saved device. Naming a `pickle_module` without `weights_only` unpickles everything, as in PyTorch."""
    if weights_only is None:  # as PyTorch's: naming a pickle module asks for a full unpickle
        weights_only = pickle_module is None
    elif weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if isinstance(f, str | os.PathLike):
        with open(f, "rb") as opened:
            return load(opened, map_location, weights_only=weights_only)
    start = f.tell()
    if not zipfile.is_zipfile(f):
        f.seek(start)
        head = f.read(1)
        if not head:
            raise EOFError("Ran out of input")
        key = head.decode("latin-1")
        raise pickle.UnpicklingError(
            f"actorgrad.load: the file is not an archive written by actorgrad.save (invalid load key, {key!r}).")
    f.seek(start)
    with zipfile.ZipFile(f) as archive:
        if _FORMAT not in archive.namelist():
            raise RuntimeError("actorgrad.load: the archive was not written by actorgrad.save")
        data = io.BytesIO(archive.read(_PICKLE))
        return _Unpickler(data, archive, map_location, weights_only).load()
