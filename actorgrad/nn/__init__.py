"""Neural-network layers in PyTorch's shape: Module, Parameter, the layers and containers, the losses,
`functional`, `init` and `utils`."""

from actorgrad.nn import functional, init, utils
from actorgrad.nn.activation import (
    GELU,
    Dropout,
    Flatten,
    Identity,
    LeakyReLU,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
    Unflatten,
)
from actorgrad.nn.container import ModuleDict, ModuleList, Sequential
from actorgrad.nn.layers import Conv2d, Embedding, LayerNorm, Linear
from actorgrad.nn.loss import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from actorgrad.nn.module import Module
from actorgrad.nn.normalization import BatchNorm1d, BatchNorm2d
from actorgrad.nn.parameter import Parameter
from actorgrad.nn.parameter_containers import ParameterDict, ParameterList
from actorgrad.nn.pooling import AvgPool2d, MaxPool2d

__all__ = [
    "AvgPool2d", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "Conv2d", "CrossEntropyLoss", "Dropout",
    "Embedding", "Flatten", "GELU", "Identity", "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax",
    "MSELoss", "MaxPool2d", "Module", "ModuleDict", "ModuleList", "NLLLoss", "Parameter", "ParameterDict",
    "ParameterList", "ReLU", "Sequential", "SiLU", "Sigmoid", "Softmax", "Softplus", "Tanh", "Unflatten",
    "functional", "init", "utils",
]
