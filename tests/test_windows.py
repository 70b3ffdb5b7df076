"""The window functions: closed forms at known points, periodic against symmetric, dtypes, keywords and errors."""

import math

import numpy as np
import pytest

import actorgrad as ag

WINDOWS = {
    "hann_window": ag.hann_window, "hamming_window": ag.hamming_window, "bartlett_window": ag.bartlett_window,
    "blackman_window": ag.blackman_window, "kaiser_window": ag.kaiser_window,
}


def _i0(x: float) -> float:
    """The modified Bessel function of order 0 by its power series, sum ((x / 2)^k / k!)^2."""
    term, total, k = 1.0, 1.0, 0
    while term > 1e-18 * total:
        k += 1
        term *= (x / 2 / k) ** 2
        total += term
    return total


def test_symmetric_windows_are_their_formulas():
    n = 7
    points = range(n)
    expected = {
        "hann_window": [math.sin(math.pi * k / (n - 1)) ** 2 for k in points],
        "hamming_window": [0.54 - 0.46 * math.cos(2 * math.pi * k / (n - 1)) for k in points],
        "bartlett_window": [1 - abs(2 * k / (n - 1) - 1) for k in points],
        "blackman_window": [
            0.42 - 0.5 * math.cos(2 * math.pi * k / (n - 1)) + 0.08 * math.cos(4 * math.pi * k / (n - 1))
            for k in points
        ],
        "kaiser_window": [_i0(12 * math.sqrt(1 - (2 * k / (n - 1) - 1) ** 2)) / _i0(12) for k in points],
    }
    for name, f in WINDOWS.items():
        np.testing.assert_allclose(f(n, periodic=False, dtype=ag.float64).numpy(), expected[name], rtol=1e-13,
                                   atol=1e-15, err_msg=name)


def test_exact_points():
    assert ag.hann_window(4).tolist() == [0.0, 0.5, 1.0, 0.5]
    assert ag.bartlett_window(5, periodic=False).tolist() == [0.0, 0.5, 1.0, 0.5, 0.0]
    assert ag.hamming_window(4, True, 1.0, 0.0).tolist() == [1.0] * 4
    assert ag.kaiser_window(6, beta=0.0).tolist() == [1.0] * 6
    np.testing.assert_allclose(ag.kaiser_window(5, False, 3.0, dtype=ag.float64).numpy()[[0, 2]],
                               [1 / _i0(3.0), 1.0], rtol=1e-14)


@pytest.mark.parametrize("name", list(WINDOWS))
def test_periodic_is_the_longer_symmetric_window_cut(name):
    f = WINDOWS[name]
    for n in (2, 5, 8):
        np.testing.assert_array_equal(f(n, dtype=ag.float64).numpy(), f(n + 1, False, dtype=ag.float64).numpy()[:n])


@pytest.mark.parametrize("name", list(WINDOWS))
def test_short_windows_dtypes_and_keywords(name):
    f = WINDOWS[name]
    assert f(0).shape == (0,) and f(1).tolist() == [1.0] and f(1, False).tolist() == [1.0]
    assert f(5).dtype == ag.float32 and f(5, dtype=ag.float16).dtype == ag.float16
    leaf = f(3, dtype=ag.float64, requires_grad=True)
    assert leaf.requires_grad and leaf.is_leaf and leaf.dtype == ag.float64
    ag.set_default_dtype(ag.float64)
    try:
        assert f(3).dtype == ag.float64
    finally:
        ag.set_default_dtype(ag.float32)


@pytest.mark.parametrize("name", list(WINDOWS))
def test_errors_are_pytorchs(name):
    f = WINDOWS[name]
    with pytest.raises(RuntimeError, match=f"{name} requires non-negative window_length, got window_length=-1"):
        f(-1)
    wrong_dtype = rf"{name} expects floating point dtypes, got: TensorOptions\(dtype=long int, device=cpu"
    with pytest.raises(RuntimeError, match=wrong_dtype):
        f(5, dtype=ag.int64)
    for bad in (2.5, True):
        with pytest.raises(TypeError, match=rf"{name}\(\): argument 'window_length' \(position 1\) must be int, not "
                                            f"{type(bad).__name__}"):
            f(bad)


@pytest.mark.gpu
def test_on_cuda_windows_are_the_cpus(cupy):
    for f in WINDOWS.values():
        out = f(6, device="cuda")
        assert out.device.type == "cuda"
        np.testing.assert_array_equal(out.cpu().numpy(), f(6).numpy())
