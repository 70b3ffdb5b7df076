"""Neural-network layers in PyTorch's shape: Module, Parameter, the layers and containers, the losses,
`functional`, `init` and `utils`."""

from actorgrad.nn import functional, init, utils
from actorgrad.nn.activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Dropout,
    Flatten,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    Identity,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
    Unflatten,
)
from actorgrad.nn.container import ModuleDict, ModuleList, Sequential
from actorgrad.nn.layers import Conv2d, Embedding, LayerNorm, Linear
from actorgrad.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from actorgrad.nn.module import Module
from actorgrad.nn.normalization import BatchNorm1d, BatchNorm2d, GroupNorm
from actorgrad.nn.parameter import Parameter
from actorgrad.nn.parameter_containers import ParameterDict, ParameterList
from actorgrad.nn.pooling import AvgPool2d, MaxPool2d

__all__ = [
    "BCELoss", "GroupNorm", "HuberLoss", "KLDivLoss", "SmoothL1Loss",
    "CELU", "ELU", "GLU", "Hardsigmoid", "Hardswish", "Hardtanh", "LogSigmoid", "Mish", "PReLU", "ReLU6", "SELU",
    "Softmin", "Softsign", "Tanhshrink", "Threshold",
    "AvgPool2d", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "Conv2d", "CrossEntropyLoss", "Dropout",
    "Embedding", "Flatten", "GELU", "Identity", "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax",
    "MSELoss", "MaxPool2d", "Module", "ModuleDict", "ModuleList", "NLLLoss", "Parameter", "ParameterDict",
    "ParameterList", "ReLU", "Sequential", "SiLU", "Sigmoid", "Softmax", "Softplus", "Tanh", "Unflatten",
    "functional", "init", "utils",
]
