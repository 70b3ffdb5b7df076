"""Comparisons, logical and bitwise ops and value tests: numpy's results, broadcasting, Python numbers on either
side, bool tensors with no grad_fn, identity hashing kept beside `==`, and `bool(tensor)`."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import actorgrad as ag

COMPARISONS = {
    "eq": (operator.eq, ag.eq, np.equal), "ne": (operator.ne, ag.ne, np.not_equal),
    "lt": (operator.lt, ag.lt, np.less), "le": (operator.le, ag.le, np.less_equal),
    "gt": (operator.gt, ag.gt, np.greater), "ge": (operator.ge, ag.ge, np.greater_equal),
}


@pytest.mark.parametrize("name", list(COMPARISONS))
@settings(max_examples=15, deadline=None, database=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=3),
       seed=st.integers(0, 2**32 - 1))
def test_comparisons_broadcast_and_match_numpy(name, shapes, seed):
    op, function, ref = COMPARISONS[name]
    rng = np.random.default_rng(seed)
    a, b = (rng.integers(-2, 3, s).astype(np.float64) for s in shapes.input_shapes)  # small ints: many ties
    x = ag.tensor(a, requires_grad=True)
    y = ag.tensor(b)
    for out in (op(x, y), function(x, y), getattr(x, name)(y)):
        assert out.dtype == ag.bool_ and out.grad_fn is None and not out.requires_grad
        assert out.shape == shapes.result_shape
        np.testing.assert_array_equal(out.numpy(), ref(a, b))


@pytest.mark.parametrize("name", list(COMPARISONS))
def test_python_numbers_on_either_side(name):
    op, function, ref = COMPARISONS[name]
    a = np.array([[0.5, 1.0], [1.5, 2.0]])
    x = ag.tensor(a, dtype=ag.float64)
    np.testing.assert_array_equal(op(x, 1.0).numpy(), ref(a, 1.0))
    np.testing.assert_array_equal(op(1, x).numpy(), ref(1, a))  # Python turns `1 < x` into `x > 1`
    np.testing.assert_array_equal(function(x, 1).numpy(), ref(a, 1))
    np.testing.assert_array_equal(op(a, x).numpy(), ref(a, a))  # numpy defers to the tensor


def test_equality_with_other_types_falls_back_to_identity():
    x = ag.tensor([1.0, 2.0])
    assert (x == None) is False  # noqa: E711
    assert (x != "a") is True
    with pytest.raises(TypeError):
        x < "a"  # noqa: B015


def test_tensors_keep_identity_hashing_beside_eq():
    a, b = ag.tensor([1.0, 2.0]), ag.tensor([1.0, 2.0])
    assert hash(a) == object.__hash__(a)
    table = {a: "a", b: "b"}
    assert table[a] == "a" and table[b] == "b"
    assert len({a, b, a}) == 2
    assert (a == b).tolist() == [True, True]


def test_gradients_still_flow_after_comparisons():
    # the engine keys dicts and sets by tensor; comparisons must not get in its way
    x = ag.tensor([1.0, -2.0, 3.0], requires_grad=True)
    mask = x > 0
    loss = ag.where(mask, x * x, -x).sum()
    loss.backward()
    assert x.grad.tolist() == [2.0, -1.0, 6.0]


def test_bool_of_a_tensor():
    assert bool(ag.tensor([1.0])) is True
    assert bool(ag.tensor(0)) is False
    assert bool(ag.tensor([[True]]))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(ag.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(ag.tensor([]))
    x = ag.tensor([3.0])
    assert (x > 2) and not (x < 2)


def test_logical_ops():
    a = ag.tensor([[1.0], [0.0]])
    b = ag.tensor([2, 0, 0])
    for fn, ref in ((ag.logical_and, np.logical_and), (ag.logical_or, np.logical_or),
                    (ag.logical_xor, np.logical_xor)):
        out = fn(a, b)
        assert out.dtype == ag.bool_ and out.shape == (2, 3)
        np.testing.assert_array_equal(out.numpy(), ref(a.numpy(), b.numpy()))
    assert ag.logical_not(ag.tensor([1.0, 0.0])).tolist() == [False, True]
    assert a.logical_and(b).shape == (2, 3) and a.logical_not().dtype == ag.bool_


def test_bitwise_operators_on_masks_and_integers():
    m = ag.tensor([True, True, False, False])
    n = ag.tensor([True, False, True, False])
    assert (m & n).tolist() == [True, False, False, False]
    assert (m | n).tolist() == [True, True, True, False]
    assert (m ^ n).tolist() == [False, True, True, False]
    assert (~m).tolist() == [False, False, True, True]
    assert (True & n).tolist() == [True, False, True, False]
    assert (ag.tensor([1, 2]) & ag.tensor([3, 1])).tolist() == [1, 0]
    x = ag.tensor([-1.0, 0.5, 2.0])
    assert ((x > 0) & (x < 1)).tolist() == [False, True, False]
    with pytest.raises(NotImplementedError, match="\"bitwise_and_cpu\" not implemented for 'Float'"):
        x & x
    with pytest.raises(TypeError, match=r"~ \(operator.invert\) is only implemented on integer and Boolean-type"):
        operator.invert(x)


def test_value_tests():
    x = ag.tensor([1.0, np.nan, np.inf, -np.inf, 0.0])
    assert x.isnan().tolist() == [False, True, False, False, False]
    assert ag.isinf(x).tolist() == [False, False, True, True, False]
    assert ag.isfinite(x).tolist() == [True, False, False, False, True]
    ints = ag.tensor([[1, 2]])
    assert ag.isnan(ints).tolist() == [[False, False]] and ag.isfinite(ints).tolist() == [[True, True]]
    assert ag.isinf(ag.tensor([True])).tolist() == [False]
    y = ag.tensor([np.nan], requires_grad=True)
    assert y.isnan().grad_fn is None and not y.isnan().requires_grad


def test_incompatible_shapes():
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of tensor b \(3\) at "
                                           r"non-singleton dimension 1$"):
        operator.lt(ag.tensor([[1.0, 2.0]]), ag.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of tensor b \(3\)"):
        ag.logical_and(ag.tensor([True, False]), ag.tensor([True, False, True]))
