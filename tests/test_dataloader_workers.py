"""DataLoader with num_workers > 0: worker threads with PyTorch's multi-process semantics (batches in sampler
order or as they come, a bounded prefetch, a copy of an IterableDataset per worker, get_worker_info and its
sharding recipe, worker_init_fn, per-worker seeds, persistent workers, wrapped worker errors, timeouts) and no
thread outliving its iterator."""

import math
import threading

import pytest

import actorgrad as ag
from actorgrad.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
    get_worker_info,
)


def loader_threads():
    return [t for t in threading.enumerate() if t.name.startswith("DataLoader worker")]


@pytest.fixture
def no_leaked_threads():
    before = threading.active_count()
    yield
    assert loader_threads() == []
    assert threading.active_count() <= before


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"i": i, "square": ag.tensor([float(i * i)])}


class Fetched(Squares):
    def __getitems__(self, indices):
        return [(i, -i) for i in indices]


class Range(IterableDataset):
    """range(start, end), each worker its share when `shard` (the recipe in PyTorch's IterableDataset docs)."""

    def __init__(self, start, end, shard):
        self.start, self.end, self.shard = start, end, shard

    def __iter__(self):
        info = get_worker_info()
        if not self.shard or info is None:
            return iter(range(self.start, self.end))
        per_worker = math.ceil((self.end - self.start) / info.num_workers)
        first = self.start + info.id * per_worker
        return iter(range(first, min(first + per_worker, self.end)))


def plain(batch):
    """A batch as plain Python values, to compare loaders."""
    if isinstance(batch, ag.Tensor):
        return batch.tolist()
    if isinstance(batch, dict):
        return {key: plain(value) for key, value in batch.items()}
    if isinstance(batch, list | tuple):
        return [plain(value) for value in batch]
    return batch


@pytest.mark.parametrize("kwargs", [
    {"batch_size": 3},
    {"batch_size": 3, "drop_last": True},
    {"batch_size": None},
    {"batch_size": 4, "collate_fn": list},
    {"batch_sampler": [[4, 1], [0], [2, 3, 5], [6]]},
])
@pytest.mark.parametrize("workers", [1, 3])
def test_map_style_batches_equal_the_single_thread_loaders_in_order(kwargs, workers, no_leaked_threads):
    for dataset in (Squares(10), Fetched(10)):
        expected = [plain(b) for b in DataLoader(dataset, **kwargs)]
        assert [plain(b) for b in DataLoader(dataset, num_workers=workers, **kwargs)] == expected
        assert [plain(b) for b in DataLoader(dataset, num_workers=workers, prefetch_factor=1, **kwargs)] == expected


def test_shuffled_order_does_not_depend_on_num_workers(no_leaked_threads):
    dataset = TensorDataset(ag.arange(30))
    ag.manual_seed(4)
    alone = [b.tolist() for (b,) in DataLoader(dataset, batch_size=4, shuffle=True)]
    ag.manual_seed(4)
    assert [b.tolist() for (b,) in DataLoader(dataset, batch_size=4, shuffle=True, num_workers=2)] == alone


def test_iterator_has_the_loaders_length(no_leaked_threads):
    it = iter(DataLoader(Squares(10), batch_size=4, num_workers=2))
    assert len(it) == 3
    del it


def test_at_most_prefetch_factor_times_num_workers_batches_are_in_flight(no_leaked_threads):
    drawn = []

    class Counting(BatchSampler):
        def __iter__(self):
            for batch in super().__iter__():
                drawn.append(batch)
                yield batch

    batch_sampler = Counting(SequentialSampler(range(20)), 2, False)
    it = iter(DataLoader(Squares(20), batch_sampler=batch_sampler, num_workers=2, prefetch_factor=2))
    assert len(drawn) == 4
    for taken in range(1, 11):
        next(it)
        assert len(drawn) == min(10, 4 + taken)
    assert next(it, None) is None


class Gated(Dataset):
    """Sample 0 waits for `gate` (opened by the test, or by fetching sample `opener`): its worker is held while
    the others answer."""

    def __init__(self, n, opener=None):
        self.n, self.opener, self.gate = n, opener, threading.Event()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == 0:
            assert self.gate.wait(10), "the gate was never opened"
        if i == self.opener:
            self.gate.set()
        return i


def test_batches_that_come_early_wait_for_their_turn(no_leaked_threads):
    # Worker 1 answers tasks 1 and 3 before worker 0 can answer task 0.
    batches = DataLoader(Gated(8, opener=3), batch_size=1, num_workers=2)
    assert [b.tolist() for b in batches] == [[i] for i in range(8)]


def test_out_of_order_yields_batches_as_they_come_and_all_of_them(no_leaked_threads):
    batches = [b.tolist() for b in DataLoader(Gated(9, opener=3), batch_size=1, num_workers=2, in_order=False)]
    assert batches[0] == [1]  # worker 0 is held at sample 0 until worker 1 has fetched sample 3
    assert sorted(batches) == [[i] for i in range(9)]
    dataset = Gated(9)
    dataset.gate.set()
    batches = DataLoader(dataset, batch_size=2, num_workers=3, in_order=False)
    assert sorted(plain(b) for b in batches) == [[0, 1], [2, 3], [4, 5], [6, 7], [8]]


def test_out_of_order_sends_new_tasks_to_the_least_loaded_worker(no_leaked_threads):
    dataset = Gated(8)
    it = iter(DataLoader(dataset, batch_size=1, num_workers=2, in_order=False, timeout=10))
    early = [next(it).item() for _ in range(6)]  # worker 0 holds tasks 0 and 2; worker 1 gets all the others
    dataset.gate.set()
    assert sorted(early) == [1, 3, 4, 5, 6, 7] and sorted(b.item() for b in it) == [0, 2]


def test_an_unsharded_iterable_dataset_is_repeated_by_every_worker(no_leaked_threads):
    batches = [b.tolist() for b in DataLoader(Range(0, 5, shard=False), batch_size=2, num_workers=2)]
    assert batches == [[0, 1], [0, 1], [2, 3], [2, 3], [4], [4]]
    samples = list(DataLoader(Range(0, 3, shard=False), batch_size=None, num_workers=3))
    assert samples == [0, 0, 0, 1, 1, 1, 2, 2, 2]


@pytest.mark.parametrize(("workers", "batch_size", "drop_last"), [(2, 2, False), (3, 2, False), (3, 2, True),
                                                                 (4, None, False)])
def test_the_sharding_recipe_covers_an_iterable_dataset_exactly_once(workers, batch_size, drop_last,
                                                                      no_leaked_threads):
    loader = DataLoader(Range(3, 13, shard=True), batch_size=batch_size, num_workers=workers, drop_last=drop_last)
    batches = [plain(b) for b in loader]
    samples = sorted(s for b in batches for s in (b if batch_size else [b]))
    if not drop_last:
        assert samples == list(range(3, 13))
    else:  # 3 workers of 4, 4 and 2 samples: no short batch, nothing dropped
        assert samples == list(range(3, 13)) and all(len(b) == 2 for b in batches)
    if batch_size == 2 and workers == 2:  # round-robin over the workers: shards [3..7] and [8..12]
        assert batches == [[3, 4], [8, 9], [5, 6], [10, 11], [7], [12]]


def test_each_worker_iterates_its_own_copy_of_an_iterable_dataset(no_leaked_threads):
    dataset = Range(0, 2, shard=False)
    seen = []

    def record(worker_id):
        seen.append(get_worker_info().dataset)

    list(DataLoader(dataset, num_workers=3, worker_init_fn=record))
    assert len({id(copy) for copy in seen}) == 3 and all(copy is not dataset for copy in seen)
    assert get_worker_info() is None


def test_worker_init_fn_runs_once_in_each_worker_with_its_info(no_leaked_threads):
    calls = []

    def init(worker_id):
        info = get_worker_info()
        calls.append((worker_id, info.id, info.num_workers, threading.current_thread()))

    assert [b.tolist() for b in DataLoader(ag.arange(6), batch_size=2, num_workers=3, worker_init_fn=init)] == [
        [0, 1], [2, 3], [4, 5]]
    assert sorted(call[:3] for call in calls) == [(0, 0, 3), (1, 1, 3), (2, 2, 3)]
    threads = {call[3] for call in calls}
    assert len(threads) == 3 and threading.main_thread() not in threads


@pytest.mark.parametrize("seeded", [True, False])
def test_worker_seeds_are_the_base_seed_plus_the_worker_id(seeded, no_leaked_threads):
    seeds = {}

    def record(worker_id):
        info = get_worker_info()
        seeds[worker_id] = (info.seed, info.rng.torch_generator.initial_seed(), info.worker_method)

    generator = ag.Generator().manual_seed(11) if seeded else None
    ag.manual_seed(11)
    list(DataLoader(ag.arange(4), num_workers=2, worker_init_fn=record, generator=generator))
    # The base seed is the pass's first draw from the loader's generator (else the default one).
    base = int(ag.empty((), dtype=ag.int64).random_(generator=ag.Generator().manual_seed(11)).item())
    assert seeds == {0: (base, base, "thread"), 1: (base + 1, base + 1, "thread")}


def test_persistent_workers_serve_every_epoch_and_end_with_the_loader(no_leaked_threads):
    calls, fetching = [], set()

    class Recording(Squares):
        def __getitem__(self, i):
            fetching.add(threading.current_thread())
            return i

    loader = DataLoader(Recording(7), batch_size=2, num_workers=2, persistent_workers=True,
                        worker_init_fn=calls.append, timeout=10)  # a failure, not a hang, if workers are lost
    epochs = [[b.tolist() for b in loader] for _ in range(3)]
    assert epochs == [[[0, 1], [2, 3], [4, 5], [6]]] * 3
    assert sorted(calls) == [0, 1] and len(fetching) == 2
    abandoned = iter(loader)  # a new epoch drops what an abandoned one had in flight
    next(abandoned)
    assert [b.tolist() for b in loader] == epochs[0]
    assert next(abandoned, None) is None  # superseded by the newer epoch
    assert len(loader_threads()) == 2 and sorted(calls) == [0, 1]
    del loader, abandoned
    assert loader_threads() == []


def test_persistent_workers_restart_an_iterable_dataset_each_epoch(no_leaked_threads):
    loader = DataLoader(Range(0, 4, shard=True), batch_size=2, num_workers=2, persistent_workers=True, timeout=10)
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]
    del loader


class Failing(Dataset):
    def __init__(self, error):
        self.error = error

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            raise self.error
        return i


def test_a_workers_error_is_raised_in_the_main_thread_with_its_traceback(no_leaked_threads):
    it = iter(DataLoader(Failing(ValueError("no sample 3")), batch_size=2, num_workers=2))
    assert next(it).tolist() == [0, 1]
    with pytest.raises(ValueError) as caught:
        next(it)
    text = str(caught.value)
    assert text.startswith("Caught ValueError in DataLoader worker process 1.\nOriginal Traceback (most recent call "
                           "last):\n")
    assert "raise self.error" in text and text.endswith("ValueError: no sample 3\n")
    assert loader_threads() == [] and next(it, None) is None  # the iterator ended with its workers


def test_a_key_error_shows_its_traceback_as_text_and_odd_errors_become_runtime_errors(no_leaked_threads):
    with pytest.raises(KeyError) as caught:
        list(DataLoader(Failing(KeyError("k")), batch_size=4, num_workers=2))
    assert str(caught.value).startswith("Caught KeyError in DataLoader worker process 0.\nOriginal Traceback")

    class Coded(Exception):
        def __init__(self, code, detail):
            super().__init__(code, detail)

    with pytest.raises(RuntimeError, match="Caught Coded in DataLoader worker process 1"):
        list(DataLoader(Failing(Coded(1, "x")), batch_size=2, num_workers=2))


def test_a_map_style_dataset_raising_stop_iteration_ends_the_pass_as_without_workers(no_leaked_threads):
    stopping = Failing(StopIteration("sample 3"))
    alone = [b.tolist() for b in DataLoader(stopping, batch_size=2)]
    assert [b.tolist() for b in DataLoader(stopping, batch_size=2, num_workers=2)] == alone == [[0, 1]]


def test_errors_in_worker_init_fn_and_iterable_datasets_are_wrapped(no_leaked_threads):
    def init(worker_id):
        raise OSError(f"cannot open shard {worker_id}")

    with pytest.raises(OSError, match=r"Caught OSError in DataLoader worker process 0\.(.|\n)*cannot open shard 0"):
        list(DataLoader(ag.arange(4), num_workers=2, worker_init_fn=init))

    class Broken(IterableDataset):
        def __iter__(self):
            yield 1
            raise ZeroDivisionError("bad stream")

    with pytest.raises(ZeroDivisionError, match="Caught ZeroDivisionError in DataLoader worker process"):
        list(DataLoader(Broken(), batch_size=2, num_workers=2))


def test_an_exhausted_iterator_ends_its_workers(no_leaked_threads):
    it = iter(DataLoader(Squares(5), batch_size=2, num_workers=2))
    assert len(loader_threads()) == 2
    assert len(list(it)) == 3
    assert loader_threads() == []  # while the iterator itself is still alive


def test_an_abandoned_iterator_ends_its_workers(no_leaked_threads):
    it = iter(DataLoader(Squares(50), batch_size=2, num_workers=3))
    next(it)
    assert len(loader_threads()) == 3
    del it
    assert loader_threads() == []


def test_a_loader_that_waits_longer_than_its_timeout_raises(no_leaked_threads):
    dataset = Gated(4)
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.01 seconds$"):
        list(DataLoader(dataset, num_workers=2, timeout=0.01))
    dataset.gate.set()  # the stuck worker finishes its sample and ends
    for thread in loader_threads():
        thread.join()


def test_process_only_options_are_accepted_with_workers(no_leaked_threads):
    loader = DataLoader(ag.arange(4), batch_size=2, num_workers=2, pin_memory=True, multiprocessing_context="spawn")
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="multiprocessing_context can only be used with multi-process loading"):
        DataLoader(ag.arange(4), multiprocessing_context="spawn")


@pytest.mark.gpu
def test_workers_batch_device_tensors_on_their_device(no_leaked_threads, cupy):
    ds = TensorDataset(ag.arange(7.0, device="cuda:0"), ag.arange(7, device="cuda:0"))
    alone = [(x.cpu().tolist(), y.cpu().tolist()) for x, y in DataLoader(ds, batch_size=3)]
    batches = list(DataLoader(ds, batch_size=3, num_workers=2))
    assert all(x.device == ag.device("cuda:0") and y.device == ag.device("cuda:0") for x, y in batches)
    assert [(x.cpu().tolist(), y.cpu().tolist()) for x, y in batches] == alone
