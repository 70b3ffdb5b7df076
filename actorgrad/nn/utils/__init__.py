"""`actorgrad.nn.utils`: gradient clipping and flattening parameters to one vector, as torch.nn.utils;
`rnn` packs and pads batches of sequences of different lengths; `parametrize` computes a parameter from others,
and `parametrizations` holds the ready-made ones (weight_norm, spectral_norm)."""

from actorgrad.nn.utils import parametrizations, parametrize, rnn
from actorgrad.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from actorgrad.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = [
    "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector",
    "parametrizations", "parametrize", "rnn", "vector_to_parameters",
]
