"""Comparisons, value tests and searches where a differential review against PyTorch found actorgrad behaving
otherwise: any/all/count_nonzero over an empty dim list, numpy's `axis`/`keepdims` names, complex NaN and inf
tests, isclose on integers and its tolerance checks, uint8 conditions of where, and the dtype a Python number or a
tensor of another dtype meets searchsorted's and isin's operands in, logical ops given numbers, and frexp of
subnormals. Expected values come from numpy, Python's exact integers and math.frexp, or float32 rounding done by
numpy."""

import math
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings
from actorgrad.autograd import gradcheck

X = np.array([[1, 0, 2], [0, 0, 3]])


# -- any / all / count_nonzero ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [(), []])
def test_any_and_all_over_an_empty_dim_list_test_each_element_alone(dim):
    for dtype, out_dtype in ((ag.int64, ag.bool_), (ag.float32, ag.bool_), (ag.uint8, ag.uint8)):
        x = ag.tensor(X, dtype=dtype)
        for op in ("all", "any"):
            out = getattr(ag, op)(x, dim)
            assert out.dtype == out_dtype and out.shape == X.shape
            np.testing.assert_array_equal(out.numpy(), X != 0)
            np.testing.assert_array_equal(getattr(x, op)(dim=dim, keepdim=True).numpy(), X != 0)
    assert ag.all(ag.tensor(0), dim).shape == () and not ag.all(ag.tensor(0), dim).item()
    # dim=None still reduces every dim
    assert ag.all(ag.tensor(X)).shape == () and ag.any(ag.tensor(X), None, True).shape == (1, 1)


def test_count_nonzero_over_an_empty_dim_list_counts_every_element():
    x = ag.tensor(X)
    for dim in ((), []):
        out = ag.count_nonzero(x, dim)
        assert out.shape == () and out.dtype == ag.int64 and out.item() == np.count_nonzero(X)
    assert x.count_nonzero(()).item() == np.count_nonzero(X)
    assert ag.count_nonzero(ag.tensor(5), (0,)).item() == 1


def test_any_all_count_nonzero_and_quantiles_take_numpys_axis_and_keepdims():
    x = ag.tensor(X)
    for op in ("all", "any"):
        expected = getattr(np, op)(X, axis=1, keepdims=True)
        np.testing.assert_array_equal(getattr(ag, op)(x, axis=1, keepdims=True).numpy(), expected)
        np.testing.assert_array_equal(getattr(x, op)(axis=0).numpy(), getattr(np, op)(X, axis=0))
    np.testing.assert_array_equal(ag.count_nonzero(x, axis=1).numpy(), np.count_nonzero(X, axis=1))
    np.testing.assert_array_equal(x.count_nonzero(axis=(0, 1)).numpy(), np.count_nonzero(X))
    data = np.random.default_rng(3).standard_normal((3, 5))
    t = ag.tensor(data)
    for op in ("quantile", "nanquantile"):
        out = getattr(ag, op)(t, 0.3, axis=1, keepdims=True)
        assert out.shape == (3, 1)
        np.testing.assert_allclose(out.numpy(), np.quantile(data, 0.3, axis=1, keepdims=True), rtol=1e-12)
        np.testing.assert_allclose(getattr(t, op)(0.7, axis=0).numpy(), np.quantile(data, 0.7, axis=0), rtol=1e-12)


# -- value tests ---------------------------------------------------------------------------------------------------
COMPLEX = [complex(1, 2), complex(math.nan, 0), complex(0, math.nan), complex(math.inf, 1), complex(2, -math.inf),
           complex(math.inf, math.nan), 0j]


@pytest.mark.parametrize("dtype", [ag.complex64, ag.complex128])
def test_isnan_isinf_and_isfinite_of_complex_tensors_look_at_both_parts(dtype):
    z = ag.tensor(COMPLEX, dtype=dtype)
    parts = [(v.real, v.imag) for v in COMPLEX]
    assert ag.isnan(z).tolist() == [math.isnan(a) or math.isnan(b) for a, b in parts]
    assert ag.isinf(z).tolist() == [math.isinf(a) or math.isinf(b) for a, b in parts]
    assert z.isfinite().tolist() == [math.isfinite(a) and math.isfinite(b) for a, b in parts]
    assert ag.isnan(z[1]).item() and not ag.isinf(z[0]).item()


@pytest.mark.parametrize("op", ["isposinf", "isneginf"])
def test_signed_infinity_tests_refuse_complex_tensors(op):
    z = ag.tensor([complex(math.inf, 0)])
    for call in (lambda: getattr(ag, op)(z), lambda: getattr(z, op)()):
        with pytest.raises(RuntimeError, match=f"^{op} does not support complex inputs.$"):
            call()
    assert getattr(ag, op)(ag.tensor([math.inf, -math.inf])).tolist() == [op == "isposinf", op == "isneginf"]


# -- isclose / allclose --------------------------------------------------------------------------------------------
def test_isclose_with_zero_tolerances_is_exact_equality_of_integers():
    a, b = 2**62, 2**62 + 1  # equal once both are rounded to a float
    close = ag.isclose(ag.tensor([a, a]), ag.tensor([b, a]), rtol=0, atol=0)
    assert close.tolist() == [a == b, True]
    assert not ag.allclose(ag.tensor([a]), ag.tensor([b]), rtol=0, atol=0)


def test_isclose_takes_an_integer_difference_in_the_default_float_dtype():
    low, high = -(2**31), 2**31 - 1  # their int32 difference wraps to -1
    assert not ag.isclose(ag.tensor([high], dtype=ag.int32), ag.tensor([low], dtype=ag.int32), rtol=0, atol=1).item()
    assert not ag.isclose(ag.tensor([3], dtype=ag.uint8), ag.tensor([250], dtype=ag.uint8), rtol=0, atol=10).item()
    a, b = 2**24 + 1, 2**24
    in_float32 = abs(float(np.float32(a)) - float(np.float32(b))) <= 0.5
    assert ag.isclose(ag.tensor([a]), ag.tensor([b]), rtol=0, atol=0.5).item() == in_float32
    previous = ag.get_default_dtype()
    ag.set_default_dtype(ag.float64)
    try:
        assert ag.isclose(ag.tensor([a]), ag.tensor([b]), rtol=0, atol=0.5).item() == (abs(a - b) <= 0.5)
    finally:
        ag.set_default_dtype(previous)
    assert ag.isclose(ag.tensor([True, False]), ag.tensor([False, False]), rtol=0, atol=1).tolist() == [True, True]


@pytest.mark.parametrize("name", ["rtol", "atol"])
def test_isclose_and_allclose_refuse_negative_tolerances(name):
    x = ag.tensor([1.0, 2.0])
    for op in (ag.isclose, ag.allclose):
        with pytest.raises(RuntimeError, match=f"^{name} must be greater than or equal to zero, but got -0.5$"):
            op(x, x, **{name: -0.5})


def test_isclose_of_floats_keeps_its_tolerance_test():
    x = ag.tensor([1.0, math.inf, math.nan, 100.0, -math.inf], dtype=ag.float64)
    y = ag.tensor([1.0 + 1e-6, math.inf, math.nan, 100.1, math.inf], dtype=ag.float64)
    expected = [abs(1.0 - (1.0 + 1e-6)) <= 1e-8 + 1e-5 * (1.0 + 1e-6), True, False, False, False]
    assert ag.isclose(x, y).tolist() == expected
    assert ag.isclose(x, y, equal_nan=True).tolist() == expected[:2] + [True] + expected[3:]
    z = ag.tensor([complex(1, 1), complex(math.nan, 0)])
    w = ag.tensor([complex(1, 1 + 1e-7), complex(0, math.nan)])
    assert ag.isclose(z, w, equal_nan=True).tolist() == [True, True]


# -- where with a uint8 condition ------------------------------------------------------------------------------------
def test_where_takes_a_uint8_condition_with_pytorchs_warning_once(monkeypatch):
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    mask = np.array([1, 0, 7, 0], dtype=np.uint8)
    x = ag.tensor([1.0, 2.0, 3.0, 4.0], dtype=ag.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="^where received a uint8 condition tensor. This behavior is deprecated"):
        out = ag.where(ag.tensor(mask), x, -1.0)
    np.testing.assert_array_equal(out.detach().numpy(), np.where(mask != 0, [1.0, 2.0, 3.0, 4.0], -1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process, as PyTorch's
        out.backward(ag.ones(4, dtype=ag.float64))
        assert gradcheck(lambda a, b: ag.where(ag.tensor(mask), a, b), (x, ag.ones(4, dtype=ag.float64,
                                                                                    requires_grad=True)))
    np.testing.assert_array_equal(x.grad.numpy(), mask != 0)
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor"):
        ag.where(ag.tensor([1, 0], dtype=ag.int8), 1.0, 0.0)


# -- searchsorted / bucketize ---------------------------------------------------------------------------------------
def test_searchsorted_casts_a_number_to_the_boundaries_dtype():
    tenth = float(np.float32(0.1))  # the float32 boundary a Python 0.1 becomes
    boundaries = ag.tensor([0.1, 0.2])
    assert ag.searchsorted(boundaries, 0.1, right=True).item() == sum(b <= tenth for b in (tenth, 0.2))
    assert ag.bucketize(0.1, boundaries, right=True).item() == 1
    # -1 meets uint8 boundaries as 255, past every boundary
    assert ag.searchsorted(ag.tensor([1, 2, 3], dtype=ag.uint8), -1).item() == 3


def test_searchsorted_compares_tensors_of_two_dtypes_in_their_promoted_dtype():
    big = 2**24 + 1  # as float32: 2**24
    as_float32 = float(np.float32(big))
    out = ag.searchsorted(ag.tensor([big]), ag.tensor([float(2**24)]), right=True)
    assert out.item() == int(as_float32 <= float(2**24))
    assert ag.bucketize(ag.tensor([float(2**24)]), ag.tensor([big]), right=True).item() == 1
    # float64 values keep their precision against float16 boundaries
    assert ag.searchsorted(ag.tensor([0.1, 0.2], dtype=ag.float64), ag.tensor([0.1], dtype=ag.float16)).item() == 0


def test_searchsorted_refuses_bool_as_pytorch_has_no_kernel_for_it():
    with pytest.raises(NotImplementedError, match="\"searchsorted_out_cpu\" not implemented for 'Bool'"):
        ag.searchsorted(ag.tensor([False, True]), ag.tensor([True]))
    assert ag.searchsorted(ag.tensor([False, True]), ag.tensor([0.5])).tolist() == [1]  # meets as float


# -- isin ------------------------------------------------------------------------------------------------------------
def test_isin_compares_a_number_in_the_promoted_dtype_as_eq_does():
    assert ag.isin(ag.tensor([0.1, 0.2]), 0.1).tolist() == [True, False]
    assert ag.isin(ag.tensor([0.1]), 0.1, invert=True).tolist() == [False]
    assert ag.isin(ag.tensor([255], dtype=ag.uint8), -1).tolist() == [True]
    assert ag.isin(-1, ag.tensor([255], dtype=ag.uint8)).item()
    assert ag.isin(ag.tensor([0.1]), ag.tensor(0.1, dtype=ag.float64)).tolist() == [True]  # 0-d: float32 wins
    assert ag.isin(ag.tensor([0.1], dtype=ag.float16), ag.tensor([0.1], dtype=ag.float64)).tolist() == [False]


def test_isin_refuses_complex_and_bool_naming_the_first_such_operand():
    cases = [((ag.tensor([1j]), ag.tensor([1.0])), "ComplexFloat"), ((ag.tensor([1.0]), 1j), "ComplexDouble"),
             ((1j, ag.tensor([1j])), "ComplexDouble"), ((ag.tensor([1j]), ag.tensor([True])), "ComplexFloat"),
             ((ag.tensor([True]), ag.tensor([1j])), "Bool"), ((ag.tensor([1.0]), True), "Bool")]
    for args, name in cases:
        with pytest.raises(RuntimeError, match=f"^Unsupported input type encountered for isin\\(\\): {name}$"):
            ag.isin(*args)


# -- logical ops -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_take_tensors_only(op):
    x = ag.tensor([0, 1, 2])
    with pytest.raises(TypeError, match=f"^{op}\\(\\): argument 'other' \\(position 2\\) must be Tensor, not int$"):
        getattr(ag, op)(x, 1)
    with pytest.raises(TypeError, match=f"^{op}\\(\\): argument 'input' \\(position 1\\) must be Tensor, not bool$"):
        getattr(ag, op)(True, x)
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        getattr(x, op)(1.5)
    reference = getattr(np, op)(np.array([0, 1, 2]), np.array([1.0, 0.0, 0.5]))
    assert getattr(ag, op)(x, ag.tensor([1.0, 0.0, 0.5])).tolist() == reference.tolist()


# -- frexp -----------------------------------------------------------------------------------------------------------
def test_frexp_of_a_subnormal_is_quiet_and_its_gradient_scale_overflows_to_inf():
    values = [1e-310, 3.0, -0.1]
    x = ag.tensor(values, dtype=ag.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mantissa, exponent = ag.frexp(x)
        mantissa.sum().backward()
    assert [(m, e) for m, e in zip(mantissa.tolist(), exponent.tolist())] == [math.frexp(v) for v in values]
    # d mantissa / dx = 2 ** -exponent: past float64's range for the subnormal
    assert x.grad.tolist() == [math.inf] + [2.0 ** -math.frexp(v)[1] for v in values[1:]]


@pytest.mark.gpu
def test_the_fixes_on_cuda_give_the_cpu_results(monkeypatch, cupy):
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    results = []
    for device in ("cpu", "cuda"):
        x = ag.tensor(X, device=device)
        z = ag.tensor(COMPLEX, device=device)
        floats = ag.tensor([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]], dtype=ag.float64, device=device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            chosen = ag.where(ag.tensor([1, 0, 1], dtype=ag.uint8, device=device), floats, 0.0)
        results.append([t.cpu().numpy() for t in (
            ag.all(x, ()), ag.any(x.to(ag.uint8), axis=1, keepdims=True), ag.count_nonzero(x, ()),
            ag.quantile(floats, 0.3, axis=1, keepdims=True), ag.isnan(z), ag.isinf(z), ag.isfinite(z),
            ag.isclose(ag.tensor([2**62], device=device), ag.tensor([2**62 + 1], device=device), rtol=0, atol=0),
            ag.isclose(floats, floats + 1e-9), chosen,
            ag.searchsorted(ag.tensor([0.1, 0.2], device=device), 0.1, right=True),
            ag.searchsorted(ag.tensor([2**24 + 1], device=device), ag.tensor([float(2**24)], device=device),
                            right=True),
            ag.isin(ag.tensor([0.1, 0.2], device=device), 0.1),
            ag.isin(ag.tensor([255], dtype=ag.uint8, device=device), ag.tensor([-1, 3], device=device)))])
    for on_cpu, on_cuda in zip(*results):
        assert on_cpu.dtype == on_cuda.dtype and on_cpu.shape == on_cuda.shape
        np.testing.assert_array_equal(on_cuda, on_cpu)
