"""linalg.solve_triangular, triangular_solve, cholesky_solve and cholesky_inverse: solutions checked by their
residuals (only the triangle each op reads), batches that broadcast, first and second derivatives against finite
differences, PyTorch's gradient conventions (the read triangle only; the Cholesky ops' full matrices), node names
and PyTorch's errors."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import user_warnings
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(11)
L = ag.linalg


def t(x: np.ndarray, **kw) -> ag.Tensor:
    return ag.tensor(x, dtype=kw.pop("dtype", ag.float64), **kw)


def dominant(shape: tuple) -> np.ndarray:
    """A batch of matrices with a dominant diagonal: every triangle of it is well conditioned."""
    return RNG.standard_normal(shape) + 4 * np.eye(shape[-1]) * np.sign(RNG.standard_normal(shape[:-1]))[..., None]


def read(a: np.ndarray, upper: bool, unitriangular: bool) -> np.ndarray:
    """The triangular matrix a solve reads from a."""
    identity = np.eye(a.shape[-1])
    return (np.triu(a, 1) if upper else np.tril(a, -1)) + (identity if unitriangular else identity * a)


FLAGS = [(upper, left, unit) for upper in (True, False) for left in (True, False) for unit in (True, False)]


@pytest.mark.parametrize(("upper", "left", "unit"), FLAGS)
def test_solve_triangular_solves_with_the_triangle_it_reads(upper: bool, left: bool, unit: bool) -> None:
    a = dominant((2, 1, 4, 4))
    b = RNG.standard_normal((3, 4, 2) if left else (3, 2, 4))
    x = L.solve_triangular(t(a), t(b), upper=upper, left=left, unitriangular=unit).numpy()
    assert x.shape == (2, 3) + b.shape[-2:]
    tri = read(a, upper, unit)
    np.testing.assert_allclose(tri @ x if left else x @ tri, np.broadcast_to(b, x.shape), atol=1e-12)


@pytest.mark.parametrize(("upper", "left", "unit"), FLAGS)
def test_solve_triangular_gradients_match_finite_differences(upper: bool, left: bool, unit: bool) -> None:
    a, b = t(dominant((2, 3, 3)), requires_grad=True), t(RNG.standard_normal((1, 3, 2)), requires_grad=True)
    b = b if left else b.detach().mT.clone().requires_grad_()

    def f(a: ag.Tensor, b: ag.Tensor) -> ag.Tensor:
        return L.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)

    assert gradcheck(f, [a, b])
    assert gradgradcheck(f, [a, b])


@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_gives_a_gradient_only_to_the_triangle_it_reads(unit: bool) -> None:
    a = t(dominant((3, 3)), requires_grad=True)
    L.solve_triangular(a, t(RNG.standard_normal((3, 2))), upper=True, unitriangular=unit).sum().backward()
    grad = a.grad.numpy()
    assert not np.tril(grad, -1).any() and grad[np.triu_indices(3, int(unit))].all()
    if unit:
        assert not np.diagonal(grad).any()


def test_solve_triangular_with_a_zero_on_the_diagonal_gives_infinities_as_torch() -> None:
    x = L.solve_triangular(ag.zeros(3, 3, dtype=ag.float64), t([[1.0, -1], [2, 2], [3, -3]]), upper=True).numpy()
    assert np.isnan(x[:2]).all() and np.array_equal(x[2], [np.inf, -np.inf])


def test_triangular_solve_returns_the_solution_and_a_broadcast_copy_of_a_from_one_node() -> None:
    a = dominant((3, 3))
    b = RNG.standard_normal((2, 3, 4))
    A, B = t(a, requires_grad=True), t(b, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solution, copy = ag.triangular_solve(B, A, upper=False, transpose=True)
    np.testing.assert_allclose(np.tril(a).T @ solution.detach().numpy(), b, atol=1e-12)
    np.testing.assert_array_equal(copy.detach().numpy(), np.broadcast_to(a, (2, 3, 3)))
    assert solution.grad_fn is copy.grad_fn and solution.grad_fn.name() == "TriangularSolveBackward0"
    assert (solution.output_nr, copy.output_nr) == (0, 1)
    copy.sum().backward()  # the copy's gradient reaches all of A, as a clone's
    np.testing.assert_array_equal(A.grad.numpy(), np.full((3, 3), 2.0))


@pytest.mark.parametrize(("upper", "transpose", "unit"), [(True, False, False), (False, True, True),
                                                          (True, True, False)])
def test_triangular_solve_gradients_match_finite_differences(upper: bool, transpose: bool, unit: bool) -> None:
    a, b = t(dominant((2, 3, 3)), requires_grad=True), t(RNG.standard_normal((3, 2)), requires_grad=True)

    def f(b: ag.Tensor, a: ag.Tensor) -> tuple:
        return tuple(ag.triangular_solve(b, a, upper, transpose, unit))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(f, [b, a])
        assert gradgradcheck(f, [b, a])


def test_triangular_solve_warns_once_that_it_is_deprecated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(user_warnings, "_warned_once", set())
    with pytest.warns(UserWarning, match="torch.triangular_solve is deprecated"):
        ag.triangular_solve(t(np.ones((2, 1))), t(np.eye(2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ag.triangular_solve(t(np.ones((2, 1))), t(np.eye(2)))


def spd_factor(shape: tuple, upper: bool) -> np.ndarray:
    """A Cholesky factor with a positive dominant diagonal and junk in its other triangle (which must not be read)."""
    junk = RNG.standard_normal(shape)
    factor = np.abs(dominant(shape))
    return np.triu(factor) + np.tril(junk, -1) if upper else np.tril(factor) + np.triu(junk, 1)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_use_the_matrix_the_factor_gives(upper: bool) -> None:
    factor = spd_factor((2, 3, 3), upper)
    tri = np.triu(factor) if upper else np.tril(factor)
    a = np.swapaxes(tri, -1, -2) @ tri if upper else tri @ np.swapaxes(tri, -1, -2)
    b = RNG.standard_normal((4, 1, 3, 2))
    x = ag.cholesky_solve(t(b), t(factor), upper).numpy()
    assert x.shape == (4, 2, 3, 2)
    np.testing.assert_allclose(a @ x, np.broadcast_to(b, x.shape), atol=1e-12)
    np.testing.assert_allclose(a @ ag.cholesky_inverse(t(factor), upper).numpy(), np.broadcast_to(np.eye(3), a.shape),
                               atol=1e-12)
    np.testing.assert_allclose(t(factor).cholesky_inverse(upper=upper).numpy(), np.linalg.inv(a), atol=1e-12)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_gradients_match_finite_differences_through_the_factors_triangle(upper: bool) -> None:
    factor = t(spd_factor((2, 3, 3), upper), requires_grad=True)
    b = t(RNG.standard_normal((3, 2)), requires_grad=True)

    def tri(f: ag.Tensor) -> ag.Tensor:
        return f.triu() if upper else f.tril()

    assert gradcheck(lambda b, f: ag.cholesky_solve(b, tri(f), upper), [b, factor])
    assert gradgradcheck(lambda b, f: ag.cholesky_solve(b, tri(f), upper), [b, factor])
    assert gradcheck(lambda f: ag.cholesky_inverse(tri(f), upper), [factor])
    assert gradgradcheck(lambda f: ag.cholesky_inverse(tri(f), upper), [factor])


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_gradients_are_pytorchs_full_matrices(upper: bool) -> None:
    # PyTorch's formulas do not restrict the factor's gradient to its triangle: -(C L) or -(L C) with C symmetric.
    factor = spd_factor((3, 3), upper)
    tri = np.triu(factor) if upper else np.tril(factor)
    a = tri.T @ tri if upper else tri @ tri.T
    b = RNG.standard_normal((3, 2))
    weights = RNG.standard_normal((3, 2))
    f, B = t(factor, requires_grad=True), t(b, requires_grad=True)
    (ag.cholesky_solve(B, f, upper) * t(weights)).sum().backward()
    x, gb = np.linalg.solve(a, b), np.linalg.solve(a, weights)
    common = gb @ x.T + x @ gb.T
    np.testing.assert_allclose(B.grad.numpy(), gb, atol=1e-12)
    np.testing.assert_allclose(f.grad.numpy(), -(factor @ common) if upper else -(common @ factor), atol=1e-12)
    f.grad = None
    (ag.cholesky_inverse(f, upper) * t(weights @ weights.T)).sum().backward()
    inverse = np.linalg.inv(a)
    common = inverse @ (2 * weights @ weights.T) @ inverse
    np.testing.assert_allclose(f.grad.numpy(), -(factor @ common) if upper else -(common @ factor), atol=1e-12)


def test_node_names_are_pytorchs() -> None:
    a, b = t(dominant((3, 3)), requires_grad=True), t(RNG.standard_normal((3, 1)))
    assert L.solve_triangular(a, b, upper=True).grad_fn.name() == "LinalgSolveTriangularBackward0"
    assert ag.cholesky_solve(b, a).grad_fn.name() == "CholeskySolveBackward0"
    assert ag.cholesky_inverse(a).grad_fn.name() == "CholeskyInverseBackward0"


M33, M32 = np.eye(3), np.ones((3, 2))
ERRORS: list[tuple[Callable, type, str]] = [
    (lambda: L.solve_triangular(t(M33), t(M32)), TypeError, "missing 1 required keyword-only argument: 'upper'"),
    (lambda: L.solve_triangular(t(M33), t(M32), upper=True, left=False), RuntimeError,
     "linalg.solve_triangular: Incompatible shapes of A and B for the equation XA = B (3x3 and 3x2)"),
    (lambda: L.solve_triangular(t(M33), t(np.ones(3)), upper=True), RuntimeError,
     "linalg.solve_triangular: The input tensor B must have at least 2 dimensions."),
    (lambda: L.solve_triangular(t(M32), t(M32), upper=True), RuntimeError,
     "linalg.solve_triangular: A must be batches of square matrices, but they are 3 by 2 matrices"),
    (lambda: L.solve_triangular(t(M33, dtype=ag.int64), t(M32, dtype=ag.int64), upper=True), NotImplementedError,
     "\"triangular_solve_cpu\" not implemented for 'Long'"),
    (lambda: L.solve_triangular(t(np.ones((2, 3, 3))), t(np.ones((3, 3, 2))), upper=True), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"),
    (lambda: ag.triangular_solve(t(np.ones(3)), t(M33)), RuntimeError,
     "torch.triangular_solve: Expected b to have at least 2 dimensions, but it has 1 dimensions instead"),
    (lambda: ag.triangular_solve(t(np.ones((4, 2))), t(M33)), RuntimeError,
     "Incompatible matrix sizes for triangular_solve: each A matrix is 3 by 3 but each b matrix is 4 by 2"),
    (lambda: ag.triangular_solve(t(M32, dtype=ag.float32), t(M33)), RuntimeError,
     "Expected b and A to have the same dtype, but found b of type Float and A of type Double instead."),
    (lambda: ag.cholesky_solve(t(np.ones(3)), t(M33)), RuntimeError,
     "b should have at least 2 dimensions, but has 1 dimensions instead"),
    (lambda: ag.cholesky_solve(t(M32), t(M32)), RuntimeError,
     "A must be batches of square matrices, but they are 3 by 2 matrices"),
    (lambda: ag.cholesky_solve(t(np.ones((4, 2))), t(M33)), RuntimeError,
     "Incompatible matrix sizes for cholesky_solve: each A matrix is 3 by 3 but each b matrix is 4 by 2"),
    (lambda: ag.cholesky_inverse(t(np.ones(3))), RuntimeError,
     "cholesky_inverse: The input tensor A must have at least 2 dimensions."),
    (lambda: ag.cholesky_inverse(t(M32)), RuntimeError,
     "cholesky_inverse: A must be batches of square matrices, but they are 3 by 2 matrices"),
    (lambda: ag.cholesky_inverse(t(M33, dtype=ag.int64)), NotImplementedError,
     "\"cholesky_inverse_out_cpu\" not implemented for 'Long'"),
]


@pytest.mark.parametrize(("f", "kind", "message"), ERRORS)
def test_errors_match_torch(f: Callable, kind: type, message: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(kind, match=re.escape(message)):
            f()


@pytest.mark.gpu
def test_on_cuda_values_and_gradients_are_the_cpus(cupy) -> None:
    a, b = dominant((2, 3, 3)), RNG.standard_normal((3, 2))

    def f(a: ag.Tensor, b: ag.Tensor) -> ag.Tensor:
        return (L.solve_triangular(a, b, upper=True).sum() + L.solve_triangular(a, b.mT, upper=False, left=False,
                                                                                 unitriangular=True).sum()
                + ag.cholesky_solve(b, a.tril()).sum() + ag.cholesky_inverse(a.triu(), upper=True).sum())

    results = []
    for device in ("cpu", "cuda:0"):
        leaves = [ag.tensor(x, device=device, requires_grad=True) for x in (a, b)]
        out = f(*leaves)
        first = ag.autograd.grad(out, leaves, create_graph=True)
        second = ag.autograd.grad(sum(g.sum() for g in first), leaves)
        results.append([x.detach().cpu().numpy() for x in (out, *first, *second)])
    for cpu, cuda in zip(*results):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-10, atol=1e-12)
