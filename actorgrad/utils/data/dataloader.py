"""DataLoader, as torch.utils.data's: it walks a sampler (or an iterable dataset), fetches the samples and
collates them into batches, in the calling thread or (`num_workers > 0`) on worker threads (see worker_threads)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Generic, TypeVar

import actorgrad as ag
from actorgrad.random import Generator
from actorgrad.utils.data.collate import default_collate, default_convert
from actorgrad.utils.data.dataset import Dataset, IterableDataset
from actorgrad.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from actorgrad.utils.data.worker_threads import StreamFetcher, WorkerPool, fetch_indexed, get_worker_info

__all__ = ["DataLoader", "get_worker_info"]

_FIXED_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


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


def _warn_past_length(batches: Iterator[Any], dataset: IterableDataset, reported: int | None,
                      num_workers: int) -> Iterator[Any]:
    """`batches`, warning (as PyTorch does) at each one past the dataset length that `len(loader)` read: a sign of
    workers that each stream the whole dataset. As PyTorch's, the count of batches meets the count of samples."""
    for fetched, batch in enumerate(batches, 1):
        if reported is not None and fetched > reported:
            text = (f"Length of IterableDataset {dataset} was reported to be {reported}(when accessing "
                    f"len(dataloader)), but {fetched} samples have been fetched. ")
            if num_workers > 0:
                text += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                         "IterableDataset replica at each worker. Please see "
                         "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
            warnings.warn(text, stacklevel=2)
        yield batch


T_co = TypeVar("T_co", covariant=True)


class DataLoader(Generic[T_co]):
    """Batches of `dataset`'s samples: `batch_size` indices at a time from `sampler` (sequential, or random with
    `shuffle`; each pass over a shuffled loader draws a new order), or lists of indices from `batch_sampler`,
    collated by `collate_fn`. `batch_size=None` turns batching off (each sample is only converted).
    `num_workers > 0` loads on that many threads with PyTorch's worker semantics (see worker_threads);
    `pin_memory` and `multiprocessing_context` are accepted and have nothing to do here."""

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | None = None, batch_sampler: Sampler | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn: Callable | None = None, multiprocessing_context: Any = None,
                 generator: Generator | None = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > "
                             "0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        # Worker threads need no start method: a context is accepted with workers and ignored.
        if multiprocessing_context is not None and num_workers == 0:
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
        self.multiprocessing_context = multiprocessing_context
        self._worker_pool: WorkerPool | None = None  # kept between epochs with persistent_workers
        self._iterable_length: int | None = None  # an IterableDataset's length, once len(loader) has read it
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
        # As PyTorch, every pass draws the workers' base seed (with or without workers, so that a shuffled order
        # does not depend on num_workers).
        base_seed = int(ag.empty((), dtype=ag.int64).random_(generator=self.generator).item())
        batches = self._iter_workers(base_seed) if self.num_workers > 0 else self._iter_in_thread()
        if isinstance(self.dataset, IterableDataset):  # as PyTorch's, its iterator has no length
            return _warn_past_length(batches, self.dataset, self._iterable_length, self.num_workers)
        return _LoaderIterator(self, batches)

    def _iter_workers(self, base_seed: int) -> Iterator[Any]:
        pool = self._worker_pool
        if pool is None or pool.closed:
            pool = WorkerPool(self, base_seed)
            if self.persistent_workers:
                self._worker_pool = pool
        return pool.batches(iter(self._index_sampler), in_order=self.in_order, prefetch_factor=self.prefetch_factor,
                            timeout=self.timeout, close_at_end=not self.persistent_workers)

    def _iter_in_thread(self) -> Iterator[Any]:
        if isinstance(self.dataset, IterableDataset):
            fetch = StreamFetcher(self.dataset, self.batch_size, self.drop_last, self.collate_fn)
        else:
            fetch = partial(fetch_indexed, self.dataset, batched=self.batch_sampler is not None,
                            collate_fn=self.collate_fn)
        # map ends where a fetch raises StopIteration (a dataset's too), as PyTorch's single-process iterator does.
        return map(fetch, self._index_sampler)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            length = self._iterable_length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)
