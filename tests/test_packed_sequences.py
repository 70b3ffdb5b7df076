"""nn.utils.rnn (pad_sequence, pack_padded_sequence, pad_packed_sequence and the rest) and the recurrent layers
over a PackedSequence: layouts, round trips, the numpy recurrence (the `numpy_recurrence` fixture) run on each
sequence over its own length, finite differences in float64 and PyTorch's errors."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck
from actorgrad.nn import GRU, LSTM, RNN
from actorgrad.nn.utils.rnn import (
    PackedSequence,
    invert_permutation,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)

GRADCHECK = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}


def steps_by_rows(seq_len, batch, features=1):
    """A (seq, batch, features) tensor whose element [t, b, f] is 100 t + 10 b + f: a packed row names its place."""
    t, b, f = np.meshgrid(np.arange(seq_len), np.arange(batch), np.arange(features), indexing="ij")
    return ag.tensor((100 * t + 10 * b + f).astype(np.float64))


def values(t):
    return t.detach().numpy()


def set_parameters(module, rng) -> None:
    module.load_state_dict({name: rng.standard_normal(p.shape) for name, p in module.state_dict().items()})


def states_of(hidden) -> tuple:
    return hidden if isinstance(hidden, tuple) else (hidden,)


# -- packing and padding ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
def test_packing_lays_each_steps_running_rows_end_to_end(batch_first):
    x = steps_by_rows(4, 3)
    packed = pack_padded_sequence(x.transpose(0, 1) if batch_first else x, [4, 2, 1], batch_first=batch_first)
    assert values(packed.data)[:, 0].tolist() == [0, 10, 20, 100, 110, 200, 300]
    assert packed.batch_sizes.tolist() == [3, 2, 1, 1] and packed.batch_sizes.dtype == ag.int64
    assert packed.sorted_indices is None and packed.unsorted_indices is None


@pytest.mark.parametrize("batch_first", [False, True])
def test_padding_a_packed_batch_gives_back_its_steps_and_pads_the_rest(batch_first):
    x = steps_by_rows(4, 3, 2) + 1  # no zero in the data, so any zero below is padding
    packed = pack_padded_sequence(x.transpose(0, 1) if batch_first else x, [4, 2, 1], batch_first=batch_first)
    padded, lengths = pad_packed_sequence(packed, batch_first=batch_first, padding_value=-1.0, total_length=6)
    if batch_first:
        padded = padded.transpose(0, 1)
    assert padded.shape == (6, 3, 2) and lengths.tolist() == [4, 2, 1] and lengths.dtype == ag.int64
    expected = np.full((6, 3, 2), -1.0)
    for b, length in enumerate([4, 2, 1]):
        expected[:length, b] = values(x)[:length, b]
    np.testing.assert_array_equal(values(padded), expected)
    assert pad_packed_sequence(packed, batch_first=batch_first)[0].shape == ((3, 4, 2) if batch_first else (4, 3, 2))


@pytest.mark.parametrize("batch_first", [False, True])
def test_unsorted_lengths_are_packed_longest_first_and_padded_back_in_the_callers_order(batch_first):
    x = steps_by_rows(5, 4)
    lengths = [2, 5, 2, 3]
    packed = pack_padded_sequence(x.transpose(0, 1) if batch_first else x, lengths, batch_first=batch_first,
                                  enforce_sorted=False)
    assert packed.sorted_indices.tolist() == [1, 3, 0, 2]  # PyTorch's: equal lengths keep their order
    assert packed.unsorted_indices.tolist() == [2, 0, 3, 1]
    assert packed.batch_sizes.tolist() == [4, 4, 2, 1, 1]
    assert values(packed.data)[:, 0].tolist() == [10, 30, 0, 20, 110, 130, 100, 120, 210, 230, 310, 410]
    padded, got_lengths = pad_packed_sequence(packed, batch_first=batch_first)
    assert got_lengths.tolist() == lengths
    mask = np.arange(5)[:, None, None] < np.array(lengths)[None, :, None]
    np.testing.assert_array_equal(values(padded.transpose(0, 1) if batch_first else padded), values(x) * mask)


def test_lengths_may_be_a_cpu_tensor_of_any_integer_or_float_dtype():
    x = steps_by_rows(3, 2)
    for lengths in (ag.tensor([3, 1]), ag.tensor([3, 1], dtype=ag.int32), ag.tensor([3.0, 1.0])):
        assert pack_padded_sequence(x, lengths).batch_sizes.tolist() == [2, 1, 1]


def test_pack_sequence_and_unpack_sequence_round_trip_in_the_given_order():
    sequences = [ag.tensor([[1.0, 2.0]]), ag.tensor([[3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]),
                 ag.tensor([[9.0, 10.0], [11.0, 12.0]])]
    packed = pack_sequence(sequences, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 2, 1] and packed.sorted_indices.tolist() == [1, 2, 0]
    assert values(packed.data)[:, 0].tolist() == [3, 9, 1, 5, 11, 7]
    for got, expected in zip(unpack_sequence(packed), sequences, strict=True):
        np.testing.assert_array_equal(values(got), values(expected))
    with pytest.raises(RuntimeError, match="^`lengths` array must be sorted in decreasing order"):
        pack_sequence(sequences)


def test_pad_sequence_pads_after_or_before_each_sequence():
    sequences = [ag.tensor([1.0, 2.0]), ag.tensor([3.0, 4.0, 5.0]), ag.tensor([6.0])]
    assert pad_sequence(sequences).tolist() == [[1, 3, 6], [2, 4, 0], [0, 5, 0]]
    assert pad_sequence(sequences, batch_first=True, padding_value=-1).tolist() == [
        [1, 2, -1], [3, 4, 5], [6, -1, -1]]
    assert pad_sequence(sequences, batch_first=True, padding_side="left").tolist() == [
        [0, 1, 2], [3, 4, 5], [0, 0, 6]]
    assert pad_sequence(sequences, padding_side="left", padding_value=9).tolist() == [
        [9, 3, 9], [1, 4, 9], [2, 5, 6]]
    assert pad_sequence(ag.arange(6.0).reshape(2, 3)).tolist() == [[0, 3], [1, 4], [2, 5]]  # a tensor: its rows
    assert pad_sequence(iter([ag.ones(1, 2), ag.ones(2, 2)]), batch_first=True).shape == (2, 2, 2)


@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence_cuts_each_sequence_to_its_length_and_leaves_the_input_alone(batch_first):
    sequences = [ag.tensor([[1.0], [2.0]]), ag.tensor([[3.0], [4.0], [5.0]])]
    padded = pad_sequence(sequences, batch_first=batch_first)
    for got, expected in zip(unpad_sequence(padded, ag.tensor([2, 3]), batch_first=batch_first), sequences,
                             strict=True):
        assert got.tolist() == expected.tolist()
    assert padded.shape == ((2, 3, 1) if batch_first else (3, 2, 1))  # PyTorch transposes it in place


def test_packed_sequence_is_a_named_tuple_with_its_inverse_permutation_and_conversions():
    data, batch_sizes = ag.tensor([[1.0], [2.0], [3.0]]), ag.tensor([2, 1])
    packed = PackedSequence(data, batch_sizes, ag.tensor([1, 0]))
    assert packed.unsorted_indices.tolist() == [1, 0] and packed._fields == (
        "data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert invert_permutation(ag.tensor([2, 0, 3, 1])).tolist() == [1, 3, 0, 2] and invert_permutation(None) is None
    assert packed.float() is packed and packed.to(ag.float32) is packed and packed.cpu() is packed
    double = packed.double()
    assert isinstance(double, PackedSequence) and double.data.dtype == ag.float64
    assert double.batch_sizes is batch_sizes and double.sorted_indices.tolist() == [1, 0]
    assert repr(PackedSequence(data, batch_sizes)).startswith("PackedSequence(data=tensor(")


# -- gradients through packing and padding ----------------------------------------------------------------------
def test_packing_and_padding_pass_gradients_through():
    rng = np.random.default_rng(3)
    x = ag.tensor(rng.standard_normal((4, 3, 2)), requires_grad=True)

    def round_trip(x):
        packed = pack_padded_sequence(x, [1, 3, 2, 3], batch_first=True, enforce_sorted=False)
        return packed.data, pad_packed_sequence(packed, padding_value=0.5, total_length=5)[0]

    assert gradcheck(round_trip, [x], **GRADCHECK)
    sequences = [ag.tensor(rng.standard_normal((n, 2)), requires_grad=True) for n in (2, 4, 1)]
    assert gradcheck(lambda *s: pad_sequence(s, padding_side="left", padding_value=-2.0), sequences, **GRADCHECK)
    assert gradcheck(lambda *s: unpack_sequence(pack_sequence(s, enforce_sorted=False)), sequences, **GRADCHECK)


# -- the recurrent layers over a packed batch --------------------------------------------------------------------
def packed_reference(recurrence, mode, params, x, lengths, num_layers, directions):
    """The packed output data and final states from the numpy recurrence run on each sequence alone, over its own
    length from zero states: x is (seq, batch, features), the states come back in the caller's order."""
    zeros = [np.zeros((num_layers * directions, 1, 2))] * (2 if mode == "LSTM" else 1)  # hidden size 2
    runs = [recurrence.layers(mode, params, x[:length, b:b + 1], zeros, num_layers, directions)
            for b, length in enumerate(lengths)]
    longest_first = np.argsort(-np.array(lengths), kind="stable")
    data = [runs[b][0][t, 0] for t in range(max(lengths)) for b in longest_first if lengths[b] > t]
    states = [np.concatenate([finals[k] for _, finals in runs], 1) for k in range(len(runs[0][1]))]
    return np.array(data), states


@pytest.mark.parametrize(("make", "mode", "batch_first", "seed", "lengths"), ids=["LSTM", "GRU"], argvalues=[
    (lambda batch_first: LSTM(2, 2, bidirectional=True, batch_first=batch_first, dtype=ag.float64), "LSTM", False,
     11, [2, 3, 1]),
    (lambda batch_first: GRU(2, 2, num_layers=2, batch_first=batch_first, dtype=ag.float64), "GRU", True, 12,
     [1, 3, 2]),
])
def test_layers_over_a_packed_batch_match_the_numpy_recurrence_run_on_each_sequence(
        make, mode, batch_first, seed, lengths, numpy_recurrence, numpy_gradient):
    """Unsorted lengths: the packed output data, the final states (in the caller's order) and the gradient of
    sum(output.data * w) + the sum of the final states with respect to the padded input, against the numpy
    recurrence over each sequence's own steps and that numpy loss's central differences (zero at padding)."""
    rng = np.random.default_rng(seed)
    module = make(batch_first)
    set_parameters(module, rng)
    x_values = rng.standard_normal((3, 3, 2))
    x = ag.tensor(x_values, requires_grad=True)
    packed = pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=False)
    output, hidden = module(packed)
    assert isinstance(output, PackedSequence) and output.batch_sizes is packed.batch_sizes
    assert output.sorted_indices is packed.sorted_indices and output.unsorted_indices is packed.unsorted_indices
    w = rng.standard_normal(output.data.shape)
    ((output.data * ag.tensor(w)).sum() + sum(s.sum() for s in states_of(hidden))).backward()

    params = {name: p.detach().numpy().copy() for name, p in module.named_parameters()}

    def reference(x_values):
        seq_first = x_values.swapaxes(0, 1) if batch_first else x_values
        return packed_reference(numpy_recurrence, mode, params, seq_first, lengths, module.num_layers,
                                1 + module.bidirectional)

    def numpy_loss(x_values):
        data, states = reference(x_values)
        return (data * w).sum() + sum(s.sum() for s in states)

    data, states = reference(x_values)
    np.testing.assert_allclose(values(output.data), data, rtol=1e-10, atol=1e-12)
    for state, expected_state in zip(states_of(hidden), states, strict=True):
        np.testing.assert_allclose(values(state), expected_state, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), numpy_gradient(numpy_loss, x_values), rtol=1e-6, atol=1e-8)


LAYERS = {"RNN": (RNN, {}), "LSTM": (LSTM, {"proj_size": 2}), "GRU": (GRU, {})}


@pytest.mark.parametrize("mode", list(LAYERS))
def test_each_packed_sequence_runs_as_if_alone_from_its_own_initial_state(mode):
    """Two bidirectional layers: a sequence's packed output and final states are those of the layer run on that
    sequence alone, unbatched, from its column of `hx` (given in the caller's order)."""
    cls, extra = LAYERS[mode]
    module = cls(2, 3, num_layers=2, bidirectional=True, dtype=ag.float64, **extra)
    rng = np.random.default_rng(4)
    set_parameters(module, rng)
    lengths = [2, 4, 1, 4, 3]
    x = ag.tensor(rng.standard_normal((4, 5, 2)))
    sizes = [2, 3] if mode == "LSTM" else [3]
    hx = tuple(ag.tensor(rng.standard_normal((4, 5, size))) for size in sizes)
    output, hidden = module(pack_padded_sequence(x, lengths, enforce_sorted=False), hx if mode == "LSTM" else hx[0])
    for b, (sequence, length) in enumerate(zip(unpack_sequence(output), lengths, strict=True)):
        alone, alone_hidden = module(x[:length, b], tuple(h[:, b] for h in hx) if mode == "LSTM" else hx[0][:, b])
        np.testing.assert_allclose(values(sequence), values(alone), rtol=1e-12, atol=1e-14)
        for state, alone_state in zip(states_of(hidden), states_of(alone_hidden), strict=True):
            np.testing.assert_allclose(values(state[:, b]), values(alone_state), rtol=1e-12, atol=1e-14)


def test_gradients_flow_from_padded_input_through_a_packed_lstm_to_padded_output():
    rng = np.random.default_rng(2)
    module = LSTM(2, 2, bidirectional=True, dtype=ag.float64)
    set_parameters(module, rng)
    names = [name for name, _ in module.named_parameters()]
    x = ag.tensor(rng.standard_normal((3, 3, 2)), requires_grad=True)
    states = [ag.tensor(rng.standard_normal((2, 3, 2)), requires_grad=True) for _ in range(2)]

    def run(x, h0, c0, *params):
        module._parameters.update(zip(names, params))  # the perturbed copies gradcheck passes in
        packed = pack_padded_sequence(x, [2, 3, 1], enforce_sorted=False)
        output, (h_n, c_n) = module(packed, (h0, c0))
        return pad_packed_sequence(output, total_length=4)[0], h_n, c_n

    assert gradcheck(run, [x, *states, *module.parameters()], **GRADCHECK)


def test_the_padded_path_is_unchanged_by_packing_support():
    module = GRU(2, 3, dtype=ag.float64)
    set_parameters(module, np.random.default_rng(1))
    x = ag.tensor(np.random.default_rng(2).standard_normal((3, 2, 2)))
    padded_output, padded_h = module(x)
    packed_output, packed_h = module(pack_padded_sequence(x, [3, 3]))
    assert padded_output.grad_fn.name() == "StackBackward0"
    np.testing.assert_array_equal(values(packed_output.data), values(padded_output.reshape(6, 3)))
    np.testing.assert_array_equal(values(packed_h), values(padded_h))


# -- errors -------------------------------------------------------------------------------------------------------
X = ag.zeros(4, 3, 2)
PACKED = pack_padded_sequence(X, [4, 2, 1])
UNSORTED = (
    "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
    "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you do "
    "not need ONNX exportability."
)
NOT_POSITIVE = "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0"
ERRORS = [
    (lambda: pack_padded_sequence(X, [3, 4, 2]), RuntimeError, UNSORTED),
    (lambda: pack_padded_sequence(X, [3, 0, 2]), RuntimeError, UNSORTED),
    (lambda: pack_padded_sequence(X, [4, 3, -1]), RuntimeError, NOT_POSITIVE),
    (lambda: pack_padded_sequence(X, [3, 0, 2], enforce_sorted=False), RuntimeError, NOT_POSITIVE),
    (lambda: pack_padded_sequence(X, [3, 2]), RuntimeError,
     "Expected `len(lengths)` to be equal to batch_size, but got 2 (batch_size=3)"),
    (lambda: pack_padded_sequence(X, ag.tensor([[3], [2], [1]])), RuntimeError,
     "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu Long tensor"),
    (lambda: pack_padded_sequence(ag.zeros(0, 3), []), RuntimeError, "Cannot pack empty tensors."),
    (lambda: pack_padded_sequence(X, [5, 2, 1]), RuntimeError,
     "Expected every length to be at most the input's sequence length 4, but got 5"),
    (lambda: pad_packed_sequence(PACKED, total_length=3), ValueError,
     "Expected total_length to be at least the length of the longest sequence in input, but got total_length=3 "
     "and max sequence length being 4"),
    (lambda: pad_sequence([]), RuntimeError, "received an empty list of sequences"),
    (lambda: pad_sequence(3), RuntimeError,
     "pad_sequence: Expected iterable for input sequences, but got arg of type: <class 'int'>"),
    (lambda: pad_sequence([X], padding_side="middle"), RuntimeError,
     "Expected padding_side to be one of left or right, but got middle."),
    (lambda: GRU(2, 3)(PACKED, ag.zeros(1, 2, 3)), RuntimeError, "Expected hidden size (1, 3, 3), got [1, 2, 3]"),
    (lambda: LSTM(2, 3)(PACKED, (ag.zeros(1, 3, 3), ag.zeros(1, 3, 4))), RuntimeError,
     "Expected hidden[1] size (1, 3, 3), got [1, 3, 4]"),
    (lambda: RNN(2, 3)(PackedSequence(ag.zeros(7, 1, 2), PACKED.batch_sizes)), RuntimeError,
     "input must have 2 dimensions, got 3"),
    (lambda: GRU(3, 3)(PACKED), RuntimeError, "input.size(-1) must be equal to input_size. Expected 3, got 2"),
]


@pytest.mark.parametrize(("make", "error", "message"), ERRORS)
def test_bad_input_gets_pytorchs_error(make, error, message):
    with pytest.raises(error) as caught:
        make()
    assert str(caught.value) == message


# -- cuda ---------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_a_packed_gru_gives_the_cpus_values_and_gradients_on_cuda():
    pytest.importorskip("cupy")
    rng = np.random.default_rng(7)
    x_values = rng.standard_normal((4, 3, 2))
    h0_values = rng.standard_normal((2, 3, 3))
    results = []
    for device in (None, ag.device("cuda:0")):
        module = GRU(2, 3, bidirectional=True, dtype=ag.float64, device=device)
        set_parameters(module, np.random.default_rng(8))
        x = ag.tensor(x_values, device=device, requires_grad=True)
        h0 = ag.tensor(h0_values, device=device, requires_grad=True)
        packed = pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False)
        assert packed.data.device == x.device and packed.sorted_indices.device == x.device
        output, h_n = module(packed, h0)
        padded, lengths = pad_packed_sequence(output, padding_value=0.5)
        assert padded.device == x.device and h_n.device == x.device and lengths.device.type == "cpu"
        ((padded * padded).sum() + (h_n * h_n).sum()).backward()
        results.append([values(padded.cpu()), values(h_n.cpu()), x.grad.cpu().numpy(), h0.grad.cpu().numpy(),
                        *(p.grad.cpu().numpy() for p in module.parameters())])
    for cuda_array, cpu_array in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(cuda_array, cpu_array, rtol=1e-10, atol=1e-12)
    moved = pack_padded_sequence(ag.tensor(x_values), [2, 4, 1], enforce_sorted=False).cuda()
    assert moved.data.is_cuda and moved.sorted_indices.is_cuda and moved.unsorted_indices.is_cuda
    assert moved.batch_sizes.device.type == "cpu" and not moved.cpu().data.is_cuda
