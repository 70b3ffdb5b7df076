"""Edge cases that behave as PyTorch's: cat with legacy (0,) tensors, norms without an identity over empty
tensors, var/std with no degrees of freedom left, Python ints out of a narrow integer dtype's range, and arange's
bounds, lengths and dtypes.

Expected values are closed forms that follow by hand (the comments say how); the conventions (infs, NaNs, signs of
zero, wrapping) were read off torch 2.13 (torch is not a test dependency).
"""

import math
import re
import warnings

import numpy as np
import pytest

import actorgrad as ag


def _leaf(values, dtype=ag.float64) -> ag.Tensor:
    return ag.tensor(values, dtype=dtype, requires_grad=True)


def _bits(t: ag.Tensor) -> list:
    """Values with the sign of each zero and nan kept apart (as their repr), for exact comparisons."""
    return [repr(v) for v in np.ravel(t.detach().numpy()).tolist()]


# -- cat with a legacy 1-d empty tensor ----------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3), (2, 0), (0, 0), (0, 3), (2, 3, 4)])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_skips_a_legacy_empty_tensor_and_gives_it_an_empty_gradient(shape, dim):
    empty, x = _leaf(np.zeros(0)), _leaf(np.arange(math.prod(shape), dtype=np.float64).reshape(shape))
    out = ag.cat([empty, x, empty], dim)
    assert out.shape == shape
    weights = ag.tensor(np.arange(1, math.prod(shape) + 1, dtype=np.float64).reshape(shape))
    (out * weights).sum().backward()
    assert empty.grad.shape == (0,)
    np.testing.assert_array_equal(x.grad.numpy(), weights.numpy())


def test_cat_of_only_legacy_empty_tensors_ignores_dim():
    a, b = _leaf(np.zeros(0)), _leaf(np.zeros(0))
    out = ag.cat([a, b], 5)  # PyTorch gives shape (0,) for any dim here
    assert out.shape == (0,)
    out.sum().backward()
    assert a.grad.shape == b.grad.shape == (0,)


def test_cat_with_a_legacy_empty_tensor_differentiates_twice():
    empty, x = _leaf(np.zeros(0)), _leaf([[1.0, 2.0], [3.0, 4.0]])
    g_empty, g_x = ag.autograd.grad((ag.cat([empty, x], 1) ** 2).sum(), (empty, x), create_graph=True)
    assert g_empty.shape == (0,)
    (gg,) = ag.autograd.grad(g_x.sum(), x)
    np.testing.assert_array_equal(gg.numpy(), np.full((2, 2), 2.0))


# -- norms without an identity over empty tensors ------------------------------------------------------------------
@pytest.mark.parametrize("p", [math.inf, -math.inf])
@pytest.mark.parametrize("keepdim", [False, True])
def test_inf_norm_over_non_empty_dims_of_an_empty_tensor_is_empty(p, keepdim):
    x = _leaf(np.zeros((0, 3)))
    y = x.norm(p=p, dim=1, keepdim=keepdim)
    assert y.shape == ((0, 1) if keepdim else (0,))
    y.sum().backward()
    assert x.grad.shape == (0, 3)


@pytest.mark.parametrize(("p", "dim", "message"), [
    (math.inf, None, "cannot compute the inf norm on an empty tensor because the operation does not have an identity"),
    (-math.inf, (), "cannot compute the -inf norm on an empty tensor because"),
    (math.inf, 0, "cannot compute the inf norm on the dimension 0because this dimension is empty and the operation "
                  "does not have an identity"),
    (math.inf, (1, 0), "cannot compute the inf norm on the dimension 0because"),
    (-1, 0, "cannot compute the -1 norm on the dimension 0because"),
    (-1.0, None, "cannot compute the -1 norm on an empty tensor"),
    (-0.5, (-2,), "cannot compute the -0.5 norm on the dimension -2because"),
])
def test_norms_without_an_identity_refuse_empty_reductions(p, dim, message):
    with pytest.raises(RuntimeError, match=re.escape("linalg.vector_norm " + message)):
        ag.zeros(0, 3).norm(p=p, dim=dim)


def test_norms_with_an_identity_still_reduce_empty_dims():
    np.testing.assert_array_equal(ag.zeros(0, 3).norm(p=0.5, dim=0).numpy(), [0.0, 0.0, 0.0])
    assert ag.zeros(3, 0).norm(p=-1, dim=0).shape == (0,)  # dim 0 is not empty


# -- var and std with correction >= n ------------------------------------------------------------------------------
def _moment_grad(values, fn, weight=1.0, **kwargs):
    x = _leaf(values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the degrees-of-freedom warning
        y = getattr(x, fn)(**kwargs)
    (y * weight).sum().backward()
    return _bits(y), _bits(x.grad)


@pytest.mark.parametrize(("values", "fn", "weight", "kwargs", "expected"), [
    # over given dims PyTorch scales by 2 / (n - correction), negative or inf: the gradient is 2 (x - mean) / (n - c),
    # for [1, 2, 4] (mean 7/3, c = 5) -(x - 7/3) = 4/3, 1/3, -5/3; std's is var's over 2 std = inf: signed zeros
    ([1.0, 2.0, 4.0], "var", 1.0, dict(dim=0, correction=5),
     (["inf"], ["1.3333333333333335", "0.3333333333333335", "-1.6666666666666665"])),
    ([[1.0, 2.0], [3.0, 5.0]], "var", 1.0, dict(dim=0, correction=2), (["inf", "inf"], ["-inf", "-inf", "inf", "inf"])),
    ([[1.0, 2.0], [3.0, 5.0]], "var", 1.0, dict(dim=1, correction=3, keepdim=True),
     (["inf", "inf"], ["1.0", "-1.0", "2.0", "-2.0"])),
    ([1.0, 2.0, 4.0], "std", 1.0, dict(dim=0, correction=5), (["inf"], ["0.0", "0.0", "-0.0"])),
    ([[1.0, 2.0], [3.0, 5.0]], "std", 1.0, dict(dim=1, correction=2.5),
     (["inf", "inf"], ["0.0", "-0.0", "0.0", "-0.0"])),
    # over all dims: inf, and nan where x is its mean
    ([1.0, 2.0, 3.0], "var", 1.0, dict(correction=3), (["inf"], ["inf", "nan", "inf"])),
    ([1.0, 2.0, 3.0], "var", -1.0, dict(correction=4.5), (["inf"], ["-inf", "nan", "-inf"])),
    ([1.0, 2.0, 3.0], "std", 1.0, dict(correction=3), (["inf"], ["nan", "nan", "nan"])),
    (2.0, "var", 1.0, dict(dim=0, correction=1), (["nan"], ["nan"])),  # a 0-d input counts as all dims
])
def test_var_and_std_gradients_without_degrees_of_freedom_match_pytorch(values, fn, weight, kwargs, expected):
    assert _moment_grad(values, fn, weight, **kwargs) == expected


def test_std_gradient_where_the_deviation_is_zero_is_positive_zero():
    x = _leaf([[1.0, 1.0], [2.0, 3.0]])
    (x.std(dim=1) * ag.tensor([-1.0, 2.0], dtype=ag.float64)).sum().backward()
    # row 2: 2 * (x - 2.5) / (2 std), std = sqrt(0.5): -+0.5 / sqrt(0.5) * 2, -+sqrt(2) as doubles round it
    assert _bits(x.grad) == ["0.0", "0.0", "-1.414213562373095", "1.414213562373095"]


def test_var_of_an_empty_reduction_is_nan_for_any_correction_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _bits(ag.zeros(0).var(correction=-1)) == ["nan"]
        assert _bits(ag.zeros(2, 0).std(dim=1, correction=-3)) == ["nan", "nan"]


# -- Python ints out of a narrow integer dtype's range -------------------------------------------------------------
def _int8():
    return ag.tensor([1, -2, 100], dtype=ag.int8)


@pytest.mark.parametrize(("op", "expected"), [
    (lambda x: x == 1000, [False, False, False]),  # 1000 meets int8 as -24
    (lambda x: x < 1000, [False, False, False]),
    (lambda x: x > -1000, [False, False, True]),
    (lambda x: x != 256, [True, True, True]),
    (lambda x: x < 2**63, [False, True, False]),  # 2**63 (a uint64 number) meets int8 as 0
    (lambda x: (x & 1000).tolist(), [0, -24, 96]),
    (lambda x: (x | 300).tolist(), [45, -2, 108]),
    (lambda x: x.to(ag.uint8) < 1000, [True, False, True]),
])
def test_comparisons_and_bitwise_ops_wrap_out_of_range_ints(op, expected):
    result = op(_int8())
    assert (result if isinstance(result, list) else result.tolist()) == expected


@pytest.mark.parametrize(("value", "error", "message"), [
    (2**64, OverflowError, "int too big to convert"),
    (-(2**63) - 1, OverflowError, "can't convert negative int to unsigned"),
])
def test_ints_beyond_64_bits_are_refused(value, error, message):
    with pytest.raises(error, match=message):
        _ = _int8() == value


@pytest.mark.parametrize(("op", "ctype"), [
    (lambda: ag.where(_int8() > 0, _int8(), 1000), "int8_t"),
    (lambda: ag.where(_int8() > 0, 1000, _int8()), "int8_t"),
    (lambda: ag.where(ag.tensor([True]), ag.zeros(1, dtype=ag.int32), 2**40), "int"),
    (lambda: _int8().clamp(-1000, 1000), "int8_t"),
    (lambda: _int8().to(ag.uint8).clamp(max=300), "uint8_t"),
    (lambda: ag.full((2,), 1000, dtype=ag.int8), "int8_t"),
    (lambda: ag.full((2,), -1.5, dtype=ag.uint8), "uint8_t"),
    (lambda: ag.full((2,), 127.9, dtype=ag.int8), "int8_t"),
    (lambda: ag.full_like(ag.zeros(2, dtype=ag.int16), 70000), "int16_t"),
    (lambda: ag.full_like(ag.zeros(2, dtype=ag.int64), 2**63), "int64_t"),
])
def test_numbers_stored_into_narrow_ints_must_fit(op, ctype):
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type {ctype} without overflow"):
        op()


def test_numbers_that_fit_are_stored_as_pytorch_stores_them():
    assert ag.full((2,), -1, dtype=ag.uint8).tolist() == [255, 255]  # an unsigned dtype takes -max..max
    assert ag.full((2,), 2.7, dtype=ag.int8).tolist() == [2, 2]
    assert ag.full((2,), -1.5, dtype=ag.int8).tolist() == [-1, -1]
    assert ag.where(ag.tensor([True, False]), ag.zeros(2, dtype=ag.uint8), -1).tolist() == [0, 255]
    assert _int8().clamp(-128, 127).tolist() == [1, -2, 100]


# -- arange --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "kwargs", "dtype", "expected"), [
    ((0, 1, 0.1), {}, ag.float32, 10),
    ((1, 2.5, 0.5), {}, ag.float32, [1.0, 1.5, 2.0]),
    ((1, 1.3, 0.1), {}, ag.float32, 4),  # (1.3 - 1) / 0.1 is 3.0000000000000004 in doubles
    ((0, 5, 1.5), {"dtype": ag.int32}, ag.int32, [0, 1, 2, 3]),  # the step goes toward 0 first, the length not
    ((0, 5, 1.5), {"dtype": ag.int64}, ag.int64, [0, 1, 2, 3, 4]),  # int64 counts with the truncated bounds
    ((0, 1, 0.5), {"dtype": ag.int32}, ag.int32, [0, 0]),
    ((10, 0, -1.5), {"dtype": ag.int64}, ag.int64, list(range(10, 0, -1))),
    ((-0.9, 5), {"dtype": ag.int64}, ag.int64, [0, 1, 2, 3, 4]),
    ((0, 300, 100), {"dtype": ag.uint8}, ag.uint8, [0, 100, 200]),
    ((0, 1, math.inf), {}, ag.float32, []),
    ((True, 5), {}, ag.int64, [1, 2, 3, 4]),
    ((np.int64(2), 7, np.int16(2)), {}, ag.int64, [2, 4, 6]),
    ((np.float32(2.5),), {}, ag.float32, [0.0, 1.0, 2.0]),
])
def test_arange_lengths_values_and_dtypes_match_pytorch(args, kwargs, dtype, expected):
    t = ag.arange(*args, **kwargs)
    assert t.dtype == dtype
    assert (t.shape[0] if isinstance(expected, int) else t.tolist()) == expected


def test_arange_wraps_into_narrow_ints_and_overflows_float16_to_inf_silently():
    assert ag.arange(0, 300, dtype=ag.int8)[126:130].tolist() == [126, 127, -128, -127]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ag.arange(0, 70000, 1000, dtype=ag.float16)[64:67].tolist() == [64000.0, 64992.0, math.inf]


def test_arange_takes_zero_dim_tensors_as_numbers():
    assert ag.arange(ag.tensor(5)).dtype == ag.int64
    t = ag.arange(ag.tensor(3, dtype=ag.int32), ag.tensor(7, dtype=ag.int8))
    assert (t.dtype, t.tolist()) == (ag.int64, [3, 4, 5, 6])
    t = ag.arange(0, ag.tensor(5), ag.tensor(0.5, dtype=ag.float64))
    assert (t.dtype, t.shape) == (ag.float32, (10,))
    with pytest.raises(TypeError, match=r"argument 'end' \(position 1\) must be Number, not Tensor"):
        ag.arange(ag.tensor([5]))


@pytest.mark.parametrize(("args", "kwargs", "error", "message"), [
    ((5,), {"dtype": ag.bool}, NotImplementedError, "\"arange_cpu\" not implemented for 'Bool'"),
    ((0, 1, math.nan), {}, RuntimeError, "step must be nonzero"),
    ((0, 1, 0.5), {"dtype": ag.int64}, ValueError, "step must be nonzero"),
    ((0, 1, math.inf), {"dtype": ag.int64}, RuntimeError, "value cannot be converted to type int64_t without overflow"),
    ((2**63, 2**63 + 5), {}, RuntimeError, "value cannot be converted to type int64_t without overflow"),
    ((0, 2**64), {}, OverflowError, "int too big to convert"),
    ((0, 2**63 - 1, 2**61), {}, RuntimeError, r"invalid size, possible overflow\?"),
    ((0.0, math.inf), {}, RuntimeError, "unsupported range: 0 -> inf"),
    ((0, -0.5), {"dtype": ag.int64}, RuntimeError, "upper bound and lower bound inconsistent with step sign"),
    (("a",), {}, TypeError, r"argument 'end' \(position 1\) must be Number, not str"),
])
def test_arange_refuses_what_pytorch_refuses(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        ag.arange(*args, **kwargs)


def test_arithmetic_with_an_out_of_range_int_wraps_it_to_the_tensor_dtype_as_torch():
    x = ag.tensor([1, 2, 3], dtype=ag.int8)
    assert (x + 1000).tolist() == [-23, -22, -21]  # torch 2.13: 1000 becomes -24 in int8
    assert (x * 300).tolist() == [44, 88, -124]
    assert (300 - x).tolist() == [43, 42, 41]
    assert (x // 300).tolist() == [0, 0, 0] and (x % 300).tolist() == [1, 2, 3]
    assert (1000 ** x).tolist() == [-24, 64, 0]
    np.testing.assert_allclose((x / 1000).numpy(), [0.001, 0.002, 0.003], rtol=1e-6)  # divides by 1000 itself
    for overflowing in (lambda: x.add(1, alpha=1000), lambda: x ** 300):
        with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
            overflowing()


@pytest.mark.parametrize("p", [2, 1, 3, math.inf])
def test_norm_of_a_zero_dim_tensor_along_dim_0_is_its_magnitude(p):
    x = ag.tensor(-2.0, dtype=ag.float64, requires_grad=True)
    y = ag.norm(x, p, 0)
    (g,) = ag.autograd.grad(y, x)
    assert y.item() == 2.0 and g.item() == -1.0  # |x| and its slope sign(x)
