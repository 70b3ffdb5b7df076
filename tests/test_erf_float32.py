"""The float32 kernels of erf, erfc and the normal cdf (exact gelu and its gradient) against float64 references:
Cody's float64 erf/erfc and Python's math.erf, in ulps of the float32 result, over a dense sample of every
binade (subnormals to the largest float) and both signs; special values; results that stay float32; float64
inputs still on Cody's kernels; and the same bounds on cuda:0."""

from __future__ import annotations

import math

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.devices import erf as float64_kernels
from actorgrad.devices import erf_float32 as kernels


def _sample() -> np.ndarray:
    """Every 4099th positive float32 (all binades, the subnormals included), a fine grid over [0, 11] where the
    functions change, the ranges' edges from both sides, the largest float and inf; both signs."""
    spread = np.arange(0, 0x7F800000, 4099, dtype=np.uint32).view(np.float32)
    edges = np.float32([kernels.ERFC_NEAR, kernels.ERF_NEAR, kernels.CDF_NEAR, kernels.CLAMP, 10.05, 13.2])
    around = np.concatenate([np.nextafter(edges, np.float32(0)), edges, np.nextafter(edges, np.float32(20))])
    positive = np.concatenate([spread, np.linspace(0, 11, 200_001, dtype=np.float32), around,
                               np.float32([np.finfo(np.float32).max, np.inf])])
    return np.concatenate([positive, -positive])


X = _sample()
X64 = X.astype(np.float64)
FINITE = np.isfinite(X)


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of the float32 spacing at `want` (float64): 2**-149 among the subnormals."""
    _, exponent = np.frexp(np.abs(want))
    return np.abs(got.astype(np.float64) - want) / np.ldexp(1.0, np.maximum(exponent, -125) - 24)


def _normal_cdf(x64: np.ndarray) -> np.ndarray:
    return float64_kernels.erfc(np, -x64 / math.sqrt(2)) / 2


def _worst(err: np.ndarray, x: np.ndarray) -> str:
    return f"{err.max():.3g} at x = {x[err.argmax()]!r}"


def test_erf_is_within_1_5_ulp_of_float64_erf_everywhere():
    got = kernels.erf(np, X)
    assert got.dtype == np.float32
    err = ulps(got, float64_kernels.erf(np, X64))
    assert err.max() <= 1.5, _worst(err, X)


def test_erfc_keeps_its_relative_accuracy_into_the_subnormals():
    got = kernels.erfc(np, X)
    want = float64_kernels.erfc(np, X64)
    err = ulps(got, want)
    assert err.max() <= 1.5, _worst(err, X)  # below 2**-126 an ulp is the least subnormal
    assert np.all(got[X >= 10.06] == 0) and got[X == np.float32(10.05)][0] > 0  # underflows where float32 does
    assert np.all(got[X <= -4] == 2)


def test_erf_and_erfc_agree_with_math_erf():
    x = X[FINITE][::23]
    want_erf = np.array([math.erf(v) for v in x.tolist()])
    want_erfc = np.array([math.erfc(v) for v in x.tolist()])
    assert ulps(kernels.erf(np, x), want_erf).max() <= 1.5
    assert ulps(kernels.erfc(np, x), want_erfc).max() <= 1.5


def test_special_values_zero_signs_infinities_nan_and_subnormals():
    x = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40])
    erf, erfc = kernels.erf(np, x), kernels.erfc(np, x)
    np.testing.assert_array_equal(erf[:5], [0.0, -0.0, 1.0, -1.0, np.nan])
    assert not np.signbit(erf[0]) and np.signbit(erf[1])
    np.testing.assert_array_equal(erfc[:5], [1.0, 1.0, 0.0, 2.0, np.nan])
    assert ulps(erf[5:], 2 / math.sqrt(math.pi) * x[5:].astype(np.float64)).max() <= 1  # in least subnormals
    np.testing.assert_array_equal(erfc[5:], [1.0, 1.0, 1.0])
    cdf, pdf = kernels.normal_cdf_and_pdf(np, x)
    np.testing.assert_array_equal(cdf[:5], [0.5, 0.5, 1.0, 0.0, np.nan])
    np.testing.assert_array_equal(pdf[2:5], [0.0, 0.0, np.nan])


def test_gelu_float32_matches_x_times_the_normal_cdf():
    """Within 4 ulp for |x| <= 1; further out the rounding of x**2 grows in exp(-x**2 / 2), so the left tail keeps
    a relative error of about x**2 / 2 ulp (PyTorch's float32 gelu loses all of it below -5)."""
    x = X64[FINITE]
    got = F.gelu(ag.tensor(X[FINITE])).numpy()
    err = ulps(got, x * _normal_cdf(x))
    assert err[np.abs(x) <= 1].max() <= 4, _worst(err[np.abs(x) <= 1], x[np.abs(x) <= 1])
    assert (err - x * x / 2)[np.abs(x) > 1].max() <= 8, _worst((err - x * x / 2)[np.abs(x) > 1], x[np.abs(x) > 1])


def test_gelu_float32_gradient_matches_cdf_plus_x_times_pdf():
    x = X[FINITE & (np.abs(X) < 30)]
    leaf = ag.tensor(x, requires_grad=True)
    (got,) = ag.autograd.grad(F.gelu(leaf).sum(), leaf)
    assert got.dtype == ag.float32
    x64 = x.astype(np.float64)
    want = _normal_cdf(x64) + x64 * np.exp(-x64 * x64 / 2) / math.sqrt(2 * math.pi)
    assert np.abs(got.numpy() - want).max() <= 2e-7
    left = x64 < -1  # where the gradient is tiny: its relative error
    err = ulps(got.numpy(), want)[left] - x64[left] ** 2 / 2
    assert err.max() <= 10, _worst(err, x64[left])


def test_gelu_float32_second_derivative_through_the_recorded_formula():
    x = ag.tensor(np.float32([-3.0, -0.5, 0.0, 0.25, 2.0]), requires_grad=True)
    (first,) = ag.autograd.grad(F.gelu(x).sum(), x, create_graph=True)
    (second,) = ag.autograd.grad(first.sum(), x)
    assert first.dtype == second.dtype == ag.float32
    x64 = x.detach().numpy().astype(np.float64)
    pdf = np.exp(-x64 * x64 / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(second.numpy(), pdf * (2 - x64 * x64), rtol=1e-6, atol=1e-7)


def test_results_stay_float32_for_every_shape():
    square = ag.tensor(np.linspace(-4, 4, 12, dtype=np.float32).reshape(3, 4), requires_grad=True)
    cases = {
        "erf": square.erf(), "erfc": ag.erfc(square), "gelu": F.gelu(square), "ndtr": ag.special.ndtr(square),
        "transposed erf": ag.erf(square.T), "0-d erf": ag.erf(square[1, 2]), "0-d gelu": F.gelu(square[0, 0]),
    }
    for name, out in cases.items():
        assert out.dtype == ag.float32, name
        (grad,) = ag.autograd.grad(out.sum(), square)
        assert grad.dtype == ag.float32, name
    np.testing.assert_array_equal(cases["transposed erf"].detach().numpy(), cases["erf"].detach().numpy().T)
    assert cases["0-d erf"].shape == () and cases["0-d erf"].item() == cases["erf"][1, 2].item()


def test_float64_and_float16_still_use_codys_kernel():
    x = X64[FINITE & (np.abs(X64) < 8)][::50]
    np.testing.assert_array_equal(ag.erf(ag.tensor(x)).numpy(), float64_kernels.erf(np, x))
    np.testing.assert_array_equal(ag.erfc(ag.tensor(x)).numpy(), float64_kernels.erfc(np, x))
    want = 0.5 * x * (1 + float64_kernels.erf(np, x * (1 / math.sqrt(2))))
    np.testing.assert_array_equal(F.gelu(ag.tensor(x)).numpy(), want)
    half = x.astype(np.float16)
    np.testing.assert_array_equal(ag.erf(ag.tensor(half)).numpy(), float64_kernels.erf(np, half).astype(np.float16))


class _FlushingArray(np.ndarray):
    """float32 arithmetic as CuPy's kernels do it (compiled with -ftz=true): a subnormal operand reads as 0 and a
    subnormal result is written as 0."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [_flushed(i.view(np.ndarray)) if isinstance(i, np.ndarray) else i for i in inputs]
        outs = [o.view(np.ndarray) for o in kwargs.get("out", ())]
        if outs:
            kwargs["out"] = tuple(outs)
        result = getattr(ufunc, method)(*inputs, **kwargs)
        for array in outs or [result]:
            array[...] = _flushed(array)
        return result.view(_FlushingArray) if isinstance(result, np.ndarray) else result


def _flushed(a: np.ndarray) -> np.ndarray:
    tiny = np.finfo(np.float32).tiny
    return np.where(np.abs(a) < tiny, np.zeros((), a.dtype), a) if a.dtype == np.float32 else a


class _NumpyElsewhere:
    """numpy under another name, as the kernels see CuPy."""

    def __getattr__(self, name: str):
        return getattr(np, name)


def test_erf_of_tiny_normals_keeps_its_bound_where_subnormals_flush_to_zero():
    x = np.float32([1.2e-38, -2e-38, 5e-38, 9e-38, -1e-37, 3e-30, 0.3, -0.9])
    got = kernels.erf(_NumpyElsewhere(), x.view(_FlushingArray)).view(np.ndarray)
    assert ulps(got, float64_kernels.erf(np, x.astype(np.float64))).max() <= 1.25
    # the scaled form changes no bit of numpy's results where numpy's x Q(x**2) is a normal float (below, that
    # subnormal rounds coarser than the scaled one)
    near = X[(np.abs(X) < kernels.ERF_NEAR) & (np.abs(X) >= 1e-37)]
    np.testing.assert_array_equal(kernels.erf(_NumpyElsewhere(), near), kernels.erf(np, near))


def test_float64_gradients_pass_gradcheck():
    x = ag.tensor([-2.3, -0.7, 0.1, 0.9, 2.6], dtype=ag.float64, requires_grad=True)
    for fn in (F.gelu, ag.erf, ag.erfc):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


@pytest.mark.gpu
def test_float32_kernels_on_cuda_keep_their_bounds(cupy):
    x = X[FINITE & (np.abs(X) < 30)][::7]
    x64 = x.astype(np.float64)
    leaf = ag.tensor(x, device="cuda:0", requires_grad=True)
    erf, erfc, gelu = ag.erf(leaf), ag.erfc(leaf), F.gelu(leaf)
    (grad,) = ag.autograd.grad(gelu.sum(), leaf)
    for out in (erf, erfc, gelu, grad):
        assert out.device == ag.device("cuda:0") and out.dtype == ag.float32
    # CuPy compiles its kernels with -ftz=true: a float32 subnormal reads and writes as 0, so the ulp bounds hold
    # between normal floats, and elsewhere a result is off by less than twice the smallest normal (erf's slope
    # at 0 is 1.13)
    tiny = np.finfo(np.float32).tiny
    normal_in = (np.abs(x64) >= tiny) | (x64 == 0)
    near = np.abs(x64) <= 1
    # the device's exp may round differently from numpy's: half an ulp more
    everywhere = np.ones_like(near)
    for out, want, bound, where in [(erf, float64_kernels.erf(np, x64), 2, everywhere),
                                    (erfc, float64_kernels.erfc(np, x64), 2, everywhere),
                                    (gelu, x64 * _normal_cdf(x64), 4.5, near)]:
        got = out.detach().cpu().numpy()
        normal = normal_in & ((np.abs(want) >= tiny) | (want == 0))
        assert ulps(got, want)[normal & where].max() <= bound
        assert np.abs(got - want)[~normal].max() < 2 * tiny
    want = _normal_cdf(x64) + x64 * np.exp(-x64 * x64 / 2) / math.sqrt(2 * math.pi)
    assert np.abs(grad.cpu().numpy() - want).max() <= 2.5e-7
