"""Elementwise ops (unary math, erf, clamp, maximum/minimum, where, activations, casts): forward values against
numpy, node names, gradients and second derivatives against finite differences in float64, and the values at
kinks, ties and bounds, which follow PyTorch's conventions and are checked with fixed inputs."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import actorgrad as ag
from actorgrad.autograd import grad

EPS, ATOL, RTOL = 1e-6, 1e-7, 1e-5
CHECKS = settings(max_examples=10, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)
BROADCASTING = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=3)
THREE_BROADCASTING = hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, min_side=1, max_side=2)


def values(kind: str, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    """Inputs of one kind, at least 0.04 from the op's kinks, ties, bounds and domain edges."""
    shape = tuple(shape)
    sign = rng.choice([-1.0, 1.0], shape)
    if kind == "any":
        return rng.uniform(-1.5, 1.5, shape)
    if kind == "positive":  # sqrt, rsqrt
        return rng.uniform(0.3, 2.0, shape)
    if kind == "above -1":  # log1p
        return rng.uniform(-0.6, 1.5, shape)
    if kind == "nonzero":  # abs, sign, leaky_relu: far from 0
        return rng.uniform(0.1, 1.5, shape) * sign
    if kind == "even grid":  # maximum/minimum: this grid and the odd one never come within 0.04
        return rng.integers(-6, 7, shape) * 0.2 + rng.uniform(-0.03, 0.03, shape)
    if kind == "odd grid":
        return rng.integers(-6, 7, shape) * 0.2 + 0.1 + rng.uniform(-0.03, 0.03, shape)
    if kind == "low bound":  # tensor clamp bounds: x is drawn away from both bands
        return rng.uniform(-1.0, -0.6, shape)
    if kind == "high bound":
        return rng.uniform(0.6, 1.0, shape)
    if kind == "clamped":  # in [-1.5, -1.1], [-0.2, 0.2] or [1.1, 1.5]: at least 0.1 from every clamp bound used
        return rng.choice([-1.3, 0.0, 1.3], shape) + rng.uniform(-0.2, 0.2, shape)
    raise ValueError(kind)


def leaves(arrays) -> list:
    return [ag.tensor(a, dtype=ag.float64, requires_grad=True) for a in arrays]


def check_gradients(fn: Callable, arrays, second: bool = True) -> None:
    """Forward dtype, first gradients' dtypes, and gradcheck (+ gradgradcheck) at tight tolerances."""
    xs = leaves(arrays)
    out = fn(*xs)
    assert out.dtype == ag.float64 and out.grad_fn is not None
    for g, x in zip(grad(out.sum(), xs, allow_unused=True), xs):
        assert g is None or (g.dtype == ag.float64 and g.shape == x.shape)
    assert ag.autograd.gradcheck(fn, xs, eps=EPS, atol=ATOL, rtol=RTOL)
    if second:
        assert ag.autograd.gradgradcheck(fn, xs, eps=EPS, atol=ATOL, rtol=RTOL)


def check_forward(fn: Callable, ref: Callable, arrays, rtol: float = 1e-12) -> None:
    with ag.no_grad():
        got = fn(*[ag.tensor(a, dtype=ag.float64) for a in arrays]).numpy()
    want = np.asarray(ref(*arrays))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-14)


def _np_erf(a):
    return np.vectorize(math.erf)(a)


def _np_gelu(a):
    return 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))


def _np_softplus(a, beta=1.0, threshold=20.0):
    return np.where(a * beta > threshold, a, np.log1p(np.exp(a * beta)) / beta)


# name: (function, numpy reference, input kind, node name, second derivative checked)
UNARY = {
    "sqrt": (lambda x: x.sqrt(), np.sqrt, "positive", "SqrtBackward0"),
    "ag.sqrt": (ag.sqrt, np.sqrt, "positive", "SqrtBackward0"),
    "rsqrt": (lambda x: x.rsqrt(), lambda a: 1 / np.sqrt(a), "positive", "RsqrtBackward0"),
    "sin": (lambda x: x.sin(), np.sin, "any", "SinBackward0"),
    "cos": (ag.cos, np.cos, "any", "CosBackward0"),
    "abs": (lambda x: x.abs(), np.abs, "nonzero", "AbsBackward0"),
    "abs()": (abs, np.abs, "nonzero", "AbsBackward0"),
    "log1p": (lambda x: x.log1p(), np.log1p, "above -1", "Log1PBackward0"),
    "expm1": (ag.expm1, np.expm1, "any", "Expm1Backward0"),
    "reciprocal": (lambda x: x.reciprocal(), lambda a: 1 / a, "nonzero", "ReciprocalBackward0"),
    "square": (lambda x: x.square(), np.square, "any", "PowBackward0"),
    "erf": (lambda x: x.erf(), _np_erf, "any", "ErfBackward0"),
    "erfc": (ag.erfc, lambda a: 1 - _np_erf(a), "any", "ErfcBackward0"),
    "clamp(-0.5, 0.7)": (lambda x: x.clamp(-0.5, 0.7), lambda a: np.clip(a, -0.5, 0.7), "clamped", "ClampBackward1"),
    "clamp(min=-0.5)": (lambda x: ag.clamp(x, min=-0.5), lambda a: np.maximum(a, -0.5), "clamped", "ClampBackward1"),
    "clip(max=0.7)": (lambda x: x.clip(max=0.7), lambda a: np.minimum(a, 0.7), "clamped", "ClampBackward1"),
    "leaky_relu": (ag.leaky_relu, lambda a: np.where(a > 0, a, 0.01 * a), "nonzero", "LeakyReluBackward0"),
    "leaky_relu(0.2)": (lambda x: ag.leaky_relu(x, negative_slope=0.2), lambda a: np.where(a > 0, a, 0.2 * a),
                        "nonzero", "LeakyReluBackward0"),
    "gelu": (ag.gelu, _np_gelu, "any", "GeluBackward0"),
    "gelu tanh": (lambda x: ag.gelu(x, approximate="tanh"),
                  lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a**3))), "any",
                  "GeluBackward0"),
    "softplus": (ag.softplus, _np_softplus, "any", "SoftplusBackward0"),
    "softplus(beta=2)": (lambda x: ag.softplus(x, beta=2.0), lambda a: _np_softplus(a, 2.0), "any",
                         "SoftplusBackward0"),
    "silu": (ag.silu, lambda a: a / (1 + np.exp(-a)), "any", "SiluBackward0"),
    "where(x > 0, x, 0.5)": (lambda x: ag.where(x > 0, x, 0.5), lambda a: np.where(a > 0, a, 0.5), "nonzero",
                             "WhereBackward0"),
    "x.where(x < 0, -2.0 * x)": (lambda x: x.where(x < 0, -2.0 * x), lambda a: np.where(a < 0, a, -2.0 * a),
                                 "nonzero", "WhereBackward0"),
    "sqrt(x) * x.sin()": (lambda x: x.sqrt() * x.sin(), lambda a: np.sqrt(a) * np.sin(a), "positive", "MulBackward0"),
}


@pytest.mark.parametrize("name", list(UNARY))
@CHECKS
@given(shape=SHAPES, seed=st.integers(0, 2**32 - 1))
def test_unary_gradients(name, shape, seed):
    fn, ref, kind, node = UNARY[name]
    arrays = (values(kind, shape, np.random.default_rng(seed)),)
    check_forward(fn, ref, arrays)
    assert fn(*leaves(arrays)).grad_fn.name() == node
    check_gradients(fn, arrays)


def test_sign_is_recorded_with_a_zero_gradient():
    arrays = (values("nonzero", (2, 3), np.random.default_rng(0)),)
    check_forward(ag.sign, np.sign, arrays)
    (x,) = leaves(arrays)
    out = x.sign()
    assert out.grad_fn.name() == "SignBackward0"
    assert ag.autograd.gradcheck(ag.sign, [x], eps=EPS, atol=ATOL, rtol=RTOL)
    np.testing.assert_array_equal(grad(out.sum(), x)[0].numpy(), np.zeros((2, 3)))


BINARY = {
    "maximum": (ag.maximum, np.maximum, "MaximumBackward0"),
    "x.maximum(y)": (lambda x, y: x.maximum(y), np.maximum, "MaximumBackward0"),
    "minimum": (ag.minimum, np.minimum, "MinimumBackward0"),
    "x.minimum(y)": (lambda x, y: x.minimum(y), np.minimum, "MinimumBackward0"),
}


@pytest.mark.parametrize("name", list(BINARY))
@CHECKS
@given(shapes=BROADCASTING, seed=st.integers(0, 2**32 - 1), swap=st.booleans())
def test_binary_gradients_with_broadcasting(name, shapes, seed, swap):
    fn, ref, node = BINARY[name]
    rng = np.random.default_rng(seed)
    kinds = ("odd grid", "even grid") if swap else ("even grid", "odd grid")
    arrays = tuple(values(k, s, rng) for k, s in zip(kinds, shapes.input_shapes))
    check_forward(fn, ref, arrays)
    assert fn(*leaves(arrays)).grad_fn.name() == node
    check_gradients(fn, arrays)


@CHECKS
@given(shapes=THREE_BROADCASTING, seed=st.integers(0, 2**32 - 1))
def test_where_gradients_with_broadcasting(shapes, seed):
    rng = np.random.default_rng(seed)
    cond_shape, a_shape, b_shape = shapes.input_shapes
    condition = ag.tensor(rng.random(cond_shape) < 0.5)
    arrays = (values("any", a_shape, rng), values("any", b_shape, rng))
    fn = lambda x, y: ag.where(condition, x, y)  # noqa: E731
    check_forward(fn, lambda a, b: np.where(condition.numpy(), a, b), arrays)
    assert fn(*leaves(arrays)).grad_fn.name() == "WhereBackward0"
    check_gradients(fn, arrays)


@CHECKS
@given(shapes=THREE_BROADCASTING, seed=st.integers(0, 2**32 - 1), which=st.sampled_from(["both", "min", "max"]))
def test_clamp_with_tensor_bounds(shapes, seed, which):
    rng = np.random.default_rng(seed)
    x_shape, lo_shape, hi_shape = shapes.input_shapes
    x, lo, hi = values("clamped", x_shape, rng), values("low bound", lo_shape, rng), values("high bound", hi_shape, rng)
    if which == "both":
        fn, arrays = (lambda t, a, b: t.clamp(a, b)), (x, lo, hi)
        ref = lambda t, a, b: np.minimum(np.maximum(t, a), b)  # noqa: E731
    elif which == "min":
        fn, ref, arrays = (lambda t, a: ag.clamp(t, min=a)), np.maximum, (x, lo)
    else:
        fn, ref, arrays = (lambda t, b: ag.clip(t, max=b)), np.minimum, (x, hi)
    check_forward(fn, ref, arrays)
    assert fn(*leaves(arrays)).grad_fn.name() == "ClampBackward0"
    check_gradients(fn, arrays)


def test_transposed_inputs():
    rng = np.random.default_rng(5)
    a = np.asfortranarray(values("positive", (3, 4), rng))
    b = values("odd grid", (4, 3), rng)
    fn = lambda x, y: ag.maximum(x.T, y).sqrt() + ag.gelu(x.T) * y.clamp(-0.5, 0.5)  # noqa: E731
    check_forward(fn, lambda p, q: np.sqrt(np.maximum(p.T, q)) + _np_gelu(p.T) * np.clip(q, -0.5, 0.5), (a, b))
    check_gradients(fn, (a, b))


# -- kinks, ties and bounds, with PyTorch's values ----------------------------------------------------------------
def grads(fn: Callable, *data) -> list[list]:
    xs = [ag.tensor(d, dtype=ag.float64, requires_grad=True) for d in data]
    return [g.numpy().tolist() for g in grad(fn(*xs).sum(), xs)]


def test_kinks_at_zero_follow_pytorch():
    at = [0.0, -1.0, 1.0]
    assert grads(lambda x: x.relu(), at) == [[0.0, 0.0, 1.0]]
    assert grads(lambda x: x.abs(), at) == [[0.0, -1.0, 1.0]]
    assert grads(lambda x: x.sign(), at) == [[0.0, 0.0, 0.0]]
    assert grads(lambda x: ag.leaky_relu(x, 0.2), at) == [[0.2, 0.2, 1.0]]


def test_clamp_passes_the_gradient_at_its_bounds():
    assert grads(lambda x: x.clamp(-1, 1), [-1.0, 1.0, 0.5, 2.0, -2.0]) == [[1.0, 1.0, 1.0, 0.0, 0.0]]
    assert grads(lambda x: x.clamp(min=1), [1.0, 0.0, 2.0]) == [[1.0, 0.0, 1.0]]
    assert grads(lambda x: x.clamp(max=1), [1.0, 0.0, 2.0]) == [[1.0, 1.0, 0.0]]


def test_clamp_with_min_above_max_gives_max_and_no_gradient_to_input():
    x = ag.tensor([-2.0, 0.0, 2.0], dtype=ag.float64, requires_grad=True)
    np.testing.assert_array_equal(x.clamp(1, -1).detach().numpy(), [-1.0, -1.0, -1.0])
    assert grads(lambda t: t.clamp(1, -1), [-2.0, 0.0, 2.0]) == [[0.0, 0.0, 0.0]]


def test_clamp_tensor_bounds_at_ties_follow_pytorch():
    x = [-1.0, 1.0, 0.5, 2.0, -2.0, 0.0]
    lo = [-1.0] * 5 + [1.0]
    hi = [1.0] * 5 + [-1.0]
    assert grads(lambda t, a, b: t.clamp(a, b), x, lo, hi) == [
        [1.0, 1.0, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0, 0.0, 1.0]]
    assert grads(lambda t, a: t.clamp(min=a), [-1.0, 1.0, 0.5], [-1.0, 0.0, 1.0]) == [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    assert grads(lambda t, b: t.clamp(max=b), [-1.0, 1.0, 0.5], [-1.0, 0.0, 1.0]) == [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]


def test_maximum_and_minimum_split_ties_in_half():
    assert grads(ag.maximum, [1.0, 2.0, 3.0], [1.0, 1.0, 4.0]) == [[0.5, 1.0, 0.0], [0.5, 0.0, 1.0]]
    assert grads(ag.minimum, [1.0, 2.0, 3.0], [1.0, 1.0, 4.0]) == [[0.5, 0.0, 1.0], [0.5, 1.0, 0.0]]


def test_maximum_ties_under_broadcasting_sum_back():
    x = ag.tensor([[1.0], [2.0]], dtype=ag.float64, requires_grad=True)
    y = ag.tensor([1.0, 2.0, 0.0], dtype=ag.float64, requires_grad=True)
    gx, gy = grad(ag.maximum(x, y).sum(), [x, y])
    np.testing.assert_array_equal(gx.numpy(), [[1.5], [2.5]])
    np.testing.assert_array_equal(gy.numpy(), [0.5, 1.5, 0.0])


def test_softplus_switches_to_identity_above_threshold():
    x = ag.tensor([2.5, 2.4, 3.0], dtype=ag.float64, requires_grad=True)
    out = ag.softplus(x, beta=2, threshold=5)
    twice = np.array([5.0, 4.8])  # beta x at or below the threshold: log(1 + e^(beta x)) / beta, slope sigmoid(beta x)
    np.testing.assert_allclose(out.detach().numpy(), [*(np.log1p(np.exp(twice)) / 2), 3.0], rtol=1e-14)
    np.testing.assert_allclose(grad(out.sum(), x)[0].numpy(), [*(1 / (1 + np.exp(-twice))), 1.0], rtol=1e-14)


def test_gelu_gradients_match_pytorch_at_a_point():
    x = 0.3  # d/dx x Phi(x) = Phi(x) + x phi(x)
    exact = 0.5 * (1 + math.erf(x / math.sqrt(2))) + x * math.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    assert grads(ag.gelu, [x])[0][0] == pytest.approx(exact, rel=1e-14)
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)  # the tanh form: 0.5 x (1 + tanh u)
    tanh_form = 0.5 * (1 + math.tanh(u)) + 0.5 * x * (1 - math.tanh(u) ** 2) * math.sqrt(2 / math.pi) * (
        1 + 3 * 0.044715 * x * x)
    assert grads(lambda t: ag.gelu(t, approximate="tanh"), [x])[0][0] == pytest.approx(tanh_form, rel=1e-14)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # numpy's, on the way to PyTorch's inf
def test_sqrt_at_zero_has_an_infinite_gradient():
    assert grads(lambda x: x.sqrt(), [0.0]) == [[math.inf]]


# -- casts -----------------------------------------------------------------------------------------------------
def test_casts_are_differentiable_and_gradients_keep_the_input_dtype():
    x = ag.tensor([0.5, -1.25, 3.0], dtype=ag.float64, requires_grad=True)
    w = ag.tensor([2.0, 3.0, 4.0])
    for cast, dtype in [(lambda t: t.float(), ag.float32), (lambda t: t.to(ag.float32), ag.float32),
                        (lambda t: t.half(), ag.float16), (lambda t: t.type(ag.float32), ag.float32),
                        (lambda t: t.to("cpu", ag.float16), ag.float16), (lambda t: t.to(dtype=ag.float32), ag.float32),
                        (lambda t: t.to(w), ag.float32)]:
        out = cast(x)
        assert out.dtype == dtype and out.grad_fn.name() == "ToCopyBackward0"
        (g,) = grad((out * w).sum(), x)
        assert g.dtype == ag.float64
        np.testing.assert_array_equal(g.numpy(), [2.0, 3.0, 4.0])
    y = ag.tensor([1.0, 2.0], dtype=ag.float32, requires_grad=True)
    (g,) = grad((y.double() * 3).sum(), y)
    assert g.dtype == ag.float32 and g.numpy().tolist() == [3.0, 3.0]


def test_casts_that_change_nothing_return_the_tensor_itself():
    x = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    for same in (x.to(ag.float64), x.to("cpu"), x.to(device="cpu"), x.to(x), x.double(), x.type(ag.float64),
                 x.to(ag.devices.cpu)):
        assert same is x
    copied = x.to(ag.float64, copy=True)
    assert copied is not x and copied.grad_fn.name() == "ToCopyBackward0"


def test_casts_to_integers_leave_the_graph():
    x = ag.tensor([1.7, -2.2], dtype=ag.float64, requires_grad=True)
    for out, dtype in [(x.long(), ag.int64), (x.int(), ag.int32), (x.to(ag.int64), ag.int64), (x.bool(), ag.bool_)]:
        assert out.dtype == dtype and out.grad_fn is None and not out.requires_grad
    assert x.long().tolist() == [1, -2]


def test_type_names():
    assert ag.tensor([1.0]).type() == "actorgrad.FloatTensor"
    assert ag.tensor([1.0], dtype=ag.float64).type() == "actorgrad.DoubleTensor"
    assert ag.tensor([1]).type() == "actorgrad.LongTensor"
    assert ag.tensor([1.0]).type("actorgrad.DoubleTensor").dtype == ag.float64


# -- bad input -----------------------------------------------------------------------------------------------------
def test_bad_input_raises_pytorchs_errors():
    x = ag.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        x.clamp()
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, but got a tensor with "
                                           "dtype float32"):
        ag.where(x, x, x)
    with pytest.raises(TypeError, match="condition"):
        ag.where(True, x, x)
    mismatch = r"^The size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton dimension 0$"
    with pytest.raises(RuntimeError, match=mismatch):
        ag.where(x > 1, x, ag.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match=mismatch):
        ag.maximum(x, ag.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match=mismatch):
        x.clamp(ag.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(TypeError, match=r"maximum\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        ag.maximum(x, 1.0)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        ag.gelu(x, approximate="erf")
    with pytest.raises(NotImplementedError, match="\"GeluKernelImpl\" not implemented for 'Long'"):
        ag.gelu(ag.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="Invalid device string: 'cuda:x'"):
        x.to("cuda:x")
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor is not supported"):
        -ag.tensor([True])
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors is not supported"):
        ag.tensor([True]) - ag.tensor([False])
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        ag.tensor([2, 3]) ** -1


def test_number_over_tensor_records_as_pytorch_does():
    x = ag.tensor([0.5, -2.0], dtype=ag.float64, requires_grad=True)
    out = 2 / x
    assert out.grad_fn.name() == "MulBackward0"  # x.reciprocal() * 2
    assert [fn.name() if fn is not None else None for fn, _ in out.grad_fn.next_functions] == [
        "ReciprocalBackward0", None]
    assert grads(lambda t: 2 / t, [0.5, -2.0]) == [[-8.0, -0.5]]


def test_where_with_a_number_records_an_edge_only_for_the_tensor():
    x = ag.tensor([0.5, -2.0], dtype=ag.float64, requires_grad=True)
    out = ag.where(x > 0, 1.0, x)
    assert out.dtype == ag.float64 and out.tolist() == [1.0, -2.0]
    assert out.grad_fn.next_functions[0][0] is None and out.grad_fn.next_functions[1][0] is not None
    assert grads(lambda t: ag.where(t > 0, 1.0, t), [0.5, -2.0]) == [[0.0, 1.0]]
