"""Behaviours where a fuzz-differential review of indexing against PyTorch found actorgrad differing:

- advanced indexes checked in PyTorch's order, after the basic part (ints, slices, None): a float index tensor and a
  mask of the wrong shape are refused only then (the mask's error naming its own dim and the indexed tensor's
  shape after the basic part), then shapes that do not broadcast, then an index into a size-0 dim ("index is out of
  bounds for dimension with size 0"), then positions out of range, named as PyTorch's kernel finds them (the first
  in the broadcast index's row-major order, by the count of its index tensor), and not at all where the result has
  no elements;
- an int out of range named by its place in the index; "too many indices" without numpy's count; a zero step's
  own error; a slice from a negative start recorded as SliceBackward0 even where it keeps the dim whole;
- `x[ints] = value` of a shape that does not broadcast refused with copy_'s expand error, as PyTorch's;
- index_put's 0-dim index tensors read as index tensors, not ints; index_put filling one mask from a one-element
  value of any shape and dtype (PyTorch's masked_fill_ route), and that route refusing a uint8 mask, for
  `x[byte_mask] = number` too; a numpy uint8 array indexing as a (deprecated) mask, as a uint8 tensor does;
- narrow's length checked first; take_along_dim's negative indices counted from the end, and its broadcast error
  naming the last clashing dim;
- gather and scatter_add with an empty index check no shapes; scatter_add's shape error in scatter's words;
- index_add checks its source before the index's bounds, and words them as its loop does for alpha=True;
- scatter_reduce refuses complex gradients only after its checks, and (without include_self) a kernel's dtype only
  after the bounds;
- masked_fill's and masked_scatter's broadcast errors as PyTorch's words and operand order.

Where PyTorch 2.13 silently wraps take_along_dim's out-of-range indices (pytorch/pytorch#196106) actorgrad keeps
raising.
"""

import numpy as np
import pytest

import actorgrad as ag

T = ag.tensor


def _values(shape):
    """Distinct float64 values, away from ties."""
    return (np.sin(np.arange(int(np.prod(shape))) * 0.37 + 0.1) * 3).reshape(shape)


# -- tensor[index]: PyTorch's checks of an advanced index, in its order ---------------------------------------------
@pytest.mark.parametrize("index, shape", [
    (lambda: (T([5]), slice(None), T([0])), (1, 0)),  # a size-0 dim that is not indexed
    (lambda: (T([[5]]), T([], dtype=ag.int64)), (1, 0)),  # index tensors that broadcast to no element
])
def test_positions_are_not_checked_where_the_result_has_no_elements(index, shape):
    x = ag.tensor(np.zeros((3, 0, 2)) if len(index()) == 3 else np.zeros((3, 2)), requires_grad=True)
    y = x[index()]
    assert y.shape == shape
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(x.shape))
    z = ag.zeros(x.shape)
    z[index()] = 1.0
    np.testing.assert_array_equal(z.numpy(), np.zeros(x.shape))


def test_index_put_adds_nothing_where_its_indices_broadcast_to_no_element():
    z = ag.zeros(2, 0, 1, 3)
    z.index_put_((T([False, False]), T(0), T(-1)), T(1.0), accumulate=True)
    assert z.shape == (2, 0, 1, 3)
    y = ag.zeros(3, 2).index_put((T([[5]]), T([], dtype=ag.int64)), T(1.0), accumulate=True)
    np.testing.assert_array_equal(y.numpy(), np.zeros((3, 2)))


def test_an_index_into_a_size_0_dim_giving_elements_is_refused_in_pytorchs_words():
    with pytest.raises(IndexError, match=r"^index is out of bounds for dimension with size 0$"):
        ag.zeros(0, 3)[T([0, 0])]
    with pytest.raises(IndexError, match=r"^index is out of bounds for dimension with size 0$"):
        ag.zeros(0, 3).index_put_((T(0),), T(1.0))  # a 0-dim index tensor is an index tensor for index_put_


def test_index_shapes_that_do_not_broadcast_are_refused_before_positions_out_of_range():
    with pytest.raises(IndexError, match=r"^shape mismatch: indexing tensors could not be broadcast together with "
                                         r"shapes \[2\], \[3\]$"):
        ag.zeros(2, 3)[T([7, 0]), T([0, 1, 2])]


@pytest.mark.parametrize("shape, index, message", [
    ((2, 3), lambda: (T([[1], [9]]), T([7, 0])), "index 7 is out of bounds for dimension 1 with size 3"),
    ((3, 1, 2), lambda: (2, T([[2, -2, 0]]), [-1]), "index 2 is out of bounds for dimension 0 with size 1"),
    ((2, 3, 4), lambda: (T([0]), slice(None), T([5])), "index 5 is out of bounds for dimension 1 with size 4"),
])
def test_a_position_out_of_range_is_named_as_pytorchs_kernel_finds_it(shape, index, message):
    """The first in the broadcast index's row-major order, each place's index tensors in turn, named by the index
    tensor's count among them and the size of the dim it indexes."""
    with pytest.raises(IndexError, match=f"^{message}$"):
        ag.zeros(shape)[index()]
    with pytest.raises(IndexError, match=f"^{message}$"):
        ag.zeros(shape)[index()] = 1.0


def test_an_int_out_of_range_is_named_by_its_place_in_the_index():
    with pytest.raises(IndexError, match=r"^index 5 is out of bounds for dimension 2 with size 3$"):
        ag.zeros(2, 3)[None, 0, 5]
    with pytest.raises(IndexError, match=r"^index 5 is out of bounds for dimension 1 with size 3$"):
        ag.zeros(2, 3)[..., 5]


def test_too_many_indices_and_a_zero_step_raise_pytorchs_texts():
    with pytest.raises(IndexError, match=r"^too many indices for tensor of dimension 2$"):
        ag.zeros(2, 3)[0, 0, 0]
    with pytest.raises(ValueError, match=r"^slice step cannot be zero$"):
        ag.zeros(2, 3)[::0]
    with pytest.raises(ValueError, match=r"^step must be greater than zero$"):
        ag.zeros(2, 3)[::-1]


def test_a_float_index_is_refused_only_after_the_basic_part():
    with pytest.raises(IndexError, match=r"^index 7 is out of bounds for dimension 1 with size 4$"):
        ag.zeros(3, 4)[T([1.0]), 7]
    with pytest.raises(IndexError, match=r"^tensors used as indices must be long, int, byte or bool tensors"):
        ag.zeros(3, 4)[T([1.0]), 2]


def test_a_mask_of_the_wrong_shape_is_named_against_the_tensor_after_the_basic_part():
    with pytest.raises(IndexError, match=r"^The shape of the mask \[2\] at index 0 does not match the shape of the "
                                         r"indexed tensor \[1\] at index 0$"):
        ag.zeros(2, 1)[T(-2), T([False, True])]
    with pytest.raises(IndexError, match=r"^The shape of the mask \[3\] at index 0 does not match the shape of the "
                                         r"indexed tensor \[1, 2, 3, 4\] at index 1$"):
        ag.zeros(2, 3, 4)[None, T([True, True, True])]


@pytest.mark.parametrize("entry, node", [
    (slice(-7, None), "SliceBackward0"), (slice(-1, None), "SliceBackward0"), (slice(0, 10), "SelectBackward0"),
    (slice(None), "SelectBackward0"), (slice(None, 1), "SelectBackward0"),
])
def test_a_slice_is_skipped_as_whole_only_from_none_or_0_to_the_end(entry, node):
    x = ag.tensor(_values((4, 1)), requires_grad=True)
    y = x[1, entry]
    assert y.grad_fn.name() == node
    y.backward(T([2.0]))
    expected = np.zeros((4, 1))
    expected[1, 0] = 2.0
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_writing_a_value_that_does_not_broadcast_through_ints_raises_copys_expand_error():
    with pytest.raises(RuntimeError, match=r"^The expanded size of the tensor \(4\) must match the existing size \(2\) "
                                           r"at non-singleton dimension 0\.  Target sizes: \[4\]\.  "
                                           r"Tensor sizes: \[2\]$"):
        ag.zeros(3, 4)[0] = ag.ones(2)


def test_index_put_reads_a_0_dim_index_tensor_as_an_index_tensor():
    x = ag.tensor(_values((2, 3)), requires_grad=True)
    v = ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64, requires_grad=True)
    y = x.index_put((T(1),), v)
    np.testing.assert_array_equal(y.detach().numpy(), [_values((2, 3))[0], [1.0, 2.0, 3.0]])
    (y * ag.tensor(np.arange(6.0).reshape(2, 3))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(v.grad.numpy(), [3.0, 4.0, 5.0])
    z = ag.zeros(2, 0)  # the 0-dim index broadcasts with the empty mask's positions: nothing to write, no check
    z.index_put_((T([False, False]), T(0)), T(1.0))
    z.index_put_((T([False, False]), T(0)), T(1.0), accumulate=True)
    assert z.shape == (2, 0)


def test_index_put_fills_one_mask_from_a_one_element_value_of_another_dtype():
    x = ag.tensor(np.zeros(3), requires_grad=True)
    v = ag.tensor(2.0, dtype=ag.float32, requires_grad=True)
    y = x.index_put((T([True, False, True]),), v)
    np.testing.assert_array_equal(y.detach().numpy(), [2.0, 0.0, 2.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0])
    assert v.grad.dtype == ag.float32 and v.grad.item() == 2.0
    w = ag.tensor(np.ones((1, 1, 1)), requires_grad=True)  # any one-element shape
    y = x.index_put((T([True, False, True]),), w * 3.0)
    np.testing.assert_array_equal(y.detach().numpy(), [3.0, 0.0, 3.0])
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[[6.0]]])
    with pytest.raises(RuntimeError, match=r"^Index put requires the source and destination dtypes match"):
        ag.zeros(2, 3).index_put_((T([True, False]), T([0])), T(5))  # two index tensors: no mask fill


@pytest.mark.filterwarnings("ignore:indexing with dtype torch.uint8")
def test_a_byte_mask_filled_from_one_element_is_refused_as_pytorchs_masked_fill_():
    message = r"^masked_fill_ only supports boolean masks, but got mask with dtype unsigned char$"
    mask = ag.tensor([1, 0, 1], dtype=ag.uint8)
    with pytest.raises(RuntimeError, match=message):
        ag.zeros(3)[mask] = 5.0
    with pytest.raises(RuntimeError, match=message):
        ag.zeros(3).index_put_((mask,), T(5.0))
    y = ag.zeros(3)
    y[mask] = T([5.0, 6.0])  # a value of more elements goes by index_put, which takes the byte mask
    np.testing.assert_array_equal(y.numpy(), [5.0, 0.0, 6.0])


def test_a_numpy_uint8_array_indexes_as_a_mask():
    x = ag.tensor(np.arange(3.0))
    with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
        np.testing.assert_array_equal(x[np.array([1, 0, 1], dtype=np.uint8)].numpy(), [0.0, 2.0])


# -- narrow and take_along_dim ------------------------------------------------------------------------------------
def test_narrow_checks_its_length_before_its_dim_and_start():
    with pytest.raises(RuntimeError, match=r"^narrow\(\): length must be non-negative\.$"):
        ag.zeros(2, 3).narrow(5, 9, -1)


def test_take_along_dim_counts_negative_indices_from_the_end():
    x = ag.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = ag.take_along_dim(x, T([[-1, 0], [-3, 2]]), 1)
    np.testing.assert_array_equal(y.detach().numpy(), [[2.0, 0.0], [3.0, 5.0]])
    y.backward(T([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(x.grad.numpy(), [[2.0, 0.0, 1.0], [3.0, 0.0, 4.0]])
    with pytest.raises(RuntimeError, match=r"^index -4 is out of bounds for dimension 1 with size 3$"):
        ag.take_along_dim(x, T([[-4]]), 1)
    with pytest.raises(RuntimeError, match=r"^index 3 is out of bounds for dimension 1 with size 3$"):
        ag.take_along_dim(x, T([[3]]), 1)  # PyTorch wraps it silently (pytorch/pytorch#196106)


def test_take_along_dims_broadcast_error_names_the_last_clashing_dim():
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(3\) must match the size of tensor b \(2\) at "
                                           r"non-singleton dimension 1$"):
        ag.take_along_dim(ag.zeros(2, 3, 4), ag.zeros(3, 2, 4, dtype=ag.int64), 2)


# -- gather, scatter_add, index_add, scatter_reduce --------------------------------------------------------------
def test_gather_with_an_empty_index_checks_no_shape():
    x = ag.tensor(_values((1, 3)), requires_grad=True)
    y = x.gather(0, ag.zeros(0, 4, dtype=ag.int64))
    assert y.shape == (0, 4)
    assert x.gather(1, ag.zeros(0, dtype=ag.int64)).shape == (0,)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((1, 3)))


def test_scatter_add_words_its_shape_error_as_scatters_and_checks_none_for_an_empty_index():
    with pytest.raises(RuntimeError, match=r"^Expected index \[1, 4\] to be no larger than self \[1, 3\] apart from "
                                           r"dimension 0 and to be no larger size than src \[2, 4\]$"):
        ag.zeros(1, 3).scatter_add(0, ag.zeros(1, 4, dtype=ag.int64), ag.zeros(2, 4))
    x = ag.tensor(_values((1, 3)), requires_grad=True)
    src = ag.tensor(_values((2, 4)), requires_grad=True)
    y = x.scatter_add(0, ag.zeros(0, dtype=ag.int64), src)
    np.testing.assert_array_equal(y.detach().numpy(), _values((1, 3)))
    assert y.grad_fn.name() == "ScatterAddBackward0"
    (y * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((1, 3), 2.0))
    np.testing.assert_array_equal(src.grad.numpy(), np.zeros((2, 4)))


def test_index_add_checks_its_source_before_the_index_bounds():
    with pytest.raises(RuntimeError, match=r"^source tensor shape must match self tensor shape, excluding the "
                                           r"specified dimension\. Got self\.shape = \[\] source\.shape = \[2\]$"):
        ag.zeros(()).index_add(0, T([-1, -1]), ag.ones(2))


def test_index_add_with_alpha_true_words_a_position_out_of_range_as_its_loop():
    with pytest.raises(IndexError, match=r"^index out of range in self$"):
        ag.zeros(2, 3).index_add(0, T([0, 9]), ag.ones(2, 3), alpha=True)
    with pytest.raises(RuntimeError, match=r"^index 9 is out of bounds for dimension 0 with size 2$"):
        ag.zeros(2, 3).index_add(0, T([0, 9]), ag.ones(2, 3), alpha=1)


def test_scatter_reduce_refuses_complex_gradients_only_after_its_checks():
    x = ag.zeros(3, dtype=ag.complex128, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^index 5 is out of bounds for dimension 0 with size 3$"):
        x.scatter_reduce(0, T([0, 5]), ag.ones(2, dtype=ag.complex128), "sum")
    with pytest.raises(RuntimeError, match=r"^scatter_reduce does not support automatic differentiation"):
        x.scatter_reduce(0, T([0, 2]), ag.ones(2, dtype=ag.complex128), "sum")


@pytest.mark.parametrize("dtype, reduce, kernel", [
    (ag.bool, "mean", "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'"),
    (ag.complex128, "amax", "\"scatter_gather_tensor_cpu_reduce_amax\" not implemented for 'ComplexDouble'"),
])
def test_scatter_reduce_without_include_self_checks_bounds_before_refusing_a_dtype(dtype, reduce, kernel):
    x, src = ag.zeros(3, dtype=dtype), ag.ones(2, dtype=dtype)
    with pytest.raises(RuntimeError, match=r"^index -1 is out of bounds for dimension 0 with size 3$"):
        x.scatter_reduce(0, T([0, -1]), src, reduce, include_self=False)
    with pytest.raises(NotImplementedError, match=f"^{kernel}$"):
        x.scatter_reduce(0, T([0, -1]), src, reduce, include_self=True)
    with pytest.raises(NotImplementedError, match=f"^{kernel}$"):
        x.scatter_reduce(0, T([0, 1]), src, reduce, include_self=False)


# -- masked_fill and masked_scatter ---------------------------------------------------------------------------------
def test_masked_fill_and_masked_scatter_broadcast_errors_are_pytorchs():
    mask = ag.zeros(2, dtype=ag.bool)
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of tensor b \(4\) at "
                                           r"non-singleton dimension 0$"):
        ag.zeros(4).masked_fill(mask, 1.0)
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(0\) must match the size of tensor b \(2\) at "
                                           r"non-singleton dimension 0$"):
        ag.zeros(0).masked_fill_(mask, 1.0)
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of tensor b \(3\) at "
                                           r"non-singleton dimension 1$"):
        ag.zeros(2, 3).masked_scatter(mask, ag.zeros(6))
    with pytest.raises(RuntimeError, match=r"^The expanded size of the tensor \(4\) must match the existing size \(2\) "
                                           r"at non-singleton dimension 2"):
        ag.zeros(1, 3, 4).masked_scatter_(mask, ag.zeros(12))
