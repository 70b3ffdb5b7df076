"""The gradient-rule helpers of `actorgrad.devices.array_ops.ArrayOps`, on Tensors.

A backward with `create_graph=True` runs every rule with these, so each step of the backward is itself a
recorded op and can be differentiated again.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorgrad.devices.array_ops import reduced_axes
from actorgrad.ops import (
    conv,
    einsum_contraction,
    embeddings,
    linalg_decompositions,
    linalg_spectral,
    linalg_triangular,
    pooling,
)
from actorgrad.ops.arithmetic_unary import sigmoid, tanh
from actorgrad.ops.casts import to_device
from actorgrad.ops.complex_parts import conj_physical
from actorgrad.ops.diagonals import tril
from actorgrad.ops.gamma import digamma, erfinv, polygamma
from actorgrad.ops.indexing import INDEX_RULES, index_put_zeros, scatter_add, take_index
from actorgrad.ops.joining import cat
from actorgrad.ops.matrix_functions import linalg_matrix_exp
from actorgrad.ops.piecewise_linear_activations import relu_backward
from actorgrad.ops.reductions import log_softmax, prod_over_dims
from actorgrad.ops.rounding import trunc
from actorgrad.ops.scans import cumprod
from actorgrad.ops.selection import where
from actorgrad.ops.shape import broadcast_to, flip, pad, permute, roll, to_dtype
from actorgrad.ops.special import erf
from actorgrad.ops.unary import cos, sgn, sign, sin
from actorgrad.saved_tensors import SavedOutput
from actorgrad.tensor import Tensor

INDEX = INDEX_RULES["IndexBackward0"]


class TensorOps:
    @staticmethod
    def unpack(values: tuple, node: Any) -> list:
        """Saved values as Tensors; a node's saved output comes back as a tensor whose grad_fn is the node."""
        return [Tensor(v._data, grad_fn=node, device=node.device) if isinstance(v, SavedOutput) else v for v in values]

    @staticmethod
    def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
        if g.shape == shape:
            return g
        return g.sum(reduced_axes(g.shape, shape), keepdim=True).reshape(shape)

    @staticmethod
    def broadcast_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
        return broadcast_to(g, shape)

    @staticmethod
    def reshape(g: Tensor, shape: tuple[int, ...]) -> Tensor:
        return g if g.shape == shape else g.reshape(shape)

    @staticmethod
    def swapaxes(g: Tensor, dim0: int, dim1: int) -> Tensor:
        return g.transpose(dim0, dim1)

    @staticmethod
    def permute(g: Tensor, dims: tuple[int, ...]) -> Tensor:
        return permute(g, dims)

    @staticmethod
    def sum(g: Tensor, dim: tuple[int, ...] | None, keepdim: bool = False) -> Tensor:
        return g.sum(dim, keepdim=keepdim)

    @staticmethod
    def conj(x: Tensor) -> Tensor:
        return conj_physical(x) if x._data.dtype.kind == "c" else x

    @staticmethod
    def exp(x: Tensor) -> Tensor:
        return x.exp()

    @staticmethod
    def log(x: Tensor) -> Tensor:
        return x.log()

    @staticmethod
    def relu_grad(g: Tensor, result: Tensor) -> Tensor:
        return relu_backward(g, result)

    @staticmethod
    def log_softmax(x: Tensor, dims: tuple[int, ...]) -> Tensor:
        return log_softmax(x, dims[0])

    @staticmethod
    def log_softmax_grad(g: Tensor, result: Tensor, dims: tuple[int, ...]) -> Tensor:
        return g - result.exp() * g.sum(dims, keepdim=True)

    @staticmethod
    def equal_mask(x: Tensor, y: Tensor) -> Tensor:
        return Tensor((x._data == y._data).astype(x.dtype), device=x._device)

    @staticmethod
    def cast(g: Tensor, target: Any) -> Tensor:
        if target.__class__ is tuple:  # (dtype, device): see ArrayOps.cast
            target, where = target
            g = TensorOps.to_device(g, where)
        if g._data.dtype.kind == "c" and np.dtype(target).kind != "c":
            g = g.real  # a real input of a complex op: the real part, as ArrayOps.cast
        return g if g.dtype == target else to_dtype(g, target)

    @staticmethod
    def zeros_like(x: Tensor) -> Tensor:
        return Tensor(x._device.xp.zeros_like(x._data), device=x._device)

    @staticmethod
    def zeros(shape: tuple[int, ...], like: Tensor) -> Tensor:
        return Tensor(like._device.xp.zeros(shape, like._data.dtype), device=like._device)

    @staticmethod
    def prod_others(x: Tensor, dims: tuple[int, ...]) -> Tensor:
        """Recorded: `prod / x` where x has no zeros; otherwise each slice repeated n times with the element
        itself replaced by 1, multiplied out (n x the memory, only in a recorded backward through zeros)."""
        if np.all(x._data != 0):
            return prod_over_dims(x, dims, keepdim=True) / x
        rest = [d for d in range(x.ndim) if d not in dims]
        order = rest + list(dims)
        moved = permute(x, order)
        lead = moved.shape[: len(rest)]
        n = math.prod(x.shape[d] for d in dims)
        where = x._device
        eye = where.xp.eye(n, dtype=x.dtype)
        others = moved.reshape(lead + (1, n)) * Tensor(1 - eye, device=where) + Tensor(eye, device=where)  # x_i -> 1
        out = prod_over_dims(others, (len(lead) + 1,)).reshape(moved.shape)
        return permute(out, tuple(np.argsort(order).tolist()))

    @staticmethod
    def reverse_cumsum(g: Tensor, dim: int) -> Tensor:
        """As a cumsum of the flipped tensor: `sum - cumsum + g` would cancel away terms much smaller than the
        total."""
        return flip(flip(g, (dim,)).cumsum(dim), (dim,))

    @staticmethod
    def scatter_along(g: Tensor, indices: Any, dim: int, shape: tuple[int, ...]) -> Tensor:
        where = g._device
        positions = where.xp.arange(shape[dim]).reshape((-1,) + (1,) * (len(shape) - dim - 1))
        return broadcast_to(g, shape) * Tensor((positions == indices).astype(g.dtype), device=where)

    @staticmethod
    def index(g: Tensor, basic: tuple, advanced: tuple | None) -> Tensor:
        return take_index(g, basic, advanced, INDEX)

    @staticmethod
    def index_put_zeros(g: Tensor, shape: tuple[int, ...], basic: tuple, advanced: tuple | None) -> Tensor:
        return index_put_zeros(g, shape, basic, advanced)

    @staticmethod
    def flip(g: Tensor, dims: tuple[int, ...]) -> Tensor:
        return flip(g, dims)

    @staticmethod
    def roll(g: Tensor, shifts: tuple[int, ...], dims: tuple[int, ...] | None) -> Tensor:
        return roll(g, shifts, dims)

    @staticmethod
    def pad(g: Tensor, pad_widths: tuple[int, ...]) -> Tensor:
        return pad(g, pad_widths)

    @staticmethod
    def where(condition: Any, x: Any, y: Any) -> Tensor:
        """As ArrayOps.where: the condition may also be a mask a rule saved as an array, or a Python bool."""
        if not isinstance(condition, Tensor):
            device = (x if isinstance(x, Tensor) else y)._device
            condition = Tensor(device.xp.asarray(condition), device=device)
        return where(condition, x, y)

    @staticmethod
    def sign(x: Tensor) -> Tensor:
        return sgn(x) if x._data.dtype.kind == "c" else sign(x)

    @staticmethod
    def trunc(x: Tensor) -> Tensor:
        return trunc(x)

    @staticmethod
    def sin(x: Tensor) -> Tensor:
        return sin(x)

    @staticmethod
    def cos(x: Tensor) -> Tensor:
        return cos(x)

    @staticmethod
    def tanh(x: Tensor) -> Tensor:
        return tanh(x)

    @staticmethod
    def sigmoid(x: Tensor) -> Tensor:
        return sigmoid(x)

    @staticmethod
    def erf(x: Tensor) -> Tensor:
        return erf(x)

    @staticmethod
    def polygamma(n: int, x: Tensor) -> Tensor:
        """Recorded as PyTorch's formulas record it: digamma for n = 0, polygamma above."""
        return digamma(x) if n == 0 else polygamma(n, x)

    @staticmethod
    def erfinv(x: Tensor) -> Tensor:
        return erfinv(x)

    @staticmethod
    def convolution(x: Tensor, weight: Tensor, geometry: Any) -> Tensor:
        return conv.recorded_convolution(x, weight, geometry)

    @staticmethod
    def convolution_input_grad(g: Tensor, weight: Tensor, input_shape: tuple[int, ...], geometry: Any) -> Tensor:
        return conv.recorded_input_grad(g, weight, input_shape, geometry)

    @staticmethod
    def convolution_weight_grad(x: Tensor, g: Tensor, weight_shape: tuple[int, ...], geometry: Any) -> Tensor:
        return conv.recorded_weight_grad(x, g, weight_shape, geometry)

    @staticmethod
    def gather_last(x: Tensor, index: Any) -> Tensor:
        return pooling.recorded_gather_last(x, index)

    @staticmethod
    def scatter_add_last(g: Tensor, index: Any, size: int) -> Tensor:
        return pooling.recorded_scatter_add_last(g, index, size)

    @staticmethod
    def einsum(equation: str, *operands: Tensor) -> Tensor:
        return einsum_contraction.einsum(equation, *operands)

    @staticmethod
    def embedding_backward(g: Tensor, indices: Any, num_weights: int, padding_idx: int | None) -> Tensor:
        return embeddings.recorded_embedding_backward(g, indices, num_weights, padding_idx)

    @staticmethod
    def embedding_rows(weight: Tensor, indices: Any, padding_idx: int | None) -> Tensor:
        return embeddings.recorded_embedding_rows(weight, indices, padding_idx)

    @staticmethod
    def same_mask(x: Tensor, y: Tensor) -> Tensor:
        return Tensor(x._device.ops.same_mask(x._data, y._data), device=x._device)

    @staticmethod
    def put_along(g: Tensor, indices: Any, dim: int, shape: tuple[int, ...]) -> Tensor:
        """Recorded as scatter_add into zeros, whose gradient takes `indices` back out of the gradient."""
        where = g._device
        zeros = Tensor(where.xp.zeros(shape, g.dtype), device=where)
        return scatter_add(zeros, dim, Tensor(indices, device=where), g)

    @staticmethod
    def cumprod_grad(g: Tensor, x: Tensor, result: Tensor, dim: int) -> Tensor:
        """Recorded: as ArrayOps.cumprod_grad, from recorded cumsum, cumprod and products."""
        where = x._device
        xp = where.xp
        if bool(xp.all(x._data != 0)):
            return TensorOps.reverse_cumsum(g * TensorOps.conj(result), dim) / TensorOps.conj(x)
        n = x.shape[dim]
        eye = xp.eye(n, dtype=x.dtype)
        later = Tensor(xp.triu(xp.ones((n, n), dtype=x.dtype)), device=where)
        moved, gm = x.movedim(dim, -1), g.movedim(dim, -1)
        others = moved.unsqueeze(-2) * Tensor(1 - eye, device=where) + Tensor(eye, device=where)
        grad = (TensorOps.conj(cumprod(others, -1)) * later * gm.unsqueeze(-2)).sum(-1)
        return grad.movedim(-1, dim)

    @staticmethod
    def to_device(g: Tensor, device: Any) -> Tensor:
        return g if g._device is device else to_device(g, device)

    @staticmethod
    def inv(x: Tensor) -> Tensor:
        return linalg_decompositions.inv(x)

    @staticmethod
    def solve(a: Tensor, b: Tensor) -> Tensor:
        return linalg_decompositions.solve_matrices(a, b)

    @staticmethod
    def solve_triangular(a: Tensor, b: Tensor, upper: bool, left: bool, unitriangular: bool) -> Tensor:
        return linalg_triangular.solve_triangular(a, b, upper=upper, left=left, unitriangular=unitriangular)

    @staticmethod
    def cholesky_solve(b: Tensor, factor: Tensor, upper: bool) -> Tensor:
        """Recorded as cholesky_solve, as PyTorch's backward of cholesky_solve calls it: its second derivative
        is then PyTorch's."""
        return linalg_triangular.cholesky_solve(b, factor, upper)

    @staticmethod
    def tril(x: Tensor, diagonal: int) -> Tensor:
        return tril(x, diagonal)

    @staticmethod
    def det(x: Tensor) -> Tensor:
        return linalg_decompositions.det(x)

    @staticmethod
    def svd(x: Tensor) -> tuple:
        return tuple(linalg_spectral.svd(x, full_matrices=False))

    @staticmethod
    def eigh(x: Tensor, uplo: str) -> tuple:
        return tuple(linalg_spectral.eigh(x, uplo))

    @staticmethod
    def qr(x: Tensor) -> tuple:
        return tuple(linalg_spectral.qr(x))

    @staticmethod
    def eye(n: int, like: Tensor) -> Tensor:
        return Tensor(like._device.xp.eye(n, dtype=like._data.dtype), device=like._device)

    @staticmethod
    def matrix_exp(x: Tensor) -> Tensor:
        return linalg_matrix_exp(x)

    @staticmethod
    def concatenate(xs: tuple, dim: int) -> Tensor:
        return cat(xs, dim)

    @staticmethod
    def any_zero(x: Tensor) -> bool:
        return bool((x._data == 0).any())


tensor_ops = TensorOps()
