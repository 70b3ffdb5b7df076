"""Matrix products, `actorgrad.linalg` and `actorgrad.fft` where a generated differential review against PyTorch
found differences: `out=` on the public names (dtype rules, resizing, no autograd), the residuals of lstsq carrying
their gradient, solve_ex's gradient for a batch holding a singular matrix, einsum's promotion of operands it
multiplies, matrix_rank's square check with `hermitian`, addr's boolean scalars, and the errors of boolean and
float16 input. Values against numpy formulas, gradients against finite differences (float64)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck

RNG = np.random.default_rng(5)
TOL = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}


def square(n: int = 3, batch: tuple = ()) -> np.ndarray:
    """A well-conditioned matrix (or batch of them)."""
    return RNG.normal(size=batch + (n, n)) + 2 * n * np.eye(n)


def det3(a: np.ndarray) -> float:
    return a[0] @ np.cross(a[1], a[2])


def inv3(a: np.ndarray) -> np.ndarray:
    """A 3x3 inverse from its cofactors (cross products of its rows)."""
    return np.stack([np.cross(a[1], a[2]), np.cross(a[2], a[0]), np.cross(a[0], a[1])], axis=1) / det3(a)


# -- out= -----------------------------------------------------------------------------------------------------------
OUT_CASES = [
    ("matmul", lambda a, b, out: ag.matmul(a, b, out=out), lambda a, b: a @ b),
    ("mm", lambda a, b, out: ag.mm(a, b, out=out), lambda a, b: a @ b),
    ("bmm", lambda a, b, out: ag.bmm(a[None], b[None], out=out), lambda a, b: (a @ b)[None]),
    ("mv", lambda a, b, out: ag.mv(a, b[0], out=out), lambda a, b: a @ b[0]),
    ("addmm", lambda a, b, out: ag.addmm(a, a, b, beta=2, out=out), lambda a, b: 2 * a + a @ b),
    ("outer", lambda a, b, out: ag.outer(a[0], b[1], out=out), lambda a, b: np.outer(a[0], b[1])),
    ("kron", lambda a, b, out: ag.kron(a, b, out=out), np.kron),
    ("tensordot", lambda a, b, out: ag.tensordot(a, b, 1, out=out), lambda a, b: a @ b),
    ("tril", lambda a, b, out: ag.tril(a, -1, out=out), lambda a, b: np.tril(a, -1)),
    ("inverse", lambda a, b, out: ag.inverse(a, out=out), lambda a, b: inv3(a)),
    ("linalg.inv", lambda a, b, out: ag.linalg.inv(a, out=out), lambda a, b: inv3(a)),
    ("linalg.solve", lambda a, b, out: ag.linalg.solve(a, b, out=out), lambda a, b: inv3(a) @ b),
    ("linalg.det", lambda a, b, out: ag.linalg.det(a, out=out), lambda a, b: det3(a)),
    ("linalg.vector_norm", lambda a, b, out: ag.linalg.vector_norm(a, dim=0, out=out),
     lambda a, b: np.sqrt((a * a).sum(0))),
    ("linalg.multi_dot", lambda a, b, out: ag.linalg.multi_dot([a, b, a], out=out), lambda a, b: a @ b @ a),
    ("linalg.matrix_power", lambda a, b, out: ag.linalg.matrix_power(a, -2, out=out),
     lambda a, b: inv3(a @ a)),
]


@pytest.mark.parametrize("name,call,want", OUT_CASES, ids=[c[0] for c in OUT_CASES])
def test_out_receives_the_result_resized(name, call, want):
    a, b = square(), RNG.normal(size=(3, 3))
    out = ag.zeros(0, dtype=ag.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty `out` is resized without a warning
        got = call(ag.tensor(a), ag.tensor(b), out)
    assert got is out
    np.testing.assert_allclose(out.numpy(), want(a, b), rtol=1e-10, atol=1e-12)


def test_out_with_elements_is_resized_with_pytorchs_warning():
    a = square()
    out = ag.zeros(5, 5, dtype=ag.float64)
    with pytest.warns(UserWarning, match=r"resized since it had shape \[5, 5\]"):
        ag.linalg.inv(ag.tensor(a), out=out)
    np.testing.assert_allclose(out.numpy(), inv3(a), rtol=1e-10)


def test_fft_out_takes_a_complex_tensor_and_irfft_a_real_one():
    x = RNG.normal(size=8)
    out = ag.empty(0, dtype=ag.complex128)
    ag.fft.fft(ag.tensor(x), out=out)
    k = np.arange(8)
    np.testing.assert_allclose(out.numpy(), np.exp(-2j * np.pi * np.outer(k, k) / 8) @ x, atol=1e-12)
    real = ag.empty(0, dtype=ag.float64)
    ag.fft.irfft(out[:5], out=real)
    np.testing.assert_allclose(real.numpy(), x, atol=1e-12)
    with pytest.raises(RuntimeError, match="fft expects a complex output tensor, but got Double"):
        ag.fft.fft(ag.tensor(x), out=ag.empty(0, dtype=ag.float64))
    with pytest.raises(RuntimeError, match="irfft expects a floating point output tensor, but got ComplexDouble"):
        ag.fft.irfft(out, out=ag.empty(0, dtype=ag.complex128))
    with pytest.raises(RuntimeError, match="fftn expects a complex output tensor"):  # fft2 runs fftn's kernel
        ag.fft.fft2(ag.tensor(x.reshape(2, 4)), out=ag.empty(0, dtype=ag.float64))


@pytest.mark.parametrize("call,message", [
    (lambda a, o: ag.matmul(a, a, out=o), "Expected out tensor to have dtype float, but got double instead"),
    (lambda a, o: ag.linalg.inv(a, out=o), "Expected out tensor to have dtype float, but got double instead"),
    (lambda a, o: ag.dot(a[0], a[0], out=o), "result dtype Double does not match input dtype Float"),
    (lambda a, o: ag.linalg.multi_dot([a, a], out=o), "multi_dot\\(\\): expected out tensor to have dtype float"),
    (lambda a, o: ag.linalg.matrix_norm(a, out=o), "linalg.matrix_norm expected out tensor dtype Float but"),
])
def test_out_of_another_dtype_is_refused_as_pytorch_refuses_it(call, message):
    a = ag.tensor(square().astype(np.float32))
    with pytest.raises(RuntimeError, match=message):
        call(a, ag.empty(0, dtype=ag.float64))


def test_out_may_take_a_wider_dtype_where_pytorch_casts():
    a, b = RNG.normal(size=2).astype(np.float32), RNG.normal(size=3).astype(np.float32)
    out = ag.empty(0, dtype=ag.complex128)
    ag.outer(ag.tensor(a), ag.tensor(b), out=out)
    np.testing.assert_allclose(out.numpy(), np.outer(a, b), rtol=1e-6)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ag.outer(ag.tensor(a), ag.tensor(b), out=ag.empty(0, dtype=ag.int64))
    with pytest.raises(RuntimeError, match="linalg.pinv: Expected result to be safely castable from Float dtype"):
        ag.linalg.pinv(ag.tensor(square().astype(np.float32)), out=ag.empty(0, dtype=ag.int64))
    rank = ag.empty(0, dtype=ag.float64)
    ag.linalg.matrix_rank(ag.tensor(np.ones((3, 3))), out=rank)
    assert rank.item() == 1.0


def test_out_refuses_arguments_that_require_grad():
    a = ag.tensor(square(), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^mm\(\): functions with out=\.\.\. arguments don't support automatic"):
        ag.mm(a, a, out=ag.empty(0, dtype=ag.float64))
    with pytest.raises(RuntimeError, match=r"^linalg_multi_dot\(\): functions with out="):
        ag.linalg.multi_dot([a, a], out=ag.empty(0, dtype=ag.float64))
    with ag.no_grad():
        out = ag.empty(0, dtype=ag.float64)
        ag.mm(a, a, out=out)
    np.testing.assert_allclose(out.numpy(), a.detach().numpy() @ a.detach().numpy(), rtol=1e-12)
    with pytest.raises(TypeError, match=r"matmul\(\): argument 'out' must be Tensor, not list"):
        ag.matmul(a.detach(), a.detach(), out=[])


# -- lstsq residuals ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("driver", ["gelsd", "gelss", "gels"])
def test_lstsq_residuals_carry_their_gradient(driver):
    a, b = RNG.normal(size=(2, 5, 3)), RNG.normal(size=(2, 5, 2))

    def residuals(x, y):
        return ag.linalg.lstsq(x, y, driver=driver).residuals

    got = residuals(ag.tensor(a), ag.tensor(b)).numpy()
    solution = np.linalg.solve(a.mT @ a, a.mT @ b)  # the normal equations (actorgrad's lstsq runs an SVD)
    np.testing.assert_allclose(got, ((a @ solution - b) ** 2).sum(-2), rtol=1e-10)
    assert gradcheck(residuals, [ag.tensor(a, requires_grad=True), ag.tensor(b, requires_grad=True)], **TOL)


def test_lstsq_residuals_of_a_vector_and_of_complex_input():
    a = RNG.normal(size=(4, 2)) + 1j * RNG.normal(size=(4, 2))
    b = RNG.normal(size=4) + 1j * RNG.normal(size=4)
    out = ag.linalg.lstsq(ag.tensor(a, requires_grad=True), ag.tensor(b), driver="gelsd").residuals
    assert out.dtype == ag.float64 and out.shape == (1,) and out.requires_grad
    solution = np.linalg.solve(a.conj().T @ a, a.conj().T @ b)
    np.testing.assert_allclose(out.detach().numpy(), [np.abs(a @ solution - b) ** 2 @ np.ones(4)], rtol=1e-10)
    assert gradcheck(lambda x: ag.linalg.lstsq(x, ag.tensor(b), driver="gelsd").residuals,
                     [ag.tensor(a, requires_grad=True)], **TOL)


def test_solve_ex_of_a_singular_matrix_has_a_gradient_for_the_rest_of_the_batch():
    regular = np.array([[2.0, 1.0], [1.0, 3.0]])
    a = np.stack([regular, [[1.0, 2.0], [2.0, 4.0]]])
    b = np.array([[1.0, 2.0], [3.0, 4.0]])
    A, B = ag.tensor(a, requires_grad=True), ag.tensor(b, requires_grad=True)
    result, info = ag.linalg.solve_ex(A, B)
    assert info.tolist() == [0, 2]
    result.sum().backward()
    inverse = np.array([[3.0, -1.0], [-1.0, 2.0]]) / 5  # regular's inverse
    x = inverse @ b[0]
    b_grad = inverse.T @ np.ones(2)
    np.testing.assert_allclose(B.grad.numpy()[0], b_grad, rtol=1e-12)
    np.testing.assert_allclose(A.grad.numpy()[0], -np.outer(b_grad, x), rtol=1e-12)
    assert not np.isfinite(A.grad.numpy()[1]).any() and not np.isfinite(B.grad.numpy()[1]).any()


# -- einsum of mixed dtypes ----------------------------------------------------------------------------------------
def test_einsum_promotes_operands_it_multiplies_and_refuses_those_it_contracts():
    a, b = RNG.normal(size=2).astype(np.float32), RNG.normal(size=3)
    got = ag.einsum("i,j->ij", ag.tensor(a), ag.tensor(b))
    assert got.dtype == ag.float64
    np.testing.assert_allclose(got.numpy(), a[:, None].astype(np.float64) * b[None, :], rtol=1e-15)
    column = RNG.normal(size=(2, 1)).astype(np.float32)  # j has size 1 here: summed alone, then multiplied
    got = ag.einsum("ij,j", ag.tensor(column), ag.tensor(b + 0j))
    assert got.dtype == ag.complex128
    np.testing.assert_allclose(got.numpy(), column[:, 0] * b.sum(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ag.einsum("ij,jk->ik", ag.tensor(column.T), ag.tensor(np.ones((2, 2))))
    x = ag.tensor(a, requires_grad=True)
    ag.einsum("i,i->i", x, ag.tensor(b[:2])).sum().backward()
    assert x.grad.dtype == ag.float32
    np.testing.assert_allclose(x.grad.numpy(), b[:2], rtol=1e-6)


# -- argument checks ------------------------------------------------------------------------------------------------
def test_matrix_rank_hermitian_refuses_a_non_square_matrix():
    with pytest.raises(RuntimeError, match="linalg.eigh: A must be batches of square matrices, but they are 1 by 2"):
        ag.linalg.matrix_rank(ag.ones(1, 2), hermitian=True)
    assert ag.linalg.matrix_rank(ag.ones(2, 0, 3), hermitian=True).tolist() == [0, 0]  # empty: no check


@pytest.mark.parametrize("call,kernel", [
    (ag.dot, "dot"), (ag.vdot, "dot"), (lambda a, b: ag.cross(a, b, dim=0), "cross"), (ag.linalg.cross, "cross"),
])
def test_boolean_vectors_are_refused_by_the_kernel(call, kernel):
    b = ag.ones(3, dtype=ag.bool)
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'Bool\''):
        call(b, b)


B, V = ag.ones(2, 2, dtype=ag.bool), ag.ones(2, dtype=ag.bool)


@pytest.mark.parametrize("call,kernel", [
    (lambda: ag.addmm(B, B, B), "addmm_impl_cpu_"), (lambda: ag.addbmm(B, B[None], B[None]), "addmm_impl_cpu_"),
    (lambda: ag.addmv(V, B, V), "addmv_impl_cpu"), (lambda: ag.mv(B, V), "addmv_impl_cpu"),
    (lambda: ag.baddbmm(B[None], B[None], B[None]), "baddbmm"),
])
def test_boolean_matrices_are_refused_by_the_kernel(call, kernel):
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'Bool\''):
        call()
    assert ag.addr(B, V, V).tolist() == [[True, True], [True, True]]  # addr's kernel takes booleans


def test_dtype_errors_name_complex_dtypes_as_pytorchs_kernels_do():
    a, c = ag.ones(2, 2), ag.ones(2, 2, dtype=ag.complex128)
    with pytest.raises(RuntimeError, match=r"^expected m1 and m2 to have the same dtype, but got: "
                                           r"c10::complex<double> != float$"):
        ag.mm(c, a)
    with pytest.raises(RuntimeError, match=r"tensor 0 is float and tensor 1 c10::complex<double>$"):
        ag.linalg.multi_dot([a, c])


def test_chain_matmul_checks_dtypes_as_multi_dot():
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"), pytest.raises(
        RuntimeError, match=r"^multi_dot\(\): all tensors must have be the same dtype but tensor 0 is float and "
                            r"tensor 2 bool$"):
        ag.chain_matmul(ag.ones(2, 2), ag.ones(2, 2), ag.ones(2, 2, dtype=ag.bool))


def test_multi_dot_refuses_a_tensor_in_place_of_its_sequence():
    with pytest.raises(TypeError, match=r"^linalg_multi_dot\(\): argument 'tensors' \(position 1\) must be tuple of "
                                        r"Tensors, not Tensor$"):
        ag.linalg.multi_dot(ag.ones(2, 2))


def test_vdot_checks_its_vectors_as_dot():
    with pytest.raises(RuntimeError, match="^dot : expected both vectors to have same dtype, but found Float and"):
        ag.vdot(ag.ones(3), ag.ones(3, dtype=ag.float64))


def test_solve_left_false_refuses_a_vector_b_that_would_fit_as_a_column():
    with pytest.raises(RuntimeError, match=r"Vector broadcasting of the left hand side is not supported for "
                                           r"left=False\. In this case linalg\.solve is equivalent to B / "
                                           r"A\.squeeze\(-1\)"):
        ag.linalg.solve(ag.ones(2, 1, 1), ag.ones(2, 1), left=False)
    with pytest.raises(RuntimeError, match=r"XA = B \(3x3 and 3x1\)"):
        ag.linalg.solve(ag.eye(3), ag.ones(3), left=False)


def test_addr_boolean_scalars_only_for_boolean_results():
    a, v = ag.ones(2, 2), ag.ones(2)
    with pytest.raises(RuntimeError, match="Boolean beta only supported for Boolean results."):
        ag.addr(a, v, v, beta=True)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results."):
        ag.addr(a, v, v, alpha=False)
    m = ag.tensor([True, False])
    got = ag.addr(ag.zeros(2, 2, dtype=ag.bool), m, m, beta=True, alpha=True)
    assert got.tolist() == [[True, False], [False, False]]


@pytest.mark.parametrize("call,kernel", [
    (ag.linalg.det, "lu_cpu"), (lambda a: ag.linalg.solve(a, a), "lu_cpu"), (ag.linalg.cholesky, "cholesky_cpu"),
    (ag.linalg.qr, "geqrf_cpu"), (ag.linalg.svdvals, "linalg_svd_cpu"), (ag.linalg.eigvals, "linalg_eig_out_cpu"),
])
def test_float16_refused_by_the_kernel_as_pytorch_refuses_it(call, kernel):
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'Half\''):
        call(ag.eye(3, dtype=ag.float16))


def test_float16_vander_is_refused():
    with pytest.raises(RuntimeError, match="linalg.vander supports floating point, complex, and integer tensors, but"
                                           " got Half"):
        ag.linalg.vander(ag.ones(3, dtype=ag.float16))


def test_float16_matrix_norms_that_need_singular_values_are_refused_by_the_norm():
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Low precision dtypes not supported. Got Half"):
        ag.linalg.matrix_norm(ag.eye(3, dtype=ag.float16), 2)
    assert ag.linalg.matrix_norm(ag.eye(3, dtype=ag.float16), 1).item() == 1.0


@pytest.mark.gpu
def test_out_and_lstsq_residuals_on_cuda_match_the_cpu(cupy):
    a, b = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2))
    results = []
    for device in ("cpu", ag.device("cuda:0")):
        x, y = ag.tensor(a).to(device).requires_grad_(), ag.tensor(b).to(device)
        residuals = ag.linalg.lstsq(x, y, driver="gelsd").residuals
        residuals.sum().backward()
        out = ag.empty(0, dtype=ag.float64).to(device)
        ag.matmul(x.detach().mT, y, out=out)
        spectrum = ag.empty(0, dtype=ag.complex128).to(device)
        ag.fft.rfft(y, dim=0, out=spectrum)
        results.append([t.detach().cpu().numpy() for t in (residuals, x.grad, out, spectrum)])
        assert out.device == x.device
    for cpu, gpu in zip(*results):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-10, atol=1e-12)
