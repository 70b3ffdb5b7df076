"""Views, shapes and indexing where a fuzz-differential review against PyTorch found actorgrad behaving differently:
unflatten inferring a size equal to the dim's, the adjoint of a 0-d complex tensor, the `_copy` forms' layout,
as_strided views that repeat elements, ravel and flip's layout and view-ness, views taken in no_grad mode whose
storage changed afterwards, masked_fill_ into an expanded tensor, masked_scatter of 0-d tensors, scatter_reduce of
complex tensors, and repeat_interleave, repeat and roll of non-contiguous inputs."""

import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

NO_GRAD_VIEW_CHANGED = (
    "A view was created in no_grad mode and its base or another view of its base has been modified inplace with "
    "grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden."
)
NO_GRAD_VIEW = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use "
    "case is ambiguous and error-prone, it is forbidden."
)
SHARED_MEMORY = "unsupported operation: more than one element of the written-to tensor refers to a single memory"


def _values(shape, seed=0):
    return np.random.default_rng(seed).uniform(0.5, 2.0, size=shape)


def _leaf(shape, seed=0):
    return ag.tensor(_values(shape, seed), dtype=ag.float64, requires_grad=True)


def _row_major_strides(shape):
    return tuple(int(np.prod(shape[d + 1:])) for d in range(len(shape)))


# -- unflatten, adjoints, _copy forms ---------------------------------------------------------------------------------
@pytest.mark.parametrize("size, sizes, shape", [(4, (-1, 4), (1, 4)), (4, (4, -1), (4, 1)), (1, (-1, 1), (1, 1)),
                                                (6, (-1, 3), (2, 3)), (0, (-1, 2), (0, 2))])
def test_unflatten_infers_a_size_of_one_and_of_zero(size, sizes, shape):
    x = _leaf((size, 2))
    out = x.unflatten(0, sizes)
    assert out.shape == shape + (2,)
    np.testing.assert_array_equal(out.detach().numpy(), x.detach().numpy().reshape(shape + (2,)))
    assert gradcheck(lambda t: t.unflatten(0, sizes), (x,))


def test_the_adjoint_of_a_0d_complex_tensor_is_its_conjugate(recwarn):
    z = ag.tensor(1.5 - 2.0j)
    for out in (z.H, z.mH, z.adjoint()):
        assert out.item() == 1.5 + 2.0j
    assert ag.tensor(2.0).H.item() == 2.0


@pytest.mark.parametrize("transposed, copy, args", [
    (False, ag.t_copy, ()), (False, ag.permute_copy, ((1, 0),)), (False, ag.transpose_copy, (0, 1)),
    (True, ag.squeeze_copy, ()), (True, ag.unfold_copy, (0, 2, 1)), (True, ag.expand_copy, ((2, 4, 3),)),
])
def test_the_copy_forms_of_views_are_row_major(transposed, copy, args):
    x = _leaf((3, 4)).t() if transposed else _leaf((3, 4))  # the view of x is not row-major
    out = copy(x, *args)
    assert out.stride() == _row_major_strides(out.shape) and out.is_contiguous()
    assert not np.shares_memory(out.detach().numpy(), x.detach().numpy())


def test_view_copy_takes_a_layout_view_refuses():
    x = _leaf((3, 4)).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.view(-1)
    out = ag.view_copy(x, [-1])
    np.testing.assert_array_equal(out.detach().numpy(), x.detach().numpy().reshape(-1))
    assert gradcheck(lambda t: ag.view_copy(t.t(), [-1]), (_leaf((3, 4)),))


# -- as_strided, ravel, flip, roll, repeat ----------------------------------------------------------------------------
def test_an_as_strided_view_that_repeats_elements_refuses_writes_but_fills():
    base = ag.arange(4.0)
    rows = base.as_strided((2, 2), (0, 1))  # both rows are elements 0 and 1
    with pytest.raises(RuntimeError, match=SHARED_MEMORY):
        rows.add_(1)
    with pytest.raises(RuntimeError, match=SHARED_MEMORY):
        rows.copy_(ag.ones(2, 2))
    np.testing.assert_array_equal(base.numpy(), [0, 1, 2, 3])
    rows.fill_(5)  # a fill writes the same value at each repeat: allowed, as in PyTorch
    rows[0].mul_(2)  # a row repeats no element
    np.testing.assert_array_equal(base.numpy(), [10, 10, 2, 3])
    windows = base.as_strided((2, 2), (1, 1))  # overlapping windows, no stride 0: written as PyTorch writes them
    windows.zero_()
    np.testing.assert_array_equal(base.numpy(), [0, 0, 0, 3])


def test_ravel_copies_a_non_contiguous_input_and_views_a_contiguous_one():
    x = ag.tensor(_values((3, 4)))
    flat = x.ravel()
    assert flat._base is x and np.shares_memory(flat.numpy(), x.numpy())
    for strided in (x.t(), x[:, 1:], x[::2].reshape(-1)[::2]):
        flat = strided.ravel()
        assert not np.shares_memory(flat.numpy(), x.numpy())
        np.testing.assert_array_equal(flat.numpy(), strided.numpy().reshape(-1))
        flat[0] = -1.0
        assert (x.numpy() != -1.0).all()
    leaf = _leaf((3, 4))
    assert leaf.t().ravel().grad_fn.next_functions[0][0].name() == "CloneBackward0"
    assert gradcheck(lambda t: t.t().ravel(), (leaf,))


def test_flip_keeps_the_input_layout_and_roll_repeat_tile_are_row_major():
    x = ag.tensor(_values((3, 4)))
    t = x.t()  # strides (1, 4)
    flipped = t.flip(0)
    assert flipped.stride() == (1, 4)
    np.testing.assert_array_equal(flipped.numpy(), t.numpy()[::-1])
    assert not np.shares_memory(flipped.numpy(), x.numpy())
    assert x.flip(1).stride() == (4, 1)
    for out, expected in ((t.roll(1, 0), np.roll(t.numpy(), 1, 0)), (t.repeat(1, 1), t.numpy()),
                          (ag.tile(t, (1, 1)), t.numpy()), (t.roll(2), np.roll(t.numpy(), 2))):
        assert out.stride() == (3, 1)
        np.testing.assert_array_equal(out.numpy(), expected)
    assert out.view(-1).shape == (12,)  # a row-major result takes a view, as PyTorch's
    scalar = ag.tensor(2.0)
    assert ag.tile(scalar, ()).shape == () and scalar.repeat(()).shape == () and ag.tile(scalar, (2,)).shape == (2,)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_repeat_interleave_of_a_non_contiguous_input(dim):
    leaf = _leaf((4, 2, 3))
    x = leaf.transpose(0, 1)  # (2, 4, 3)
    out = x.repeat_interleave(2, dim=dim)
    np.testing.assert_array_equal(out.detach().numpy(), np.repeat(x.detach().numpy(), 2, axis=dim))
    assert out.is_contiguous()
    assert gradcheck(lambda t: t.transpose(0, 1).repeat_interleave(2, dim=dim), (leaf,))


# -- views taken in no_grad mode --------------------------------------------------------------------------------------
@pytest.mark.parametrize("change", [
    lambda b, v: b.mul_(2),  # recorded
    lambda b, v: b.detach().mul_(2),  # through a detach
    lambda b, v: b[1].mul_(2),  # another view
    lambda b, v: b.t_(),  # an in-place view op
])
def test_a_no_grad_view_after_its_storage_changed_raises_at_backward(change):
    leaf = _leaf((3, 2))
    base = leaf * 1
    with ag.no_grad():
        view = base[0]
    change(base, view)
    loss = (view * 2).sum()  # PyTorch raises here already; actorgrad when the backward reaches the view
    with pytest.raises(RuntimeError, match="^" + NO_GRAD_VIEW_CHANGED):
        loss.backward()
    with pytest.raises(RuntimeError, match="^" + NO_GRAD_VIEW):
        view.mul_(2)


def test_no_grad_views_stay_usable_while_their_storage_is_unchanged_or_needs_no_grad():
    leaf = _leaf((3,))
    with ag.no_grad():
        view = leaf[:2]
    (view * 3).sum().backward()  # no error; the view has no history to the leaf, as in PyTorch
    assert leaf.grad is None
    plain = ag.tensor(_values((3,)))
    with ag.no_grad():
        part = plain[:2]
    plain.mul_(2)
    np.testing.assert_array_equal((part * 1).numpy(), 2 * _values((3,))[:2])


def test_a_view_made_through_several_views_of_a_no_grad_view_is_refused():
    leaf = _leaf((2, 3))
    with ag.no_grad():
        alias = leaf[...]
    view = alias.unsqueeze(1).flatten()[1:]
    with pytest.raises(RuntimeError, match=r"^Output 0 of Slice is a view of a view which was created in no_grad"):
        view.sin_()
    np.testing.assert_array_equal(leaf.detach().numpy(), _values((2, 3)))
    base = leaf * 1
    with ag.no_grad():
        alias = base[...]
    chained = alias.unsqueeze(1).flatten()
    base.mul_(3)
    with pytest.raises(RuntimeError, match=r"^Output 0 of View is a view of a view which was created in no_grad "
                                           r"mode and its base or another view of its base has been modified"):
        chained.sum().backward()


def test_in_place_view_ops_refuse_a_no_grad_view():
    base = _leaf((2, 3)) * 1
    with ag.no_grad():
        view = base[0:2]
    for op in (lambda v: v.t_(), lambda v: v.squeeze_(), lambda v: v.unsqueeze_(0)):
        with pytest.raises(RuntimeError, match="^" + NO_GRAD_VIEW):
            op(view)
    assert view.shape == (2, 3)


def test_a_view_in_grad_mode_still_takes_its_base_history_after_a_change():
    leaf = _leaf((3, 2))
    base = leaf * 1
    view = base[0]
    base.mul_(2)
    (view * 1).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [[2, 2], [0, 0], [0, 0]])


# -- masked_fill_ into an expanded tensor -----------------------------------------------------------------------------
def test_masked_fill_into_an_expanded_tensor_writes_each_place_masked_at_any_repeat():
    base = ag.tensor([0.5, 0.75, 1.25])
    x = base.expand(2, 3)
    mask = ag.tensor([[True, False, False], [False, False, True]])
    with pytest.warns(UserWarning, match=r"^Use of masked_fill_ on expanded tensors is deprecated"):
        x.masked_fill_(mask, 3.0)
    np.testing.assert_array_equal(base.numpy(), [3.0, 0.75, 3.0])
    np.testing.assert_array_equal(x.numpy(), [[3.0, 0.75, 3.0]] * 2)
    with pytest.warns(UserWarning):
        x.masked_fill_(ag.tensor(True), ag.tensor(-1.0))
    np.testing.assert_array_equal(base.numpy(), [-1.0, -1.0, -1.0])
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        x.masked_fill_(ag.tensor([1, 0, 0]), 3.0)
    with pytest.raises(RuntimeError, match="The size of tensor a \\(3\\) must match the size of tensor b \\(2\\)"):
        x.masked_fill_(ag.tensor([True, False]), 3.0)


def test_an_empty_write_into_an_expanded_tensor_is_no_overlap():
    base = ag.tensor([1.0, 2.0])
    empty = base.expand(3, 2)[:, :0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        empty.add_(1)
    np.testing.assert_array_equal(base.numpy(), [1.0, 2.0])


# -- masked_scatter, scatter_reduce ----------------------------------------------------------------------------------
@pytest.mark.parametrize("masked", [True, False])
def test_masked_scatter_of_0d_tensors(masked):
    x = ag.tensor(1.5, dtype=ag.float64, requires_grad=True)
    source = _leaf((2,))
    out = x.masked_scatter(ag.tensor(masked), source)
    assert out.shape == ()
    assert out.item() == (source[0].item() if masked else 1.5)
    assert gradcheck(lambda a, s: a.masked_scatter(ag.tensor(masked), s), (x, source))
    assert gradgradcheck(lambda a, s: a.masked_scatter(ag.tensor(masked), s), (x, source))
    y = ag.tensor(1.5)
    y.masked_scatter_(ag.tensor(masked), ag.tensor([4.0]))
    assert y.item() == (4.0 if masked else 1.5)


@pytest.mark.parametrize("index_shape, src_shape", [((0,), (2,)), ((0, 0), (1, 2))])
def test_scatter_with_an_empty_index_gives_src_a_zero_gradient(index_shape, src_shape):
    x = _leaf((2, 3) if len(index_shape) == 2 else (4,))
    src = _leaf(src_shape, seed=1)
    out = ag.scatter(x, 0, ag.zeros(index_shape, dtype=ag.int64), src)
    np.testing.assert_array_equal(out.detach().numpy(), x.detach().numpy())
    (out * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(x.shape, 2.0))
    np.testing.assert_array_equal(src.grad.numpy(), np.zeros(src_shape))


def test_scatter_reduce_of_complex_tensors():
    x = ag.tensor([1 + 1j, 2 - 1j, 0.5j], dtype=ag.complex128)
    src = ag.tensor([2 + 1j, -1 + 3j, 1 - 1j], dtype=ag.complex128)
    index = ag.tensor([0, 0, 2])
    expected = {"sum": [1 + 1j + 2 + 1j - 1 + 3j, 2 - 1j, 0.5j + 1 - 1j],
                "prod": [(1 + 1j) * (2 + 1j) * (-1 + 3j), 2 - 1j, 0.5j * (1 - 1j)],
                "mean": [(1 + 1j + 2 + 1j - 1 + 3j) / 3, 2 - 1j, (0.5j + 1 - 1j) / 2]}
    for reduce, values in expected.items():
        np.testing.assert_allclose(ag.scatter_reduce(x, 0, index, src, reduce).numpy(), values, rtol=1e-15)
    for reduce in ("amax", "amin"):
        with pytest.raises(NotImplementedError, match=f"reduce_{reduce}\" not implemented for 'ComplexDouble'"):
            ag.scatter_reduce(x, 0, index, src, reduce)
        ag.scatter_reduce(x, 0, ag.tensor([], dtype=ag.int64), src[:0], reduce)  # nothing to order: no error
    with pytest.raises(RuntimeError, match="^scatter_reduce does not support automatic differentiation for outputs "
                                           "with complex dtype.$"):
        ag.scatter_reduce(x.requires_grad_(), 0, index, src, "sum")


def test_scatter_reduce_in_place_on_complex_tensors_is_differentiable():
    x = ag.tensor([1 + 1j, 2 - 1j, 0.5j], dtype=ag.complex128, requires_grad=True)
    src = ag.tensor([2 + 1j, -1 + 3j], dtype=ag.complex128, requires_grad=True)

    def summed(a, s):
        return (a * 1).scatter_reduce_(0, ag.tensor([0, 0]), s, "sum")

    np.testing.assert_allclose(summed(x, src).detach().numpy(), [2 + 5j, 2 - 1j, 0.5j])
    assert gradcheck(summed, (x, src))


# -- on CUDA --------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_the_fixes_on_cuda_give_the_cpu_results(recwarn, cupy):
    results = []
    for device in ("cpu", "cuda"):
        leaf = ag.tensor(_values((4, 2, 3)), device=device, requires_grad=True)
        x = leaf.transpose(0, 1)
        outs = [x.repeat_interleave(2, dim=1), x.flip(0), x.roll(1, 2), x.repeat(1, 1, 1), x.ravel(),
                x.unflatten(1, (-1, 4)), x.masked_scatter(ag.tensor(True, device=device), leaf.reshape(-1))[0]]
        sum((o * o).sum() for o in outs).backward()
        complex_x = ag.tensor([1 + 1j, 2 - 1j], dtype=ag.complex128, device=device)
        mean = ag.scatter_reduce(complex_x, 0, ag.tensor([0, 0], device=device), complex_x, "mean")
        results.append([o.detach().cpu().numpy() for o in outs] + [leaf.grad.cpu().numpy(), mean.cpu().numpy()])
    for cpu, cuda in zip(*results):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-12)
