"""What a generated differential run of the recurrent layers and nn.utils.rnn against PyTorch found: a layer
given a wrong initial state and an empty sequence names the state, as PyTorch checks the states before the
sequence length."""

import pytest

import actorgrad as ag
from actorgrad.nn.recurrent import GRU, LSTM, RNN

# layer, the states given for a (0, 2, 3) input to cls(3, 4), the message naming the wrong one
WRONG_STATES = [
    (RNN, lambda z: z(1, 5, 4), "Expected hidden size (1, 2, 4), got [1, 5, 4]"),
    (GRU, lambda z: z(2, 2, 4), "Expected hidden size (1, 2, 4), got [2, 2, 4]"),
    (LSTM, lambda z: (z(1, 2, 3), z(1, 2, 4)), "Expected hidden[0] size (1, 2, 4), got [1, 2, 3]"),
    (LSTM, lambda z: (z(1, 2, 4), z(1, 2, 5)), "Expected hidden[1] size (1, 2, 4), got [1, 2, 5]"),
]


@pytest.mark.parametrize(("cls", "states", "message"), WRONG_STATES)
def test_a_wrong_state_is_named_before_an_empty_sequence(cls, states, message):
    with pytest.raises(RuntimeError) as caught:
        cls(3, 4)(ag.zeros(0, 2, 3), states(ag.zeros))
    assert str(caught.value) == message


@pytest.mark.parametrize("batch_first", [False, True])
def test_an_unbatched_empty_sequence_names_a_wrong_state_too(batch_first):
    with pytest.raises(RuntimeError) as caught:
        RNN(3, 4, num_layers=2, batch_first=batch_first)(ag.zeros(0, 3), ag.zeros(1, 4))
    assert str(caught.value) == "Expected hidden size (2, 1, 4), got [1, 1, 4]"


def test_right_states_and_an_empty_sequence_still_get_the_length_error():
    with pytest.raises(RuntimeError) as caught:
        LSTM(3, 4, proj_size=2)(ag.zeros(0, 2, 3), (ag.zeros(1, 2, 2), ag.zeros(1, 2, 4)))
    assert str(caught.value) == "Expected sequence length to be larger than 0 in RNN"


@pytest.mark.gpu
def test_a_wrong_state_is_named_before_an_empty_sequence_on_cuda(cupy):
    with pytest.raises(RuntimeError) as caught:
        GRU(3, 4, device="cuda")(ag.zeros(0, 2, 3, device="cuda"), ag.zeros(1, 3, 4, device="cuda"))
    assert str(caught.value) == "Expected hidden size (1, 2, 4), got [1, 3, 4]"
