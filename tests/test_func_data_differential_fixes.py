"""Behaviour of actorgrad.func and actorgrad.utils.data that a differential review against PyTorch found missing:
aux outputs hold only tensors, collation keeps the caller's container types, Subset fetches batches through its
dataset's `__getitems__`, and a DataLoader's iterator has the loader's length."""

from collections import defaultdict

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import func
from actorgrad.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    Sampler,
    StackDataset,
    Subset,
    default_collate,
    default_convert,
)

X = np.array([0.3, -1.2, 0.7])

# each transform called with has_aux on f and x; each returns the aux it gave back
AUX_OF = {
    "grad": lambda f, x: func.grad(f, has_aux=True)(x)[1],
    "grad_and_value": lambda f, x: func.grad_and_value(f, has_aux=True)(x)[1][1],
    "vjp": lambda f, x: func.vjp(f, x, has_aux=True)[2],
    "jvp": lambda f, x: func.jvp(f, (x,), (x,), has_aux=True)[2],
    "jacrev": lambda f, x: func.jacrev(f, has_aux=True)(x)[1],
    "jacfwd": lambda f, x: func.jacfwd(f, has_aux=True)(x)[1],
}


@pytest.mark.parametrize("transform", AUX_OF)
@pytest.mark.parametrize(("aux", "kind"), [
    (lambda x: 3, "int"),
    (lambda x: None, "NoneType"),
    (lambda x: {"loss": [x, 1.5]}, "float"),
    (lambda x: (x, "tag"), "str"),
], ids=["int", "None", "float-in-a-dict", "str-in-a-tuple"])
def test_aux_with_a_leaf_that_is_not_a_tensor_is_refused(transform, aux, kind):
    with pytest.raises(RuntimeError, match=f"^Expected tensors, got unsupported type <class '{kind}'>$"):
        AUX_OF[transform](lambda x: ((x * x).sum(), aux(x)), ag.tensor(X))


@pytest.mark.parametrize("transform", AUX_OF)
def test_aux_of_nested_tensors_and_empty_containers_comes_back_detached(transform):
    aux = AUX_OF[transform](lambda x: ((x * x).sum(), {"a": [x.sin(), (x.sum(),)], "b": ()}), ag.tensor(X))
    assert aux["b"] == ()
    np.testing.assert_allclose(aux["a"][0].numpy(), np.sin(X))
    np.testing.assert_allclose(aux["a"][1][0].item(), X.sum())
    assert not aux["a"][0].requires_grad


def test_grad_with_a_tensor_aux_still_gives_the_gradient():
    gradient, aux = func.grad(lambda x: ((x * x).sum(), x.exp()), has_aux=True)(ag.tensor(X))
    np.testing.assert_allclose(gradient.numpy(), 2 * X)
    np.testing.assert_allclose(aux.numpy(), np.exp(X))


class Tagged(dict):
    """A dict whose constructor takes another argument first: building one from a dict would lose the data."""

    def __init__(self, tag, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tag = tag


class Row(list):
    """A list carrying an attribute, which a copy keeps and a fresh `Row(values)` would not."""

    def __init__(self, values, name):
        super().__init__(values)
        self.name = name


def test_collate_keeps_a_defaultdict_and_its_default_factory():
    batch = default_collate([defaultdict(list, a=1), defaultdict(list, a=2)])
    assert type(batch) is defaultdict and batch.default_factory is list
    assert batch["a"].tolist() == [1, 2]
    assert batch["missing"] == []


def test_collate_and_convert_keep_a_dict_subclass_with_another_constructor():
    batch = default_collate([Tagged("first", a=1.5), Tagged("second", a=2.5)])
    assert type(batch) is Tagged and batch.tag == "first"
    assert batch["a"].dtype == ag.float64 and batch["a"].tolist() == [1.5, 2.5]
    converted = default_convert(Tagged("t", a=np.arange(3)))
    assert type(converted) is Tagged and converted.tag == "t"
    assert isinstance(converted["a"], ag.Tensor) and converted["a"].tolist() == [0, 1, 2]


def test_collate_and_convert_keep_a_list_subclass_and_its_attributes():
    batch = default_collate([Row([1, 2.0], "r0"), Row([3, 4.0], "r1")])
    assert type(batch) is Row and batch.name == "r0"
    assert batch[0].tolist() == [1, 3] and batch[1].tolist() == [2.0, 4.0]
    converted = default_convert(Row([np.ones(2), "s"], "r"))
    assert type(converted) is Row and converted.name == "r"
    assert isinstance(converted[0], ag.Tensor) and converted[1] == "s"


class BatchFetching(Dataset):
    """Sample i is 10 * i; it records every many-at-once fetch."""

    def __init__(self):
        self.fetches = []

    def __getitem__(self, index):
        return 10 * index

    def __getitems__(self, indices):
        self.fetches.append(list(indices))
        return [10 * i for i in indices]

    def __len__(self):
        return 6


def test_subset_fetches_a_batch_through_its_datasets_getitems():
    dataset = BatchFetching()
    subset = Subset(dataset, [5, 1, 3, 0])
    assert subset.__getitems__([0, 2]) == [50, 30]
    assert dataset.fetches == [[5, 3]]
    batches = [batch.tolist() for batch in DataLoader(subset, batch_size=3)]
    assert batches == [[50, 10, 30], [0]]
    assert dataset.fetches[1:] == [[5, 1, 3], [0]]


def test_subset_getitems_of_a_plain_dataset_indexes_it_sample_by_sample():
    subset = Subset([c * 2 for c in "abcd"], [3, 0])
    assert subset.__getitems__([1, 0]) == ["aa", "dd"]


def test_stack_dataset_fetches_a_batch_through_each_datasets_getitems():
    fetching = BatchFetching()
    by_position = StackDataset(fetching, ["a", "b", "c", "d", "e", "f"])
    assert by_position.__getitems__([4, 1]) == [(40, "e"), (10, "b")]
    by_name = StackDataset(n=fetching, s=["a", "b", "c", "d", "e", "f"])
    assert by_name.__getitems__([2]) == [{"n": 20, "s": "c"}]
    assert fetching.fetches == [[4, 1], [2]]
    batch = next(iter(DataLoader(by_name, batch_size=3)))
    assert batch["n"].tolist() == [0, 10, 20] and batch["s"] == ["a", "b", "c"]
    assert fetching.fetches[2:] == [[0, 1, 2]]


def test_stack_dataset_refuses_a_nested_batch_of_the_wrong_size():
    class Short(BatchFetching):
        def __getitems__(self, indices):
            return super().__getitems__(indices)[:-1]

    with pytest.raises(ValueError, match="^Nested dataset's output size mismatch. Expected 2, got 1$"):
        StackDataset(Short(), list(range(6))).__getitems__([0, 1])


class Counting(IterableDataset):
    def __iter__(self):
        return iter(range(7))

    def __len__(self):
        return 7


@pytest.mark.parametrize(("dataset", "kwargs", "length"), [
    (list(range(10)), {"batch_size": 3}, 4),
    (list(range(10)), {"batch_size": 3, "drop_last": True}, 3),
    (list(range(10)), {"batch_size": None}, 10),
])
def test_a_loaders_iterator_has_the_loaders_length_and_yields_its_batches(dataset, kwargs, length):
    loader = DataLoader(dataset, **kwargs)
    iterator = iter(loader)
    assert len(iterator) == len(loader) == length
    assert iter(iterator) is iterator
    assert sum(1 for _ in iterator) == length
    with pytest.raises(StopIteration):
        next(iterator)


def test_an_iterable_datasets_loader_has_a_length_but_its_iterator_has_none_as_in_pytorch():
    loader = DataLoader(Counting(), batch_size=2)
    assert len(loader) == 4
    with pytest.raises(TypeError):
        len(iter(loader))
    assert [batch.tolist() for batch in loader] == [[0, 1], [2, 3], [4, 5], [6]]


def test_datasets_samplers_and_loaders_are_generic_as_in_pytorch():
    class Squares(Dataset[tuple[int, int]]):
        def __getitem__(self, index):
            return index, index * index

        def __len__(self):
            return 4

    class Backwards(Sampler[int]):
        def __init__(self, size):
            self.size = size

        def __iter__(self):
            return iter(range(self.size - 1, -1, -1))

        def __len__(self):
            return self.size

    class Stream(IterableDataset[int]):
        def __iter__(self):
            return iter([3, 1, 2])

    loader: DataLoader[tuple[int, int]] = DataLoader(Squares(), batch_size=2, sampler=Backwards(4))
    assert [[column.tolist() for column in batch] for batch in loader] == [[[3, 2], [9, 4]], [[1, 0], [1, 0]]]
    assert [batch.tolist() for batch in DataLoader(Stream(), batch_size=2)] == [[3, 1], [2]]
    assert Subset[int].__origin__ is Subset


@pytest.mark.gpu
def test_aux_refusal_and_tensor_aux_on_the_device():
    pytest.importorskip("cupy")
    x = ag.tensor(X, device="cuda")
    with pytest.raises(RuntimeError, match="^Expected tensors, got unsupported type <class 'float'>$"):
        func.grad(lambda x: ((x * x).sum(), x.sum().item()), has_aux=True)(x)
    gradient, aux = func.grad(lambda x: ((x * x).sum(), {"e": x.exp()}), has_aux=True)(x)
    assert gradient.device == x.device and aux["e"].device == x.device
    np.testing.assert_allclose(gradient.cpu().numpy(), 2 * X)
    np.testing.assert_allclose(aux["e"].cpu().numpy(), np.exp(X))
