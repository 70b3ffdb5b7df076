"""Behaviour that a generated differential review of actorgrad.utils.data against PyTorch found missing:
numpy strings stay strings, numpy scalars or 0-d arrays of several dtypes promote as tensors do (not as numpy
does), and a DataLoader warns when an IterableDataset yields more than the length `len(loader)` read."""

import warnings
from collections.abc import Iterator

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.utils.data import DataLoader, IterableDataset, default_collate


@pytest.mark.parametrize("word", [np.str_("ab"), np.bytes_(b"ab")])
def test_numpy_strings_collate_to_a_list(word: np.generic) -> None:
    assert default_collate([word, word]) == [word, word]


def test_numpy_strings_inside_dicts_collate_beside_numbers() -> None:
    samples = [{"name": np.str_("x"), "score": np.float32(0.5)}, {"name": np.str_("yz"), "score": np.float32(2.0)}]
    batch = default_collate(samples)
    assert batch["name"] == ["x", "yz"]
    assert batch["score"].dtype == ag.float32
    np.testing.assert_array_equal(batch["score"].numpy(), np.array([0.5, 2.0], dtype=np.float32))


def test_dataloader_batches_a_dataset_of_numpy_strings() -> None:
    words = [np.str_(w) for w in ("a", "bc", "d")]
    assert list(DataLoader(words, batch_size=2)) == [["a", "bc"], ["d"]]


# (numpy samples, the dtype that tensor promotion gives): a float type beats any integer one whatever its size,
# unlike numpy, which widens int16 with float16 to float32 and int64 with float32 to float64
PROMOTIONS = [
    ([np.int16(3), np.float16(0.5)], ag.float16),
    ([np.int64(3), np.float32(0.5)], ag.float32),
    ([np.array(3, dtype=np.int64), np.array(0.5, dtype=np.float32)], ag.float32),
    ([np.array(3, dtype=np.int16), np.float16(0.5)], ag.float16),
    ([np.int8(3), np.uint8(200)], ag.int16),
]


@pytest.mark.parametrize(("samples", "dtype"), PROMOTIONS)
def test_numpy_scalars_of_several_dtypes_promote_as_tensors(samples: list, dtype: ag.dtype) -> None:
    batch = default_collate(samples)
    assert batch.dtype == dtype
    assert batch.shape == (2,)
    assert batch.tolist() == [float(s) for s in samples]


@pytest.mark.parametrize("kind", [np.float32, np.int16, np.bool_, np.complex64])
def test_numpy_scalars_of_one_dtype_keep_it(kind: type) -> None:
    samples = [kind(1), kind(0)]
    batch = default_collate(samples)
    assert batch.numpy().dtype == np.dtype(kind)
    np.testing.assert_array_equal(batch.numpy(), np.array(samples))


class Stream(IterableDataset):
    """Yields `count` numbers while its `__len__` reports `reported`."""

    def __init__(self, count: int, reported: int) -> None:
        self.count = count
        self.reported = reported

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.count))

    def __len__(self) -> int:
        return self.reported

    def __repr__(self) -> str:
        return "Stream"


def test_loader_warns_at_each_batch_past_the_length_it_reported() -> None:
    loader = DataLoader(Stream(4, 2), batch_size=None)
    assert len(loader) == 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert list(loader) == [0, 1, 2, 3]
    assert [str(w.message) for w in caught] == [
        f"Length of IterableDataset Stream was reported to be 2(when accessing len(dataloader)), but {n} samples "
        "have been fetched. " for n in (3, 4)]
    assert caught[0].filename == __file__


def test_loader_whose_length_was_not_read_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(DataLoader(Stream(4, 2), batch_size=None)) == [0, 1, 2, 3]


def test_batches_are_counted_against_the_reported_sample_count() -> None:
    # 6 samples in batches of 2 are 3 batches, no more than the 3 samples reported: no warning, as in PyTorch
    loader = DataLoader(Stream(6, 3), batch_size=2)
    assert len(loader) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(loader)) == 3


def test_warning_with_workers_points_at_the_replicas() -> None:
    loader = DataLoader(Stream(2, 2), batch_size=None, num_workers=2)
    assert len(loader) == 2
    with pytest.warns(UserWarning, match="not properly configuring the IterableDataset replica") as caught:
        assert sorted(loader) == [0, 0, 1, 1]
    assert len(caught) == 2
