"""`actorgrad.nn.utils`: gradient clipping and flattening parameters to one vector, as torch.nn.utils;
`rnn` packs and pads batches of sequences of different lengths; `parametrize` computes a parameter from others,
and `parametrizations` holds the ready-made ones (weight_norm, spectral_norm), of which `weight_norm` and
`spectral_norm` here are the older, hook-based forms; `fuse_*` fold an eval-mode BatchNorm into the layer before
it; `skip_init` builds a module uninitialised; `stateless.functional_call` runs a module with other tensors;
`prune` masks parts of parameters; `convert_conv2d/3d_weight_memory_format` return the module as it is
(actorgrad has one memory format)."""

from actorgrad.nn.utils import memory_format, parametrizations, parametrize, prune, rnn, stateless
from actorgrad.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from actorgrad.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from actorgrad.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from actorgrad.nn.utils.init import skip_init
from actorgrad.nn.utils.memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from actorgrad.nn.utils.norm_hooks import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm

__all__ = [
    "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
    "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format", "fuse_conv_bn_eval",
    "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "get_total_norm",
    "memory_format", "parameters_to_vector", "parametrizations", "parametrize", "prune", "remove_spectral_norm",
    "remove_weight_norm", "rnn", "skip_init", "spectral_norm", "stateless", "vector_to_parameters", "weight_norm",
]
