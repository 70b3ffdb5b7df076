"""torch.svd_lowrank and torch.pca_lowrank: Halko, Martinsson and Tropp's randomized range finder (a Gaussian
sketch from the global generator, so `manual_seed` repeats it, then `niter` power iterations re-orthonormalized by
QR) followed by the SVD of the small projected matrix. Built from matmul, linalg.qr and linalg.svd, so it is
differentiable through them."""

from __future__ import annotations

from typing import Any

from actorgrad.ops.linalg_spectral import qr, svd
from actorgrad.ops.operands import require_tensors
from actorgrad.tensor import Tensor

__all__ = ["pca_lowrank", "svd_lowrank"]


def _sketch(A: Tensor, columns: int) -> Tensor:
    from actorgrad.random_tensors import randn  # random_tensors builds on the ops package

    return randn(A.shape[-1], columns, dtype=A.dtype, device=A.device)


def _range_basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:
    """Orthonormal columns (q of them) that approximately span the range of A - M."""
    def apply(X: Tensor) -> Tensor:
        return A @ X if M is None else A @ X - M @ X

    def apply_transpose(X: Tensor) -> Tensor:
        return A.mT @ X if M is None else A.mT @ X - M.mT @ X

    Q = qr(apply(_sketch(A, q))).Q
    for _ in range(niter):
        Q = qr(apply_transpose(Q)).Q
        Q = qr(apply(Q)).Q
    return Q


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None) -> tuple:
    """(U, S, V) of rank q with A - M ~ U diag(S) V^T; exact when A - M has rank at most q (M broadcast to A)."""
    require_tensors("svd_lowrank", A=A)
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    if M is not None:  # a mean broadcasts to A's shape, as PyTorch's (a row of column means, say)
        M = M.broadcast_to(A.shape)
    m, n = A.shape[-2:]
    if m < n or n > q:  # sketch the transpose, so the small matrix is (…, m, q)
        Q = _range_basis(A.mT, q, niter, None if M is None else M.mT)
        B = A @ Q if M is None else A @ Q - M @ Q
        U, S, Vh = svd(B, full_matrices=False)
        return U, S, Q @ Vh.mT
    Q = _range_basis(A, q, niter, M)
    B = Q.mT @ A if M is None else Q.mT @ A - Q.mT @ M
    U, S, Vh = svd(B, full_matrices=False)
    return Q @ U, S, Vh.mT


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> tuple:
    """svd_lowrank of A with its column means removed (center), q = min(6, m, n) by default."""
    require_tensors("pca_lowrank", A=A)
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter)
    return svd_lowrank(A - A.mean(-2, keepdim=True), q, niter)


METHODS: dict[str, Any] = {}
