"""`actorgrad.nn.functional`: PyTorch's functional API, a thin face over the op families in `actorgrad.ops`."""

from actorgrad.ops.activations import (
    celu,
    elu,
    gelu,
    hardswish,
    logsigmoid,
    mish,
    selu,
    silu,
    softplus,
    softsign,
    tanhshrink,
)
from actorgrad.ops.adaptive_pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
)
from actorgrad.ops.arithmetic_unary import sigmoid, tanh
from actorgrad.ops.attention import multi_head_attention_forward, scaled_dot_product_attention
from actorgrad.ops.bilinear import bilinear
from actorgrad.ops.binary_cross_entropies import binary_cross_entropy, binary_cross_entropy_with_logits
from actorgrad.ops.channel_shuffle import channel_shuffle
from actorgrad.ops.class_losses import (
    cross_entropy,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
)
from actorgrad.ops.composite_losses import (
    cosine_embedding_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from actorgrad.ops.conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d
from actorgrad.ops.ctc import ctc_loss
from actorgrad.ops.dim_activations import glu, gumbel_softmax, log_softmax, prelu, softmax, softmin
from actorgrad.ops.distances import cosine_similarity, pairwise_distance, pdist
from actorgrad.ops.embedding_bags import embedding_bag
from actorgrad.ops.embeddings import embedding, one_hot
from actorgrad.ops.fractional_pooling import (
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from actorgrad.ops.grid_sampling import affine_grid, grid_sample
from actorgrad.ops.inplace_activations import (
    celu_,
    elu_,
    hardtanh_,
    leaky_relu_,
    relu_,
    rrelu_,
    selu_,
    threshold_,
)
from actorgrad.ops.linalg import linear
from actorgrad.ops.linear_cross_entropy import linear_cross_entropy
from actorgrad.ops.losses import (
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    smooth_l1_loss,
)
from actorgrad.ops.lp_pooling import lp_pool1d, lp_pool2d, lp_pool3d
from actorgrad.ops.normalization import (
    batch_norm,
    group_norm,
    instance_norm,
    layer_norm,
    local_response_norm,
    normalize,
    rms_norm,
)
from actorgrad.ops.piecewise_linear_activations import (
    hardshrink,
    hardsigmoid,
    hardtanh,
    leaky_relu,
    relu,
    relu6,
    rrelu,
    softshrink,
    threshold,
)
from actorgrad.ops.pooling import (
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
)
from actorgrad.ops.public_names import check_tensor_arguments
from actorgrad.ops.regularization import (
    alpha_dropout,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from actorgrad.ops.resampling import (
    interpolate,
    pixel_shuffle,
    pixel_unshuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
from actorgrad.ops.shape import pad
from actorgrad.ops.sliding_blocks import fold, unfold
from actorgrad.ops.unpooling import max_unpool1d, max_unpool2d, max_unpool3d

__all__ = [
    "conv_transpose1d", "conv_transpose2d", "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "scaled_dot_product_attention",
    "multi_head_attention_forward", "hardshrink", "softshrink", "rrelu", "dropout1d", "dropout2d", "dropout3d",
    "alpha_dropout", "instance_norm", "rms_norm", "local_response_norm", "cosine_similarity", "pairwise_distance",
    "interpolate", "pixel_shuffle", "pixel_unshuffle", "unfold", "fold",
    "conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
    "bilinear", "embedding_bag", "max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
    "channel_shuffle", "ctc_loss", "affine_grid", "grid_sample", "feature_alpha_dropout",
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "pdist", "gumbel_softmax", "relu_", "elu_", "celu_", "selu_",
    "leaky_relu_", "hardtanh_", "rrelu_", "threshold_", "upsample", "upsample_nearest", "upsample_bilinear",
    "binary_cross_entropy", "group_norm", "huber_loss", "kl_div", "normalize", "smooth_l1_loss",
    "celu", "elu", "glu", "hardsigmoid", "hardswish", "hardtanh", "logsigmoid", "mish", "one_hot", "prelu",
    "relu6", "selu", "softmin", "softsign", "tanhshrink", "threshold",
    "avg_pool2d", "batch_norm", "binary_cross_entropy_with_logits", "conv1d", "conv2d", "cross_entropy", "dropout",
    "embedding", "gelu", "l1_loss", "layer_norm", "leaky_relu", "linear", "log_softmax", "max_pool2d", "mse_loss",
    "nll_loss", "pad", "relu", "sigmoid", "silu", "softmax", "softplus", "tanh", "linear_cross_entropy",
]


check_tensor_arguments(globals(), __all__)
