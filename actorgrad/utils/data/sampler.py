"""Samplers, as torch.utils.data's: the order in which a DataLoader visits a map-style dataset's indices, and
BatchSampler, which groups them into batches. The random ones draw from an actorgrad Generator (the default one
unless given), so `actorgrad.manual_seed` makes a run's order repeatable."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized
from itertools import islice
from typing import Any, Generic, TypeVar

import actorgrad as ag
from actorgrad.random import Generator

__all__ = [
    "BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler", "WeightedRandomSampler",
]


T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Yields dataset indices (or, for a batch sampler, lists of them); generic in what it yields, as PyTorch's."""

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _own_generator(generator: Generator | None) -> Generator:
    """`generator`, or (as PyTorch does) a fresh one seeded by a draw from the default generator, so each pass
    over the data gets a new order while the default generator's seed fixes them all."""
    if generator is not None:
        return generator
    seed = int(ag.empty((), dtype=ag.int64).random_().item())
    return Generator().manual_seed(seed)


class RandomSampler(Sampler[int]):
    """A random permutation of the indices, or `num_samples` indices drawn with replacement."""

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = _own_generator(self.generator)
        if self.replacement:
            yield from ag.randint(0, n, (self.num_samples,), generator=generator).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from ag.randperm(n, generator=generator).tolist()
        yield from ag.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order, without replacement."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in ag.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """`num_samples` indices drawn with probabilities proportional to `weights` (which need not sum to one)."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = ag.as_tensor(weights, dtype=ag.float64)
        if weights_tensor.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        yield from ag.multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Groups another sampler's indices into lists of `batch_size`; `drop_last` drops a shorter last one."""

    def __init__(self, sampler: Iterable[Any], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list]:
        indices = iter(self.sampler)
        while batch := list(islice(indices, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)
