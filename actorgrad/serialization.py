"""`save` and `load`, as PyTorch's torch.save / torch.load: any picklable object (a tensor, nested containers, the
state dicts of Modules and optimizers) in a zip file of our own layout.

The object is pickled with every Tensor (and Device) replaced by a reference, and each tensor's values stored
beside it as a `.npy` entry; `load` rebuilds each tensor as a new leaf (a Parameter stays one; `requires_grad` is
kept) on its saved device, or where `map_location` sends it. A tensor met twice in the object is stored once and
comes back as one tensor; two views of one storage come back as two tensors (PyTorch keeps them views).

`weights_only=True` (the default, as in PyTorch 2.6 and later) unpickles only containers, numbers, strings,
tensors, devices and dtypes, so loading an untrusted file cannot run code; anything else needs
`weights_only=False`.
"""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np

from actorgrad.devices import Device, cpu
from actorgrad.devices import device as as_device
from actorgrad.tensor import Tensor
from actorgrad.tensor_construction import new_leaf

__all__ = ["load", "save"]

_PICKLE = "actorgrad/data.pkl"
_FORMAT = "actorgrad/format"
_FORMAT_VERSION = b"1"

# What a weights-only load may unpickle besides containers, numbers and strings (pickled without globals).
_SAFE_GLOBALS = {
    ("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "complex"),
    ("builtins", "slice"), ("builtins", "range"), ("numpy", "dtype"), ("_codecs", "encode"),
}


class _Pickler(pickle.Pickler):
    """Pickles tensors and devices as references; the tensors' arrays go to the archive."""

    def __init__(self, file: io.BytesIO, protocol: int, archive: zipfile.ZipFile) -> None:
        super().__init__(file, protocol)
        self.archive = archive
        self.keys: dict[int, int] = {}
        self.kept: list[Tensor] = []  # keeps each tensor alive, so its id is not reused mid-pickle
        from actorgrad.nn.parameter import Parameter  # nn builds on the package that imports this module

        self.parameter = Parameter

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, Tensor):
            key = self.keys.get(id(obj))
            if key is None:
                key = self.keys[id(obj)] = len(self.keys)
                self.kept.append(obj)
                values = io.BytesIO()
                np.save(values, obj.detach().cpu().numpy(), allow_pickle=False)
                self.archive.writestr(f"actorgrad/tensors/{key}.npy", values.getvalue())
            kind = "Parameter" if isinstance(obj, self.parameter) else "Tensor"
            return ("tensor", key, kind, str(obj._device), bool(obj.requires_grad))
        if isinstance(obj, Device):
            return ("device", str(obj))
        return None


def save(obj: Any, f: Any, pickle_module: Any = pickle, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True) -> None:
    """Write `obj` to `f` (a path or a binary file object)."""
    if isinstance(f, str | os.PathLike):
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

    def find_class(self, module: str, name: str) -> Any:
        spelled = "builtins" if module == "__builtin__" else module  # protocol 2's name for it
        if self.weights_only and (spelled, name) not in _SAFE_GLOBALS and module != "numpy.dtypes":
            raise pickle.UnpicklingError(
                "Weights only load failed. Re-running `actorgrad.load` with `weights_only` set to `False` will likely "
                "succeed, but it can result in arbitrary code execution. Do it only if you got the file from a "
                f"trusted source.\nWeightsUnpickler error: Unsupported global: GLOBAL {module}.{name} was not an "
                "allowed global by default.")
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        if pid[0] == "device":
            return as_device(pid[1])
        _, key, kind, saved, requires_grad = pid
        if key in self.tensors:
            return self.tensors[key]
        values = np.load(io.BytesIO(self.archive.read(f"actorgrad/tensors/{key}.npy")), allow_pickle=False)
        target = _target(self.map_location, saved)
        where = as_device(saved) if target is None or callable(target) else target
        out = new_leaf(values if where is cpu else where.asarray(values), requires_grad, where)
        if callable(target):
            out = target(out, saved)
        if kind == "Parameter":
            from actorgrad.nn.parameter import Parameter

            out = Parameter(out, requires_grad)
        self.tensors[key] = out
        return out


def load(f: Any, map_location: Any = None, pickle_module: Any = None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """The object `save` wrote to `f`. map_location: a device (or its name) for every tensor, a dict from saved
    device names to devices, or a callable (tensor, saved device name) -> tensor."""
    if isinstance(f, str | os.PathLike):
        with open(f, "rb") as opened:
            return load(opened, map_location, weights_only=weights_only)
    if not zipfile.is_zipfile(f):
        raise RuntimeError("actorgrad.load: the file is not an archive written by actorgrad.save")
    f.seek(0)
    with zipfile.ZipFile(f) as archive:
        if _FORMAT not in archive.namelist():
            raise RuntimeError("actorgrad.load: the archive was not written by actorgrad.save")
        data = io.BytesIO(archive.read(_PICKLE))
        return _Unpickler(data, archive, map_location, weights_only is not False).load()
