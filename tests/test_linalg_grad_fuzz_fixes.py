"""Linear algebra where a generated differential review of values, gradients and errors against PyTorch found
differences: cholesky_solve's second derivative (its backward now calls a recorded cholesky_solve, as PyTorch's
does, rather than two triangular solves); slogdet's and logdet's gradient at a singular matrix (infinities, not
numpy's LinAlgError); householder_product without reflections (still recorded on its inputs); vecdot of two
vectors of different lengths (refused as by dot, not broadcast); lstsq's reading of a B of one dim fewer than A
(a matrix unless it is a batch of vectors) and its solution's batch; NaN inputs (PyTorch's LinAlgError from svd,
eigh and the ops built on them, and cholesky's "not positive-definite", not numpy's ValueError or NaNs); and
PyTorch's errors for batch dims of solve, solve_ex and lu_solve that do not broadcast, the order of solve's checks,
tensorinv of a singular matrix, tensorsolve's sizes, the dims of matrix_norm, cross and diagonal, torch.cholesky,
torch.svd, eigvals of an input that requires grad and tril/triu of a vector. Gradients against closed forms, finite
differences or the same function spelled with other ops (float64)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck

RNG = np.random.default_rng(31)
TOL = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


def leaf(a: np.ndarray) -> ag.Tensor:
    return ag.tensor(a, dtype=a.dtype, requires_grad=True)


def lower_factor(n: int, dtype: type = np.float64) -> np.ndarray:
    """A Cholesky factor (lower-triangular, positive diagonal) of a well-conditioned matrix."""
    a = RNG.normal(size=(n, n)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.normal(size=(n, n))
    return np.linalg.cholesky(a @ a.conj().T + n * np.eye(n))


def second_derivatives(fn, b: np.ndarray, factor: np.ndarray, seed: int) -> list[np.ndarray]:
    """d/d(b, factor) of <d fn/d(b, factor), v> for a random upstream gradient and v."""
    rng = np.random.default_rng(seed)
    tb, tf = leaf(b), leaf(factor)
    out = fn(tb, tf)
    upstream = ag.tensor(rng.normal(size=out.shape).astype(out.dtype))
    grads = ag.autograd.grad((out * upstream).real.sum(), (tb, tf), create_graph=True)
    total = sum((g * ag.tensor(rng.normal(size=g.shape).astype(g.dtype))).real.sum() for g in grads)
    return [g.numpy() for g in ag.autograd.grad(total, (tb, tf))]


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_cholesky_solve_second_derivative_is_pytorchs(upper, dtype):
    """PyTorch's first derivative for the factor is the gradient of (L L^H)^-1 B as a function of all of L (not
    only the triangle the solve reads); its backward calls cholesky_solve again, so its second derivative is that
    function's too: the same as differentiating solve(L L^H, B) twice."""
    factor = lower_factor(3, dtype)
    if upper:
        factor = factor.conj().T.copy()
    b = RNG.normal(size=(3, 2)).astype(dtype)

    def product(f):
        return f.mH @ f if upper else f @ f.mH

    got = second_derivatives(lambda tb, tf: ag.cholesky_solve(tb, tf, upper=upper), b, factor, 7)
    want = second_derivatives(lambda tb, tf: ag.linalg.solve(product(tf), tb), b, factor, 7)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10)


def test_slogdet_and_logdet_of_a_singular_matrix_give_infinite_gradients():
    """PyTorch solves with the LU factors of the forward (no error): here A^-T is [[-inf, inf], [inf, -inf]];
    a batch's invertible matrices keep their exact gradient A^-T."""
    for f in (lambda x: ag.linalg.slogdet(x).logabsdet, ag.logdet):
        x = leaf(np.stack([2 * np.eye(2), SINGULAR]))
        f(x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy()[0], 0.5 * np.eye(2))
        np.testing.assert_array_equal(x.grad.numpy()[1], [[-np.inf, np.inf], [np.inf, -np.inf]])


def test_householder_product_without_reflections_is_recorded():
    a, tau = leaf(RNG.normal(size=(2, 4, 3))), leaf(np.zeros((2, 0)))
    q = ag.linalg.householder_product(a, tau)
    np.testing.assert_array_equal(q.detach().numpy(), np.broadcast_to(np.eye(4)[:, :3], (2, 4, 3)))
    assert q.requires_grad
    q.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros((2, 4, 3)))
    assert tau.grad.shape == (2, 0)


def test_householder_product_gradients_still_match_finite_differences():
    a, tau = leaf(RNG.normal(size=(4, 3))), leaf(RNG.normal(size=(2,)))
    assert gradcheck(ag.linalg.householder_product, (a, tau), **TOL)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_vecdot_of_two_vectors_of_different_lengths_is_refused_as_dot(dtype):
    x, y = ag.ones(1, dtype=dtype), ag.ones(4, dtype=dtype)
    with pytest.raises(RuntimeError, match=re.escape(
            "inconsistent tensor size, expected tensor [1] and src [4] to have the same number of elements, but got "
            "1 and 4 elements respectively")):
        ag.linalg.vecdot(x, y)
    assert ag.linalg.vecdot(ag.ones(2, 1, dtype=dtype), y).shape == (2,)  # batches still broadcast


@pytest.mark.parametrize("call", [
    lambda a, b: ag.linalg.solve(a, b),
    lambda a, b: ag.linalg.solve_ex(a, b),
    lambda a, b: ag.linalg.solve(a, b.mT, left=False),
    lambda a, b: ag.linalg.lu_solve(*ag.linalg.lu_factor(a), b),
])
def test_solves_name_batch_dims_that_do_not_broadcast_as_pytorch(call):
    a = ag.tensor(np.broadcast_to(np.eye(3), (4, 3, 3)).copy())
    with pytest.raises(RuntimeError, match=re.escape(
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0")):
        call(a, ag.ones(3, 3, 2, dtype=ag.float64))


def test_tensorinv_of_a_singular_tensor_names_inv():
    with pytest.raises(ag.linalg.LinAlgError, match=re.escape(
            "inv: The diagonal element 1 is zero, the inversion could not be completed because the input matrix is "
            "singular.")) as caught:
        ag.linalg.tensorinv(ag.zeros(2, 2, 4), ind=2)
    assert str(caught.value).startswith("inv:")


@pytest.mark.parametrize(("dim", "message"), [
    ((0, 1, 2), "linalg.matrix_norm: dim must be a 2-tuple. Got 0 1 2"),
    ((0,), "linalg.matrix_norm: dim must be a 2-tuple. Got 0"),
])
def test_matrix_norm_prints_dims_as_pytorch(dim, message):
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
        ag.linalg.matrix_norm(ag.ones(2, 2, 2), dim=dim)


@pytest.mark.parametrize("call", [
    lambda: ag.linalg.matrix_norm(ag.ones(3, 3), dim=(0, 5)),
    lambda: ag.linalg.norm(ag.ones(3, 3), dim=(0, 5)),
])
def test_matrix_norm_dim_out_of_range_names_no_op(call):
    with pytest.raises(IndexError) as caught:
        call()
    assert str(caught.value) == "Dimension out of range (expected to be in range of [-2, 1], but got 5)"


@pytest.mark.parametrize(("x", "dim", "message"), [
    (ag.ones(3), 2, "Dimension out of range (expected to be in range of [-1, 0], but got 2)"),
    (ag.ones(3), -2, "Dimension out of range (expected to be in range of [-1, 0], but got -2)"),
    (ag.tensor(1.0), -1, "Dimension specified as -1 but tensor has no dimensions"),
])
def test_cross_dim_out_of_range_names_no_op(x, dim, message):
    for cross in (ag.linalg.cross, ag.cross):
        with pytest.raises(IndexError) as caught:
            cross(x, x, dim=dim)
        assert str(caught.value) == message


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("a", "kwargs", "error", "message"), [
    (-np.eye(2), {}, ag.linalg.LinAlgError,
     "cholesky: The factorization could not be completed because the input is not positive-definite (the leading "
     "minor of order 1 is not positive-definite)."),
    (np.stack([np.eye(2), -np.eye(2)]), {"upper": True}, ag.linalg.LinAlgError,
     "cholesky: (Batch element 1): The factorization could not be completed because the input is not "
     "positive-definite (the leading minor of order 1 is not positive-definite)."),
    (np.ones(3), {}, RuntimeError, "cholesky: The input tensor A must have at least 2 dimensions."),
    (np.ones((2, 3)), {}, RuntimeError, "cholesky: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (np.eye(2, dtype=np.int64), {}, NotImplementedError, "\"cholesky_cpu\" not implemented for 'Long'"),
    (np.eye(2, dtype=np.float16), {}, NotImplementedError, "\"cholesky_cpu\" not implemented for 'Half'"),
])
def test_torch_cholesky_errors_name_cholesky(a, kwargs, error, message):
    with pytest.raises(error) as caught:
        ag.cholesky(ag.tensor(a), **kwargs)
    assert str(caught.value) == message


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_torch_cholesky_still_factors():
    factor = lower_factor(3)
    a = factor @ factor.T
    np.testing.assert_allclose(ag.cholesky(ag.tensor(a)).numpy(), factor, rtol=1e-12)
    np.testing.assert_allclose(ag.cholesky(ag.tensor(a), upper=True).numpy(), factor.T, rtol=1e-12)


@pytest.mark.parametrize(("shape", "message"), [
    ((3, 4), "linalg.eig: A must be batches of square matrices, but they are 3 by 4 matrices"),
    ((3,), "linalg.eig: The input tensor A must have at least 2 dimensions."),
])
def test_eigvals_of_an_input_that_requires_grad_checks_as_eig(shape, message):
    with pytest.raises(RuntimeError) as caught:
        ag.linalg.eigvals(ag.ones(*shape, requires_grad=True))
    assert str(caught.value) == message
    with pytest.raises(RuntimeError) as caught:  # without grad, eigvals's own name
        ag.linalg.eigvals(ag.ones(*shape))
    assert str(caught.value) == message.replace("linalg.eig:", "linalg.eigvals:")


@pytest.mark.parametrize(("call", "message"), [
    (lambda: ag.linalg.diagonal(ag.ones(3)), "Dimension out of range (expected to be in range of [-1, 0], but got -2)"),
    (lambda: ag.diagonal(ag.tensor(1.0)), "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (lambda: ag.ones(3, 3).diagonal(0, 0, -3),
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
])
def test_diagonal_dim_out_of_range_names_no_op(call, message):
    with pytest.raises(IndexError) as caught:
        call()
    assert str(caught.value) == message


@pytest.mark.parametrize("triangle", [ag.tril, ag.triu])
def test_tril_triu_of_a_vector_say_as_pytorch(triangle):
    with pytest.raises(RuntimeError) as caught:
        triangle(ag.ones(3))
    assert str(caught.value) == f"{triangle.__name__}: input tensor must have at least 2 dimensions"


# -- lstsq: a B of one dim fewer than A is a batch of vectors only when its shape is A's less the last dim ----------
def test_lstsq_reads_b_of_one_dim_fewer_as_a_matrix_unless_it_is_a_batch_of_vectors():
    a = RNG.normal(size=(3, 3, 2))
    b = RNG.normal(size=(3, 4))  # a (3, 4) matrix: the batch dims of A (3,) broadcast with B's leading (3,)
    got = ag.linalg.lstsq(ag.tensor(a), ag.tensor(b), driver="gelsd")
    np.testing.assert_allclose(got.solution.numpy(), np.linalg.pinv(a) @ b, rtol=1e-10, atol=1e-12)
    assert got.residuals.shape == (3, 4) and got.rank.shape == (3,)
    vectors = RNG.normal(size=(3, 3))  # A's shape less its last dim: one vector per matrix
    want = (np.linalg.pinv(a) @ vectors[..., None])[..., 0]
    np.testing.assert_allclose(ag.linalg.lstsq(ag.tensor(a), ag.tensor(vectors)).solution.numpy(), want, rtol=1e-10)


def test_lstsq_solution_takes_the_batch_pytorch_gives_it():
    """PyTorch broadcasts A's batch dims with all but the last dim of such a B for the solution (not for the rank
    or the singular values): A (1, 4, 2) and B (4, 2) give four copies of pinv(A) B."""
    a, b = RNG.normal(size=(1, 4, 2)), RNG.normal(size=(4, 2))
    got = ag.linalg.lstsq(ag.tensor(a), ag.tensor(b), driver="gelsd")
    np.testing.assert_allclose(got.solution.numpy(), np.broadcast_to(np.linalg.pinv(a[0]) @ b, (4, 2, 2)), rtol=1e-10)
    assert (got.residuals.shape, got.rank.shape, got.singular_values.shape) == ((4, 2), (1,), (1, 2))
    one = ag.linalg.lstsq(ag.tensor(RNG.normal(size=(3, 1, 1))), ag.tensor(RNG.normal(size=(1, 1)))).solution
    assert one.shape == (3, 1, 1)
    assert gradcheck(lambda x, y: ag.linalg.lstsq(x, y).solution, (leaf(a), leaf(b)), **TOL)


@pytest.mark.parametrize(("a_shape", "b_shape", "message"), [
    ((4, 2), (3,), "torch.linalg.lstsq: input.size(-2) should match other.size(-1)"),
    ((3, 4, 2), (3, 5), "torch.linalg.lstsq: input.size(-2) should match other.size(-2)"),
    ((2, 4, 2), (4, 3), "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 0"),
])
def test_lstsq_shape_errors_are_pytorchs(a_shape, b_shape, message):
    with pytest.raises(RuntimeError) as caught:
        ag.linalg.lstsq(ag.ones(*a_shape, dtype=ag.float64), ag.ones(*b_shape, dtype=ag.float64))
    assert str(caught.value) == message


# -- NaN inputs: PyTorch's LinAlgError (a RuntimeError), not numpy's (a ValueError) or NaNs -------------------------
def nan_in_second_matrix() -> ag.Tensor:
    return ag.tensor(np.stack([np.eye(3), np.full((3, 3), np.nan)]))


@pytest.mark.parametrize("call", [
    lambda a: ag.linalg.svd(a), lambda a: ag.linalg.svdvals(a), lambda a: ag.svd(a), lambda a: ag.linalg.pinv(a),
    lambda a: ag.linalg.matrix_rank(a), lambda a: ag.linalg.matrix_norm(a, "nuc"), lambda a: ag.linalg.cond(a),
])
def test_an_svd_of_a_nan_matrix_fails_as_pytorchs(call):
    with pytest.raises(ag.linalg.LinAlgError) as caught:
        call(nan_in_second_matrix())
    assert str(caught.value) == ("linalg.svd: (Batch element 1): The algorithm failed to converge because the input "
                                 "matrix contained non-finite values.")


@pytest.mark.parametrize("call", [lambda a: ag.linalg.eigh(a), lambda a: ag.linalg.eigvalsh(a)])
def test_an_eigh_that_does_not_converge_raises_linalg_error(call):
    with pytest.raises(ag.linalg.LinAlgError, match=re.escape(
            "linalg.eigh: (Batch element 1): The algorithm failed to converge because the input matrix is "
            "ill-conditioned or has too many repeated eigenvalues")):
        call(nan_in_second_matrix())


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_of_a_nan_matrix_is_not_positive_definite(upper):
    a = np.eye(3)
    a[1, 1] = np.nan  # LAPACK's potrf stops at the NaN: order 2
    message = ("The factorization could not be completed because the input is not positive-definite (the leading "
               "minor of order 2 is not positive-definite).")
    for call, op in ((ag.linalg.cholesky, "linalg.cholesky"), (ag.cholesky, "cholesky")):
        with pytest.raises(ag.linalg.LinAlgError) as caught:
            call(ag.tensor(a), upper=upper)
        assert str(caught.value) == f"{op}: {message}"
    assert int(ag.linalg.cholesky_ex(ag.tensor(a), upper=upper).info) == 2
    with pytest.raises(ag.linalg.LinAlgError) as caught:
        ag.linalg.cholesky_ex(ag.tensor(a), upper=upper, check_errors=True)
    assert str(caught.value) == f"linalg.cholesky_ex: {message}"


@pytest.mark.parametrize("x", [ag.ones(3), ag.tensor(1.0)])
def test_torch_svd_of_fewer_than_two_dims_says_as_pytorch(x):
    with pytest.raises(RuntimeError) as caught:
        ag.svd(x)
    assert str(caught.value) == (f"linalg.svd: input should have at least 2 dimensions, but has {x.ndim} dimensions "
                                 "instead")


# -- tensorsolve compares A's trailing size with B's; solve checks dtypes before shapes ----------------------------
@pytest.mark.parametrize(("a_shape", "b_shape", "sizes"), [
    ((3, 3), (3, 2), "1 != 6"), ((2, 3, 6), (6,), "18 != 6"), ((4, 2, 2), (2, 2), "2 != 4"), ((3, 3), (2,), "3 != 2"),
])
def test_tensorsolve_compares_the_solution_size_with_b_size(a_shape, b_shape, sizes):
    with pytest.raises(RuntimeError) as caught:
        ag.linalg.tensorsolve(ag.ones(*a_shape, dtype=ag.float64), ag.ones(*b_shape, dtype=ag.float64))
    assert str(caught.value) == ("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                                 f"prod(self.shape[:other.ndim]), but got {sizes}")


def test_tensorsolve_still_solves():
    a, b = RNG.normal(size=(2, 3, 6)) + np.eye(6).reshape(2, 3, 6) * 3, RNG.normal(size=(2, 3))
    want = np.linalg.solve(a.reshape(6, 6), b.reshape(6))
    np.testing.assert_allclose(ag.linalg.tensorsolve(ag.tensor(a), ag.tensor(b)).numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("solve", [ag.linalg.solve, lambda a, b, left: ag.linalg.solve_ex(a, b, left=left)])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize(("a", "b", "error", "message"), [
    (ag.ones(3, 4, dtype=ag.float32), ag.ones(3, 2, dtype=ag.float64), RuntimeError,
     "linalg.solve: Expected A and B to have the same dtype, but found A of type Float and B of type Double instead"),
    (ag.ones(3, 4, dtype=ag.int64), ag.ones(3, 2, dtype=ag.float64), RuntimeError,
     "linalg.solve: Expected a floating point or complex tensor as input. Got Long"),
    (ag.eye(3, dtype=ag.float16), ag.ones(4, 3, 2, dtype=ag.float32), RuntimeError,
     "linalg.solve: Expected A and B to have the same dtype, but found A of type Half and B of type Float instead"),
])
def test_solve_checks_dtypes_before_shapes_as_pytorch(solve, left, a, b, error, message):
    with pytest.raises(error) as caught:
        solve(a, b, left=left)
    assert str(caught.value) == message


@pytest.mark.parametrize("left", [True, False])
def test_solve_refuses_float16_after_the_shapes(left):
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
        ag.linalg.solve(ag.eye(3, dtype=ag.float16), ag.ones(4, 2, dtype=ag.float16), left=left)
    with pytest.raises(NotImplementedError, match="\"lu_cpu\" not implemented for 'Half'"):
        ag.linalg.solve(ag.eye(3, dtype=ag.float16), ag.ones(3, 3, dtype=ag.float16), left=left)
