"""The gamma family (lgamma, digamma, polygamma, mvlgamma) and erfinv against references computed here (Python's
math.lgamma, Bernoulli-series polygamma and bisected erf in 60-digit decimals), closed forms, mpmath's values near
poles and PyTorch 2.13's float32 ones: poles, dtypes, gradients to second order, in-place forms,
`actorgrad.special`'s names and the errors."""

from __future__ import annotations

import math
import warnings
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.devices import gamma as kernel
from actorgrad.scheduler.workers import HEAVY_NODE_NS

EULER = 0.5772156649015329
# Positive and negative points, near 0, around the zeros of lgamma at 1 and 2, and large.
P = [1e-8, 0.1, 0.5, 1.25, 1.5, 2.5, 3.7, 9.9, 12.5, 100.0, 1e6, -0.5, -1.5, -2.3, -7.9, -20.25]
E = [-0.999, -0.7, -0.3, 1e-10, 0.2, 0.5, 0.7, 0.9, 0.999999]
M = [1.2, 2.5, 3.7, 12.5]
INF, NAN = math.inf, math.nan


# -- independent references: exact-rational Bernoulli numbers and 60-digit decimals, no PyTorch numbers ----------
DIGITS = 60


def _bernoulli_even(count: int) -> list[Fraction]:
    """B_2, B_4, ..., B_2count from the recurrence sum_{j<=m} C(m+1, j) B_j = 0."""
    b = [Fraction(1)]
    for m in range(1, 2 * count + 1):
        b.append(-sum(math.comb(m + 1, j) * b[j] for j in range(m)) / (m + 1))
    return b[2::2]


BERNOULLI = _bernoulli_even(20)


def _pi() -> Decimal:
    """Machin's formula, 16 atan(1/5) - 4 atan(1/239), to the context's precision."""
    def atan_inverse(n: int) -> Decimal:
        total, power, k = Decimal(0), Decimal(1) / n, 0
        while power > Decimal(10) ** -70:
            total += (-1) ** k * power / (2 * k + 1)
            power /= n * n
            k += 1
        return total
    return 16 * atan_inverse(5) - 4 * atan_inverse(239)


def polygamma_reference(n: int, x: float) -> float:
    """psi^(n)(x): the recurrence psi^(n)(x) = psi^(n)(x + m) - (-1)^n n! sum_k (x + k)^-(n+1) up to x + m >= 60,
    there the asymptotic series in Bernoulli numbers; exact decimals, so no cancellation reaches the result."""
    with localcontext() as ctx:
        ctx.prec = DIGITS
        z = Decimal(x)
        m = max(0, math.ceil(60 - x))
        shift = sum(Decimal(1) / (z + k) ** (n + 1) for k in range(m)) * (-1) ** n * math.factorial(n)
        big = z + m
        if n == 0:
            series = big.ln() - 1 / (2 * big) - sum(Decimal(b.numerator) / b.denominator / (2 * k * big ** (2 * k))
                                                    for k, b in enumerate(BERNOULLI, 1))
        else:
            series = (Decimal(math.factorial(n - 1)) / big ** n + Decimal(math.factorial(n)) / (2 * big ** (n + 1))
                      + sum(Decimal(b.numerator) / b.denominator * math.factorial(2 * k + n - 1)
                            / math.factorial(2 * k) / big ** (2 * k + n) for k, b in enumerate(BERNOULLI, 1)))
            series *= (-1) ** (n + 1)
        return float(series - shift)


def erfinv_reference(y: float) -> float:
    """The u with erf(u) = y, by bisection on erf's Maclaurin series in 60-digit decimals."""
    with localcontext() as ctx:
        ctx.prec = DIGITS
        target, scale = Decimal(y), 2 / _pi().sqrt()

        def erf(u: Decimal) -> Decimal:
            total, term, k = Decimal(0), u, 0  # term = (-1)^k u^(2k+1) / k!
            while abs(term) > Decimal(10) ** -65 or k < 5:
                total += term / (2 * k + 1)
                k += 1
                term *= -u * u / k
            return scale * total

        low, high = Decimal(-6), Decimal(6)
        for _ in range(200):
            middle = (low + high) / 2
            low, high = (middle, high) if erf(middle) < target else (low, middle)
        return float((low + high) / 2)


def mvlgamma_reference(x: float, p: int) -> float:
    """log of the multivariate gamma: p (p - 1) / 4 log pi + sum_j lgamma(x + (1 - j) / 2)."""
    return p * (p - 1) / 4 * math.log(math.pi) + sum(math.lgamma(x + (1 - j) / 2) for j in range(1, p + 1))


def f64(values):
    return ag.tensor(values, dtype=ag.float64)


def assert_close(t, want, rtol=1e-14):
    np.testing.assert_allclose(t.numpy(), want, rtol=rtol, atol=0)


@pytest.mark.parametrize("op, reference", [
    (ag.lgamma, math.lgamma),
    (ag.digamma, lambda x: polygamma_reference(0, x)),
    (lambda x: ag.polygamma(0, x), lambda x: polygamma_reference(0, x)),
    (lambda x: ag.polygamma(2, x), lambda x: polygamma_reference(2, x)),
    (lambda x: x.polygamma(3), lambda x: polygamma_reference(3, x)),
])
def test_float64_values_match_the_references(op, reference):
    assert_close(op(f64(P)), [reference(x) for x in P])


def test_erfinv_and_mvlgamma_match_the_references():
    assert_close(ag.erfinv(f64(E)), [erfinv_reference(y) for y in E])
    assert_close(ag.mvlgamma(f64(M), 3), [mvlgamma_reference(x, 3) for x in M])
    assert_close(f64(M).mvlgamma(1), [math.lgamma(x) for x in M])


def test_erfinv_tails_to_the_last_bits():
    # Newton on erfc(u) = 1 - |y|, which is exact, keeps the precision that erf(u) - y would lose
    x = f64([1 - 1e-12, -(1 - 2 ** -53), 1 - 2 ** -40, -0.9999999])
    assert_close(ag.erfinv(x), [erfinv_reference(y) for y in x.tolist()], rtol=2e-16)


def test_digamma_next_to_the_poles():
    # the 60-digit references (mpmath agrees); PyTorch's are 1e-8 off right of a pole (it takes tan(pi x) of
    # x's fractional part without reducing it to (-0.5, 0.5])
    x = f64([-14.999999999, -0.999999999, -1.000000001, -3.0000001])
    assert_close(ag.digamma(x), [polygamma_reference(0, v) for v in x.tolist()], rtol=1e-15)


def test_lgamma_keeps_its_relative_accuracy_at_its_zeros_1_and_2():
    # Taylor at the zero a = 1 or 2: lgamma(a + e) = sum_k psi^(k-1)(a) e^k / k!, e = x - a exact; |e| <= 1e-6 makes
    # the terms past e^4 fall below the last bit
    x = f64([1.000000000001, 0.99999999, 1.9999999999999, 2.000001])
    want = [sum(polygamma_reference(k - 1, float(round(v))) * (v - round(v)) ** k / math.factorial(k)
                for k in range(1, 5)) for v in x.tolist()]
    assert_close(ag.lgamma(x), want, rtol=1e-15)


def test_lgamma_matches_math_lgamma_densely():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-30, 30, 1500), np.logspace(-300, 300, 200)])
    x = x[x != np.floor(x)]
    want = np.array([math.lgamma(v) for v in x])
    # absolute near lgamma's zeros, where Python's own lgamma loses digits (near 1 and 2 it loses more: see above)
    np.testing.assert_allclose(kernel.lgamma(np, x), want, rtol=1e-14, atol=1e-14)


def test_trigamma_closed_forms_and_recurrence():
    # PyTorch's trigamma keeps only a few series terms (relative error about 1e-9), so closed forms here
    x = f64([1.0, 0.5, 4.0, -0.5, -1.5])
    basel = math.pi ** 2 / 6
    want = [basel, math.pi ** 2 / 2, basel - 1 - 1 / 4 - 1 / 9, math.pi ** 2 / 2 + 4, math.pi ** 2 / 2 + 4 + 4 / 9]
    assert_close(ag.polygamma(1, x), want, rtol=1e-15)
    # psi_n(x + 1) = psi_n(x) + (-1)**n n! / x**(n + 1), at negative and positive points, orders 1 to 6
    x = np.array([-7.3, -2.6, -0.45, 0.3, 1.7, 5.2])
    for n in range(1, 7):
        here, next_ = kernel.polygamma(np, n, x), kernel.polygamma(np, n, x + 1)
        term = (-1) ** n * math.factorial(n) / x ** (n + 1)
        # to rounding of the largest of the three (the sum cancels where x is small)
        assert np.all(np.abs(next_ - here - term) <= 4e-16 * np.maximum(np.abs(here), np.abs(term))), n


def test_poles_and_special_values():
    lg = ag.lgamma(f64([0.0, -0.0, -1.0, -2.0, -1e300, INF, -INF, NAN]))
    np.testing.assert_array_equal(lg.numpy(), [INF] * 7 + [NAN])
    dg = ag.digamma(f64([0.0, -0.0, -1.0, -4.0, INF, -INF, NAN]))
    np.testing.assert_array_equal(dg.numpy(), [-INF, INF, NAN, NAN, INF, NAN, NAN])
    # the poles: inf with polygamma's sign there (PyTorch's trigamma gives 6.6e32 at -1 and the like, from
    # sin(pi x) not being 0); -inf has no limit (PyTorch gives NaN for n = 1, +-inf for n >= 2)
    x = f64([0.0, -0.0, -3.0, NAN, -INF])
    np.testing.assert_array_equal(ag.polygamma(1, x).numpy(), [INF, INF, INF, NAN, NAN])
    np.testing.assert_array_equal(ag.polygamma(2, x).numpy(), [-INF, -INF, -INF, NAN, NAN])
    np.testing.assert_array_equal(ag.polygamma(3, x).numpy(), [INF, INF, INF, NAN, NAN])
    ei = ag.erfinv(f64([1.0, -1.0, 1.5, -1.0000001, 0.0, -0.0, NAN]))
    np.testing.assert_array_equal(ei.numpy(), [INF, -INF, NAN, NAN, 0.0, -0.0, NAN])
    assert np.signbit(ei.numpy()[5])
    assert ag.lgamma(f64([1e-320])).item() == pytest.approx(-math.log(1e-320), rel=1e-15)  # subnormal


def test_float32_results():
    # PyTorch's float32 kernels compute in float32 (a few ulps off, more near digamma's zeros); the references
    # at the float32 inputs agree with torch to about 1e-6 relative
    points = [0.1, 0.5, 1.25, 2.5, 3.7, 12.5, -0.5, -2.3]
    x, x32 = ag.tensor(points), [float(np.float32(v)) for v in points]
    erfinv_points = [float(np.float32(v)) for v in (-0.9, -0.3, 0.2, 0.999)]
    cases = [
        (ag.lgamma(x), [math.lgamma(v) for v in x32]),
        (ag.digamma(x), [polygamma_reference(0, v) for v in x32]),
        (ag.polygamma(2, x), [polygamma_reference(2, v) for v in x32]),
        (ag.erfinv(ag.tensor([-0.9, -0.3, 0.2, 0.999])), [erfinv_reference(v) for v in erfinv_points]),
        (ag.mvlgamma(ag.tensor([1.2, 3.7]), 2), [mvlgamma_reference(float(np.float32(v)), 2) for v in (1.2, 3.7)]),
    ]
    for out, want in cases:
        assert out.dtype == ag.float32
        np.testing.assert_allclose(out.numpy(), np.float32(want), rtol=2e-6)
    assert ag.lgamma(ag.tensor([40.0])).dtype == ag.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's cast would warn of the overflow; PyTorch is silent
        assert ag.lgamma(ag.tensor([3e38])).item() == INF  # beyond float32's range
    assert ag.lgamma(ag.tensor([2.5], dtype=ag.float16)).dtype == ag.float16


def test_integer_and_bool_inputs_give_the_default_float_dtype():
    cases = [
        (ag.lgamma(ag.tensor([1, 2, 3, 4])), [0.0, 0.0, math.log(2), math.log(6)]),
        (ag.digamma(ag.tensor([1, 2, 3])), [-EULER, 1 - EULER, 1.5 - EULER]),
        (ag.polygamma(1, ag.tensor([1, 2])), [math.pi ** 2 / 6, math.pi ** 2 / 6 - 1]),
        (ag.erfinv(ag.tensor([0, 1])), [0.0, INF]),
        (ag.mvlgamma(ag.tensor([2, 3]), 2), [mvlgamma_reference(2.0, 2), mvlgamma_reference(3.0, 2)]),
        (ag.digamma(ag.tensor([True, False])), [-EULER, -INF]),
        (ag.lgamma(ag.tensor([1, 2], dtype=ag.uint8)), [0.0, 0.0]),
    ]
    for out, want in cases:
        assert out.dtype == ag.float32
        np.testing.assert_allclose(out.numpy(), np.float32(want), rtol=1e-7)


# Points away from the poles, negative ones included.
X = [2.5, 0.3, -1.7]


@pytest.mark.parametrize("op", [
    ag.lgamma, ag.digamma, lambda x: ag.polygamma(0, x), lambda x: ag.polygamma(1, x),
    lambda x: ag.polygamma(4, x), lambda x: ag.erfinv(x * 0.3), lambda x: ag.mvlgamma(x + 3, 3),
])
def test_gradcheck_and_gradgradcheck(op):
    x = f64(X).requires_grad_()
    assert gradcheck(op, (x,))
    assert gradgradcheck(op, (x,))


def test_gradients_match_the_references():
    x = f64(X).requires_grad_()
    cases = [
        (ag.lgamma, [polygamma_reference(0, v) for v in X]),  # each derivative is the next polygamma
        (ag.digamma, [polygamma_reference(1, v) for v in X]),
        (lambda v: ag.polygamma(2, v), [polygamma_reference(3, v) for v in X]),
        (lambda v: ag.mvlgamma(v + 2, 2), [polygamma_reference(0, v + 2) + polygamma_reference(0, v + 1.5) for v in X]),
    ]
    for op, want in cases:
        (g,) = ag.autograd.grad(op(x).sum(), x)
        # digamma's gradient is trigamma, which PyTorch computes to about 1e-9
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-14 if op is ag.lgamma else 1e-9)
    e = f64([-0.9, 0.2, 0.6]).requires_grad_()
    (g,) = ag.autograd.grad(ag.erfinv(e).sum(), e)
    slope = [math.sqrt(math.pi) / 2 * math.exp(erfinv_reference(y) ** 2) for y in (-0.9, 0.2, 0.6)]  # 1 / erf'
    np.testing.assert_allclose(g.numpy(), slope, rtol=1e-14)


def test_node_names_saved_values_and_double_backward_graph():
    x = f64(X).requires_grad_()
    names = {ag.lgamma: "LgammaBackward0", ag.digamma: "DigammaBackward0", ag.erfinv: "ErfinvBackward0"}
    for op, name in names.items():
        node = op(x * 0.3).grad_fn
        assert node.name() == name
        np.testing.assert_array_equal(node._saved_self.detach().numpy(), (x * 0.3).detach().numpy())
    node = ag.polygamma(2, x).grad_fn
    assert (node.name(), node._saved_n) == ("PolygammaBackward0", 2)
    assert ag.polygamma(0, x).grad_fn.name() == "PolygammaBackward0"
    node = ag.mvlgamma(x + 3, 2).grad_fn
    assert (node.name(), node._saved_p) == ("MvlgammaBackward0", 2)
    # create_graph records PyTorch's formulas: lgamma's gradient through digamma, digamma's through polygamma(1)
    for op, inner, n in [(ag.lgamma, "DigammaBackward0", None), (ag.digamma, "PolygammaBackward0", 1),
                         (lambda v: ag.polygamma(2, v), "PolygammaBackward0", 3)]:
        (g,) = ag.autograd.grad(op(x).sum(), x, create_graph=True)
        (node,) = [fn for fn, _ in g.grad_fn.next_functions if fn is not None]  # beside the incoming ones
        assert node.name() == inner
        assert n is None or node._saved_n == n


def test_in_place_forms():
    for name, out_of_place in [("lgamma_", ag.lgamma), ("digamma_", ag.digamma), ("erfinv_", ag.erfinv)]:
        x = ag.tensor([0.3, 0.7])
        assert getattr(x, name)() is x
        np.testing.assert_array_equal(x.numpy(), out_of_place(ag.tensor([0.3, 0.7])).numpy())
    x = f64([2.5, 3.0])
    x.polygamma_(2)
    np.testing.assert_array_equal(x.numpy(), ag.polygamma(2, f64([2.5, 3.0])).numpy())
    y = f64([2.5, 3.0])
    y.mvlgamma_(2)
    np.testing.assert_array_equal(y.numpy(), ag.mvlgamma(f64([2.5, 3.0]), 2).numpy())
    # gradients through the rebased history, from the old values (PyTorch's polygamma_ node is PolygammaBackward1)
    leaf = f64(X).requires_grad_()
    z = leaf * 1
    z.polygamma_(1)
    assert (z.grad_fn.name(), z.grad_fn._saved_n) == ("PolygammaBackward1", 1)
    (g,) = ag.autograd.grad(z.sum(), leaf)
    np.testing.assert_allclose(g.numpy(), ag.polygamma(2, f64(X)).numpy(), rtol=1e-15)
    z = leaf * 1
    z.lgamma_()
    assert z.grad_fn.name() == "LgammaBackward0"
    (g,) = ag.autograd.grad(z.sum(), leaf)
    np.testing.assert_allclose(g.numpy(), [polygamma_reference(0, v) for v in X], rtol=1e-14)


def test_special_names():
    x = f64([0.3, 2.5])
    assert_close(ag.special.gammaln(x), ag.lgamma(x).numpy(), rtol=0)
    assert_close(ag.special.digamma(x), ag.digamma(x).numpy(), rtol=0)
    assert_close(ag.special.psi(x), ag.digamma(x).numpy(), rtol=0)
    assert_close(ag.special.polygamma(2, x), ag.polygamma(2, x).numpy(), rtol=0)
    assert_close(ag.special.multigammaln(x + 2, 2), ag.mvlgamma(x + 2, 2).numpy(), rtol=0)
    assert_close(ag.special.erfinv(x * 0.3), ag.erfinv(x * 0.3).numpy(), rtol=0)
    assert ag.special.gammaln(x.requires_grad_()).grad_fn.name() == "LgammaBackward0"
    assert ag.special.polygamma(n=1, input=x).grad_fn.name() == "PolygammaBackward0"
    assert ag.special.multigammaln(input=x + 2, p=2).grad_fn.name() == "MvlgammaBackward0"


@pytest.mark.parametrize("call, error, message", [
    (lambda: ag.lgamma(2.0), TypeError, "lgamma(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.erfinv([0.5]), TypeError, "erfinv(): argument 'input' (position 1) must be Tensor, not list"),
    (lambda: ag.polygamma(1, 2.0), TypeError, "polygamma(): argument 'input' (position 2) must be Tensor, not float"),
    (lambda: ag.polygamma(1.0, f64([1.0])), TypeError, "polygamma(): argument 'n' (position 1) must be int, not float"),
    (lambda: ag.polygamma(True, f64([1.0])), TypeError, "polygamma(): argument 'n' (position 1) must be int, not bool"),
    (lambda: ag.polygamma(-1, f64([1.0])), RuntimeError, "polygamma(n, x) does not support negative n."),
    (lambda: ag.polygamma(2 ** 70, f64([1.0])), ValueError, "Overflow when unpacking long long"),
    (lambda: f64([1.0]).polygamma(-2), RuntimeError, "polygamma(n, x) does not support negative n."),
    (lambda: f64([1.0]).polygamma_(1.5), TypeError, "polygamma_(): argument 'n' (position 1) must be int, not float"),
    (lambda: ag.mvlgamma(f64([1.0]), 0), RuntimeError, "p has to be greater than or equal to 1"),
    (lambda: ag.mvlgamma(f64([1.0]), 1.5), TypeError, "mvlgamma(): argument 'p' (position 2) must be int, not float"),
    (lambda: f64([1.0]).mvlgamma(1.5), TypeError, "mvlgamma(): argument 'p' (position 1) must be int, not float"),
    (lambda: ag.mvlgamma(ag.tensor([True]), 0), RuntimeError, "The input tensor may not be a boolean tensor."),
    (lambda: ag.tensor([3]).lgamma_(), RuntimeError, "result type Float can't be cast to the desired output type Long"),
    (lambda: ag.tensor([3]).polygamma_(1), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    (lambda: ag.tensor([True]).erfinv_(), RuntimeError,
     "result type Float can't be cast to the desired output type Bool"),
    # PyTorch's mvlgamma_ names the dtypes the other way round
    (lambda: ag.tensor([3], dtype=ag.int32).mvlgamma_(2), RuntimeError,
     "mvlgamma: result type Int can't be cast to the desired output type Float"),
    (lambda: ag.special.gammaln(2.0), TypeError, "special_gammaln(): argument 'input' (position 1) must be Tensor"),
    (lambda: ag.special.psi(2.0), TypeError, "special_psi(): argument 'input' (position 1) must be Tensor"),
    (lambda: ag.special.polygamma(1.5, f64([1.0])), TypeError, "special_polygamma(): argument 'n' (position 1)"),
    (lambda: ag.special.multigammaln(f64([1.0]), 1.5), TypeError, "special_multigammaln(): argument 'p' (position 2)"),
])
def test_errors(call, error, message):
    with pytest.raises(error) as raised:
        call()
    assert str(raised.value).startswith(message)


def test_zero_dim_and_empty_inputs():
    assert ag.polygamma(2, f64(0.4)).shape == () and ag.mvlgamma(f64(0.4), 2).shape == ()
    assert ag.polygamma(2, f64(0.4)).item() == pytest.approx(polygamma_reference(2, 0.4), rel=1e-14)
    assert ag.digamma(ag.zeros(0, 3)).shape == (0, 3)


def test_backward_cost_estimates_send_large_nodes_to_workers():
    # the backward kernels take 0.15 (digamma) to 0.6 us (trigamma) an element, not the default guess of 1 ns:
    # four thousand elements make a heavy node
    x = ag.ones(4000, requires_grad=True)
    for out in (ag.digamma(x), ag.polygamma(2, x), ag.lgamma(x * 4), ag.mvlgamma(x + 4, 4), ag.erfinv(x / 2)):
        assert out.grad_fn.cost >= HEAVY_NODE_NS, out.grad_fn.name()


def test_in_place_on_a_leaf_that_requires_grad_is_refused():
    x = f64([2.5]).requires_grad_()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x.digamma_()
