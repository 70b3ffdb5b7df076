"""asinh, acosh, atanh, deg2rad, rad2deg, sinc, hypot, copysign, heaviside, float_power, ldexp, divide's rounding
modes and the name aliases (arcsinh ..., divide, multiply, subtract, true_divide, greater ... not_equal) against
numpy's ops and closed-form derivatives at edge points (computed in the dtypes PyTorch's kernels use), PyTorch
2.13's dtypes, gradients to second order, node names and errors."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

INF, NAN = math.inf, math.nan
P = [0.0, -0.0, 1.0, -1.0, 0.5, -0.75, 2.0, 3.5, 1e-30, 1e10, INF, -INF, NAN]
def _sinc_grad(x):
    """d/dx sin(pi x) / (pi x) = (cos(pi x) - sinc(x)) / x, and 0 at 0 (the limit)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x == 0, 0.0, (np.cos(np.pi * x) - np.sinc(x)) / np.where(x == 0, 1.0, x))


# op: (numpy's op, its derivative); the constant factors are torch's float64 ones, rounded to the float32 operand's
# dtype for float32 operands (torch multiplies by float(pi / 180))
UNARY = {
    "asinh": (np.arcsinh, lambda x: 1 / np.sqrt(x * x + 1)),
    "acosh": (np.arccosh, lambda x: 1 / np.sqrt(x * x - 1)),
    "atanh": (np.arctanh, lambda x: 1 / (1 - x * x)),
    "deg2rad": (lambda x: x * x.dtype.type(math.pi / 180), lambda x: np.full_like(x, math.pi / 180)),
    "rad2deg": (lambda x: x * x.dtype.type(180 / math.pi), lambda x: np.full_like(x, 180 / math.pi)),
    "sinc": (np.sinc, _sinc_grad),  # numpy's sinc is the normalised one, sin(pi x) / (pi x), as torch's
}


def reference(name: str, values, dtype=np.float64) -> np.ndarray:
    """numpy's op in dtype; float16 and integer inputs compute in float32, as PyTorch's kernels, then round."""
    x = np.asarray(values, dtype=np.float32 if dtype in (np.float16, np.int64, np.int8) else dtype)
    with np.errstate(all="ignore"):
        out = UNARY[name][0](x)
    return out.astype(np.float16) if dtype == np.float16 else out


def reference_grad(name: str, values) -> np.ndarray:
    with np.errstate(all="ignore"):
        return UNARY[name][1](np.asarray(values, dtype=np.float64))


NODE_NAMES = {"asinh": "AsinhBackward0", "acosh": "AcoshBackward0", "atanh": "AtanhBackward0",
              "deg2rad": "Deg2RadBackward0", "rad2deg": "Rad2DegBackward0", "sinc": "SincBackward0"}
ALIASES = {"arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh"}

A = [0.0, -0.0, 3.0, -3.0, 1e-300, 1e300, INF, -INF, NAN, 2.5]
B = [0.0, 1.0, -4.0, 4.0, 1e-300, 1e300, 2.0, NAN, 1.0, -0.0]
LN2 = math.log(2)
BINARY = {  # op: (numpy's op, (its derivative in the input, in the other)) at a, b
    "hypot": (np.hypot, (lambda a, b: a / np.hypot(a, b), lambda a, b: b / np.hypot(a, b))),
    # copysign's input gradient is result / input, 0 where the input is 0 (PyTorch's formula)
    "copysign": (np.copysign, (lambda a, b: np.where(a == 0, 0.0, np.copysign(a, b) / np.where(a == 0, 1.0, a)),
                               lambda a, b: np.zeros_like(a))),
    "ldexp": (lambda a, b: a * np.exp2(b), (lambda a, b: np.exp2(b), lambda a, b: a * np.exp2(b) * LN2)),
}


def binary_reference(name: str) -> tuple:
    """numpy's values and gradients of the op at A, B in float64."""
    a, b = np.array(A), np.array(B)
    op, (input_grad, other_grad) = BINARY[name]
    with np.errstate(all="ignore"):
        return op(a, b), (input_grad(a, b), other_grad(a, b))


def f64(values, requires_grad=False):
    return ag.tensor(values, dtype=ag.float64, requires_grad=requires_grad)


def assert_same(t, want, rtol=5e-16):
    """Equal up to rtol (two ulps by default: libm's last bits may differ from torch's), signs of zeros and
    NaNs in the same places."""
    got = t.detach().numpy()
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0)
    want = np.asarray(want, dtype=got.dtype)
    np.testing.assert_array_equal(np.signbit(got) & (want == 0), np.signbit(want) & (want == 0))


def quietly(fn: Callable, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's, for log(0) and the like
        return fn(*args, **kwargs)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_gradients_and_node_names_match_torch(name):
    values, grads = reference(name, P), reference_grad(name, P)
    x = f64(P, requires_grad=True)
    y = quietly(getattr(ag, name), x)
    assert_same(y, values)
    assert y.grad_fn.name() == NODE_NAMES[name]
    (g,) = quietly(lambda: ag.autograd.grad(y.sum(), x))
    assert_same(g, grads)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_dtypes_match_torch(name):
    y = quietly(getattr(ag, name), ag.tensor(P, dtype=ag.float32))
    assert y.dtype == ag.float32
    # libm's float32 functions and torch's may differ by an ulp
    np.testing.assert_allclose(y.numpy(), reference(name, P, np.float32), rtol=3e-7, atol=0)
    y = quietly(getattr(ag, name), ag.tensor([0.5, 1.0, 2.5, -3.0], dtype=ag.float16))
    assert y.dtype == ag.float16
    assert_same(y, reference(name, [0.5, 1.0, 2.5, -3.0], np.float16), rtol=0)
    for dtype in (ag.int64, ag.int8):
        y = quietly(getattr(ag, name), ag.tensor([0, 1, 2, -3], dtype=dtype))
        assert y.dtype == ag.float32
        assert_same(y, reference(name, [0, 1, 2, -3], np.int64), rtol=3e-7)
    assert quietly(getattr(ag, name), ag.tensor([True])).dtype == ag.float32


def test_deg2rad_and_rad2deg_multiply_as_torch_to_the_last_bit():
    # numpy's float32 rad2deg is an ulp off torch's (57.29577637 for 1.0), and its float16 products round the
    # factor to float16 first
    x = np.random.default_rng(0).normal(size=200).astype(np.float32) * 100
    np.testing.assert_array_equal(ag.rad2deg(ag.tensor(x)).numpy(), x * np.float32(180 / math.pi))
    assert ag.rad2deg(ag.tensor([1.0])).item() == np.float32(180 / math.pi)
    x16 = (np.arange(-60, 60, dtype=np.float32) / 7).astype(np.float16)
    for name, factor in (("deg2rad", math.pi / 180), ("rad2deg", 180 / math.pi)):
        want = (x16.astype(np.float32) * np.float32(factor)).astype(np.float16)
        np.testing.assert_array_equal(getattr(ag, name)(ag.tensor(x16)).numpy(), want)


@pytest.mark.parametrize("alias, name", sorted(ALIASES.items()))
def test_inverse_hyperbolic_aliases_record_the_ops_nodes(alias, name):
    x = f64([0.25, 0.5], requires_grad=True) if name == "atanh" else f64([1.5, 2.0], requires_grad=True)
    for y in (getattr(ag, alias)(x), getattr(x, alias)()):
        assert y.grad_fn.name() == NODE_NAMES[name]
        assert_same(y, getattr(ag, name)(x).detach().numpy(), rtol=0)


@pytest.mark.parametrize("name, points", [
    ("asinh", [-3.0, -0.4, 0.0, 0.7, 5.0]),
    ("acosh", [1.2, 1.7, 3.0, 10.0]),
    ("atanh", [-0.8, -0.2, 0.0, 0.3, 0.85]),
    ("deg2rad", [-100.0, 0.5, 720.0]),
    ("rad2deg", [-3.0, 0.5, 7.0]),
    ("sinc", [-2.3, -0.9, -0.05, 0.3, 1.0, 1.7]),
])
def test_unary_gradcheck_and_gradgradcheck(name, points):
    x = f64(points, requires_grad=True)
    assert gradcheck(getattr(ag, name), (x,))
    assert gradgradcheck(getattr(ag, name), (x,))
    assert getattr(x, name)().grad_fn.name() == NODE_NAMES[name]


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_gradients_and_node_names_match_torch(name):
    values, (input_grad, other_grad) = binary_reference(name)
    a, b = f64(A, requires_grad=True), f64(B, requires_grad=True)
    y = quietly(getattr(ag, name), a, b)
    assert_same(y, values)
    assert y.grad_fn.name() == {"hypot": "HypotBackward0", "copysign": "CopysignBackward0",
                                "ldexp": "LdexpBackward0"}[name]
    ga, gb = quietly(lambda: ag.autograd.grad(y.sum(), (a, b)))
    assert_same(ga, input_grad)
    assert_same(gb, other_grad)


def test_copysign_takes_a_number_and_flips_the_gradient_with_the_sign():
    a = f64(A, requires_grad=True)
    y = a.copysign(-2.0)
    assert y.grad_fn.name() == "CopysignBackward1"
    assert_same(y, [-0.0, -0.0, -3.0, -3.0, -1e-300, -1e+300, -INF, -INF, NAN, -2.5])
    assert_same(quietly(ag.autograd.grad, y.sum(), a)[0], [0.0, 0.0, -1.0, 1.0, -1.0, -1.0, NAN, NAN, NAN, -1.0])
    assert ag.copysign(ag.tensor([3, -4]), ag.tensor([-1.0, 2.0])).tolist() == [-3.0, 4.0]


def test_heaviside_values_dtypes_and_no_derivative():
    a, b = f64(A, requires_grad=True), f64(B)
    y = ag.heaviside(a, b)
    assert_same(y, [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0])  # NaN gives 0, as torch's kernel
    assert y.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="^derivative for aten::heaviside is not implemented"):
        ag.autograd.grad(y.sum(), a)
    ints = ag.heaviside(ag.tensor([3, 0, -4]), ag.tensor([7, 7, 7]))
    assert ints.dtype == ag.int64 and ints.tolist() == [1, 7, 0]
    bools = ag.tensor([True, False]).heaviside(ag.tensor([False, True]))
    assert bools.dtype == ag.bool and bools.tolist() == [True, True]
    half = ag.heaviside(ag.tensor([[0.0], [-1.0]], dtype=ag.float16), ag.tensor([0.5, 2.0], dtype=ag.float16))
    assert half.dtype == ag.float16 and half.tolist() == [[0.5, 2.0], [0.0, 0.0]]


@pytest.mark.parametrize("a_dtype, b_dtype, want_dtype", [
    (ag.int64, ag.int64, ag.float32), (ag.int64, ag.float32, ag.float32), (ag.bool, ag.bool, ag.float32),
    (ag.float32, ag.float64, ag.float64), (ag.float16, ag.float16, ag.float16),
])
def test_copysign_and_ldexp_promote_as_torch(a_dtype, b_dtype, want_dtype):
    a, b = ag.tensor([3, -4], dtype=a_dtype), ag.tensor([4, 2], dtype=b_dtype)
    assert ag.copysign(a, b).dtype == want_dtype
    assert ag.ldexp(a, b).dtype == want_dtype
    assert ag.hypot(a.float(), b.float()).dtype == ag.float32
    # a zero-dim float64 operand does not outrank a float32 tensor with dims
    assert ag.hypot(ag.tensor([3.0, 4.0]), ag.tensor(4.0, dtype=ag.float64)).dtype == ag.float32


def test_ldexp_takes_the_power_in_the_result_dtype_for_integer_exponents():
    # float64 meets 2 ** 1000 exactly; float32 and float16 overflow to inf; a floating exponent keeps its own dtype
    assert ag.ldexp(f64([1.0]), ag.tensor([1000])).item() == 2.0 ** 1000
    assert ag.ldexp(f64([1.0]), ag.tensor([-1074])).item() == 2.0 ** -1074
    assert ag.ldexp(ag.tensor([1.0]), ag.tensor([200])).item() == INF
    assert ag.ldexp(ag.tensor([1.0], dtype=ag.float16), ag.tensor([20])).item() == INF
    assert ag.ldexp(f64([1.0]), ag.tensor([0.1])).item() == np.exp2(np.float32(0.1))  # 2 ** 0.1 in float32
    assert ag.ldexp(ag.tensor([1.0]), f64([0.1])).item() == 2 ** 0.1
    assert ag.ldexp(ag.tensor([3], dtype=ag.int32), ag.tensor([2], dtype=ag.int8)).tolist() == [12.0]
    x = f64([3.0], requires_grad=True)
    for create_graph in (False, True):  # the input's gradient 2 ** 1000 in float64 too, also when recorded
        (g,) = ag.autograd.grad(ag.ldexp(x, ag.tensor([1000])).sum(), x, create_graph=create_graph)
        assert g.item() == 2.0 ** 1000


def test_float_power_computes_in_float64_through_copies():
    p, q = ag.tensor([0.0, 2.0, -2.0, 0.5, INF, NAN], requires_grad=True), ag.tensor(
        [-1.0, 0.5, 3.0, -2.0, -0.5, 0.0], requires_grad=True)
    y = quietly(ag.float_power, p, q)
    assert y.dtype == ag.float64 and y.grad_fn.name() == "PowBackward1"
    assert [n.name() for n, _ in y.grad_fn.next_functions] == ["ToCopyBackward0", "ToCopyBackward0"]
    assert_same(y, [INF, math.sqrt(2), -8.0, 4.0, 0.0, 1.0])
    gp, gq = quietly(ag.autograd.grad, y.sum(), (p, q))
    assert gp.dtype == gq.dtype == ag.float32
    assert_same(gp, [-INF, 0.5 * 2 ** -0.5, 12.0, -16.0, -0.0, 0.0], rtol=1e-7)  # q p ** (q - 1), in float32
    assert_same(gq, [-INF, math.sqrt(2) * LN2, NAN, 4 * math.log(0.5), NAN, NAN], rtol=1e-7)  # p ** q log p
    assert ag.float_power(ag.tensor([2, -3]), ag.tensor([-2, 3])).tolist() == [0.25, -27.0]  # no integer power
    double = ag.tensor([2.0], dtype=ag.float64, requires_grad=True)
    next_node = ag.float_power(double, 2.0).grad_fn.next_functions[0][0]
    assert next_node.name() == "torch::autograd::AccumulateGrad"  # no copy needed
    x = ag.tensor([2, 3], dtype=ag.int8)
    assert x.float_power(-1).tolist() == [0.5, 1 / 3]
    assert ag.float_power(2, ag.tensor([0.5])).tolist() == [math.sqrt(2)]
    names = [ag.float_power(f64([2.0], requires_grad=True), 2).grad_fn.name(),
             ag.float_power(2, f64([2.0], requires_grad=True)).grad_fn.name()]
    assert names == ["PowBackward0", "PowBackward2"]


def test_binary_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(3)
    a = f64(rng.uniform(0.5, 2.0, (3, 1)) * [[1], [-1], [1]], requires_grad=True)
    b = f64(rng.uniform(0.5, 2.0, 4) * [1, -1, 1, -1], requires_grad=True)
    for fn in (ag.hypot, ag.copysign, ag.ldexp, lambda x, y: ag.float_power(x.abs(), y),
               lambda x, y: ag.copysign(x, 2.0) * y, lambda x, y: ag.divide(x, y, rounding_mode=None)):
        assert gradcheck(fn, (a, b))
        assert gradgradcheck(fn, (a, b))


def test_divide_rounding_modes_match_torch():
    x, y = f64([7.5, -7.5, 1.0, 0.0, -0.0, INF, NAN, -1.0, 5.0]), f64([2.0, 2.0, 0.0, 0.0, 1.0, 2.0, 1.0, 3.0, -INF])
    assert_same(quietly(ag.divide, x, y, rounding_mode="trunc"), [3.0, -3.0, INF, NAN, -0.0, INF, NAN, -0.0, -0.0])
    assert_same(quietly(ag.divide, x, y, rounding_mode="floor"), [3.0, -4.0, INF, NAN, -0.0, NAN, NAN, -1.0, -1.0])
    i, j = ag.tensor([7, -7, 7, -7, 0, 1, -1, 6, -6]), ag.tensor([2, 2, -2, -2, 3, 3, 3, -3, -3])
    trunc = ag.divide(i, j, rounding_mode="trunc")
    assert trunc.dtype == ag.int64 and trunc.tolist() == [3, -3, -3, 3, 0, 0, 0, -2, 2]
    assert ag.divide(i, j, rounding_mode="floor").tolist() == [3, -4, -4, 3, 0, 0, -1, -2, 2]
    assert i.divide(4, rounding_mode="trunc").tolist() == [1, -1, 1, -1, 0, 0, 0, 1, -1]
    small = ag.divide(ag.tensor([-128, -128, 127, -127], dtype=ag.int8), ag.tensor([-1, 3, -3, 2], dtype=ag.int8),
                      rounding_mode="trunc")
    assert small.dtype == ag.int8 and small.tolist() == [-128, -42, -42, -63]  # -128 / -1 wraps, as in C
    assert ag.divide(ag.tensor([255, 7], dtype=ag.uint8), ag.tensor([2, 3], dtype=ag.uint8),
                     rounding_mode="trunc").tolist() == [127, 2]
    assert ag.divide(7, ag.tensor([2, -2]), rounding_mode="trunc").tolist() == [3, -3]
    assert ag.divide(ag.tensor([7, -7]), 2.5, rounding_mode="trunc").tolist() == [2.0, -2.0]
    assert ag.divide(ag.tensor([7, -7]), ag.tensor([2, 2]), rounding_mode=None).tolist() == [3.5, -3.5]


def test_divide_records_torchs_nodes():
    a, b = ag.tensor([1.0, -7.5], requires_grad=True), ag.tensor([2.0, 2.0], requires_grad=True)
    assert ag.divide(a, b).grad_fn.name() == "DivBackward0"
    assert ag.true_divide(a, 2).grad_fn.name() == "DivBackward0"
    for mode in (None, "trunc", "floor"):  # a rounding_mode passed, even None, is div.Tensor_mode's node
        assert a.divide(b, rounding_mode=mode).grad_fn.name() == "DivBackward2"
    y = ag.divide(a, b, rounding_mode=None)
    assert [g.tolist() for g in ag.autograd.grad(y.sum(), (a, b))] == [[0.5, 0.5], [-0.25, 1.875]]
    for mode in ("trunc", "floor"):  # rounded quotients are piecewise constant
        y = ag.divide(a, b, rounding_mode=mode)
        assert [g.tolist() for g in ag.autograd.grad(y.sum(), (a, b))] == [[0.0, 0.0], [0.0, 0.0]]


def test_arithmetic_and_comparison_aliases():
    a, b = ag.tensor([0.0, 1.0, -7.5, 3.0], requires_grad=True), ag.tensor([2.0, 1.0, 2.0, 0.0])
    assert ag.multiply(a, b).grad_fn.name() == a.multiply(2).grad_fn.name() == "MulBackward0"
    assert ag.multiply(a, b).tolist() == [0.0, 1.0, -15.0, 0.0]
    y = a.subtract(b, alpha=2)
    assert y.grad_fn.name() == "SubBackward0" and y.tolist() == [-4.0, -1.0, -11.5, 3.0]
    assert ag.subtract(2, a).tolist() == [2.0, 1.0, 9.5, -1.0]
    assert ag.true_divide(ag.tensor([7]), ag.tensor([2])).tolist() == [3.5]
    assert quietly(a.true_divide, b).grad_fn.name() == "DivBackward0"
    with pytest.raises(RuntimeError, match="^Subtraction, the `-` operator, with two bool tensors is not supported"):
        ag.subtract(ag.tensor([True]), ag.tensor([True]))
    want = {"greater": [False, False, False, True], "greater_equal": [False, True, False, True],
            "less": [True, False, True, False], "less_equal": [True, True, True, False],
            "not_equal": [True, False, True, True]}
    for name, values in want.items():
        assert getattr(ag, name)(a, 1).tolist() == values
        assert getattr(a, name)(1.0).tolist() == values
    assert ag.greater(a, b).tolist() == [False, False, False, True]


@pytest.mark.parametrize("call, error, message", [
    (lambda: ag.hypot(ag.tensor([3]), ag.tensor([4])), NotImplementedError, "\"hypot_cpu\" not implemented for 'Long'"),
    (lambda: ag.hypot(ag.tensor([True]), ag.tensor([True])), NotImplementedError,
     "\"hypot_cpu\" not implemented for 'Bool'"),
    (lambda: ag.hypot(ag.tensor([3.0]), 2.0), TypeError,
     "hypot(): argument 'other' (position 2) must be Tensor, not float"),
    (lambda: ag.tensor([3.0]).hypot(2), TypeError, "hypot(): argument 'other' (position 1) must be Tensor, not int"),
    (lambda: ag.hypot(ag.ones(2), ag.ones(3)), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    (lambda: ag.ldexp(ag.tensor([3.0]), 2), TypeError,
     "ldexp(): argument 'other' (position 2) must be Tensor, not int"),
    (lambda: ag.tensor([3.0]).ldexp(2), TypeError, "ldexp(): argument 'other' (position 1) must be Tensor, not int"),
    (lambda: ag.heaviside(ag.tensor([3.0]), 1.0), TypeError,
     "heaviside(): argument 'values' (position 2) must be Tensor, not float"),
    (lambda: ag.tensor([3.0]).heaviside(1), TypeError,
     "heaviside(): argument 'values' (position 1) must be Tensor, not int"),
    (lambda: ag.heaviside(ag.tensor([3]), ag.tensor([1.0])), RuntimeError,
     "heaviside is not yet implemented for tensors with different dtypes."),
    (lambda: ag.copysign(2.0, ag.tensor([1.0])), TypeError,
     "copysign() received an invalid combination of arguments - got (float, Tensor), but expected one of:"),
    (lambda: ag.copysign(ag.ones(2), ag.ones(3)), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    (lambda: ag.float_power(2, 3), TypeError,
     "float_power() received an invalid combination of arguments - got (int, int), but expected one of:"),
    (lambda: ag.divide(ag.ones(2), ag.ones(2), rounding_mode="bad"), RuntimeError,
     "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'bad'"),
    (lambda: ag.divide(ag.tensor([7]), ag.tensor([0]), rounding_mode="trunc"), RuntimeError, "ZeroDivisionError"),
    (lambda: ag.divide(ag.tensor([True]), ag.tensor([True]), rounding_mode="trunc"), NotImplementedError,
     "\"div_trunc_cpu\" not implemented for 'Bool'"),
    (lambda: ag.divide(ag.tensor([True]), ag.tensor([True]), rounding_mode="floor"), NotImplementedError,
     "\"div_floor_cpu\" not implemented for 'Bool'"),
    # complex numbers have no floor or trunc: PyTorch's error, not numpy's TypeError
    (lambda: ag.divide(ag.tensor([1j]), ag.tensor([1j]), rounding_mode="trunc"), NotImplementedError,
     "\"div_trunc_cpu\" not implemented for 'ComplexFloat'"),
    (lambda: ag.tensor([1j]) // 2, NotImplementedError, "\"div_floor_cpu\" not implemented for 'ComplexFloat'"),
    (lambda: ag.remainder(ag.tensor([2.0]), ag.tensor([1j], dtype=ag.complex128)), NotImplementedError,
     "\"remainder_cpu\" not implemented for 'ComplexDouble'"),
    (lambda: ag.divide(ag.ones(2), ag.ones(3), rounding_mode="trunc"), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    (lambda: ag.true_divide(ag.ones(2), ag.ones(2), rounding_mode="floor"), TypeError,
     "true_divide() got an unexpected keyword argument 'rounding_mode'"),
    (lambda: ag.asinh(1.0), TypeError, "asinh(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: ag.arctanh(1), TypeError, "arctanh(): argument 'input' (position 1) must be Tensor, not int"),
])
def test_errors_match_torch(call, error, message):
    with pytest.raises(error) as caught:
        call()
    assert str(caught.value).startswith(message)


@pytest.mark.gpu
def test_on_cuda_values_and_gradients_equal_the_cpus(cupy):
    rng = np.random.default_rng(5)
    arrays = [rng.uniform(0.3, 0.9, (2, 3)) * [1, -1, 1], rng.uniform(1.2, 2.0, 3) * [-1, 1, 1]]

    def f(x, y):
        return (x.asinh() + y.abs().acosh() + x.atanh() + x.deg2rad() + x.rad2deg() + x.sinc() + ag.hypot(x, y)
                + ag.copysign(x, y) + x.copysign(-1.0) + ag.ldexp(x, y) + ag.float_power(x.abs(), y)
                + ag.divide(x, y, rounding_mode="floor") + ag.divide(x, y, rounding_mode="trunc")
                + ag.heaviside(x, y.detach()).detach())

    results = []
    for d in ("cpu", "cuda:0"):
        leaves = [ag.tensor(a, device=d, requires_grad=True) for a in arrays]
        out = f(*leaves)
        first = ag.autograd.grad((out * out).sum(), leaves, create_graph=True)
        second = ag.autograd.grad(sum(g.sum() for g in first), leaves)
        results.append([t.detach().cpu().numpy() for t in (out, *first, *second)])
    for cpu, cuda in zip(*results):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-10, atol=1e-12)


def test_div_and_div_in_place_take_rounding_mode_as_torch():
    t = ag.tensor([7.0, -7.0])
    assert t.div(2, rounding_mode="floor").tolist() == [3.0, -4.0]
    assert ag.div(t, 2, rounding_mode="trunc").tolist() == [3.0, -3.0]
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    assert ag.div(x, 2).grad_fn.name() == (x / 2).grad_fn.name() == "DivBackward0"
    assert x.div(2, rounding_mode=None).grad_fn.name() == "DivBackward2"
    y = x * 1
    y.div_(ag.tensor([0.75, 0.75]), rounding_mode="floor")
    assert y.tolist() == [1.0, 2.0] and y.grad_fn.name() == "DivBackward2"
    (g,) = ag.autograd.grad(y.sum(), x)
    assert g.tolist() == [0.0, 0.0]
    y = x * 1
    y /= 4
    assert y.tolist() == [0.25, 0.5] and y.grad_fn.name() == "DivBackward0"
