"""Differences from PyTorch found by running sorting, searching, order-statistics and histogram scenarios side by
side, each fixed: searchsorted's checks of `sorter` and of 0-d boundaries, complex input refused by the ops that
order values, argmax/argmin refusing bool input, bincount's float16 weights counted in float64, histogram's dtype
checks of bins and weights, unique_consecutive's backward error type, and quantile's gradient in a q tensor."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(11)


# -- searchsorted ------------------------------------------------------------------------------------------------
def test_searchsorted_with_a_sorter_finds_the_places_in_the_sorted_order():
    boundaries = np.array([5.0, 1, 3, 2, 2])
    values = np.array([[0.0, 2, 2.5], [5, 6, 1]])
    sorter = ag.tensor(np.argsort(boundaries, kind="stable"))
    for right in (False, True):
        got = ag.searchsorted(ag.tensor(boundaries), ag.tensor(values), sorter=sorter, right=right)
        # left: how many boundaries are below the value; right: how many are at most the value
        expected = [[int(((boundaries <= v) if right else (boundaries < v)).sum()) for v in row] for row in values]
        assert got.tolist() == expected


@pytest.mark.parametrize("sorter, message", [
    ([0, 1], r"boundary and sorter must have the same size, but got boundary tensor \[3\]and got sorter tensor \[2\]"),
    ([[0, 1, 2]], r"boundary and sorter must have the same size, but got boundary tensor \[3\]and got sorter tensor "
                  r"\[1, 3\]"),
    ([0, 1, -1], "sorter index out of range"),  # would otherwise count from the end
    ([0, 1, 3], "sorter index out of range"),
])
def test_searchsorted_refuses_a_sorter_that_does_not_index_the_boundaries(sorter, message):
    with pytest.raises(RuntimeError, match=r"torch\.searchsorted\(\): " + message):
        ag.searchsorted(ag.tensor([1.0, 2, 3]), ag.tensor([2.0]), sorter=ag.tensor(sorter))


def test_searchsorted_wants_an_int64_sorter():
    with pytest.raises(RuntimeError, match="sorter must be a tensor of long dtype but got dtype Int"):
        ag.searchsorted(ag.tensor([1.0, 2, 3]), ag.tensor([2.0]), sorter=ag.tensor([0, 1, 2], dtype=ag.int32))


def test_searchsorted_refuses_0d_boundaries():
    with pytest.raises(RuntimeError, match="boundaries tensor should have positive dimension, but got 0 dimension"):
        ag.searchsorted(ag.tensor(1.0), ag.tensor([2.0]))
    with pytest.raises(RuntimeError, match=r"input value can be a scalar only when boundaries tensor dimension is 1, "
                                           r"but we got boundaries tensor dim\(0\)"):
        ag.searchsorted(ag.tensor(1.0), 2.0)


@pytest.mark.parametrize("call, kernel", [
    (lambda c, r: ag.unique(c), "unique"),
    (lambda c, r: c.unique(dim=0, return_counts=True), "unique_dim"),
    (lambda c, r: ag.unique_consecutive(c), "unique"),
    (lambda c, r: ag.unique_consecutive(c, dim=0), "unique"),
    (lambda c, r: ag.searchsorted(r, c), "searchsorted_out_cpu"),
    (lambda c, r: ag.searchsorted(c, r), "searchsorted_out_cpu"),
    (lambda c, r: ag.bucketize(c, r), "searchsorted_out_cpu"),
    (lambda c, r: ag.mode(c), "mode_cpu"),
])
def test_ops_that_order_values_refuse_complex_input(call, kernel):
    """Complex numbers have no order; numpy's lexicographic one would give answers PyTorch never does."""
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'ComplexFloat\''):
        call(ag.tensor([1 + 1j, 2]), ag.tensor([1.0, 2]))


# -- argmax / argmin ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_and_argmin_refuse_bool_input(op):
    mask = ag.tensor([[True, False], [True, True]])
    for call in (lambda: getattr(ag, op)(mask), lambda: getattr(mask, op)(dim=0, keepdim=True)):
        with pytest.raises(RuntimeError, match=f"{op}\\(\\): does not support bool input"):
            call()
    assert getattr(ag, op)(mask.to(ag.uint8), 1).tolist() == ([0, 0] if op == "argmax" else [1, 0])


# -- bincount ----------------------------------------------------------------------------------------------------
def test_bincount_sums_float16_weights_in_float64_and_float32_weights_in_float32():
    bins = np.array([1, 3, 3, 0, 5])
    weights = np.array([0.5, 1.25, 2, 3, 4])
    expected = [sum(w for b, w in zip(bins, weights) if b == k) for k in range(6)]
    for dtype, result in ((ag.float16, ag.float64), (ag.float32, ag.float32), (ag.float64, ag.float64)):
        out = ag.bincount(ag.tensor(bins), ag.tensor(weights, dtype=dtype))
        assert out.dtype == result and out.tolist() == expected


# -- histogram / histogramdd -------------------------------------------------------------------------------------
def test_histogram_refuses_bins_or_weights_of_another_dtype_than_the_input():
    x = ag.tensor([0.2, 1.5, 0.7], dtype=ag.float64)
    with pytest.raises(RuntimeError, match="input tensor and bins tensors should have the same dtype, but got input "
                                           "with dtype double and bins for dimension 0 with dtype float"):
        ag.histogram(x, ag.tensor([0.0, 1, 2], dtype=ag.float32))
    with pytest.raises(RuntimeError, match=r"input tensor and weight tensor should have the same dtype, but got "
                                           r"input\(double\), and weight\(float\)"):
        ag.histogram(x, 2, weight=ag.ones(3, dtype=ag.float32))
    with pytest.raises(RuntimeError, match="bins for dimension 1 with dtype long int"):
        ag.histogramdd(x.reshape(1, 3), bins=[ag.tensor([0.0, 1]).double(), ag.tensor([0, 2]), 2])
    out = ag.histogram(x, ag.tensor([0.0, 1, 2], dtype=ag.float64), weight=ag.tensor([1.0, 2, 4], dtype=ag.float64))
    assert out.hist.tolist() == [5.0, 2.0]  # 0.2 and 0.7 in [0, 1), 1.5 in [1, 2]


# -- unique_consecutive ------------------------------------------------------------------------------------------
def test_unique_consecutive_backward_raises_not_implemented():
    out = ag.unique_consecutive(ag.tensor([1.0, 1, 2], requires_grad=True))
    with pytest.raises(NotImplementedError, match="the derivative for 'unique_consecutive' is not implemented."):
        out.sum().backward()


# -- quantile's gradient in q ------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["quantile", "nanquantile"])
@pytest.mark.parametrize("dim", [None, 1])
def test_linear_quantile_is_differentiable_in_a_q_tensor(op, dim):
    x = ag.tensor(RNG.standard_normal((3, 5)), requires_grad=True)
    q = ag.tensor([0.13, 0.41, 0.77], dtype=ag.float64, requires_grad=True)  # ranks away from whole numbers
    f = lambda x, q: getattr(ag, op)(x, q, dim=dim, keepdim=True)  # noqa: E731
    assert gradcheck(f, (x, q))
    assert gradgradcheck(f, (x, q))


def test_quantile_gradient_in_q_is_the_gap_between_neighbours_times_the_last_rank():
    rows = RNG.standard_normal((2, 6))
    q = ag.tensor(0.3, dtype=ag.float64, requires_grad=True)  # rank 1.5 of 0..5
    ag.quantile(ag.tensor(rows), q, dim=1).sum().backward()
    ordered = np.sort(rows, axis=1)
    assert q.grad.item() == pytest.approx(((ordered[:, 2] - ordered[:, 1]) * 5).sum(), rel=1e-12)


def test_quantile_q_gradient_is_zero_from_rows_whose_rank_pytorch_fills_in():
    nan = float("nan")
    rows = np.array([[1.0, nan, 4, 2], [nan, nan, nan, nan], [3.0, 1, 0, 7]])
    ordered = np.sort(rows[2])
    for op, from_clean_row in (("quantile", (ordered[2] - ordered[1]) * 3), ("nanquantile", None)):
        q = ag.tensor([0.4], dtype=ag.float64, requires_grad=True)
        getattr(ag, op)(ag.tensor(rows), q, dim=1).nansum().backward()
        if op == "quantile":  # rows with a NaN take the last rank: no gradient from them, not a NaN one
            assert q.grad.tolist() == pytest.approx([from_clean_row], rel=1e-12)
        else:  # the all-NaN row is pinned to rank 0; the others rank among their non-NaN values
            clean = np.sort(rows[0][~np.isnan(rows[0])])
            expected = (clean[1] - clean[0]) * 2 + (ordered[2] - ordered[1]) * 3
            assert q.grad.tolist() == pytest.approx([expected], rel=1e-12)


def test_quantile_other_interpolations_and_float_q_give_q_no_gradient():
    x = ag.tensor(RNG.standard_normal(7), requires_grad=True)
    for interpolation in ("lower", "higher", "nearest", "midpoint"):
        q = ag.tensor([0.3, 0.6], dtype=ag.float64, requires_grad=True)
        ag.quantile(x, q, interpolation=interpolation).sum().backward()
        assert q.grad is None or not q.grad.any().item()
    assert ag.quantile(x, 0.3).requires_grad


@pytest.mark.gpu
def test_the_fixes_on_cuda_give_the_cpu_results(cupy):
    rows = RNG.standard_normal((3, 5))
    rows[0, 2] = np.nan
    results = []
    for device in ("cpu", "cuda"):
        q = ag.tensor([0.2, 0.65], dtype=ag.float64, device=device, requires_grad=True)
        x = ag.tensor(rows, device=device, requires_grad=True)
        out = ag.nanquantile(x, q, dim=1)
        (out * ag.tensor([[1.0, -2, 0.5]] * 2, device=device)).sum().backward()
        places = ag.searchsorted(ag.tensor([5.0, 1, 3], device=device), ag.tensor([2.0, 4], device=device),
                                 sorter=ag.tensor([1, 2, 0], device=device))
        weighted = ag.bincount(ag.tensor([0, 2, 2], device=device),
                               ag.tensor([1.0, 2, 3], dtype=ag.float16, device=device))
        results.append([t.detach().cpu().numpy() for t in (out, x.grad, q.grad, places, weighted)])
        with pytest.raises(RuntimeError, match="sorter index out of range"):
            ag.searchsorted(ag.tensor([5.0, 1, 3], device=device), ag.tensor([2.0], device=device),
                            sorter=ag.tensor([1, 2, -1], device=device))
        with pytest.raises(RuntimeError, match="does not support bool input"):
            ag.argmax(ag.tensor([True, False], device=device))
    for cpu, cuda in zip(*results):
        assert cpu.dtype == cuda.dtype
        np.testing.assert_allclose(cuda, cpu, rtol=1e-12)
