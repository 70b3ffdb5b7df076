"""PyTorch's checks on the states given to the recurrent layers and cells (actorgrad.nn.recurrent), apart from
the Modules so that these read as one list of what a caller can get wrong."""

from __future__ import annotations

from typing import Any

from actorgrad.tensor import Tensor


def _check_cell_hidden(input: Tensor, hx: Tensor, hidden_size: int, index: int) -> None:
    if input.size(0) != hx.size(0):
        raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{index} batch size {hx.size(0)}")
    if hx.size(1) != hidden_size:
        raise RuntimeError(f"hidden{index} has inconsistent hidden_size: got {hx.size(1)}, expected {hidden_size}")


def _lstm_states(hx: Any, op: str) -> tuple[Tensor, ...] | None:
    """An LSTM's `hx` as a tuple (h, c), or None; `op` ('lstm' or 'lstm_cell') names it in PyTorch's errors. A
    cell refuses a lone Tensor, as PyTorch's; a layer takes one as the pair of its first two rows, as PyTorch's."""
    if hx is None:
        return None
    if op == "lstm_cell" and isinstance(hx, Tensor):
        raise TypeError("lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, not Tensor")
    states = tuple(hx)
    if len(states) != 2:
        raise RuntimeError(f"{op} expects two hidden states")
    return states
