"""state_dict and load_state_dict: a module's parameters and persistent buffers by dotted name (`encoder.0.weight`),
saved and loaded as PyTorch's are. Module inherits them from StateDictMethods, which walks the registries
module.py keeps."""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Iterator, Mapping
from typing import Any, Self

import numpy as np

from actorgrad.tensor import Tensor, bump_version


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _is_placeholder(value: Any) -> bool:
    """Is `value` a lazy module's parameter or buffer whose shape is not known yet (nn.lazy's placeholders)?"""
    return hasattr(type(value), "materialize")


def _as_array(value: Any) -> np.ndarray:
    return value._data if isinstance(value, Tensor) else np.asarray(value)


class StateDictMethods:
    """Module's state: its own slots, and those of every module below it, under dotted names."""

    def state_dict(self, destination: dict | None = None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name, detached unless `keep_vars` (they share the
        module's arrays until something writes a new one). Keys are `prefix` + name, as in PyTorch (so pass a
        prefix ending in '.'); `_metadata` holds each module's version by its dotted path."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        metadata = getattr(destination, "_metadata", None)
        for module_prefix, module in self._prefixed_modules(prefix):
            if metadata is not None:
                metadata[module_prefix[:-1]] = {"version": module._version}
            for key, value in module._own_state(module_prefix).items():
                destination[key] = value if keep_vars or _is_placeholder(value) else value.detach()
        return destination

    # The version `state_dict()` records for each module in `_metadata`; a layer raises it when its saved
    # format changes.
    _version: int = 1

    def _prefixed_modules(self, prefix: str) -> Iterator[tuple[str, Self]]:
        """(prefix of its keys, module) for this module and every module below it, a module reached by two
        names under both, as PyTorch's `state_dict()` walks them."""
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module._prefixed_modules(f"{prefix}{name}.")

    def _own_state(self, prefix: str) -> dict[str, Tensor]:
        slots = {prefix + name: param for name, param in self._parameters.items() if param is not None}
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers:
                slots[prefix + name] = buffer
        return slots

    def _state_slots(self) -> dict[str, Tensor]:
        """Every tensor `state_dict()` holds, by dotted name."""
        slots = {}
        for module_prefix, module in self._prefixed_modules(""):
            slots.update(module._own_state(module_prefix))
        return slots

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> _IncompatibleKeys:
        """Copy the values of `state_dict` (Tensors or arrays) into this module's parameters and buffers.

        Nothing is loaded when a shape mismatches or, with `strict`, when keys are missing or unexpected; the
        error lists them all, in PyTorch's words. Each tensor receives a new array, so earlier
        `state_dict()` results keep their values, and its version goes up as after PyTorch's in-place copy.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        slots = self._state_slots()
        missing = [key for key in slots if key not in state_dict]
        unexpected = [key for key in state_dict if key not in slots]
        errors = []
        if strict and missing:
            errors.append("Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if strict and unexpected:
            errors.append("Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
        arrays = {}
        for key, current in slots.items():
            if key not in state_dict:
                continue
            array = _as_array(state_dict[key])
            if _is_placeholder(current) and not _is_placeholder(state_dict[key]):
                current.materialize(array.shape)  # a lazy module's parameter takes the checkpoint's shape
            if array.shape != current.shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {array.shape} from checkpoint, "
                    f"the shape in current model is {current.shape}."
                )
            arrays[key] = array
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors)
            )
        for key, array in arrays.items():
            current = slots[key]
            current._data = current._device.asarray(array).astype(current.dtype, copy=False)  # a copy on its device
            bump_version(current)  # PyTorch copies in place, so graphs that saved the old value refuse backward
        return _IncompatibleKeys(missing, unexpected)
