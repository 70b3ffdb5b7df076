"""The top-level linear algebra names from before torch.linalg (qr, svd, pinverse, cholesky, lu, lu_solve, ger,
adjoint, nuclear_norm, frobenius_norm, geqrf, orgqr, ormqr) and the randomized svd_lowrank / pca_lowrank: factors
checked by their defining identities and against a Householder QR written out here, gradients against finite
differences, PyTorch's deprecation warnings and the errors of the names it removed."""

from __future__ import annotations

import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(5)


def t(x: np.ndarray, **kw) -> ag.Tensor:
    return ag.tensor(x, dtype=ag.float64, **kw)


def householder_qr(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK's geqr2 on one matrix, column by column: R on and above the diagonal, the reflectors' tails below it
    (their first entry an implicit 1), and the scales tau."""
    a = a.astype(np.float64).copy()
    m, n = a.shape
    tau = np.zeros(min(m, n))
    for j in range(min(m, n)):
        alpha, tail = a[j, j], a[j + 1 :, j]
        norm = np.hypot(alpha, np.linalg.norm(tail))
        if np.linalg.norm(tail) == 0:
            continue
        beta = -np.copysign(norm, alpha)
        tau[j] = (beta - alpha) / beta
        v = np.concatenate([[1.0], tail / (alpha - beta)])
        a[j:, j + 1 :] -= tau[j] * np.outer(v, v @ a[j:, j + 1 :])
        a[j, j], a[j + 1 :, j] = beta, v[1:]
    return a, tau


def full_q(packed: np.ndarray, tau: np.ndarray) -> np.ndarray:
    m = packed.shape[0]
    q = np.eye(m)
    for j, scale in enumerate(tau):
        v = np.concatenate([np.zeros(j), [1.0], packed[j + 1 :, j]])
        q = q @ (np.eye(m) - scale * np.outer(v, v))
    return q


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_geqrf_gives_lapacks_reflectors_and_orgqr_ormqr_apply_them(shape: tuple) -> None:
    a = RNG.standard_normal(shape)
    packed, tau = ag.geqrf(t(a))
    expected_packed, expected_tau = householder_qr(a)
    np.testing.assert_allclose(packed.numpy(), expected_packed, atol=1e-12)
    np.testing.assert_allclose(tau.numpy(), expected_tau, atol=1e-12)
    q = full_q(expected_packed, expected_tau)
    if shape[0] >= shape[1]:
        np.testing.assert_allclose(ag.orgqr(packed, tau).numpy(), q[:, : shape[1]], atol=1e-12)
    c = RNG.standard_normal((shape[0], 2))
    np.testing.assert_allclose(ag.ormqr(packed, tau, t(c)).numpy(), q @ c, atol=1e-12)
    np.testing.assert_allclose(packed.ormqr(tau, t(c), transpose=True).numpy(), q.T @ c, atol=1e-12)
    np.testing.assert_allclose(ag.ormqr(packed, tau, t(c.T), left=False).numpy(), c.T @ q, atol=1e-12)


def test_geqrf_is_not_differentiable_as_in_pytorch() -> None:
    packed, _ = ag.geqrf(t(RNG.standard_normal((3, 2)), requires_grad=True))
    assert packed.grad_fn is None and not packed.requires_grad


@pytest.mark.filterwarnings("ignore:torch.qr is deprecated")
@pytest.mark.parametrize(("shape", "some"), [((5, 3), True), ((5, 3), False), ((2, 3, 4), True)])
def test_qr_and_svd_factors_satisfy_their_identities(shape: tuple, some: bool) -> None:
    a = RNG.standard_normal(shape)
    Q, R = ag.qr(t(a), some=some)
    np.testing.assert_allclose((Q @ R).numpy(), a, atol=1e-12)
    assert np.allclose(np.triu(R.numpy()), R.numpy())
    k = min(shape[-2:])
    U, S, V = t(a).svd(some=some)
    assert U.shape[-1] == (k if some else shape[-2]) and V.shape[-1] == (k if some else shape[-1])
    reconstructed = (U[..., :k] * S.unsqueeze(-2)) @ V[..., :k].mT
    np.testing.assert_allclose(reconstructed.numpy(), a, atol=1e-12)
    _, values, _ = ag.svd(t(a), compute_uv=False)
    np.testing.assert_allclose(values.numpy(), S.numpy(), atol=1e-12)


def test_svd_without_uv_gives_zero_factors_of_full_size() -> None:
    U, S, V = ag.svd(t(RNG.standard_normal((4, 2))), compute_uv=False)
    assert U.shape == (4, 4) and V.shape == (2, 2) and not U.numpy().any() and not V.numpy().any()


@pytest.mark.filterwarnings("ignore:torch.(lu|lu_solve|cholesky) is deprecated")
def test_lu_lu_solve_cholesky_and_pinverse_solve_their_problems() -> None:
    a = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = RNG.standard_normal((2, 3, 2))
    LU, pivots = ag.lu(t(a))
    x = ag.lu_solve(t(b), LU, pivots)
    np.testing.assert_allclose(a @ x.numpy(), b, atol=1e-12)
    LU, pivots, info = t(a).lu(get_infos=True)
    assert info.dtype == ag.int32 and not info.numpy().any() and pivots.dtype == ag.int32
    singular = ag.lu(t(np.zeros((3, 3))), get_infos=True)  # no error: the info reports it
    assert singular.info.item() == 1
    spd = a @ np.swapaxes(a, -1, -2)
    lower = ag.cholesky(t(spd))
    np.testing.assert_allclose((lower @ lower.mT).numpy(), spd, atol=1e-10)
    upper = t(spd).cholesky(upper=True)
    np.testing.assert_allclose((upper.mT @ upper).numpy(), spd, atol=1e-10)
    tall = RNG.standard_normal((5, 3))
    p = ag.pinverse(t(tall)).numpy()
    np.testing.assert_allclose(p @ tall, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(tall @ p @ tall, tall, atol=1e-12)


def test_ger_adjoint_and_the_norms() -> None:
    u, v = RNG.standard_normal(3), RNG.standard_normal(4)
    np.testing.assert_allclose(ag.ger(t(u), t(v)).numpy(), u[:, None] * v[None, :])
    a = RNG.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(ag.adjoint(t(a)).numpy(), np.swapaxes(a, -1, -2))
    np.testing.assert_array_equal(t(a).adjoint().numpy(), np.swapaxes(a, -1, -2))
    singular_values = [np.linalg.svd(m, compute_uv=False) for m in a]
    np.testing.assert_allclose(ag.nuclear_norm(t(a[0])).item(), singular_values[0].sum())
    np.testing.assert_allclose(ag.nuclear_norm(t(a), (1, 2), keepdim=True).numpy().ravel(),
                               [s.sum() for s in singular_values])
    np.testing.assert_allclose(ag.frobenius_norm(t(a), (1, 2)).numpy(), np.sqrt((a**2).sum((1, 2))))
    np.testing.assert_allclose(ag.frobenius_norm(t(a), 0).numpy(), np.sqrt((a**2).sum(0)))


def test_svd_lowrank_and_pca_lowrank_recover_a_low_rank_matrix() -> None:
    a = RNG.standard_normal((9, 3)) @ RNG.standard_normal((3, 7))
    for A in (a, a.T):
        U, S, V = ag.svd_lowrank(t(A), q=4)
        np.testing.assert_allclose(((U * S) @ V.mT).numpy(), A, atol=1e-10)
        np.testing.assert_allclose(S.numpy()[:3], np.linalg.svd(A, compute_uv=False)[:3], rtol=1e-10)
    shift = RNG.standard_normal(a.shape)
    for A, M in ((a, shift), (a.T, shift.T)):  # A + M - M: the low-rank part, through the M argument
        U, S, V = ag.svd_lowrank(t(A + M), q=3, M=t(M))
        np.testing.assert_allclose(((U * S) @ V.mT).numpy(), A, atol=1e-10)
    centered = a - a.mean(0)
    U, S, V = ag.pca_lowrank(t(a), q=3)
    np.testing.assert_allclose(((U * S) @ V.mT).numpy(), centered, atol=1e-10)
    ag.manual_seed(3)
    first = ag.svd_lowrank(t(a), q=2, niter=0)[1].numpy()
    ag.manual_seed(3)
    np.testing.assert_array_equal(ag.svd_lowrank(t(a), q=2, niter=0)[1].numpy(), first)


@pytest.mark.filterwarnings("ignore:torch.(qr|lu|lu_solve|cholesky) is deprecated")
@pytest.mark.parametrize("name", ["qr", "svd", "pinverse", "cholesky", "lu_solve", "ger", "adjoint", "nuclear_norm",
                                  "frobenius_norm", "orgqr", "ormqr", "svd_lowrank"])
def test_gradients_match_finite_differences(name: str) -> None:
    a = RNG.standard_normal((4, 3))
    square = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
    packed, tau = householder_qr(RNG.standard_normal((4, 3)))
    functions = {
        "qr": (lambda x: ag.qr(x)[0].sum() + ag.qr(x)[1].sum(), a),
        "svd": (lambda x: (lambda u, s, v: (u @ u.mT).sum() + s.sum() + (v @ v.mT * 2).sum())(*ag.svd(x)), a),
        "pinverse": (ag.pinverse, a),
        "cholesky": (lambda x: ag.cholesky(x @ x.mT + ag.eye(3, dtype=ag.float64)), square),
        "lu_solve": (lambda x: ag.lu_solve(x[:, :2], *ag.lu(x)), square),
        "ger": (lambda x: ag.ger(x[0], x[1]), a),
        "adjoint": (ag.adjoint, a),
        "nuclear_norm": (ag.nuclear_norm, a),
        "frobenius_norm": (lambda x: ag.frobenius_norm(x, (0, 1)), a),
        "orgqr": (lambda x: ag.orgqr(x, t(tau)), packed),
        "ormqr": (lambda x: ag.ormqr(x, t(tau), x[:, :2] + 1), packed),
        "svd_lowrank": (lambda x: (lambda u, s, v: ((u * s) @ v.mT).sum() + s.sum())(
            *(ag.manual_seed(0) and ag.svd_lowrank(x, q=3))), a),
    }
    fn, value = functions[name]
    x = t(value, requires_grad=True)
    assert gradcheck(fn, (x,))
    if name in ("qr", "pinverse", "ormqr", "lu_solve"):
        assert gradgradcheck(fn, (x,))


def test_deprecated_names_warn_as_pytorch() -> None:
    a = t(RNG.standard_normal((3, 3)) + 3 * np.eye(3))
    for call, text in ((lambda: ag.qr(a), "torch.qr is deprecated in favor of torch.linalg.qr"),
                       (lambda: ag.lu(a), "torch.lu is deprecated in favor of torch.linalg.lu_factor"),
                       (lambda: ag.cholesky(a @ a.mT), "torch.cholesky is deprecated in favor of"),
                       (lambda: ag.lu_solve(a, *ag.linalg.lu_factor(a)), "torch.lu_solve is deprecated")):
        with pytest.warns(UserWarning, match=re.escape(text)):
            call()


@pytest.mark.parametrize(("name", "start"), [
    ("solve", "`torch.solve` is deprecated in favor of `torch.linalg.solve`"),
    ("lstsq", "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`"),
    ("eig", "`torch.linalg.eig` returns complex tensors"),
    ("symeig", "The default behavior has changed"),
    ("matrix_rank", "\nPlease use the `torch.linalg.matrix_rank` function instead."),
])
def test_removed_names_raise_pytorchs_error(name: str, start: str) -> None:
    a = t(np.eye(2))
    with pytest.raises(RuntimeError, match=re.escape("This function was deprecated since version 1.9 and is now "
                                                     "removed. " + start)):
        getattr(ag, name)(a, a)


def test_errors_match_torch() -> None:
    with pytest.raises(RuntimeError, match=re.escape("tensor.adjoint() is only supported on matrices or batches of "
                                                     "matrices. Got 1-D tensor.")):
        ag.adjoint(t(np.ones(3)))
    with pytest.raises(RuntimeError, match="Expected at most 2 dimensions, but got 3 dimensions instead."):
        ag.frobenius_norm(t(np.ones((2, 2, 2))), (0, 1, 2))
    with pytest.raises(ValueError, match=re.escape("q(=7) must be non-negative integer and not greater than "
                                                   "min(m, n)=4")):
        ag.pca_lowrank(t(np.ones((5, 4))), q=7)


@pytest.mark.gpu
def test_on_cuda_values_and_gradients_are_the_cpus(cupy) -> None:
    a = RNG.standard_normal((4, 3))
    packed, tau = householder_qr(a)

    def f(x: ag.Tensor, p: ag.Tensor, s: ag.Tensor) -> ag.Tensor:
        u, values, v = ag.svd(x)
        return (ag.pinverse(x).sum() + values.sum() + (u @ v.mT).sum() + ag.nuclear_norm(x)
                + ag.ormqr(p, s, x[:, :2]).sum() + ag.frobenius_norm(x, (0, 1)))

    results = []
    for device in ("cpu", "cuda:0"):
        leaves = [ag.tensor(v, device=device, requires_grad=True) for v in (a, packed)]
        scales = ag.tensor(tau, device=device)
        out = f(leaves[0], leaves[1], scales)
        grads = ag.autograd.grad(out, leaves)
        found = ag.geqrf(ag.tensor(a, device=device))
        results.append([x.detach().cpu().numpy() for x in (out, *grads, *found)])
    for cpu, cuda in zip(*results):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-10, atol=1e-12)
