"""Tensor reprs read as torch 2.13's, with actorgrad naming its dtypes: one format and width for all elements,
summaries past 1000 elements, and suffixes for what the values don't show. Expected strings were taken from torch."""

from __future__ import annotations

import math

import pytest

import actorgrad as ag

nan, inf = math.nan, math.inf


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([-1.5, 2.5], "tensor([-1.5000,  2.5000])"),
        ([1.5, 100.25], "tensor([  1.5000, 100.2500])"),
        ([0.1, 0.2], "tensor([0.1000, 0.2000])"),
        ([1.0, 1000.0], "tensor([   1., 1000.])"),
        ([-0.0, 1.0], "tensor([-0., 1.])"),
        ([0.0, 0.0], "tensor([0., 0.])"),
        ([[1.5, -2.0], [3.0, 4.0]], "tensor([[ 1.5000, -2.0000],\n        [ 3.0000,  4.0000]])"),
    ],
)
def test_floats_share_one_fixed_or_whole_format_and_width(values, expected):
    assert repr(ag.tensor(values)) == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1e-5, 1.0], "tensor([1.0000e-05, 1.0000e+00])"),
        ([1e-4, 1.0], "tensor([1.0000e-04, 1.0000e+00])"),
        ([1.0, 1e5], "tensor([1.0000e+00, 1.0000e+05])"),
        ([1e8, 1.0], "tensor([1.0000e+08, 1.0000e+00])"),
        ([123456.7, 1.0], "tensor([1.2346e+05, 1.0000e+00])"),
        ([0.0, 1e-5], "tensor([0.0000e+00, 1.0000e-05])"),
        (1e12, "tensor(1.0000e+12)"),
        (1e-5, "tensor(1.0000e-05)"),
    ],
)
def test_wide_ranges_and_extreme_magnitudes_use_scientific_format(values, expected):
    assert repr(ag.tensor(values)) == expected


def test_a_whole_value_up_to_1e8_stays_whole():
    assert repr(ag.tensor(1e8)) == "tensor(100000000.)"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([nan, 1.5], "tensor([   nan, 1.5000])"),
        ([nan, inf, -inf], "tensor([nan, inf, -inf])"),
        ([1.0, inf], "tensor([1., inf])"),
        ([0.0, nan], "tensor([0., nan])"),
        ([1e-5, nan, inf], "tensor([1.0000e-05,        nan,        inf])"),
        (nan, "tensor(nan)"),
        (-inf, "tensor(-inf)"),
    ],
)
def test_nan_and_inf_are_padded_but_do_not_set_the_width(values, expected):
    assert repr(ag.tensor(values)) == expected


def test_scalars_print_bare():
    assert (repr(ag.tensor(2.5)), repr(ag.tensor(3.0)), repr(ag.tensor(-0.0))) == (
        "tensor(2.5000)",
        "tensor(3.)",
        "tensor(-0.)",
    )


def test_nested_dims_separate_blocks_with_blank_lines():
    assert repr(ag.arange(24.0).reshape(2, 3, 4)) == (
        "tensor([[[ 0.,  1.,  2.,  3.],\n"
        "         [ 4.,  5.,  6.,  7.],\n"
        "         [ 8.,  9., 10., 11.]],\n"
        "\n"
        "        [[12., 13., 14., 15.],\n"
        "         [16., 17., 18., 19.],\n"
        "         [20., 21., 22., 23.]]])"
    )


def test_long_rows_wrap_at_80_columns():
    assert repr(ag.arange(30.0).div(7)) == (
        "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n"
        "        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n"
        "        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n"
        "        3.8571, 4.0000, 4.1429])"
    )


def test_over_1000_elements_show_three_at_each_end_and_measure_only_those():
    assert repr(ag.arange(2000.0)) == (
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])"
    )
    assert repr(ag.arange(3000)) == "tensor([   0,    1,    2,  ..., 2997, 2998, 2999])"
    assert repr(ag.arange(1000)).count("...") == 0


def test_summarized_rows_are_cut_with_an_ellipsis_line():
    assert repr(ag.arange(2000).reshape(40, 50)) == (
        "tensor([[   0,    1,    2,  ...,   47,   48,   49],\n"
        "        [  50,   51,   52,  ...,   97,   98,   99],\n"
        "        [ 100,  101,  102,  ...,  147,  148,  149],\n"
        "        ...,\n"
        "        [1850, 1851, 1852,  ..., 1897, 1898, 1899],\n"
        "        [1900, 1901, 1902,  ..., 1947, 1948, 1949],\n"
        "        [1950, 1951, 1952,  ..., 1997, 1998, 1999]])"
    )
    assert repr(ag.arange(2000.0).reshape(2, 1000)) == (
        "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.9700e+02, 9.9800e+02,\n"
        "         9.9900e+02],\n"
        "        [1.0000e+03, 1.0010e+03, 1.0020e+03,  ..., 1.9970e+03, 1.9980e+03,\n"
        "         1.9990e+03]])"
    )


def test_empty_tensors_name_a_shape_other_than_0_and_any_non_float32_dtype():
    assert repr(ag.zeros(0)) == "tensor([])"
    assert repr(ag.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(ag.zeros(2, 0)) == "tensor([], size=(2, 0))"
    assert repr(ag.zeros(0, dtype=ag.int64)) == "tensor([], dtype=actorgrad.int64)"
    assert repr(ag.zeros(0, dtype=ag.float64)) == "tensor([], dtype=actorgrad.float64)"
    assert repr(ag.tensor([], dtype=ag.bool_)) == "tensor([], dtype=actorgrad.bool)"


def test_dtype_and_autograd_suffixes():
    assert repr(ag.tensor([1.0, 2.0], dtype=ag.float64)) == "tensor([1., 2.], dtype=actorgrad.float64)"
    assert repr(ag.tensor([1.5, 2.0], dtype=ag.float16)) == "tensor([1.5000, 2.0000], dtype=actorgrad.float16)"
    assert repr(ag.tensor([1, 2], dtype=ag.int32)) == "tensor([1, 2], dtype=actorgrad.int32)"
    assert repr(ag.tensor([1.0, 2.0], requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"
    assert repr(ag.tensor([1.0, 2.0], requires_grad=True) * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert (
        repr(ag.tensor([1.5], dtype=ag.float64, requires_grad=True))
        == "tensor([1.5000], dtype=actorgrad.float64, requires_grad=True)"
    )


def test_a_suffix_past_80_columns_starts_a_new_line():
    x = ag.arange(6.0, dtype=ag.float64).div(3).requires_grad_()
    assert repr(x * 2) == (
        "tensor([0.0000, 0.6667, 1.3333, 2.0000, 2.6667, 3.3333],\n"
        "       dtype=actorgrad.float64, grad_fn=<MulBackward0>)"
    )


def test_int_and_bool_tensors_right_align_their_text():
    assert repr(ag.tensor([1, -20, 300])) == "tensor([  1, -20, 300])"
    assert repr(ag.tensor([True, False])) == "tensor([ True, False])"
    assert repr(ag.tensor([[True], [False]])) == "tensor([[ True],\n        [False]])"
    assert (repr(ag.tensor(7)), repr(ag.tensor(True))) == ("tensor(7)", "tensor(True)")


def test_str_matches_repr():
    t = ag.tensor([1e-5, 1.0])
    assert str(t) == repr(t)


def test_a_tensor_written_through_a_view_shows_its_node_without_the_namespace():
    y = ag.ones(3, requires_grad=True) * 1
    y[0] = 5.0
    assert repr(y) == "tensor([5., 1., 1.], grad_fn=<CopySlices>)"  # torch 2.13
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
