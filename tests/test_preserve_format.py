"""preserve_format copies (clone, the *_like functions, dtype casts) are laid out as PyTorch lays them out: with
the input's strides when those are dense and do not overlap, else densely in the order of the input's strides.
Expected strides are worked out here from that rule (and cross-checked against numpy's order='K', which follows
the same order for distinct non-zero strides), never copied from torch."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

BASE = np.arange(2.0 * 3 * 4 * 6).reshape(2, 3, 4, 6) / 7


def dense_in_order(shape, inner_first):
    """Dense strides with dims laid out from `inner_first[0]` (stride 1) outwards."""
    strides, step = [0] * len(shape), 1
    for d in inner_first:
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def rule(t):
    """The strides of a preserve_format copy of `t` (no broadcast dims): its own when dense and non-overlapping,
    else dense strides ordered by its strides (a tie: the smaller dim inside)."""
    shape, strides = t.shape, t.stride()
    inner_first = sorted(range(t.ndim), key=lambda d: (strides[d], shape[d], -d))
    sized = [d for d in inner_first if shape[d] != 1]
    if all(strides[d] == int(np.prod([shape[e] for e in sized[:i]])) for i, d in enumerate(sized)):
        return strides
    return dense_in_order(shape, inner_first)


def row_major(shape):
    return dense_in_order(shape, range(len(shape))[::-1])


def views():
    """(name, view) pairs of one float64 tensor: each layout preserve_format treats differently."""
    x = ag.tensor(BASE)
    last = x.contiguous(memory_format=ag.channels_last)
    return [
        ("contiguous", x),
        ("transposed", x[0, 0].t()),
        ("permuted", x.permute(2, 0, 3, 1)),
        ("sliced", x[:, :, :, ::2]),  # not dense: row-major
        ("sliced_permuted", x[:, ::2].permute(3, 1, 0, 2)),  # not dense: dense in the permuted order
        ("size_one_dims_sliced", x[:1, :, :1].transpose(1, 3)),
        ("size_one_dim_kept", x[:1, 0].permute(2, 0, 1)),  # dense: the size-1 dim keeps its stride (72)
        ("channels_last", last),
        ("channels_last_sliced", last[:, :, :, ::2]),  # not dense: still channels-last
    ]


VIEWS = views()
COPIES = {
    "clone": lambda t: t.clone(),
    "clone_preserve": lambda t: ag.clone(t, memory_format=ag.preserve_format),
    "zeros_like": ag.zeros_like,
    "ones_like": ag.ones_like,
    "full_like": lambda t: ag.full_like(t, 2.5),
    "empty_like": ag.empty_like,
    "rand_like": ag.rand_like,
    "randn_like": ag.randn_like,
    "randint_like": lambda t: ag.randint_like(t, 5),
    "float": lambda t: t.float(),
    "half": lambda t: t.half(),
    "int": lambda t: t.int(),
    "to_dtype": lambda t: t.to(ag.float32),
    "to_copy": lambda t: t.to(ag.float64, copy=True),
    "type": lambda t: t.type(ag.float32),
    "type_name": lambda t: t.type("actorgrad.IntTensor"),
}


@pytest.mark.parametrize("name", COPIES)
@pytest.mark.parametrize("view", [v for _, v in VIEWS], ids=[n for n, _ in VIEWS])
def test_a_copy_has_the_layout_the_rule_gives(name, view):
    made = COPIES[name](view)
    assert made.shape == view.shape
    assert made.stride() == rule(view)
    assert made.is_contiguous() == (rule(view) == row_major(view.shape) or view.numel() <= 1)


def test_the_rule_cases_are_the_ones_meant():
    by_name = dict(VIEWS)
    assert not by_name["permuted"].is_contiguous() and rule(by_name["permuted"]) == by_name["permuted"].stride()
    assert rule(by_name["sliced"]) == row_major(by_name["sliced"].shape)
    sliced_permuted = by_name["sliced_permuted"]
    assert rule(sliced_permuted) not in (sliced_permuted.stride(), row_major(sliced_permuted.shape))
    for name in ("channels_last", "channels_last_sliced"):
        assert ag.zeros_like(by_name[name]).is_contiguous(memory_format=ag.channels_last)


@pytest.mark.parametrize("name", ["clone", "float", "half", "int", "type", "to_dtype", "full_like"])
@pytest.mark.parametrize("view", [v for _, v in VIEWS], ids=[n for n, _ in VIEWS])
def test_values_are_kept(name, view):
    made = COPIES[name](view).numpy()
    source = view.numpy()
    expected = np.full(source.shape, 2.5) if name == "full_like" else source.astype(made.dtype)
    np.testing.assert_array_equal(made, expected)


def test_random_permuted_slices_follow_numpys_order_k():
    """Distinct non-zero strides: PyTorch's order is numpy's order='K' (an independent implementation)."""
    rng = np.random.default_rng(0)
    for _ in range(40):
        ndim = int(rng.integers(2, 5))
        shape = tuple(int(n) for n in rng.integers(2, 5, ndim))
        steps = tuple(slice(None, None, int(s)) for s in rng.integers(1, 3, ndim))
        perm = tuple(int(d) for d in rng.permutation(ndim))
        view = ag.tensor(np.zeros(tuple(n * 2 for n in shape)))[steps].permute(*perm)
        expected = np.empty_like(view.numpy(), order="K")
        expected_strides = tuple(s // expected.itemsize for s in expected.strides)
        for copy in (view.clone(), ag.ones_like(view), view.float()):
            assert copy.stride() == expected_strides == rule(view)


def test_broadcast_dims_stay_where_row_major_puts_them():
    row = ag.arange(3.0).expand(4, 3)
    column = ag.arange(3.0).reshape(3, 1).expand(3, 4)
    for view in (row, column):
        for copy in (view.clone(), ag.zeros_like(view), view.double()):
            assert copy.stride() == row_major(view.shape)
            assert copy.is_contiguous()
        np.testing.assert_array_equal(view.clone().numpy(), view.numpy())


def test_zero_and_one_dim_and_empty_tensors():
    scalar, strided = ag.tensor(1.5), ag.arange(6.0)[::2]
    assert scalar.clone().stride() == () and scalar.clone().item() == 1.5
    assert strided.clone().stride() == (1,) and ag.ones_like(strided).stride() == (1,)
    empty = ag.zeros(0, 3).t()
    assert empty.clone().shape == (3, 0) and ag.zeros_like(empty).numel() == 0


def test_a_flipped_input_keeps_its_layout_through_clone():
    flipped = ag.tensor(BASE[0, 0]).t().flip(0)  # flip keeps its input's layout, as PyTorch's: (1, 6)
    assert flipped.stride() == flipped.clone().stride() == (1, 6)
    np.testing.assert_array_equal(flipped.clone().numpy(), BASE[0, 0].T[::-1])


def test_contiguous_format_still_asks_for_row_major():
    view = ag.tensor(BASE).permute(3, 2, 1, 0)
    for make in (ag.clone, ag.zeros_like, ag.empty_like):
        assert make(view, memory_format=ag.contiguous_format).stride() == row_major(view.shape)


@pytest.mark.parametrize("make", [
    lambda a: a.t().clone(),
    lambda a: a.reshape(2, 3, 2).permute(2, 0, 1).clone() * a.reshape(2, 3, 2).permute(2, 0, 1),
    lambda a: a[:, ::2].t().clone(),
])
def test_gradients_of_a_clone_of_any_layout(make):
    a = ag.tensor(np.random.default_rng(1).normal(size=(3, 4)), requires_grad=True)
    assert gradcheck(make, (a,)) and gradgradcheck(make, (a,))


def test_the_gradient_of_a_cast_of_a_transposed_tensor_goes_back_in_place():
    x = ag.tensor(np.arange(6.0).reshape(2, 3), dtype=ag.float32, requires_grad=True)
    weights = np.arange(1.0, 7.0).reshape(3, 2)
    y = x.t().double()
    assert y.stride() == (1, 3)
    (y * ag.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), weights.T)


@pytest.mark.gpu
def test_on_cuda_copies_keep_the_layout_and_values(cupy):
    x = ag.tensor(BASE, device="cuda", requires_grad=True)
    for view in (x.permute(2, 0, 3, 1), x[:, ::2].permute(3, 1, 0, 2), x[:, :, :, ::2]):
        for make in (lambda t: t.clone(), ag.zeros_like, ag.rand_like, lambda t: t.float()):
            made = make(view)
            assert made.device == x.device and isinstance(made._data, cupy.ndarray)
            assert made.stride() == rule(view)
        np.testing.assert_array_equal(view.clone().detach().cpu().numpy(), view.detach().cpu().numpy())
    y = x.permute(2, 0, 3, 1).clone()
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * BASE)
