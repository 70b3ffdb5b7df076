"""The vectorised erf/erfc kernel against Python's math.erf/math.erfc: every range of Cody's approximation, the
points where the ranges meet, the tails, and special values."""

from __future__ import annotations

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.devices import erf as kernel


def _points() -> np.ndarray:
    rng = np.random.default_rng(2024)
    edges = [kernel.NEAR, kernel.TAIL]
    around_edges = [np.nextafter(e, d) for e in edges for d in (0.0, 10.0)] + edges
    magnitudes = np.concatenate([
        np.linspace(0, 7, 7001),  # all three ranges, densely
        np.logspace(-300, 1.5, 2000),  # tiny arguments up to the far tail (31.6)
        rng.uniform(0, 6, 5000),
        around_edges,
        [5.9, 6.0, 26.5, 27.0, 30.0, 100.0, 1e300],
    ])
    return np.concatenate([magnitudes, -magnitudes])


POINTS = _points()


def _relative_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return np.abs(got - want) / np.maximum(np.abs(want), np.finfo(np.float64).tiny)


def test_erf_matches_math_erf_to_a_few_ulps():
    want = np.array([math.erf(v) for v in POINTS])
    err = _relative_error(kernel.erf(np, POINTS), want)
    assert err.max() < 1e-15, f"worst at x = {POINTS[err.argmax()]!r}: relative error {err.max():.3g}"


def test_erfc_matches_math_erfc_including_the_tails():
    want = np.array([math.erfc(v) for v in POINTS])
    got = kernel.erfc(np, POINTS)
    err = _relative_error(got, want)
    assert err.max() < 2e-15, f"worst at x = {POINTS[err.argmax()]!r}: relative error {err.max():.3g}"
    assert got[POINTS > 27.3].max() == 0.0  # beyond where erfc underflows


def test_special_values():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0])
    np.testing.assert_array_equal(kernel.erf(np, x), [1.0, -1.0, np.nan, 0.0, -0.0])
    assert np.signbit(kernel.erf(np, x))[-1]  # erf(-0.0) is -0.0, as math.erf gives
    np.testing.assert_array_equal(kernel.erfc(np, x), [0.0, 2.0, np.nan, 1.0, 1.0])


def test_zero_dim_and_float32_inputs():
    assert kernel.erf(np, np.array(0.5)).shape == ()
    assert float(kernel.erf(np, np.array(0.5))) == pytest.approx(math.erf(0.5), rel=1e-16)
    out = ag.erf(ag.tensor([0.25, -3.0]))
    assert out.dtype == ag.float32
    np.testing.assert_array_equal(out.numpy(), np.array([math.erf(0.25), math.erf(-3.0)], dtype=np.float32))
    assert ag.erfc(ag.tensor([1, 2])).dtype == ag.float32  # integer inputs give the default float dtype


def test_erf_method_and_function_agree_with_the_kernel():
    x = ag.tensor(POINTS[::97], dtype=ag.float64)
    np.testing.assert_array_equal(x.erf().numpy(), kernel.erf(np, POINTS[::97]))
    np.testing.assert_array_equal(ag.erfc(x).numpy(), kernel.erfc(np, POINTS[::97]))
