"""Indexing ops (`tensor[index]`, gather, scatter_add, index_select, masked_fill): forward values against numpy,
gradients and second derivatives against finite differences, accumulation over repeated indexes, PyTorch's
node names and errors.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import actorgrad as ag
from actorgrad.autograd import grad

TOLERANCES = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}
EXAMPLES = settings(
    max_examples=15, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


def _leaves(arrays) -> list:
    return [ag.tensor(a, dtype=ag.float64, requires_grad=True) for a in arrays]


def check(fn, arrays, want) -> None:
    """Forward against `want`, gradcheck, and gradgradcheck of the output squared (which differentiates the
    recorded backward) after checking that a recorded backward gives the plain backward's values."""
    with ag.no_grad():
        got = fn(*[ag.tensor(a, dtype=ag.float64) for a in arrays])
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    xs = _leaves(arrays)
    assert ag.autograd.gradcheck(fn, xs, **TOLERANCES)

    def squared(*inputs):
        out = fn(*inputs)
        return out * out

    recorded = grad(squared(*xs).sum(), xs, create_graph=True)
    fresh = _leaves(arrays)
    plain = grad(squared(*fresh).sum(), fresh)
    for r, p in zip(recorded, plain):
        np.testing.assert_allclose(r.detach().numpy(), p.numpy(), rtol=1e-12, atol=1e-14)
    assert ag.autograd.gradgradcheck(squared, xs, **TOLERANCES)


@st.composite
def array(draw, shape=None):
    """A random float64 array; sometimes a transposed (non-contiguous) view."""
    shape = draw(SHAPES) if shape is None else shape
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if len(shape) >= 2 and draw(st.booleans()):
        return rng.uniform(-1.5, 1.5, shape[::-1]).T
    return rng.uniform(-1.5, 1.5, shape)


@st.composite
def index_entry(draw, size: int, advanced: bool):
    kinds = ["int", "slice", "none"] + (["list", "array", "tensor", "mask"] if advanced else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "int":
        return draw(st.integers(-size, size - 1))
    if kind == "slice":
        return slice(draw(st.none() | st.integers(-size, size)), draw(st.none() | st.integers(-size, size)),
                     draw(st.none() | st.integers(1, 3)))
    if kind == "none":
        return None
    if kind == "mask":
        return np.asarray(draw(st.lists(st.booleans(), min_size=size, max_size=size)))
    picks = draw(st.lists(st.integers(-size, size - 1), min_size=1, max_size=4))
    if kind == "list":
        return picks
    picks = np.asarray(picks, dtype=np.int64)
    return picks if kind == "array" else ag.tensor(picks)


@st.composite
def index_case(draw):
    """An index as numpy and PyTorch read it alike: any mix of basic entries, or one advanced entry (an integer
    list, array, tensor or mask) among slices, None and Ellipsis."""
    a = draw(array())
    advanced = draw(st.booleans())
    entries, dim = [], 0
    slot = draw(st.integers(0, a.ndim - 1)) if advanced else -1
    for _ in range(draw(st.integers(1, a.ndim))):
        entry = draw(index_entry(a.shape[dim], dim == slot))
        if dim == slot and not isinstance(entry, list | np.ndarray | ag.Tensor):
            entry = [draw(st.integers(0, a.shape[dim] - 1))] * 2  # a repeated index: its gradients add
        if advanced and isinstance(entry, int):
            entry = slice(None)
        entries.append(entry)
        dim += entry is not None
        if dim == a.ndim:
            break
    if draw(st.booleans()):  # anywhere when the entries use every dim (it then stands for none), else last
        entries.insert(draw(st.integers(0, len(entries))) if dim == a.ndim else len(entries), Ellipsis)
    index = tuple(entries) if len(entries) > 1 or draw(st.booleans()) else entries[0]
    return a, index


def _as_numpy_index(index):
    entries = index if isinstance(index, tuple) else (index,)
    out = tuple(e.numpy() if isinstance(e, ag.Tensor) else np.asarray(e) if isinstance(e, list) else e
                for e in entries)
    return out if isinstance(index, tuple) else out[0]


@EXAMPLES
@given(index_case())
def test_getitem_matches_numpy_and_differentiates(case):
    a, index = case
    check(lambda x: x[index], (a,), np.asarray(a[_as_numpy_index(index)]))


@pytest.mark.parametrize("index, two_steps", [
    ((0, slice(None), [0, 2]), lambda a: a[0][:, [0, 2]]),  # numpy would put the indexed dim first
    ((slice(None), 1, slice(None), [1, 1]), lambda a: a[:, 1][:, :, [1, 1]]),
    (([0, 1], None, [2, 0]), lambda a: a[:, None][[0, 1], :, [2, 0]]),
    ((slice(None), [0, 1], None, [1, 0]), lambda a: a[:, :, None][:, [0, 1], :, [1, 0]]),
    ((1, [0, 0, 2], slice(1, None), [1, 0, 1]), lambda a: a[1][[0, 0, 2], 1:][:, :, [1, 0, 1]].diagonal(
        axis1=0, axis2=2).T),
])
def test_ints_index_before_advanced_indexes_as_in_pytorch(index, two_steps):
    a = np.random.default_rng(0).uniform(-1, 1, (2, 3, 4, 3))
    check(lambda x: x[index], (a,), two_steps(a))


def test_repeated_advanced_indexes_accumulate_their_gradients():
    x = ag.tensor(np.zeros((3, 2)), requires_grad=True)
    (x[[0, 2, 0, 0]] * ag.tensor([[1.0], [2.0], [3.0], [4.0]])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[8, 8], [0, 0], [2, 2]])
    z = ag.tensor(np.ones(4), requires_grad=True)
    z[ag.tensor(np.array([[1, 1], [3, 1]]))].sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), [0, 3, 0, 1])


def _leaf(shape=(3, 4, 5)) -> ag.Tensor:
    return ag.tensor(np.arange(math.prod(shape), dtype=np.float64).reshape(shape), requires_grad=True)


@pytest.mark.parametrize("index, name", [
    (1, "SelectBackward0"), ((Ellipsis, 1), "SelectBackward0"), ((1, slice(1, None)), "SliceBackward0"),
    ((slice(1, None), 1), "SelectBackward0"), (slice(None), "SliceBackward0"), ((slice(None),), "AliasBackward0"),
    (Ellipsis, "AliasBackward0"), (None, "UnsqueezeBackward0"), ((None, slice(0, None)), "UnsqueezeBackward0"),
    ([0, 0], "IndexBackward0"), ((slice(None), np.array([True, False, True, True])), "IndexBackward0"),
])
def test_getitem_node_names_match_pytorch(index, name):
    assert _leaf()[index].grad_fn.name() == name


def test_the_gradient_of_indexing_is_an_index_put_that_differentiates_back_to_indexing():
    x = _leaf()
    (g,) = grad((x[1:, [0, 0]] ** 2).sum(), [x], create_graph=True)
    assert g.grad_fn is not None
    (gg,) = grad((g * g).sum(), [x])
    want = np.zeros((3, 4, 5))
    want[1:, 0] = 32 * x.detach().numpy()[1:, 0]  # g = 4x where picked twice, so d(sum g^2)/dx = 32x
    np.testing.assert_allclose(gg.numpy(), want)


@pytest.mark.parametrize("index, error, match", [
    (5, IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ((slice(None), -5), IndexError, "index -5 is out of bounds for dimension 1 with size 4"),
    (([0, 3],), IndexError, "index 3 is out of bounds for dimension 0 with size 3"),
    ((0, 0, 0, 0), IndexError, "too many indices for tensor of dimension 3"),
    ((Ellipsis, 0, Ellipsis), IndexError, "an index can only have a single ellipsis"),
    (slice(None, None, -1), ValueError, "step must be greater than zero"),
    (ag.tensor([0.0]), IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (np.array([1.5]), IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (np.array([True, False]), IndexError, r"The shape of the mask \[2\] at index 0 does not match"),
    ("a", IndexError, "only integers, slices"),
])
def test_bad_indexes_raise_pytorchs_errors(index, error, match):
    with pytest.raises(error, match=match):
        _leaf()[index]


# -- gather, scatter_add, index_select, masked_fill --------------------------------------------------------------
@st.composite
def along_dim(draw, smaller_than=None):
    """(a, dim, index) with an int64 index no larger than `a` except along dim, and sometimes repeats."""
    a = draw(array())
    dim = draw(st.integers(-a.ndim, a.ndim - 1))
    shape = tuple(draw(st.integers(1, 3)) if d == dim % a.ndim else draw(st.integers(1, n))
                  for d, n in enumerate(a.shape))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return a, dim, rng.integers(0, a.shape[dim], shape)


def _positions(index: np.ndarray, dim: int):
    """(position in index, position in the indexed array) pairs, looping: the test's reference."""
    for pos in itertools.product(*map(range, index.shape)):
        target = list(pos)
        target[dim] = index[pos]
        yield pos, tuple(target)


@EXAMPLES
@given(along_dim())
def test_gather(case):
    a, dim, index = case
    want = np.empty(index.shape)
    for pos, target in _positions(index, dim % a.ndim):
        want[pos] = a[target]
    fn = (lambda x: x.gather(dim, ag.tensor(index))) if index.size % 2 else (lambda x: ag.gather(x, dim, index))
    check(fn, (a,), want)


@EXAMPLES
@given(along_dim(), st.integers(0, 1))
def test_scatter_add(case, larger_src):
    a, dim, index = case
    src = np.random.default_rng(index.size).uniform(-1, 1, tuple(n + larger_src for n in index.shape))
    want = a.copy()
    for pos, target in _positions(index, dim % a.ndim):
        want[target] += src[pos]
    check(lambda x, s: x.scatter_add(dim, ag.tensor(index), s), (a, src), want)


@EXAMPLES
@given(st.data())
def test_index_select(data):
    a = data.draw(array())
    dim = data.draw(st.integers(-a.ndim, a.ndim - 1))
    index = np.asarray(data.draw(st.lists(st.integers(0, a.shape[dim] - 1), max_size=4)), np.int64)  # PyTorch's range
    check(lambda x: ag.index_select(x, dim, ag.tensor(index)), (a,), np.take(a, index, dim))


@EXAMPLES
@given(st.data())
def test_masked_fill(data):
    a = data.draw(array())
    mask_shape = data.draw(st.sampled_from([a.shape, a.shape[1:], (1,) * a.ndim, (2,) + a.shape]))
    mask = np.asarray(data.draw(hnp.arrays(np.bool_, mask_shape)))
    want = np.where(mask, -2.0, a)
    check(lambda x: x.masked_fill(ag.tensor(mask), -2.0), (a,), want)
    value = np.asarray(0.75)
    check(lambda x, v: ag.masked_fill(x, mask, v), (a, value), np.where(mask, value, a))


def test_masked_fill_gradient_is_zero_where_masked_and_flows_to_a_tensor_value():
    x = ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64, requires_grad=True)
    v = ag.tensor(5.0, dtype=ag.float64, requires_grad=True)
    out = x.masked_fill(ag.tensor([True, False, True]), v)
    assert out.grad_fn.name() == "MaskedFillBackward1"
    (out * ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 2, 0])
    assert v.grad.item() == 4
    assert x.masked_fill(ag.tensor([True, False, True]), 0.0).grad_fn.name() == "MaskedFillBackward0"


@pytest.mark.parametrize("fn, name", [
    (lambda x: x.gather(1, ag.tensor(np.zeros((3, 2, 5), np.int64))), "GatherBackward0"),
    (lambda x: x.scatter_add(1, ag.tensor(np.zeros((3, 2, 5), np.int64)), x), "ScatterAddBackward0"),
    (lambda x: x.index_select(1, ag.tensor([0, 0])), "IndexSelectBackward0"),
])
def test_node_names_match_pytorch(fn, name):
    assert fn(_leaf()).grad_fn.name() == name


ZEROS = ag.tensor(np.zeros((3, 2, 5), np.int64))


@pytest.mark.parametrize("call, error, match", [
    (lambda x: x.gather(1, ag.tensor(np.zeros((3, 2, 5)))), RuntimeError,
     r"gather\(\): Expected dtype int32/int64 for index"),
    (lambda x: x.gather(1, ag.tensor(np.zeros((3, 2), np.int64))), RuntimeError,
     "Index tensor must have the same number of dimensions as input tensor"),
    (lambda x: x.gather(1, ag.tensor(np.full((3, 2, 5), 7))), RuntimeError,
     "index 7 is out of bounds for dimension 1 with size 4"),
    (lambda x: x.gather(1, ag.tensor(np.zeros((3, 2, 6), np.int64))), RuntimeError,
     r"Size does not match at dimension 2 expected index \[3, 2, 6\] to be no larger than self \[3, 4, 5\]"),
    (lambda x: x.gather(3, ZEROS), IndexError, "Dimension out of range"),
    (lambda x: x.scatter_add(1, ZEROS, x[:, :, :1]), RuntimeError, "to be no larger size than src"),
    (lambda x: x.scatter_add(1, ZEROS, ag.tensor(np.zeros((3, 4, 5), np.float32))), RuntimeError,
     r"scatter\(\): Expected self.dtype to be equal to src.dtype"),
    (lambda x: x.index_select(0, ag.tensor([[0]])), IndexError, "Index is supposed to be a vector"),
    (lambda x: x.index_select(0, ag.tensor([1.0])), RuntimeError, "Expected dtype int32 or int64 for index"),
    (lambda x: x.index_select(0, ag.tensor([3])), IndexError, "index out of range in self"),
    (lambda x: x.masked_fill(ag.tensor(np.ones(5)), 1.0), RuntimeError,
     "masked_fill_ only supports boolean masks, but got mask with dtype float"),
    (lambda x: x.masked_fill(ag.tensor(np.ones(5, bool)), ag.tensor([1.0])), RuntimeError,
     "only supports a 0-dimensional value tensor"),
    (lambda x: x.masked_fill(ag.tensor(np.ones(2, bool)), 1.0), RuntimeError,
     r"^The size of tensor a \(2\) must match the size of tensor b \(5\)"),
])
def test_bad_arguments_raise_pytorchs_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(_leaf())
