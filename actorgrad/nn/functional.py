"""`actorgrad.nn.functional`: PyTorch's functional API, a thin face over the op families in `actorgrad.ops`."""

from actorgrad.ops.activations import gelu, leaky_relu, silu, softplus
from actorgrad.ops.arithmetic import relu as _relu
from actorgrad.ops.arithmetic import sigmoid, tanh
from actorgrad.ops.conv import conv1d, conv2d
from actorgrad.ops.embeddings import embedding
from actorgrad.ops.linalg import linear
from actorgrad.ops.losses import binary_cross_entropy_with_logits, cross_entropy, l1_loss, mse_loss, nll_loss
from actorgrad.ops.normalization import batch_norm, layer_norm
from actorgrad.ops.pooling import avg_pool2d, max_pool2d
from actorgrad.ops.reductions import log_softmax, softmax
from actorgrad.ops.regularization import dropout
from actorgrad.ops.shape import pad
from actorgrad.tensor import Tensor

__all__ = [
    "avg_pool2d", "batch_norm", "binary_cross_entropy_with_logits", "conv1d", "conv2d", "cross_entropy", "dropout",
    "embedding", "gelu", "l1_loss", "layer_norm", "leaky_relu", "linear", "log_softmax", "max_pool2d", "mse_loss",
    "nll_loss", "pad", "relu", "sigmoid", "silu", "softmax", "softplus", "tanh",
]


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(0, x); `inplace` writes it into `input` and returns it, as PyTorch's relu_."""
    return input.relu_() if inplace else _relu(input)
