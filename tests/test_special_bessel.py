"""torch.special's Bessel (bessel_j0/j1/y0/y1, modified_bessel_i0/i1/k0/k1, scaled_modified_bessel_k0/k1,
spherical_bessel_j0), Airy (airy_ai), ndtr, erfcx and sinc: values against references computed here by other means
(the defining power series summed in decimal arithmetic with enough digits to absorb their cancellation, Wronskians,
closed forms, asymptotic expansions), the edges of their domains, dtypes, gradients where PyTorch has them (erfcx,
ndtr, sinc) and none where it has none, the names and their errors, and cuda against the cpu."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.devices import bessel_k

S = ag.special
INF, NAN = math.inf, math.nan
PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798"
             "214808651328230665")
EULER = Decimal("0.5772156649015328606065120900824024310421593359399235988057672348848677267776646709369470632917467495"
                "14631447249807082481")  # 120 digits: K0(80) cancels 70 of them
AI_0 = Decimal("0.355028053887817239260063186004183176397979174199177240583326510300810042450126712957174246054040271"
               "68842044873034949583975829267044616193711")  # 140 digits: the series of Ai(30) cancels 95 of them
AI_PRIME_0 = Decimal("-0.25881940379280679840518356018920396347909113835493458221000181385610277267679028065419640582"
                     "727538431337119321178913338127503595216762601479")


def f64(values, requires_grad=False):
    return ag.tensor(values, dtype=ag.float64, requires_grad=requires_grad)


def assert_same(t, want):
    """Equal, NaNs in the same places, and zeros of the same sign."""
    got = t.detach().numpy()
    np.testing.assert_array_equal(got, want)
    want = np.asarray(want, dtype=got.dtype)
    np.testing.assert_array_equal(np.signbit(got) & (want == 0), np.signbit(want) & (want == 0))


# -- references by other means: the power series in decimal arithmetic --------------------------------------------
def series(x: float, nu: int, weight, sign: int, digits: int) -> Decimal:
    """sum_k sign**k weight(k) (x/2)**(2k + nu) / (k! (k + nu)!), to `digits` digits past its cancellation."""
    half = Decimal(x) / 2
    u = half * half * sign
    term = half ** nu / math.factorial(nu)
    total, k = Decimal(0), 0
    while True:
        step = weight(k) * term
        total += step
        k += 1
        term = term * u / (k * (k + nu))
        if k > 2 and abs(term) * (k + 10) < Decimal(10) ** -digits:
            return total


def harmonic(k: int) -> Decimal:
    return sum((Decimal(1) / j for j in range(1, k + 1)), Decimal(0))


def reference(name: str, x: float) -> float:
    """J0, J1, Y0, Y1 (DLMF 10.2.2, 10.8.1), I0, I1, K0, K1 (10.25.2, 10.31.1, 10.31.2) for x > 0, from their
    power series; psi(k + 1) = H_k - gamma."""
    digits = 30 + int(0.9 * x)  # the terms grow to about e**x / x, and K cancels I's e**x down to e**-x
    with localcontext() as context:
        context.prec = digits + 20
        d = Decimal(x)
        log_half = (d / 2).ln()
        one, psi_sum = (lambda k: 1), (lambda k: harmonic(k) + harmonic(k + 1) - 2 * EULER)
        value = {
            "j0": lambda: series(x, 0, one, -1, digits),
            "j1": lambda: series(x, 1, one, -1, digits),
            "y0": lambda: 2 / PI * ((log_half + EULER) * series(x, 0, one, -1, digits)
                                    - series(x, 0, harmonic, -1, digits)),
            "y1": lambda: -2 / (PI * d) + 2 / PI * log_half * series(x, 1, one, -1, digits)
                          - series(x, 1, psi_sum, -1, digits) / PI,
            "i0": lambda: series(x, 0, one, 1, digits),
            "i1": lambda: series(x, 1, one, 1, digits),
            "k0": lambda: -(log_half + EULER) * series(x, 0, one, 1, digits) + series(x, 0, harmonic, 1, digits),
            "k1": lambda: 1 / d + log_half * series(x, 1, one, 1, digits) - series(x, 1, psi_sum, 1, digits) / 2,
        }[name]()
        return float(value)


def airy_reference(x: float) -> float:
    """Ai(x) = Ai(0) f(x) + Ai'(0) g(x), f = sum_k 3**k (1/3)_k x**3k / (3k)!, g = sum_k 3**k (2/3)_k x**(3k+1) /
    (3k+1)! (DLMF 9.4.1, 9.4.2), in decimal arithmetic past their cancellation (up to e**(4/3 x**1.5)). As
    3**k (1/3)_k = 1 * 4 * ... * (3k - 2), f's terms are the last times x**3 / (3k (3k - 1)); g's times
    x**3 / ((3k + 1) 3k)."""
    digits = 30 + int(0.6 * abs(x) ** 1.5)
    with localcontext() as context:
        context.prec = digits + 20
        d = Decimal(x)
        cube = d * d * d
        totals = []
        for start, first in ((0, Decimal(1)), (1, d)):  # f's terms x**3k / (3k)! ..., g's x**(3k+1) / (3k+1)! ...
            term, total, k = first, Decimal(0), 0
            while True:
                total += term
                k += 1
                term = term * cube / ((3 * k + start) * (3 * k + start - 1))
                if k > 2 and abs(term) < Decimal(10) ** -digits:
                    break
            totals.append(total)
        return float(AI_0 * totals[0] + AI_PRIME_0 * totals[1])


X = [1e-300, 1e-9, 0.001, 0.3, 0.89357696627916, 1.0, 1.9, 2.0, 2.1, 2.404825557695773, 3.5, 7.0, 10.0, 15.5,
     24.9, 25.0, 25.1, 31.0, 47.3, 80.0]


@pytest.mark.parametrize("name, op", [
    ("j0", S.bessel_j0), ("j1", S.bessel_j1), ("y0", S.bessel_y0), ("y1", S.bessel_y1),
    ("i0", S.modified_bessel_i0), ("i1", S.modified_bessel_i1), ("k0", S.modified_bessel_k0),
    ("k1", S.modified_bessel_k1),
])
def test_bessel_functions_match_their_power_series(name, op):
    # every range of the kernels: series, Miller's recurrence, the trapezoidal integral and the asymptotic forms
    xs = [v for v in X if not (name == "y1" and v < 1e-200)]  # Y1(1e-300) overflows
    got = op(f64(xs)).numpy()
    for x, value in zip(xs, got):
        want = reference(name, x)
        # J and Y: absolute accuracy against their amplitude sqrt(2 / (pi x)) (or their value, where larger)
        size = max(abs(want), math.sqrt(2 / (math.pi * x)) if name[0] in "jy" else 0.0)
        assert abs(value - want) <= 4e-15 * size, (x, value, want)
        if abs(want) > 0.05 * size:  # away from the zeros, relative accuracy
            assert value == pytest.approx(want, rel=1e-13)


def test_bessel_functions_far_out_match_their_asymptotic_forms():
    # DLMF 10.18.17-18: J0 + i Y0 = M e**(i theta), M**2 ~ 2/(pi x) (1 - 1/(8 x**2)), theta ~ x - pi/4 - 1/(8x)
    for x in [1e6 + 0.3, 2.5e9, 1e12 + 7.0]:
        j0, y0 = S.bessel_j0(f64(x)).item(), S.bessel_y0(f64(x)).item()
        amplitude = math.sqrt(2 / (math.pi * x) * (1 - 1 / (8 * x * x)))
        assert math.hypot(j0, y0) == pytest.approx(amplitude, rel=1e-15)
        shift = -1 / (8 * x)  # cos(x - pi/4 + shift) from cos(x), sin(x), as x - pi/4 would round
        c, s = (math.cos(x) + math.sin(x)) / math.sqrt(2), (math.sin(x) - math.cos(x)) / math.sqrt(2)
        assert j0 == pytest.approx(amplitude * (c * math.cos(shift) - s * math.sin(shift)), abs=2e-15 * amplitude)
        assert y0 == pytest.approx(amplitude * (s * math.cos(shift) + c * math.sin(shift)), abs=2e-15 * amplitude)
    # K0(x) e**x sqrt(2x / pi) ~ 1 - 1/(8x) + 9/(128 x**2) - 225/(3072 x**3) (DLMF 10.40.2)
    x = np.array([1e4, 1e6, 1e9])
    got = S.scaled_modified_bessel_k0(f64(x)).numpy() * np.sqrt(2 * x / np.pi)
    np.testing.assert_allclose(got, 1 - 1 / (8 * x) + 9 / (128 * x ** 2) - 225 / (3072 * x ** 3), rtol=2e-16)
    assert S.modified_bessel_k0(f64(1e4)).item() == 0.0  # underflows


def test_wronskians():
    # J1 Y0 - J0 Y1 = 2 / (pi x) and I0 K1 + I1 K0 = 1 / x (DLMF 10.5.2, 10.28.2)
    x = np.concatenate([np.linspace(0.05, 60, 500), [1e3 + 0.5, 1e5 + 0.25]])
    t = f64(x)
    j0, j1, y0, y1 = (op(t).numpy() for op in (S.bessel_j0, S.bessel_j1, S.bessel_y0, S.bessel_y1))
    size = np.maximum(np.abs(j1 * y0), np.abs(j0 * y1))
    assert np.all(np.abs((j1 * y0 - j0 * y1) - 2 / (np.pi * x)) <= 2e-15 * (size + 2 / (np.pi * x)))
    x = np.linspace(0.05, 600, 500)
    t = f64(x)
    i0e, i1e = S.i0e(t).numpy(), S.i1e(t).numpy()
    k0e, k1e = S.scaled_modified_bessel_k0(t).numpy(), S.scaled_modified_bessel_k1(t).numpy()
    np.testing.assert_allclose(i0e * k1e + i1e * k0e, 1 / x, rtol=1e-15)


def test_k_of_order_one_half_is_elementary():
    # exp(x) K_1/2(x) = sqrt(pi / (2x)): the trapezoidal integral and the asymptotic expansion both
    x = np.concatenate([np.linspace(0.5, 40, 300), [20.0, 20.000001]])
    np.testing.assert_allclose(bessel_k.scaled_k(np, 0.5, x), np.sqrt(np.pi / (2 * x)), rtol=1e-15)


def test_modified_bessel_i_are_i0_and_i1_without_a_gradient():
    x = f64([-30.0, -2.5, 0.0, 0.7, 12.0, 700.0], requires_grad=True)
    assert_same(S.modified_bessel_i0(x), S.i0(x).detach().numpy())
    assert_same(S.modified_bessel_i1(x), S.i1(x).detach().numpy())


def test_airy_ai_matches_its_power_series():
    x = [-40.0, -25.3, -10.5, -10.0, -9.5, -4.0879494441309706, -2.3, -1e-8, 0.0, 1e-300, 0.5, 1.0, 1.2, 3.0,
         7.5, 19.0, 30.0]
    got = S.airy_ai(f64(x)).numpy()
    for v, value in zip(x, got):
        want = airy_reference(v)
        size = 1 / (math.sqrt(math.pi) * (-v) ** 0.25) if v < -1 else abs(want)
        assert abs(value - want) <= 4e-15 * size, (v, value, want)
    # far right: Ai(x) ~ e**-zeta / (2 sqrt(pi) x**(1/4)) sum_k (-1)**k u_k / zeta**k (DLMF 9.7.5), 6 terms
    u = [1.0, 5 / 72, 385 / 10368, 85085 / 2239488, 37182145 / 644972544, 5391411025 / 46438023168]
    for v in [80.0, 100.0]:
        zeta = 2 / 3 * v ** 1.5
        with localcontext() as context:
            context.prec = 30
            decay = float((-Decimal(2) / 3 * Decimal(v) * Decimal(v).sqrt()).exp() * 10 ** 300)  # e**-zeta, scaled
        series = math.fsum((-1) ** k * c / zeta ** k for k, c in enumerate(u))
        want = decay / (2 * math.sqrt(math.pi) * v ** 0.25) * series
        assert S.airy_ai(f64(v)).item() * 1e300 == pytest.approx(want, rel=2e-15)
    # far left: Ai(-x) ~ (cos(zeta - pi/4) (1 - u_2 / zeta**2) + sin(zeta - pi/4) (u_1 / zeta - u_3 / zeta**3)) /
    # (sqrt(pi) x**(1/4)) (DLMF 9.7.9), the phase reduced in decimal arithmetic
    for v in [1e4 + 0.3, 1e6 + 0.7, 3e9]:
        with localcontext() as context:
            context.prec = 60
            zeta = Decimal(2) / 3 * Decimal(v) * Decimal(v).sqrt()
            phase = float((zeta - PI / 4) % (2 * PI))
        z = 1 / float(zeta)
        want = (math.cos(phase) * (1 - u[2] * z * z) + math.sin(phase) * (u[1] * z - u[3] * z ** 3)) / (
            math.sqrt(math.pi) * v ** 0.25)
        assert S.airy_ai(f64(-v)).item() == pytest.approx(want, abs=2e-15 / v ** 0.25)


def test_spherical_bessel_j0():
    x = np.array([1e-300, 1e-8, 0.01, 0.4999, 0.5, 0.75, 3.0, math.pi, 40.0, 1e10])
    want = [1.0, 1.0 - 1e-16 / 6, 1 - 1e-4 / 6 + 1e-8 / 120 - 1e-12 / 5040] + [math.sin(v) / v for v in x[3:]]
    got = S.spherical_bessel_j0(f64(np.concatenate([x, -x]))).numpy()
    np.testing.assert_allclose(got, want + want, rtol=3e-16, atol=1e-32)


def test_edges():
    x = f64([0.0, -0.0, INF, -INF, NAN, -1.0])
    # PyTorch gives NaN at +-inf for J, Y and Ai (its Cephes kernels); their limits are 0
    assert_same(S.bessel_j0(x), [1.0, 1.0, 0.0, 0.0, NAN, S.bessel_j0(f64(1.0)).item()])
    assert_same(S.bessel_j1(x), [0.0, -0.0, 0.0, -0.0, NAN, -S.bessel_j1(f64(1.0)).item()])
    assert_same(S.bessel_y0(x), [-INF, -INF, 0.0, NAN, NAN, NAN])
    assert_same(S.bessel_y1(x), [-INF, -INF, 0.0, NAN, NAN, NAN])
    assert_same(S.modified_bessel_k0(x), [INF, INF, 0.0, NAN, NAN, NAN])
    assert_same(S.scaled_modified_bessel_k1(x), [INF, INF, 0.0, NAN, NAN, NAN])
    assert_same(S.spherical_bessel_j0(x), [1.0, 1.0, 0.0, 0.0, NAN, math.sin(1.0)])
    assert_same(S.airy_ai(x[:5]), [float(AI_0)] * 2 + [0.0, 0.0, NAN])
    assert_same(S.airy_ai(f64([-1e201, 1e300])), [0.0, 0.0])
    # where PyTorch's values are right: K0 of a subnormal, K1 and Y1 overflowing
    assert S.modified_bessel_k0(f64(1e-310)).item() == pytest.approx(reference("k0", 1e-310), rel=1e-15)
    assert S.modified_bessel_k1(f64(1e-310)).item() == INF
    assert S.bessel_y1(f64(1e-310)).item() == -INF


# -- erfcx, ndtr, sinc ---------------------------------------------------------------------------------------------
def erfcx_reference(x: float) -> float:
    """exp(x**2) erfc(x) with exp(x**2) in decimal (x**2 exact) and erfc by math.erfc (for x < 0, 2 - erfc(-x));
    past 26 the asymptotic series 1 / (x sqrt(pi)) sum_k (-1)**k (2k - 1)!! / (2 x**2)**k."""
    if x > 26:
        z = 0.5 / x / x
        series = math.fsum((-1) ** k * math.prod(range(1, 2 * k, 2)) * z ** k for k in range(8))
        return series / (x * math.sqrt(math.pi))
    with localcontext() as context:
        context.prec = 40
        return float((Decimal(x) ** 2).exp() * Decimal(math.erfc(x) if x >= 0 else 2 - math.erfc(-x)))


def test_erfcx_values():
    # x**2 rounds at -25.9 and -9.7: exp would magnify that 670 and 94 times
    x = [-26.5, -25.9, -10.0, -9.7, -3.0, -0.5, -1e-10, 0.0, 0.2, 0.46875, 0.47, 1.5, 4.0, 4.1, 10.0, 26.0, 27.0,
         1e3, 1e150]
    np.testing.assert_allclose(S.erfcx(f64(x)).numpy(), [erfcx_reference(v) for v in x], rtol=4e-15)
    assert_same(S.erfcx(f64([INF, -INF, NAN, -27.0])), [0.0, INF, NAN, INF])
    assert S.erfcx(f64(1e300)).item() == pytest.approx(1 / (1e300 * math.sqrt(math.pi)), rel=3e-16)


def test_ndtr_is_the_normal_cdf_as_pytorch_computes_it():
    x = np.linspace(-8, 8, 161)
    want = [(1 + math.erf(v * math.sqrt(0.5))) / 2 for v in x]
    np.testing.assert_allclose(S.ndtr(f64(x)).numpy(), want, rtol=2e-15, atol=1e-17)
    # (1 + erf(x / sqrt 2)) / 2, as PyTorch: 0 in the far left tail (log_ndtr keeps it), 1/2 at 0
    assert_same(S.ndtr(f64([-40.0, 0.0, 40.0, INF, -INF, NAN])), [0.0, 0.5, 1.0, 1.0, 0.0, NAN])
    x = f64([0.5], requires_grad=True)
    node = S.ndtr(x).grad_fn  # PyTorch's chain of nodes: mul, add, erf, mul
    names = []
    while node.next_functions:
        names.append(node.name())
        node = next(f for f, _ in node.next_functions if f is not None)
    assert names == ["MulBackward0", "AddBackward0", "ErfBackward0", "MulBackward0"]


def test_sinc_is_the_top_level_sinc():
    x = f64([0.0, 0.25, -1.5, 3.0], requires_grad=True)
    assert S.sinc(x).grad_fn.name() == "SincBackward0"
    assert_same(S.sinc(x), ag.sinc(x).detach().numpy())


GRADIENTS = {
    "erfcx": lambda x: S.erfcx(x * 3), "ndtr": lambda x: S.ndtr(x * 2), "sinc": S.sinc,
}


@pytest.mark.parametrize("name", list(GRADIENTS))
def test_gradcheck_and_gradgradcheck(name):
    x = f64([-2.3, -0.4, 0.7, 1.9, 4.5], requires_grad=True)
    assert gradcheck(GRADIENTS[name], (x,))
    assert gradgradcheck(GRADIENTS[name], (x,))


def test_erfcx_gradient_is_pytorchs_formula():
    x = f64([-1.0, 0.0, 0.5, 30.0], requires_grad=True)
    out = S.erfcx(x)
    assert out.grad_fn.name() == "SpecialErfcxBackward0"
    (g,) = ag.autograd.grad(out.sum(), x)
    np.testing.assert_allclose(g.numpy(), 2 * x.detach().numpy() * out.detach().numpy() - 2 / math.sqrt(math.pi),
                               rtol=1e-15)


NO_GRADIENT = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
               "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
               "spherical_bessel_j0", "airy_ai"]


@pytest.mark.parametrize("name", NO_GRADIENT)
def test_the_functions_pytorch_has_no_derivative_for_record_nothing(name):
    x = f64([0.5, 1.5], requires_grad=True)
    out = getattr(S, name)(x)
    assert out.grad_fn is None and not out.requires_grad
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        out.sum().backward()


@pytest.mark.parametrize("name", [*NO_GRADIENT, "erfcx"])
def test_dtypes(name):
    op = getattr(S, name)
    ints = ag.tensor([1, 2, 3])
    assert op(ints).dtype == ag.float32
    np.testing.assert_array_equal(op(ints).numpy(), op(ints.double()).numpy().astype(np.float32))
    assert op(ag.tensor([True])).dtype == ag.float32
    assert op(ag.tensor([1.5], dtype=ag.float32)).dtype == ag.float32
    with pytest.raises(NotImplementedError, match=f"^\"{name}_cpu\" not implemented for 'Half'$"):
        op(ag.tensor([1.0], dtype=ag.float16))
    for shape in ((), (0,), (2, 0)):
        assert op(ag.ones(shape, dtype=ag.float64)).shape == shape


@pytest.mark.parametrize("name, argument", [
    ("ndtr", "input"), ("erfcx", "input"), ("sinc", "input"), ("bessel_j0", "input"), ("bessel_y1", "input"),
    ("modified_bessel_k1", "input"), ("scaled_modified_bessel_k0", "x"), ("spherical_bessel_j0", "x"),
    ("airy_ai", "x"),
])
def test_a_non_tensor_argument_gets_pytorchs_error(name, argument):
    with pytest.raises(TypeError, match=f"^special_{name}\\(\\): argument '{argument}' \\(position 1\\) must be "
                                        "Tensor, not float$"):
        getattr(S, name)(2.0)


# -- cuda ----------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_on_cuda_the_values_and_gradients_are_the_cpus(cupy):
    points = [0.3, 1.5, 2.5, 25.0, 30.0, 1e-8, 150.0, -0.5, -2.3, -12.0, 0.0, -0.0, NAN, INF, -INF]
    for name in [*NO_GRADIENT, "erfcx", "ndtr", "sinc"]:
        op = getattr(S, name)
        for dtype in (ag.float64, ag.float32):
            got, want = op(ag.tensor(points, dtype=dtype, device="cuda:0")), op(ag.tensor(points, dtype=dtype))
            assert got.device.type == "cuda" and got.dtype == want.dtype
            np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-300)
        for shape in ((), (0,), (2, 0)):
            got = op(ag.tensor(np.full(shape, 0.3), device="cuda:0"))
            assert got.shape == shape and got.device.type == "cuda"
    for op in GRADIENTS.values():
        def run(where, op=op):
            x = ag.tensor([-2.3, -0.4, 0.7, 1.9, 4.5], dtype=ag.float64, device=where, requires_grad=True)
            (first,) = ag.autograd.grad(op(x).sum(), x, create_graph=True)
            (second,) = ag.autograd.grad((first * first).sum(), x)
            return first, second

        for got, want in zip(run("cuda:0"), run("cpu")):
            assert got.device.type == "cuda"
            np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-12)
