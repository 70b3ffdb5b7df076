"""Neural-network layers in PyTorch's shape: Module, Parameter, the layers, `functional` and `init`."""

from actorgrad.nn import functional, init
from actorgrad.nn.activation import GELU, Dropout, ReLU, Tanh
from actorgrad.nn.container import Sequential
from actorgrad.nn.layers import Conv2d, Embedding, LayerNorm, Linear
from actorgrad.nn.module import Module
from actorgrad.nn.parameter import Parameter

__all__ = [
    "Conv2d", "Dropout", "Embedding", "GELU", "LayerNorm", "Linear", "Module", "Parameter", "ReLU", "Sequential",
    "Tanh", "functional", "init",
]
