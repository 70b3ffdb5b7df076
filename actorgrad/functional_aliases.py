"""The top-level forms PyTorch exposes of its nn functions (torch.kl_div, torch.convolution, torch.lstm_cell ...),
with ATen's signatures: a loss takes its reduction as an int (0 'none', 1 'mean', 2 'sum'; as in PyTorch's Python
binding, it defaults to 0, unreduced, where ATen's schema says Mean), dropout's flag is
`train`, the in-place forms end in `_`. Most are rows of one table mapping torch's parameters onto the
`nn.functional` function that does the work; the few with no functional twin (convolution, conv_tbc, the RNN cells,
embedding_bag's four outputs, feature_dropout) are small functions below it."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.nn import functional as F
from actorgrad.nn.recurrent_steps import _gru_step, _lstm_step, _relu_step, _tanh_step
from actorgrad.ops.embeddings import renorm_rows_
from actorgrad.ops.index_parsing import host_array
from actorgrad.ops.regularization import _channel_shape, _masked
from actorgrad.tensor import Tensor, int64

REQUIRED = inspect.Parameter.empty
REDUCTIONS = ("none", "mean", "sum")


def reduction_name(reduction: int) -> str:
    """ATen's reduction enum as nn.functional's string: 1 'mean', 2 'sum', anything else 'none' (ATen reduces only
    on those two)."""
    return REDUCTIONS[reduction] if reduction in (1, 2) else "none"


def _kl_div(input: Tensor, target: Tensor, reduction: str, log_target: bool) -> Tensor:
    """kl_div whose 'mean' is over every element, with no warning: the int enum has no 'batchmean' to point to."""
    losses = F.kl_div(input, target, reduction="none", log_target=log_target)
    return losses if reduction == "none" else losses.mean() if reduction == "mean" else losses.sum()


# torch name: (target, torch's parameters in order as (name, default) (REQUIRED: none), {torch name: target's
# keyword}, fixed keywords for the target). Parameters named `reduction` are converted from ATen's int.
TABLE: dict[str, tuple[Callable, tuple, dict, dict]] = {
    "relu_": (F.relu_, (("input", REQUIRED),), {}, {}),
    "selu_": (F.selu_, (("input", REQUIRED),), {}, {}),
    "celu_": (F.celu_, (("input", REQUIRED), ("alpha", 1.0)), {}, {}),
    "rrelu": (F.rrelu, (("input", REQUIRED), ("lower", 1 / 8), ("upper", 1 / 3), ("training", False)), {}, {}),
    "rrelu_": (F.rrelu_, (("input", REQUIRED), ("lower", 1 / 8), ("upper", 1 / 3), ("training", False)), {}, {}),
    "threshold_": (F.threshold_, (("input", REQUIRED), ("threshold", REQUIRED), ("value", REQUIRED)), {}, {}),
    "alpha_dropout": (F.alpha_dropout, (("input", REQUIRED), ("p", REQUIRED), ("train", REQUIRED)),
                      {"train": "training"}, {}),
    "alpha_dropout_": (F.alpha_dropout, (("input", REQUIRED), ("p", REQUIRED), ("train", REQUIRED)),
                       {"train": "training"}, {"inplace": True}),
    "feature_alpha_dropout": (F.feature_alpha_dropout, (("input", REQUIRED), ("p", REQUIRED), ("train", REQUIRED)),
                              {"train": "training"}, {}),
    "feature_alpha_dropout_": (F.feature_alpha_dropout, (("input", REQUIRED), ("p", REQUIRED), ("train", REQUIRED)),
                               {"train": "training"}, {"inplace": True}),
    "dropout_": (F.dropout, (("input", REQUIRED), ("p", REQUIRED), ("train", REQUIRED)), {"train": "training"},
                 {"inplace": True}),
    "constant_pad_nd": (F.pad, (("input", REQUIRED), ("pad", REQUIRED), ("value", 0)), {}, {"mode": "constant"}),
    "instance_norm": (F.instance_norm, (
        ("input", REQUIRED), ("weight", REQUIRED), ("bias", REQUIRED), ("running_mean", REQUIRED),
        ("running_var", REQUIRED), ("use_input_stats", REQUIRED), ("momentum", REQUIRED), ("eps", REQUIRED),
        ("cudnn_enabled", REQUIRED)), {"cudnn_enabled": None}, {}),
    "cosine_embedding_loss": (F.cosine_embedding_loss, (
        ("input1", REQUIRED), ("input2", REQUIRED), ("target", REQUIRED), ("margin", 0.0), ("reduction", 0)), {}, {}),
    "hinge_embedding_loss": (F.hinge_embedding_loss, (
        ("input", REQUIRED), ("target", REQUIRED), ("margin", 1.0), ("reduction", 0)), {}, {}),
    "kl_div": (_kl_div, (("input", REQUIRED), ("target", REQUIRED), ("reduction", 0), ("log_target", False)), {}, {}),
    "margin_ranking_loss": (F.margin_ranking_loss, (
        ("input1", REQUIRED), ("input2", REQUIRED), ("target", REQUIRED), ("margin", 0.0), ("reduction", 0)), {}, {}),
    "poisson_nll_loss": (F.poisson_nll_loss, (
        ("input", REQUIRED), ("target", REQUIRED), ("log_input", REQUIRED), ("full", REQUIRED), ("eps", REQUIRED),
        ("reduction", REQUIRED)), {}, {}),
    "triplet_margin_loss": (F.triplet_margin_loss, (
        ("anchor", REQUIRED), ("positive", REQUIRED), ("negative", REQUIRED), ("margin", 1.0), ("p", 2.0),
        ("eps", 1e-6), ("swap", False), ("reduction", 0)), {}, {}),
    "ctc_loss": (F.ctc_loss, (
        ("log_probs", REQUIRED), ("targets", REQUIRED), ("input_lengths", REQUIRED), ("target_lengths", REQUIRED),
        ("blank", 0), ("reduction", 0), ("zero_infinity", False)), {}, {}),
    "max_pool1d_with_indices": (F.max_pool1d_with_indices, (
        ("input", REQUIRED), ("kernel_size", REQUIRED), ("stride", ()), ("padding", 0), ("dilation", 1),
        ("ceil_mode", False)), {}, {"return_indices": True}),
    "adaptive_max_pool1d": (F.adaptive_max_pool1d, (("input", REQUIRED), ("output_size", REQUIRED)), {},
                            {"return_indices": True}),
}

# Parameters whose ATen spelling the functional form spells otherwise.
_CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "reduction": reduction_name,
    "stride": lambda stride: None if isinstance(stride, Sequence) and not len(stride) else stride,
}


def _alias(name: str, target: Callable, parameters: tuple, renames: dict, fixed: dict) -> Callable:
    signature = inspect.Signature([
        inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD if p != "log_target"
                          else inspect.Parameter.KEYWORD_ONLY, default=default)
        for p, default in parameters])

    def alias(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{name}() {error}") from None
        bound.apply_defaults()
        given = dict(fixed)
        for parameter, value in bound.arguments.items():
            keyword = renames.get(parameter, parameter)
            if keyword is not None:
                given[keyword] = _CONVERSIONS[parameter](value) if parameter in _CONVERSIONS else value
        return target(**given)

    alias.__name__ = alias.__qualname__ = name
    alias.__signature__ = signature
    alias.__doc__ = f"PyTorch's torch.{name}: nn.functional.{target.__name__} with ATen's signature."
    return alias


globals().update({name: _alias(name, *row) for name, row in TABLE.items()})


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """dropout of whole channels: each (sample, channel) of a (N, C, *) input kept (scaled by 1/(1-p)) or zeroed."""
    if not train or p == 0.0:
        return input
    return _masked(input, p, train, False, _channel_shape(input))


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    if not train or p == 0.0:
        return input
    return _masked(input, p, train, True, _channel_shape(input))


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Sequence[int], padding: Sequence[int],
                dilation: Sequence[int], transposed: bool, output_padding: Sequence[int], groups: int) -> Tensor:
    """The convolution (or its transpose) of as many spatial dims as the weight has beyond two."""
    if autocast_state.get() is not None:
        return autocast_call(
            convolution, "convolution", input, weight, bias, stride, padding, dilation, transposed, output_padding,
            groups
        )
    dims = weight.ndim - 2
    if dims not in (1, 2, 3):
        raise RuntimeError(f"Expected {dims + 2}D (unbatched) or {dims + 3}D (batched) input to convolution, but got "
                           f"input of size: {list(input.shape)}")
    if transposed:
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[dims - 1]
        return conv(input, weight, bias, tuple(stride), tuple(padding), tuple(output_padding), groups, tuple(dilation))
    conv = (F.conv1d, F.conv2d, F.conv3d)[dims - 1]
    return conv(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """A 1-d convolution of a (time, batch, channels) input by a (width, in, out) weight: conv1d on the
    transposed layouts."""
    if autocast_state.get() is not None:
        return autocast_call(conv_tbc, "conv_tbc", input, weight, bias, pad)
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def _cell(step: Callable, input: Tensor, hx: tuple, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
          b_hh: Tensor | None) -> tuple:
    return step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, None)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """tanh(input w_ih^T + b_ih + hx w_hh^T + b_hh)."""
    if autocast_state.get() is not None:
        return autocast_call(rnn_tanh_cell, "rnn_tanh_cell", input, hx, w_ih, w_hh, b_ih, b_hh)
    return _cell(_tanh_step, input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(rnn_relu_cell, "rnn_relu_cell", input, hx, w_ih, w_hh, b_ih, b_hh)
    return _cell(_relu_step, input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def lstm_cell(input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """One LSTM step from hx = (h, c): (h', c'), the gates i, f, g, o in the weights' row blocks."""
    if autocast_state.get() is not None:
        return autocast_call(lstm_cell, "lstm_cell", input, hx, w_ih, w_hh, b_ih, b_hh)
    if len(hx) != 2:
        raise RuntimeError(f"lstm_cell: Expected hx to hold 2 tensors, got {len(hx)}")
    return tuple(_cell(_lstm_step, input, tuple(hx), w_ih, w_hh, b_ih, b_hh))


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    if autocast_state.get() is not None:
        return autocast_call(gru_cell, "gru_cell", input, hx, w_ih, w_hh, b_ih, b_hh)
    return _cell(_gru_step, input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """Scale each row of `input` (an embedding weight) that `indices` names and whose norm is over max_norm down
    to it, in place, outside autograd."""
    renorm_rows_(input, indices, max_norm, norm_type)
    return input


def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor, scale_grad_by_freq: bool = False, mode: int = 0,
                  sparse: bool = False, per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """F.embedding_bag (mode 0 sum, 1 mean, 2 max) with ATen's other outputs: each index's bag (offset2bag; PyTorch's
    cpu kernel leaves it empty on its fast sum path, here it is always filled), each bag's size without padding_idx
    (zeros for sum), and for max the index chosen per bag and column (0 for an empty bag; else the bag sizes)."""
    output = F.embedding_bag(indices, weight, offsets, None, 2, scale_grad_by_freq, ("sum", "mean", "max")[mode],
                             sparse, per_sample_weights, include_last_offset, padding_idx)
    device = weight._device
    flat = host_array(indices._data).reshape(-1)
    starts = host_array(offsets._data).astype(np.int64)
    bags = len(starts) - 1 if include_last_offset else len(starts)
    bounds = np.append(starts[:bags], len(flat) if not include_last_offset else starts[bags])
    kept = flat != padding_idx if padding_idx is not None else np.ones(len(flat), bool)
    offset2bag = np.repeat(np.arange(bags), np.diff(bounds)) if len(flat) else np.zeros(0, np.int64)
    sizes = np.array([kept[bounds[b]:bounds[b + 1]].sum() for b in range(bags)], np.int64)

    def wrap(values: np.ndarray) -> Tensor:
        return Tensor(device.asarray(values.astype(int64)), device=device)

    if mode == 0:
        return output, wrap(offset2bag), wrap(np.zeros(bags, np.int64)), wrap(np.zeros(bags, np.int64))
    if mode == 1:
        return output, wrap(offset2bag), wrap(sizes), wrap(sizes)
    rows = host_array(weight._data)
    chosen = np.zeros((bags, weight.shape[1]), np.int64)
    for b in range(bags):
        members = flat[bounds[b]:bounds[b + 1]][kept[bounds[b]:bounds[b + 1]]]
        if len(members):
            chosen[b] = members[np.argmax(rows[members], axis=0)]
    return output, wrap(offset2bag), wrap(sizes), wrap(chosen)


__all__ = [*TABLE, "conv_tbc", "convolution", "embedding_bag", "embedding_renorm_", "feature_dropout",
           "feature_dropout_", "gru_cell", "lstm_cell", "rnn_relu_cell", "rnn_tanh_cell"]
