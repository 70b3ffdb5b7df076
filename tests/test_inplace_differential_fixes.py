"""In-place writes, views and item assignment where a differential review against PyTorch found actorgrad
behaving differently: integer targets kept out of the graph, `x[index] = v`'s node and refusals chosen by whether
PyTorch writes through a view (and named after that view), complex numbers refused by real tensors, copy_'s error
for a source that would grow the tensor, views of views made in no_grad mode refused, and the in-place view
methods' node names."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

VIEW_OF_LEAF = "a view of a leaf Variable that requires grad is being used in an in-place operation."
LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
NO_GRAD_VIEW_OF_VIEW = (
    "Output 0 of {} is a view of a view which was created in no_grad mode and is being modified inplace with grad "
    "mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden."
)


def _values(shape, seed=0):
    return np.random.default_rng(seed).uniform(0.5, 2.0, size=shape)


def _leaf(shape, seed=0):
    return ag.tensor(_values(shape, seed), dtype=ag.float64, requires_grad=True)


# -- integer and bool targets take no gradient ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [ag.int64, ag.int32, ag.bool_])
@pytest.mark.parametrize(
    "write",
    [
        lambda y, src: y.__setitem__(Ellipsis, src) if isinstance(y, np.ndarray) else y.copy_(src),
        lambda y, src: y.__setitem__(slice(None), src),
        lambda y, src: y.__setitem__(1, src[1]),
        lambda y, src: y[1:].__setitem__(0, src[2]),  # through a view of the integer tensor
    ],
)
def test_a_write_into_an_integer_tensor_records_no_gradient(dtype, write):
    src_values = np.array([1.5, -2.5, 3.25])
    y = ag.zeros(3, dtype=dtype)
    expected = np.zeros(3, dtype=dtype)
    write(expected, src_values)  # numpy casts the same way: truncation toward zero, nonzero -> True
    write(y, ag.tensor(src_values, requires_grad=True))
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    np.testing.assert_array_equal(y.numpy(), expected)
    assert y._version == 1


def test_a_float_tensor_still_records_a_write_from_a_source_that_requires_grad():
    src = _leaf((3,))
    y = ag.zeros(3, dtype=ag.float32)
    y.copy_(src)
    assert y.requires_grad and y.grad_fn.name() == "torch::autograd::CopyBackwards"
    (grad,) = ag.autograd.grad((y * ag.tensor([1.0, 2.0, 3.0])).sum(), src)
    np.testing.assert_allclose(grad.numpy(), [1.0, 2.0, 3.0])


# -- x[index] = value: PyTorch's node and leaf refusal -------------------------------------------------------------
# Indices PyTorch writes through a view of the tensor (an int, None, True, a slice short of its dim) and those it
# writes into the tensor itself (Ellipsis, (), whole slices, advanced indices alone).
THROUGH_VIEW = [0, -1, (0, 1), (None, 1), slice(0, 2), slice(None, None, 2), (slice(None), slice(1, 3)), True,
                (0, [1, 2]), ([0, 2], 1), (slice(None), None, [1, 2]), ([0, 2], slice(1, 3))]
WHOLE = [Ellipsis, (), slice(None), slice(0, 100), (slice(None), slice(0, 4))]
ADVANCED = [[0, 2], ([0, 1], [1, 2]), (slice(None), [3, 0])]


@pytest.mark.parametrize("index", THROUGH_VIEW, ids=repr)
def test_setitem_on_a_leaf_through_a_view_is_refused_as_a_view_of_a_leaf(index):
    x = _leaf((3, 4))
    with pytest.raises(RuntimeError) as info:
        x[index] = 1.0
    assert str(info.value) == VIEW_OF_LEAF


@pytest.mark.parametrize("index", WHOLE + ADVANCED + [lambda x: x > 1.2], ids=repr)
def test_setitem_on_a_leaf_itself_is_refused_as_a_leaf(index):
    x = _leaf((3, 4))
    with pytest.raises(RuntimeError) as info:
        x[index(x) if callable(index) else index] = 1.0
    assert str(info.value) == LEAF


@pytest.mark.parametrize(
    ("indices", "name"),
    [(THROUGH_VIEW, "torch::autograd::CopySlices"), (WHOLE, "torch::autograd::CopyBackwards"),
     (ADVANCED, "IndexPutBackward0")],
)
def test_setitem_records_the_node_pytorch_does(indices, name):
    for index in indices:
        y = _leaf((3, 4)) * 1
        y[index] = ag.ones(y[index].shape, dtype=ag.float64, requires_grad=True)
        assert y.grad_fn.name() == name, index
        assert y._version == 1


@pytest.mark.parametrize("index", [(0, [1, 2]), ([0, 2], 1), (slice(None), None, [1, 2]), ([0, 2], slice(1, 3)),
                                   Ellipsis, slice(0, 100)], ids=repr)
def test_setitem_gradients_with_the_renamed_nodes(index):
    shape = ag.zeros(3, 4)[index].shape

    def f(x, v):
        y = x * 1
        y[index] = v * v
        return y

    x, v = _leaf((3, 4)), _leaf(shape, seed=1)
    assert gradcheck(f, (x, v))
    assert gradgradcheck(f, (x, v))
    # independently: the written places take v*v's gradient, 2 v; the rest keep x's
    y = f(x, v)
    gx, gv = ag.autograd.grad(y.sum(), (x, v))
    keep = np.ones((3, 4))
    keep[index] = 0.0
    np.testing.assert_allclose(gx.numpy(), keep)
    np.testing.assert_allclose(gv.numpy(), 2 * v.detach().numpy())


# -- copy_ ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("dst", "src", "broadcast"), [((3,), (2, 3), [2, 3]), ((3, 1), (3, 4), [3, 4]),
                                                       ((), (2,), [2]), ((2,), (3, 1), [3, 2])])
def test_copy_from_a_source_that_would_grow_the_tensor_names_the_shapes(dst, src, broadcast):
    y = ag.zeros(dst)
    with pytest.raises(RuntimeError) as info:
        y.copy_(ag.ones(src))
    assert str(info.value) == f"output with shape {list(dst)} doesn't match the broadcast shape {broadcast}"
    assert y._version == 0 and not y.numpy().any()


def test_copy_from_a_source_that_does_not_broadcast_names_the_clashing_dim():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(2\)"):
        ag.zeros(2, 3).copy_(ag.ones(2))


def test_copy_from_a_non_tensor_names_pytorchs_argument():
    with pytest.raises(TypeError, match=r"^copy_\(\): argument 'other' \(position 1\) must be Tensor, not list$"):
        ag.zeros(2).copy_([1, 2])


@pytest.mark.parametrize(("dtype", "ctype"), [(ag.float32, "float"), (ag.float64, "double"), (ag.int64, "int64_t"),
                                             (ag.int32, "int"), (ag.uint8, "uint8_t")])
def test_setitem_of_a_complex_number_into_a_real_tensor_is_refused(dtype, ctype):
    y = ag.zeros(2, dtype=dtype)
    with pytest.raises(RuntimeError) as info:
        y[0] = 1 + 2j
    assert str(info.value) == f"value cannot be converted to type {ctype} without overflow"
    assert y._version == 0


def test_setitem_of_a_complex_number_into_a_complex_tensor_writes_it():
    y = ag.zeros(2, dtype=ag.complex64)
    y[1] = 1 - 2j
    assert y.tolist() == [0j, 1 - 2j]


# -- a view of a view made in no_grad mode -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "name"),
    [(lambda v: v[1:], "Slice"), (lambda v: v[None, 1:], "Slice"), (lambda v: v.unsqueeze(0), "Unsqueeze"),
     (lambda v: v.view(2, 2), "View")],
)
@pytest.mark.parametrize("leaf_base", [False, True])
def test_a_view_of_a_no_grad_view_is_refused_an_in_place_change_with_grad_mode_on(make, name, leaf_base):
    written = np.zeros((3, 4))
    written[0, 1 if name == "Slice" else 0:] = 1.0  # the elements of row 0 that w views
    x = _leaf((3, 4))
    y = x if leaf_base else x * 2
    with ag.no_grad():
        v = y[0]
    w = make(v)
    assert w.requires_grad
    with pytest.raises(RuntimeError) as info:
        w.add_(1)
    assert str(info.value).startswith(NO_GRAD_VIEW_OF_VIEW.format(name))
    assert y._version == 0
    with ag.no_grad():  # both in no_grad mode: allowed, and untracked
        w.add_(1)
    np.testing.assert_allclose(y.detach().numpy(), (1 if leaf_base else 2) * _values((3, 4)) + written)


# `v[index] = value` goes through the view v[index] (named by its last op) unless the index keeps v whole
VIEW_NAMES = [(0, "Select"), ((0, slice(1, 3)), "Slice"), ((slice(1, 3), 0), "Select"), (None, "Unsqueeze"),
              ((None, 0), "Select"), ((0, None), "Unsqueeze"), (True, "Unsqueeze"), ((0, [1, 2]), "Select"),
              ((slice(None), 0), "Select"), ([0, 1], None), (Ellipsis, None)]


@pytest.mark.parametrize(("index", "name"), VIEW_NAMES, ids=repr)
def test_setitem_on_a_no_grad_view_is_refused_naming_the_indexed_view(index, name):
    y = _leaf((3, 4, 5)) * 1
    with ag.no_grad():
        v = y[0]
    with pytest.raises(RuntimeError) as info:
        v[index] = 1.0
    if name is None:
        assert str(info.value).startswith("A view was created in no_grad mode and is being modified inplace")
    else:
        assert str(info.value).startswith(NO_GRAD_VIEW_OF_VIEW.format(name))
    assert y._version == 0


@pytest.mark.parametrize(("index", "name"), VIEW_NAMES, ids=repr)
def test_setitem_on_a_piece_of_split_is_refused_naming_the_indexed_view(index, name):
    piece, _ = (_leaf((3, 4, 5)) * 1).split(2)
    with pytest.raises(RuntimeError) as info:
        piece[index] = 1.0
    assert str(info.value).startswith(f"Output 0 of {name or 'Split'} is a view and is being modified inplace. This "
                                      "view is the output of a function that returns multiple views.")
    assert piece._version == 0


def test_a_view_of_a_view_made_with_grad_mode_on_still_records_its_write():
    x = _leaf((3, 4))
    y = x * 2
    y[0][1:].mul_(3)
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    (grad,) = ag.autograd.grad(y.sum(), x)
    expected = np.full((3, 4), 2.0)
    expected[0, 1:] = 6.0
    np.testing.assert_allclose(grad.numpy(), expected)


# -- the in-place view methods -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("shape", "method", "args", "name"),
    [((2, 3), "t_", (), "TBackward1"), ((3,), "t_", (), "TBackward1"), ((), "t_", (), "TBackward1"),
     ((2, 1, 3), "transpose_", (0, 2), "TransposeBackward1"), ((2, 1, 3), "swapaxes_", (0, 1), "TransposeBackward1"),
     ((2, 1, 3), "swapdims_", (1, 2), "TransposeBackward1"), ((1, 3, 1), "squeeze_", (), "SqueezeBackward3"),
     ((1, 3, 1), "squeeze_", (2,), "SqueezeBackward4"), ((1, 3, 1), "squeeze_", ((0, 2),), "SqueezeBackward5"),
     ((2, 3), "unsqueeze_", (1,), "UnsqueezeBackward1")],
)
def test_in_place_view_methods_record_pytorchs_nodes(shape, method, args, name):
    def f(x):
        y = x * 1
        assert getattr(y, method)(*args) is y
        return y

    x = _leaf(shape)
    y = f(x)
    assert y.grad_fn.name() == name and y._version == 1
    assert y.grad_fn.next_functions[0][0].name() == "MulBackward0"
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


@pytest.mark.gpu
def test_integer_targets_and_setitem_nodes_on_cuda(cupy):
    src = ag.tensor([1.5, -2.5, 3.25], device="cuda", requires_grad=True)
    y = ag.zeros(3, dtype=ag.int64, device="cuda")
    y.copy_(src)
    assert not y.requires_grad and y.cpu().tolist() == [1, -2, 3]
    x = ag.tensor(_values((3, 4)), device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable"):
        x[0] = 1.0
    z = x * 1
    z[0, [1, 2]] = src[:2].double()  # index_put_ takes only the destination's dtype, as PyTorch's
    assert z.grad_fn.name() == "torch::autograd::CopySlices"
    gx, gsrc = ag.autograd.grad(z.sum(), (x, src))
    keep = np.ones((3, 4))
    keep[0, [1, 2]] = 0.0
    np.testing.assert_allclose(gx.cpu().numpy(), keep)
    np.testing.assert_allclose(gsrc.cpu().numpy(), [1.0, 1.0, 0.0])
    w = x * 2
    w.t_()
    assert w.grad_fn.name() == "TBackward1" and w.shape == (4, 3)
