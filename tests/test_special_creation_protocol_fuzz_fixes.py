"""Fixes from a fuzz-differential review of actorgrad.special, the creation functions and the Tensor protocol:
`out=` on the torch.special functions (each with its kernel's dtype rule and autograd refusal), log_ndtr's slope in
the far left tail, sinc's float16 slope, zeta's poles at non-positive integers q, i1/i1e's missing float16
backward, the dtype and aliasing refusals of tril_indices/triu_indices, range, polar and asarray(copy=False),
asarray(copy=True) keeping an array's layout, and empty_strided's refusal of negative strides.
Expected values come from closed forms, math.erf/erfc and series computed here."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

INF, NAN = math.inf, math.nan


def f64(values, requires_grad=False):
    return ag.tensor(values, dtype=ag.float64, requires_grad=requires_grad)


# -- out= on actorgrad.special ---------------------------------------------------------------------------------------
def test_special_functions_write_into_out_cast_to_its_dtype():
    x = ag.tensor([0.25, -1.5, 3.0])
    out = ag.empty(0, dtype=ag.float64)
    assert ag.special.erf(x, out=out) is out
    assert out.dtype == ag.float64 and out.shape == (3,)
    np.testing.assert_allclose(out.numpy(), [math.erf(v) for v in (0.25, -1.5, 3.0)], rtol=1e-6)
    values = [0.5, 2.0]
    out = ag.empty(0, dtype=ag.float64)
    ag.special.ndtr(ag.tensor(values, dtype=ag.float64), out=out)
    np.testing.assert_allclose(out.numpy(), [(1 + math.erf(v / math.sqrt(2))) / 2 for v in values], rtol=1e-14)
    ag.special.polygamma(1, f64([1.0, 2.0]), out=out)  # trigamma(1) = pi**2 / 6, trigamma(2) = pi**2 / 6 - 1
    np.testing.assert_allclose(out.numpy(), [math.pi ** 2 / 6, math.pi ** 2 / 6 - 1], rtol=1e-13)
    ag.special.zeta(2.0, f64([1.0, 0.5]), out=out)  # zeta(2, 1/2) = 3 zeta(2)
    np.testing.assert_allclose(out.numpy(), [math.pi ** 2 / 6, math.pi ** 2 / 2], rtol=1e-13)
    rows = np.array([[0.0, 1.0, 2.0], [-1.0, 3.0, 0.5]])
    into = ag.empty(0, dtype=ag.float32)
    assert ag.special.logsumexp(f64(rows), 1, out=into) is into
    np.testing.assert_allclose(into.numpy(), np.log(np.exp(rows).sum(1)), rtol=1e-6)
    assert into.dtype == ag.float32
    ag.special.round(ag.tensor([1.26, -2.5]), decimals=1, out=into)
    np.testing.assert_allclose(into.numpy(), [1.3, -2.5], rtol=1e-6)


def test_special_out_refuses_the_dtypes_its_kernel_refuses():
    x = ag.tensor([0.3, 0.6])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ag.special.expit(x, out=ag.empty(0, dtype=ag.int64))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Bool"):
        ag.special.bessel_j0(x, out=ag.empty(0, dtype=ag.bool))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        ag.special.round(x, out=ag.empty(0, dtype=ag.float64))
    with pytest.raises(RuntimeError, match="Expected floating point type for result tensor, but got: Long"):
        ag.special.logsumexp(x, 0, out=ag.empty(0, dtype=ag.int64))
    for fn in (ag.special.softmax, ag.special.log_softmax):  # PyTorch's take no `out`
        with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
            fn(x, 0, out=ag.empty(0))


def test_special_out_refuses_autograd_in_the_name_of_the_kernel_it_runs_as():
    x = ag.tensor([0.3, 0.6], requires_grad=True)
    for fn, name in ((ag.special.expit, "sigmoid"), (ag.special.gammaln, "lgamma"), (ag.special.psi, "digamma"),
                     (ag.special.entr, "special_entr"), (ag.special.erfcx, "special_erfcx")):
        with pytest.raises(RuntimeError, match=rf"^{name}\(\): functions with out=\.\.\. arguments don't support"):
            fn(x, out=ag.empty(0))
    with pytest.raises(RuntimeError, match=r"^igamma\(\): functions with out="):
        ag.special.gammainc(x, x, out=ag.empty(0))


def test_special_functions_without_a_derivative_write_out_beside_inputs_that_require_grad():
    x = f64([0.5, 2.0], requires_grad=True)
    out = ag.empty(0, dtype=ag.float64)
    assert ag.special.spherical_bessel_j0(x, out=out) is out
    np.testing.assert_allclose(out.numpy(), [math.sin(v) / v for v in (0.5, 2.0)], rtol=1e-14)
    assert not out.requires_grad
    ag.special.chebyshev_polynomial_t(x, 3, out=out)  # T3 = 4 x**3 - 3 x
    np.testing.assert_allclose(out.numpy(), [4 * v ** 3 - 3 * v for v in (0.5, 2.0)], rtol=1e-14)


# -- log_ndtr's slope --------------------------------------------------------------------------------------------------
def inverse_mills_ratio(t: float) -> float:
    """pdf(-t) / cdf(-t) for large t, from the asymptotic series of the Mills ratio, 1/t (1 - 1/t**2 + 3/t**4 ...),
    summed while its terms fall."""
    total, term, k = 0.0, 1.0 / t, 1
    while abs(term) > 1e-18 * abs(total) and k < 30:
        total += term
        term *= -(2 * k - 1) / (t * t)
        k += 1
    return 1 / total


def test_log_ndtr_slope_keeps_its_accuracy_far_into_the_left_tail():
    points = [-20.0, -100.0, -1000.0, -1e4, -1e7]
    for dtype, rtol in ((ag.float32, 2e-6), (ag.float64, 1e-13)):
        x = ag.tensor(points, dtype=dtype, requires_grad=True)
        ag.special.log_ndtr(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [inverse_mills_ratio(-v) for v in points], rtol=rtol)
    middle = [-5.0, -1.0, -0.25, 0.0, 0.5, 2.0, 6.0]
    x = f64(middle, requires_grad=True)
    ag.special.log_ndtr(x).sum().backward()
    want = [math.exp(-v * v / 2) / math.sqrt(2 * math.pi) / (math.erfc(-v / math.sqrt(2)) / 2) for v in middle]
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-13)


def test_log_ndtr_slope_at_the_ends_and_its_derivatives():
    x = f64([-INF, INF, 40.0, NAN], requires_grad=True)
    ag.special.log_ndtr(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[:3], [INF, 0.0, 0.0])
    assert math.isnan(x.grad.numpy()[3])
    away = f64([-60.0, -7.5, -1.3, 0.4, 3.0, 9.0], requires_grad=True)
    assert gradcheck(ag.special.log_ndtr, (away,))
    assert gradgradcheck(ag.special.log_ndtr, (away,))


# -- sinc's float16 slope ------------------------------------------------------------------------------------------
def test_sinc_float16_slope_keeps_pi_x_in_full_precision():
    values = np.array([27.61, -42.56, -9.37, 0.5, 1e-3, 3.0], dtype=np.float16)
    x = ag.tensor(values, requires_grad=True)
    ag.special.sinc(x).sum().backward()
    v = values.astype(np.float64)
    want = (np.pi * v * np.cos(np.pi * v) - np.sin(np.pi * v)) / (np.pi * v * v)
    assert x.grad.dtype == ag.float16
    np.testing.assert_allclose(x.grad.numpy().astype(np.float64), want, rtol=1e-3)


# -- zeta's poles --------------------------------------------------------------------------------------------------
def test_zeta_is_infinite_at_non_positive_integer_q_whatever_s():
    s = f64([1.5, 2.5, 1.17, 2.0, 3.0])
    q = f64([-3.0, 0.0, -60.0, -2.0, -INF])
    np.testing.assert_array_equal(ag.special.zeta(s, q).numpy(), [INF] * 5)
    # a non-integer q < 0: NaN for a non-integer s, the shifted sum for an integer one
    assert math.isnan(ag.special.zeta(f64(1.5), f64(-2.5)).item())
    want = 1 / 2.5 ** 2 + 1 / 1.5 ** 2 + 1 / 0.5 ** 2 + math.pi ** 2 / 2  # zeta(2, -2.5) = ... + zeta(2, 1/2)
    assert ag.special.zeta(f64(2.0), f64(-2.5)).item() == pytest.approx(want, rel=1e-13)


# -- i1, i1e: no float16 backward --------------------------------------------------------------------------------------
def test_i1_and_i1e_refuse_a_float16_backward_as_pytorch():
    for fn, name in ((ag.special.i1, "i1_backward"), (ag.special.i1e, "i1e_backward")):
        x = ag.tensor([0.3, 0.7], dtype=ag.float16, requires_grad=True)
        y = fn(x)
        assert y.dtype == ag.float16
        with pytest.raises(NotImplementedError, match=f"\"{name}\" not implemented for 'Half'"):
            y.sum().backward()
        x32 = ag.tensor([0.3, 0.7], requires_grad=True)
        fn(x32).sum().backward()
        assert x32.grad.dtype == ag.float32


# -- creation ------------------------------------------------------------------------------------------------------
def brute_triangle(row: int, col: int, offset: int, lower: bool) -> list[list[int]]:
    pairs = [(i, j) for i in range(row) for j in range(col) if (j - i <= offset if lower else j - i >= offset)]
    return [[i for i, _ in pairs], [j for _, j in pairs]]


def test_tril_and_triu_indices_take_int32_and_int64_only():
    for fn, lower in ((ag.tril_indices, True), (ag.triu_indices, False)):
        for dtype in (ag.int32, ag.int64):
            got = fn(4, 3, -1, dtype=dtype)
            assert got.dtype == dtype
            np.testing.assert_array_equal(got.numpy(), np.array(brute_triangle(4, 3, -1, lower)).reshape(2, -1))
        for dtype, name in ((ag.uint8, "Byte"), (ag.int8, "Char"), (ag.int16, "Short"), (ag.float32, "Float"),
                            (ag.bool, "Bool")):
            with pytest.raises(NotImplementedError, match=f"\"{fn.__name__}\" not implemented for '{name}'"):
                fn(3, 3, dtype=dtype)


def test_range_refuses_bool_and_complex_dtypes_first():
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        with pytest.raises(NotImplementedError, match="\"range_cpu\" not implemented for 'Bool'"):
            ag.range(5, -4, dtype=ag.bool)  # before the step's sign
    with pytest.warns(UserWarning), pytest.raises(NotImplementedError, match="for 'ComplexFloat'"):
        ag.range(0, 3, dtype=ag.complex64)
    with pytest.warns(UserWarning):
        got = ag.range(0, 3, dtype=ag.int8)
    assert got.dtype == ag.int8 and got.tolist() == [0, 1, 2, 3]


def test_polar_of_float16_is_pytorchs_missing_kernel():
    half = ag.ones(2, dtype=ag.float16)
    with pytest.raises(NotImplementedError, match="\"polar_cpu\" not implemented for 'Half'"):
        ag.polar(half, half)


def test_asarray_copy_false_refuses_data_it_would_copy():
    for data in (1.5, [1, 2], (True,), 2 + 1j):
        with pytest.raises(ValueError, match="can't alias arbitrary sequence into a tensor."):
            ag.asarray(data, copy=False)
    with pytest.raises(RuntimeError, match="can't alias NumPy scalars. Either remove copy=False"):
        ag.asarray(np.float64(2.0), copy=False)
    array = np.arange(4.0)[::2]
    shared = ag.asarray(array, copy=False)
    array[1] = 7.0
    assert shared.tolist() == [0.0, 7.0]
    assert ag.asarray([1, 2]).tolist() == [1, 2] and ag.asarray(np.float64(2.0)).item() == 2.0


def test_asarray_copy_keeps_a_numpy_arrays_layout():
    array = np.arange(6.0).reshape(2, 3).T
    copied = ag.asarray(array, copy=True)
    assert copied.stride() == (1, 3) and copied.tolist() == array.tolist()
    array[0, 0] = 9.0
    assert copied[0, 0].item() == 0.0


def test_empty_strided_refuses_a_negative_stride_that_would_reach_before_its_storage():
    for size, stride in (((2,), (-1,)), ((2, 3), (1, -3)), ((2, 3), (-2, 1))):
        with pytest.raises(RuntimeError, match=r"Storage size calculation overflowed with sizes=\["):
            ag.empty_strided(size, stride)
    t = ag.empty_strided((2, 3), (1, 2))  # overlapping-free, column-major
    assert t.stride() == (1, 2) and t.shape == (2, 3)
    assert ag.empty_strided((0, 2), (-1, 1)).shape == (0, 2)


# -- cuda ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("fill", "dtype", "name"), [
    (lambda t: t.fill_(1e10), ag.float16, "c10::Half"),
    (lambda t: t.fill_(70000), ag.float16, "c10::Half"),
    (lambda t: t.masked_fill_(ag.tensor([True, False]), -1e300), ag.float32, "float"),
    (lambda t: t.clamp(0, 1e300), ag.float32, "float"),
    (lambda t: ag.where(ag.tensor([True, False]), t, 1e300), ag.float32, "float"),
    (lambda t: t.fill_(1e300j), ag.complex64, "c10::complex<float>"),
    (lambda t: ag.nn.init.constant_(t, 1e39), ag.float32, "float"),
])
def test_a_number_beyond_a_floating_dtypes_range_is_refused_where_a_tensor_stores_it(fill, dtype, name):
    t = ag.zeros(2, dtype=dtype)
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type {re.escape(name)} without overflow"):
        fill(t)
    assert t.tolist() == [0, 0]


def test_infinities_nan_and_numbers_that_round_within_range_are_stored():
    t = ag.zeros(3, dtype=ag.float16)
    t[0], t[1], t[2] = math.inf, math.nan, 65504.0  # float16's largest finite value
    assert t[0].item() == math.inf and math.isnan(t[1].item()) and t[2].item() == 65504.0
    with np.errstate(over="ignore"):  # pytest drops actorgrad's filter of numpy's cast warning
        assert (ag.zeros(2, dtype=ag.float16) + 1e10).tolist() == [math.inf, math.inf]  # arithmetic just overflows


@pytest.mark.parametrize("data", [[1, 2**63], [[0], [-(2**63) - 1]], (True, 2**64)])
def test_a_list_of_ints_past_int64s_range_is_refused_not_read_as_floats(data):
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        ag.tensor(data)
    assert ag.tensor([1, 2**63 - 1]).dtype == ag.int64 and ag.tensor([1.5, 2**63]).dtype == ag.float32


@pytest.mark.gpu
def test_on_cuda_special_out_and_the_log_ndtr_slope_are_the_cpus(cupy):
    points = [-1e4, -30.0, -2.0, 0.5, 8.0]
    for where in ("cuda:0", "cpu"):
        out = ag.empty(0, dtype=ag.float64, device=where)
        assert ag.special.erf(ag.tensor(points, device=where), out=out) is out
        assert out.device.type == where[:4]
        np.testing.assert_allclose(out.cpu().numpy(), [math.erf(v) for v in points], rtol=1e-6)
    grads = []
    for where in ("cuda:0", "cpu"):
        x = ag.tensor(points, dtype=ag.float64, device=where, requires_grad=True)
        ag.special.log_ndtr(x).sum().backward()
        grads.append(x.grad.cpu().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-13)
    got = ag.special.zeta(ag.tensor([1.5], dtype=ag.float64, device="cuda:0"), ag.tensor([-3.0], device="cuda:0"))
    assert got.cpu().item() == INF
