"""Recurrent layers in PyTorch's shape: the sequence layers RNN, LSTM and GRU, and here too (as PyTorch's
torch.nn.modules.rnn holds them) the cells RNNCell, LSTMCell and GRUCell of actorgrad.nn.recurrent_cells.

Each is a composite of recorded ops (linear, sigmoid, tanh, relu, chunk, stack), so its gradients come from
theirs. The parameters, their names, shapes, order and initialisation, the gate order (LSTM i, f, g, o; GRU
r, z, n) and the errors are PyTorch's, so a PyTorch state dict loads. As PyTorch does on the CPU, a sequence
layer projects the whole input sequence through `weight_ih` at once and then steps through time. A sequence layer
also takes a PackedSequence, as PyTorch's do, and steps each time on the rows of the sequences still running.
The steps and the loop over time are in actorgrad.nn.recurrent_steps, the cells in actorgrad.nn.recurrent_cells.
"""

from __future__ import annotations

import warnings
from typing import Any

from actorgrad.amp.autocast import autocast_call
from actorgrad.creation import empty, zeros
from actorgrad.nn import functional as F
from actorgrad.nn.module import Module
from actorgrad.nn.parameter import Parameter
from actorgrad.nn.recurrent_cells import GRUCell, LSTMCell, RNNCell, _init_uniform
from actorgrad.nn.recurrent_checks import _lstm_states
from actorgrad.nn.recurrent_steps import (
    _MODES,
    CELL_OPS,
    State,
    _run_steps,
    casts_whole,
)
from actorgrad.nn.utils.rnn import PackedSequence
from actorgrad.ops.indexing import index_select
from actorgrad.ops.joining import cat, split, stack
from actorgrad.tensor import Tensor

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNCell"]


# -- sequence layers -----------------------------------------------------------------------------------------
class RNNBase(Module):
    """A stack of `num_layers` recurrent layers over (seq, batch, feature) inputs ((batch, seq, feature) with
    `batch_first`), each run forward and, with `bidirectional`, backward too, the two outputs concatenated.

    Layer l, direction d (suffix '_reverse') holds weight_ih_l{l}, weight_hh_l{l}, bias_ih_l{l}, bias_hh_l{l}
    and, for an LSTM with `proj_size`, weight_hr_l{l}. In training, dropout is applied to every layer's output
    but the last.
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if not isinstance(dropout, int | float) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=3)
        for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                                  ("input_size", input_size, int), ("hidden_size", hidden_size, int)):
            if not isinstance(value, kind):
                raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        factory = {"device": device, "dtype": dtype}
        gate_size = _MODES[mode][0] * hidden_size
        out_size = proj_size or hidden_size
        directions = 2 if bidirectional else 1
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            layer_input_size = input_size if layer == 0 else out_size * directions
            for suffix in ("", "_reverse")[:directions]:
                shapes = {"weight_ih": (gate_size, layer_input_size), "weight_hh": (gate_size, out_size)}
                if bias:
                    shapes |= {"bias_ih": (gate_size,), "bias_hh": (gate_size,)}
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                names = [f"{kind}_l{layer}{suffix}" for kind in shapes]
                for name, shape in zip(names, shapes.values(), strict=True):
                    setattr(self, name, Parameter(empty(*shape, **factory)))
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init_uniform(self, self.hidden_size)

    def flatten_parameters(self) -> None:
        """A no-op kept for PyTorch code that calls it: only cuDNN wants the weights in one buffer."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """Each (layer, direction)'s parameters, in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    @property
    def _flat_weights_names(self) -> list[str]:
        """The parameter names of all_weights in one list, for code (weight drop, parametrizations) that reads it."""
        return [name for names in self._all_weights for name in names]

    @property
    def _flat_weights(self) -> list[Tensor | None]:
        """The tensors named by _flat_weights_names now (None for one removed), as PyTorch's."""
        return [getattr(self, name, None) for name in self._flat_weights_names]

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("proj_size", 0), ("num_layers", 1), ("bias", True), ("batch_first", False),
                              ("dropout", 0), ("bidirectional", False)):
            if getattr(self, name) != default:
                text += f", {name}={getattr(self, name)}"
        return text

    def _run_sequence(self, input: Tensor | PackedSequence, hx: State | None) -> tuple[Tensor | PackedSequence, State]:
        """The layers over a batched or unbatched `input` from `hx` (zero states where None), with PyTorch's
        checks; returns the output and the final states, shaped as the input and `hx` were."""
        if isinstance(input, PackedSequence):
            return self._run_packed(input, hx)
        if input.dim() not in (2, 3):
            what = f"{input.dim()}D tensor" if self.mode.startswith("RNN") else f"{input.dim()}D"
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {what} instead")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(1)  # (seq, 1, feature) whether or not batch_first
        elif self.batch_first:
            input = input.transpose(0, 1)
        if hx is not None:
            dims = 3 if batched else 2
            if any(h.dim() != dims for h in hx):
                what = "batched 3-D" if batched else "unbatched 2-D"
                if len(hx) == 1:
                    raise RuntimeError(f"For {what} input, hx should also be {dims}-D but got {hx[0].dim()}-D tensor")
                raise RuntimeError(f"For {what} input, hx and cx should also be {dims}-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            if not batched:
                hx = tuple(h.unsqueeze(1) for h in hx)
        self._check_input(input)
        states = self._checked_states(hx, input.size(1), input)  # before the length, as PyTorch checks them
        if input.size(0) == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        output, final = self._cast_layers(input, states)
        if not batched:
            return output.squeeze(1), tuple(h.squeeze(1) for h in final)
        return (output.transpose(0, 1) if self.batch_first else output), final

    def _run_packed(self, input: PackedSequence, hx: State | None) -> tuple[PackedSequence, State]:
        """The layers over a packed batch. `hx` comes in the caller's batch order and the final states, each
        sequence's at its own last step, go back in it, as PyTorch's."""
        data, batch_sizes, sorted_indices, unsorted_indices = input
        if hx is not None and sorted_indices is not None:
            hx = tuple(index_select(h, 1, sorted_indices) for h in hx)
        if data.dim() != 2:
            raise RuntimeError(f"input must have 2 dimensions, got {data.dim()}")
        self._check_input(data)
        sizes = batch_sizes.tolist()
        output, final = self._cast_layers(data, self._checked_states(hx, sizes[0], data), sizes)
        if unsorted_indices is not None:
            final = tuple(index_select(h, 1, unsorted_indices) for h in final)
        return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), final

    def _checked_states(self, hx: State | None, batch: int, input: Tensor) -> State:
        """`hx`, or zero states like `input` where None, checked against PyTorch's expected shapes."""
        state_names = _MODES[self.mode][2]
        layers = self.num_layers * (2 if self.bidirectional else 1)
        sizes = (self.proj_size or self.hidden_size, self.hidden_size)[:len(state_names)]
        expected = [(layers, batch, size) for size in sizes]
        if hx is None:
            return tuple(zeros(*shape, dtype=input.dtype, device=input.device) for shape in expected)
        for h, shape, message in zip(hx, expected, state_names, strict=True):
            if h.size() != shape:
                raise RuntimeError(f"Expected {message} size {shape}, got {list(h.size())}")
        return hx

    def _check_input(self, input: Tensor) -> None:
        given, weights = f"actorgrad.{input.dtype}", f"actorgrad.{self.weight_ih_l0.dtype}"
        if given != weights:
            raise ValueError(f"RNN input dtype ({given}) does not match weight dtype ({weights}). "
                             f"Convert input: input.to({weights}), or convert model: model.to({given})")
        if self.input_size != input.size(-1):
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.size(-1)}"
            )

    def _cast_layers(self, input: Tensor, hx: State, batch_sizes: list[int] | None = None) -> tuple[Tensor, State]:
        """`_layers` with this module's weights. Under CUDA autocast PyTorch's cuDNN layers cast the input, states
        and weights to float16, so the output and final states come out in it (LSTM and GRU too); on the CPU
        only the linear maps inside cast, as in PyTorch's CPU layers."""
        op = CELL_OPS[self.mode]
        if casts_whole(op, input):
            return autocast_call(self._layers, op, input, hx, self.all_weights, batch_sizes)
        return self._layers(input, hx, self.all_weights, batch_sizes)

    def _layers(self, input: Tensor, hx: State, weights: list[list[Tensor]],
                batch_sizes: list[int] | None) -> tuple[Tensor, State]:
        """The layers over a (seq, batch, feature) input, or a packed one's (rows, feature) data and its
        `batch_sizes`, from the initial states `hx`, each of shape (layers * directions, batch, size), with each
        (layer, direction)'s `weights` in all_weights' order; returns the last layer's output and the final
        states."""
        directions = 2 if self.bidirectional else 1
        final: list[State] = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                output, state = self._direction(input, tuple(h[index] for h in hx), weights[index], direction == 1,
                                                batch_sizes)
                outputs.append(output)
                final.append(state)
            input = outputs[0] if directions == 1 else cat(outputs, -1)
            if layer < self.num_layers - 1:
                input = F.dropout(input, self.dropout, self.training)
        return input, tuple(stack([state[k] for state in final]) for k in range(len(hx)))

    def _direction(self, input: Tensor, state: State, weights: list[Tensor], reverse: bool,
                   batch_sizes: list[int] | None) -> tuple[Tensor, State]:
        """One layer in one direction, with its parameters `weights`."""
        b_ih, b_hh = weights[2:4] if self.bias else (None, None)
        w_hr = weights[-1] if self.proj_size else None
        step = _MODES[self.mode][1]
        gates_x = F.linear(input, weights[0], b_ih)  # the whole sequence in one matrix product
        steps = gates_x.unbind(0) if batch_sizes is None else split(gates_x, batch_sizes)
        outputs, state = _run_steps(step, steps, state, weights[1], b_hh, w_hr, reverse)
        return (stack(outputs) if batch_sizes is None else cat(outputs)), state


def _no_proj_size(kwargs: dict[str, Any]) -> None:
    if "proj_size" in kwargs:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")


class RNN(RNNBase):
    """Elman RNN layers: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), or relu. Returns
    (output, h_n)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None, **kwargs: Any) -> None:
        _no_proj_size(kwargs)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(f"RNN_{nonlinearity.upper()}", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype, **kwargs)

    def forward(self, input: Tensor | PackedSequence, hx: Tensor | None = None
                ) -> tuple[Tensor | PackedSequence, Tensor]:
        output, (h_n,) = self._run_sequence(input, None if hx is None else (hx,))
        return output, h_n


class LSTM(RNNBase):
    """LSTM layers (gates i, f, g, o), with `proj_size` projecting h through weight_hr. Returns
    (output, (h_n, c_n))."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)

    def forward(self, input: Tensor | PackedSequence, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor | PackedSequence, tuple[Tensor, Tensor]]:
        output, (h_n, c_n) = self._run_sequence(input, _lstm_states(hx, "lstm"))
        return output, (h_n, c_n)


class GRU(RNNBase):
    """GRU layers (gates r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn))). Returns (output, h_n)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None, **kwargs: Any) -> None:
        _no_proj_size(kwargs)
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype, **kwargs)

    def forward(self, input: Tensor | PackedSequence, hx: Tensor | None = None
                ) -> tuple[Tensor | PackedSequence, Tensor]:
        output, (h_n,) = self._run_sequence(input, None if hx is None else (hx,))
        return output, h_n
