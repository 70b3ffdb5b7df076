"""PyTorch's `nn.modules` namespace, for code that names a layer by its module path: the base classes that
`isinstance` checks use (`nn.modules.batchnorm._BatchNorm`, `nn.modules.conv._ConvNd`, `nn.modules.loss._Loss`),
the global hook functions of `nn.modules.module`, and `nn.modules.utils`. Each submodule (`batchnorm`, `conv`, ...)
holds the same class objects as `actorgrad.nn`, filed under PyTorch's submodule names; it is built from the table
below and registered in `sys.modules`, so `from actorgrad.nn.modules.batchnorm import _BatchNorm` works."""

from __future__ import annotations

import sys
from types import ModuleType

from actorgrad.nn import (
    activation,
    adaptive,
    attention,
    bilinear,
    channel_shuffle,
    container,
    distance,
    dropout,
    embedding_bag,
    layers,
    lazy,
    legacy_modules,
    loss,
    module,
    module_hooks,
    normalization,
    padding_layers,
    parameter_containers,
    pooling,
    recurrent,
    recurrent_cells,
    resampling,
    transformer,
)
from actorgrad.nn.modules import utils

# The classes (and functions) each PyTorch submodule holds, where actorgrad has them.
_TABLE = {
    "module": "Module register_module_forward_pre_hook register_module_forward_hook "
              "register_module_full_backward_pre_hook register_module_full_backward_hook register_module_backward_hook "
              "register_module_buffer_registration_hook register_module_module_registration_hook "
              "register_module_parameter_registration_hook",
    "activation": "Threshold ReLU RReLU Hardtanh ReLU6 Sigmoid Hardsigmoid Tanh SiLU Mish Hardswish ELU CELU SELU GLU "
                  "GELU Hardshrink LeakyReLU LogSigmoid Softplus Softshrink MultiheadAttention PReLU Softsign "
                  "Tanhshrink Softmin Softmax Softmax2d LogSoftmax",
    "adaptive": "AdaptiveLogSoftmaxWithLoss",
    "batchnorm": "_NormBase _BatchNorm BatchNorm1d BatchNorm2d BatchNorm3d LazyBatchNorm1d LazyBatchNorm2d "
                 "LazyBatchNorm3d SyncBatchNorm",
    "channelshuffle": "ChannelShuffle",
    "container": "Container Sequential ModuleList ModuleDict ParameterList ParameterDict",
    "conv": "_ConvNd _ConvTransposeNd Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d "
            "LazyConv1d LazyConv2d LazyConv3d LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d",
    "distance": "PairwiseDistance CosineSimilarity",
    "dropout": "_DropoutNd Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout",
    "flatten": "Flatten Unflatten",
    "fold": "Fold Unfold",
    "instancenorm": "_InstanceNorm InstanceNorm1d InstanceNorm2d InstanceNorm3d LazyInstanceNorm1d LazyInstanceNorm2d "
                    "LazyInstanceNorm3d",
    "linear": "Identity Linear Bilinear LazyLinear NonDynamicallyQuantizableLinear",
    "loss": "_Loss _WeightedLoss L1Loss NLLLoss NLLLoss2d PoissonNLLLoss GaussianNLLLoss KLDivLoss MSELoss BCELoss "
            "BCEWithLogitsLoss HingeEmbeddingLoss MultiLabelMarginLoss SmoothL1Loss HuberLoss SoftMarginLoss "
            "CrossEntropyLoss MultiLabelSoftMarginLoss CosineEmbeddingLoss MarginRankingLoss MultiMarginLoss "
            "TripletMarginLoss TripletMarginWithDistanceLoss CTCLoss",
    "normalization": "LocalResponseNorm CrossMapLRN2d LayerNorm GroupNorm RMSNorm",
    "padding": "CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d ConstantPad3d ReflectionPad1d "
               "ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d ZeroPad1d "
               "ZeroPad2d ZeroPad3d",
    "pixelshuffle": "PixelShuffle PixelUnshuffle",
    "pooling": "_MaxPoolNd _AvgPoolNd MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d AvgPool1d "
               "AvgPool2d AvgPool3d FractionalMaxPool2d FractionalMaxPool3d LPPool1d LPPool2d LPPool3d "
               "AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d "
               "AdaptiveAvgPool3d",
    "rnn": "RNNBase RNN LSTM GRU RNNCellBase RNNCell LSTMCell GRUCell",
    "sparse": "Embedding EmbeddingBag",
    "transformer": "Transformer TransformerEncoder TransformerDecoder TransformerEncoderLayer TransformerDecoderLayer",
    "upsampling": "Upsample UpsamplingNearest2d UpsamplingBilinear2d",
}

# actorgrad's own modules, where the names of the table live.
_SOURCES = (
    activation, adaptive, attention, bilinear, channel_shuffle, container, distance, dropout, embedding_bag, layers,
    lazy, legacy_modules, loss, module, module_hooks, normalization, padding_layers, parameter_containers, pooling,
    recurrent, recurrent_cells, resampling, transformer,
)


def _find(name: str) -> object:
    for source in _SOURCES:
        if hasattr(source, name):
            return getattr(source, name)
    raise AttributeError(f"nn.modules: no {name} in actorgrad")


def _submodule(name: str, members: str) -> ModuleType:
    submodule = ModuleType(f"{__name__}.{name}", f"PyTorch's nn.modules.{name}: the same objects as actorgrad.nn's.")
    for member in members.split():
        setattr(submodule, member, _find(member))
    sys.modules[submodule.__name__] = submodule
    return submodule


def _install() -> None:
    """Build the submodules (their names replace those of actorgrad's modules imported above, as `loss`), and
    export their public classes here too (`nn.modules.Linear`), as PyTorch does."""
    for name, members in _TABLE.items():
        globals()[name] = _submodule(name, members)
        found = {member: _find(member) for member in members.split() if not member.startswith("_")}
        globals().update({member: value for member, value in found.items() if isinstance(value, type)})


_install()

__all__ = ["utils", *_TABLE]
