"""Batches of sequences of different lengths, as torch.nn.utils.rnn: pad a list of sequences into one tensor,
pack a padded batch into a PackedSequence (each time step's rows laid end to end, the batch shrinking as
sequences end, longest first) and back.

Every conversion is a recorded pad, stack or index_select of the values, so gradients flow through; the
bookkeeping (lengths, batch sizes, which row goes where) is done in numpy on the host, as PyTorch keeps
`lengths` and `batch_sizes` on the CPU.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from actorgrad.ops.indexing import index_select
from actorgrad.ops.joining import stack
from actorgrad.ops.padding import pad
from actorgrad.ops.sorting import argsort
from actorgrad.tensor import Tensor, float16, float32, float64, int32, int64
from actorgrad.tensor_construction import tensor

__all__ = [
    "PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
    "unpad_sequence", "pack_sequence", "unpack_sequence",
]

UNSORTED_LENGTHS = (
    "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
    "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you do "
    "not need ONNX exportability."
)


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedFields):
    """A packed batch: `data` holds step 0's rows of every sequence, then step 1's of those still running, and
    so on; `batch_sizes[t]` (an int64 CPU tensor) counts the rows of step t. The rows are in order of decreasing
    length; `sorted_indices` maps them to the caller's batch order and `unsorted_indices` back (both None when
    the batch came sorted). Make one with pack_padded_sequence or pack_sequence."""

    def __new__(cls, data: Tensor, batch_sizes: Tensor, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never be created manually. "
                "They should be instantiated by functions like pack_sequence and pack_padded_sequences in "
                "nn.utils.rnn. https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence"
            )
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """`data` converted as Tensor.to converts it; the indices follow it to its device, `batch_sizes` stays
        on the CPU."""
        return self._with_data(self.data.to(*args, **kwargs))

    def cpu(self) -> PackedSequence:
        return self._with_data(self.data.cpu())

    def cuda(self, device: Any = None) -> PackedSequence:
        return self._with_data(self.data.cuda(device))

    def double(self) -> PackedSequence:
        return self.to(dtype=float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=np.dtype(np.int16))

    def char(self) -> PackedSequence:
        return self.to(dtype=np.dtype(np.int8))

    def byte(self) -> PackedSequence:
        return self.to(dtype=np.dtype(np.uint8))

    @property
    def is_cuda(self) -> bool:
        """Whether `data` is on a GPU (`batch_sizes` never is)."""
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()

    def pin_memory(self) -> PackedSequence:
        """Every field in pinned memory, `batch_sizes` too, as PyTorch pins them all."""
        return type(self)(*(None if t is None else t.pin_memory() for t in self))

    def _with_data(self, data: Tensor) -> PackedSequence:
        if data is self.data:
            return self
        sorted_indices, unsorted_indices = (None if t is None else t.to(data.device)
                                            for t in (self.sorted_indices, self.unsorted_indices))
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes `permutation` (None for None)."""
    return None if permutation is None else argsort(permutation)


def _lengths_array(lengths: Tensor | Sequence[int]) -> np.ndarray:
    """`lengths` (a list, or a 1-D CPU tensor of any dtype, made int64 as PyTorch does) as an int64 array."""
    if not isinstance(lengths, Tensor):
        return np.asarray(lengths, dtype=np.int64)
    lengths = lengths.to(dtype=int64)
    if lengths.dim() != 1 or lengths.device.type != "cpu":
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                           f"{lengths.device} Long tensor")
    return lengths.numpy()


def _batch_sizes(lengths: np.ndarray) -> np.ndarray:
    """How many of the sequences, longest first, are running at each step."""
    return (lengths[None, :] > np.arange(lengths[0])[:, None]).sum(1)


def pack_padded_sequence(input: Tensor, lengths: Tensor | Sequence[int], batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded (seq, batch, *) input ((batch, seq, *) with `batch_first`) whose sequence b is
    `lengths[b]` long. With `enforce_sorted` the lengths must be decreasing; else the batch is sorted here and
    the permutation kept in the result."""
    lengths = _lengths_array(lengths)
    sorted_indices = None
    if not enforce_sorted:
        order = np.argsort(-lengths, kind="stable")  # PyTorch's order: equal lengths keep theirs
        lengths = lengths[order]
        sorted_indices = tensor(order, device=input.device)
        input = index_select(input, 0 if batch_first else 1, sorted_indices)
    batch, steps = (input.size(0), input.size(1)) if batch_first else (input.size(1), input.size(0))
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={batch})")
    if lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if np.any(lengths[1:] > lengths[:-1]):
        raise RuntimeError(UNSORTED_LENGTHS)
    if lengths[0] > steps:  # PyTorch packs past the input's end here, a PackedSequence shorter than its batch_sizes
        raise RuntimeError(f"Expected every length to be at most the input's sequence length {steps}, but got "
                           f"{lengths[0]}")
    batch_sizes = _batch_sizes(lengths)
    step, row = np.nonzero(np.arange(batch) < batch_sizes[:, None])  # step by step, each step's rows in order
    flat = row * steps + step if batch_first else step * batch + row
    data = index_select(input.flatten(0, 1), 0, flat)
    return PackedSequence(data, tensor(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Undo pack_padded_sequence: the padded (seq, batch, *) tensor ((batch, seq, *) with `batch_first`), `seq`
    being `total_length` or else the longest length, in the caller's batch order, and the lengths (int64, CPU)."""
    data, batch_sizes, _, unsorted_indices = sequence
    batch_sizes = batch_sizes.numpy()
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    batch = int(batch_sizes[0])
    lengths = _batch_sizes(batch_sizes)  # the same count the other way round: how many steps each row runs
    # Where each (step, row) reads from: its row of `data`, or the padding row appended after the last.
    where = np.full((steps, batch), data.size(0))
    step, row = np.nonzero(np.arange(batch) < batch_sizes[:, None])
    where[step, row] = np.arange(len(step))
    if batch_first:
        where = where.T
    padded = pad(data, (0, 0) * (data.dim() - 1) + (0, 1), value=padding_value)
    output = index_select(padded, 0, where.reshape(-1)).reshape(*where.shape, *data.shape[1:])
    if unsorted_indices is not None:
        output = index_select(output, 0 if batch_first else 1, unsorted_indices)
        lengths = lengths[unsorted_indices.cpu().numpy()]
    return output, tensor(lengths)


def pad_sequence(sequences: Tensor | Iterable[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of shape (length_i, *) into one (longest, batch, *) tensor ((batch, longest, *) with
    `batch_first`), each padded with `padding_value` after its end, or before its start with
    padding_side='left'. The result has the first sequence's dtype."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(
            f"pad_sequence: Expected iterable for input sequences, but got arg of type: {type(sequences)}"
        )
    sequences = sequences.unbind(0) if isinstance(sequences, Tensor) else tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    for index, s in enumerate(sequences):
        if not isinstance(s, Tensor):
            raise TypeError(f"expected Tensor as element {index} in argument 0, but got {type(s).__name__}")
    longest = max(s.size(0) for s in sequences)
    dtype = sequences[0].dtype
    padded = []
    for s in sequences:
        missing = longest - s.size(0)
        widths = (0, missing) if padding_side == "right" else (missing, 0)
        padded.append(pad(s.to(dtype=dtype), (0, 0) * (s.dim() - 1) + widths, value=padding_value))
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Sequence[int],
                   batch_first: bool = False) -> list[Tensor]:
    """Undo pad_sequence: the first `lengths[b]` steps of each sequence b. Unlike PyTorch's, it leaves
    `padded_sequences` as it was (PyTorch transposes it in place when not `batch_first`)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [sequence[:int(length)] for sequence, length in zip(padded_sequences, lengths, strict=True)]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack sequences of shape (length_i, *): pad_sequence, then pack_padded_sequence."""
    lengths = [s.size(0) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Undo pack_sequence: the list of sequences, in the order they were packed."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
