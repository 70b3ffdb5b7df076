"""The recurrent cells in PyTorch's shape: RNNCell, LSTMCell and GRUCell, one step each, and the recurrent
init the sequence layers (actorgrad.nn.recurrent) share.

Each cell is a composite of recorded ops, so its gradients come from theirs; the parameters, their names, shapes,
order and initialisation, the gate order (LSTM i, f, g, o; GRU r, z, n) and the errors are PyTorch's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from actorgrad.creation import empty, zeros
from actorgrad.nn import init
from actorgrad.nn.module import Module
from actorgrad.nn.parameter import Parameter
from actorgrad.nn.recurrent_checks import _check_cell_hidden, _lstm_states
from actorgrad.nn.recurrent_steps import State, _gru_step, _lstm_step, _relu_step, _tanh_step, cell_step
from actorgrad.tensor import Tensor

__all__ = ["GRUCell", "LSTMCell", "RNNCell", "RNNCellBase"]


def _init_uniform(module: Module, hidden_size: int) -> None:
    """PyTorch's recurrent init: every parameter ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in order (all
    zeros for a cell of hidden_size 0, which PyTorch allows)."""
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    for weight in module.parameters():
        init.uniform_(weight, -bound, bound)


class RNNCellBase(Module):
    """The parameters of one recurrent cell: weight_ih (gates * hidden, input), weight_hh (gates * hidden,
    hidden) and, with `bias`, bias_ih and bias_hh."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, **factory))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, **factory))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **factory))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init_uniform(self, self.hidden_size)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text

    def _run(self, input: Tensor, hx: State | None, step: Callable[..., State] | None, op: str) -> State:
        """One step on a batched or unbatched `input`, with PyTorch's checks in its order; `hx` None is a zero
        state, `step` None an RNNCell's unknown nonlinearity; `op` is PyTorch's cell op, which autocast reads."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for index, h in enumerate(hx or ()):
            if h.dim() not in (1, 2):
                what = f"hx[{index}]" if len(hx) == 2 else "hidden"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {h.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if step is None:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        if hx is None:
            hx = (zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device),) * (
                2 if step is _lstm_step else 1)
        elif not batched:
            hx = tuple(h.unsqueeze(0) for h in hx)
        for index, h in enumerate(hx):
            _check_cell_hidden(input, h, self.hidden_size, index)
        out = cell_step(op, step, input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else tuple(h.squeeze(0) for h in out)


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh), or relu with `nonlinearity='relu'`."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        step = {"tanh": _tanh_step, "relu": _relu_step}.get(self.nonlinearity)  # refused in forward, as PyTorch's
        return self._run(input, None if hx is None else (hx,), step, f"rnn_{self.nonlinearity}_cell")[0]


class LSTMCell(RNNCellBase):
    """One LSTM step; the rows of weight_ih / weight_hh are the gates i, f, g, o. Returns (h', c')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        return self._run(input, _lstm_states(hx, "lstm_cell"), _lstm_step, "lstm_cell")


class GRUCell(RNNCellBase):
    """One GRU step; the rows of weight_ih / weight_hh are the gates r, z, n."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._run(input, None if hx is None else (hx,), _gru_step, "gru_cell")[0]
