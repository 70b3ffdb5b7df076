"""Storages and set_, as PyTorch's: untyped_storage() is the memory a tensor shares with its views (one data_ptr,
its bytes), storage() its elements (with PyTorch's deprecation warning), and set_ points a tensor at other memory,
refusing what PyTorch refuses (a leaf that requires grad, another dtype or device) and memory too small for it."""

from __future__ import annotations

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings
from actorgrad.storage import TYPED_STORAGE_DEPRECATED, TypedStorage, UntypedStorage


def test_views_share_one_untyped_storage_of_the_whole_memory():
    t = ag.arange(6, dtype=ag.float32)
    s = t[2:].untyped_storage()
    assert isinstance(s, UntypedStorage)
    assert s.data_ptr() == t.data_ptr() == t.reshape(2, 3).t().untyped_storage().data_ptr()
    assert s.nbytes() == s.size() == len(s) == 24 and s.element_size() == 1
    assert bytes(s.tolist()) == np.arange(6, dtype=np.float32).tobytes() and s[6] == 128
    assert ag.arange(3.0).untyped_storage().data_ptr() != s.data_ptr()
    assert repr(ag.zeros(1, dtype=ag.uint8).untyped_storage()) == (
        " 0\n[actorgrad.storage.UntypedStorage(device=cpu) of size 1]")


def test_typed_storage_lists_the_elements_and_warns_that_it_is_deprecated():
    t = ag.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ag.float64)
    user_warnings._warned_once.discard(TYPED_STORAGE_DEPRECATED)  # warned once per process, as PyTorch's
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        s = t[1].storage()
    assert isinstance(s, TypedStorage) and s.dtype == np.float64
    assert s.tolist() == [1.0, 2.0, 3.0, 4.0] and len(s) == 4 and s[2] == 3.0 and s.element_size() == 8
    assert s.data_ptr() == t.data_ptr() and s.untyped().nbytes() == 32


def test_set_to_a_tensor_shares_its_memory_and_bumps_the_version():
    a, b = ag.zeros(3), ag.arange(4.0)
    version = a._version
    assert a.set_(b) is a
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0] and a.data_ptr() == b.data_ptr() and a._version == version + 1
    a.add_(1)
    assert b.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_set_to_a_storage_with_offset_size_and_stride_views_those_elements():
    b = ag.arange(6.0)
    a = ag.zeros(1)
    a.set_(b.untyped_storage(), 1, (2, 2), (2, 1))
    assert a.tolist() == [[1.0, 2.0], [3.0, 4.0]] and a.storage_offset() == 1
    assert a.untyped_storage().data_ptr() == b.data_ptr()
    a.mul_(10)
    assert b.tolist() == [0.0, 10.0, 20.0, 30.0, 40.0, 5.0]
    assert ag.zeros(2).set_(b.untyped_storage()).tolist() == b.tolist()
    assert ag.zeros(2).set_().shape == (0,)


def test_set_refuses_a_leaf_that_requires_grad_other_dtypes_and_memory_too_small():
    b = ag.arange(4.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        ag.zeros(3, requires_grad=True).set_(b)
    with pytest.raises(RuntimeError, match="Could not set tensor of type long int to a tensor of type float"):
        ag.zeros(2).set_(ag.arange(3))
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 16"):
        ag.zeros(2).set_(b.untyped_storage(), 1, (2, 2), (3, 1))
    with pytest.raises(TypeError, match="set_"):
        ag.zeros(2).set_(5)


def test_set_on_a_non_leaf_records_a_node_without_derivative_and_no_grad_allows_a_leaf():
    x = ag.ones(3, requires_grad=True)
    y = x * 2
    y.set_(ag.arange(4.0))
    assert y.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::set_ is not implemented"):
        y.sum().backward()
    with ag.no_grad():
        x.set_(ag.arange(4.0))
    assert x.requires_grad and x.shape == (4,)
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0, 3.0]


def test_the_deprecated_out_of_place_resize_reshapes_with_a_gradient_and_keeps_the_element_count():
    x = ag.arange(6.0, requires_grad=True)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.resize(2, 3)
    assert y.shape == (2, 3)
    (y * ag.arange(6.0).reshape(2, 3)).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        assert x.resize_as(ag.zeros(3, 2)).shape == (3, 2)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match=r"requested resize to 4 \(4 elements in total"):
        x.resize(4)


def test_an_in_place_change_of_the_old_base_of_a_view_set_elsewhere_leaves_it_alone():
    for b in (ag.zeros(4, dtype=ag.float64), ag.zeros(4, dtype=ag.float64, requires_grad=True).clone()):
        v = b[1:3]
        v.set_(ag.zeros(2, dtype=ag.float64))
        b.add_(1)
        assert b.tolist() == [1.0] * 4 and v.tolist() == [0.0, 0.0]


def test_set_names_unsigned_dtypes_in_its_refusal():
    with pytest.raises(RuntimeError, match="Could not set tensor of type float to a tensor of type unsigned int"):
        ag.zeros(2, dtype=ag.uint32).set_(ag.zeros(2, dtype=ag.float32))
