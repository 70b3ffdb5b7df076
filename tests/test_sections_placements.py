"""Sections (tensor_split, hsplit/vsplit/dsplit, split_with_sizes, Tensor.unfold, diag_embed, diagflat) and
placements (take, put, index_put, masked_scatter, select/slice/diagonal_scatter and the in-place forms) as
PyTorch 2.13 has them: values, views, node names, gradients against finite differences, errors. Literal
expectations are small integer layouts that follow by hand (the comments say how); error texts were read off
torch 2.13."""

import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

F64 = ag.float64


def leaf(*shape):
    return ag.randn(shape, dtype=F64, requires_grad=True)


def shapes(pieces):
    return [tuple(p.shape) for p in pieces]


# -- sections ------------------------------------------------------------------------------------------------------
def test_tensor_split_takes_sections_indices_or_an_index_tensor():
    x = ag.arange(10.0)
    assert [p.tolist() for p in ag.tensor_split(x, 3)] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]
    assert shapes(ag.tensor_split(x, [5, 2])) == [(5,), (0,), (8,)]  # python slice bounds between indices
    assert shapes(ag.tensor_split(x, [-3, 8])) == [(7,), (1,), (2,)]
    assert shapes(ag.tensor_split(x, [2, 20])) == [(2,), (8,), (0,)]
    assert shapes(x.tensor_split(ag.tensor([2, 5]))) == [(2,), (3,), (5,)]
    assert shapes(ag.tensor_split(x, ag.tensor(3))) == [(4,), (3,), (3,)]
    assert shapes(ag.tensor_split(x, 12)) == [(1,)] * 10 + [(0,)] * 2
    assert shapes(ag.tensor_split(ag.zeros(2, 3, 4), 2, dim=1)) == [(2, 2, 4), (2, 1, 4)]
    assert shapes(ag.tensor_split(ag.zeros(2, 3, 4), (1,), -1)) == [(2, 3, 1), (2, 3, 3)]


def test_tensor_split_pieces_are_slice_views_whose_gradients_fill_the_input():
    x = ag.arange(6.0)
    pieces = ag.tensor_split(x, [1, 4])
    assert all(p._base is x for p in pieces)
    x[2] = 20.0
    assert pieces[1].tolist() == [1.0, 20.0, 3.0]
    a = leaf(7)
    pieces = ag.tensor_split(a * 1, 3)
    assert [p.grad_fn.name() for p in pieces] == ["SliceBackward0"] * 3
    pieces[1].mul_(2)  # a slice may be changed in place (not so a piece of split)
    assert gradcheck(lambda t: ag.cat([p * i for i, p in enumerate(ag.tensor_split(t, [2, 5]), 1)]), (a,))


def test_tensor_split_errors():
    x = ag.arange(10.0)
    with pytest.raises(RuntimeError, match="^number of sections must be larger than 0, got 0$"):
        ag.tensor_split(x, 0)
    with pytest.raises(RuntimeError, match="tensor_split expected at least a 1-dimensional tensor, but got a tensor "
                                           "with 0 dims"):
        ag.tensor_split(ag.tensor(1.0), 2)
    with pytest.raises(RuntimeError, match="to have dtype of long, but got Int"):
        ag.tensor_split(x, ag.tensor([3], dtype=ag.int32))
    with pytest.raises(RuntimeError, match="zero-dimensional or one-dimensional tensor, but got a tensor with 2 dims"):
        ag.tensor_split(x, ag.tensor([[3]]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ag.tensor_split(x, 2, dim=1)
    with pytest.raises(TypeError, match="indices_or_sections"):
        ag.tensor_split(x, 2.5)


def test_hsplit_vsplit_dsplit_split_along_their_dims():
    x = ag.arange(24.0).reshape(2, 3, 4)
    assert shapes(ag.hsplit(x, 3)) == [(2, 1, 4)] * 3
    assert shapes(x.hsplit([1])) == [(2, 1, 4), (2, 2, 4)]
    assert shapes(ag.hsplit(ag.arange(10.0), 5)) == [(2,)] * 5  # a vector splits along dim 0
    assert shapes(ag.vsplit(x, 2)) == [(1, 3, 4)] * 2
    assert shapes(x.dsplit([1, 3])) == [(2, 3, 1), (2, 3, 2), (2, 3, 1)]
    assert [p.grad_fn.name() for p in ag.dsplit(x.requires_grad_(), 2)] == ["SliceBackward0"] * 2
    with pytest.raises(RuntimeError, match=r"^torch.hsplit attempted to split along dimension 1, but the size of the "
                                           r"dimension 3 is not divisible by the split_size 2!$"):
        ag.hsplit(x, 2)
    with pytest.raises(RuntimeError, match="not divisible by the split_size 0!"):
        ag.hsplit(x, 0)
    with pytest.raises(RuntimeError, match=r"^torch.vsplit requires a tensor with at least 2 dimension, but got a "
                                           r"tensor with 1 dimensions!$"):
        ag.vsplit(ag.arange(4.0), 2)
    with pytest.raises(RuntimeError, match="torch.dsplit requires a tensor with at least 3 dimension"):
        ag.dsplit(x[0], 2)


def test_split_with_sizes():
    a = leaf(2, 3, 4)
    pieces = ag.split_with_sizes(a, [1, 2], dim=1)
    assert shapes(pieces) == [(2, 1, 4), (2, 2, 4)]
    assert [p.grad_fn.name() for p in a.split_with_sizes([3, 1], -1)] == ["SplitWithSizesBackward0"] * 2
    assert gradcheck(lambda t: ag.cat([p * i for i, p in enumerate(t.split_with_sizes([1, 2], 1), 1)], 1), (a,))
    with pytest.raises(RuntimeError, match=r"have only non-negative entries, but got split_sizes=\[3, -1, 8\]"):
        ag.arange(10.0).split_with_sizes([3, -1, 8])  # they sum to 10: the sign is checked first
    with pytest.raises(RuntimeError, match="expects split_sizes to sum exactly to 10"):
        ag.arange(10.0).split_with_sizes([3, 6])


def test_unfold_is_a_view_of_sliding_windows():
    x = ag.arange(9.0)
    windows = x.unfold(0, 3, 2)
    assert windows.tolist() == [[0.0, 1.0, 2.0], [2.0, 3.0, 4.0], [4.0, 5.0, 6.0], [6.0, 7.0, 8.0]]
    assert windows._base is x
    x[2] = 20.0  # both windows holding it see the write
    assert windows[:2, :].tolist() == [[0.0, 1.0, 20.0], [20.0, 3.0, 4.0]]
    y = ag.arange(24.0).reshape(2, 3, 4)
    assert y.unfold(-1, 2, 3).tolist() == [[[[0.0, 1.0]], [[4.0, 5.0]], [[8.0, 9.0]]],
                                           [[[12.0, 13.0]], [[16.0, 17.0]], [[20.0, 21.0]]]]
    assert tuple(y.unfold(1, 2, 1).shape) == (2, 2, 4, 2)
    assert tuple(x.unfold(0, 0, 1).shape) == (10, 0)
    assert ag.tensor(5.0).unfold(0, 1, 1).tolist() == [5.0]  # a 0-dim tensor gives its one window's elements
    assert tuple(ag.tensor(5.0).unfold(0, 0, 1).shape) == (0,)


def test_unfold_overlapping_windows_sum_their_gradients():
    a = ag.arange(6.0, dtype=F64, requires_grad=True)
    u = a.unfold(0, 3, 1)
    assert u.grad_fn.name() == "UnfoldBackward0"
    u.sum().backward()
    assert a.grad.tolist() == [1.0, 2.0, 3.0, 3.0, 2.0, 1.0]  # how many of the windows 0-2, 1-3, 2-4, 3-5 hold each
    b = ag.arange(6.0, dtype=F64, requires_grad=True)
    (b.unfold(0, 3, 2) * ag.arange(6.0, dtype=F64).reshape(2, 3)).sum().backward()
    # windows 0-2 and 2-4 weighted 0, 1, 2 and 3, 4, 5: element 2 gets 2 + 3, the last element no window reads
    assert b.grad.tolist() == [0.0, 1.0, 5.0, 4.0, 5.0, 0.0]
    assert gradgradcheck(lambda t: t.unfold(1, 2, 1), (leaf(2, 3, 4),))
    assert gradgradcheck(lambda t: t.unfold(-1, 3, 2).unfold(0, 1, 1), (leaf(2, 5),))
    assert gradcheck(lambda t: t.unfold(0, 1, 1), (leaf(),))


def test_unfold_errors():
    x = ag.arange(10.0)
    with pytest.raises(RuntimeError, match="^maximum size for tensor at dimension 0 is 10 but size is 11$"):
        x.unfold(0, 11, 1)
    with pytest.raises(RuntimeError, match="^size is -1 but must be >= 0$"):
        x.unfold(0, -1, 1)
    with pytest.raises(RuntimeError, match="^step is 0 but must be > 0$"):
        x.unfold(0, 3, 0)
    with pytest.raises(RuntimeError, match="^maximum size for tensor at dimension 0 is 1 but size is 2$"):
        ag.tensor(5.0).unfold(0, 2, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.unfold(1, 3, 1)


def test_diag_embed_and_diagflat():
    v = ag.tensor([1.0, 2.0, 3.0])
    assert ag.diag_embed(v, -1).tolist() == [[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0],
                                             [0.0, 0.0, 3.0, 0.0]]
    m = ag.arange(6.0).reshape(2, 3)
    assert m.diag_embed(1, 2, 0).tolist() == [  # out[i + 1, n, i] = m[n, i]: dim1 after dim2, not neighbours
        [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0, 0.0], [3.0, 0.0, 0.0, 0.0]],
        [[0.0, 1.0, 0.0, 0.0], [0.0, 4.0, 0.0, 0.0]], [[0.0, 0.0, 2.0, 0.0], [0.0, 0.0, 5.0, 0.0]]]
    assert tuple(ag.diag_embed(m, 0, 0, 2).shape) == (3, 2, 3)
    assert ag.diagflat(m, -1).tolist()[1:3] == [[0.0] * 7, [0.0, 1.0] + [0.0] * 5]
    assert ag.diagflat(ag.tensor(2.0)).tolist() == [[2.0]]
    assert ag.diag_embed(ag.tensor([1, 2])).dtype == ag.int64
    a = leaf(2, 3)
    assert ag.diag_embed(a).grad_fn.name() == ag.diagflat(a).grad_fn.name() == "DiagEmbedBackward0"
    for dims in ((0, 1), (1, 0), (2, 0), (0, 2), (-1, -2)):
        assert gradgradcheck(lambda t, dims=dims: ag.diag_embed(t, 1, *dims), (a,))
    assert gradcheck(lambda t: t.diagflat(-2), (a,))
    with pytest.raises(RuntimeError, match="^diagonal dimensions cannot be identical 1, 1$"):
        ag.diag_embed(m, 0, 1, 1)
    with pytest.raises(IndexError, match=r"expected to be in range of \[-3, 2\], but got 3"):
        ag.diag_embed(m, 0, 1, 3)


# -- take and put --------------------------------------------------------------------------------------------------
def test_take_reads_flat_positions():
    x = ag.arange(6.0).reshape(2, 3)
    assert ag.take(x, ag.tensor([[0, 5], [-1, 2]])).tolist() == [[0.0, 5.0], [5.0, 2.0]]
    assert x.take(ag.tensor(4)).tolist() == 4.0
    assert x.t().take(ag.tensor([1])).tolist() == [3.0]  # row-major order of the tensor, not of its memory
    a = leaf(2, 3)
    assert a.take(ag.tensor([1])).grad_fn.name() == "TakeBackward0"
    assert gradgradcheck(lambda t: t.take(ag.tensor([[1, 0], [1, -1]])), (a,))  # repeats sum
    with pytest.raises(IndexError, match=r"^out of range: tried to access index 6 on a tensor of 6 elements\.$"):
        x.take(ag.tensor([6]))
    with pytest.raises(RuntimeError, match="^take\\(\\): Expected a long tensor for index, but got Int$"):
        x.take(ag.tensor([1], dtype=ag.int32))
    with pytest.raises(IndexError, match="take\\(\\): tried to take from an empty tensor"):
        ag.zeros(0).take(ag.tensor([0]))
    with pytest.raises(TypeError, match="take\\(\\): argument 'index' .* must be Tensor, not list"):
        x.take([1])


def test_put_writes_or_adds_at_flat_positions():
    x = ag.arange(6.0).reshape(2, 3)
    source = ag.tensor([10.0, 20.0])
    assert ag.put(x, ag.tensor([0, 4]), source).tolist() == [[10.0, 1.0, 2.0], [3.0, 20.0, 5.0]]
    assert x.put(ag.tensor([0, 0]), source, accumulate=True).tolist() == [[30.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert x.put(ag.tensor([0, -1]), source, True).tolist() == [[10.0, 1.0, 2.0], [3.0, 4.0, 25.0]]
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    y = x.clone()
    assert y.put_(ag.tensor([[1]]), ag.tensor([7.0])) is y and y.tolist()[0] == [0.0, 7.0, 2.0]
    a, s = leaf(2, 3), leaf(2, 2)
    assert a.put(ag.tensor([1, 0, 1, 3]), s.reshape(-1)).grad_fn.name() == "PutBackward0"
    assert gradgradcheck(lambda t, v: t.put(ag.tensor([[1, 0], [5, 3]]), v), (a, s))
    assert gradgradcheck(lambda t, v: t.put(ag.tensor([1, 0, 1, 3]), v, accumulate=True), (a, s.reshape(-1)))
    assert gradcheck(lambda t, v: (t * 1).put_(ag.tensor([4, 0, 2, 3]), v), (a, s))


def test_put_errors():
    x = ag.arange(6.0)
    with pytest.raises(IndexError, match=r"put_\(\): Expected source and index to have the same number of elements, "
                                         r"but got source.numel\(\) = 3, index.numel\(\) = 2"):
        x.put(ag.tensor([0, 4]), ag.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match=r"put_\(\): self and source expected to have the same dtype, but got "
                                           r"self.dtype = Float and source.dtype = Double"):
        x.put(ag.tensor([0]), ag.tensor([1.0], dtype=F64))
    with pytest.raises(IndexError, match="out of range: tried to access index -7 on a tensor of 6 elements"):
        x.put(ag.tensor([-7]), ag.tensor([1.0]))
    with pytest.raises(RuntimeError, match=r"put_\(\): Expected a long tensor for index, but got Float"):
        x.put(ag.tensor([0.0]), ag.tensor([1.0]))
    with pytest.raises(IndexError, match=r"put_\(\): Tried to put elements into an empty tensor"):
        ag.zeros(0).put(ag.tensor([0]), ag.tensor([1.0]))
    with pytest.raises(TypeError, match="put\\(\\): argument 'source' .* must be Tensor, not float"):
        ag.put(x, ag.tensor([0]), 1.0)


# -- index_put -----------------------------------------------------------------------------------------------------
def test_index_put_writes_or_accumulates_at_index_tensors():
    x = ag.arange(6.0).reshape(2, 3)
    assert ag.index_put(x, (ag.tensor([0, 1]), ag.tensor([2, 0])), ag.tensor([10.0, 20.0])).tolist() == [
        [0.0, 1.0, 10.0], [20.0, 4.0, 5.0]]
    repeated = (ag.tensor([0, 0]), ag.tensor([2, 2]))
    assert x.index_put(repeated, ag.tensor([10.0, 20.0]), accumulate=True).tolist()[0] == [0.0, 1.0, 32.0]
    assert x.index_put([ag.tensor([1])], ag.tensor(7.0)).tolist()[1] == [7.0, 7.0, 7.0]  # values broadcast
    mask = ag.tensor([[True, False, True], [False, False, True]])
    assert x.index_put((mask,), ag.tensor([1.0, 2.0, 3.0])).tolist() == [[1.0, 1.0, 2.0], [3.0, 4.0, 3.0]]
    assert x.index_put((ag.tensor(1),), ag.tensor([1.0, 2.0, 3.0]), True).tolist()[1] == [4.0, 6.0, 8.0]
    y = x.clone()
    assert ag.index_put_(y, (ag.tensor([0, 1]),), ag.tensor(1.0), accumulate=True) is y
    assert y.index_put_((mask,), ag.tensor(0.0)).tolist() == [[0.0, 2.0, 0.0], [4.0, 5.0, 0.0]]


def test_index_put_gradients():
    a, v = leaf(2, 3), leaf(3)
    index = (ag.tensor([0, 1]), ag.tensor([2, 0]))
    assert a.index_put(index, v[:2]).grad_fn.name() == "IndexPutBackward0"
    assert a.index_put(index, v[:2], accumulate=True).grad_fn.name() == "IndexPutBackward0"
    assert gradgradcheck(lambda t, w: t.index_put(index, w[:1]), (a, v))
    assert gradgradcheck(lambda t, w: t.index_put((ag.tensor([0, 1, 0]), ag.tensor([2, 0, 2])), w, True), (a, v))
    assert gradgradcheck(lambda t, w: t.index_put((ag.tensor([1]),), w), (a, v))
    assert gradcheck(lambda t, w: (t * 1).index_put_((ag.tensor([1, 1]),), w, accumulate=True), (a, v))


def test_index_put_errors():
    x = ag.arange(6.0).reshape(2, 3)
    one = ag.tensor(1.0)
    with pytest.raises(RuntimeError, match=r"^shape mismatch: value tensor of shape \[1, 1, 3\] cannot be broadcast "
                                           r"to indexing result of shape \[1, 3\]$"):
        x.index_put((ag.tensor([1]),), ag.ones(1, 1, 3))
    with pytest.raises(RuntimeError, match="^Index put requires the source and destination dtypes match, got Float "
                                           "for the destination and Double for the source.$"):
        x.index_put((ag.tensor([1]),), ag.ones(3, dtype=F64))
    with pytest.raises(IndexError, match=r"^too many indices for tensor of dimension 2 \(got 3\)$"):
        x.index_put((ag.tensor([1]),) * 3, one)
    with pytest.raises(IndexError, match=r"could not be broadcast together with shapes \[2\], \[3\]"):
        x.index_put((ag.tensor([0, 1]), ag.tensor([0, 1, 2])), one)
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 0 with size 2"):
        x.index_put((ag.tensor([2]),), one)
    with pytest.raises(TypeError, match="expected Tensor as element 0 in argument 0, but got NoneType"):
        x.index_put((None, ag.tensor([1])), one)
    with pytest.raises(TypeError, match="argument 'indices' .* must be tuple of Tensors, not Tensor"):
        x.index_put(ag.tensor([1]), one)
    with pytest.raises(TypeError, match="argument 'values' .* must be Tensor, not float"):
        x.index_put((ag.tensor([1]),), 1.0)
    with pytest.raises(TypeError, match="argument 'accumulate' must be bool, not int"):
        x.index_put((ag.tensor([1]),), one, 1)


# -- masked_scatter ------------------------------------------------------------------------------------------------
def test_masked_scatter_writes_the_source_in_order_where_the_mask_is_true():
    x = ag.arange(6.0).reshape(2, 3)
    source = ag.arange(10.0, 16.0).reshape(3, 2)
    mask = ag.tensor([[True, False, True], [False, False, True]])
    assert ag.masked_scatter(x, mask, source).tolist() == [[10.0, 1.0, 11.0], [3.0, 4.0, 12.0]]
    assert x.masked_scatter(ag.tensor([True, False, True]), source).tolist() == [[10.0, 1.0, 11.0],
                                                                                 [12.0, 4.0, 13.0]]
    # the input broadcasts with the mask, out of place
    assert ag.zeros(3).masked_scatter(ag.tensor([[True], [False]]), source).tolist() == [[10.0, 11.0, 12.0],
                                                                                        [0.0, 0.0, 0.0]]
    y = x.clone()
    assert y.masked_scatter_(mask, source) is y and y.tolist() == [[10.0, 1.0, 11.0], [3.0, 4.0, 12.0]]
    a, s = leaf(3), leaf(2, 2)
    column = ag.tensor([[True], [False]])
    assert a.masked_scatter(column, s).grad_fn.name() == "MaskedScatterBackward0"
    assert gradgradcheck(lambda t, v: t.masked_scatter(column, v), (a, s))  # the input's gradient sums back
    assert gradcheck(lambda t, v: (t * 1).masked_scatter_(ag.tensor([False, True, True]), v), (a, s))


def test_masked_scatter_errors():
    x = ag.arange(6.0).reshape(2, 3)
    mask = ag.tensor([[True, False, True], [False, False, True]])
    with pytest.raises(RuntimeError, match="^Number of elements of source < number of ones in mask$"):
        x.masked_scatter(mask, ag.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="^masked_scatter_ only supports boolean masks, but got mask with dtype "
                                           "Double$"):
        x.masked_scatter(mask.double(), ag.ones(3))
    with pytest.raises(RuntimeError, match="^masked_scatter: expected self and source to have same dtypes but "
                                           "gotFloat and Double$"):
        x.masked_scatter(mask, ag.ones(3, dtype=F64))
    with pytest.raises(RuntimeError, match="The size of tensor a \\(2\\) must match the size of tensor b \\(3\\)"):
        x.masked_scatter(ag.tensor([True, True]), ag.ones(6))


# -- select_scatter, slice_scatter, diagonal_scatter ---------------------------------------------------------------
def test_select_and_slice_scatter():
    x = ag.arange(6.0).reshape(2, 3)
    assert ag.select_scatter(x, ag.tensor([7.0, 8.0]), 1, 1).tolist() == [[0.0, 7.0, 2.0], [3.0, 8.0, 5.0]]
    assert x.select_scatter(ag.tensor([7, 8, 9]), 0, -1).tolist() == [[0.0, 1.0, 2.0], [7.0, 8.0, 9.0]]  # cast
    assert ag.slice_scatter(x, ag.tensor([[7.0, 9.0], [8.0, 10.0]]), 1, step=2).tolist() == [[7.0, 1.0, 9.0],
                                                                                           [8.0, 4.0, 10.0]]
    assert x.slice_scatter(ag.zeros(1, 3), start=-1).tolist() == [[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]]
    assert x.slice_scatter(ag.zeros(0, 3), start=1, end=0).tolist() == x.tolist()
    a = leaf(2, 3)
    assert a.select_scatter(leaf(3), 0, 0).grad_fn.name() == "SelectScatterBackward0"
    assert a.slice_scatter(leaf(1, 3), 0, 1).grad_fn.name() == "SliceScatterBackward0"
    assert gradgradcheck(lambda t, s: t.select_scatter(s, 1, -1), (a, leaf(2)))
    assert gradgradcheck(lambda t, s: t.slice_scatter(s, 1, 0, None, 2), (a, leaf(2, 2)))
    assert gradgradcheck(lambda t, s: ag.select_scatter(t, s, 0, 0), (leaf(3), leaf()))


def test_diagonal_scatter():
    x = ag.arange(6.0).reshape(2, 3)
    assert ag.diagonal_scatter(x, ag.tensor([7.0, 8.0]), 1).tolist() == [[0.0, 7.0, 2.0], [3.0, 4.0, 8.0]]
    assert x.diagonal_scatter(ag.tensor([7.0]), -1).tolist() == [[0.0, 1.0, 2.0], [7.0, 4.0, 5.0]]
    y = ag.arange(24.0).reshape(2, 3, 4)
    assert ag.diagonal_scatter(y, ag.arange(6.0).reshape(3, 2), 0, 2, 0).tolist() == [  # y[i, :, i] = src[:, i]
        [[0.0, 1.0, 2.0, 3.0], [2.0, 5.0, 6.0, 7.0], [4.0, 9.0, 10.0, 11.0]],
        [[12.0, 1.0, 14.0, 15.0], [16.0, 3.0, 18.0, 19.0], [20.0, 5.0, 22.0, 23.0]]]
    assert ag.diagonal_scatter(y, ag.arange(8.0).reshape(4, 2), 1, 0, 1).tolist() == [
        [[0.0, 1.0, 2.0, 3.0], [0.0, 2.0, 4.0, 6.0], [8.0, 9.0, 10.0, 11.0]],
        [[12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0], [1.0, 3.0, 5.0, 7.0]]]
    a = leaf(2, 3, 4)
    assert a.diagonal_scatter(leaf(4, 2)).grad_fn.name() == "DiagonalScatterBackward0"
    assert gradgradcheck(lambda t, s: t.diagonal_scatter(s, 0, 2, 0), (a, leaf(3, 2)))
    assert gradgradcheck(lambda t, s: t.diagonal_scatter(s, 1, 1, 2), (a, leaf(2, 3)))


def test_scatter_into_errors():
    x = ag.arange(6.0).reshape(2, 3)
    with pytest.raises(RuntimeError, match=r"^expected src to have a size equal to the slice of self. src size = "
                                           r"\[2\], slice size = \[3\]$"):
        x.select_scatter(ag.tensor([7.0, 8.0]), 0, -1)
    with pytest.raises(IndexError, match=r"^select\(\): index 2 out of range for tensor of size \[2, 3\] at "
                                         r"dimension 0$"):
        x.select_scatter(ag.ones(3), 0, 2)
    with pytest.raises(IndexError, match=r"select\(\) cannot be applied to a 0-dim tensor."):
        ag.select_scatter(ag.tensor(1.0), ag.tensor(7.0), 0, 0)
    with pytest.raises(RuntimeError, match=r"src size = \[1, 3\], slice size = \[2, 3\]"):
        ag.slice_scatter(x, ag.ones(1, 3))
    with pytest.raises(RuntimeError, match="^slice step must be positive$"):
        ag.slice_scatter(x, ag.ones(2, 3), step=0)
    with pytest.raises(RuntimeError, match=r"src size = \[1\], slice size = \[2\]"):
        ag.diagonal_scatter(x, ag.ones(1))
    with pytest.raises(RuntimeError, match="^diagonal dimensions cannot be identical 1, 1$"):
        ag.diagonal_scatter(x, ag.ones(2), 0, 1, 1)


# -- the same on cuda:0 --------------------------------------------------------------------------------------------
GPU_CASES = {
    "tensor_split": lambda t, s: ag.cat([p * i for i, p in enumerate(ag.tensor_split(t, ag.tensor([1]), 1), 1)], 1),
    "unfold": lambda t, s: t.unfold(1, 2, 1),
    "diag_embed": lambda t, s: ag.diag_embed(t, 1, 2, 0),
    "take": lambda t, s: t.take(ag.tensor([[1, 0], [1, -1]], device=t.device)),
    "put": lambda t, s: t.put(ag.tensor([1, 0, 1, 3], device=t.device), s.reshape(-1)[:4], accumulate=True),
    "index_put": lambda t, s: t.index_put((ag.tensor([1, 1], device=t.device),), s[:1, :].expand(2, 3)),
    "masked_scatter": lambda t, s: t.masked_scatter(ag.tensor([True, False, True], device=t.device), s),
    "select_scatter": lambda t, s: t.select_scatter(s[0], 0, 1),
    "slice_scatter": lambda t, s: t.slice_scatter(s[:, :2], 1, 0, None, 2),
    "diagonal_scatter": lambda t, s: t.diagonal_scatter(s[0, :2], 1),
    "index_put_": lambda t, s: (t * 1).index_put_((ag.tensor([0], device=t.device),), s[1], accumulate=True),
}


@pytest.mark.gpu
@pytest.mark.usefixtures("cupy")
class TestOnCuda:
    @pytest.mark.parametrize("name", GPU_CASES)
    def test_values_and_gradients_match_the_cpu(self, name):
        op = GPU_CASES[name]
        t, s = leaf(2, 3), leaf(2, 3)
        results = []
        for where in ("cpu", "cuda:0"):
            a, b = (x.detach().to(where).requires_grad_() for x in (t, s))
            out = op(a, b)
            assert out.device is ag.device(where)
            ga, gb = ag.autograd.grad((out * out).sum(), (a, b), allow_unused=True, create_graph=True)
            (gga,) = ag.autograd.grad((ga * ga).sum(), a)
            results.append([None if v is None else v.cpu().tolist() for v in (out, ga, gb, gga)])
        assert results[0] == results[1]

    def test_unfold_is_a_view(self):
        x = ag.arange(6.0, device="cuda:0")
        u = x.unfold(0, 3, 1)
        assert u._base is x and u.cpu().tolist()[1] == [1.0, 2.0, 3.0]
