"""`actorgrad.nn.utils.parametrizations`: weight normalization, spectral normalization and orthogonal weights as
parametrizations (see parametrize.py), as torch.nn.utils.parametrizations."""

from __future__ import annotations

import numpy as np

from actorgrad import linalg
from actorgrad.creation import eye, zeros_like
from actorgrad.grad_mode import no_grad
from actorgrad.nn import functional as F
from actorgrad.nn.layers import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from actorgrad.nn.module import Module
from actorgrad.nn.utils import parametrize
from actorgrad.ops.contraction import mv, vdot
from actorgrad.ops.joining import cat
from actorgrad.ops.legacy_linalg import geqrf
from actorgrad.random_tensors import randn
from actorgrad.tensor import Tensor

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _check_dim(dim: int, ndim: int, separator: str = "") -> int:
    """`dim` counted from the front, with PyTorch's error for one out of range (whose weight_norm, in C++, writes
    a comma before "but" where its spectral_norm, in Python, does not)."""
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}]{separator} but got {dim})"
        )
    return dim % ndim


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of each slice of `v` along `dim`, kept broadcastable to `v`; over all of `v` for dim -1, as
    PyTorch's norm_except_dim."""
    if dim == -1:
        return v.norm()
    dim = _check_dim(dim, v.ndim, ",")
    others = tuple(d for d in range(v.ndim) if d != dim)
    # A 1-D `v` has no other dims: each element is its own slice (an empty dim tuple would reduce over all).
    return v.norm(2, dim=others, keepdim=True) if others else v.abs()


class _WeightNorm(Module):
    """weight = g * v / ||v||, the norm taken over every dim but `dim` (over all, for dim None): `g` the
    magnitude, `v` the direction."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split `module.<name>` into a magnitude `original0` (g) and a direction `original1` (v), learnt apart
    (https://arxiv.org/abs/1602.07868); `dim=None` takes one norm over the whole tensor."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """weight / sigma(weight), sigma the largest singular value of the weight flattened to a matrix with `dim`
    first, estimated by power iteration on the buffers `_u` and `_v` (advanced on each access in training only).
    A 1-D weight is divided by its norm."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        self.dim = _check_dim(dim, ndim)
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # Start from good estimates of the singular vectors rather than random ones.
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """Advance the estimates `_u`, `_v` of the first singular vectors in place (shared with the state dict)."""
        with no_grad():
            for _ in range(n_power_iterations):
                self._u = F.normalize(mv(weight_mat, self._v), dim=0, eps=self.eps, out=self._u)
                self._v = F.normalize(mv(weight_mat.T, self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # Clones, so a graph through an earlier forward is not spoilt by the next one's in-place update.
        u, v = self._u.clone(), self._v.clone()
        sigma = vdot(u, mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Divide `module.<name>` by its spectral norm (https://arxiv.org/abs/1802.05957), which bounds the layer's
    Lipschitz constant; `dim` is the output dim (1 for ConvTranspose layers, 0 otherwise, by default)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _has_orthonormal_columns(Q: Tensor) -> bool:
    n, k = Q.shape[-2:]
    return bool((Q.mH @ Q).allclose(eye(k, dtype=Q.dtype, device=Q.device), atol=10.0 * n * np.finfo(Q.dtype).eps))


def _signed_qr_factor(A: Tensor) -> Tensor:
    """The Q of a tall `A`'s QR decomposition, its columns signed so that R's diagonal is non-negative (a
    unique Q)."""
    X, tau = geqrf(A)
    return linalg.householder_product(X, tau) * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthogonalMap(Module):
    """An orthogonal (unitary) matrix, or one with orthonormal columns (rows, for a wide one), from an
    unconstrained one: the exponential or the Cayley transform of the skew-symmetric matrix its lower triangle
    makes, or the product of the Householder reflections below its diagonal. With `use_trivialization`, the
    result multiplies `base`, an orthogonal matrix that assignments set, so assigning costs no inverse map."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2:]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map == "householder":
            A = X.tril(diagonal=-1)  # the reflectors below a unit diagonal
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            # X's diagonal, 1s and -1s, signs the columns; it takes no gradient
            Q = linalg.householder_product(A, tau) * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            X = X.tril()  # n k - k (k - 1) / 2 parameters
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH  # skew-symmetric (skew-Hermitian)
            if self.orthogonal_map == "matrix_exp":
                Q = linalg.matrix_exp(A)
            else:  # the Cayley retraction (I + A/2)(I - A/2)^-1
                identity = eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(identity - 0.5 * A, identity + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        with no_grad():
            return self._inverse(Q)

    def _inverse(self, Q: Tensor) -> Tensor:
        """Without trivialization: Householder reflectors whose product is Q's QR factor (the other maps have no
        known inverse). With it: `base` becomes Q (completed to a square orthogonal matrix, made orthogonal if
        it is not), and the parameter is what the map sends to the identity."""
        original = Q
        n, k = Q.shape[-2:]
        transposed = n < k
        if transposed:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map != "householder":
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            A, tau = geqrf(Q)
            # R's diagonal signs Q's columns: kept on X's diagonal; LAPACK skips a reflection with tau exactly 0
            signs = A.diagonal(dim1=-2, dim2=-1).sign()
            signs = signs.where(tau != 0.0, -signs)
            A = A.clone()
            A.diagonal(dim1=-2, dim2=-1).copy_(signs)
            return A.mT if transposed else A
        if n == k:
            Q = Q.clone() if _has_orthonormal_columns(Q) else _signed_qr_factor(Q)
        else:
            Q = _signed_qr_factor(cat([Q, randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)], dim=-1))
        self.base = Q
        minus_identity = zeros_like(original)  # the map sends it to the identity
        minus_identity.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return minus_identity


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Keep `module.<name>` orthogonal (unitary; for a non-square weight, with orthonormal columns or rows), as
    a map of an unconstrained parameter: 'matrix_exp' (default for square or complex weights), 'cayley', or
    'householder' (the default otherwise). `use_trivialization` (default) lets the parameter be assigned freely
    (the dynamic trivialization of https://arxiv.org/abs/1909.09501)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in ORTHOGONAL_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    parametrize.register_parametrization(
        module, name, _OrthogonalMap(weight, orthogonal_map, use_trivialization=use_trivialization), unsafe=True
    )
    return module
