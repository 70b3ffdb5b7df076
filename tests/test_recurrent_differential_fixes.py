"""The recurrent layers' and nn.utils.rnn's API where it differed from PyTorch's: the flat weight lists, the
PackedSequence conversions, pad_sequence's result dtype, an empty sequence, a cell of hidden_size 0 and the
number of LSTM states. Expected values come from numpy and from the modules' own parameters."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.nn import utils
from actorgrad.nn.recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell

rnn = utils.rnn


# -- _flat_weights_names / _flat_weights ------------------------------------------------------------------------
@pytest.mark.parametrize(("cls", "options"), [(RNN, {"num_layers": 2, "bidirectional": True}),
                                              (LSTM, {"proj_size": 2, "bias": False}), (GRU, {"num_layers": 2})])
def test_flat_weights_list_every_parameter_in_all_weights_order(cls, options):
    module = cls(3, 4, **options)
    names = [name for name, _ in module.named_parameters()]
    assert module._flat_weights_names == names
    assert [w is p for w, p in zip(module._flat_weights, module.parameters(), strict=True)] == [True] * len(names)
    assert [w for ws in module.all_weights for w in ws] == module._flat_weights


def test_flat_weights_follow_a_replaced_weight():
    """Weight-drop code swaps a weight for another tensor; _flat_weights then names the new one, as PyTorch's."""
    module = LSTM(3, 4)
    replacement = ag.nn.Parameter(ag.zeros(16, 4))
    module.weight_hh_l0 = replacement
    assert module._flat_weights[1] is replacement


# -- PackedSequence conversions ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("method", "dtype"), [("half", np.float16), ("long", np.int64), ("int", np.int32),
                                               ("short", np.int16), ("char", np.int8), ("byte", np.uint8)])
def test_packed_sequence_dtype_methods_convert_only_the_data(method, dtype):
    values = [np.array([[3.0], [5.0], [7.0]]), np.array([[2.0]])]
    packed = rnn.pack_sequence([ag.tensor(v) for v in values[::-1]], enforce_sorted=False)
    converted = getattr(packed, method)()
    assert isinstance(converted, rnn.PackedSequence)
    assert converted.data.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(converted.data.numpy(), packed.data.numpy().astype(dtype))
    assert converted.batch_sizes.tolist() == [2, 1, 1]
    assert converted.sorted_indices.tolist() == [1, 0] and converted.unsorted_indices.tolist() == [1, 0]


def test_packed_sequence_reports_where_its_data_lives():
    packed = rnn.pack_sequence([ag.ones(2, 1), ag.ones(1, 1)])
    assert packed.is_cuda is False
    assert packed.is_pinned() is False
    pinned = packed.pin_memory()
    assert isinstance(pinned, rnn.PackedSequence) and pinned.sorted_indices is None
    np.testing.assert_array_equal(pinned.data.numpy(), packed.data.numpy())


# -- pad_sequence ----------------------------------------------------------------------------------------------------
def test_pad_sequence_result_takes_the_first_sequences_dtype():
    first = np.array([1.5, 2.25], dtype=np.float32)
    second = np.array([0.1, 0.2, 0.3])
    padded = rnn.pad_sequence([ag.tensor(first), ag.tensor(second)], batch_first=True, padding_value=-1.0)
    assert padded.dtype == ag.float32
    expected = np.array([[1.5, 2.25, -1.0], [0.1, 0.2, 0.3]], dtype=np.float32)
    np.testing.assert_array_equal(padded.numpy(), expected)


def test_pad_sequence_gradient_returns_in_each_sequences_dtype():
    first = ag.tensor([1.0, 2.0], dtype=ag.float32, requires_grad=True)
    second = ag.tensor([3.0, 4.0, 5.0], dtype=ag.float64, requires_grad=True)
    weights = np.array([[2.0, 3.0], [5.0, 7.0], [11.0, 13.0]], dtype=np.float32)
    (rnn.pad_sequence([first, second]) * ag.tensor(weights)).sum().backward()
    assert first.grad.dtype == ag.float32 and second.grad.dtype == ag.float64
    np.testing.assert_array_equal(first.grad.numpy(), weights[:2, 0])
    np.testing.assert_array_equal(second.grad.numpy(), weights[:, 1])


def test_pad_sequence_refuses_a_non_tensor_with_torchs_error():
    with pytest.raises(TypeError, match="^expected Tensor as element 1 in argument 0, but got list$"):
        rnn.pad_sequence([ag.ones(2), [1.0, 2.0]])


# -- errors and edge cases of the modules ----------------------------------------------------------------------
@pytest.mark.parametrize("cls", [RNN, LSTM, GRU])
@pytest.mark.parametrize(("shape", "batch_first"), [((0, 2, 3), False), ((2, 0, 3), True), ((0, 3), False)])
def test_an_empty_sequence_is_refused_with_torchs_error(cls, shape, batch_first):
    with pytest.raises(RuntimeError, match="^Expected sequence length to be larger than 0 in RNN$"):
        cls(3, 4, batch_first=batch_first)(ag.zeros(*shape))


@pytest.mark.parametrize("cls", [RNN, LSTM, GRU])
def test_an_empty_batch_still_runs(cls):
    output, _ = cls(3, 4)(ag.zeros(5, 0, 3))
    assert output.shape == (5, 0, 4)


@pytest.mark.parametrize("cls", [RNNCell, LSTMCell, GRUCell])
def test_a_cell_of_hidden_size_zero_builds_as_torchs_does(cls):
    cell = cls(3, 0)
    assert [tuple(p.shape) for p in cell.parameters()] == [(0, 3), (0, 0), (0,), (0,)]


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda x: LSTM(3, 4)(x, tuple(ag.zeros(1, 2, 4) for _ in range(3))), RuntimeError,
     "lstm expects two hidden states"),
    (lambda x: LSTM(3, 4)(x, ag.zeros(1, 2, 4)), RuntimeError, "lstm expects two hidden states"),
    (lambda x: LSTMCell(3, 4)(x[0], (ag.zeros(2, 4),)), RuntimeError, "lstm_cell expects two hidden states"),
    (lambda x: LSTMCell(3, 4)(x[0], ag.zeros(2, 4)), TypeError,
     "lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, not Tensor"),
])
def test_an_lstm_given_other_than_two_states_gets_torchs_error(call, error, message):
    with pytest.raises(error) as caught:
        call(ag.zeros(5, 2, 3))
    assert str(caught.value) == message


def test_an_lstm_takes_its_states_as_a_list():
    h, c = np.full((1, 2, 4), 0.5), np.full((1, 2, 4), -0.25)
    module = LSTM(3, 4, dtype=ag.float64)
    from_tuple = module(ag.zeros(1, 2, 3, dtype=ag.float64), (ag.tensor(h), ag.tensor(c)))[1]
    from_list = module(ag.zeros(1, 2, 3, dtype=ag.float64), [ag.tensor(h), ag.tensor(c)])[1]
    for a, b in zip(from_tuple, from_list, strict=True):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


# -- on a device ---------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_packed_sequence_conversions_and_pad_sequence_on_cuda(cupy):
    values = [np.array([[3.0], [5.0]]), np.array([[2.0], [4.0], [6.0]])]
    packed = rnn.pack_sequence([ag.tensor(v, device="cuda") for v in values], enforce_sorted=False)
    assert packed.is_cuda is True
    half = packed.half()
    assert half.is_cuda and half.data.dtype == ag.float16 and half.sorted_indices.device == ag.device("cuda:0")
    assert half.batch_sizes.device.type == "cpu"
    assert packed.cpu().is_cuda is False
    padded = rnn.pad_sequence([ag.tensor(values[0][:, 0], dtype=ag.float32, device="cuda"),
                               ag.tensor(values[1][:, 0], device="cuda")])
    assert padded.dtype == ag.float32 and padded.device == ag.device("cuda:0")
    np.testing.assert_array_equal(padded.cpu().numpy(), np.array([[3.0, 2.0], [5.0, 4.0], [0.0, 6.0]]))


@pytest.mark.gpu
def test_lengths_on_cuda_are_refused_naming_the_device_as_torch_does(cupy):
    """The mistake PyTorch users meet most with packing: its message names the device with its index."""
    message = "'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor"
    for enforce_sorted in (True, False):
        with pytest.raises(RuntimeError) as caught:
            rnn.pack_padded_sequence(ag.zeros(3, 2, 1, device="cuda"), ag.tensor([3, 2], device="cuda"),
                                     enforce_sorted=enforce_sorted)
        assert str(caught.value) == message
