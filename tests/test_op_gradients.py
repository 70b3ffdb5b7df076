"""Every op's gradient and second derivative against central finite differences, in float64.

Hypothesis draws the shapes and values; `actorgrad.autograd.gradcheck` and `gradgradcheck` compare the whole
Jacobians, at tighter tolerances than their defaults. Inputs are drawn away from kinks and invalid domains, so
central differences are accurate there.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import actorgrad as ag
from actorgrad.autograd import grad


def reversed_dims(x: ag.Tensor) -> ag.Tensor:
    """`x.T`, which PyTorch deprecates off matrices (with a warning, as here) but still runs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return x.T


EPS = 1e-6
RTOL = 1e-5
ATOL = 1e-7

FIRST_ORDER = settings(
    max_examples=25, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SECOND_ORDER = settings(FIRST_ORDER, max_examples=20)


# -- the checkers ------------------------------------------------------------------------------------------------
def _leaves(arrays) -> list:
    """float64 leaves holding copies of `arrays`, keeping their memory layout (a transposed array stays so)."""
    return [ag.tensor(a, dtype=ag.float64, requires_grad=True) for a in arrays]


def _forward(f: Callable, arrays) -> np.ndarray:
    with ag.no_grad():
        out = f(*[ag.tensor(a, dtype=ag.float64) for a in arrays])
    return out.numpy()


def gradcheck(f: Callable, arrays, seed: int = 0) -> None:
    """actorgrad.autograd.gradcheck at this module's tolerances, on float64 leaves holding `arrays`."""
    xs = _leaves(arrays)
    out = f(*xs)
    assert out.dtype == ag.float64, f"a float64 graph gave a {out.dtype} output"
    assert out.requires_grad and out.grad_fn is not None
    for i, g in enumerate(grad(out.sum(), xs)):
        assert g.dtype == ag.float64 and not g.requires_grad, f"gradient of input {i}: {g.dtype}, {g.requires_grad}"
    assert ag.autograd.gradcheck(f, xs, eps=EPS, atol=ATOL, rtol=RTOL)


def gradgradcheck(f: Callable, arrays, seed: int = 0) -> None:
    """actorgrad.autograd.gradgradcheck, after checking that create_graph=True leaves the first gradients as
    they are without it."""
    xs = _leaves(arrays)
    recorded = grad(f(*xs).sum(), xs, create_graph=True)
    fresh = _leaves(arrays)
    plain = grad(f(*fresh).sum(), fresh)
    for i, (g, p) in enumerate(zip(recorded, plain)):
        np.testing.assert_allclose(
            g.detach().numpy(), p.numpy(), rtol=1e-12, atol=1e-14,
            err_msg=f"create_graph=True changed the first gradient of input {i}",
        )
    assert ag.autograd.gradgradcheck(f, xs, eps=EPS, atol=ATOL, rtol=RTOL, seed=seed)


# -- inputs ------------------------------------------------------------------------------------------------------
SEEDS = st.integers(0, 2**32 - 1)
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)
SHAPES_1D_UP = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3)
SIZES = st.integers(1, 3)


def values(kind: str, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    """Inputs of one kind, all at a safe distance from the op's kinks and from its domain's edge."""
    shape = tuple(shape)
    sign = np.asarray(rng.choice([-1.0, 1.0], shape))
    if kind == "any":
        out = rng.uniform(-1.5, 1.5, shape)
    elif kind == "positive":  # log, a tensor base of pow, a fractional power
        out = rng.uniform(0.5, 2.0, shape)
    elif kind == "nonzero":  # relu: |x| >= 0.1, far from the kink at 0
        out = rng.uniform(0.1, 2.0, shape) * sign
    elif kind == "denominator":  # |x| >= 0.5
        out = rng.uniform(0.5, 2.0, shape) * sign
    elif kind == "distinct":  # amax: no ties, neighbours 0.25 apart
        n = math.prod(shape)
        out = ((rng.permutation(n) - n / 2) * 0.25 + rng.uniform(-0.05, 0.05)).reshape(shape)
    else:
        raise ValueError(kind)
    return np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class Case:
    label: str
    fn: Callable
    arrays: tuple
    ref: Callable | None = None  # numpy forward, to check values and shape
    seed: int = 0

    def __repr__(self) -> str:
        return f"Case({self.label}, shapes={[a.shape for a in self.arrays]})"

    def check_forward(self) -> None:
        if self.ref is None:
            return
        got = _forward(self.fn, self.arrays)
        want = np.asarray(self.ref(*self.arrays))
        assert got.shape == want.shape, f"{self.label}: forward shape {got.shape}, numpy gives {want.shape}"
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@st.composite
def unary(draw, label, fn, ref, kind="any", shapes=SHAPES):
    shape = draw(shapes)
    seed = draw(SEEDS)
    rng = np.random.default_rng(seed)
    return Case(label, fn, (values(kind, shape, rng),), ref, seed)


@st.composite
def binary(draw, label, fn, ref, kinds=("any", "any")):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=3))
    seed = draw(SEEDS)
    rng = np.random.default_rng(seed)
    arrays = tuple(values(k, s, rng) for k, s in zip(kinds, shapes.input_shapes))
    return Case(label, fn, arrays, ref, seed)


@st.composite
def dims(draw, ndim: int):
    """A dim argument for a tensor of `ndim` >= 1 dims: an int (maybe negative) or a tuple of distinct dims."""
    if draw(st.booleans()):
        return draw(st.integers(-ndim, ndim - 1))
    chosen = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return tuple(d - ndim if draw(st.booleans()) else d for d in chosen)


def _np_axis(dim):
    return dim if dim is None or isinstance(dim, int) else tuple(dim)


@st.composite
def reduction(draw, op: str):
    """sum / mean over all dims (dim=None or left out) or over an int / negative int / tuple dim."""
    shape = draw(SHAPES)
    keepdim = draw(st.booleans())
    seed = draw(SEEDS)
    arrays = (values("any", shape, np.random.default_rng(seed)),)
    np_op = {"sum": np.sum, "mean": np.mean}[op]
    ag_op = {"sum": ag.sum, "mean": ag.mean}[op]
    if not shape or draw(st.booleans()):
        if draw(st.booleans()):
            return Case(f"{op}()", lambda x: getattr(x, op)(), arrays, lambda a: np_op(a), seed)
        return Case(f"{op}(None, keepdim={keepdim})", lambda x: ag_op(x, None, keepdim=keepdim), arrays,
                    lambda a: np_op(a, keepdims=keepdim), seed)
    dim = draw(dims(len(shape)))
    return Case(f"{op}({dim}, keepdim={keepdim})", lambda x: getattr(x, op)(dim, keepdim=keepdim), arrays,
                lambda a: np_op(a, axis=_np_axis(dim), keepdims=keepdim), seed)


@st.composite
def amax_case(draw):
    shape = draw(SHAPES)
    keepdim = draw(st.booleans())
    seed = draw(SEEDS)
    arrays = (values("distinct", shape, np.random.default_rng(seed)),)
    if not shape or draw(st.booleans()):
        return Case("amax()", lambda x: x.amax(), arrays, np.amax, seed)
    dim = draw(dims(len(shape)))
    return Case(f"amax({dim}, keepdim={keepdim})", lambda x: ag.amax(x, dim, keepdim=keepdim), arrays,
                lambda a: np.amax(a, axis=_np_axis(dim), keepdims=keepdim), seed)


def _np_log_softmax(a, dim):
    shifted = a - np.amax(a, axis=dim, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))


@st.composite
def log_softmax_case(draw):
    shape = draw(SHAPES_1D_UP)
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    seed = draw(SEEDS)
    arrays = (values("any", shape, np.random.default_rng(seed)) * 2,)
    return Case(f"log_softmax({dim})", lambda x: x.log_softmax(dim), arrays,
                lambda a: _np_log_softmax(a, dim), seed)


@st.composite
def reshape_case(draw):
    shape = draw(SHAPES)
    n = math.prod(shape)
    divisor = draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
    target = draw(st.sampled_from([(-1,), (n,), tuple(reversed(shape)), (1, *shape), (divisor, -1),
                                   (divisor, n // divisor), ()] if n == 1 else
                                  [(-1,), (n,), tuple(reversed(shape)), (1, *shape), (divisor, -1),
                                   (divisor, n // divisor)]))
    as_tuple = draw(st.booleans()) or not target  # reshape() with no shape is refused, as PyTorch's
    seed = draw(SEEDS)
    arrays = (values("any", shape, np.random.default_rng(seed)),)
    fn = (lambda x: x.reshape(target)) if as_tuple else (lambda x: ag.reshape(x, *target))
    return Case(f"reshape{target}", fn, arrays, lambda a: a.reshape(target), seed)


@st.composite
def transpose_case(draw):
    shape = draw(SHAPES_1D_UP)
    d0, d1 = (draw(st.integers(-len(shape), len(shape) - 1)) for _ in range(2))
    seed = draw(SEEDS)
    arrays = (values("any", shape, np.random.default_rng(seed)),)
    return Case(f"transpose({d0}, {d1})", lambda x: x.transpose(d0, d1), arrays,
                lambda a: np.swapaxes(a, d0, d1), seed)


@st.composite
def permute_case(draw):
    shape = draw(SHAPES)
    order = draw(st.permutations(range(len(shape))))
    order = tuple(d - len(shape) if draw(st.booleans()) else d for d in order)
    seed = draw(SEEDS)
    arrays = (values("any", shape, np.random.default_rng(seed)),)
    if order and draw(st.booleans()):  # a 0-d tensor's permute() with no dims is refused, as PyTorch's
        fn = lambda x: x.permute(*order)  # noqa: E731
    else:
        fn = lambda x: ag.permute(x, order)  # noqa: E731
    return Case(f"permute{order}", fn, arrays, lambda a: np.transpose(a, [d % len(shape) for d in order]), seed)


@st.composite
def broadcast_case(draw):
    shape = draw(SHAPES)
    lead = tuple(draw(st.lists(SIZES, max_size=2)))
    target = lead + tuple(draw(st.integers(1, 3)) if n == 1 else n for n in shape)
    seed = draw(SEEDS)
    arrays = (values("any", shape, np.random.default_rng(seed)),)
    return Case(f"broadcast_to{target}", lambda x: x.broadcast_to(target), arrays,
                lambda a: np.broadcast_to(a, target), seed)


MATMUL_SHAPES = {
    "dot 1-D@1-D": lambda b, m, n, p: ((n,), (n,)),
    "mv 2-D@1-D": lambda b, m, n, p: ((m, n), (n,)),
    "vm 1-D@2-D": lambda b, m, n, p: ((n,), (n, p)),
    "mm 2-D@2-D": lambda b, m, n, p: ((m, n), (n, p)),
    "bmm 3-D@3-D": lambda b, m, n, p: ((b, m, n), (b, n, p)),
    "3-D@1-D": lambda b, m, n, p: ((b, m, n), (n,)),
    "1-D@3-D": lambda b, m, n, p: ((n,), (b, n, p)),
    "3-D@2-D": lambda b, m, n, p: ((b, m, n), (n, p)),
    "2-D@3-D": lambda b, m, n, p: ((m, n), (b, n, p)),
    "batch broadcast (2,1,m,n)@(3,n,p)": lambda b, m, n, p: ((2, 1, m, n), (3, n, p)),
    "batch broadcast (1,m,n)@(b,n,p)": lambda b, m, n, p: ((1, m, n), (b, n, p)),
}


@st.composite
def matmul_case(draw, label):
    sa, sb = MATMUL_SHAPES[label](*(draw(SIZES) for _ in range(4)))
    seed = draw(SEEDS)
    rng = np.random.default_rng(seed)
    fn = (lambda x, y: x @ y) if draw(st.booleans()) else ag.matmul
    return Case(f"matmul {sa}@{sb}", fn, (values("any", sa, rng), values("any", sb, rng)), np.matmul, seed)


@st.composite
def two_d(draw, label, fn, ref, kinds=("any",), shapes=None, transposed_leaf=False):
    """Cases on 2-D (or given) shapes; with `transposed_leaf` the inputs are Fortran-ordered (a transposed
    array), so the leaves themselves are not C-contiguous."""
    m, n, p = (draw(SIZES) + 1 for _ in range(3))
    seed = draw(SEEDS)
    rng = np.random.default_rng(seed)
    shapes = shapes(m, n, p) if shapes is not None else [(m, n)] * len(kinds)
    arrays = tuple(values(k, s, rng) for k, s in zip(kinds, shapes))
    if transposed_leaf:
        arrays = tuple(np.asfortranarray(a) for a in arrays)
    return Case(label, fn, arrays, ref, seed)


def _unary_cases() -> dict:
    u = {
        "neg": (lambda x: -x, np.negative, "any"),
        "neg method": (lambda x: x.neg(), np.negative, "any"),
        "ag.neg": (ag.neg, np.negative, "any"),
        "exp": (lambda x: x.exp(), np.exp, "any"),
        "ag.exp": (ag.exp, np.exp, "any"),
        "log": (lambda x: x.log(), np.log, "positive"),
        "ag.log": (ag.log, np.log, "positive"),
        "tanh": (lambda x: x.tanh(), np.tanh, "any"),
        "ag.tanh": (ag.tanh, np.tanh, "any"),
        "sigmoid": (lambda x: x.sigmoid(), lambda a: 1 / (1 + np.exp(-a)), "any"),
        "ag.sigmoid": (ag.sigmoid, lambda a: 1 / (1 + np.exp(-a)), "any"),
        "relu": (lambda x: x.relu(), lambda a: np.maximum(a, 0), "nonzero"),
        "ag.relu": (ag.relu, lambda a: np.maximum(a, 0), "nonzero"),
        # Python numbers on either side of a tensor
        "x + 2.5": (lambda x: x + 2.5, lambda a: a + 2.5, "any"),
        "2.5 + x": (lambda x: 2.5 + x, lambda a: 2.5 + a, "any"),
        "x - 1.5": (lambda x: x - 1.5, lambda a: a - 1.5, "any"),
        "1 - x": (lambda x: 1 - x, lambda a: 1 - a, "any"),
        "x * 3": (lambda x: x * 3, lambda a: a * 3, "any"),
        "2 * x": (lambda x: 2 * x, lambda a: 2 * a, "any"),
        "x / 4": (lambda x: x / 4, lambda a: a / 4, "any"),
        "2 / x": (lambda x: 2 / x, lambda a: 2 / a, "denominator"),
        "x ** 3": (lambda x: x**3, lambda a: a**3, "any"),
        "x ** 2 (ag.pow)": (lambda x: ag.pow(x, 2), lambda a: a**2, "any"),
        "x ** 1": (lambda x: x**1, lambda a: a**1, "any"),
        "x ** 0": (lambda x: x**0, np.ones_like, "any"),
        "x ** 2.5": (lambda x: x**2.5, lambda a: a**2.5, "positive"),
        "x ** -1.5": (lambda x: x**-1.5, lambda a: a**-1.5, "positive"),
        "x ** 0.5": (lambda x: x**0.5, np.sqrt, "positive"),
        "2 ** x": (lambda x: 2**x, lambda a: 2**a, "any"),
        "0.5 ** x": (lambda x: 0.5**x, lambda a: 0.5**a, "any"),
        # a leaf used more than once: gradients from several paths are summed
        "x * x": (lambda x: x * x, lambda a: a * a, "any"),
        "x * exp(x) - x": (lambda x: x * x.exp() - x, lambda a: a * np.exp(a) - a, "any"),
        "tanh(sigmoid(x)) * x": (lambda x: x.sigmoid().tanh() * x, lambda a: np.tanh(1 / (1 + np.exp(-a))) * a,
                                 "any"),
    }
    return {name: unary(name, fn, ref, kind) for name, (fn, ref, kind) in u.items()}


def _binary_cases() -> dict:
    b = {
        "a + b": (lambda x, y: x + y, np.add, ("any", "any")),
        "ag.add": (ag.add, np.add, ("any", "any")),
        "a - b": (lambda x, y: x - y, np.subtract, ("any", "any")),
        "ag.sub": (ag.sub, np.subtract, ("any", "any")),
        "a * b": (lambda x, y: x * y, np.multiply, ("any", "any")),
        "ag.mul": (ag.mul, np.multiply, ("any", "any")),
        "a / b": (lambda x, y: x / y, np.divide, ("any", "denominator")),
        "ag.div": (ag.div, np.divide, ("any", "denominator")),
        "a ** b": (lambda x, y: x**y, np.power, ("positive", "any")),
        "ag.pow": (ag.pow, np.power, ("positive", "any")),
        "a * b + a / b": (lambda x, y: x * y + x / y, lambda a, b: a * b + a / b, ("any", "denominator")),
    }
    return {name: binary(name, fn, ref, kinds) for name, (fn, ref, kinds) in b.items()}


def _noncontiguous_cases() -> dict:
    return {
        "transposed leaf: exp": two_d("F-ordered leaf exp", lambda x: x.exp(), np.exp, transposed_leaf=True),
        "transposed leaf: matmul": two_d(
            "F-ordered leaves a @ b", lambda x, y: x @ y, np.matmul, ("any", "any"),
            lambda m, n, p: [(m, n), (n, p)], transposed_leaf=True,
        ),
        "transposed leaf: a * b broadcast": two_d(
            "F-ordered leaves a * b", lambda x, y: x * y, np.multiply, ("any", "any"),
            lambda m, n, p: [(m, n), (1, n)], transposed_leaf=True,
        ),
        "a.T @ b": two_d("a.T @ b", lambda x, y: x.T @ y, lambda a, b: a.T @ b, ("any", "any"),
                         lambda m, n, p: [(n, m), (n, p)]),
        "a @ b.transpose(0, 1)": two_d("a @ b.transpose(0, 1)", lambda x, y: x @ y.transpose(0, 1),
                                       lambda a, b: a @ b.T, ("any", "any"), lambda m, n, p: [(m, n), (p, n)]),
        "a.T * b": two_d("a.T * b", lambda x, y: x.T * y, lambda a, b: a.T * b, ("any", "denominator"),
                         lambda m, n, p: [(n, m), (m, 1)]),
        "a.T / b": two_d("a.T / b", lambda x, y: x.T / y, lambda a, b: a.T / b, ("any", "denominator"),
                         lambda m, n, p: [(n, m), (m, n)]),
        "a.T.reshape(-1)": two_d("a.T.reshape(-1)", lambda x: x.T.reshape(-1), lambda a: a.T.reshape(-1)),
        "a.T.log_softmax(-1)": two_d("a.T.log_softmax(-1)", lambda x: x.T.log_softmax(-1),
                                     lambda a: _np_log_softmax(a.T, -1)),
        "a.T.sum(0)": two_d("a.T.sum(0)", lambda x: x.T.sum(0), lambda a: a.T.sum(0)),
        "permute(2, 0, 1).tanh().mean(1)": two_d(
            "permute(2, 0, 1).tanh().mean(1)", lambda x: x.permute(2, 0, 1).tanh().mean(1),
            lambda a: np.tanh(a.transpose(2, 0, 1)).mean(1), shapes=lambda m, n, p: [(m, n, p)],
        ),
        "broadcast_to then * b": two_d(
            "a.broadcast_to((m, n)) * b", lambda x, y: x.broadcast_to(y.shape) * y, np.multiply,
            ("any", "any"), lambda m, n, p: [(1, n), (m, n)],
        ),
        "amax of a transposed": two_d("a.T.amax(0)", lambda x: x.T.amax(0), lambda a: a.T.max(0), ("distinct",)),
        "tanh(a @ w + c).log_softmax(1)": two_d(
            "tanh(a @ w + c).log_softmax(1)", lambda x, w, c: (x @ w + c).tanh().log_softmax(1),
            lambda a, w, c: _np_log_softmax(np.tanh(a @ w + c), 1), ("any", "any", "any"),
            lambda m, n, p: [(m, n), (n, p), (p,)],
        ),
    }


CASES = {
    **_unary_cases(),
    **_binary_cases(),
    "sum": reduction("sum"),
    "mean": reduction("mean"),
    "amax": amax_case(),
    "log_softmax": log_softmax_case(),
    "reshape": reshape_case(),
    "transpose": transpose_case(),
    ".T": unary(".T", reversed_dims, lambda a: a.T),
    "permute": permute_case(),
    "broadcast_to": broadcast_case(),
    **{f"matmul {label}": matmul_case(label) for label in MATMUL_SHAPES},
    **_noncontiguous_cases(),
}


@pytest.mark.parametrize("name", list(CASES))
@FIRST_ORDER
@given(data=st.data())
def test_gradient_matches_finite_differences(name, data):
    case = data.draw(CASES[name], label="case")
    case.check_forward()
    gradcheck(case.fn, case.arrays, case.seed)


@pytest.mark.parametrize("name", list(CASES))
@SECOND_ORDER
@given(data=st.data())
def test_second_derivative_matches_finite_differences(name, data):
    case = data.draw(CASES[name], label="case")
    gradgradcheck(case.fn, case.arrays, case.seed)


# -- fixed broadcasting and matmul shapes ------------------------------------------------------------------------
BINARY_OPS = {
    "add": (lambda x, y: x + y, ("any", "any")),
    "sub": (lambda x, y: x - y, ("any", "any")),
    "mul": (lambda x, y: x * y, ("any", "any")),
    "div": (lambda x, y: x / y, ("any", "denominator")),
    "pow": (lambda x, y: x**y, ("positive", "any")),
}
BROADCAST_PAIRS = [((3, 1), (4,)), ((4,), (3, 1)), ((2, 1, 3), (5, 3)), ((5, 3), (2, 1, 3)), ((), (2, 3)),
                   ((2, 3), ()), ((1,), (2, 2)), ((2, 1, 1), (1, 3, 2))]


@pytest.mark.parametrize("shapes", BROADCAST_PAIRS, ids=str)
@pytest.mark.parametrize("op", list(BINARY_OPS))
def test_binary_broadcasting(op, shapes):
    fn, kinds = BINARY_OPS[op]
    rng = np.random.default_rng(7)
    arrays = tuple(values(k, s, rng) for k, s in zip(kinds, shapes))
    out = fn(*_leaves(arrays))
    assert out.shape == np.broadcast_shapes(*shapes)
    gradcheck(fn, arrays, seed=1)
    gradgradcheck(fn, arrays, seed=2)


@pytest.mark.parametrize(
    "sa, sb",
    [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)), ((3, 4), (4, 2)), ((2, 3, 4), (2, 4, 2)),
     ((2, 1, 3, 4), (5, 4, 2)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3))],
    ids=str,
)
def test_matmul_shapes(sa, sb):
    rng = np.random.default_rng(3)
    arrays = (values("any", sa, rng), values("any", sb, rng))
    assert _forward(ag.matmul, arrays).shape == np.matmul(*arrays).shape
    gradcheck(ag.matmul, arrays, seed=4)
    gradgradcheck(ag.matmul, arrays, seed=5)


# -- amax with ties ----------------------------------------------------------------------------------------------
def _grad_np(out, x, grad_outputs=None):
    (g,) = grad(out, x, grad_outputs)
    return g.numpy()


def test_amax_ties_share_the_gradient_evenly():
    x = ag.tensor(np.array([1.0, 3.0, 3.0]), requires_grad=True)
    np.testing.assert_allclose(_grad_np(x.amax(), x), [0.0, 0.5, 0.5])


def test_amax_ties_along_a_dim():
    x = ag.tensor(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0], [4.0, 4.0, 4.0]]), requires_grad=True)
    g_out = ag.tensor(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(
        _grad_np(x.amax(1), x, g_out), [[0.0, 0.5, 0.5], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    )
    y = ag.tensor(np.array([[1.0, 4.0, 3.0], [4.0, 2.0, 3.0], [4.0, 4.0, 0.0]]), requires_grad=True)
    np.testing.assert_allclose(
        _grad_np(y.amax(-2, keepdim=True), y, ag.tensor(np.array([[6.0, 6.0, 6.0]]))),
        [[0.0, 3.0, 3.0], [3.0, 0.0, 3.0], [3.0, 3.0, 0.0]],
    )


def test_amax_ties_over_several_dims():
    data = np.zeros((2, 2, 3))
    data[0, 1, 2] = data[1, 0, 0] = data[1, 1, 1] = 5.0
    data[0, 0, 0] = 5.0 - 1e-9
    x = ag.tensor(data, requires_grad=True)
    expected = np.zeros((2, 2, 3))
    expected[0, 1, 2] = expected[1, 0, 0] = expected[1, 1, 1] = 1 / 3
    np.testing.assert_allclose(_grad_np(x.amax((0, -1, 1)), x), expected)
    np.testing.assert_allclose(_grad_np(x.amax(), x), expected)


def test_amax_ties_second_derivative_is_zero():
    x = ag.tensor(np.array([[1.0, 3.0, 3.0], [0.5, 0.2, 0.1]]), requires_grad=True)
    (g,) = grad((x.amax(1) * ag.tensor(np.array([2.0, 5.0]))).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [[0.0, 1.0, 1.0], [5.0, 0.0, 0.0]])
    s = (g * ag.tensor(np.arange(6.0).reshape(2, 3))).sum()
    if s.requires_grad:
        (h,) = grad(s, x, allow_unused=True)
        assert h is None or not np.any(h.numpy())


# -- fixed reduction dims (the hypothesis cases draw these too; here each form is certain to run) ------------
REDUCTIONS = {
    "sum": (lambda x, d, k: x.sum(d, keepdim=k), lambda a, d, k: np.sum(a, axis=d, keepdims=k), "any"),
    "mean": (lambda x, d, k: x.mean(d, keepdim=k), lambda a, d, k: np.mean(a, axis=d, keepdims=k), "any"),
    "amax": (lambda x, d, k: x.amax(() if d is None else d, keepdim=k),
             lambda a, d, k: np.amax(a, axis=d, keepdims=k), "distinct"),
}


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [None, 0, 2, -1, -3, (0, 2), (-1, 0), (1,), (0, 1, 2)], ids=str)
@pytest.mark.parametrize("op", list(REDUCTIONS))
def test_reduction_dims(op, dim, keepdim):
    fn, ref, kind = REDUCTIONS[op]
    arrays = (values(kind, (2, 3, 4), np.random.default_rng(11)),)
    case = Case(f"{op}({dim}, keepdim={keepdim})", lambda x: fn(x, dim, keepdim), arrays,
                lambda a: ref(a, dim, keepdim))
    case.check_forward()
    gradcheck(case.fn, arrays, seed=12)
    gradgradcheck(case.fn, arrays, seed=13)
