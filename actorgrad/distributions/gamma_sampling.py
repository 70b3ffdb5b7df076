"""Gamma and Dirichlet samples that carry the implicit reparameterization gradient (`gamma_gradients`), as the
custom Functions `standard_gamma` and `sample_dirichlet`. They draw on the host from actorgrad's default generator
(numpy's gamma sampler in float64, so reproducible under `actorgrad.manual_seed`, not PyTorch's stream) and clamp
as PyTorch does, so that log densities at samples stay finite."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.autograd.function import Function, once_differentiable
from actorgrad.distributions.gamma_gradients import dirichlet_grad, standard_gamma_grad
from actorgrad.ops.index_parsing import host_array
from actorgrad.ops.indexing import on_device
from actorgrad.random import numpy_generator
from actorgrad.tensor import Tensor, float64


def _like(t: Tensor, array: Any) -> Tensor:
    """`array` (on the host or on `t`'s device) as a tensor on `t`'s device, in `t`'s dtype."""
    return Tensor(on_device(t, array).astype(t.dtype, copy=False), device=t._device)


def _float64(t: Tensor) -> Any:
    return t._data.astype(float64, copy=False)


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx: Any, concentration: Tensor) -> Tensor:
        # asarray: numpy draws a Python float for a 0-d concentration
        shapes = host_array(_float64(concentration))
        draws = np.asarray(numpy_generator(None).standard_gamma(shapes), concentration.dtype)
        sample = _like(concentration, np.maximum(draws, np.finfo(concentration.dtype).tiny))
        ctx.save_for_backward(concentration, sample)
        return sample

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        concentration, sample = ctx.saved_tensors
        xp = concentration._device.xp
        return grad * _like(concentration, standard_gamma_grad(xp, _float64(concentration), _float64(sample)))


class _SampleDirichlet(Function):
    @staticmethod
    def forward(ctx: Any, concentration: Tensor) -> Tensor:
        shapes = host_array(_float64(concentration))
        gammas = np.maximum(numpy_generator(None).standard_gamma(shapes), np.finfo(float).tiny)
        dtype = concentration.dtype
        ratios = (gammas / gammas.sum(-1, keepdims=True)).astype(dtype)
        below_one = np.nextafter(dtype.type(1), dtype.type(0))
        sample = _like(concentration, np.clip(ratios, np.finfo(dtype).tiny, below_one))
        ctx.save_for_backward(concentration, sample)
        return sample

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        concentration, sample = ctx.saved_tensors
        xp = concentration._device.xp
        alpha = _float64(concentration)
        total = xp.broadcast_to(alpha.sum(-1, keepdims=True), alpha.shape)
        factor = _like(concentration, dirichlet_grad(xp, _float64(sample), alpha, total))
        return factor * (grad - (sample * grad).sum(-1, keepdim=True))


def standard_gamma(concentration: Tensor) -> Tensor:
    """Samples of Gamma(concentration, 1), one per element; at least the dtype's smallest normal number."""
    return _StandardGamma.apply(concentration)


def sample_dirichlet(concentration: Tensor) -> Tensor:
    """Samples of Dirichlet(concentration) over the last dim: gamma draws normalized, each component clamped into
    [tiny, the float below 1] of the dtype."""
    return _SampleDirichlet.apply(concentration)
