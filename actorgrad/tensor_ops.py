"""The gradient-rule helpers of `actorgrad.devices.array_ops.ArrayOps`, on Tensors.

A backward with `create_graph=True` runs every rule with these, so each step of the backward is itself a
recorded op and can be differentiated again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorgrad.devices.array_ops import reduced_axes
from actorgrad.ops import contraction, conv, embeddings, pooling
from actorgrad.ops.record import SavedOutput
from actorgrad.ops.shape import broadcast_to, permute, to_dtype
from actorgrad.tensor import Tensor


class TensorOps:
    @staticmethod
    def unpack(values: tuple, node: Any) -> list:
        """Saved values as Tensors; a node's saved output comes back as a tensor whose grad_fn is the node."""
        return [Tensor(v._data, grad_fn=node) if isinstance(v, SavedOutput) else v for v in values]

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
    def exp(x: Tensor) -> Tensor:
        return x.exp()

    @staticmethod
    def log(x: Tensor) -> Tensor:
        return x.log()

    @staticmethod
    def positive_mask(x: Tensor) -> Tensor:
        return Tensor(np.asarray(x._data > 0, dtype=x.dtype))

    @staticmethod
    def equal_mask(x: Tensor, y: Tensor) -> Tensor:
        return Tensor(np.asarray(x._data == y._data, dtype=x.dtype))

    @staticmethod
    def cast(g: Tensor, dtype: Any) -> Tensor:
        return to_dtype(g, dtype)

    @staticmethod
    def zeros_like(x: Tensor) -> Tensor:
        return Tensor(np.zeros_like(x._data))

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
    def sign(x: Tensor) -> Tensor:
        return Tensor(np.sign(x._data))

    @staticmethod
    def sigmoid(x: Tensor) -> Tensor:
        return x.sigmoid()

    @staticmethod
    def gather_last(x: Tensor, index: Any) -> Tensor:
        return pooling.recorded_gather_last(x, index)

    @staticmethod
    def scatter_add_last(g: Tensor, index: Any, size: int) -> Tensor:
        return pooling.recorded_scatter_add_last(g, index, size)

    @staticmethod
    def einsum(equation: str, *operands: Tensor) -> Tensor:
        return contraction.einsum(equation, *operands)

    @staticmethod
    def embedding_backward(g: Tensor, indices: Any, num_weights: int, padding_idx: int | None) -> Tensor:
        return embeddings.recorded_embedding_backward(g, indices, num_weights, padding_idx)

    @staticmethod
    def embedding_rows(weight: Tensor, indices: Any, padding_idx: int | None) -> Tensor:
        return embeddings.recorded_embedding_rows(weight, indices, padding_idx)


tensor_ops = TensorOps()
