"""utils.data: datasets and their combinations, random_split, the samplers (seeded through actorgrad's Generator),
default_collate's rules, and DataLoader's batching, shuffling, lengths and PyTorch's argument errors."""

from collections import Counter, namedtuple

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)

Point = namedtuple("Point", "x y")


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"i": i, "square": ag.tensor([float(i * i)])}


class Counting(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_tensor_dataset_and_its_size_check():
    ds = TensorDataset(ag.arange(5.0), ag.arange(10).reshape(5, 2))
    assert len(ds) == 5
    x, y = ds[3]
    assert x.item() == 3.0 and y.tolist() == [6, 7]
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(ag.zeros(3), ag.zeros(4))


def test_concat_subset_stack_and_chain():
    joined = Squares(3) + Squares(4)
    assert isinstance(joined, ConcatDataset) and len(joined) == 7
    assert [joined[i]["i"] for i in range(7)] == [0, 1, 2, 0, 1, 2, 3] and joined[-1]["i"] == 3
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        joined[-8]
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Squares(2), Counting(2)])
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    sub = Subset(Squares(10), [7, 2, 5])
    assert len(sub) == 3 and [sub[i]["i"] for i in range(3)] == [7, 2, 5]
    stacked = StackDataset(a=Squares(3), b=range(10, 13))
    assert stacked[1]["b"] == 11 and len(stacked) == 3
    assert StackDataset(range(3), range(3, 6))[2] == (2, 5)
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(range(3), range(4))
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset(range(3), b=range(3))
    assert list(Counting(2) + Counting(3)) == [0, 1, 0, 1, 2]
    assert isinstance(Counting(1) + Counting(1), ChainDataset)


def test_random_split_by_lengths_and_fractions():
    parts = random_split(range(10), [3, 7], generator=ag.Generator().manual_seed(4))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    again = random_split(range(10), [3, 7], generator=ag.Generator().manual_seed(4))
    assert again[0].indices == parts[0].indices
    # floor(10 * f) = 3, 3, 3; the remainder 1 goes to the first split.
    assert [len(p) for p in random_split(range(10), [0.3, 0.3, 0.4])] == [3, 3, 4]
    assert [len(p) for p in random_split(range(11), [1 / 3, 1 / 3, 1 / 3])] == [4, 4, 3]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(range(10), [3, 3])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [1.0, 0.0])


def test_sequential_and_random_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    generator = ag.Generator().manual_seed(1)
    sampler = RandomSampler(range(20), generator=generator)
    order = list(sampler)
    assert sorted(order) == list(range(20)) and order != list(range(20))
    # The given generator is the one drawn from: its stream advances, and another seed gives another order.
    assert list(sampler) != order and list(RandomSampler(range(20), generator=ag.Generator().manual_seed(2))) != order
    generator.manual_seed(1)
    assert list(sampler) == order
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=50, generator=ag.Generator().manual_seed(2)))
    assert len(drawn) == 50 and set(drawn) == {0, 1, 2}
    # Without replacement and more samples than items: whole permutations, then part of one.
    longer = list(RandomSampler(range(4), num_samples=10))
    assert sorted(longer[:4]) == sorted(longer[4:8]) == [0, 1, 2, 3] and len(set(longer[8:])) == 2
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=1"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)


def test_random_sampler_follows_manual_seed_and_reshuffles_each_pass():
    ag.manual_seed(11)
    sampler = RandomSampler(range(30))
    first, second = list(sampler), list(sampler)
    ag.manual_seed(11)
    assert list(sampler) == first and first != second


def test_subset_random_and_weighted_samplers():
    picked = list(SubsetRandomSampler([10, 20, 30, 40], generator=ag.Generator().manual_seed(3)))
    assert sorted(picked) == [10, 20, 30, 40]
    weights = [0.0, 1.0, 3.0]
    draws = Counter(WeightedRandomSampler(weights, 4000, generator=ag.Generator().manual_seed(0)))
    assert draws[0] == 0 and abs(draws[2] / 4000 - 0.75) < 0.03
    no_repeat = list(WeightedRandomSampler([1.0, 1.0, 1.0, 1.0], 4, replacement=False))
    assert sorted(no_repeat) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=True"):
        WeightedRandomSampler(weights, True)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have shape \(1, 3\)"):
        WeightedRandomSampler([weights], 3)


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, drop_last=False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=1"):
        BatchSampler(range(3), 1, 1)


def test_default_collate_rules():
    batch = default_collate([ag.tensor([1.0, 2.0]), ag.tensor([3.0, 4.0])])
    assert batch.shape == (2, 2) and batch.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    floats, ints, flags = default_collate([1.5, 2.5]), default_collate([1, 2]), default_collate([True, False])
    assert floats.dtype == ag.float64 and ints.dtype == ag.int64 and flags.dtype == ag.bool
    arrays = default_collate([np.ones(2, np.float32), np.zeros(2, np.float32)])
    assert arrays.dtype == ag.float32 and arrays.tolist() == [[1, 1], [0, 0]]
    assert default_collate([np.float32(1), np.float32(2)]).dtype == ag.float32
    assert default_collate(["a", "b"]) == ["a", "b"]
    nested = default_collate([{"x": 1, "p": Point(1.0, [2])}, {"x": 2, "p": Point(3.0, [4])}])
    assert nested["x"].tolist() == [1, 2] and isinstance(nested["p"], Point)
    assert nested["p"].x.tolist() == [1.0, 3.0] and nested["p"].y[0].tolist() == [2, 4]
    pairs = default_collate([(1, "a"), (2, "b")])
    assert isinstance(pairs, list) and pairs[0].tolist() == [1, 2] and pairs[1] == ("a", "b")
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                                        "or lists; found <class 'object'>"):
        default_collate([object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"])])
    converted = default_convert((np.ones(2), 3))
    assert isinstance(converted, list) and converted[0].dtype == ag.float64 and converted[1] == 3


def test_dataloader_batches_in_order():
    ds = TensorDataset(ag.arange(10.0), ag.arange(10))
    loader = DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].dtype == ag.float32
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [b[1].tolist() for b in DataLoader(ds, batch_size=4, drop_last=True)][-1] == [4, 5, 6, 7]
    single = list(DataLoader(Squares(3), batch_size=None))
    assert single[2]["i"] == 2 and single[2]["square"].tolist() == [4.0]
    dicts = next(iter(DataLoader(Squares(5), batch_size=2)))
    assert dicts["i"].tolist() == [0, 1] and dicts["square"].shape == (2, 1)


def test_shuffled_loader_reshuffles_and_repeats_under_the_seed():
    ds = TensorDataset(ag.arange(40))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    ag.manual_seed(3)
    first = [i for (b,) in loader for i in b.tolist()]
    second = [i for (b,) in loader for i in b.tolist()]
    assert sorted(first) == list(range(40)) and first != second and first != list(range(40))
    ag.manual_seed(3)
    assert [i for (b,) in loader for i in b.tolist()] == first
    seeded = DataLoader(ds, batch_size=8, shuffle=True, generator=ag.Generator().manual_seed(9))
    other = DataLoader(ds, batch_size=8, shuffle=True, generator=ag.Generator().manual_seed(9))
    assert [b.tolist() for (b,) in seeded] == [b.tolist() for (b,) in other]


def test_loader_with_samplers_collate_fn_and_iterable_datasets():
    ds = TensorDataset(ag.arange(6))
    by_batches = DataLoader(ds, batch_sampler=[[5, 0], [3]])
    assert [b.tolist() for (b,) in by_batches] == [[5, 0], [3]] and len(by_batches) == 2
    custom = DataLoader(range(5), batch_size=2, sampler=[4, 3, 2, 1, 0], collate_fn=list)
    assert list(custom) == [[4, 3], [2, 1], [0]]
    stream = DataLoader(Counting(7), batch_size=3)
    assert [b.tolist() for b in stream] == [[0, 1, 2], [3, 4, 5], [6]] and len(stream) == 3
    assert len(DataLoader(Counting(7), batch_size=3, drop_last=True)) == 2

    class Batched(Dataset):
        def __len__(self):
            return 4

        def __getitems__(self, indices):
            return [10 * i for i in indices]

    assert [b.tolist() for b in DataLoader(Batched(), batch_size=3)] == [[0, 10, 20], [30]]
    assert [b.tolist() for b in DataLoader(Counting(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize(("kwargs", "text"), [
    ({"batch_sampler": [[0]], "batch_size": 2},
     "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
    ({"batch_sampler": [[0]], "shuffle": True}, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "drop_last": True}, "batch_sampler option is mutually exclusive"),
    ({"sampler": [0], "shuffle": True}, "sampler option is mutually exclusive with shuffle"),
    ({"batch_size": None, "drop_last": True},
     "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"),
    ({"num_workers": -1}, "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."),
    ({"prefetch_factor": 2}, "prefetch_factor option could only be specified in multiprocessing"),
    ({"num_workers": 2, "prefetch_factor": -1}, "prefetch_factor option should be non-negative"),
    ({"timeout": -1}, "timeout option should be non-negative"),
    ({"persistent_workers": True}, "persistent_workers option needs num_workers > 0"),
])
def test_dataloader_argument_errors(kwargs, text):
    with pytest.raises(ValueError, match=text.replace("(", r"\(").replace(")", r"\)")):
        DataLoader(TensorDataset(ag.arange(3)), **kwargs)


def test_iterable_dataset_refuses_samplers_and_shuffle():
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Counting(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Counting(3), sampler=[0])


def test_no_worker_info_in_the_calling_thread():
    assert get_worker_info() is None


def test_loader_settings_are_fixed_after_init():
    loader = DataLoader(TensorDataset(ag.arange(3)))
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 2


@pytest.mark.gpu
def test_loader_batches_device_tensors_on_their_device(cupy):
    ds = TensorDataset(ag.arange(6.0, device="cuda:0"), ag.arange(6, device="cuda:0"))
    x, y = next(iter(DataLoader(ds, batch_size=4, shuffle=True, generator=ag.Generator().manual_seed(0))))
    assert x.device == ag.device("cuda:0") and x.shape == (4,)
    assert x.cpu().tolist() == [float(i) for i in y.cpu().tolist()]
