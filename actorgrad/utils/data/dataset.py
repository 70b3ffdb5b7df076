"""Datasets, as torch.utils.data's: map-style (`__getitem__` and `__len__`) and iterable-style (`__iter__`), and
the ways to combine and split them."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import actorgrad as ag
from actorgrad.random import Generator
from actorgrad.tensor import Tensor

__all__ = [
    "ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "StackDataset", "Subset", "TensorDataset",
    "random_split",
]


T_co = TypeVar("T_co", covariant=True)


def _fetch_many(dataset: Any, indices: list) -> list:
    """`dataset`'s samples at `indices`, through its own `__getitems__` where it has one."""
    fetch_many = getattr(dataset, "__getitems__", None)
    if callable(fetch_many):
        return fetch_many(indices)
    return [dataset[i] for i in indices]


class Dataset(Generic[T_co]):
    """A map from keys (usually the indices 0 ... len - 1) to samples; `a + b` concatenates two. Generic in the
    sample type, as PyTorch's, so that typed code can subclass `Dataset[Sample]`."""

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A stream of samples (`__iter__`), for data that cannot be indexed; `a + b` chains two."""

    def __iter__(self) -> Iterator:
        raise NotImplementedError(f"Subclasses of IterableDataset should implement __iter__. {type(self).__name__}")

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample i is the tuple of every tensor's row i."""

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple:
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset[T_co]):
    """Sample i gathers sample i of each dataset, as a tuple (datasets given by position) or a dict (by name)."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        datasets = list(args or kwargs.values())
        self._length = len(datasets[0])
        if any(self._length != len(dataset) for dataset in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets: tuple | dict = args or kwargs

    def __getitem__(self, index: Any) -> tuple | dict:
        if isinstance(self.datasets, dict):
            return {key: dataset[index] for key, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices: list) -> list[tuple | dict]:
        """The samples at `indices` in one call, each dataset fetching its part of them at once where it can."""
        named = self.datasets if isinstance(self.datasets, dict) else dict(enumerate(self.datasets))
        columns = {}
        for key, dataset in named.items():
            column = _fetch_many(dataset, indices)
            if len(column) != len(indices):
                raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(column)}")
            columns[key] = column
        if isinstance(self.datasets, dict):
            return [{key: column[j] for key, column in columns.items()} for j in range(len(indices))]
        return [tuple(column[j] for column in columns.values()) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[T_co]):
    """The samples of several map-style datasets one after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(dataset, IterableDataset) for dataset in self.datasets):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(dataset) for dataset in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> Any:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """The samples of several iterable datasets one after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator:
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from dataset

    def __len__(self) -> int:
        return sum(len(dataset) for dataset in self.datasets)


class Subset(Dataset[T_co]):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        """The samples at `indices` in one call: how a DataLoader fetches a batch, as in PyTorch."""
        return _fetch_many(self.dataset, [self.indices[i] for i in indices])

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset, lengths: Sequence[int | float],
                 generator: Generator | None = None) -> list[Subset]:
    """Split `dataset` at random into subsets of the given lengths, or fractions of its length (the remainder of
    rounding down goes one by one to the first subsets)."""
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        counts = [math.floor(len(dataset) * fraction) for fraction in lengths]
        for i in range(len(dataset) - sum(counts)):
            counts[i % len(counts)] += 1
        for i, count in enumerate(counts):
            if count == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = counts
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = ag.randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]
