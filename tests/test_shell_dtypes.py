"""uint16, uint32 and uint64: PyTorch's shell dtypes, held, made and converted, with no promotion to other dtypes."""

import numpy as np
import pytest

import actorgrad as ag


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64"])
def test_names_are_the_numpy_dtypes(name):
    assert getattr(ag, name) == np.dtype(name)
    assert name in ag.__all__


@pytest.mark.parametrize("dtype", [ag.uint16, ag.uint32, ag.uint64])
def test_tensors_hold_the_whole_range_and_convert(dtype):
    top = int(np.iinfo(dtype).max)
    t = ag.tensor([0, 7, top], dtype=dtype)
    assert t.dtype == dtype
    assert t.tolist() == [0, 7, top]
    assert ag.zeros(3, dtype=dtype).dtype == dtype
    assert ag.iinfo(dtype).max == top
    assert t.to(ag.float64).tolist() == [0.0, 7.0, float(top)]
    assert repr(ag.tensor([1, 2], dtype=dtype)) == f"tensor([1, 2], dtype=actorgrad.{dtype})"


def test_no_promotion_with_another_dtype():
    with pytest.raises(TypeError, match="uint32"):
        ag.tensor([1, 2], dtype=ag.uint32) + ag.tensor([1, 2])


def test_ints_past_int64_fill_a_dtype_that_holds_them():
    assert ag.tensor([2**64 - 1, 2], dtype=ag.uint64).tolist() == [2**64 - 1, 2]
    assert ag.tensor([[2**63], [1]], dtype=ag.uint64).tolist() == [[2**63], [1]]
    assert ag.tensor([2**64], dtype=ag.float64).item() == float(2**64)
    assert ag.tensor([2**63], dtype=ag.complex128).item() == complex(2**63)
    for dtype in (None, ag.int64):
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            ag.tensor([2**63], dtype=dtype)
    with pytest.raises(OverflowError):
        ag.tensor([-1, 2**63], dtype=ag.uint64)
