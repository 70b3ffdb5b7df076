"""Helpers the distributions share (PyTorch's torch.distributions.utils): parameters broadcast together, the two
parameterizations of discrete distributions (probs and logits), and parameters derived on first use."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Real
from typing import Any

import numpy as np

from actorgrad.default_dtype import default_float
from actorgrad.grad_mode import enable_grad
from actorgrad.ops.operands import broadcast_error
from actorgrad.ops.padding import pad
from actorgrad.random_tensors import randn
from actorgrad.tensor import Tensor
from actorgrad.tensor_construction import tensor

__all__ = [
    "broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits", "tril_matrix_to_vec",
    "vec_to_tril_matrix",
]

euler_constant = 0.57721566490153286060  # the Euler-Mascheroni constant, under PyTorch's name


def is_number(value: Any) -> bool:
    return isinstance(value, Real)


def broadcast_all(*values: Tensor | float) -> tuple[Tensor, ...]:
    """The values broadcast to one shape (as views); numbers become tensors of the first tensor's dtype and device,
    or of the default dtype when all are numbers."""
    if not all(isinstance(v, Tensor) or is_number(v) for v in values):
        raise ValueError("Input arguments must all be instances of Number or actorgrad.Tensor.")
    like = next((v for v in values if isinstance(v, Tensor)), None)
    dtype, device = (default_float(), None) if like is None else (like.dtype, like.device)
    tensors = [v if isinstance(v, Tensor) else tensor(v, dtype=dtype, device=device) for v in values]
    try:
        shape = np.broadcast_shapes(*(t.shape for t in tensors))
    except ValueError:  # PyTorch's RuntimeError, as its broadcast_tensors raises it
        raise broadcast_error("broadcast_tensors", *(t.shape for t in tensors)) from None
    return tuple(t if t.shape == shape else t.expand(shape) for t in tensors)


def is_tensor_like(value: Any) -> bool:
    """Whether `value` is a Tensor (PyTorch's also counts objects with `__torch_function__`, which has no meaning
    here)."""
    return isinstance(value, Tensor)


def batch_shape_of(broadcast: Tensor, *given: Tensor | float) -> tuple[int, ...]:
    """A batch of one when every parameter was given as a number, else the shape the parameters broadcast to."""
    return () if all(is_number(p) for p in given) else broadcast.shape


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """`value` summed over its `dim` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


_sum_rightmost = sum_rightmost  # PyTorch's private name, which code written for it imports


def _standard_normal(shape: Sequence[int], dtype: Any, device: Any) -> Tensor:
    """Standard normal noise of `shape` (PyTorch's private helper, imported by code written for it)."""
    return randn(tuple(shape), dtype=dtype, device=device)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from log-odds (binary) or from unnormalized log-probabilities along the last dim."""
    if is_binary:
        return logits.sigmoid()
    return logits.softmax(-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """`probs` clamped into [eps, 1 - eps] of its dtype, so that their logs are finite."""
    eps = float(np.finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds (binary) or log-probabilities of (clamped) probabilities."""
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


class lazy_property:  # noqa: N801 (PyTorch's name)
    """A parameter derived from another on first use (logits from probs, or back), then stored on the instance.
    It is computed with grad enabled, so that it keeps its link to the parameter whatever the mode at first use;
    argument validation skips one not yet computed."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.__name__, value)
        return value


def _tril_positions(n: int, diag: int) -> np.ndarray:
    """The flat positions in an n x n matrix of the entries on or below diagonal `diag`, row by row."""
    rows, cols = np.tril_indices(n, k=diag)
    return rows * n + cols


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of (a batch of) D x D matrices on or below diagonal `diag`, row by row, as vectors."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat.flatten(-2)[..., tensor(_tril_positions(n, diag), device=mat.device)]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The D x D matrices (zero above diagonal `diag`) whose entries on or below it are `vec`'s, row by row."""
    m = vec.shape[-1]
    # D is the positive root of D^2 + (1 + 2 diag) D - |diag| (diag + 1) - 2 m = 0
    root = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if abs(round(root) - root) > float(np.finfo(vec.dtype).eps):
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as the lower triangular part "
                         "of a square D x D matrix.")
    n = round(root)
    source = np.full(n * n, m)  # position m of the padded vector holds the zero
    source[_tril_positions(n, diag)] = np.arange(m)
    padded = pad(vec, [0, 1])
    return padded[..., tensor(source, device=vec.device)].reshape(vec.shape[:-1] + (n, n))
