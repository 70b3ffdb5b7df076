"""`actorgrad.nn.utils.parametrizations`: weight normalization and spectral normalization as parametrizations
(see parametrize.py), as torch.nn.utils.parametrizations."""

from __future__ import annotations

from actorgrad.grad_mode import no_grad
from actorgrad.nn import functional as F
from actorgrad.nn.layers import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from actorgrad.nn.module import Module
from actorgrad.nn.utils import parametrize
from actorgrad.ops.contraction import mv, vdot
from actorgrad.tensor import Tensor

__all__ = ["spectral_norm", "weight_norm"]


def _check_dim(dim: int, ndim: int) -> int:
    """`dim` counted from the front, with PyTorch's error for one out of range."""
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}] but got {dim})")
    return dim % ndim


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of each slice of `v` along `dim`, kept broadcastable to `v`; over all of `v` for dim -1, as
    PyTorch's norm_except_dim."""
    if dim == -1:
        return v.norm()
    dim = _check_dim(dim, v.ndim)
    return v.norm(2, dim=tuple(d for d in range(v.ndim) if d != dim), keepdim=True)


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
