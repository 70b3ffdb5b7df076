"""The gamma family (lgamma, digamma, polygamma, mvlgamma) and erfinv against PyTorch 2.13's values (literals
computed with torch), closed forms and Python's math.lgamma: poles, dtypes, gradients to second order, in-place
forms, `actorgrad.special`'s names and the errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.devices import gamma as kernel
from actorgrad.scheduler.workers import HEAVY_NODE_NS

EULER = 0.5772156649015329
# Positive and negative points, near 0, around the zeros of lgamma at 1 and 2, and large.
P = [1e-8, 0.1, 0.5, 1.25, 1.5, 2.5, 3.7, 9.9, 12.5, 100.0, 1e6, -0.5, -1.5, -2.3, -7.9, -20.25]
TORCH_LGAMMA = [18.42068073818021, 2.252712651734206, 0.5723649429247001, -0.09827183642181316, -0.12078223763524522,
                0.2846828704729192, 1.428072326665388, 12.57717990421988, 18.734347511936445, 359.1342053695754,
                12815504.569147611, 1.2655121234846454, 0.860047015376481, 0.36956666345500805, -8.072039736012833,
                -41.60096191534053]
TORCH_DIGAMMA = [-100000000.57721564, -10.423754940411076, -1.9635100260214229, -0.22745353337626562,
                 0.036489973978576194, 0.7031566406452431, 1.1671535393615111, 2.241180316606381, 2.4851956512749123,
                 4.600161852738088, 13.81551005796419, 0.03648997397857639, 0.7031566406452433, 3.317323157561823,
                 -7.540007224419483, 6.174235633614485]
TORCH_POLYGAMMA_2 = [-2e+24, -2001.8614573783439, -16.828796644234316, -1.32773993753692, -0.8287966442343201,
                     -0.23620405164172736, -0.09539530872855405, -0.011285526423707164, -0.006932436585788242,
                     -0.00010100499983335001, -1.0000010000005002e-12, -0.82879664423432, -0.23620405164172825,
                     68.71379252927028, -1998.6737828651749, 124.02278552474382]
TORCH_POLYGAMMA_3 = [5.999999999999999e+32, 60004.512876790235, 97.40909103400242, 2.782144009188397,
                     1.4090910340024367, 0.2239058488172521, 0.05827921795656364, 0.00239445126374616,
                     0.0011534128049134052, 2.030199990001333e-06, 2.000003000002e-18, 193.40909103400242,
                     194.59427621918758, 768.9350646661426, 60014.24854014006, 1558.5452329438901]
E = [-0.999, -0.7, -0.3, 1e-10, 0.2, 0.5, 0.7, 0.9, 0.999999]
TORCH_ERFINV = [-2.3267537655135246, -0.7328690779592167, -0.2724627147267543, 8.862269254527581e-11,
                0.1791434546212917, 0.4769362762044699, 0.7328690779592167, 1.1630871536766743, 3.458910737275499]
M = [1.2, 2.5, 3.7, 12.5]
TORCH_MVLGAMMA_3 = [3.4166518077332357, 1.8809954616117743, 4.465392536249502, 54.245750663151675]
INF, NAN = math.inf, math.nan


def f64(values):
    return ag.tensor(values, dtype=ag.float64)


def assert_close(t, want, rtol=1e-14):
    np.testing.assert_allclose(t.numpy(), want, rtol=rtol, atol=0)


@pytest.mark.parametrize("op, want", [
    (ag.lgamma, TORCH_LGAMMA),
    (ag.digamma, TORCH_DIGAMMA),
    (lambda x: ag.polygamma(0, x), TORCH_DIGAMMA),
    (lambda x: ag.polygamma(2, x), TORCH_POLYGAMMA_2),
    (lambda x: x.polygamma(3), TORCH_POLYGAMMA_3),
])
def test_float64_values_match_torch(op, want):
    assert_close(op(f64(P)), want)


def test_erfinv_and_mvlgamma_match_torch():
    assert_close(ag.erfinv(f64(E)), TORCH_ERFINV)
    assert_close(ag.mvlgamma(f64(M), 3), TORCH_MVLGAMMA_3)
    assert_close(f64(M).mvlgamma(1), [-0.08537409000331583, 0.2846828704729192, 1.428072326665388,
                                      18.734347511936445])


def test_erfinv_tails_to_the_last_bits():
    # Newton on erfc(u) = 1 - |y|, which is exact, keeps the precision that erf(u) - y would lose
    x = f64([1 - 1e-12, -(1 - 2 ** -53), 1 - 2 ** -40, -0.9999999])
    assert_close(ag.erfinv(x), [5.042031898572696, -5.8635847487551676, 5.05125408524939, -3.7665625816384707],
                 rtol=2e-16)


def test_digamma_next_to_the_poles():
    # reference values from mpmath at 40 digits; PyTorch's are 1e-8 off right of a pole (it takes tan(pi x) of
    # x's fractional part without reducing it to (-0.5, 0.5])
    x = f64([-14.999999999, -0.999999999, -1.000000001, -3.0000001])
    assert_close(ag.digamma(x), [-999999914.5186225, -1000000027.8591479, 999999917.6824201, 10000001.272483157],
                 rtol=1e-15)


def test_lgamma_keeps_its_relative_accuracy_at_its_zeros_1_and_2():
    x = f64([1.000000000001, 0.99999999, 1.9999999999999, 2.000001])
    want = [-5.772669797094564e-13, 5.772156760265731e-09, -4.2244641294940813e-14, 4.2278465762452923e-07]
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
    # PyTorch's float32 kernels compute in float32 (a few ulps off, more near digamma's zeros); these round the
    # float64 value, so they agree with torch to about 1e-6 relative
    x = ag.tensor([0.1, 0.5, 1.25, 2.5, 3.7, 12.5, -0.5, -2.3])
    cases = [
        (ag.lgamma(x), [2.2527127265930176, 0.5723649263381958, -0.09827183187007904, 0.28468286991119385,
                        1.4280723333358765, 18.73434829711914, 1.2655121088027954, 0.36956682801246643]),
        (ag.digamma(x), [-10.423755645751953, -1.9635108709335327, -0.22745367884635925, 0.7031567692756653,
                         1.1671537160873413, 2.4851956367492676, 0.03648991510272026, 3.317324161529541]),
        (ag.polygamma(2, x), [-2001.861328125, -16.82879638671875, -1.327739953994751, -0.23620405793190002,
                              -0.09539530426263809, -0.006932436488568783, -0.8287966251373291, 68.71382904052734]),
        (ag.erfinv(ag.tensor([-0.9, -0.3, 0.2, 0.999])),
         [-1.1630871295928955, -0.27246272563934326, 0.17914345860481262, 2.326756238937378]),
        (ag.mvlgamma(ag.tensor([1.2, 3.7]), 2), [0.7478579878807068, 2.8858423233032227]),
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
        (ag.lgamma(ag.tensor([1, 2, 3, 4])), [0.0, 0.0, 0.6931471824645996, 1.7917594909667969]),
        (ag.digamma(ag.tensor([1, 2, 3])), [-EULER, 1 - EULER, 1.5 - EULER]),
        (ag.polygamma(1, ag.tensor([1, 2])), [math.pi ** 2 / 6, math.pi ** 2 / 6 - 1]),
        (ag.erfinv(ag.tensor([0, 1])), [0.0, INF]),
        (ag.mvlgamma(ag.tensor([2, 3]), 2), [0.4515827000141144, 1.5501949787139893]),
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


def test_gradients_match_torch():
    x = f64(X).requires_grad_()
    cases = [
        (ag.lgamma, [0.7031566406452431, -3.502524222200133, -1.4857174995110571]),
        (ag.digamma, [0.4903577562398206, 12.245364544940365, 14.632201633770636]),
        (lambda v: ag.polygamma(2, v), [0.2239058488172521, 743.1417646550497, 768.8497345301304]),
        (lambda v: ag.mvlgamma(v + 2, 2), [2.6449885947913288, 0.8850313136578309, 0.5324672110937287]),
    ]
    for op, want in cases:
        (g,) = ag.autograd.grad(op(x).sum(), x)
        # digamma's gradient is trigamma, which PyTorch computes to about 1e-9
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-14 if op is ag.lgamma else 1e-9)
    e = f64([-0.9, 0.2, 0.6]).requires_grad_()
    (g,) = ag.autograd.grad(ag.erfinv(e).sum(), e)
    np.testing.assert_allclose(g.numpy(), [3.4280428114518418, 0.9151293475072344, 1.2628624281411842], rtol=1e-14)


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
    np.testing.assert_allclose(g.numpy(), [0.7031566406452431, -3.502524222200133, -1.4857174995110571], rtol=1e-14)


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
    assert ag.polygamma(2, f64(0.4)).item() == pytest.approx(-32.23912862357835, rel=1e-15)  # torch's value
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
