"""How a DataLoader turns a list of samples into a batch (`default_collate`) or a single sample into tensors
(`default_convert`, with batching off), recursing into dicts, tuples, named tuples and lists as PyTorch does."""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping, MutableSequence, Sequence
from typing import Any

import numpy as np

import actorgrad as ag
from actorgrad.tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _rebuild(like: Any, values: dict | list) -> Any:
    """`values` in a container of `like`'s type, as PyTorch does it: a mutable one is copied (so a defaultdict,
    or a dict subclass whose constructor takes other arguments, keeps its type and attributes) and filled in,
    another is built from the values; where that fails, the plain dict or list."""
    try:
        if isinstance(like, MutableMapping):
            clone = copy.copy(like)
            clone.update(values)
            return clone
        if isinstance(like, MutableSequence):
            clone = copy.copy(like)
            for i, value in enumerate(values):
                clone[i] = value
            return clone
        return type(like)(values)
    except TypeError:
        return values


def default_convert(data: Any) -> Any:
    """Numpy arrays (not of strings or objects) become tensors, inside containers too; everything else is kept."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray | np.generic) and data.dtype.kind not in "SaUO":
        return ag.as_tensor(data)
    if isinstance(data, Mapping):
        return _rebuild(data, {key: default_convert(value) for key, value in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(value) for value in data))
    if isinstance(data, tuple):
        return [default_convert(value) for value in data]
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        return _rebuild(data, [default_convert(value) for value in data])
    return data


def default_collate(batch: Sequence[Any]) -> Any:
    """Stack a list of samples into one batch: tensors stack along a new first dim, numpy arrays and numbers
    become tensors (Python floats float64, ints int64), strings stay a list, and dicts, named tuples and
    sequences collate field by field (a plain tuple's fields come back as a list, as in PyTorch)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return ag.stack(list(batch), 0)
    if isinstance(elem, str | bytes):  # numpy's str_ and bytes_ too
        return batch
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "SaUO":
            raise TypeError(_ERROR.format(elem.dtype))
        return default_collate([ag.as_tensor(sample) for sample in batch])
    if isinstance(elem, np.bool_ | np.number):
        # as PyTorch's, a list of numpy scalars of several dtypes promotes as tensors do (int16 and float16 give
        # float16), not as numpy does
        return ag.as_tensor(list(batch))
    if isinstance(elem, float):
        return ag.tensor(list(batch), dtype=ag.float64)
    if isinstance(elem, int):
        return ag.tensor(list(batch))
    if isinstance(elem, Mapping):
        return _rebuild(elem, {key: default_collate([sample[key] for sample in batch]) for key in elem})
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(fields) for fields in zip(*batch)))
    if isinstance(elem, Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [default_collate(field) for field in zip(*batch)]
        return fields if isinstance(elem, tuple) else _rebuild(elem, fields)
    raise TypeError(_ERROR.format(type(elem)))
