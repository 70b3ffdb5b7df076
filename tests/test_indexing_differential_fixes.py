"""Behaviours where a differential run against PyTorch found indexing, gathering and scattering differing, each
checked against numpy or finite differences: a list holding sequences read as a tuple of index entries (with
PyTorch's deprecation warning), range and tuple entries as index tensors, PyTorch's errors for 0-dim tensors, index
tensors of other integer dtypes, index tensors that do not broadcast and ints past int64, gradients that read the
index the forward read however the caller's index changes later, index_select's range [0, size) and 0-dim input,
gather and scatter_add on 0-dim tensors, gather's sparse_grad, index_add's alpha on integer tensors, and
index_reduce on 0-dim tensors with its beta warning."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

SEQUENCE_WARNING = "Using a non-tuple sequence for multidimensional indexing is deprecated"


def _values(shape):
    """Distinct float64 values, away from ties."""
    return (np.sin(np.arange(int(np.prod(shape))) * 0.37 + 0.1) * 3).reshape(shape)


def _weighted_grad(make, x_values):
    """The gradient of (make(x) * fixed weights).sum() with respect to x."""
    x = ag.tensor(x_values, requires_grad=True)
    out = make(x)
    weights = np.cos(np.arange(out.numel()) * 1.3 + 0.2).reshape(tuple(out.shape))
    (out * ag.tensor(weights)).sum().backward()
    return x.grad.numpy(), weights


# -- a list as a tuple of entries, sequences as index tensors -------------------------------------------------------
@pytest.mark.parametrize("index, numpy_index", [
    (lambda: [0, [1, 2]], (0, [1, 2])),
    (lambda: [[0, 1], 2], ([0, 1], 2)),
    (lambda: [ag.tensor([0, 2]), ag.tensor([1, 3])], ([0, 2], [1, 3])),
    (lambda: [np.array([0, 2]), np.array([1, 3])], ([0, 2], [1, 3])),
    (lambda: [0, None], (0, None)),
    (lambda: [1, ...], (1, ...)),
    (lambda: [slice(None), 1], (slice(None), 1)),
    (lambda: [[]], ([],)),
])
def test_a_list_holding_a_sequence_none_or_slice_indexes_as_a_tuple_with_pytorchs_warning(index, numpy_index):
    a = _values((3, 4, 5))
    with pytest.warns(UserWarning, match=SEQUENCE_WARNING):
        got = ag.tensor(a)[index()]
    want = a[tuple(np.array(e, dtype=np.int64) if isinstance(e, list) else e for e in numpy_index)]
    np.testing.assert_array_equal(got.numpy(), want)
    x = ag.tensor(a)
    with pytest.warns(UserWarning, match=SEQUENCE_WARNING):
        x[index()] = -7.0
    written = a.copy()
    written[tuple(np.array(e, dtype=np.int64) if isinstance(e, list) else e for e in numpy_index)] = -7.0
    np.testing.assert_array_equal(x.numpy(), written)


def test_a_list_of_numbers_or_of_32_sequences_stays_one_index(recwarn):
    a = _values((3, 4, 5))
    np.testing.assert_array_equal(ag.tensor(a)[[2, 0, 2]].numpy(), a[[2, 0, 2]])
    np.testing.assert_array_equal(ag.tensor(a)[[True, False, True]].numpy(), a[[True, False, True]])
    rows = [[i % 3] for i in range(32)]  # 32 entries or more: one (32, 1) index, as PyTorch reads it
    assert ag.tensor(a)[rows].shape == (32, 1, 4, 5)
    assert not [w for w in recwarn if SEQUENCE_WARNING in str(w.message)]
    with pytest.warns(UserWarning, match=SEQUENCE_WARNING), pytest.raises(
            IndexError, match="too many indices for tensor of dimension 1"):
        ag.tensor(a[0, 0])[[[0, 1], [2, 3]]]  # two entries for one dim, not a (2, 2) index


def test_range_and_tuple_entries_are_index_tensors_with_gradients():
    log_probs = _values((4, 3))
    targets = [2, 0, 1, 1]
    picked = ag.tensor(log_probs)[range(4), targets]
    np.testing.assert_array_equal(picked.numpy(), log_probs[np.arange(4), targets])
    np.testing.assert_array_equal(ag.tensor(log_probs)[range(1, 3)].numpy(), log_probs[1:3])
    np.testing.assert_array_equal(ag.tensor(log_probs)[(0, 3), ].numpy(), log_probs[[0, 3]])
    x = ag.tensor(log_probs, requires_grad=True)
    assert gradcheck(lambda t: t[range(4), targets], (x,))
    assert gradgradcheck(lambda t: t[(0, 0, 3), ], (x,))
    y = ag.tensor(log_probs)
    y[range(4), targets] = 0.0
    want = log_probs.copy()
    want[np.arange(4), targets] = 0.0
    np.testing.assert_array_equal(y.numpy(), want)


# -- PyTorch's errors -----------------------------------------------------------------------------------------------
def test_indexing_a_zero_dim_tensor_raises_pytorchs_texts():
    x = ag.tensor(2.0)
    with pytest.raises(IndexError, match=r"^invalid index of a 0-dim tensor\. Use `tensor\.item\(\)` in Python"):
        x[0]
    with pytest.raises(IndexError, match=r"^slice\(\) cannot be applied to a 0-dim tensor\.$"):
        x[:]
    with pytest.raises(IndexError, match="^too many indices for tensor of dimension 0"):
        x[0, 0]
    assert x[None].shape == (1,) and x[...].item() == 2.0


@pytest.mark.parametrize("dtype", [ag.int8, ag.int16])
def test_index_tensors_of_other_integer_dtypes_are_refused_unless_zero_dim(dtype):
    a = _values((3, 4))
    with pytest.raises(IndexError, match="^tensors used as indices must be long, int, byte or bool tensors"):
        ag.tensor(a)[ag.tensor([0, 1], dtype=dtype)]
    np.testing.assert_array_equal(ag.tensor(a)[ag.tensor(2, dtype=dtype)].numpy(), a[2])  # a 0-dim one is an int
    np.testing.assert_array_equal(ag.tensor(a)[ag.tensor([2, 0], dtype=ag.int32)].numpy(), a[[2, 0]])


def test_index_tensors_that_do_not_broadcast_raise_pytorchs_text():
    x = ag.tensor(_values((3, 4)))
    with pytest.raises(IndexError, match=r"^shape mismatch: indexing tensors could not be broadcast together with "
                                         r"shapes \[2\], \[3\]$"):
        x[ag.tensor([0, 1]), ag.tensor([0, 1, 2])]
    with pytest.raises(IndexError, match=r"shapes \[2\], \[3\]$"):
        x[ag.tensor([0, 1]), ag.tensor([0, 1, 2])] = 1.0


def test_an_int_index_past_int64_overflows_as_pytorchs():
    x = ag.tensor(_values((3,)))
    for index in (2**63, -2**63 - 1):
        with pytest.raises(ValueError, match="^Overflow when unpacking long long$"):
            x[index]
    with pytest.raises(IndexError, match="index 4611686018427387904 is out of bounds for dimension 0 with size 3"):
        x[2**62]


# -- gradients read the index the forward read ----------------------------------------------------------------------
def _scatter_sum_back(g, index, shape, dim):
    """The gradient gather's input gets: g added back at index along dim (repeats add up)."""
    out = np.zeros(shape)
    where = list(np.indices(index.shape))
    where[dim] = index
    np.add.at(out, tuple(where), g)
    return out


def test_changing_an_index_in_place_after_the_forward_leaves_the_gradients_as_they_were():
    a = _values((3, 4))
    rows = ag.tensor([0, 0, 2])
    x = ag.tensor(a, requires_grad=True)
    picked = x[rows]
    gathered = x.gather(1, index := ag.tensor([[3, 3], [0, 1], [2, 2]]))
    selected = x.index_select(1, columns := ag.tensor([1, 1]))
    host = np.array([2, 1])
    from_numpy = x[host]
    rows[0], index[0, 0], columns[0], host[0] = 1, 0, 3, 0  # after the forward: the backward must not see these
    (picked.sum() + gathered.sum() + selected.sum() + from_numpy.sum()).backward()
    want = np.zeros((3, 4))
    np.add.at(want, [0, 0, 2], 1.0)
    want += _scatter_sum_back(np.ones((3, 2)), np.array([[3, 3], [0, 1], [2, 2]]), (3, 4), 1)
    want[:, 1] += 2
    np.add.at(want, [2, 1], 1.0)
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_changing_a_scatter_index_or_mask_in_place_after_the_forward_leaves_the_gradients_as_they_were():
    a, s = _values((3, 4)), _values((2, 4)) + 1
    x = ag.tensor(a, requires_grad=True)
    src = ag.tensor(s, requires_grad=True)
    index = ag.tensor([[0, 1, 2, 0], [1, 1, 0, 2]])
    scattered = x.scatter_add(0, index, src)
    reduced = x.scatter_reduce(0, index, src, "amax", include_self=False)
    mask = ag.tensor(a > 0)
    value = ag.tensor(0.5, dtype=ag.float64, requires_grad=True)
    filled = x.masked_fill(mask, value)
    assert a[2, 1] < 0
    index[0, 0], mask[2, 1] = 2, True  # after the forward: the backward must not see these
    (scattered.sum() + reduced.sum() + filled.sum()).backward()
    # scatter_add passes the gradient to all of x and reads it back at index for src; amax without self hands
    # each reached position's gradient to its one src element (no ties here) and none to x there.
    positions = np.array([[0, 1, 2, 0], [1, 1, 0, 2]])
    reached = np.zeros((3, 4), bool)
    reached[positions, np.arange(4)] = True
    np.testing.assert_array_equal(x.grad.numpy(), 1 + ~reached + (a <= 0))
    winners = np.zeros((2, 4))
    for column in range(4):
        for target in set(positions[:, column]):
            rows = [r for r in range(2) if positions[r, column] == target]
            winners[max(rows, key=lambda r: s[r, column]), column] = 1
    np.testing.assert_array_equal(src.grad.numpy(), 1 + winners)
    assert value.grad.item() == (a > 0).sum()


# -- index_select, gather and scatter_add ---------------------------------------------------------------------------
def test_index_select_takes_indices_in_zero_to_size_only_as_pytorch():
    x = ag.tensor(_values((3, 4)))
    for bad in ([-1], [3]):
        with pytest.raises(IndexError, match="^index out of range in self$"):
            x.index_select(0, ag.tensor(bad))
    np.testing.assert_array_equal(x.index_select(0, ag.tensor(2)).numpy(), _values((3, 4))[[2]])


def test_index_select_of_a_zero_dim_input_takes_one_index():
    x = ag.tensor(1.25, dtype=ag.float64, requires_grad=True)
    for index in (ag.tensor(0), ag.tensor([0])):
        out = x.index_select(0, index)
        assert out.shape == () and out.item() == 1.25
    assert gradcheck(lambda t: t.index_select(-1, ag.tensor([0])) * 3, (x,))
    with pytest.raises(RuntimeError, match=r"^index_select\(\): Index to scalar can have only 1 value, got 2 value"):
        x.index_select(0, ag.tensor([0, 0]))
    with pytest.raises(IndexError, match="^index out of range in self$"):
        x.index_select(0, ag.tensor([1]))


def test_gather_reads_a_zero_dim_input_or_index_as_one_of_shape_1():
    a = _values((4,))
    x = ag.tensor(a, requires_grad=True)
    out = x.gather(0, ag.tensor(2))
    assert out.shape == () and out.item() == a[2]
    scalar = ag.tensor(0.75, dtype=ag.float64, requires_grad=True)
    spread = scalar.gather(0, ag.tensor([0, 0, 0]))
    np.testing.assert_array_equal(spread.detach().numpy(), [0.75] * 3)
    assert gradcheck(lambda t: t.gather(-1, ag.tensor(3)), (x,))
    assert gradcheck(lambda t: t.gather(0, ag.tensor([0, 0])), (scalar,))
    grad, weights = _weighted_grad(lambda t: t.gather(0, ag.tensor([0, 0, 0])), np.array(0.75))
    assert grad.shape == () and np.isclose(grad, weights.sum(), rtol=1e-15)
    with pytest.raises(RuntimeError, match="^Index tensor must have the same number of dimensions"):
        ag.tensor(_values((3, 1))).gather(0, ag.tensor(0))


def test_gather_takes_sparse_grad_false_and_refuses_true():
    x = ag.tensor(_values((3, 4)))
    index = ag.tensor([[1, 0, 2, 2]])
    np.testing.assert_array_equal(ag.gather(x, 0, index, sparse_grad=False).numpy(),
                                  np.take_along_axis(_values((3, 4)), index.numpy(), 0))
    with pytest.raises(NotImplementedError, match="sparse gradients are not supported"):
        x.gather(0, index, sparse_grad=True)


def test_scatter_add_reads_zero_dim_tensors_as_ones_of_shape_1():
    out = ag.tensor(5.0).scatter_add(0, ag.tensor([0, 0]), ag.ones(2))
    assert out.shape == () and out.item() == 7.0
    np.testing.assert_array_equal(ag.ones(3).scatter_add(0, ag.tensor(1), ag.tensor(2.0)).numpy(), [1, 3, 1])
    x = ag.tensor(_values((3,)), requires_grad=True)
    s = ag.tensor(0.5, dtype=ag.float64, requires_grad=True)
    assert gradcheck(lambda a, b: a.scatter_add(0, ag.tensor([1]), b), (x, s))
    scalar = ag.tensor(2.0, dtype=ag.float64, requires_grad=True)
    src = ag.tensor([0.5, 1.5], dtype=ag.float64, requires_grad=True)
    assert gradcheck(lambda a, b: a.scatter_add(0, ag.tensor([0, 0]), b), (scalar, src))


# -- index_add's alpha, index_reduce --------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha, times", [(2.7, 2), (-2.7, -2)])
def test_index_add_converts_alpha_to_an_integer_selfs_type(alpha, times):
    x = ag.arange(4)
    out = x.index_add(0, ag.tensor([0, 2]), ag.tensor([5, 7]), alpha=alpha)
    assert out.dtype == ag.int64 and out.tolist() == [0 + 5 * times, 1, 2 + 7 * times, 3]
    flags = ag.tensor([False, True])
    assert flags.index_add(0, ag.tensor([0]), ag.tensor([True]), alpha=2).tolist() == [True, True]
    floats = ag.zeros(2, dtype=ag.float64).index_add(0, ag.tensor([1]), ag.ones(1, dtype=ag.float64), alpha=2.5)
    assert floats.tolist() == [0.0, 2.5]


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_of_zero_dim_tensors(reduce):
    x = ag.tensor(1.5, dtype=ag.float64, requires_grad=True)
    s = ag.tensor(-0.5, dtype=ag.float64, requires_grad=True)
    out = x.index_reduce(0, ag.tensor([0]), s, reduce)
    want = {"prod": 1.5 * -0.5, "mean": (1.5 - 0.5) / 2, "amax": 1.5, "amin": -0.5}[reduce]
    assert out.shape == () and out.item() == want
    assert gradcheck(lambda a, b: a.index_reduce(0, ag.tensor([0]), b, reduce), (x, s))


def test_index_reduce_warns_once_that_it_is_in_beta():
    from actorgrad import user_warnings

    user_warnings._warned_once.discard("index_reduce() is in beta and the API may change at any time.")
    x = ag.tensor(_values((3,)))
    with pytest.warns(UserWarning, match=r"^index_reduce\(\) is in beta"):
        x.index_reduce(0, ag.tensor([1]), ag.tensor([2.0], dtype=ag.float64), "prod")


# -- on CUDA --------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_the_fixes_on_cuda_give_the_cpu_results(recwarn, cupy):
    results = []
    for device in ("cpu", "cuda"):
        x = ag.tensor(_values((3, 4)), device=device, requires_grad=True)
        scalar = ag.tensor(0.75, dtype=ag.float64, device=device, requires_grad=True)
        rows = ag.tensor([0, 0, 2], device=device)
        picked = x[rows]
        listed = x[[rows, ag.tensor([1, 3, 3], device=device)]]
        ranged = x[range(3), [3, 2, 1]]
        outs = [picked, listed, ranged, x.gather(1, ag.tensor(2, device=device).reshape(1, 1)),
                scalar.gather(0, ag.tensor([0, 0], device=device)),
                scalar.index_select(0, ag.tensor([0], device=device)),
                scalar.scatter_add(0, ag.tensor([0, 0], device=device), ag.ones(2, dtype=ag.float64, device=device)),
                x.index_select(1, ag.tensor([3, 0], device=device))]
        rows[0] = 1  # after the forward
        sum(o.sum() for o in outs).backward()
        results.append([o.detach().cpu().numpy() for o in outs] + [x.grad.cpu().numpy(), scalar.grad.cpu().numpy()])
    for cpu, cuda in zip(*results):
        np.testing.assert_array_equal(cuda, cpu)
