"""linalg.lstsq, the `_ex` forms (inv_ex, solve_ex, cholesky_ex) and the composite ops (cond, tensorinv,
tensorsolve, householder_product, multi_dot, vecdot, cross, diagonal, vander): values by their defining properties
or brute force, PyTorch's result fields, info and errors, first and second derivatives against finite differences."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck
from actorgrad.linalg import LinAlgError

RNG = np.random.default_rng(13)
L = ag.linalg
SINGULAR = np.array([[[1.0, 2], [2, 4]], [[2, 1], [1, 3]]])  # LU of the first: [[2, 4], [0.5, 0]], info 2


def t(x: np.ndarray, **kw) -> ag.Tensor:
    return ag.tensor(x, dtype=kw.pop("dtype", ag.float64), **kw)


# -- lstsq ---------------------------------------------------------------------------------------------------------
def test_lstsq_of_a_tall_matrix_meets_the_normal_equations_with_its_residuals() -> None:
    a, b = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 5, 2))
    solution, residuals, rank, values = L.lstsq(t(a), t(b), driver="gelsd")
    x = solution.numpy()
    np.testing.assert_allclose(np.swapaxes(a, -1, -2) @ (a @ x - b), 0, atol=1e-12)
    np.testing.assert_allclose(residuals.numpy(), ((a @ x - b) ** 2).sum(-2), rtol=1e-12)
    assert rank.tolist() == [3, 3] and rank.dtype == ag.int64
    np.testing.assert_allclose(values.numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-12)


def test_lstsq_of_a_wide_matrix_gives_the_least_norm_solution() -> None:
    a, b = RNG.standard_normal((3, 5)), RNG.standard_normal(3)
    x = L.lstsq(t(a), t(b)).solution.numpy()
    np.testing.assert_allclose(a @ x, b, atol=1e-12)
    y = np.linalg.solve(a @ a.T, b)  # the least-norm solution lies in A's row space: x = A^T y
    np.testing.assert_allclose(x, a.T @ y, atol=1e-12)


def test_lstsq_drops_singular_values_below_rcond() -> None:
    a = np.array([[1.0, 0], [0, 1e-3], [0, 0]])
    result = L.lstsq(t(a), t(np.ones((3, 1))), rcond=1e-2, driver="gelss")
    np.testing.assert_allclose(result.solution.numpy(), [[1.0], [0.0]])
    assert result.rank.item() == 1 and result.residuals.shape == (0,)  # not full rank: no residuals
    assert L.lstsq(t(a), t(np.ones((3, 1)))).rank.item() == 2


@pytest.mark.parametrize(("driver", "shapes"), [
    (None, ((2, 3), (0,), (2,), (0,))), ("gelsy", ((2, 3), (0,), (2,), (0,))),
    ("gels", ((2, 3), (2, 1), (0,), (0,))), ("gelsd", ((2, 3), (2, 1), (2,), (2, 3))),
    ("gelss", ((2, 3), (2, 1), (2,), (2, 3))),
])
def test_lstsq_fields_are_pytorchs_for_each_driver(driver: str | None, shapes: tuple) -> None:
    result = L.lstsq(t(RNG.standard_normal((2, 5, 3))), t(RNG.standard_normal((2, 5))), driver=driver)
    assert tuple(tuple(x.shape) for x in result) == shapes
    assert [x.dtype for x in result] == [ag.float64, ag.float64, ag.int64, ag.float64]


@pytest.mark.parametrize(("a_shape", "b_shape"), [((2, 5, 3), (1, 5, 2)), ((3, 4), (3,)), ((1, 4, 4), (2, 4, 1))])
def test_lstsq_solution_gradients_match_finite_differences(a_shape: tuple, b_shape: tuple) -> None:
    a = t(RNG.standard_normal(a_shape) + np.eye(*a_shape[-2:]), requires_grad=True)
    b = t(RNG.standard_normal(b_shape), requires_grad=True)
    assert gradcheck(lambda a, b: L.lstsq(a, b).solution, [a, b])
    assert gradgradcheck(lambda a, b: L.lstsq(a, b).solution, [a, b])
    assert L.lstsq(a, b).solution.grad_fn.name() == "LinalgLstsqBackward0"


# -- the _ex forms -------------------------------------------------------------------------------------------------
def test_inv_ex_and_solve_ex_give_info_and_lapacks_infinities_for_a_singular_matrix() -> None:
    inverse, info = L.inv_ex(t(SINGULAR))
    assert info.tolist() == [2, 0] and info.dtype == ag.int32
    np.testing.assert_array_equal(inverse.numpy()[0], [[-np.inf, np.inf], [np.inf, -np.inf]])
    np.testing.assert_allclose(inverse.numpy()[1], np.linalg.inv(SINGULAR[1]))
    result, info = L.solve_ex(t(SINGULAR), t(np.ones((2, 2))))
    assert info.tolist() == [2, 0]
    np.testing.assert_array_equal(result.numpy()[0], [-np.inf, np.inf])


def test_cholesky_ex_gives_info_and_the_partial_factor() -> None:
    factor, info = L.cholesky_ex(t([[[4.0, 2], [2, -1]], [[1, 0], [0, 1]]]))
    assert info.tolist() == [2, 0]
    np.testing.assert_array_equal(factor.numpy(), [[[2.0, 0], [1, -2]], [[1, 0], [0, 1]]])  # -1 - 1^2 = -2
    factor, info = L.cholesky_ex(t(SINGULAR[1]), upper=True)
    np.testing.assert_allclose(factor.numpy().T @ factor.numpy(), SINGULAR[1], atol=1e-14)
    assert info.item() == 0 and not np.tril(factor.numpy(), -1).any()


@pytest.mark.parametrize(("f", "message"), [
    (lambda: L.inv_ex(t(SINGULAR), check_errors=True),
     "linalg.inv_ex: (Batch element 0): The diagonal element 2 is zero, the inversion could not be completed "
     "because the input matrix is singular."),
    (lambda: L.solve_ex(t(SINGULAR), t(np.ones((2, 2))), check_errors=True),
     "torch.linalg.solve_ex: (Batch element 0): The solver failed because the input matrix is singular."),
    (lambda: L.cholesky_ex(t([[4.0, 2], [2, -1]]), check_errors=True),
     "linalg.cholesky_ex: The factorization could not be completed because the input is not positive-definite (the "
     "leading minor of order 2 is not positive-definite)."),
])
def test_check_errors_raises_torchs_linalg_error(f: Callable, message: str) -> None:
    with pytest.raises(LinAlgError, match=re.escape(message)):
        f()


def test_ex_forms_record_the_nodes_of_their_ops_and_differentiate() -> None:
    a = t(RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3), requires_grad=True)
    b = t(RNG.standard_normal((3, 2)), requires_grad=True)
    assert L.inv_ex(a).inverse.grad_fn.name() == "LinalgInvExBackward0"
    assert L.solve_ex(a, b).result.grad_fn.name() == "LinalgSolveExBackward0"
    assert L.cholesky_ex(a @ a.mT).L.grad_fn.name() == "LinalgCholeskyExBackward0"
    assert not L.inv_ex(a).info.requires_grad
    rows = b.mT[None]  # a batch of one 2x3 matrix: PyTorch reads a (2, 3) B as a batch of vectors, not rows
    for f, inputs in ((lambda a: L.inv_ex(a).inverse, [a]), (lambda a, b: L.solve_ex(a, b, left=False)[0], [a, rows]),
                      (lambda a: L.cholesky_ex(a @ a.mT, upper=True).L, [a])):
        assert gradcheck(f, inputs)
        assert gradgradcheck(f, inputs)


# -- composites ----------------------------------------------------------------------------------------------------
def test_cond_of_a_diagonal_matrix_is_a_ratio_of_its_entries() -> None:
    d = np.array([4.0, -0.5, 2.0])
    a = t(np.diag(d))
    for p in (None, 2, 1, -1, math.inf, -math.inf):
        expected = 8.0 if p in (None, 2, 1, math.inf) else 1 / 8
        assert L.cond(a, p).item() == pytest.approx(expected)
    assert L.cond(a, -2).item() == pytest.approx(1 / 8)
    assert L.cond(a, "fro").item() == pytest.approx(np.linalg.norm(d) * np.linalg.norm(1 / d))
    assert L.cond(a, "nuc").item() == pytest.approx(np.abs(d).sum() * np.abs(1 / d).sum())


def test_cond_of_empty_matrices_is_zero_as_pytorchs() -> None:
    for p in (None, 2, -2, 1, math.inf, "fro", "nuc"):
        assert L.cond(ag.zeros(2, 0, 0, dtype=ag.float64), p).tolist() == [0.0, 0.0]
    assert L.cond(ag.zeros(0, 3), None).item() == 0.0
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 3 by 0 matrices"):
        L.cond(ag.zeros(3, 0), "fro")


def test_cond_of_singular_matrices_is_infinite_and_of_a_general_one_matches_its_norms() -> None:
    assert L.cond(ag.zeros(2, 3, 3, dtype=ag.float64), 1).tolist() == [math.inf, math.inf]
    a = RNG.standard_normal((3, 3)) + 2 * np.eye(3)
    for p in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        want = np.linalg.norm(a, p) * np.linalg.norm(np.linalg.inv(a), p)
        assert L.cond(t(a), p).item() == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("p", [None, -2, "fro", "nuc", 1, -math.inf])
def test_cond_gradients_match_finite_differences(p: object) -> None:
    a = t(RNG.standard_normal((2, 3, 3)) + 3 * np.diag([1.0, 2, 3]), requires_grad=True)
    assert gradcheck(lambda a: L.cond(a, p), [a])
    if p in (None, "fro"):
        assert gradgradcheck(lambda a: L.cond(a, p), [a])


def test_tensorinv_and_tensorsolve_invert_the_matrix_their_dims_make() -> None:
    a = RNG.standard_normal((6, 2, 3)) + np.eye(6).reshape(6, 2, 3)
    inverse = L.tensorinv(t(a), ind=1).numpy()
    assert inverse.shape == (2, 3, 6)
    np.testing.assert_allclose(np.tensordot(inverse, a, 1), np.eye(2 * 3).reshape(2, 3, 2, 3), atol=1e-12)
    b = RNG.standard_normal((2, 3))
    x = L.tensorsolve(t(np.moveaxis(a, 0, -1)), t(b)).numpy()
    np.testing.assert_allclose(np.tensordot(np.moveaxis(a, 0, -1), x, 1), b, atol=1e-12)
    np.testing.assert_allclose(L.tensorsolve(t(a), t(b), dims=(0,)).numpy(), x, atol=1e-12)
    leaf = t(a, requires_grad=True)
    assert gradcheck(lambda a: L.tensorinv(a, ind=1), [leaf])
    assert gradcheck(lambda a, b: L.tensorsolve(a, b, dims=(0,)), [leaf, t(b, requires_grad=True)])


def test_householder_product_multiplies_the_reflections_out() -> None:
    a, tau = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 2))
    q = L.householder_product(t(a), t(tau)).numpy()
    for i in range(2):
        product = np.eye(5)
        for j in range(2):
            v = np.concatenate([np.zeros(j), [1.0], a[i, j + 1 :, j]])
            product = product @ (np.eye(5) - tau[i, j] * np.outer(v, v))
        np.testing.assert_allclose(q[i], product[:, :3], atol=1e-13)
    qr_q, r = np.linalg.qr(RNG.standard_normal((4, 3)))  # reflections with tau = 2 / v.v are orthogonal
    v = np.tril(RNG.standard_normal((4, 3)), -1)
    tau = 2 / (1 + (v**2).sum(0))
    q = L.householder_product(t(v), t(tau)).numpy()
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-13)
    leaves = [t(a, requires_grad=True), t(RNG.standard_normal((2, 2)), requires_grad=True)]
    assert gradcheck(L.householder_product, leaves)
    assert gradgradcheck(L.householder_product, leaves)


def test_multi_dot_multiplies_in_the_cheapest_order() -> None:
    mats = [RNG.standard_normal(4), RNG.standard_normal((4, 30)), RNG.standard_normal((30, 2)),
            RNG.standard_normal((2, 5)), RNG.standard_normal(5)]
    out = L.multi_dot([t(m) for m in mats])
    assert out.shape == () and out.item() == pytest.approx(mats[0] @ mats[1] @ mats[2] @ mats[3] @ mats[4])
    leaves = [t(m, requires_grad=True) for m in mats]
    assert gradcheck(lambda *m: L.multi_dot(m), leaves)
    assert gradgradcheck(lambda *m: L.multi_dot(m[:3]), leaves[:3])
    from actorgrad.ops.linalg_composites import _chain_order

    assert _chain_order([10, 100, 5, 50])[0][2] == 1  # (A B) C: 5000 + 2500 multiply-adds, not 25000 + 50000


def test_vecdot_cross_diagonal_and_vander() -> None:
    x, y = RNG.standard_normal((2, 3)), RNG.standard_normal(3)
    np.testing.assert_allclose(L.vecdot(t(x), t(y)).numpy(), x @ y)
    np.testing.assert_allclose(L.vecdot(t(x), t(x[:1]), dim=0).numpy(), (x * x[:1]).sum(0))
    np.testing.assert_allclose(L.cross(t(x), t(y[None])).numpy(), np.cross(x, y))
    np.testing.assert_array_equal(L.diagonal(t(np.arange(24.0).reshape(2, 3, 4)), offset=1).numpy(),
                                  [[1, 6, 11], [13, 18, 23]])
    v = L.vander(t([[1.0, 2, 3]]), N=4)
    np.testing.assert_array_equal(v.numpy(), [[[1, 1, 1, 1], [1, 2, 4, 8], [1, 3, 9, 27]]])
    assert L.vander(ag.tensor([1, 2])).dtype == ag.int64
    leaves = [t(x, requires_grad=True), t(y, requires_grad=True)]
    for f in (L.vecdot, lambda a, b: L.cross(a, b[None]), lambda a, b: L.vander(a) * b.sum()):
        assert gradcheck(f, leaves)
        assert gradgradcheck(f, leaves)


ERRORS: list[tuple[Callable, str]] = [
    (lambda: L.lstsq(t(np.ones((5, 3))), t(np.ones((5, 2))), driver="foo"),
     "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"),
    (lambda: L.lstsq(t(np.ones((5, 3))), t(np.ones((4, 2)))),
     "torch.linalg.lstsq: input.size(-2) should match other.size(-2)"),
    (lambda: L.lstsq(t(np.ones(5)), t(np.ones((5, 2)))), "torch.linalg.lstsq: input must have at least 2 dimensions."),
    (lambda: L.lstsq(t(np.ones((5, 3))), t(np.ones((5, 2)), dtype=ag.float32)),
     "torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's dtype Double and other's "
     "dtype Float"),
    (lambda: L.lstsq(t(np.ones((2, 5, 3))), t(np.ones((3, 1, 5, 2)))),
     "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1"),
    (lambda: L.inv_ex(t(np.ones((3, 2)))), "linalg.inv: A must be batches of square matrices, but they are 3 by 2 "
                                           "matrices"),
    (lambda: L.cond(t(np.eye(3)), 3), "linalg.cond got an invalid norm type: 3"),
    (lambda: L.cond(t(np.ones((3, 4))), 1),
     "linalg.cond(ord=1): A must be batches of square matrices, but they are 3 by 4 matrices"),
    (lambda: L.cond(t(np.ones(3))), "linalg.cond: The input tensor must have at least 2 dimensions."),
    (lambda: L.tensorinv(t(np.ones((4, 6, 8, 3))), ind=0), "Expected a strictly positive integer for 'ind', but got 0"),
    (lambda: L.tensorinv(t(np.ones((4, 6, 8, 2)))), "Expected self to satisfy the requirement prod(self.shape[ind:]) "
                                                    "== prod(self.shape[:ind]), but got 16 != 24"),
    (lambda: L.tensorsolve(t(np.ones((2, 3, 5))), t(np.ones((2, 3)))),
     "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but "
     "got 5 != 6"),
    (lambda: L.householder_product(t(np.ones((4, 3))), t(np.ones(4))),
     "torch.linalg.householder_product: input.shape[-1] must be greater than or equal to tau.shape[-1]"),
    (lambda: L.householder_product(t(np.ones((3, 4))), t(np.ones(2))),
     "torch.linalg.householder_product: input.shape[-2] must be greater than or equal to input.shape[-1]"),
    (lambda: L.householder_product(t(np.ones((2, 4, 3))), t(np.ones(2))),
     "torch.linalg.householder_product: Expected tau to have one dimension less than input, but got tau.ndim equal "
     "to 1 and input.ndim is equal to 3"),
    (lambda: L.householder_product(t(np.ones((2, 4, 3))), t(np.ones((3, 2)))),
     "torch.linalg.householder_product: Expected batch dimensions of tau to be equal to input.shape[:-2], but got [3]"),
    (lambda: L.householder_product(t(np.ones((4, 3))), t(np.ones(2), dtype=ag.float32)),
     "torch.linalg.householder_product: tau dtype Float does not match input dtype Double"),
    (lambda: L.multi_dot([t(np.eye(3))]), "multi_dot(): expected at least 2 tensors but got 1"),
    (lambda: L.multi_dot([t(np.ones((3, 3, 3))), t(np.eye(3))]),
     "multi_dot(): the first tensor must be 1D or 2D but got 3D"),
    (lambda: L.multi_dot([t(np.eye(3)), t(np.ones((2, 3, 3)))]),
     "multi_dot(): the last tensor must be 1D or 2D but got 3D"),
    (lambda: L.multi_dot([t(np.eye(3)), t(np.ones((2, 3)))]),
     "multi_dot(): tensors 0 and 1 with shapes [3, 3] and [2, 3] cannot be multiplied"),
    (lambda: L.multi_dot([t(np.eye(3)), t(np.eye(3), dtype=ag.float32)]),
     "multi_dot(): all tensors must have be the same dtype but tensor 0 is double and tensor 1 float"),
    (lambda: L.vecdot(t(np.ones((2, 3))), t(np.ones(3), dtype=ag.float32)),
     "linalg.vecdot: Expected x and y to have the same dtype, but found x of type Double and y of type Float "
     "instead"),
    (lambda: L.cross(t(np.ones((2, 3))), t(np.ones(3))), "linalg.cross: inputs must have the same number of "
                                                        "dimensions."),
    (lambda: L.vander(t([1.0, 2]), N=1), "N must be greater than 1."),
]


@pytest.mark.parametrize(("f", "message"), ERRORS)
def test_errors_match_torch(f: Callable, message: str) -> None:
    with pytest.raises(RuntimeError, match=re.escape(message)):
        f()


@pytest.mark.gpu
def test_on_cuda_values_and_gradients_are_the_cpus(cupy) -> None:
    a, b, s = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((5, 2)), RNG.standard_normal((3, 3)) + 3 * np.eye(3)

    def f(a: ag.Tensor, b: ag.Tensor, s: ag.Tensor) -> ag.Tensor:
        return (L.lstsq(a, b[None]).solution.sum() + L.inv_ex(s).inverse.sum() + L.solve_ex(s, b[:3]).result.sum()
                + L.cholesky_ex(s @ s.mT).L.sum() + L.cond(s, 1) + L.cond(a).sum()
                + L.householder_product(a, b.mT[:, :2]).sum() + L.multi_dot([b.mT, a[0], s]).sum() + L.vander(b).sum())

    results = []
    for device in ("cpu", "cuda:0"):
        leaves = [ag.tensor(x, device=device, requires_grad=True) for x in (a, b, s)]
        out = f(*leaves)
        first = ag.autograd.grad(out, leaves, create_graph=True)
        second = ag.autograd.grad(sum(g.sum() for g in first), leaves)
        results.append([x.detach().cpu().numpy() for x in (out, *first, *second)])
    for cpu, cuda in zip(*results):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-10, atol=1e-12)
    singular = ag.tensor(SINGULAR, device="cuda:0")
    assert L.inv_ex(singular).info.cpu().tolist() == [2, 0]
    assert L.cholesky_ex(singular).info.cpu().tolist() == [2, 0]
