"""`tensor[index] = value`, narrow, movedim, `.H` / `.mH` / adjoint and index_select where a differential review
against PyTorch found actorgrad behaving otherwise: index_put_'s dtype check, the values PyTorch takes, values
lying in the memory written to, writes into expanded tensors (and their gradients), narrow's start checks and node
names, the 0-d adjoint warnings, and row-major results of indexing off dim 0. Expected values come from numpy doing
the same writes and selections, and gradients from finite differences."""

import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings
from actorgrad.autograd import gradcheck, gradgradcheck

PARTLY_SHARED = "some elements of the input tensor and the written-to tensor refer to a single memory location"
SHARED_MEMORY = "more than one element of the written-to tensor refers to a single memory location"
EXPANDED_PUT = "Use of index_put_ on expanded tensors is deprecated"
EXPANDED_MASKED_FILL = "Use of masked_fill_ on expanded tensors is deprecated"


def leaf(array, device=None):
    return ag.tensor(np.asarray(array, dtype=np.float64), requires_grad=True, device=device)


# -- index_put_'s dtype check --------------------------------------------------------------------------------------
@pytest.mark.parametrize("index, value_shape", [
    ([0, 2], (2, 4)),
    ((slice(None), [0, 1]), (3, 2)),
    ((0, [0, 1]), (2,)),
    ((Ellipsis, [1]), (3, 1)),
    ("mask", (6,)),
    ("mask", ()),  # two index tensors (or an integer one) are no masked_fill_, even for one element
])
def test_an_advanced_write_needs_the_destination_dtype(index, value_shape):
    x = ag.zeros(3, 4, dtype=ag.float64)
    if index == "mask":
        index = ag.tensor(np.arange(12).reshape(3, 4) % 2 == 0)
        if not value_shape:
            index = (ag.tensor([0, 1]), ag.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match, got Double "
                                           "for the destination and Float for the source."):
        x[index] = ag.ones(value_shape, dtype=ag.float32)
    assert not x.numpy().any()
    with pytest.raises(RuntimeError, match="got Long for the destination and Float for the source"):
        ag.zeros(4, dtype=ag.int64)[ag.tensor([True, False, True, False])] = ag.ones(2)


def test_basic_writes_and_one_element_mask_fills_cast_as_pytorchs_copy_and_masked_fill():
    x = ag.zeros(4, dtype=ag.float64)
    x[0:2] = ag.tensor([0.1, 0.2], dtype=ag.float32)
    x[3] = ag.tensor(0.3, dtype=ag.float32)
    expected = np.zeros(4)
    expected[0:2] = np.array([0.1, 0.2], np.float32)
    expected[3] = np.float32(0.3)
    np.testing.assert_array_equal(x.numpy(), expected)
    mask = np.array([True, False, True, False])
    for index in (ag.tensor(mask), mask, mask.tolist(), (Ellipsis, ag.tensor(mask))):
        y = ag.zeros(4, dtype=ag.int64)
        y[index] = ag.tensor([2.7])  # one element: PyTorch's masked_fill_, which truncates
        np.testing.assert_array_equal(y.numpy(), np.where(mask, np.float64(2.7).astype(np.int64), 0))
    z = ag.zeros(4, dtype=ag.float64)
    z[True] = ag.ones(4, dtype=ag.float32)  # a bare True is PyTorch's copy into z[None]
    np.testing.assert_array_equal(z.numpy(), np.ones(4))


# -- the values PyTorch takes --------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, name", [
    ([1.0, 2.0], "list"), ((1.0, 2.0), "tuple"), (np.array([1.0, 2.0]), "numpy.ndarray"),
    (np.array(1.0), "numpy.ndarray"), (np.float32(1.0), "numpy.float32"), (np.bool_(True), "numpy.bool"),
    (None, "NoneType"), (object(), "object"),
])
@pytest.mark.parametrize("index", [slice(0, 2), [0, 1], 0])
def test_a_value_that_is_no_tensor_or_number_is_refused(value, name, index):
    x = ag.zeros(4, dtype=ag.float64)
    with pytest.raises(TypeError, match=f"can't assign a {name} to a actorgrad.DoubleTensor"):
        x[index] = value
    assert not x.numpy().any()


def test_numpy_integers_and_numpy_float64_are_numbers():
    x = ag.zeros(4, dtype=ag.int64)
    x[0], x[1:3], x[[3]] = np.int64(5), np.float64(3.7), np.uint8(200)
    np.testing.assert_array_equal(x.numpy(), [5, 3, 3, 200])
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8"):
        ag.zeros(2, dtype=ag.int8)[0] = np.int64(1000)


# -- a value lying in the memory written to ------------------------------------------------------------------------
@pytest.mark.parametrize("write", [
    lambda a: a.__setitem__(slice(1, None), a[:-1]),
    lambda a: a.__setitem__(slice(None, 3), a[1:4]),
    lambda a: a.view(2, 3).__setitem__(1, a[2:5]),
    lambda a: a.__setitem__([0, 1], a[0:2]),  # index_put_ refuses the very same memory too
    lambda a: a.__setitem__([0, 1], a[5]),
    lambda a: a.__setitem__(slice(1, None), a.detach()[:-1]),
    lambda a: a[1:].copy_(a[:-1]),
])
def test_a_value_partly_in_the_written_memory_is_refused(write):
    a = ag.arange(6.0)
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        write(a)
    np.testing.assert_array_equal(a.numpy(), np.arange(6.0))


@pytest.mark.parametrize("index, source", [
    (slice(None), slice(None)),  # the very same memory: a copy onto itself
    (slice(0, 3), slice(3, None)),
    (slice(None, None, 2), slice(1, None, 2)),  # not one block of memory: PyTorch does not look further
    (slice(1, 3), slice(0, 1)),
])
def test_a_value_apart_from_or_equal_to_the_written_memory_is_written(index, source):
    a = ag.arange(6.0)
    a[index] = a[source]
    expected = np.arange(6.0)
    expected[index] = expected[source].copy()
    np.testing.assert_array_equal(a.numpy(), expected)


# -- writes into an expanded tensor ----------------------------------------------------------------------------------
def test_an_expanded_tensor_takes_writes_whose_elements_do_not_share_memory():
    base = np.arange(5.0)
    a = ag.tensor(base.copy())
    b = a.expand(3, 5)
    b[0, 0] = -1.0
    b[1, 1:3] = ag.tensor([-2.0, -3.0])
    b[2].add_(10.0)
    row = b[0]
    row[4] = -4.0
    expected = base.copy()
    expected[0], expected[1:3] = -1.0, [-2.0, -3.0]
    expected += 10.0
    expected[4] = -4.0
    np.testing.assert_array_equal(a.numpy(), expected)
    np.testing.assert_array_equal(b.numpy(), np.broadcast_to(expected, (3, 5)))
    for write in (lambda: b.__setitem__((slice(None), 0), 7.0), lambda: b.add_(1), lambda: b.copy_(ag.ones(3, 5)),
                  lambda: b.fill_(ag.tensor(1.0))):
        with pytest.raises(RuntimeError, match=SHARED_MEMORY):
            write()
    np.testing.assert_array_equal(a.numpy(), expected)


def test_an_expanded_tensor_is_filled_and_index_put_into_with_pytorchs_warnings():
    a = ag.arange(5.0)
    b = a.expand(3, 5)
    b.fill_(2.0)
    np.testing.assert_array_equal(a.numpy(), np.full(5, 2.0))
    b.zero_()
    np.testing.assert_array_equal(a.numpy(), np.zeros(5))
    with pytest.warns(UserWarning, match=EXPANDED_PUT) as caught:
        b[[0, 1], [1, 3]] = ag.tensor([5.0, 6.0])
    assert not any(EXPANDED_MASKED_FILL in str(w.message) for w in caught)
    np.testing.assert_array_equal(a.numpy(), [0.0, 5.0, 0.0, 6.0, 0.0])
    mask = np.zeros((3, 5), bool)
    mask[2, 4] = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b[ag.tensor(mask)] = 9.0  # one element into one mask: PyTorch's masked_fill_, which warns as well
    assert [EXPANDED_PUT in str(w.message) or EXPANDED_MASKED_FILL in str(w.message) for w in caught] == [True, True]
    np.testing.assert_array_equal(a.numpy(), [0.0, 5.0, 0.0, 6.0, 9.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b[0, [0, 2]] = ag.tensor([1.0, 3.0])  # b[0] shares no memory: no warning
    np.testing.assert_array_equal(a.numpy(), [1.0, 5.0, 3.0, 6.0, 9.0])


@pytest.mark.parametrize("write", [
    lambda a, b: b.__setitem__((0, 0), a[3] * 2),
    lambda a, b: b.__setitem__(2, a * a),
    lambda a, b: b.__setitem__((1, slice(1, 3)), a[:2].exp()),
    lambda a, b: b[0].mul_(a),
    lambda a, b: b[1].__setitem__(slice(2, None), a[:3] ** 3),
])
def test_writes_into_an_expanded_view_differentiate_each_place_once(write):
    weights = np.arange(1.0, 16.0).reshape(3, 5)

    def fn(a):
        c = (a * 1.5).reshape(1, 5)
        b = c.expand(3, 5)
        write(a, b)
        return (b * ag.tensor(weights)).sum() + (c * c).sum(), c

    x = leaf(np.linspace(0.3, 1.1, 5))
    assert gradcheck(lambda a: fn(a)[0], (x,))
    assert gradgradcheck(lambda a: fn(a)[0], (x,))
    c = fn(x)[1]  # the values: what numpy's write gives, read back through the base
    expected = (np.linspace(0.3, 1.1, 5) * 1.5).reshape(1, 5)
    alias = np.lib.stride_tricks.as_strided(expected, (3, 5), (0, 8), writeable=True)
    write(ag.tensor(np.linspace(0.3, 1.1, 5)), _NumpyWrites(alias))
    np.testing.assert_allclose(c.detach().numpy(), expected, rtol=1e-15)


class _NumpyWrites:
    """A numpy array taking the writes the test's functions make (setitem, `[i].mul_`) with numpy's own ops."""

    def __init__(self, array):
        self.array = array

    def __setitem__(self, index, value):
        self.array[index] = value.numpy()

    def __getitem__(self, index):
        return _NumpyWrites(self.array[index])

    def mul_(self, other):
        self.array *= other.numpy()


# -- narrow and movedim ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("start", [ag.tensor([1]), ag.tensor(1.0), ag.tensor(True), ag.tensor([[1]])])
def test_narrow_takes_only_a_0_dim_integer_start_tensor(start):
    x = ag.arange(6.0).reshape(2, 3)
    with pytest.raises(RuntimeError, match="start must be an 0-dim integral Tensor."):
        x.narrow(1, start, 2)
    for bad in (1.0, True):
        with pytest.raises(TypeError, match="narrow"):
            ag.narrow(x, 1, bad, 2)
    for good in (ag.tensor(1), ag.tensor(1, dtype=ag.int32), np.int64(1), 1):
        np.testing.assert_array_equal(ag.narrow(x, 1, good, 2).numpy(), np.arange(6.0).reshape(2, 3)[:, 1:3])
    np.testing.assert_array_equal(ag.narrow_copy(x, 1, ag.tensor([1]), 2).numpy(),
                                  np.arange(6.0).reshape(2, 3)[:, 1:3])


@pytest.mark.parametrize("dim, start, length", [(1, 0, 3), (0, 0, 2), (1, 1, 2), (-1, -2, 1)])
def test_narrow_records_slice_backward_even_over_a_whole_dim(dim, start, length):
    x = leaf(np.arange(6.0).reshape(2, 3) / 7)
    out = ag.narrow(x, dim, start, length)
    assert out.grad_fn.name() == "SliceBackward0"
    assert out._base is x
    assert gradcheck(lambda t: ag.narrow(t, dim, start, length) * 3, (x,))


def test_movedim_of_a_0_dim_tensor_is_pytorchs_alias():
    s = leaf(2.0)
    for out in (ag.movedim(s, 0, 0), ag.moveaxis(s, -1, 0), ag.movedim(s, (), ())):
        assert out.grad_fn.name() == "AliasBackward0" and out.item() == 2.0
    assert ag.movedim(leaf(np.ones((2, 3))), 0, 1).grad_fn.name() == "PermuteBackward0"


def test_adjoints_of_a_0_dim_tensor_warn_once_per_process(monkeypatch):
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    s = ag.tensor(3.0 + 1.0j)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [(s.H.item(), s.mH.item(), ag.adjoint(s).item()) for _ in range(3)]
    assert outs == [(3.0 - 1.0j,) * 3] * 3  # PyTorch's 0-d adjoints are the conjugate
    assert [str(w.message) for w in caught] == [
        f"{name} is deprecated on 0-D tensors. Consider using x.conj()." for name in ("Tensor.H", "Tensor.mH",
                                                                                      "adjoint()")
    ]
    with pytest.raises(RuntimeError, match="tensor.adjoint\\(\\) is only supported on matrices or batches of "
                                           "matrices. Got 1-D tensor."):
        ag.adjoint(ag.ones(2))


# -- indexing off dim 0 is row-major ---------------------------------------------------------------------------------
def test_indexing_off_dim_0_gives_row_major_results_that_view():
    values = np.arange(24.0).reshape(2, 3, 4)
    x = ag.tensor(values)
    i = np.array([2, 0])
    results = [
        (ag.index_select(x, 1, ag.tensor(i)), np.take(values, i, axis=1)),
        (ag.index_select(x, 2, ag.tensor(i)), np.take(values, i, axis=2)),
        (x[:, ag.tensor(i)], np.take(values, i, axis=1)),
        (x[:, :, [0, 3]], np.take(values, [0, 3], axis=2)),
        (x[:, np.array([True, False, True])], np.take(values, [0, 2], axis=1)),
        (x[[1, 0]], np.take(values, [1, 0], axis=0)),
    ]
    for out, expected in results:
        assert out.is_contiguous()
        np.testing.assert_array_equal(out.view(-1).numpy(), expected.ravel())
    g = leaf(values / 10)
    assert gradcheck(lambda t: ag.index_select(t, 2, ag.tensor(i)).view(-1)[::3], (g,))


@pytest.mark.gpu
def test_fixes_on_cuda(cupy):
    x = ag.zeros(4, dtype=ag.float64, device="cuda:0")
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        x[[0, 2]] = ag.ones(2, device="cuda:0")
    x[ag.tensor([True, False, True, False], device="cuda:0")] = ag.tensor(1.5)  # a cpu value: masked_fill_
    np.testing.assert_array_equal(x.cpu().numpy(), [1.5, 0.0, 1.5, 0.0])
    with pytest.raises(TypeError, match="can't assign a list to a actorgrad.cuda.DoubleTensor"):
        x[0:2] = [1.0, 2.0]
    with pytest.raises(RuntimeError, match=PARTLY_SHARED):
        x[1:] = x[:-1]
    values = np.arange(24.0).reshape(2, 3, 4)
    y = ag.tensor(values, device="cuda:0")
    out = ag.index_select(y, 1, ag.tensor([2, 0], device="cuda:0"))
    assert out.is_contiguous()
    np.testing.assert_array_equal(out.view(-1).cpu().numpy(), np.take(values, [2, 0], axis=1).ravel())
    z = leaf(values, device="cuda:0")
    narrowed = ag.narrow(z, 2, ag.tensor(0), 4)
    assert narrowed.grad_fn.name() == "SliceBackward0"
    (narrowed * 2).sum().backward()
    np.testing.assert_array_equal(z.grad.cpu().numpy(), np.full(values.shape, 2.0))
