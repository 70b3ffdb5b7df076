"""The recurrences behind the recurrent layers: one time step of each mode (tanh or relu RNN, LSTM, GRU) and
the loop of a step over a sequence, padded or packed. Apart from the Modules (actorgrad.nn.recurrent), which
hold the parameters and PyTorch's checks, because torch's top-level cell functions (rnn_tanh_cell, lstm_cell ...
in actorgrad.functional_aliases) run the same steps on weights passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from actorgrad.amp.autocast import POLICIES, autocast_call, autocast_state
from actorgrad.nn import functional as F
from actorgrad.ops.joining import cat
from actorgrad.tensor import Tensor

State = tuple[Tensor, ...]  # (h,) for RNN and GRU, (h, c) for LSTM


# -- one time step: `gates_x` is the input's projection x @ weight_ih.T + bias_ih --------------------------------
def _tanh_step(gates_x: Tensor, state: State, w_hh: Tensor, b_hh: Tensor | None, w_hr: Tensor | None) -> State:
    return ((gates_x + F.linear(state[0], w_hh, b_hh)).tanh(),)


def _relu_step(gates_x: Tensor, state: State, w_hh: Tensor, b_hh: Tensor | None, w_hr: Tensor | None) -> State:
    return ((gates_x + F.linear(state[0], w_hh, b_hh)).relu(),)


def _lstm_step(gates_x: Tensor, state: State, w_hh: Tensor, b_hh: Tensor | None, w_hr: Tensor | None) -> State:
    h, c = state
    i, f, g, o = (gates_x + F.linear(h, w_hh, b_hh)).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    return (h if w_hr is None else F.linear(h, w_hr)), c


def _gru_step(gates_x: Tensor, state: State, w_hh: Tensor, b_hh: Tensor | None, w_hr: Tensor | None) -> State:
    h = state[0]
    x_r, x_z, x_n = gates_x.chunk(3, 1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, 1)  # b_hn stays inside r * (...), as PyTorch's
    r = (x_r + h_r).sigmoid()
    z = (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return ((h - n) * z + n,)  # (1 - z) * n + z * h, in PyTorch's order of operations


# PyTorch's cell op for each mode; CUDA autocast lists them, and casts its cuDNN sequence layers the same way.
CELL_OPS = {"RNN_TANH": "rnn_tanh_cell", "RNN_RELU": "rnn_relu_cell", "LSTM": "lstm_cell", "GRU": "gru_cell"}


def casts_whole(op: str, input: Tensor) -> bool:
    """Whether autocast casts a recurrent op's input, states and weights together (it lists `op` for the input's
    device type) rather than leaving the casts to the linear maps inside it."""
    return autocast_state.get() is not None and op in POLICIES.get(input._device.type, ())


def cell_step(op: str, step: Callable[..., State], input: Tensor, state: State, w_ih: Tensor, w_hh: Tensor,
              b_ih: Tensor | None, b_hh: Tensor | None) -> State:
    """One step of a cell Module as PyTorch's cell op `op` (rnn_tanh_cell, lstm_cell, gru_cell): where autocast
    lists that op (CUDA) the states are cast with the input and weights, so they come out in autocast's dtype;
    elsewhere (CPU) only the linear maps inside cast, and a state keeps its dtype where it meets theirs."""
    if casts_whole(op, input):
        return autocast_call(cell_step, op, op, step, input, state, w_ih, w_hh, b_ih, b_hh)
    return step(F.linear(input, w_ih, b_ih), state, w_hh, b_hh, None)


# mode: (gates per hidden unit, step, the names of its states in PyTorch's hidden-size errors)
_MODES: dict[str, tuple[int, Callable[..., State], tuple[str, ...]]] = {
    "RNN_TANH": (1, _tanh_step, ("hidden",)),
    "RNN_RELU": (1, _relu_step, ("hidden",)),
    "LSTM": (4, _lstm_step, ("hidden[0]", "hidden[1]")),
    "GRU": (3, _gru_step, ("hidden",)),
}


def _run_steps(step: Callable[..., State], steps: Sequence[Tensor], initial: State, w_hh: Tensor,
               b_hh: Tensor | None, w_hr: Tensor | None, reverse: bool) -> tuple[list[Tensor], State]:
    """`step` over each time step's input projection in `steps`, first to last or, with `reverse`, last to first;
    returns the outputs in time order and the final state. In a packed batch (rows longest first) a step has
    fewer rows once sequences end: going forward, a sequence's state is final at the step it drops out; going
    backward, it joins from its initial state at its own last step. A padded batch keeps all its rows."""
    held = steps[-1].size(0) if reverse else initial[0].size(0)
    state = initial if held == initial[0].size(0) else tuple(h[:held] for h in initial)
    finished: list[State] = []  # the states of the sequences that ended, the last ones first
    outputs = []
    for gates in reversed(steps) if reverse else steps:
        rows = gates.size(0)
        if rows < held:
            finished.append(tuple(s[rows:] for s in state))
            state = tuple(s[:rows] for s in state)
        elif rows > held:
            state = tuple(cat([s, h[held:rows]]) for s, h in zip(state, initial))
        held = rows
        state = step(gates, state, w_hh, b_hh, w_hr)
        outputs.append(state[0])
    if reverse:
        outputs.reverse()
    if finished:
        state = tuple(cat([s, *(ended[k] for ended in reversed(finished))]) for k, s in enumerate(state))
    return outputs, state
