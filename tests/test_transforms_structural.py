"""The transforms that combine others (Independent, Reshape, Cat, Stack), those onto the simplex and onto sets of
matrices (Softmax, LowerCholesky, PositiveDefinite, CorrCholesky), CumulativeDistributionTransform, their
constraints, and the biject_to / transform_to registries: maps against formulas written here in numpy,
log-Jacobians against the log |det| of numerical Jacobians, gradients by gradcheck, registered transforms against
their constraints' checks, densities that integrate to 1, and PyTorch's argument errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import distributions as D
from actorgrad.autograd import gradcheck
from actorgrad.distributions import constraints as C
from actorgrad.distributions import transforms as T
from actorgrad.distributions.constraint_registry import ConstraintRegistry, biject_to, transform_to
from actorgrad.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix

erf = np.vectorize(math.erf)
RNG = np.random.default_rng(0)


def f64(values, requires_grad: bool = False) -> ag.Tensor:
    return ag.tensor(values, dtype=ag.float64, requires_grad=requires_grad)


def assert_close(got, expected, rtol: float = 1e-12, atol: float = 1e-14) -> None:
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), np.asarray(expected, dtype=float), rtol=rtol,
                               atol=atol)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def corr_cholesky_np(x):
    """Row by row: below the diagonal tanh(x) times the square root of the row's squared length left, the rest
    of it on the diagonal."""
    d = round((0.25 + 2 * x.shape[-1]) ** 0.5 + 0.5)
    out = np.zeros(x.shape[:-1] + (d, d))
    for batch in np.ndindex(x.shape[:-1]):
        r = np.zeros((d, d))
        r[np.tril_indices(d, -1)] = np.tanh(x[batch])
        y = out[batch]
        for i in range(d):
            for j in range(i):
                y[i, j] = r[i, j] * math.sqrt(1 - (y[i, :j] ** 2).sum())
            y[i, i] = math.sqrt(1 - (y[i, :i] ** 2).sum())
    return out


def lower_cholesky_np(x):
    return np.tril(x, -1) + np.exp(np.diagonal(x, axis1=-2, axis2=-1))[..., None] * np.eye(x.shape[-1])


def strictly_lower(y):
    d = y.shape[-1]
    return y[..., np.tril_indices(d, -1)[0], np.tril_indices(d, -1)[1]]


def normal(loc: float, scale: float) -> D.Normal:
    return D.Normal(f64(loc), f64(scale))


# name -> the transform, a point x of its domain, its forward map in numpy, how many of x's rightmost dims the
# numerical Jacobian is taken over, the coordinates of y it is taken on, the shape of log_abs_det_jacobian
BIJECTIONS = {
    "Independent(Exp)": dict(
        make=lambda: T.IndependentTransform(T.ExpTransform(), 1), x=RNG.normal(size=(2, 3)), forward=np.exp,
        event_ndim=1, ladj_shape=(2,)),
    "Independent(Independent(Affine))": dict(
        make=lambda: T.IndependentTransform(
            T.IndependentTransform(T.AffineTransform(1.0, f64([2.0, -0.5, 3.0])), 1), 1),
        x=RNG.normal(size=(2, 3)), forward=lambda x: 1 + np.array([2.0, -0.5, 3.0]) * x, event_ndim=2, ladj_shape=()),
    "Reshape": dict(
        make=lambda: T.ReshapeTransform((2, 3), (3, 2)), x=RNG.normal(size=(2, 2, 3)),
        forward=lambda x: x.reshape(2, 3, 2), event_ndim=2, ladj_shape=(2,)),
    "Cat(dim=-1)": dict(
        make=lambda: T.CatTransform([T.IndependentTransform(T.ExpTransform(), 1),
                                     T.AffineTransform(0.0, 3.0, event_dim=1), T.SigmoidTransform()],
                                    dim=-1, lengths=[2, 2, 1]),
        x=RNG.normal(size=(2, 5)),
        forward=lambda x: np.concatenate([np.exp(x[:, :2]), 3 * x[:, 2:4], sigmoid(x[:, 4:])], -1),
        event_ndim=1, ladj_shape=(2,)),
    "Cat(dim=0)": dict(
        make=lambda: T.CatTransform([T.ExpTransform(), T.SigmoidTransform(), T.TanhTransform()], dim=0,
                                    lengths=[1, 2, 1]),
        x=RNG.normal(size=(4, 3)),
        forward=lambda x: np.concatenate([np.exp(x[:1]), sigmoid(x[1:3]), np.tanh(x[3:])], 0),
        event_ndim=2, ladj_shape=(4, 3)),
    "Stack(dim=1)": dict(
        make=lambda: T.StackTransform([T.ExpTransform(), T.AffineTransform(1.0, -2.0), T.SoftplusTransform()], dim=1),
        x=RNG.normal(size=(2, 3)),
        forward=lambda x: np.stack([np.exp(x[:, 0]), 1 - 2 * x[:, 1], np.log1p(np.exp(x[:, 2]))], 1),
        event_ndim=2, ladj_shape=(2, 3)),
    "Stack(dim=-1)": dict(
        make=lambda: T.StackTransform([T.ExpTransform(), T.SigmoidTransform()], dim=-1), x=RNG.normal(size=(3, 2)),
        forward=lambda x: np.stack([np.exp(x[:, 0]), sigmoid(x[:, 1])], -1), event_ndim=1, ladj_shape=(3,)),
    "Stack(dim=-2) of vectors": dict(
        make=lambda: T.StackTransform([T.IndependentTransform(T.ExpTransform(), 1),
                                       T.AffineTransform(0.0, 2.0, event_dim=1)], dim=-2),
        x=RNG.normal(size=(2, 2, 3)), forward=lambda x: np.stack([np.exp(x[:, 0]), 2 * x[:, 1]], -2),
        event_ndim=2, ladj_shape=(2,)),
    "CorrCholesky": dict(
        make=T.CorrCholeskyTransform, x=RNG.normal(size=(2, 6)), forward=corr_cholesky_np, event_ndim=1,
        free=strictly_lower, ladj_shape=(2,)),
    "CumulativeDistribution": dict(
        make=lambda: T.CumulativeDistributionTransform(normal(0.5, 2.0)), x=RNG.normal(size=(4,)),
        forward=lambda x: 0.5 * (1 + erf((x - 0.5) / (2.0 * math.sqrt(2)))), event_ndim=0, ladj_shape=(4,)),
}

# not bijections: no log-Jacobian; the inverse is a right inverse
SURJECTIONS = {
    "Softmax": (T.SoftmaxTransform, RNG.normal(size=(2, 4)),
                lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
    "LowerCholesky": (T.LowerCholeskyTransform, RNG.normal(size=(2, 3, 3)), lower_cholesky_np),
    "PositiveDefinite": (T.PositiveDefiniteTransform, RNG.normal(size=(2, 3, 3)),
                         lambda x: lower_cholesky_np(x) @ np.swapaxes(lower_cholesky_np(x), -1, -2)),
}


def numerical_log_det(transform, x: np.ndarray, event_ndim: int, free, h: float = 1e-6) -> np.ndarray:
    """log |det| of the central-difference Jacobian of free(y) over each event of x's rightmost `event_ndim` dims."""
    batch = x.shape[: x.ndim - event_ndim]
    out = np.empty(batch)
    for index in np.ndindex(batch):
        event_size = x[index].size
        columns = []
        for k in range(event_size):
            step = np.zeros(event_size)
            step[k] = h
            ends = []
            for sign in (1, -1):
                moved = x.copy()
                moved[index] = x[index] + sign * step.reshape(x[index].shape)
                ends.append(free(transform(f64(moved)).numpy())[index].ravel())
            columns.append((ends[0] - ends[1]) / (2 * h))
        out[index] = np.linalg.slogdet(np.stack(columns, -1))[1]
    return out


# -- maps, inverses and log-Jacobians ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(BIJECTIONS))
def test_bijection_maps_as_its_formula_and_its_inverse_maps_back(name):
    case = BIJECTIONS[name]
    transform, x = case["make"](), f64(case["x"])
    y = transform(x)
    assert_close(y, case["forward"](case["x"]))
    assert_close(transform.inv(y), case["x"], rtol=1e-10, atol=1e-12)
    assert transform.bijective and transform.inv.inv is transform


@pytest.mark.parametrize("name", list(BIJECTIONS))
def test_log_abs_det_jacobian_equals_the_log_det_of_a_numerical_jacobian(name):
    case = BIJECTIONS[name]
    transform, x = case["make"](), case["x"]
    got = transform.log_abs_det_jacobian(f64(x), transform(f64(x)))
    assert got.shape == case["ladj_shape"]
    batch_ndim = x.ndim - case["event_ndim"]
    summed = got.numpy().reshape(got.shape[:batch_ndim] + (-1,)).sum(-1)
    expected = numerical_log_det(transform, x, case["event_ndim"], case.get("free", lambda y: y))
    np.testing.assert_allclose(summed, expected, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("name", list(SURJECTIONS))
def test_surjection_maps_as_its_formula_and_has_a_right_inverse(name):
    make, x, forward = SURJECTIONS[name]
    transform = make()
    y = transform(f64(x))
    assert_close(y, forward(x), rtol=1e-12, atol=1e-13)
    assert_close(transform(transform.inv(y)), y.numpy(), rtol=1e-10, atol=1e-12)
    assert not transform.bijective
    with pytest.raises(NotImplementedError):
        transform.log_abs_det_jacobian(f64(x), y)


def test_lower_cholesky_inverse_gives_back_the_lower_triangle_and_softmax_the_shifted_logits():
    x = RNG.normal(size=(3, 3))
    assert_close(T.LowerCholeskyTransform().inv(T.LowerCholeskyTransform()(f64(x))), np.tril(x), rtol=1e-12)
    logits = T.SoftmaxTransform().inv(T.SoftmaxTransform()(f64(x))).numpy()
    np.testing.assert_allclose(logits - x, np.broadcast_to((logits - x)[:, :1], (3, 3)), atol=1e-12)


def test_softmax_stays_finite_for_large_logits():
    y = T.SoftmaxTransform()(f64([1000.0, 999.0, -1000.0]))
    assert_close(y, [1 / (1 + math.exp(-1)), 1 / (1 + math.e), 0.0], atol=1e-300)


def test_cumulative_distribution_transform_follows_the_distribution():
    dist = normal(0.5, 2.0)
    transform = T.CumulativeDistributionTransform(dist)
    assert transform.domain is dist.support and repr(transform.codomain) == "Interval(lower_bound=0.0, upper_bound=1.0)"
    assert transform.sign == 1 and transform.with_cache(1).distribution is dist
    x = f64([-1.0, 0.3])
    assert_close(transform.log_abs_det_jacobian(x, transform(x)), dist.log_prob(x).numpy())
    gamma = T.CumulativeDistributionTransform(D.Gamma(f64(2.0), f64(1.0)))
    assert repr(gamma.domain) == "GreaterThanEq(lower_bound=0.0)"


# -- shapes, constraints ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(BIJECTIONS) + list(SURJECTIONS))
def test_forward_and_inverse_shape_are_the_shapes_of_the_outputs(name):
    if name in BIJECTIONS:
        transform, x = BIJECTIONS[name]["make"](), BIJECTIONS[name]["x"]
    else:
        transform, x = SURJECTIONS[name][0](), SURJECTIONS[name][1]
    y = transform(f64(x))
    assert transform.forward_shape(x.shape) == y.shape and transform.inverse_shape(y.shape) == x.shape
    assert transform.inv.forward_shape(y.shape) == x.shape
    assert bool(transform.codomain.check(y).all()) and bool(transform.domain.check(f64(x)).all())


@pytest.mark.parametrize("make, domain, codomain, event_dims", [
    (lambda: T.IndependentTransform(T.ExpTransform(), 2), "IndependentConstraint(Real(), 2)",
     "IndependentConstraint(GreaterThan(lower_bound=0.0), 2)", (2, 2)),
    (lambda: T.IndependentTransform(T.StickBreakingTransform(), 1), "IndependentConstraint(IndependentConstraint("
     "Real(), 1), 1)", "IndependentConstraint(Simplex(), 1)", (2, 2)),
    (lambda: T.ReshapeTransform((6,), (1, 2, 3)), "IndependentConstraint(Real(), 1)",
     "IndependentConstraint(Real(), 3)", (1, 3)),
    (T.CorrCholeskyTransform, "IndependentConstraint(Real(), 1)", "CorrCholesky()", (1, 2)),
    (T.LowerCholeskyTransform, "IndependentConstraint(Real(), 2)", "LowerCholesky()", (2, 2)),
    (T.PositiveDefiniteTransform, "IndependentConstraint(Real(), 2)", "PositiveDefinite()", (2, 2)),
    (T.SoftmaxTransform, "IndependentConstraint(Real(), 1)", "Simplex()", (1, 1)),
    (lambda: T.CatTransform([T.ExpTransform(), T.AffineTransform(0.0, 1.0, event_dim=1)]), "Cat()", "Cat()", (1, 1)),
    (lambda: T.StackTransform([T.ExpTransform(), T.SoftmaxTransform()], dim=-2), "Stack()", "Stack()", (2, 2)),
    (lambda: T.StackTransform([T.ExpTransform(), T.SoftmaxTransform()], dim=0), "Stack()", "Stack()", (1, 1)),
    (lambda: T.StackTransform([T.ExpTransform(), T.SigmoidTransform()], dim=-1), "Stack()", "Stack()", (1, 1)),
    # where PyTorch's count differs (and its log_prob fails): dim among or right of the slices' event dims, or left
    (lambda: T.StackTransform([T.IndependentTransform(T.ExpTransform(), 1)] * 2, dim=-1), "Stack()", "Stack()",
     (2, 2)),
    (lambda: T.StackTransform([T.ExpTransform(), T.SigmoidTransform()], dim=-2), "Stack()", "Stack()", (0, 0)),
])
def test_domain_codomain_and_their_event_dims(make, domain, codomain, event_dims):
    transform = make()
    assert (repr(transform.domain), repr(transform.codomain)) == (domain, codomain)
    assert (transform.domain.event_dim, transform.codomain.event_dim) == event_dims


def test_cat_event_dim_is_its_parts_largest_and_independent_passes_on_sign():
    assert T.CatTransform([T.ExpTransform(), T.IndependentTransform(T.ExpTransform(), 2)]).event_dim == 2
    assert T.CatTransform([T.ExpTransform()] * 3).length == 3
    flipped = T.IndependentTransform(T.AffineTransform(0.0, f64([-2.0, 3.0])), 1)
    assert flipped.sign.tolist() == [-1.0, 1.0] and flipped.event_dim == 1
    assert not T.IndependentTransform(T.AbsTransform(), 1).bijective
    assert repr(T.IndependentTransform(T.ExpTransform(), 1)) == "IndependentTransform(ExpTransform(), 1)"


def test_cat_and_stack_shapes_follow_parts_that_change_a_size():
    stack = T.StackTransform([T.StickBreakingTransform()] * 2, dim=-2)
    x = f64(RNG.normal(size=(3, 2, 2)))
    y = stack(x)
    assert y.shape == (3, 2, 3) == stack.forward_shape((3, 2, 2)) and stack.inverse_shape((3, 2, 3)) == (3, 2, 2)
    assert_close(stack.inv(y), x.numpy(), rtol=1e-12)
    cat = T.CatTransform([T.StickBreakingTransform()] * 2, dim=0)
    assert cat(f64(RNG.normal(size=(2, 3)))).shape == (2, 4) == cat.forward_shape((2, 3))
    assert cat.inverse_shape((2, 4)) == (2, 3)
    wide = T.CatTransform([T.ReshapeTransform((2,), (1, 2)), T.ReshapeTransform((3,), (1, 3))], dim=-1, lengths=[2, 3])
    assert wide.forward_shape((4, 5)) == (4, 1, 5)
    dist = D.TransformedDistribution(D.Normal(f64(np.zeros((3, 2, 2))), 1.0), stack)
    assert (dist.batch_shape, dist.event_shape) == ((3,), (2, 3))
    stick = T.StickBreakingTransform()
    expected = sum(D.Normal(0.0, 1.0).log_prob(x[:, i]).sum(-1) - stick.log_abs_det_jacobian(x[:, i], y[:, i])
                   for i in range(2))
    assert_close(dist.log_prob(y), expected.numpy(), rtol=1e-10)


def test_outputs_lie_in_their_codomains_by_direct_checks():
    corr = T.CorrCholeskyTransform()(f64(3 * RNG.normal(size=(5, 10)))).numpy()
    np.testing.assert_allclose(np.linalg.norm(corr, axis=-1), 1.0, rtol=1e-14)
    assert (np.triu(corr, 1) == 0).all() and (np.diagonal(corr, axis1=-2, axis2=-1) > 0).all()
    lower = T.LowerCholeskyTransform()(f64(RNG.normal(size=(5, 3, 3)))).numpy()
    assert (np.triu(lower, 1) == 0).all() and (np.diagonal(lower, axis1=-2, axis2=-1) > 0).all()
    spd = T.PositiveDefiniteTransform()(f64(RNG.normal(size=(5, 3, 3)))).numpy()
    np.testing.assert_array_equal(spd, np.swapaxes(spd, -1, -2))
    assert (np.linalg.eigvalsh(spd) > 0).all()
    simplex = T.SoftmaxTransform()(f64(RNG.normal(size=(5, 4)))).numpy()
    assert (simplex > 0).all() and np.allclose(simplex.sum(-1), 1.0, rtol=1e-14)


def test_new_constraints_refuse_values_outside_them():
    corr = T.CorrCholeskyTransform()(f64(RNG.normal(size=(3,)))).detach()
    assert C.corr_cholesky.check(corr).item() and not C.corr_cholesky.check(corr * 1.001).item()
    assert not C.corr_cholesky.check(corr.mT).item()
    assert C.positive_semidefinite.check(f64([[1.0, 1.0], [1.0, 1.0]])).item()
    assert not C.positive_semidefinite.check(f64([[1.0, 2.0], [2.0, 1.0]])).item()
    assert not C.positive_semidefinite.check(f64([[1.0, 2.0], [0.0, 1.0]])).item()
    assert not C.positive_definite.check(f64([[1.0, 1.0], [1.0, 1.0]])).item()
    blocks = C.cat([C.positive, C.unit_interval], dim=0, lengths=[2, 1])
    assert blocks.check(f64([1.0, 5.0, 0.5])).tolist() == [True, True, True]
    assert blocks.check(f64([-1.0, 5.0, 1.5])).tolist() == [False, True, False]
    rows = C.stack([C.simplex, C.independent(C.positive, 1)], dim=-2)
    assert rows.event_dim == 2 and rows.check(f64([[0.2, 0.8], [3.0, 4.0]])).item()
    batch = f64([[[0.2, 0.8], [3.0, 4.0]], [[0.2, 0.9], [3.0, 4.0]], [[0.2, 0.8], [3.0, -4.0]]])
    assert rows.check(batch).tolist() == [True, False, False]
    mixed = C.cat([C.independent(C.positive, 1), C.simplex, C.unit_interval], dim=-1, lengths=[2, 2, 1])
    assert mixed.event_dim == 1
    assert mixed.check(f64([[1.0, 2.0, 0.3, 0.7, 0.5], [1.0, 2.0, 0.3, 0.8, 0.5], [1.0, 2.0, 0.3, 0.7, 1.5]])
                       ).tolist() == [True, False, False]
    columns = C.cat([C.simplex, C.independent(C.positive, 1)], dim=-2, lengths=[1, 2])
    assert columns.check(f64([[[0.2, 0.8], [1.0, 2.0], [3.0, 4.0]], [[0.2, 0.8], [1.0, 2.0], [3.0, -4.0]]])
                         ).tolist() == [[True, True, True], [True, True, False]]
    scalars = C.stack([C.positive, C.unit_interval], dim=-1)
    assert scalars.event_dim == 1 and scalars.check(f64([[1.0, 0.5], [1.0, 1.5], [-1.0, 0.5]])).tolist() == [
        True, False, False]
    assert C.stack([C.real, C.simplex], dim=0).event_dim == 1 and C.cat([C.boolean, C.real]).is_discrete


# -- gradients ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(BIJECTIONS))
def test_bijection_forward_inverse_and_log_jacobian_pass_gradcheck(name):
    case = BIJECTIONS[name]
    transform = case["make"]()

    def forward(x):
        y = transform(x)
        return y, transform.log_abs_det_jacobian(x, y)

    assert gradcheck(forward, [f64(case["x"], requires_grad=True)])
    assert gradcheck(transform.inv, [transform(f64(case["x"])).detach().requires_grad_()])


@pytest.mark.parametrize("name", list(SURJECTIONS))
def test_surjection_forward_and_right_inverse_pass_gradcheck(name):
    make, x, _ = SURJECTIONS[name]
    transform = make()
    assert gradcheck(transform, [f64(x, requires_grad=True)])
    # through the inverse from the codomain, where a positive-definite matrix stays symmetric
    assert gradcheck(lambda x: transform.inv(transform(x)), [f64(x, requires_grad=True)])


def test_cumulative_distribution_transform_passes_gradcheck_in_its_distributions_parameters():
    def cdf_and_log_jacobian(loc, scale):
        transform = T.CumulativeDistributionTransform(D.Normal(loc, scale))
        x = f64([-1.0, 0.3])
        return transform(x), transform.log_abs_det_jacobian(x, transform(x)), transform.inv(f64([0.2, 0.9]))

    assert gradcheck(cdf_and_log_jacobian, [f64(0.5, requires_grad=True), f64(2.0, requires_grad=True)])


# -- equality and caching -------------------------------------------------------------------------------------------
def test_equality_follows_pytorch():
    for cls in (T.SoftmaxTransform, T.LowerCholeskyTransform, T.PositiveDefiniteTransform):
        assert cls() == cls() and cls().inv == cls().inv and cls() != T.ExpTransform()
    assert T.LowerCholeskyTransform() != T.PositiveDefiniteTransform()
    # the others compare by identity, as in PyTorch
    for make in (T.CorrCholeskyTransform, lambda: T.IndependentTransform(T.ExpTransform(), 1),
                 lambda: T.ReshapeTransform((2,), (2,)), lambda: T.CatTransform([T.ExpTransform()]),
                 lambda: T.StackTransform([T.ExpTransform()]),
                 lambda: T.CumulativeDistributionTransform(normal(0.0, 1.0))):
        transform = make()
        assert transform == transform and make() != transform


def test_with_cache_reaches_the_parts_and_returns_the_cached_input():
    x = f64([[40.0, 0.0]])  # sigmoid(40) rounds to 1: only the cache gives 40 back
    independent = T.IndependentTransform(T.SigmoidTransform(), 1).with_cache(1)
    assert independent.base_transform._cache_size == 1 and independent.inv(independent(x)) is x
    assert T.IndependentTransform(T.SigmoidTransform(), 1).inv(independent(x)).numpy()[0, 0] < 39
    cat = T.CatTransform([T.SigmoidTransform(), T.ExpTransform()], dim=1, cache_size=1)
    assert all(t._cache_size == 1 for t in cat.transforms) and cat.inv(cat(x)) is x
    stack = T.StackTransform([T.SigmoidTransform(), T.ExpTransform()], dim=1).with_cache(1)
    assert all(t._cache_size == 1 for t in stack.transforms) and stack.dim == 1
    reshape = T.ReshapeTransform((2,), (1, 2)).with_cache(1)
    assert reshape.inv(reshape(x)) is x and reshape.out_shape == (1, 2)
    assert T.CatTransform([T.ExpTransform()], lengths=[3]).with_cache(1).lengths == [3]
    assert T.CorrCholeskyTransform().with_cache(1)._cache_size == 1


# -- the registries -------------------------------------------------------------------------------------------------
# name -> the constraint, the shape of the unconstrained input (biject_to, then transform_to where it differs)
REGISTERED = {
    "real": (C.real, (5,)),
    "positive": (C.positive, (5,)),
    "nonnegative": (C.nonnegative, (5,)),
    "greater_than": (C.greater_than(f64([2.0, -1.0])), (3, 2)),
    "greater_than_eq": (C.greater_than_eq(-3.0), (5,)),
    "less_than": (C.less_than(1.5), (5,)),
    "interval": (C.interval(-1.0, 3.0), (5,)),
    "unit_interval": (C.unit_interval, (5,)),
    "half_open_interval": (C.half_open_interval(f64([0.0, 2.0]), f64([1.0, 2.5])), (3, 2)),
    "simplex": (C.simplex, (4, 3), (4, 4)),
    "independent": (C.independent(C.positive, 2), (2, 3, 4)),
    "real_vector": (C.real_vector, (2, 3)),
    "corr_cholesky": (C.corr_cholesky, (2, 6)),
    "cat": (C.cat([C.real, C.positive, C.interval(0.0, 2.0)], dim=-1, lengths=[1, 2, 1]), (3, 4)),
    "stack": (C.stack([C.positive, C.unit_interval], dim=0), (2, 3)),
    "stack(simplex)": (C.stack([C.simplex, C.simplex], dim=-2), (3, 2, 2), (3, 2, 3)),
    "lower_cholesky": (C.lower_cholesky, None, (2, 3, 3)),
    "positive_definite": (C.positive_definite, None, (2, 3, 3)),
    "positive_semidefinite": (C.positive_semidefinite, None, (2, 3, 3)),
}


@pytest.mark.parametrize("name", list(REGISTERED))
def test_registered_transforms_map_unconstrained_inputs_into_the_constraint(name):
    constraint, shape, *other = REGISTERED[name]
    for registry, input_shape in ((biject_to, shape), (transform_to, other[0] if other else shape)):
        if input_shape is None:
            with pytest.raises(NotImplementedError, match=rf"^Cannot transform {type(constraint).__name__} "
                                                          r"constraints$"):
                registry(constraint)
            continue
        transform = registry(constraint)
        x = f64(3 * RNG.normal(size=input_shape))
        y = transform(x)
        assert y.shape == transform.forward_shape(input_shape)
        assert bool(constraint.check(y).all()), (registry, y)
        if registry is biject_to:
            assert transform.bijective
            assert_close(transform.inv(y), x.numpy(), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("constraint, biject, transform", [
    (C.real, "ComposeTransform(\n    \n)", None),
    (C.positive, "ComposeTransform(\n    ExpTransform(),\n    AffineTransform()\n)", None),
    (C.unit_interval, "SigmoidTransform()", None),
    (C.half_open_interval(0, 1), "SigmoidTransform()", None),
    (C.interval(-1.0, 3.0), "ComposeTransform(\n    SigmoidTransform(),\n    AffineTransform()\n)", None),
    (C.simplex, "StickBreakingTransform()", "SoftmaxTransform()"),
    (C.corr_cholesky, "CorrCholeskyTransform()", None),
    (C.real_vector, "IndependentTransform(ComposeTransform(\n    \n), 1)", None),
    (C.independent(C.simplex, 1), "IndependentTransform(StickBreakingTransform(), 1)",
     "IndependentTransform(SoftmaxTransform(), 1)"),
    (C.cat([C.simplex, C.real]), "CatTransform()", None),
    (C.stack([C.simplex, C.real]), "StackTransform()", None),
])
def test_registries_pick_pytorchs_transforms(constraint, biject, transform):
    assert repr(biject_to(constraint)) == biject
    assert repr(transform_to(constraint)) == (transform or biject)


def test_registered_transforms_carry_the_constraints_parameters():
    shift = biject_to(C.greater_than(2.0))
    assert shift.parts[1].loc == 2.0 and shift.parts[1].scale == 1
    flip = biject_to(C.less_than(1.5))
    assert flip.parts[1].loc == 1.5 and flip.parts[1].scale == -1
    stretch = transform_to(C.interval(-1.0, 3.0))
    assert stretch.parts[1].loc == -1.0 and stretch.parts[1].scale == 4.0
    blocks = biject_to(C.cat([C.simplex, C.positive], dim=1, lengths=[3, 2]))
    assert blocks.dim == 1 and blocks.lengths == [3, 2] and isinstance(blocks.transforms[0], T.StickBreakingTransform)
    assert isinstance(transform_to(C.stack([C.simplex], dim=-1)).transforms[0], T.SoftmaxTransform)
    assert transform_to(C.stack([C.simplex], dim=-1)).dim == -1


def test_a_new_registry_takes_classes_instances_and_decorated_factories():
    registry = ConstraintRegistry()
    with pytest.raises(NotImplementedError, match=r"^Cannot transform _GreaterThan constraints$"):
        registry(C.positive)
    registry.register(C.positive, lambda constraint: T.ExpTransform())
    assert registry(C.greater_than(5.0)) == T.ExpTransform()  # looked up by class

    @registry.register(C.interval)
    def _factory(constraint):
        return T.AffineTransform(constraint.lower_bound, 1.0)

    assert registry(C.interval(2.0, 3.0)).loc == 2.0 and _factory is registry._registry[type(C.unit_interval)]
    for bad in (3, int):
        with pytest.raises(TypeError, match=r"^Expected constraint to be either a Constraint subclass or instance, "
                                            r"but got "):
            registry.register(bad, lambda constraint: T.ExpTransform())
    with pytest.raises(NotImplementedError, match=r"^Cannot transform _Boolean constraints$"):
        transform_to(C.boolean)


def test_package_exports_the_registries_and_the_transforms():
    assert D.biject_to is biject_to and D.transform_to is transform_to
    assert D.constraint_registry.ConstraintRegistry is ConstraintRegistry
    assert D.CorrCholeskyTransform is T.CorrCholeskyTransform and "StackTransform" in D.__all__
    assert {"biject_to", "transform_to", "CatTransform", "ExpTransform"} <= set(D.__all__)


# -- transformed distributions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("constraint, grid", [
    (C.interval(-1.0, 3.0), np.linspace(-1.0, 3.0, 200001)[1:-1]),
    (C.unit_interval, np.linspace(0.0, 1.0, 200001)[1:-1]),
    (C.greater_than(2.0), 2.0 + np.exp(np.linspace(-30.0, 30.0, 200001))),
    (C.positive, np.exp(np.linspace(-30.0, 30.0, 200001))),
    (C.less_than(1.5), 1.5 - np.exp(np.linspace(30.0, -30.0, 200001))),
    (C.real, np.linspace(-15.0, 15.0, 200001)),
])
def test_density_pushed_through_biject_to_integrates_to_one(constraint, grid):
    dist = D.TransformedDistribution(normal(0.3, 1.5), biject_to(constraint))
    assert bool(dist.support.check(f64(grid)).all())
    density = np.exp(dist.log_prob(f64(grid)).numpy())
    assert abs(np.trapezoid(density, grid) - 1.0) < 1e-6


def test_a_distribution_through_its_own_cdf_is_uniform():
    dist = D.TransformedDistribution(normal(0.5, 2.0), T.CumulativeDistributionTransform(normal(0.5, 2.0)))
    assert_close(dist.log_prob(f64([0.1, 0.5, 0.97])), [0.0, 0.0, 0.0], atol=1e-12)
    other = D.TransformedDistribution(normal(0.2, 0.7), T.CumulativeDistributionTransform(normal(0.0, 1.0)))
    grid = np.linspace(0.0, 1.0, 200001)[1:-1]
    assert abs(np.trapezoid(np.exp(other.log_prob(f64(grid)).numpy()), grid) - 1.0) < 1e-5


def test_transformed_distributions_take_their_event_shapes_from_the_structural_transforms():
    loc = RNG.normal(size=(2, 6))
    reshaped = D.TransformedDistribution(D.Normal(f64(loc), 1.0), T.ReshapeTransform((6,), (2, 3)))
    assert (reshaped.batch_shape, reshaped.event_shape) == ((2,), (2, 3))
    value = RNG.normal(size=(2, 2, 3))
    expected = (-0.5 * (value.reshape(2, 6) - loc) ** 2 - 0.5 * math.log(2 * math.pi)).sum(-1)
    assert_close(reshaped.log_prob(f64(value)), expected)
    corr = D.TransformedDistribution(D.Normal(f64(loc), 1.0), T.CorrCholeskyTransform())
    assert (corr.batch_shape, corr.event_shape) == ((2,), (4, 4))
    sample = corr.sample((3,))
    assert sample.shape == (3, 2, 4, 4) and bool(C.corr_cholesky.check(sample).all())
    x = T.CorrCholeskyTransform().inv(sample)
    expected = (D.Normal(f64(loc), 1.0).log_prob(x).sum(-1) - T.CorrCholeskyTransform().log_abs_det_jacobian(x, sample))
    assert_close(corr.log_prob(sample), expected.numpy())
    stacked = D.TransformedDistribution(D.Normal(f64(loc[:, :2]), 1.0),
                                        T.StackTransform([T.ExpTransform(), T.SigmoidTransform()], dim=-1))
    assert (stacked.batch_shape, stacked.event_shape) == ((2,), (2,)) and repr(stacked.support) == "Stack()"
    value = np.array([[0.5, 0.3], [2.0, 0.9]])
    x = np.stack([np.log(value[:, 0]), np.log(value[:, 1] / (1 - value[:, 1]))], -1)
    log_jacobian = x[:, 0] + np.log(value[:, 1] * (1 - value[:, 1]))
    normal_logpdf = -0.5 * (x - loc[:, :2]) ** 2 - 0.5 * math.log(2 * math.pi)
    assert_close(stacked.log_prob(f64(value)), normal_logpdf.sum(-1) - log_jacobian, rtol=1e-10)
    blocks = BIJECTIONS["Cat(dim=-1)"]["make"]()
    joined = D.TransformedDistribution(D.Normal(f64(np.zeros((2, 5))), 1.0), blocks)
    assert (joined.batch_shape, joined.event_shape) == ((2,), (5,))
    x = f64(BIJECTIONS["Cat(dim=-1)"]["x"])
    expected = D.Normal(0.0, 1.0).log_prob(x).sum(-1) - blocks.log_abs_det_jacobian(x, blocks(x))
    assert_close(joined.log_prob(blocks(x)), expected.numpy(), rtol=1e-10)


# -- the tril helpers -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("diag", [-2, -1, 0, 1])
def test_tril_matrix_to_vec_and_back_follow_the_rows(diag):
    matrix = RNG.normal(size=(2, 4, 4))
    rows, cols = np.tril_indices(4, diag)
    vec = tril_matrix_to_vec(f64(matrix), diag)
    assert_close(vec, matrix[:, rows, cols])
    assert_close(vec_to_tril_matrix(vec, diag), np.tril(matrix, diag))
    assert gradcheck(lambda v: vec_to_tril_matrix(v, diag), [vec.detach().requires_grad_()])


# -- PyTorch's errors ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, text", [
    (lambda: T.ReshapeTransform((2, 3), (4,)), ValueError, r"in_shape, out_shape have different numbers of elements"),
    (lambda: T.ReshapeTransform((2, 3), (6,)).forward_shape((4, 3, 2)), ValueError,
     r"Shape mismatch: expected \(3, 2\) but got \(2, 3\)"),
    (lambda: T.ReshapeTransform((2, 3), (6,)).forward_shape((3,)), ValueError, r"Too few dimensions on input"),
    (lambda: T.ReshapeTransform((2, 3), (6,)).inverse_shape((5,)), ValueError,
     r"Shape mismatch: expected \(5,\) but got \(6,\)"),
    (lambda: T.IndependentTransform(T.ExpTransform(), 2)(f64([1.0])), ValueError, r"Too few dimensions on input"),
    (lambda: T.IndependentTransform(T.ExpTransform(), 2).inv(f64([1.0])), ValueError, r"Too few dimensions on input"),
    (lambda: T.CorrCholeskyTransform().forward_shape((2, 4)), ValueError,
     r"Input is not a flattened lower-diagonal number"),
    (lambda: T.CorrCholeskyTransform().forward_shape(()), ValueError, r"Too few dimensions on input"),
    (lambda: T.CorrCholeskyTransform().inverse_shape((3, 4)), ValueError, r"Input is not square"),
    (lambda: T.CorrCholeskyTransform().inverse_shape((3,)), ValueError, r"Too few dimensions on input"),
    (lambda: T.SoftmaxTransform().forward_shape(()), ValueError, r"Too few dimensions on input"),
    (lambda: T.CatTransform([T.ExpTransform(), 3]), AssertionError,
     r"All elements of tseq must be Transform instances"),
    (lambda: T.CatTransform([T.ExpTransform()], lengths=[1, 2]), AssertionError,
     r"lengths \(2\) must match transforms \(1\)"),
    (lambda: T.CatTransform([T.ExpTransform()] * 2)(f64([1.0, 2.0, 3.0])), AssertionError,
     r"x\.size\(0\) = 3 must equal length 2"),
    (lambda: T.CatTransform([T.ExpTransform()] * 2, dim=1)(f64([1.0, 2.0])), AssertionError,
     r"dim 1 out of range for tensor with 1 dimensions"),
    (lambda: T.CatTransform([T.ExpTransform()] * 2).inv(f64([1.0, 2.0, 3.0])), AssertionError,
     r"y\.size\(0\) = 3 must equal length 2"),
    (lambda: T.CatTransform([T.ExpTransform()] * 2).log_abs_det_jacobian(f64([1.0, 2.0]), f64([1.0])),
     AssertionError, r"y\.size\(0\) = 1 must equal length 2"),
    (lambda: T.CatTransform([T.ExpTransform()] * 2, dim=1).log_abs_det_jacobian(f64([1.0, 2.0]), f64([1.0])),
     AssertionError, r"dim 1 out of range for x with 1 dimensions"),
    (lambda: T.StackTransform([T.ExpTransform(), 1]), AssertionError,
     r"All elements of tseq must be Transform instances"),
    (lambda: T.StackTransform([T.ExpTransform()] * 2)(f64([1.0, 2.0, 3.0])), AssertionError,
     r"x\.size\(0\) = 3 must equal len\(transforms\) 2"),
    (lambda: T.StackTransform([T.ExpTransform()] * 2, dim=2).inv(f64([1.0, 2.0])), AssertionError,
     r"dim 2 out of range for tensor with 1 dimensions"),
    (lambda: T.CatTransform([T.ExpTransform()], dim=1).forward_shape((3,)), ValueError, r"Too few dimensions on input"),
    (lambda: T.StackTransform([T.ExpTransform()], dim=-2).inverse_shape((3,)), ValueError,
     r"Too few dimensions on input"),
    (lambda: C.cat([C.real, 3]), AssertionError, r"All elements of cseq must be Constraint instances"),
    (lambda: C.cat([C.real], lengths=[1, 2]), AssertionError, r"lengths \(2\) must match cseq \(1\)"),
    (lambda: C.stack([C.real, 3]), AssertionError, r"All elements of cseq must be Constraint instances"),
    (lambda: C.cat([C.real]).check(f64(1.0)), AssertionError, r"dim 0 out of range for value with 0 dimensions"),
    (lambda: C.stack([C.real], dim=1).check(f64([1.0])), AssertionError,
     r"dim 1 out of range for value with 1 dimensions"),
    (lambda: vec_to_tril_matrix(f64([1.0, 2.0])), ValueError,
     r"The size of last dimension is 2 which cannot be expressed as the lower triangular part of a square D x D "
     r"matrix\."),
    (lambda: tril_matrix_to_vec(f64(np.eye(3)), diag=3), ValueError, r"diag \(3\) provided is outside \[-3, 2\]\."),
])
def test_bad_arguments_raise_torchs_errors(call, error, text):
    with pytest.raises(error, match=rf"^{text}$"):
        call()


# -- on cuda:0 (CuPy, or the stand-in in CI) --------------------------------------------------------------------------
ON_DEVICE = [name for name in list(BIJECTIONS) + list(SURJECTIONS)
             if name not in ("Independent(Independent(Affine))", "CumulativeDistribution")]  # cpu parameters


@pytest.mark.gpu
@pytest.mark.parametrize("name", ON_DEVICE)
def test_transforms_and_their_gradients_match_the_cpu_on_cuda(name):
    pytest.importorskip("cupy")
    make, x = (BIJECTIONS[name]["make"], BIJECTIONS[name]["x"]) if name in BIJECTIONS else SURJECTIONS[name][:2]
    transform = make()
    results = []
    for device in (None, ag.device("cuda:0")):
        leaf = ag.tensor(x, dtype=ag.float64, device=device, requires_grad=True)
        y = transform(leaf)
        outputs = [y, transform.inv(y)]
        if transform.bijective:
            outputs.append(transform.log_abs_det_jacobian(leaf, y))
        sum(out.sum() for out in outputs).backward()
        assert all(out.device == leaf.device for out in outputs) and leaf.grad.device == leaf.device
        assert bool(transform.codomain.check(y).all())
        results.append([t.detach().cpu().numpy() for t in outputs + [leaf.grad]])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


@pytest.mark.gpu
@pytest.mark.parametrize("name", [n for n in REGISTERED if n not in ("greater_than", "half_open_interval")])
def test_registered_transforms_reach_their_constraints_on_cuda(name):
    pytest.importorskip("cupy")
    constraint, shape, *other = REGISTERED[name]
    x = ag.tensor(RNG.normal(size=other[0] if other else shape), dtype=ag.float64, device=ag.device("cuda:0"))
    y = transform_to(constraint)(x)
    check = constraint.check(y)
    assert y.device == x.device == check.device and bool(check.all())
