"""Complex linear algebra: solve, slogdet, cholesky, qr, svd, eigh, pinv, matrix_exp, solve_triangular, the LU ops
and the general eig / eigvals, with PyTorch's conjugate-Wirtinger gradients checked by the complex gradcheck in
complex128 on well-conditioned inputs, forward values checked against defining identities, and PyTorch's checks that
a loss does not depend on the phases of singular vectors and eigenvectors."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(5)
LA = ag.linalg


def _c(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _t(values, device="cpu"):
    return ag.tensor(values, requires_grad=True, device=device)


def _np(t):
    return t.detach().cpu().numpy()


def _well_conditioned(n=3):
    return _c(n, n) + 3 * np.eye(n)


def _hermitian(x):
    """A Hermitian positive-definite matrix made of x, so the functions below see only such matrices."""
    return x @ x.mH + 3 * ag.eye(x.shape[-1], dtype=x.dtype, device=x.device)


def _both_checks(fn, *inputs, second=True):
    assert gradcheck(fn, inputs)
    if second:
        assert gradgradcheck(fn, inputs)


def test_mH_and_H_are_conjugate_transposes():
    z = _c(2, 3)
    np.testing.assert_array_equal(_np(ag.tensor(z).mH), z.conj().T)
    np.testing.assert_array_equal(_np(ag.tensor(z).H), z.conj().T)
    assert gradcheck(lambda a: a.mH @ a, (_t(z),))


def test_solve_and_its_gradients():
    A, B, b = _t(_well_conditioned()), _t(_c(3, 2)), _t(_c(3))
    X = LA.solve(A, B)
    np.testing.assert_allclose(_np(A) @ _np(X), _np(B), atol=1e-12)
    _both_checks(LA.solve, A, B)
    _both_checks(LA.solve, A, b)
    _both_checks(lambda a, c: LA.solve(a, c, left=False), A, _t(_c(2, 3)))


def test_slogdet_has_a_complex_sign_and_a_real_logabsdet():
    A = _t(_well_conditioned())
    sign, logabsdet = LA.slogdet(A)
    assert sign.dtype == ag.complex128 and logabsdet.dtype == ag.float64
    det = np.prod(np.linalg.eigvals(_np(A)))  # the product of the eigenvalues, not an LU
    np.testing.assert_allclose(_np(sign) * np.exp(_np(logabsdet)), det, rtol=1e-12)
    _both_checks(lambda a: tuple(LA.slogdet(a)), A)
    _both_checks(lambda a: LA.slogdet(a).sign, A)  # the sign alone turns with det's phase
    _both_checks(lambda a: LA.slogdet(a).logabsdet, A)


def test_cholesky_of_hermitian_matrices():
    X = _t(_c(3, 3))
    L = LA.cholesky(_hermitian(X))
    lower = _np(L)
    np.testing.assert_allclose(lower @ lower.conj().T, _np(_hermitian(X)), atol=1e-12)
    assert np.allclose(np.triu(lower, 1), 0) and np.all(np.diag(lower).real > 0)
    np.testing.assert_allclose(_np(LA.cholesky(_hermitian(X), upper=True)), lower.conj().T)
    _both_checks(lambda x: LA.cholesky(_hermitian(x)), X)
    _both_checks(lambda x: LA.cholesky(_hermitian(x), upper=True), X)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_qr(shape):
    A = _t(_c(*shape))
    Q, R = LA.qr(A)
    q, r = _np(Q), _np(R)
    np.testing.assert_allclose(q @ r, _np(A), atol=1e-12)
    np.testing.assert_allclose(q.conj().T @ q, np.eye(q.shape[-1]), atol=1e-12)
    assert np.allclose(np.tril(r, -1), 0)
    _both_checks(lambda a: tuple(LA.qr(a)), A)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_svd_of_phase_invariant_losses(shape):
    A = _t(_c(*shape))
    U, S, Vh = LA.svd(A, full_matrices=False)
    np.testing.assert_allclose((_np(U) * _np(S)) @ _np(Vh), _np(A), atol=1e-12)
    assert S.dtype == ag.float64
    _both_checks(lambda a: LA.svd(a, full_matrices=False).S, A)
    _both_checks(LA.svdvals, A)
    for loss in (lambda r: r.U @ r.Vh, lambda r: r.U.abs(), lambda r: r.Vh.abs(),
                 lambda r: (r.U * r.S.unsqueeze(-2)) @ r.Vh):
        assert gradcheck(lambda a, loss=loss: loss(LA.svd(a, full_matrices=False)), (A,))


def test_svd_refuses_a_loss_that_depends_on_the_phases():
    A = _t(_c(3, 3))
    with pytest.raises(RuntimeError, match=r"^svd_backward: The singular vectors in the complex case are specified up "
                                           r"to multiplication by e\^\{i phi\}\. The specified loss function depends "
                                           r"on this phase term, making it ill-defined\."):
        LA.svd(A).U.real.sum().backward()
    with pytest.raises(RuntimeError, match="svd_backward: The singular vectors"):
        LA.svd(A).Vh.imag.sum().backward()


def test_eigh_of_hermitian_matrices():
    X = _t(_c(3, 3))
    values, vectors = LA.eigh(_hermitian(X))
    assert values.dtype == ag.float64
    v = _np(vectors)
    np.testing.assert_allclose(_np(_hermitian(X)) @ v, v * _np(values), atol=1e-12)
    _both_checks(lambda x: LA.eigh(_hermitian(x)).eigenvalues, X)
    _both_checks(lambda x: LA.eigvalsh(_hermitian(x)), X)
    assert gradcheck(lambda x: LA.eigh(_hermitian(x)).eigenvectors.abs(), (X,))
    with pytest.raises(RuntimeError, match=r"^linalg_eigh_backward: The eigenvectors in the complex case are "
                                           r"specified up to multiplication by e\^\{i phi\}"):
        LA.eigh(_hermitian(X)).eigenvectors.real.sum().backward()


@pytest.mark.parametrize("hermitian", [False, True])
def test_pinv(hermitian):
    fn = (lambda x: LA.pinv(_hermitian(x), hermitian=True)) if hermitian else LA.pinv
    X = _t(_c(3, 3))
    a, p = _np(_hermitian(X) if hermitian else X), _np(fn(X))
    np.testing.assert_allclose(a @ p @ a, a, atol=1e-10)  # the Moore-Penrose conditions
    np.testing.assert_allclose(p @ a @ p, p, atol=1e-10)
    np.testing.assert_allclose((a @ p).conj().T, a @ p, atol=1e-10)
    np.testing.assert_allclose((p @ a).conj().T, p @ a, atol=1e-10)
    _both_checks(fn, X)
    _both_checks(LA.pinv, _t(_c(4, 2)))


def test_matrix_exp_against_its_series():
    A = _t(0.5 * _c(3, 3))
    a, series, term = _np(A), np.eye(3, dtype=complex), np.eye(3, dtype=complex)
    for k in range(1, 40):
        term = term @ a / k
        series = series + term
    np.testing.assert_allclose(_np(LA.matrix_exp(A)), series, atol=1e-12)
    _both_checks(LA.matrix_exp, A)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
def test_solve_triangular(upper, left):
    a = (np.triu if upper else np.tril)(_c(3, 3)) + 3 * np.eye(3)
    A, B = _t(a), _t(_c(3, 2) if left else _c(2, 3))
    X = _np(LA.solve_triangular(A, B, upper=upper, left=left))
    np.testing.assert_allclose(a @ X if left else X @ a, _np(B), atol=1e-12)
    _both_checks(lambda m, b: LA.solve_triangular(m, b, upper=upper, left=left), A, B)


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_lu_factor_and_lu(shape):
    A = _t(_c(*shape) + 2 * np.eye(*shape))
    P, L, U = LA.lu(A)
    np.testing.assert_allclose(_np(P) @ _np(L) @ _np(U), _np(A), atol=1e-12)
    _both_checks(lambda a: LA.lu_factor(a).LU, A)
    _both_checks(lambda a: LA.lu(a)[1:], A)


def test_lu_pivots_follow_lapacks_complex_magnitude():
    # |0.8+0.8j| < 1.5 but |Re| + |Im| = 1.6 > 1.5: LAPACK (and PyTorch) keep the first row as the pivot
    pivots = LA.lu_factor(ag.tensor(np.array([[0.8 + 0.8j, 1], [1.5, 1]]))).pivots
    assert pivots.tolist() == [1, 2]


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve(left, adjoint):
    A, B = _t(_well_conditioned()), _t(_c(3, 2) if left else _c(2, 3))

    def solve(a, b):
        return LA.lu_solve(*LA.lu_factor(a), b, left=left, adjoint=adjoint)

    a = _np(A).conj().T if adjoint else _np(A)
    X = _np(solve(A, B))
    np.testing.assert_allclose(a @ X if left else X @ a, _np(B), atol=1e-12)
    _both_checks(solve, A, B)


@pytest.mark.parametrize("dtype", [np.complex128, np.float64])
def test_eig_is_complex_with_pytorchs_gradient(dtype):
    values = _c(3, 3) if dtype == np.complex128 else RNG.standard_normal((3, 3))
    A = _t(values.astype(dtype))
    L, V = LA.eig(A)
    assert L.dtype == ag.complex128 and V.dtype == ag.complex128
    v = _np(V)
    np.testing.assert_allclose(_np(A) @ v, v * _np(L), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(v, axis=0), 1, rtol=1e-12)
    np.testing.assert_allclose(np.sort_complex(_np(LA.eigvals(A.detach()))), np.sort_complex(_np(L)), atol=1e-12)
    _both_checks(lambda a: LA.eig(a).eigenvalues, A)
    _both_checks(LA.eigvals, A)
    assert gradcheck(lambda a: LA.eig(a).eigenvectors.abs(), (A,))
    assert gradcheck(lambda a: (lambda r: (r.eigenvectors * r.eigenvalues.unsqueeze(-2))
                                @ LA.inv(r.eigenvectors))(LA.eig(a)), (A,))
    LA.eigvals(A).real.sum().backward()
    assert A.grad.dtype == A.dtype  # a real matrix gets the real part, as PyTorch's handle_r_to_c
    with pytest.raises(RuntimeError, match=r"^linalg_eig_backward: The eigenvectors in the complex case are specified "
                                           r"up to multiplication by e\^\{i phi\}\. The specified loss function "
                                           r"depends on this quantity, so it is ill-defined\."):
        LA.eig(A).eigenvectors.real.sum().backward()


def test_eig_errors_are_pytorchs():
    with pytest.raises(RuntimeError, match="^linalg.eig: A must be batches of square matrices, but they are 2 by 3 "
                                           "matrices$"):
        LA.eig(ag.zeros(2, 3))
    with pytest.raises(RuntimeError, match="^torch.linalg.eig: input tensor should not contain infs or NaNs.$"):
        LA.eig(ag.tensor([[float("nan"), 1.0], [0.0, 1.0]]))
    with pytest.raises(RuntimeError, match="^Unknown Complex ScalarType for Long$"):
        LA.eig(ag.ones(2, 2, dtype=ag.int64))
    assert LA.eig(ag.eye(2, dtype=ag.float32)).eigenvalues.dtype == ag.complex64


def test_the_ex_forms_of_inv_and_solve():
    A, B = _t(_well_conditioned()), _t(_c(3, 2))
    singular = ag.tensor(np.array([[1, 1j], [1j, -1]]))
    assert LA.inv_ex(singular).info.item() == 2 and LA.solve_ex(singular, B.detach()[:2]).info.item() == 2
    np.testing.assert_allclose(_np(LA.inv_ex(A).inverse) @ _np(A), np.eye(3), atol=1e-12)
    _both_checks(lambda a, b: LA.solve_ex(a, b).result, A, B)
    _both_checks(lambda a: LA.inv_ex(a).inverse, A)


@pytest.mark.gpu
def test_on_cuda_complex_linalg_matches_the_cpu(cupy):
    a0, b0, x0 = _well_conditioned(), _c(3, 2), _c(3, 3)
    results = []
    for device in ("cpu", "cuda"):
        A, B, X = _t(a0, device), _t(b0, device), _t(x0, device)
        outs = [LA.solve(A, B), LA.slogdet(A).sign, LA.cholesky(_hermitian(X)), LA.qr(A).R, LA.svdvals(A),
                LA.eigvalsh(_hermitian(X)), LA.pinv(A), LA.matrix_exp(0.3 * A),
                LA.solve_triangular(A.triu(), B, upper=True), LA.lu_solve(*LA.lu_factor(A), B),
                LA.eigvals(A)]
        sum(o.abs().sum() for o in outs).backward()
        assert A.grad.device == A.device
        results.append([_np(A.grad), _np(B.grad), _np(X.grad)])
    for cpu_value, cuda_value in zip(*results):
        np.testing.assert_allclose(cuda_value, cpu_value, rtol=1e-9)
    assert gradcheck(lambda a: LA.eig(a).eigenvalues, (_t(a0, "cuda"),))
