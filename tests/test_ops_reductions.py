"""The reductions (prod, max/min, amin, argmax/argmin, logsumexp, softmax, var, std, norm, cumsum): forward values
against numpy, gradients and second derivatives against finite differences, PyTorch's rules at ties and zeros,
node names and PyTorch's errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import actorgrad as ag
from actorgrad.autograd import grad

TOLERANCES = dict(eps=1e-6, atol=1e-7, rtol=1e-5)
CHECKS = settings(max_examples=15, deadline=None, database=None, suppress_health_check=list(HealthCheck))
INF = float("inf")


def leaf(values) -> ag.Tensor:
    return ag.tensor(np.asarray(values, dtype=np.float64), dtype=ag.float64, requires_grad=True)


def spaced_values(shape: tuple, rng: np.random.Generator) -> np.ndarray:
    """Magnitudes in [0.5, 1.5], all at least 1/(2n) apart, random signs: no ties (even of |x|), no zeros."""
    n = math.prod(shape)
    magnitudes = 0.5 + (rng.permutation(n) + rng.uniform(0.2, 0.3)) / n
    return (magnitudes * rng.choice([-1.0, 1.0], n)).reshape(shape)


def hessian(f, values) -> np.ndarray:
    """d²f/dx² by differentiating the recorded first gradient once per element."""
    x = leaf(values)
    (g,) = grad(f(x), x, create_graph=True)
    rows = []
    for onehot in np.eye(x.numel()):
        (row,) = grad((g.reshape(-1) * ag.tensor(onehot)).sum(), x, retain_graph=True)
        rows.append(row.numpy().ravel())
    return np.array(rows)


def array(t: ag.Tensor) -> np.ndarray:
    return t.detach().numpy()


def first_grad(f, values) -> np.ndarray:
    x = leaf(values)
    (g,) = grad(f(x).sum(), x)
    return g.numpy()


# -- gradients over drawn shapes, dims and keepdim ----------------------------------------------------------------
def _dims(draw, ndim: int, tuples: bool):
    if not tuples or draw(st.booleans()):
        return draw(st.integers(-ndim, ndim - 1))
    chosen = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return tuple(d - ndim if draw(st.booleans()) else d for d in chosen)


def _axis(dim):
    return dim if isinstance(dim, int) else tuple(dim)


def _count(shape, dim) -> int:
    return math.prod(shape[d] for d in ((dim,) if isinstance(dim, int) else dim))


def _np_logsumexp(a, dim, keepdim):
    m = np.amax(a, axis=_axis(dim), keepdims=True)
    out = np.log(np.exp(a - m).sum(axis=_axis(dim), keepdims=True)) + m
    return out if keepdim else np.squeeze(out, axis=_axis(dim))


def _np_norm(a, p, dim, keepdim):
    m = np.abs(a)
    axis = _axis(dim) if dim is not None else None
    if p == INF:
        return m.max(axis=axis, keepdims=keepdim)
    if p == -INF:
        return m.min(axis=axis, keepdims=keepdim)
    p = 2 if p == "fro" else p
    return (m**p).sum(axis=axis, keepdims=keepdim) ** (1 / p)


def _case(draw, op: str, shape: tuple):
    """(label, actorgrad function, numpy reference) for one drawn call of `op` on a tensor of `shape`."""
    keepdim = draw(st.booleans())
    whole = draw(st.booleans())
    if op == "prod":
        if whole:
            return "prod()", lambda x: x.prod(), np.prod
        d = _dims(draw, len(shape), tuples=False)
        return f"prod({d}, {keepdim})", lambda x: ag.prod(x, d, keepdim=keepdim), lambda a: a.prod(d, keepdims=keepdim)
    if op in ("max", "min"):
        if whole:
            return f"{op}()", lambda x: getattr(x, op)(), getattr(np, f"a{op}")
        d = _dims(draw, len(shape), tuples=False)
        return (f"{op}({d}, {keepdim}).values", lambda x: getattr(ag, op)(x, d, keepdim=keepdim).values,
                lambda a: getattr(np, f"a{op}")(a, axis=d, keepdims=keepdim))
    if op == "amin":
        d = () if whole else _dims(draw, len(shape), tuples=True)
        return (f"amin({d}, {keepdim})", lambda x: x.amin(d, keepdim),
                lambda a: np.amin(a, None if d == () else _axis(d), keepdims=keepdim))
    if op == "logsumexp":
        d = _dims(draw, len(shape), tuples=True)
        return (f"logsumexp({d}, {keepdim})", lambda x: ag.logsumexp(x, d, keepdim=keepdim),
                lambda a: _np_logsumexp(a, d, keepdim))
    if op == "softmax":
        d = _dims(draw, len(shape), tuples=False)
        return f"softmax({d})", lambda x: x.softmax(d), lambda a: np.exp(a - _np_logsumexp(a, d, True))
    if op in ("var", "std"):
        d = None if whole else _dims(draw, len(shape), tuples=True)
        count = math.prod(shape) if d is None else _count(shape, d)
        correction = draw(st.integers(0, min(2, count - 1)))
        np_op = getattr(np, op)
        return (f"{op}({d}, correction={correction}, {keepdim})",
                lambda x: getattr(x, op)(d, keepdim=keepdim, correction=correction),
                lambda a: np_op(a, axis=None if d is None else _axis(d), ddof=correction, keepdims=keepdim))
    if op == "norm":
        # (p=0 has no gradient at all, as in PyTorch: tests/test_torch_parity_leftovers.py)
        p = draw(st.sampled_from(["fro", 1, 2, 3, 1.5, 0.5, -1.5, INF, -INF]))
        d = None if whole else _dims(draw, len(shape), tuples=True)
        return (f"norm({p}, {d}, {keepdim})", lambda x: ag.norm(x, p, dim=d, keepdim=keepdim),
                lambda a: _np_norm(a, p, d, keepdim))
    if op == "cumsum":
        d = _dims(draw, len(shape), tuples=False)
        return f"cumsum({d})", lambda x: x.cumsum(d), lambda a: np.cumsum(a, axis=d)
    raise ValueError(op)


OPS = ["prod", "max", "min", "amin", "logsumexp", "softmax", "var", "std", "norm", "cumsum"]
SECOND_DERIVATIVE_ZERO = {"max", "min", "amin", "cumsum"}


@pytest.mark.parametrize("op", OPS)
@CHECKS
@given(data=st.data())
def test_gradients_and_second_derivatives_match_finite_differences(op, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3), label="shape")
    transposed = len(shape) >= 2 and data.draw(st.booleans(), label="transposed")
    values = spaced_values(shape, np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed")))
    label, f, ref = _case(data.draw, op, shape[::-1] if transposed else shape)
    if transposed and data.draw(st.booleans(), label="Fortran-ordered leaf"):
        values = np.asfortranarray(values)
    if transposed:  # the op runs on a non-contiguous view
        f, ref, label = (
            (lambda g: lambda x: g(x.permute(*reversed(range(x.ndim)))))(f), (lambda r: lambda a: r(a.T))(ref),
            f"{label} of x reversed",
        )
    with ag.no_grad():
        got = f(ag.tensor(values, dtype=ag.float64)).numpy()
    want = np.asarray(ref(values))
    assert got.shape == want.shape, label
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=label)
    x = leaf(values)
    assert ag.autograd.gradcheck(f, [x], **TOLERANCES), label
    cotangent = ag.tensor(np.random.default_rng(0).uniform(-1, 1, got.shape))
    (recorded,) = grad((f(x) * cotangent).sum(), x, create_graph=True)  # the rule run on tensors, not arrays
    np.testing.assert_allclose(array(recorded), first_grad(lambda t: f(t) * cotangent, values), rtol=1e-12,
                               atol=1e-14, err_msg=f"{label}: create_graph=True changed the gradient")
    if op not in SECOND_DERIVATIVE_ZERO or data.draw(st.booleans(), label="gradgrad of a linear backward"):
        assert ag.autograd.gradgradcheck(f, [x], **TOLERANCES), label


# -- prod at zeros ------------------------------------------------------------------------------------------------
def test_prod_with_one_zero_gives_that_element_the_product_of_the_others():
    np.testing.assert_array_equal(first_grad(lambda x: x.prod(), [2.0, 0.0, 3.0]), [0.0, 6.0, 0.0])
    np.testing.assert_array_equal(first_grad(lambda x: x.prod(1), [[2.0, 0.0, 3.0], [1.0, 2.0, 4.0]]),
                                  [[0.0, 6.0, 0.0], [8.0, 4.0, 2.0]])
    # d²/dx_i dx_j = the product of the elements other than i and j
    np.testing.assert_array_equal(hessian(lambda x: x.prod(), [2.0, 0.0, 3.0]),
                                  [[0.0, 3.0, 0.0], [3.0, 0.0, 2.0], [0.0, 2.0, 0.0]])


def test_prod_with_two_zeros_gives_zero_gradients_but_a_second_derivative():
    np.testing.assert_array_equal(first_grad(lambda x: x.prod(), [0.0, 5.0, 0.0]), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(hessian(lambda x: x.prod(), [0.0, 5.0, 0.0]),
                                  [[0.0, 0.0, 5.0], [0.0, 0.0, 0.0], [5.0, 0.0, 0.0]])
    x = leaf([[0.0, 2.0], [0.0, 3.0], [1.5, 0.0]])
    assert ag.autograd.gradgradcheck(lambda t: t.prod(0), [x], **TOLERANCES)
    assert ag.autograd.gradgradcheck(lambda t: t.T.prod(), [x], **TOLERANCES)


# -- max and min: ties and indices --------------------------------------------------------------------------------
def test_max_and_min_along_a_dim_send_the_gradient_to_the_returned_index_only():
    x = leaf([[1.0, 3.0, 3.0, 2.0]])
    values, indices = x.max(1)
    assert indices.tolist() == [1] and values.tolist() == [3.0]
    (g,) = grad(values.sum(), x)
    np.testing.assert_array_equal(g.numpy(), [[0.0, 1.0, 0.0, 0.0]])
    y = leaf([[1.0, 1.0, 3.0, 1.0], [2.0, 0.0, 0.0, 5.0]])
    result = ag.min(y, dim=-1, keepdim=True)
    assert result.indices.tolist() == [[0], [1]]
    (g,) = grad(result.values.sum(), y)
    np.testing.assert_array_equal(g.numpy(), [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])


def test_max_and_min_over_all_elements_split_the_gradient_over_ties():
    np.testing.assert_array_equal(first_grad(lambda x: x.max(), [1.0, 3.0, 3.0, 2.0]), [0.0, 0.5, 0.5, 0.0])
    np.testing.assert_array_equal(first_grad(lambda x: ag.min(x), [[1.0, 4.0], [1.0, 1.0]]),
                                  [[1 / 3, 0.0], [1 / 3, 1 / 3]])
    np.testing.assert_array_equal(first_grad(lambda x: x.amin(0), [[1.0, 4.0], [1.0, 2.0]]), [[0.5, 0.0], [0.5, 1.0]])


def test_max_along_a_dim_is_a_named_tuple_with_int64_indices_without_gradient():
    a = np.random.default_rng(1).permutation(12).reshape(3, 4).astype(np.float64)
    result = leaf(a).max(0)
    assert type(result).__name__ == "max" and result._fields == ("values", "indices")
    assert result.values.grad_fn.name() == "MaxBackward0"
    assert result.indices.dtype == ag.int64 and result.indices.grad_fn is None and not result.indices.requires_grad
    np.testing.assert_array_equal(result.indices.numpy(), a.argmax(0))
    assert type(leaf(a).min(1)).__name__ == "min"
    scalar = leaf(2.5).max(0)
    assert scalar.values.item() == 2.5 and scalar.indices.item() == 0 and scalar.indices.shape == ()


def test_argmax_and_argmin_return_int64_indices_as_numpy_does():
    a = np.random.default_rng(2).permutation(24).reshape(2, 3, 4).astype(np.float64)
    x = leaf(a)
    for op in ("argmax", "argmin"):
        for dim in (None, 0, -1, 1):
            for keepdim in (False, True):
                out = getattr(x, op)(dim, keepdim=keepdim)
                want = getattr(np, op)(a, axis=dim, keepdims=keepdim)
                assert out.dtype == ag.int64 and out.grad_fn is None and not out.requires_grad
                np.testing.assert_array_equal(out.numpy(), want, err_msg=f"{op}({dim}, {keepdim})")
    assert x.argmax(keepdim=True).shape == (1, 1, 1)
    assert ag.argmax(leaf([1.0, 3.0, 3.0])).item() == 1  # the first of tied maxima, as in PyTorch


# -- norms, logsumexp, softmax, var, cumsum at their edges --------------------------------------------------------
@pytest.mark.parametrize("p", ["fro", 1, 2, 3, 0.5])
def test_norm_of_zeros_has_zero_gradient(p):
    x = leaf(np.zeros((2, 3)))
    out = x.norm(p)
    assert out.item() == 0.0
    (g,) = grad(out, x)
    np.testing.assert_array_equal(g.numpy(), np.zeros((2, 3)))


def test_inf_norms_split_the_gradient_over_ties_with_the_sign():
    np.testing.assert_array_equal(first_grad(lambda x: x.norm(INF), [1.0, -3.0, 3.0, 2.0]), [0.0, -0.5, 0.5, 0.0])
    np.testing.assert_allclose(first_grad(lambda x: ag.norm(x, -INF), [-1.0, 3.0, 1.0, -1.0]),
                               [-1 / 3, 0.0, 1 / 3, -1 / 3], rtol=1e-15)


def test_logsumexp_of_a_row_of_minus_inf_is_minus_inf():
    x = leaf([[-INF, -INF, -INF], [1.0, 2.0, 3.0]])
    out = x.logsumexp(1)
    assert array(out)[0] == -INF
    np.testing.assert_allclose(array(out)[1], np.log(np.exp([1.0, 2.0, 3.0]).sum()), rtol=1e-15)
    with np.errstate(invalid="ignore"):
        (g,) = grad(out.sum(), x)
    assert np.isnan(g.numpy()[0]).all()  # as in PyTorch
    np.testing.assert_allclose(g.numpy()[1], np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum(), rtol=1e-14)
    large = leaf([1000.0, 1000.0])
    np.testing.assert_allclose(large.logsumexp(0).item(), 1000.0 + np.log(2.0), rtol=1e-15)


def test_softmax_is_the_exponential_of_log_softmax():
    a = np.random.default_rng(3).uniform(-3, 3, (3, 4))
    for dim in (0, 1, -1):
        np.testing.assert_allclose(array(leaf(a).softmax(dim)), array(ag.exp(leaf(a).log_softmax(dim))), rtol=1e-14)
    assert ag.softmax(leaf(a), 1).grad_fn.name() == "SoftmaxBackward0"


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_and_std_divide_by_count_minus_correction(correction):
    a = np.random.default_rng(4).uniform(-2, 2, (3, 4))
    np.testing.assert_allclose(array(leaf(a).var(1, correction=correction)), a.var(1, ddof=correction), rtol=1e-14)
    np.testing.assert_allclose(array(ag.std(leaf(a), correction=correction)), a.std(ddof=correction), rtol=1e-14)
    assert ag.autograd.gradgradcheck(lambda x: x.std((0, 1), correction=correction), [leaf(a)], **TOLERANCES)


def test_var_legacy_unbiased_and_a_correction_beyond_the_count():
    a = np.array([[2.0, 3.0], [1.0, 1.0]])
    np.testing.assert_allclose(array(leaf(a).var(1, unbiased=False)), a.var(1), rtol=1e-15)
    np.testing.assert_allclose(array(leaf(a).var(1, True)), a.var(1, ddof=1), rtol=1e-15)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        out = leaf(a).var(1, correction=2)
    assert array(out)[0] == INF and np.isnan(array(out)[1])  # PyTorch's inf and 0/0
    np.testing.assert_array_equal(first_grad(lambda x: x.std(), [[2.0, 2.0]]), [[0.0, 0.0]])  # no 0/0


def test_cumsum_gradient_and_dtypes():
    np.testing.assert_array_equal(first_grad(lambda x: x.cumsum(0), [1.0, 2.0, 3.0]), [3.0, 2.0, 1.0])
    assert ag.tensor([1, 2, 3], dtype=ag.int32).cumsum(0).dtype == ag.int64
    assert ag.tensor([1, 2, 3], dtype=ag.int32).prod().dtype == ag.int64
    x = leaf([1.0, 2.0])
    out = ag.cumsum(x, 0, dtype=ag.float32)
    assert out.dtype == ag.float32 and out.grad_fn.name() == "CumsumBackward0"
    (g,) = grad(out.sum(), x)
    assert g.dtype == ag.float64
    np.testing.assert_array_equal(array(leaf(5.0).cumsum(-1)), 5.0)


def test_reductions_over_an_empty_dim_give_pytorchs_identities():
    x = leaf(np.zeros((0, 3)))
    outs = {"prod": x.prod(0), "logsumexp": x.logsumexp(0), "norm": x.norm(dim=0), "cumsum": x.cumsum(0)}
    np.testing.assert_array_equal(array(outs["prod"]), np.ones(3))
    np.testing.assert_array_equal(array(outs["logsumexp"]), np.full(3, -INF))
    np.testing.assert_array_equal(array(outs["norm"]), np.zeros(3))
    for name, out in outs.items():
        (g,) = grad(out.sum(), x)
        assert g.shape == (0, 3), name


# -- names and errors ---------------------------------------------------------------------------------------------
NODE_NAMES = [
    ("ProdBackward0", lambda x: x.prod()), ("ProdBackward1", lambda x: x.prod(1)),
    ("MaxBackward1", lambda x: x.max()), ("MaxBackward0", lambda x: x.max(1)[0]),
    ("MinBackward1", lambda x: x.min()), ("MinBackward0", lambda x: x.min(0).values),
    ("AminBackward0", lambda x: x.amin()), ("LogsumexpBackward0", lambda x: x.logsumexp((0, 1))),
    ("SoftmaxBackward0", lambda x: x.softmax(0)), ("VarBackward0", lambda x: x.var()),
    ("StdBackward0", lambda x: x.std(1)), ("LinalgVectorNormBackward0", lambda x: x.norm()),
    ("LinalgVectorNormBackward0", lambda x: x.norm(INF, dim=1)), ("CumsumBackward0", lambda x: x.cumsum(1)),
]


@pytest.mark.parametrize("name, f", NODE_NAMES)
def test_node_names_are_pytorchs(name, f):
    assert f(leaf(np.arange(6.0).reshape(2, 3) + 1)).grad_fn.name() == name


BAD_DIM = [
    lambda x: x.prod(5), lambda x: x.max(5), lambda x: x.min(5), lambda x: x.amin(5), lambda x: x.argmax(5),
    lambda x: x.argmin(5), lambda x: x.logsumexp((0, 5)), lambda x: x.softmax(5), lambda x: x.var(5),
    lambda x: x.std((5,)), lambda x: x.norm(dim=5), lambda x: x.cumsum(5),
]


@pytest.mark.parametrize("f", BAD_DIM)
def test_a_dim_out_of_range_raises_pytorchs_index_error(f):
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)"):
        f(leaf(np.ones((2, 3))))


def test_max_of_an_empty_tensor_raises_pytorchs_error():
    empty = ag.tensor(np.zeros((0, 3)))
    for op in ("max", "min", "amin"):
        with pytest.raises(RuntimeError, match=rf"{op}\(\): Expected reduction dim to be specified for input.numel"):
            getattr(empty, op)()
    with pytest.raises(IndexError, match=r"max\(\): Expected reduction dim 0 to have non-zero size"):
        empty.max(0)
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be specified"):
        empty.argmax()
    assert empty.max(1).values.shape == (0,)


def test_one_dim_ops_reject_a_tuple_of_dims():
    with pytest.raises(TypeError, match="prod"):
        leaf(np.ones((2, 3))).prod((0, 1))
    with pytest.raises(TypeError, match="max"):
        leaf(np.ones((2, 3))).max((0, 1))


def test_max_and_min_with_a_tensor_are_the_elementwise_forms():
    a = ag.tensor(np.array([1.0, 5.0, -2.0]), requires_grad=True)
    b = ag.tensor(np.array([3.0, 4.0, -1.0]), requires_grad=True)
    np.testing.assert_array_equal(ag.max(a, b).detach().numpy(), [3.0, 5.0, -1.0])
    np.testing.assert_array_equal(a.min(b).detach().numpy(), [1.0, 4.0, -2.0])
    assert ag.max(a, b).grad_fn.name() == "MaximumBackward0"
    assert a.min(b).grad_fn.name() == "MinimumBackward0"


def test_cumsums_recorded_gradient_keeps_terms_much_smaller_than_the_total():
    x = ag.tensor([1.0, 2.0, 3.0], dtype=ag.float64, requires_grad=True)
    c = ag.tensor([1e20, 1.0, 1.0], dtype=ag.float64)
    (g,) = ag.autograd.grad((x.cumsum(0) * c).sum(), x, create_graph=True)
    assert g.tolist() == [1e20, 2.0, 1.0]  # sum - cumsum + g would give 1.0 for the middle one
