"""linalg functions where a review against PyTorch found differences: solve's error naming the singular matrix of a
batch; solve and solve_ex with left=False refusing a vector B (PyTorch reads it as a column) and solve_ex taking
a matrix B then; the dtype checks of vecdot, vander and householder_product; vander of complex vectors;
linalg.norm's check of dim's length. Values against numpy formulas, gradients against finite differences (float64)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

TOL = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}
RNG = np.random.default_rng(23)
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
SINGULAR_TEXT = "The solver failed because the input matrix is singular."


def leaf(a: np.ndarray) -> ag.Tensor:
    return ag.tensor(a, dtype=ag.float64, requires_grad=True)


def well_conditioned(*batch: int, n: int = 3) -> np.ndarray:
    return RNG.normal(size=(*batch, n, n)) + 3 * np.eye(n)


@pytest.mark.parametrize(("a", "b", "prefix"), [
    (np.stack([np.eye(2), SINGULAR]), np.ones((2, 2)), "(Batch element 1): "),
    (np.stack([np.eye(2), SINGULAR])[:, None], np.ones((3, 2, 1)), "(Batch element 1): "),  # A's own batch index
    (SINGULAR, np.ones((3, 2, 1)), ""),  # a single A names no batch element, however B broadcasts
])
def test_solve_names_the_singular_matrix_of_a_batch(a, b, prefix):
    with pytest.raises(ag.linalg.LinAlgError) as caught:
        ag.linalg.solve(ag.tensor(a), ag.tensor(b))
    assert str(caught.value) == f"torch.linalg.solve: {prefix}{SINGULAR_TEXT}"


@pytest.mark.parametrize("solver", [ag.linalg.solve, ag.linalg.solve_ex])
@pytest.mark.parametrize("b_shape", [(2, 3), (3,)])
def test_right_solve_refuses_a_vector_b(solver, b_shape):
    a = ag.tensor(well_conditioned(2))
    with pytest.raises(RuntimeError, match=r"^linalg\.solve: Incompatible shapes of A and B for the equation "
                                           r"XA = B \(3x3 and 3x1\)$"):
        solver(a, ag.tensor(np.ones(b_shape)), left=False)


def test_right_solve_ex_of_a_batch_of_rows():
    a, b = well_conditioned(2), RNG.normal(size=(2, 2, 3))  # B's batch of 2 rows, not a batch of vectors
    x, info = ag.linalg.solve_ex(ag.tensor(a), ag.tensor(b), left=False)
    assert x.shape == (2, 2, 3)
    np.testing.assert_allclose(x.numpy() @ a, b, atol=1e-12)
    np.testing.assert_array_equal(info.numpy(), [0, 0])
    a2 = well_conditioned(2)
    assert gradcheck(lambda p, q: ag.linalg.solve_ex(p, q, left=False)[0], (leaf(a2), leaf(b)), **TOL)
    assert gradgradcheck(lambda p, q: ag.linalg.solve_ex(p, q, left=False)[0], (leaf(a2), leaf(b)), **TOL)


@pytest.mark.parametrize(("dtype", "name"), [(np.int64, "Long"), (np.int32, "Int"), (np.bool_, "Bool")])
def test_vecdot_wants_floating_input(dtype, name):
    x = ag.tensor(np.ones(3, dtype=dtype))
    with pytest.raises(RuntimeError, match=rf"^linalg\.vecdot: Expected a floating point or complex tensor as "
                                           rf"input\. Got {name}$"):
        ag.linalg.vecdot(x, x)


def test_vecdot_of_floats_still_works():
    x, y = RNG.normal(size=(2, 1, 3)), RNG.normal(size=(4, 3))
    got = ag.linalg.vecdot(ag.tensor(x), ag.tensor(y))
    np.testing.assert_allclose(got.numpy(), (x * y).sum(-1), atol=1e-12)


def test_vander_refuses_bool():
    for n in (None, 1):  # the dtype is checked before N
        with pytest.raises(RuntimeError, match=r"^linalg\.vander supports floating point, complex, and integer "
                                               r"tensors, but got Bool$"):
            ag.linalg.vander(ag.tensor([True, False]), N=n)
    got = ag.linalg.vander(ag.tensor(np.array([2, 3], dtype=np.uint8)))
    assert got.dtype == ag.int64
    np.testing.assert_array_equal(got.numpy(), [[1, 2], [1, 3]])


def test_vander_of_complex_vectors_keeps_them_complex():
    x = RNG.normal(size=(2, 3)) + 1j * RNG.normal(size=(2, 3))
    got = ag.linalg.vander(ag.tensor(x), N=4)
    assert got.dtype == ag.complex128
    np.testing.assert_allclose(got.numpy(), x[..., None] ** np.arange(4), atol=1e-12)
    z = ag.tensor(x, requires_grad=True)
    assert gradcheck(lambda v: ag.linalg.vander(v, N=4), (z,), **TOL)
    assert gradgradcheck(lambda v: ag.linalg.vander(v, N=4), (z,), **TOL)


@pytest.mark.parametrize(("dtype", "name"), [(np.int64, "Long"), (np.float16, "Half"), (np.bool_, "Bool")])
def test_householder_product_wants_lapack_dtypes(dtype, name):
    a, tau = ag.tensor(np.ones((3, 2), dtype=dtype)), ag.tensor(np.ones(2, dtype=dtype))
    with pytest.raises(NotImplementedError, match=rf"^\"orgqr_cpu\" not implemented for '{name}'$"):
        ag.linalg.householder_product(a, tau)


def test_householder_product_checks_shapes_before_dtype():
    a, tau = ag.tensor(np.ones((3, 2), dtype=np.int64)), ag.tensor(np.ones(3, dtype=np.int64))
    with pytest.raises(RuntimeError, match=r"input\.shape\[-1\] must be greater than or equal to tau\.shape\[-1\]"):
        ag.linalg.householder_product(a, tau)


@pytest.mark.parametrize("ord", [None, 2, "fro"])
@pytest.mark.parametrize(("dim", "shown"), [((0, 1, 2), "[0, 1, 2]"), ((), "[]")])
def test_norm_dim_must_have_one_or_two_dims(ord, dim, shown):
    text = f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {shown}"
    with pytest.raises(RuntimeError, match=f"^{re.escape(text)}$"):
        ag.linalg.norm(ag.ones(3, 3, 3), ord=ord, dim=dim)


def test_norm_with_one_or_two_dims_still_works():
    x = RNG.normal(size=(3, 4, 2))
    np.testing.assert_allclose(ag.linalg.norm(ag.tensor(x), dim=(0, 1)).numpy(),
                               np.sqrt((x ** 2).sum((0, 1))), atol=1e-12)
    np.testing.assert_allclose(ag.linalg.norm(ag.tensor(x), ord=1, dim=[2]).numpy(), np.abs(x).sum(2), atol=1e-12)


@pytest.mark.gpu
def test_fixed_checks_on_cuda(cupy):
    cuda = ag.device("cuda:0")
    with pytest.raises(ag.linalg.LinAlgError, match=r"\(Batch element 1\)"):
        ag.linalg.solve(ag.tensor(np.stack([np.eye(2), SINGULAR])).to(cuda), ag.ones(2, 2).double().to(cuda))
    a, b = well_conditioned(2), RNG.normal(size=(2, 2, 3))
    results = []
    for device in ("cpu", cuda):
        p, q = ag.tensor(a).to(device).requires_grad_(), ag.tensor(b).to(device).requires_grad_()
        x = ag.linalg.solve_ex(p, q, left=False)[0]
        x.sum().backward()
        results.append([t.detach().cpu().numpy() for t in (x, p.grad, q.grad)])
    for cpu, gpu in zip(*results):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-10)
    with pytest.raises(RuntimeError, match="linalg.vecdot"):
        ag.linalg.vecdot(ag.ones(3, dtype=ag.int64).to(cuda), ag.ones(3, dtype=ag.int64).to(cuda))
