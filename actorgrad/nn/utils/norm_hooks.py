"""The old, hook-based `nn.utils.weight_norm` and `spectral_norm`, as PyTorch still has them beside the
parametrizations (`parametrizations.weight_norm` / `spectral_norm`, which new code should use).

Each replaces the parameter `name` by the tensors it is computed from (`name_g` and `name_v`; `name_orig` with
buffers `name_u` and `name_v`) and registers a forward pre-hook that recomputes `module.<name>`, a plain
attribute, before every forward. The `remove_` functions put the computed value back as a parameter.
"""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

from actorgrad.grad_mode import no_grad
from actorgrad.nn import functional as F
from actorgrad.nn.layers import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from actorgrad.nn.module import Module
from actorgrad.nn.parameter import Parameter
from actorgrad.nn.utils.parametrizations import _norm_except_dim
from actorgrad.ops.contraction import mv, vdot
from actorgrad.tensor import Tensor

__all__ = ["SpectralNorm", "WeightNorm", "remove_spectral_norm", "remove_weight_norm", "spectral_norm", "weight_norm"]

ModuleT = TypeVar("ModuleT", bound=Module)


class WeightNorm:
    """The pre-hook of `weight_norm`: name = name_g * name_v / ||name_v||, the norm over every dim but `dim`
    (over the whole tensor for dim -1)."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        v = getattr(module, self.name + "_v")
        return v * (getattr(module, self.name + "_g") / _norm_except_dim(v, self.dim))

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: ModuleT, name: str = "weight", dim: int | None = 0) -> ModuleT:
    """Deprecated (use `parametrizations.weight_norm`): learn `module.<name>` as a magnitude `<name>_g` and a
    direction `<name>_v` (https://arxiv.org/abs/1602.07868), recombined before each forward."""
    warnings.warn(
        "`actorgrad.nn.utils.weight_norm` is deprecated in favor of `actorgrad.nn.utils.parametrizations.weight_norm`.",
        FutureWarning, stacklevel=2,
    )
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, WeightNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    fn = WeightNorm(name, dim)
    weight = getattr(module, name)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, fn.dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_weight_norm(module: ModuleT, name: str = "weight") -> ModuleT:
    """Undo `weight_norm`: `module.<name>` is a parameter again, holding the weight the two parts gave."""
    return _remove_hook(module, name, WeightNorm, "weight_norm")


class SpectralNorm:
    """The pre-hook of `spectral_norm`: name = name_orig / sigma, sigma the largest singular value of name_orig
    (flattened to a matrix with `dim` first) as estimated by power iteration on `name_u` and `name_v`, which
    advance `n_power_iterations` times per forward in training mode only."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v = F.normalize(mv(weight_mat.T, u), dim=0, eps=self.eps, out=v)
                    u = F.normalize(mv(weight_mat, v), dim=0, eps=self.eps, out=u)
                # Clones, so a graph through this forward is not spoilt by the next one's in-place update.
                u, v = u.clone(), v.clone()
        return weight / vdot(u, mv(weight_mat, v))

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))


def spectral_norm(module: ModuleT, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> ModuleT:
    """Divide `module.<name>` by its spectral norm before each forward (https://arxiv.org/abs/1802.05957); `dim`
    is the output dim (1 for ConvTranspose layers, 0 otherwise, by default). The parametrization
    (`parametrizations.spectral_norm`) is the newer form."""
    if dim is None:
        dim = 1 if isinstance(module, ConvTranspose1d | ConvTranspose2d | ConvTranspose3d) else 0
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    if name not in module._parameters and getattr(module, name, 0) is not None:
        raise KeyError(name)
    weight = module._parameters.get(name)
    if weight is None:  # a parameter left out, as a Linear's bias with bias=False
        raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
    with no_grad():
        h, w = fn.reshape_weight_to_matrix(weight).shape
        u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
        v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module: ModuleT, name: str = "weight") -> ModuleT:
    """Undo `spectral_norm`: `module.<name>` is a parameter again, holding the normalised weight."""
    return _remove_hook(module, name, SpectralNorm, "spectral_norm")


def _remove_hook(module: ModuleT, name: str, kind: type, what: str) -> ModuleT:
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"{what} of '{name}' not found in {module}")
