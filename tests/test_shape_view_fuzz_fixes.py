"""Shape and view functions where a fuzz-differential review against PyTorch found actorgrad behaving differently:
splitting an empty dim by an empty size list, roll's empty `dims` and `shifts`, the nodes reshape records, rot90's
layout, the row-major `_copy` forms, slice_copy's dim check, the keyword names of tensor_split and h/v/dsplit, a
numpy-int squeeze dim, the layout of `tensor()` / `new_tensor` of a broadcast tensor, view(dtype) of an empty
tensor, view_as_complex beside a size-1 dim, and trace's check order."""

import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck


def _values(shape, seed=0):
    return np.random.default_rng(seed).uniform(0.5, 2.0, size=shape)


def _leaf(shape, seed=0):
    return ag.tensor(_values(shape, seed), requires_grad=True)


def _row_major(shape):
    """The element strides of a row-major array of `shape`."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.insert(0, step)
        step *= n
    return tuple(strides)


# -- split, roll, trace ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("split", [
    lambda x: ag.split(x, [], 0),
    lambda x: x.split([], dim=0),
    lambda x: x.split_with_sizes([]),
    lambda x: ag.split_with_sizes(x, [], 0),
])
def test_an_empty_dim_split_by_an_empty_size_list_gives_no_pieces(split):
    assert split(ag.zeros(0, 3)) == ()


def test_an_empty_size_list_still_must_sum_to_a_dim_that_is_not_empty():
    with pytest.raises(RuntimeError, match="split_sizes to sum exactly to 2"):
        ag.split(ag.zeros(2), [], 0)


@pytest.mark.parametrize("dims", [(), []])
def test_roll_over_no_dims_rolls_the_flattened_tensor(dims):
    values = _values((2, 3))
    x = ag.tensor(values, requires_grad=True)
    out = ag.roll(x, 2, dims)
    flat = values.reshape(-1)
    np.testing.assert_array_equal(out.detach().numpy(), np.concatenate([flat[-2:], flat[:-2]]).reshape(2, 3))
    assert gradcheck(lambda t: ag.roll(t, 2, dims), (x,))


@pytest.mark.parametrize("dims", [None, (), (0,)])
def test_roll_without_shifts_is_refused(dims):
    with pytest.raises(RuntimeError, match="`shifts` required"):
        ag.roll(ag.zeros(2, 3), (), dims)


def test_roll_by_two_shifts_over_no_dims_is_refused():
    with pytest.raises(RuntimeError, match="shifts: 2, dims:0"):
        ag.roll(ag.zeros(2, 3), (1, 2), ())


@pytest.mark.parametrize("shape", [(3,), (2, 2, 2)])
def test_trace_of_bool_refuses_the_dtype_before_the_dims(shape):
    with pytest.raises(NotImplementedError, match="\"trace\" not implemented for 'Bool'"):
        ag.trace(ag.ones(*shape, dtype=ag.bool))


# -- reshape's nodes ------------------------------------------------------------------------------------------------
def test_reshape_records_a_view_node_an_alias_node_or_a_copy_node_by_the_input_layout():
    leaf = _leaf((3, 4))
    contiguous = leaf.reshape(-1)
    alias = leaf[:, ::2].reshape(-1)  # strides allow it in place: a view of other strides
    copy = leaf.t().reshape(-1)  # no strides give it: a copy
    assert contiguous.grad_fn.name() == "ViewBackward0" and contiguous._base is leaf
    assert alias.grad_fn.name() == "ReshapeAliasBackward0" and alias._base is leaf
    assert copy.grad_fn.name() == "UnsafeViewBackward0" and copy._base is None
    values = _values((3, 4))
    np.testing.assert_array_equal(alias.detach().numpy(), values[:, ::2].reshape(-1))
    np.testing.assert_array_equal(copy.detach().numpy(), values.T.reshape(-1))
    for op in (lambda t: t[:, ::2].reshape(6), lambda t: t.t().reshape(2, 6), lambda t: t.t().flatten()):
        assert gradcheck(op, (leaf,)) and gradgradcheck(op, (leaf,))


def test_view_keeps_its_node_and_its_refusal_whatever_the_layout():
    leaf = _leaf((3, 4))
    assert leaf[:, ::2].view(-1).grad_fn.name() == "ViewBackward0"
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size and stride"):
        leaf.t().view(-1)
    assert ag.zeros(0, 3).t().view(-1).shape == (0,)  # no elements: any strides do


# -- layouts --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [-3, -1, 0, 1, 2, 3, 5])
def test_rot90_is_a_flip_laid_out_as_the_input_then_a_swap_of_its_two_dims(k):
    values = _values((2, 3, 4))
    x = ag.tensor(values, requires_grad=True)
    out = ag.rot90(x, k, (0, 2))
    np.testing.assert_array_equal(out.detach().numpy(), np.rot90(values, k, axes=(0, 2)))
    expected = _row_major(out.shape)
    if k % 2:  # the flip is row-major at the input's shape; the swap turns its strides
        flip_strides = _row_major((2, 3, 4))
        expected = (flip_strides[2], flip_strides[1], flip_strides[0])
    assert out.stride() == expected
    assert out.is_contiguous() == (k % 2 == 0)
    assert gradcheck(lambda t: ag.rot90(t, k, (0, 2)), (x,))


@pytest.mark.parametrize("copy", [
    lambda x: ag.slice_copy(x, 1, 0, 3),
    ag.alias_copy,
    ag.detach_copy,
    lambda x: ag.narrow_copy(x, 0, 1, 2),
])
def test_the_copy_forms_are_row_major_whatever_the_input_layout(copy):
    values = _values((3, 4))
    out = copy(ag.tensor(values).t())
    assert out.is_contiguous() and out.stride() == _row_major(out.shape)
    reference = copy(ag.tensor(np.ascontiguousarray(values.T)))
    np.testing.assert_array_equal(out.numpy(), reference.numpy())


@pytest.mark.parametrize("dim", [2, -3])
def test_slice_copy_checks_its_dim(dim):
    with pytest.raises(IndexError, match=rf"expected to be in range of \[-2, 1\], but got {dim}"):
        ag.slice_copy(ag.zeros(2, 3), dim)


def test_slice_copy_refuses_a_0_dim_tensor():
    with pytest.raises(IndexError, match="slice\\(\\) cannot be applied to a 0-dim tensor."):
        ag.slice_copy(ag.tensor(1.0), 0)


def test_a_copy_of_a_broadcast_tensor_is_row_major_and_of_a_permuted_one_keeps_its_order():
    values = _values((1, 2, 1, 3))
    expanded = ag.tensor(values).expand(1, 2, 2, 3)
    transposed = ag.tensor(_values((4, 3))).t()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's advice to clone a tensor rather than construct from it
        copies = [ag.tensor(expanded), expanded.new_tensor(expanded), expanded.new_tensor(expanded, dtype=ag.int32)]
        kept = [ag.tensor(transposed), ag.tensor(transposed, dtype=ag.float32)]
    for copy in copies:
        assert copy.stride() == _row_major((1, 2, 2, 3))
        np.testing.assert_array_equal(copy.numpy(), np.broadcast_to(values, (1, 2, 2, 3)).astype(copy.numpy().dtype))
    for copy in kept:
        assert copy.stride() == (1, 3)


# -- argument spellings ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, dim, sizes", [
    (lambda x: ag.tensor_split(x, sections=3, dim=2), 2, [2, 1, 1]),
    (lambda x: x.tensor_split(indices=[1, 3], dim=2), 2, [1, 2, 1]),
    (lambda x: ag.tensor_split(x, tensor_indices_or_sections=ag.tensor(2), dim=2), 2, [2, 2]),
    (lambda x: ag.dsplit(x, sections=2), 2, [2, 2]),
    (lambda x: x.dsplit(indices=[3]), 2, [3, 1]),
    (lambda x: ag.hsplit(x, sections=3), 1, [1, 1, 1]),
    (lambda x: ag.vsplit(x, indices=[1]), 0, [1, 1]),
])
def test_the_section_functions_take_pytorchs_keyword_names(call, dim, sizes):
    values = _values((2, 3, 4))
    pieces = call(ag.tensor(values))
    assert [p.shape[dim] for p in pieces] == sizes
    np.testing.assert_array_equal(np.concatenate([p.numpy() for p in pieces], axis=dim), values)


def test_the_section_functions_take_one_cut_argument():
    with pytest.raises(TypeError, match="tensor_split"):
        ag.tensor_split(ag.zeros(4), 2, sections=2)
    with pytest.raises(TypeError, match="hsplit"):
        ag.hsplit(ag.zeros(4))


@pytest.mark.parametrize("dim", [np.int64(1), np.int32(-1)])
def test_a_numpy_integer_squeeze_dim_is_one_dim(dim):
    x = _leaf((3, 1))
    out = x.squeeze(dim)
    assert out.shape == (3,) and out.grad_fn.name() == "SqueezeBackward1"


# -- reinterpreting memory ------------------------------------------------------------------------------------------
def test_view_as_a_larger_dtype_of_an_empty_tensor_scales_its_last_dim():
    x = ag.zeros(0, 1, 2, dtype=ag.int32)
    assert x.view(ag.int64).shape == (0, 1, 1)
    assert x.view(ag.int8).shape == (0, 1, 8)


def test_view_as_complex_ignores_the_stride_of_a_size_1_dim():
    values = _values((2, 1))
    x = ag.tensor(values).t()  # shape (1, 2), strides (1, 1): an odd stride of a size-1 dim
    out = ag.view_as_complex(x)
    assert out.shape == (1,)
    assert out.numpy()[0] == values[0, 0] + 1j * values[1, 0]
    with pytest.raises(RuntimeError, match="stride divisible by 2"):
        ag.view_as_complex(ag.zeros(3, 3).as_strided((2, 2), (3, 1)))


# -- on CUDA --------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_the_fixes_on_cuda_give_the_cpu_results(cupy):
    results = []
    for device in ("cpu", "cuda"):
        leaf = ag.tensor(_values((3, 4)), device=device, requires_grad=True)
        outs = [ag.rot90(leaf, 1), ag.roll(leaf, 1, ()), leaf.t().reshape(-1), leaf[:, ::2].reshape(-1),
                ag.slice_copy(leaf.t(), 1, 0, 2), *ag.tensor_split(leaf, sections=2, dim=1)]
        sum((o * o).sum() for o in outs).backward()
        results.append([o.detach().cpu().numpy() for o in outs] + [leaf.grad.cpu().numpy()])
        assert ag.split(ag.zeros(0, 2, device=device), [], 0) == ()
    for cpu, cuda in zip(*results):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-12)
