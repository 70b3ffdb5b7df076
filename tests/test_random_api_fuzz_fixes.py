"""Fixes from a generated differential review of the random API against PyTorch 2.13: `out=` for rand, randn,
randint, randperm, normal, bernoulli and multinomial; multinomial with rows of no categories and its sampling
kernel's errors; randperm's complex refusal; bernoulli's complex and empty inputs; the normal kernel's dtype check
only for a tensor with elements; randint's bounds named and warned as random_'s."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import actorgrad as ag

N = 200_000
SIGMAS = 6  # statistical checks allow 6 standard errors: a correct sampler misses one with probability below 2e-9


# -- out= of the factories --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda out: ag.rand(2, 3, out=out),
    lambda out: ag.randn((2, 3), out=out),
    lambda out: ag.randint(5, (2, 3), out=out),
    lambda out: ag.normal(0.0, 1.0, (2, 3), out=out),
])
@pytest.mark.parametrize("dtype", [ag.float16, ag.float64])
def test_a_factory_draws_into_out_in_its_dtype_and_resizes_it_silently(call, dtype):
    out = ag.empty(5, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = call(out)
    assert result is out
    assert out.dtype == dtype and out.shape == (2, 3) and not out.requires_grad


def test_randperm_draws_a_permutation_into_out():
    out = ag.empty(0, dtype=ag.int16)
    assert ag.randperm(7, out=out) is out
    assert sorted(out.tolist()) == list(range(7))


def test_factory_out_repeats_the_draws_without_out():
    ag.manual_seed(3)
    expected = ag.rand(4, dtype=ag.float64)
    ag.manual_seed(3)
    out = ag.empty(4, dtype=ag.float64)
    ag.rand(4, out=out)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


def test_randint_into_a_float_out_stays_in_range():
    out = ag.empty(1000, dtype=ag.float32)
    ag.randint(-3, 4, (1000,), out=out)
    values = out.numpy()
    assert values.min() >= -3 and values.max() <= 3 and np.array_equal(values, np.round(values))


def test_a_factory_refuses_a_dtype_other_than_outs():
    with pytest.raises(RuntimeError, match=r"^dtype Double does not match dtype of out parameter \(Float\)$"):
        ag.rand(2, dtype=ag.float64, out=ag.empty(2))


def test_a_factory_refuses_an_out_requiring_grad():
    with pytest.raises(RuntimeError, match=r"^aten::randperm\(\): functions with out=\.\.\. arguments don't support"):
        ag.randperm(3, out=ag.empty(3, requires_grad=True))


def test_a_factory_with_requires_grad_leaves_out_requiring_grad():
    out = ag.empty(3)
    ag.randn(3, out=out, requires_grad=True)
    assert out.requires_grad and out.is_leaf
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require"):
        ag.randint(5, (3,), out=ag.empty(3, dtype=ag.int64), requires_grad=True)


def test_a_factory_into_an_integer_out_gets_the_kernels_refusal():
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for 'Long'"):
        ag.rand(2, out=ag.empty(2, dtype=ag.int64))


# -- out= of normal, bernoulli and multinomial -------------------------------------------------------------------------
def test_normal_of_tensors_writes_into_out_warning_of_a_resize():
    out = ag.empty(5, dtype=ag.float64)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        assert ag.normal(ag.zeros(3), ag.ones(2, 1), out=out) is out
    assert out.shape == (2, 3) and out.dtype == ag.float64


def test_normal_with_out_refuses_autograd_and_an_uncastable_out():
    with pytest.raises(RuntimeError, match=r"^normal\(\): functions with out=\.\.\. arguments"):
        ag.normal(ag.zeros(3, requires_grad=True), 1.0, out=ag.empty(3))
    with pytest.raises(RuntimeError, match="^result type ComplexFloat can't be cast to the desired output type Float$"):
        ag.normal(ag.zeros(3, dtype=ag.complex64), 1.0, out=ag.empty(3))


def test_normal_into_out_scales_draws_made_in_outs_dtype_so_an_integer_mean_is_taken():
    ag.manual_seed(2)
    out = ag.empty(N, dtype=ag.float64)
    ag.normal(ag.full((N,), 3, dtype=ag.int64), ag.full((N,), 2.0), out=out)
    values = out.numpy()
    assert abs(values.mean() - 3) < SIGMAS * 2 / math.sqrt(N)
    assert abs(values.var() - 4) < SIGMAS * 4 * math.sqrt(2 / N)


def test_bernoulli_writes_zeros_and_ones_into_outs_dtype():
    out = ag.empty(5, dtype=ag.bool)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ag.bernoulli(ag.full((2, 3), 0.5), out=out) is out
    assert out.dtype == ag.bool and out.shape == (2, 3)
    counts = ag.bernoulli(ag.tensor([0.0, 1.0]), out=ag.empty(0, dtype=ag.int64))
    assert counts.tolist() == [0, 1]


def test_bernoulli_with_out_refuses_p_autograd_and_a_complex_out():
    with pytest.raises(TypeError, match=r"^bernoulli\(\) received an invalid combination of arguments"):
        ag.bernoulli(ag.zeros(3), 0.5, out=ag.empty(3))
    with pytest.raises(RuntimeError, match=r"^bernoulli\(\): functions with out=\.\.\. arguments"):
        ag.bernoulli(ag.zeros(3, requires_grad=True), out=ag.empty(3))
    with pytest.raises(NotImplementedError, match="\"bernoulli_tensor_cpu_self_\" not implemented for 'ComplexFloat'"):
        ag.bernoulli(ag.zeros(3), out=ag.empty(3, dtype=ag.complex64))
    with pytest.raises(NotImplementedError, match="\"bernoulli_tensor_cpu_p_\" not implemented for 'ComplexFloat'"):
        ag.bernoulli(ag.zeros(3, dtype=ag.complex64), out=ag.empty(3))


def test_multinomial_writes_into_an_int64_out_only():
    out = ag.empty(0, dtype=ag.int64)
    assert ag.multinomial(ag.tensor([0.0, 1.0, 0.0]), 4, True, out=out) is out
    assert out.tolist() == [1, 1, 1, 1]
    with pytest.raises(RuntimeError, match="^multinomial expects Long tensor out, got: Int$"):
        ag.multinomial(ag.ones(3), 2, out=ag.empty(2, dtype=ag.int32))


# -- multinomial -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rows", [0, 3])
def test_multinomial_with_replacement_of_rows_without_categories(rows):
    weights = ag.ones(rows, 0)
    if rows:
        with pytest.raises(RuntimeError, match=r"invalid multinomial distribution \(sum of probabilities <= 0\)"):
            ag.multinomial(weights, 5, True)
    else:
        result = ag.multinomial(weights, 5, True)
        assert result.shape == (0, 5) and result.dtype == ag.int64


@pytest.mark.parametrize("weights, entry", [
    ([1.0, math.inf], "= infinity or NaN"), ([-1.0, 1.0], "< 0"), ([math.nan, 1.0], "< 0"),
    ([1.0, -1.0, math.inf], "< 0"),
])
def test_multinomials_sampling_kernel_names_the_first_bad_entry(weights, entry):
    with pytest.raises(RuntimeError, match=rf"^invalid multinomial distribution \(encountering probability entry "
                                           rf"{re.escape(entry)}\)$"):
        ag.multinomial(ag.tensor(weights), 2, True)
    with pytest.raises(RuntimeError, match="^probability tensor contains either `inf`, `nan` or element < 0$"):
        ag.multinomial(ag.tensor(weights), 1, True)  # one sample: the up-front check


# -- randperm, bernoulli, the normal kernel ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, name", [(ag.complex64, "ComplexFloat"), (ag.complex128, "ComplexDouble")])
def test_randperm_refuses_complex_dtypes(dtype, name):
    with pytest.raises(NotImplementedError, match=f"\"randperm\" not implemented for '{name}'"):
        ag.randperm(3, dtype=dtype)


def test_bernoulli_refuses_complex_input_in_the_kernels_words():
    with pytest.raises(NotImplementedError, match="\"bernoulli_tensor_cpu_self_\" not implemented for 'ComplexFloat'"):
        ag.bernoulli(ag.zeros(2, dtype=ag.complex64))
    with pytest.raises(NotImplementedError, match="\"bernoulli_scalar_cpu_\" not implemented for 'ComplexFloat'"):
        ag.bernoulli(ag.zeros(2, dtype=ag.complex64), 0.5)


@pytest.mark.parametrize("dtype", [ag.bool, ag.int64, ag.complex64])
def test_bernoulli_of_an_empty_tensor_checks_no_dtype(dtype):
    result = ag.bernoulli(ag.zeros(0, 3, dtype=dtype))
    assert result.dtype == dtype and result.shape == (0, 3)


def test_bernoulli_in_place_checks_nothing_for_an_empty_tensor():
    empty = ag.zeros(0, dtype=ag.complex64)
    assert empty.bernoulli_(ag.zeros(5, 1, 0, dtype=ag.bool)) is empty


def test_bernoulli_in_place_refuses_a_complex_tensor_before_its_p():
    with pytest.raises(NotImplementedError, match="\"bernoulli_tensor_cpu_self_\" not implemented for 'ComplexFloat'"):
        ag.zeros(2, dtype=ag.complex64).bernoulli_(ag.zeros(2, dtype=ag.int64))
    with pytest.raises(RuntimeError, match=r"^expand\("):  # p is expanded before its dtype is checked
        ag.zeros(1, dtype=ag.int32).bernoulli_(ag.zeros(5, 1, dtype=ag.bool))


@pytest.mark.parametrize("call", [
    lambda: ag.randn(0, 2, dtype=ag.int64),
    lambda: ag.randn_like(ag.zeros(0, dtype=ag.uint8)),
    lambda: ag.normal(0.0, 1.0, (0,), dtype=ag.int16),
    lambda: ag.normal(ag.zeros(0, dtype=ag.int64), 1.0),
])
def test_the_normal_kernel_checks_the_dtype_only_for_elements(call):
    result = call()
    assert result.numel() == 0 and result.dtype.kind in "biu"
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Long'"):
        ag.randn(1, dtype=ag.int64)


def test_normal_checks_std_before_the_dtype():
    with pytest.raises(RuntimeError, match=r"^normal expects std >= 0\.0, but found std -1$"):
        ag.normal(ag.zeros(2, dtype=ag.int64), -1.0)


# -- random_ and uniform_ of complex tensors --------------------------------------------------------------------------
@pytest.mark.parametrize("size", [0, 3])
@pytest.mark.parametrize("call, error, text", [
    (lambda x: x.random_(-3), RuntimeError, "random_ expects 'from' to be less than 'to', but got from=0 >= to=-3"),
    (lambda x: x.random_(5, 2), RuntimeError, "random_ expects 'from' to be less than 'to', but got from=5 >= to=2"),
    (lambda x: x.random_(2, None), RuntimeError,
     "random_from_to_impl handles only integral, floating-point and boolean types"),
    (lambda x: x.random_(2, 5), RuntimeError, "check_random_bounds handles only integral, floating-point and boolean"),
])
def test_random_of_a_complex_tensor_checks_the_range_first(size, call, error, text):
    with pytest.raises(error, match=f"^{re.escape(text)}"):
        call(ag.zeros(size, dtype=ag.complex64))


def test_random_of_the_full_64_bit_range_refuses_a_complex_tensor_in_its_kernels_name():
    with pytest.raises(NotImplementedError, match="\"random_full_64_bits_range_kernel_cpu\" not implemented for"):
        ag.zeros(3, dtype=ag.complex64).random_(-(2**63), None)


@pytest.mark.parametrize("low, high", [(3, 2), (0, 1e39)])
def test_uniform_of_an_empty_complex_tensor_checks_no_bounds(low, high):
    empty = ag.zeros(0, dtype=ag.complex64)
    assert empty.uniform_(low, high) is empty
    with pytest.raises(RuntimeError):  # a real one (or one with elements) still checks them
        ag.zeros(0).uniform_(low, high)


def test_random_from_beyond_a_float_dtypes_range_is_named_before_its_exact_integers():
    with pytest.raises(RuntimeError, match="^from is out of bounds for c10::Half$"):
        ag.zeros(2, dtype=ag.float16).random_(70_000, None)
    with pytest.raises(RuntimeError, match=r"^random_ expects 'from' casted to dtype to be less than or equal to"):
        ag.zeros(2, dtype=ag.float16).random_(3000, None)


# -- randint's bounds --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, name", [
    (ag.int16, "short int"), (ag.int8, "signed char"), (ag.uint8, "unsigned char"),
])
def test_randint_names_the_dtype_as_random_(dtype, name):
    with pytest.raises(RuntimeError, match=f"^to - 1 is out of bounds for {name}$"):
        ag.randint(70_000, (2,), dtype=dtype)


def test_randint_warns_of_float_bounds_beyond_its_exact_integers():
    with pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^11\), 2\^11\]"):
        values = ag.randint(0, 3000, (100,), dtype=ag.float16)
    assert values.dtype == ag.float16 and 0 <= values.numpy().min() and values.numpy().max() < 3000


def test_randint_bool_draws_both_values_with_equal_chance():
    ag.manual_seed(5)
    ones = ag.randint(0, 2, (N,), dtype=ag.bool).numpy().mean()
    assert abs(ones - 0.5) < SIGMAS * math.sqrt(0.25 / N)


# -- cuda --------------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_on_cuda_out_gets_the_draws_on_its_device(cupy):
    results = []
    for device in ("cpu", "cuda:0"):
        ag.manual_seed(17)
        out = ag.empty(4, device=device)
        ag.randn(2, 3, out=out)
        counts = ag.empty(0, dtype=ag.int64, device=device)
        ag.multinomial(ag.ones(4, device=device), 3, out=counts)
        assert out.device == counts.device == ag.device(device)
        results.append((out.cpu().numpy(), counts.cpu().numpy()))
    for cpu_values, cuda_values in zip(*results):
        np.testing.assert_array_equal(cuda_values, cpu_values)
