"""torch.special's orthogonal polynomials (Chebyshev T, U, V, W and their shifted forms, Hermite H and He, Laguerre
L, Legendre P): values against exact rational arithmetic (their recurrences and explicit sums over Fractions, x
being a binary fraction), PyTorch's conventions (truncated and negative degrees, the ends of the interval,
Hermite's degree cap, NaN after an overflow), dtypes and numbers, broadcasting, no gradient, the errors, and cuda
against the cpu."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import actorgrad as ag

S = ag.special
INF, NAN = math.inf, math.nan


def f64(values, requires_grad=False):
    return ag.tensor(values, dtype=ag.float64, requires_grad=requires_grad)


# -- exact references ----------------------------------------------------------------------------------------------
STEPS = {  # P_m from m, x, P_{m-1}, P_{m-2}
    "h": lambda m, x, q, p: 2 * x * q - 2 * (m - 1) * p,
    "he": lambda m, x, q, p: x * q - (m - 1) * p,
    "l": lambda m, x, q, p: ((2 * m - 1 - x) * q - (m - 1) * p) / m,
    "p": lambda m, x, q, p: ((2 * m - 1) * x * q - (m - 1) * p) / m,
}
CHEBYSHEV_STEP = lambda m, x, q, p: 2 * x * q - p  # noqa: E731


def recurrence(family: str, x: Fraction, n: int) -> list[Fraction]:
    """P_0(x) ... P_n(x) exactly, by the families' three-term recurrences (DLMF 18.9.1, 18.9.2)."""
    first = {"t": x, "u": 2 * x, "v": 2 * x - 1, "w": 2 * x + 1, "h": 2 * x, "he": x, "l": 1 - x, "p": x}[family]
    step = STEPS.get(family, CHEBYSHEV_STEP)
    values = [Fraction(1), first]
    for m in range(2, n + 1):
        values.append(step(m, x, values[-1], values[-2]))
    return values[: n + 1]


def explicit(family: str, x: Fraction, n: int) -> Fraction:
    """P_n(x) by its explicit sum (DLMF 18.5.11, 18.5.12, 18.5.13 and Mason & Handscomb's V = U_n - U_{n-1},
    W = U_n + U_{n-1})."""
    c = math.comb
    if family == "t":
        return sum(c(n, 2 * k) * (x * x - 1) ** k * x ** (n - 2 * k) for k in range(n // 2 + 1))
    if family in "uvw":
        def u(m):
            return sum(c(m + 1, 2 * k + 1) * (x * x - 1) ** k * x ** (m - 2 * k) for k in range(m // 2 + 1))
        previous = u(n - 1) if n else 0
        return {"u": u(n), "v": u(n) - previous, "w": u(n) + previous}[family]
    if family in ("h", "he"):
        z, base = (2 * x, 1) if family == "h" else (x, 2)
        return sum(Fraction((-1) ** m * math.factorial(n), math.factorial(m) * math.factorial(n - 2 * m) * base ** m)
                   * z ** (n - 2 * m) for m in range(n // 2 + 1))
    if family == "l":
        return sum(Fraction((-1) ** k * c(n, k), math.factorial(k)) * x ** k for k in range(n + 1))
    return sum(c(n, k) ** 2 * (x - 1) ** (n - k) * (x + 1) ** k for k in range(n + 1)) / 2 ** n


# name: (family, shifted)
POLYNOMIALS = {
    "chebyshev_polynomial_t": ("t", False), "chebyshev_polynomial_u": ("u", False),
    "chebyshev_polynomial_v": ("v", False), "chebyshev_polynomial_w": ("w", False),
    "shifted_chebyshev_polynomial_t": ("t", True), "shifted_chebyshev_polynomial_u": ("u", True),
    "shifted_chebyshev_polynomial_v": ("v", True), "shifted_chebyshev_polynomial_w": ("w", True),
    "hermite_polynomial_h": ("h", False), "hermite_polynomial_he": ("he", False),
    "laguerre_polynomial_l": ("l", False), "legendre_polynomial_p": ("p", False),
}
X = [-3.7, -1.5, -0.999, -0.73, -0.2, 0.0, 0.1, 0.45, 0.5, 0.9, 0.99999, 1.2, 2.5, 7.0]
N = [0, 1, 2, 3, 5, 6, 7, 8, 9, 12, 25, 60]


def argument(x: float, shifted: bool) -> Fraction:
    """The unshifted polynomial's argument: 2x - 1 for a shifted one (exact, x being a binary fraction)."""
    return 2 * Fraction(x) - 1 if shifted else Fraction(x)


@pytest.mark.parametrize("name", list(POLYNOMIALS))
def test_values_match_their_exact_recurrences(name):
    family, shifted = POLYNOMIALS[name]
    xs, ns = np.meshgrid(X, N)
    got = getattr(S, name)(f64(xs), f64(ns)).numpy()
    for x, n, value in zip(xs.ravel(), ns.ravel(), got.ravel()):
        values = recurrence(family, argument(x, shifted), int(n))
        want = float(values[-1])
        # the recurrence's rounding grows with the degree and with the largest value on the way
        size = max(abs(float(v)) for v in values)
        assert abs(value - want) <= 2e-16 * (n + 1) ** 1.5 * size, (x, n, value, want)


@pytest.mark.parametrize("name", list(POLYNOMIALS))
def test_values_match_their_explicit_sums(name):
    family, shifted = POLYNOMIALS[name]
    for n in (0, 1, 4, 9, 10):
        x = [-1.25, -0.375, 0.0625, 0.5, 0.8125, 3.0]
        want = [float(explicit(family, argument(v, shifted), n)) for v in x]
        got = getattr(S, name)(f64(x), n).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * max(1.0, max(abs(w) for w in want)))


def test_chebyshev_trigonometric_forms_at_high_degree():
    # past degree 6 or 8 PyTorch takes T_n(cos t) = cos(n t), U_n = sin((n+1) t) / sin t, ...: against the exact
    # recurrence; cos(n t) carries n times the rounding of t
    for name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                 "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_w"):
        family, shifted = POLYNOMIALS[name]
        for n in (10, 200, 1000):
            x = [0.03125, -0.625, 0.984375] if not shifted else [0.125, 0.75]  # short fractions keep them fast
            got = getattr(S, name)(f64(x), n).numpy()
            bound = {"t": 1, "u": n + 1}.get(family, 2 * n + 1)  # the largest |P_n| on [-1, 1]
            for v, value in zip(x, got):
                want = float(recurrence(family, argument(v, shifted), n)[-1])
                assert abs(value - want) <= 8e-16 * n * bound, (name, v, n, value, want)


def test_the_ends_of_the_interval():
    n = f64([0, 1, 2, 3, 4, 9, 10, 11])
    k = n.numpy()
    sign = (-1.0) ** k
    cases = [  # P_n(1), P_n(-1)
        ("chebyshev_polynomial_t", 1 + 0 * k, sign), ("chebyshev_polynomial_u", k + 1, sign * (k + 1)),
        ("chebyshev_polynomial_v", 1 + 0 * k, sign * (2 * k + 1)), ("chebyshev_polynomial_w", 2 * k + 1, sign),
        ("legendre_polynomial_p", 1 + 0 * k, sign),
    ]
    for name, at_one, at_minus_one in cases:
        np.testing.assert_array_equal(getattr(S, name)(1.0, n).numpy(), at_one)
        np.testing.assert_array_equal(getattr(S, name)(-1.0, n).numpy(), at_minus_one)
        if name.startswith("chebyshev"):  # the shifted forms, on [0, 1]
            shifted = getattr(S, "shifted_" + name)
            np.testing.assert_array_equal(shifted(1.0, n).numpy(), at_one)
            np.testing.assert_array_equal(shifted(0.0, n).numpy(), at_minus_one)
    np.testing.assert_array_equal(S.laguerre_polynomial_l(0.0, n).numpy(), np.ones(8))
    np.testing.assert_array_equal(S.laguerre_polynomial_l(-0.0, n).numpy(), np.ones(8))


@pytest.mark.parametrize("name", list(POLYNOMIALS))
def test_degrees_as_pytorch_takes_them(name):
    op = getattr(S, name)
    x = f64([-2.5, -1.0, -0.3, 0.0, 0.4, 1.0, 1.7])  # the ends too: a negative degree goes before them
    # truncated towards 0 (-0.5 is degree 0); negative, NaN, infinite and past-int64 degrees give 0
    assert np.array_equal(op(x, 2.9).numpy(), op(x, 2).numpy())
    assert np.array_equal(op(x, -0.5).numpy(), np.ones(7))
    for n in (-1, -7.5, NAN, INF, -INF, 1e19, -1e19):
        assert np.array_equal(op(x, n).numpy(), np.zeros(7)), n
    assert np.array_equal(op(f64([NAN]), -2).numpy(), [0.0])
    # a NaN x gives NaN from degree 1 (PyTorch's values there are those of uninitialized memory, for most kinds)
    assert np.isnan(op(f64([NAN] * 3), f64([1, 2, 9])).numpy()).all()


def test_hermite_degree_cap_and_overflow():
    # PyTorch's: NaN past degree 512 in float64, 128 in float32, without running the recurrence that far
    for op in (S.hermite_polynomial_h, S.hermite_polynomial_he):
        assert np.isnan(op(f64([0.001, 2.0]), f64([513, 1e15])).numpy()).all()
        h32 = op(ag.tensor([1e-3]), ag.tensor([129.0, 1e15])).numpy()
        assert np.isnan(h32).all() and h32.dtype == np.float32
    # the recurrence stops at its first NaN: an overflow to inf, then inf - inf
    assert np.isnan(S.chebyshev_polynomial_t(f64([3.0, -3.0]), 2000).numpy()).all()
    assert np.isnan(S.hermite_polynomial_h(ag.tensor([0.5]), 127).numpy()).all()
    assert np.isnan(S.legendre_polynomial_p(f64([INF, -INF]), 3).numpy()).all()


@pytest.mark.parametrize("name", list(POLYNOMIALS))
def test_dtypes_numbers_and_broadcasting(name):
    op = getattr(S, name)
    ints = ag.tensor([0, 1, 2, 3])
    assert op(ints, 3).dtype == ag.float32
    assert op(ints, ints).dtype == ag.float32
    assert op(2.0, ints).dtype == ag.float32
    assert op(True, ints).dtype == ag.float32
    assert op(2, f64([1.0])).dtype == ag.float64
    assert op(ag.tensor([0.5]), f64([3.0])).dtype == ag.float64
    assert op(ag.tensor([0.5]), f64(3.0)).dtype == ag.float32  # a zero-dim tensor does not promote
    # float32 computes in float32: within its rounding of the float64 values
    x = np.array([-0.9, -0.3, 0.2, 0.6, 0.95])
    got = op(ag.tensor(x.astype(np.float32)), ag.tensor([5, 9, 12])[:, None]).numpy()
    want = op(f64(x.astype(np.float32).astype(np.float64)), f64([5, 9, 12])[:, None]).numpy()
    assert got.dtype == np.float32 and got.shape == (3, 5)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * np.abs(want).max())
    # numbers on either side, broadcasting
    n = f64([[0], [1], [4]])
    np.testing.assert_array_equal(op(0.3, n).numpy(), op(f64([0.3]), n).numpy())
    np.testing.assert_array_equal(op(f64([0.3, 0.7]), 4).numpy(), op(f64([0.3, 0.7]), f64([4.0, 4.0])).numpy())
    assert op(f64([0.3, 0.7]), n).shape == (3, 2)
    for shape in ((), (0,), (2, 0)):
        assert op(ag.ones(shape, dtype=ag.float64), 3).shape == shape


@pytest.mark.parametrize("name", list(POLYNOMIALS))
def test_no_gradient_and_pytorchs_errors(name):
    op = getattr(S, name)
    x, n = f64([0.5, 1.5], requires_grad=True), f64([2.0, 3.0], requires_grad=True)
    out = op(x, n)
    assert out.grad_fn is None and not out.requires_grad
    expected = (f"special_{name}() received an invalid combination of arguments - got (int, float), but expected one "
                "of:\n * (Tensor x, Tensor n, *, Tensor out = None)\n * (Number x, Tensor n, *, Tensor out = None)\n"
                " * (Tensor x, Number n, *, Tensor out = None)\n")
    with pytest.raises(TypeError) as raised:
        op(2, 3.0)
    assert str(raised.value) == expected
    with pytest.raises(TypeError, match=r"got \(Tensor, list\)"):
        op(x, [1])
    with pytest.raises(NotImplementedError, match=f"^\"{name}_cpu\" not implemented for 'Half'$"):
        op(ag.tensor([0.5], dtype=ag.float16), 2)
    with pytest.raises(RuntimeError, match="^The size of tensor a \\(2\\) must match the size of tensor b \\(3\\) at "
                                           "non-singleton dimension 0$"):
        op(x, f64([1.0, 2.0, 3.0]))


# -- cuda ----------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_on_cuda_the_values_are_the_cpus(cupy):
    x = [-2.5, -1.0, -0.3, 0.0, 0.4, 1.0, 1.7, NAN]
    n = [[-1], [0], [1], [3], [9], [30], [600]]
    for name in POLYNOMIALS:
        op = getattr(S, name)
        exact = op(ag.tensor(x, dtype=ag.float64), ag.tensor(n, dtype=ag.float64)).numpy()
        for dtype in (ag.float64, ag.float32):
            got = op(ag.tensor(x, dtype=dtype, device="cuda:0"), ag.tensor(n, dtype=dtype, device="cuda:0"))
            want = op(ag.tensor(x, dtype=dtype), ag.tensor(n, dtype=dtype)).numpy()
            assert got.device.type == "cuda" and got.dtype == dtype
            got = got.cpu().numpy()
            if dtype == ag.float64:
                np.testing.assert_allclose(got, want, rtol=1e-12)
                continue
            # float32's 600-step recurrences drift from float64's values (2e-4 of chebyshev_t's at 0.4) and round
            # differently on a GPU (fused multiply-adds): each value as close to float64's as the cpu's, at most
            # twice as far
            finite = np.isfinite(want)
            np.testing.assert_array_equal(got[~finite], want[~finite])
            drift = np.abs(want - exact)[finite]
            assert (np.abs(got - exact)[finite] <= 1e-5 * np.abs(exact[finite]) + 2 * drift).all(), name
        got = op(ag.tensor(x, device="cuda:0"), 3)
        assert got.device.type == "cuda"
        np.testing.assert_array_equal(got.cpu().numpy(), op(ag.tensor(x), 3).numpy())
