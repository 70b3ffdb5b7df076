"""Shape and view ops where a differential review against PyTorch found actorgrad behaving otherwise: results that
aliased their input or refused in-place writes PyTorch allows, column-major results of cat and stack, numpy's
`axis` keyword, and PyTorch's errors for 0-dim and misshapen arguments. Expected values come from numpy's own
repeat, concatenate and stack, and gradients from finite differences."""

import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings
from actorgrad.autograd import gradcheck, gradgradcheck

SHARED_MEMORY = "more than one element of the written-to tensor refers to a single memory location"


def leaf(array, device=None):
    return ag.tensor(np.asarray(array, dtype=np.float64), requires_grad=True, device=device)


@pytest.mark.parametrize("shape, dim", [((1,), None), ((1, 3), 0), ((2, 1), 1), ((), None)])
def test_repeat_interleave_of_a_size_one_dim_is_new_memory(shape, dim):
    values = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    x = ag.tensor(values.copy())
    y = x.repeat_interleave(3, dim=dim)
    np.testing.assert_array_equal(y.numpy(), np.repeat(values, 3, axis=dim))
    assert y.is_contiguous()
    y[(0,) * y.ndim] = -5.0  # was refused: the result was a stride-0 view of x's one element per row
    np.testing.assert_array_equal(x.numpy(), values)
    assert (y.numpy() == -5.0).sum() == 1


def test_repeat_interleave_records_pytorchs_view_of_a_clone_and_differentiates():
    x = leaf(np.arange(6.0).reshape(1, 6) / 5)
    y = x.repeat_interleave(2, dim=0)
    assert y.grad_fn.name() == "ViewBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "CloneBackward0"
    for dim in (0, 1, None):
        fn = lambda t, dim=dim: t.repeat_interleave(3, dim=dim)  # noqa: E731
        assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


@pytest.mark.parametrize("dtype", [ag.int32, ag.int64])
def test_repeat_interleave_of_counts_alone_keeps_their_dtype(dtype):
    counts = ag.tensor([2, 0, 3], dtype=dtype)
    out = ag.repeat_interleave(counts)
    assert out.dtype == dtype  # an int32 tensor gave int64
    np.testing.assert_array_equal(out.numpy(), np.repeat(np.arange(3), [2, 0, 3]))


@pytest.mark.parametrize("dtype, name", [(ag.int8, "Char"), (ag.int16, "Short"), (ag.uint8, "Byte")])
def test_repeat_interleave_refuses_small_integer_counts_as_pytorch(dtype, name):
    counts = ag.tensor([1, 2], dtype=dtype)
    with pytest.raises(NotImplementedError, match=f"\"repeat_interleave_cpu\" not implemented for '{name}'"):
        ag.repeat_interleave(counts)
    with pytest.raises(NotImplementedError, match=name):
        ag.ones(2).repeat_interleave(counts)


@pytest.mark.parametrize("join, numpy_join", [("cat", "concatenate"), ("stack", "stack"), ("hstack", "hstack"),
                                               ("vstack", "vstack")])
def test_cat_and_stack_of_transposed_inputs_give_row_major_results(join, numpy_join):
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(6.0, 12.0).reshape(2, 3)
    out = getattr(ag, join)([ag.tensor(a).t(), ag.tensor(b).t()])
    want = getattr(np, numpy_join)([a.T, b.T])
    np.testing.assert_array_equal(out.numpy(), want)
    assert out.is_contiguous()  # numpy kept the column-major order of its inputs
    assert out.stride() == tuple(s // 8 for s in np.ascontiguousarray(want).strides)
    np.testing.assert_array_equal(out.view(-1).numpy(), want.ravel())  # was refused as an incompatible view


def test_cat_of_transposed_inputs_differentiates():
    a, b = leaf(np.arange(6.0).reshape(2, 3) / 7), leaf(np.arange(3.0).reshape(1, 3) / 5)
    fn = lambda p, q: ag.cat([p.t(), q.t()], 1).view(-1)  # noqa: E731
    assert gradcheck(fn, (a, b)) and gradgradcheck(fn, (a, b))


@pytest.mark.parametrize("make", [
    lambda t: t.expand(2, 3),
    lambda t: t.expand(-1, -1),
    lambda t: t.expand_as(t),
    lambda t: ag.broadcast_to(t, (1, 2, 3)),
    lambda t: t.expand(1, 1, 2, 3),
])
def test_expand_that_repeats_nothing_is_a_writeable_view(make):
    values = np.arange(6.0).reshape(2, 3)
    x = ag.tensor(values.copy())
    view = make(x)
    view.mul_(2)  # was refused: numpy's broadcast views are read-only
    np.testing.assert_array_equal(x.numpy(), values * 2)
    assert view._base is x


def test_expand_that_repeats_elements_still_refuses_in_place_writes():
    x = ag.tensor(np.arange(3.0).reshape(3, 1))
    with pytest.raises(RuntimeError, match=SHARED_MEMORY):
        x.expand(3, 4).mul_(2)


def test_in_place_write_through_an_expand_that_repeats_nothing_differentiates():
    x = leaf(np.arange(6.0).reshape(2, 3) / 4)
    w = leaf(np.linspace(0.5, 1.5, 6).reshape(1, 2, 3))

    def fn(p, q):
        b = p * 1.0
        b.expand(1, 2, 3).mul_(q)
        return b

    assert gradcheck(fn, (x, w))
    fn(x, w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), w.detach().numpy()[0])
    np.testing.assert_allclose(w.grad.numpy(), x.detach().numpy()[None])


@pytest.mark.parametrize("shape, sizes", [((3, 1), (3, -2)), ((1,), (-2,))])
def test_expand_to_a_negative_size_is_a_runtime_error(shape, sizes):
    with pytest.raises(RuntimeError, match=f"negative dimension {sizes[-1]}"):  # was numpy's ValueError
        ag.ones(*shape).expand(*sizes)


def test_zero_dim_tensors_get_pytorchs_errors_from_split_chunk_unbind_and_roll():
    x = ag.tensor(1.0)
    with pytest.raises(RuntimeError, match="^split expects at least a 1-dimensional tensor$"):
        x.split(1)
    with pytest.raises(RuntimeError, match="^chunk expects at least a 1-dimensional tensor$"):
        x.chunk(1)
    with pytest.raises(IndexError, match="^Dimension specified as 0 but tensor has no dimensions$"):
        x.unbind()
    with pytest.raises(IndexError, match="^Dimension specified as -1 but tensor has no dimensions$"):
        x.roll(1, -1)
    assert x.roll(1).item() == 1.0


def test_split_checks_negative_sizes_before_their_sum():
    with pytest.raises(RuntimeError, match=r"only non-negative entries, but got split_sizes=\[-1, 8\]"):
        ag.arange(7.0).split([-1, 8])


def test_tensor_split_method_takes_pytorchs_keyword_and_a_one_element_tensor():
    values = np.arange(7.0)
    x = ag.tensor(values)
    for pieces in (x.split(split_size=3), x.split(ag.tensor(3)), ag.split(x, split_size_or_sections=3)):
        assert [p.numpy().tolist() for p in pieces] == [values[:3].tolist(), values[3:6].tolist(), [6.0]]


def test_numpys_axis_keyword_is_taken_where_pytorch_takes_it():
    values = np.arange(6.0).reshape(2, 1, 3)
    x = ag.tensor(values)
    np.testing.assert_array_equal(ag.cat([x, x], axis=2).numpy(), np.concatenate([values, values], 2))
    np.testing.assert_array_equal(ag.concat([x, x], axis=1).numpy(), np.concatenate([values, values], 1))
    np.testing.assert_array_equal(ag.stack([x, x], axis=3).numpy(), np.stack([values, values], 3))
    assert x.squeeze(axis=1).shape == (2, 3) and ag.squeeze(x, axis=0).shape == (2, 1, 3)
    assert x.unsqueeze(axis=-1).shape == (2, 1, 3, 1)
    assert [p.shape for p in x.chunk(2, axis=2)] == [(2, 1, 2), (2, 1, 1)]
    assert [p.shape for p in ag.chunk(x, 3, axis=2)] == [(2, 1, 1)] * 3
    assert [p.shape for p in x.unbind(axis=2)] == [(2, 1)] * 3
    assert [p.shape for p in x.tensor_split(2, axis=2)] == [(2, 1, 2), (2, 1, 1)]
    assert [p.shape for p in x.split_with_sizes([1, 2], axis=2)] == [(2, 1, 1), (2, 1, 2)]
    np.testing.assert_array_equal(x.repeat_interleave(2, axis=2).numpy(), np.repeat(values, 2, 2))


def test_unsqueeze_takes_one_dim():
    x = ag.ones(2, 3)
    with pytest.raises(TypeError, match="argument 'dim' \\(position 1\\) must be int, not tuple"):
        x.unsqueeze((0, 1))  # was unsqueeze(0), silently
    with pytest.raises(TypeError, match="must be int, not NoneType"):
        x.unsqueeze(None)
    assert x.unsqueeze(np.int64(1)).shape == (2, 1, 3)


def test_transpose_of_a_zero_dim_tensor_checks_its_dims_and_is_a_view():
    x = ag.tensor(2.0)
    for d0, d1 in ((0, 1), (2, 0), (-2, -1)):
        with pytest.raises(IndexError, match=r"expected to be in range of \[-1, 0\]"):
            x.transpose(d0, d1)
    y = x.transpose(0, -1)
    assert y._base is x
    y.fill_(5.0)
    assert x.item() == 5.0


def test_T_and_mT_off_matrices_warn_once_per_process_as_pytorchs_warn_once(monkeypatch):
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    x, scalar = ag.ones(2, 3, 4), ag.tensor(1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shapes = [(x.T.shape, scalar.T.shape, scalar.mT.shape) for _ in range(3)]
    assert shapes == [((4, 3, 2), (), ())] * 3
    texts = [str(w.message) for w in caught]
    assert len(texts) == 3 and len(set(texts)) == 3  # each use warned


@pytest.mark.gpu
def test_fixes_on_cuda(cupy):
    values = np.arange(1.0, 3.0).reshape(1, 2)
    x = ag.tensor(values, device="cuda:0")
    y = x.repeat_interleave(3, dim=0)
    y[0, 0] = -5.0
    np.testing.assert_array_equal(x.cpu().numpy(), values)
    np.testing.assert_array_equal(y.cpu().numpy()[1:], np.repeat(values, 2, 0))
    a = np.arange(6.0).reshape(2, 3)
    out = ag.cat([ag.tensor(a, device="cuda:0").t(), ag.tensor(a, device="cuda:0").t()], axis=1)
    assert out.is_contiguous()
    np.testing.assert_array_equal(out.view(-1).cpu().numpy(), np.concatenate([a.T, a.T], 1).ravel())
    z = ag.tensor(a, device="cuda:0")
    z.expand(1, 2, 3).mul_(2)
    np.testing.assert_array_equal(z.cpu().numpy(), a * 2)
    g = leaf(a / 3, device="cuda:0")
    assert gradcheck(lambda t: ag.stack([t.t(), t.t()], 0).view(-1).repeat_interleave(2), (g,))
