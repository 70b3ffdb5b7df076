"""DataLoader workers as threads: PyTorch's multi-process loading semantics (batches dispatched round-robin,
results in sampler order, `prefetch_factor * num_workers` batches in flight, a copy of an IterableDataset per
worker, `get_worker_info`, `worker_init_fn`, per-worker seeds, persistent workers, timeouts, wrapped worker
errors) run on threads, since actorgrad's tensors cannot be shared between processes; numpy releases the GIL in
most of its kernels, so loading overlaps with training.

Differences from processes, by necessity: a map-style dataset is shared by the workers (not copied), and random ops
without `generator=` in a worker draw from the one default generator; `get_worker_info().rng` holds per-worker
generators seeded from the worker's seed, as PyTorch's thread workers have.
"""

from __future__ import annotations

import copy
import itertools
import queue
import random
import sys
import threading
import traceback
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from actorgrad.random import Generator
from actorgrad.utils.data.dataset import Dataset, IterableDataset

__all__ = ["StreamFetcher", "WorkerInfo", "WorkerPool", "WorkerRNG", "fetch_indexed", "get_worker_info"]


@dataclass(frozen=True, slots=True)
class WorkerRNG:
    """A worker's own random generators (Python's, actorgrad's and numpy's), seeded from its seed."""

    random_generator: random.Random
    torch_generator: Generator
    numpy_generator: np.random.Generator


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What a worker knows about itself, as PyTorch's: its id (0 to num_workers - 1), the worker count, its seed
    (the loader's base seed + id) and its dataset (for an IterableDataset, this worker's own copy)."""

    id: int
    num_workers: int
    seed: int
    dataset: Dataset
    rng: WorkerRNG | None = None
    worker_method: str | None = "thread"


_this_thread = threading.local()


def get_worker_info() -> WorkerInfo | None:
    """The calling worker's WorkerInfo, or None outside a DataLoader worker (in the main thread), as PyTorch's:
    an IterableDataset's `__iter__` reads it to load only its own share of the data."""
    return getattr(_this_thread, "info", None)


def fetch_indexed(dataset: Dataset, index: Any, batched: bool, collate_fn: Callable[[Any], Any]) -> Any:
    """One batch of a map-style dataset: the samples at `index` (a list of indices when `batched`), through the
    dataset's `__getitems__` when it has one, collated."""
    if not batched:
        return collate_fn(dataset[index])
    fetch_many = getattr(dataset, "__getitems__", None)
    return collate_fn(fetch_many(index) if fetch_many else [dataset[i] for i in index])


class StreamFetcher:
    """Batches from one pass over an IterableDataset: `batch_size` samples at a time (one sample, converted, when
    None); StopIteration once the samples run out (or only a short batch is left under `drop_last`)."""

    def __init__(self, dataset: IterableDataset, batch_size: int | None, drop_last: bool,
                 collate_fn: Callable[[Any], Any]) -> None:
        self._samples = iter(dataset)
        self._batch_size = batch_size
        self._drop_last = drop_last
        self._collate_fn = collate_fn
        self._ended = False

    def __call__(self, index: Any = None) -> Any:
        if self._ended:
            raise StopIteration
        if self._batch_size is None:
            return self._collate_fn(next(self._samples))
        batch = list(itertools.islice(self._samples, self._batch_size))
        self._ended = len(batch) < self._batch_size
        if not batch or (self._ended and self._drop_last):
            raise StopIteration
        return self._collate_fn(batch)


class _KeyErrorText(str):
    """A KeyError's message shown as written: KeyError prints the repr of its argument, which would turn the
    traceback's line breaks into '\\n'."""

    def __repr__(self) -> str:
        return str(self)


class WorkerError:
    """An exception raised in a worker, carried to the main thread with its traceback as text."""

    def __init__(self, worker_id: int) -> None:
        kind, error, trace = sys.exc_info()
        self.kind = kind
        self.text = (f"Caught {kind.__name__} in DataLoader worker process {worker_id}.\nOriginal "
                     + "".join(traceback.format_exception(kind, error, trace)))

    def reraise(self) -> None:
        """Raise the worker's exception type in the calling thread, its message PyTorch's 'Caught ...' text."""
        try:
            error = self.kind(_KeyErrorText(self.text) if self.kind is KeyError else self.text)
        except Exception:  # an exception type that takes other arguments
            raise RuntimeError(self.text) from None
        raise error


@dataclass(frozen=True, slots=True)
class _Ended:
    """A worker's IterableDataset copy has run out."""

    worker_id: int


_RESUME = object()  # a task: start a new epoch (a persistent worker's fresh pass over its dataset)


def _serve(info: WorkerInfo, tasks: queue.SimpleQueue, results: queue.SimpleQueue, init_fn: Callable | None,
           make_fetcher: Callable[[Dataset], Callable[[Any], Any]], streaming: bool) -> None:
    """A worker thread's loop: fetch each task's batch and put (task number, batch) on `results`; an error is
    put there as a WorkerError; None on `tasks` ends the thread."""
    _this_thread.info = info
    fetch: Callable[[Any], Any] | None = None
    failure = None
    try:
        if init_fn is not None:
            init_fn(info.id)
        fetch = make_fetcher(info.dataset)
    except BaseException:
        failure = WorkerError(info.id)
    ended = False
    while (task := tasks.get()) is not None:
        if task is _RESUME:
            try:
                fetch, ended = make_fetcher(info.dataset), False
            except BaseException:
                failure = WorkerError(info.id)
            results.put((_RESUME, info.id))
            continue
        if ended:  # tasks sent before the main thread heard of the end: they have no batch
            continue
        number, index = task
        if failure is not None:
            data, failure = failure, None
        else:
            try:
                data = fetch(index)
            except BaseException as error:  # anything, so that the thread lives on to report it
                ended = streaming and isinstance(error, StopIteration)
                data = _Ended(info.id) if ended else WorkerError(info.id)
        results.put((number, data))
        del data  # a batch held here would live until the next task arrives


def _stop(task_queues: list[queue.SimpleQueue], threads: list[threading.Thread], join: bool) -> None:
    for tasks in task_queues:
        tasks.put(None)
    if join:
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join()


class WorkerPool:
    """`loader.num_workers` worker threads, each with its task queue, and the queue their results share. The
    threads end when the pool is closed or dropped (a batch in progress is finished first)."""

    def __init__(self, loader: Any, base_seed: int) -> None:
        # The threads must not hold the loader: a persistent pool ends when its loader is dropped.
        streaming = isinstance(loader.dataset, IterableDataset)
        if streaming:
            make_fetcher = partial(StreamFetcher, batch_size=loader.batch_size, drop_last=loader.drop_last,
                                   collate_fn=loader.collate_fn)
        else:
            batched, collate_fn = loader.batch_sampler is not None, loader.collate_fn

            def make_fetcher(dataset: Dataset) -> Callable[[Any], Any]:
                return partial(fetch_indexed, dataset, batched=batched, collate_fn=collate_fn)
        self.num_workers = loader.num_workers
        self.results: queue.SimpleQueue = queue.SimpleQueue()
        self.task_queues = [queue.SimpleQueue() for _ in range(self.num_workers)]
        self.threads: list[threading.Thread] = []
        # Made first, so that the threads started before a failure here (copying a dataset) end with the pool.
        self._finalizer = weakref.finalize(self, _stop, self.task_queues, self.threads, True)
        self._finalizer.atexit = False  # daemon threads: a worker stuck in a dataset must not hold up exit
        for worker_id, tasks in enumerate(self.task_queues):
            seed = base_seed + worker_id
            rng = WorkerRNG(random.Random(seed), Generator().manual_seed(seed), np.random.default_rng(seed))
            # As a worker process unpickles its own: each worker walks its own copy of an IterableDataset.
            dataset = copy.deepcopy(loader.dataset) if streaming else loader.dataset
            info = WorkerInfo(worker_id, self.num_workers, seed, dataset, rng)
            thread = threading.Thread(target=_serve, name=f"DataLoader worker {worker_id}", daemon=True,
                                      args=(info, tasks, self.results, loader.worker_init_fn, make_fetcher, streaming))
            thread.start()
            self.threads.append(thread)
        self.epochs = 0

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self, *, join: bool = True) -> None:
        """End the threads; `join=False` does not wait for them (a worker may be stuck in the dataset)."""
        if self._finalizer.detach() is not None:
            _stop(self.task_queues, self.threads, join)

    def batches(self, indices: Iterator[Any], *, in_order: bool, prefetch_factor: int, timeout: float,
                close_at_end: bool) -> WorkerBatches:
        """A new epoch over `indices`; a persistent pool's workers start their datasets over first."""
        if self.epochs:
            for tasks in self.task_queues:
                tasks.put(_RESUME)
            resumed = 0
            while resumed < self.num_workers:  # results of an abandoned epoch are dropped on the way
                resumed += self.receive(timeout)[0] is _RESUME
        self.epochs += 1
        return WorkerBatches(self, indices, in_order, max(prefetch_factor * self.num_workers, 1), timeout,
                             close_at_end)

    def receive(self, timeout: float) -> tuple[Any, Any]:
        """The next (task number, result) from the workers, waiting at most `timeout` seconds when positive."""
        try:
            return self.results.get(timeout=timeout if timeout > 0 else None)
        except queue.Empty:
            self.close(join=False)
            raise RuntimeError(f"DataLoader timed out after {timeout} seconds") from None


class WorkerBatches:
    """One epoch's batches from a WorkerPool: task numbers in sampler order, each task sent to the next worker
    in turn (or, out of order, to the least loaded), results yielded in task order (or as they come)."""

    def __init__(self, pool: WorkerPool, indices: Iterator[Any], in_order: bool, capacity: int, timeout: float,
                 close_at_end: bool) -> None:
        self._pool = pool
        self._epoch = pool.epochs
        self._indices = indices
        self._in_order = in_order
        self._capacity = capacity
        self._timeout = timeout
        self._close_at_end = close_at_end
        self._turns = itertools.cycle(range(pool.num_workers))
        self._active = [True] * pool.num_workers
        self._load = [0] * pool.num_workers  # unanswered tasks per worker (out of order: the least loaded gets more)
        self._owner: dict[int, int] = {}  # task number -> worker, until its batch is yielded
        self._early: dict[int, Any] = {}  # batches that came before their turn
        self._sent = self._wanted = 0
        self._fill()

    def __iter__(self) -> WorkerBatches:
        return self

    def _fill(self) -> None:
        # A batch that came early still counts: at most `capacity` batches are sent and not yet yielded.
        while len(self._owner) < self._capacity and self._send():
            pass

    def _send(self) -> bool:
        worker = next((w for w in itertools.islice(self._turns, len(self._active)) if self._active[w]), None)
        if worker is None:
            return False
        try:
            index = next(self._indices)
        except StopIteration:
            return False
        if not self._in_order:
            worker = min((w for w in range(len(self._active)) if self._active[w]), key=self._load.__getitem__)
        self._pool.task_queues[worker].put((self._sent, index))
        self._owner[self._sent] = worker
        self._load[worker] += 1
        self._sent += 1
        return True

    def __next__(self) -> Any:
        if self._pool.closed or self._pool.epochs != self._epoch:
            raise StopIteration
        while True:
            while self._wanted < self._sent and self._wanted not in self._early:
                if self._wanted in self._owner:
                    break
                self._wanted += 1  # yielded out of order, or its worker ran out of data
            if self._wanted in self._early:
                self._wanted += 1
                return self._deliver(self._wanted - 1, self._early.pop(self._wanted - 1))
            if self._wanted == self._sent:
                if self._close_at_end:
                    self._pool.close()
                raise StopIteration
            number, data = self._pool.receive(self._timeout)
            if isinstance(data, _Ended):
                self._retire(data.worker_id)
                continue
            self._load[self._owner[number]] -= 1
            if number == self._wanted or not self._in_order:
                self._wanted += number == self._wanted
                return self._deliver(number, data)
            self._early[number] = data

    def _retire(self, worker: int) -> None:
        """A worker's IterableDataset ran out: its unanswered tasks will never be answered."""
        self._active[worker] = False
        self._load[worker] = 0
        for number in [n for n, w in self._owner.items() if w == worker and n not in self._early]:
            del self._owner[number]
        self._fill()

    def _deliver(self, number: int, data: Any) -> Any:
        del self._owner[number]
        if isinstance(data, WorkerError):
            self._pool.close()
            data.reraise()
        self._fill()
        return data
