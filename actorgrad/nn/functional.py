"""`actorgrad.nn.functional`: PyTorch's functional API, a thin face over the op families in `actorgrad.ops`."""

from actorgrad.ops.activations import (
    celu,
    elu,
    gelu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    logsigmoid,
    mish,
    one_hot,
    relu,
    relu6,
    selu,
    silu,
    softplus,
    softsign,
    tanhshrink,
    threshold,
)
from actorgrad.ops.arithmetic import sigmoid, tanh
from actorgrad.ops.class_losses import cross_entropy, nll_loss
from actorgrad.ops.conv import conv1d, conv2d
from actorgrad.ops.dim_activations import glu, log_softmax, prelu, softmax, softmin
from actorgrad.ops.embeddings import embedding
from actorgrad.ops.linalg import linear
from actorgrad.ops.losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    smooth_l1_loss,
)
from actorgrad.ops.normalization import batch_norm, group_norm, layer_norm, normalize
from actorgrad.ops.pooling import avg_pool2d, max_pool2d
from actorgrad.ops.public_names import check_tensor_arguments
from actorgrad.ops.regularization import dropout
from actorgrad.ops.shape import pad

__all__ = [
    "binary_cross_entropy", "group_norm", "huber_loss", "kl_div", "normalize", "smooth_l1_loss",
    "celu", "elu", "glu", "hardsigmoid", "hardswish", "hardtanh", "logsigmoid", "mish", "one_hot", "prelu",
    "relu6", "selu", "softmin", "softsign", "tanhshrink", "threshold",
    "avg_pool2d", "batch_norm", "binary_cross_entropy_with_logits", "conv1d", "conv2d", "cross_entropy", "dropout",
    "embedding", "gelu", "l1_loss", "layer_norm", "leaky_relu", "linear", "log_softmax", "max_pool2d", "mse_loss",
    "nll_loss", "pad", "relu", "sigmoid", "silu", "softmax", "softplus", "tanh",
]


check_tensor_arguments(globals(), __all__)
