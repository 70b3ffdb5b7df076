"""The top-level recurrent functions `torch.rnn_tanh`, `rnn_relu`, `lstm` and `gru` over padded input: the
stacked layers of nn.RNN, nn.LSTM and nn.GRU run with weights given as one flat list, in all_weights' order
(per layer and direction: w_ih, w_hh, then b_ih, b_hh with `has_biases`, then w_hr for an LSTM whose hidden
state is narrower than its cell state). They run RNNBase's own layer loop, so results and gradients are the
modules'. (PyTorch's packed-sequence overloads, which take `batch_sizes`, are left out.)"""

from __future__ import annotations

from collections.abc import Sequence

from actorgrad.nn.recurrent import RNNBase
from actorgrad.tensor import Tensor

__all__ = ["gru", "lstm", "rnn_relu", "rnn_tanh"]


class _StackSettings:
    """What RNNBase's layer loop reads of its module, for weights that belong to no module."""

    _layers = RNNBase._layers
    _direction = RNNBase._direction

    def __init__(self, mode: str, has_biases: bool, num_layers: int, dropout: float, train: bool,
                 bidirectional: bool, proj_size: int) -> None:
        self.mode, self.bias, self.num_layers, self.dropout = mode, has_biases, num_layers, dropout
        self.training, self.bidirectional, self.proj_size = train, bidirectional, proj_size


def _stacked(mode: str, input: Tensor, hx: tuple[Tensor, ...], params: Sequence[Tensor], has_biases: bool,
             num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool,
             projected: bool = False) -> tuple[Tensor, ...]:
    """(output, the final states) of the layers, after PyTorch's checks of the weights and states given."""
    per_layer = (4 if has_biases else 2) + projected
    if len(params) % per_layer:
        raise RuntimeError("got an incorrect number of RNN parameters")
    layers = num_layers * (2 if bidirectional else 1)
    if hx[0].size(0) != layers:
        raise RuntimeError("Expected more hidden states in stacked_rnn")
    if len(params) != layers * per_layer:
        raise RuntimeError("Expected more weights in stacked_rnn")
    weights = [list(params[i:i + per_layer]) for i in range(0, len(params), per_layer)]
    settings = _StackSettings(mode, has_biases, num_layers, dropout, train, bidirectional, int(projected))
    output, final = settings._layers(input.transpose(0, 1) if batch_first else input, hx, weights, None)
    return (output.transpose(0, 1) if batch_first else output, *final)


def rnn_tanh(input: Tensor, hx: Tensor, params: Sequence[Tensor], has_biases: bool, num_layers: int,
             dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> tuple[Tensor, Tensor]:
    return _stacked("RNN_TANH", input, (hx,), params, has_biases, num_layers, dropout, train, bidirectional,
                    batch_first)


def rnn_relu(input: Tensor, hx: Tensor, params: Sequence[Tensor], has_biases: bool, num_layers: int,
             dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> tuple[Tensor, Tensor]:
    return _stacked("RNN_RELU", input, (hx,), params, has_biases, num_layers, dropout, train, bidirectional,
                    batch_first)


def gru(input: Tensor, hx: Tensor, params: Sequence[Tensor], has_biases: bool, num_layers: int, dropout: float,
        train: bool, bidirectional: bool, batch_first: bool) -> tuple[Tensor, Tensor]:
    return _stacked("GRU", input, (hx,), params, has_biases, num_layers, dropout, train, bidirectional, batch_first)


def lstm(input: Tensor, hx: Sequence[Tensor], params: Sequence[Tensor], has_biases: bool, num_layers: int,
         dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> tuple[Tensor, Tensor, Tensor]:
    """`hx` is (h, c); an h narrower than c means projections (w_hr among the weights), as in PyTorch."""
    if len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    return _stacked("LSTM", input, tuple(hx), params, has_biases, num_layers, dropout, train, bidirectional,
                    batch_first, projected=hx[0].size(2) != hx[1].size(2))
