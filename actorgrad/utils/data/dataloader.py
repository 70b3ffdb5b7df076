"""DataLoader, as torch.utils.data's, loading in the calling thread: it walks a sampler (or an iterable
dataset), fetches the samples and collates them into batches. Worker processes are not supported."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from actorgrad.random import Generator
from actorgrad.utils.data.collate import default_collate, default_convert
from actorgrad.utils.data.dataset import Dataset, IterableDataset
from actorgrad.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]

_FIXED_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


def get_worker_info() -> None:
    """None, as in PyTorch's main process: every sample is loaded in the calling thread, never in a worker."""
    return None


class _RepeatNone(Sampler):
    """The sampler of an iterable dataset: its items come from the dataset's own iterator."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class _LoaderIterator:
    """One pass over a DataLoader of a map-style dataset: its batches, and (as PyTorch's iterator has) the
    loader's length."""

    def __init__(self, loader: DataLoader, batches: Iterator[Any]) -> None:
        self._loader = loader
        self._batches = batches

    def __iter__(self) -> _LoaderIterator:
        return self

    def __next__(self) -> Any:
        return next(self._batches)

    def __len__(self) -> int:
        return len(self._loader)


T_co = TypeVar("T_co", covariant=True)


class DataLoader(Generic[T_co]):
    """Batches of `dataset`'s samples: `batch_size` indices at a time from `sampler` (sequential, or random with
    `shuffle`; each pass over a shuffled loader draws a new order), or lists of indices from `batch_sampler`,
    collated by `collate_fn`. `batch_size=None` turns batching off (each sample is only converted)."""

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | None = None, batch_sampler: Sampler | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn: Callable | None = None, multiprocessing_context: Any = None,
                 generator: Generator | None = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if num_workers > 0:
            raise ValueError(f"num_workers={num_workers}: actorgrad's DataLoader loads in the calling thread and "
                             "has no worker processes; use num_workers=0")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > "
                             "0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None:
            raise ValueError("multiprocessing_context can only be used with multi-process loading "
                             f"(num_workers > 0), but got num_workers={num_workers}")

        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None:
            if iterable:
                sampler = _RepeatNone()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.timeout = timeout
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.worker_init_fn = worker_init_fn
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self._initialized = True

    def __setattr__(self, attr: str, value: Any) -> None:
        if self.__dict__.get("_initialized") and attr in _FIXED_AFTER_INIT:
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, value)

    @property
    def _index_sampler(self) -> Sampler:
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def __iter__(self) -> Iterator[Any]:
        if isinstance(self.dataset, IterableDataset):  # as PyTorch's, its iterator has no length
            return self._iter_stream()
        return _LoaderIterator(self, self._iter_indexed())

    def _iter_indexed(self) -> Iterator[Any]:
        # A dataset that can fetch many samples at once says so with __getitems__, as in PyTorch.
        fetch_many = getattr(self.dataset, "__getitems__", None)
        for index in self._index_sampler:
            if self.batch_sampler is None:
                yield self.collate_fn(self.dataset[index])
            elif fetch_many is not None:
                yield self.collate_fn(fetch_many(index))
            else:
                yield self.collate_fn([self.dataset[i] for i in index])

    def _iter_stream(self) -> Iterator[Any]:
        samples = iter(self.dataset)
        if self.batch_size is None:
            yield from map(self.collate_fn, samples)
            return
        while batch := [sample for _, sample in zip(range(self.batch_size), samples)]:
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)
