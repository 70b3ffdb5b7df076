"""Defects a fuzz-differential review of the nn Modules (against PyTorch 2.13) found, each pinned by a test whose
expected values are computed independently (numpy formulas, closed forms)."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _cell_reference(kind, x, states, w_ih, w_hh, b_ih, b_hh):
    """One step of an RNN (tanh), LSTM or GRU cell in float64 numpy."""
    gx, gh = x @ w_ih.T + b_ih, states[0] @ w_hh.T + b_hh
    if kind == "rnn":
        return (np.tanh(gx + gh),)
    if kind == "lstm":
        i, f, g, o = np.split(gx + gh, 4, axis=1)
        c = _sigmoid(f) * states[1] + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c), c
    (xr, xz, xn), (hr, hz, hn) = np.split(gx, 3, axis=1), np.split(gh, 3, axis=1)
    r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
    n = np.tanh(xn + r * hn)
    return ((1 - z) * n + z * states[0],)


CELLS = [("rnn", nn.RNNCell), ("lstm", nn.LSTMCell), ("gru", nn.GRUCell)]


def _run_cell(kind, cls, device, given_states, dtype):
    rng = np.random.default_rng(3)
    cell = cls(3, 4).to(device)
    x = ag.tensor(rng.standard_normal((2, 3)), dtype=ag.float32, device=device)
    states = tuple(ag.tensor(rng.standard_normal((2, 4)), dtype=ag.float32, device=device)
                   for _ in range(2 if kind == "lstm" else 1))
    hx = None if not given_states else states if kind == "lstm" else states[0]
    with ag.autocast(device, dtype=dtype):
        out = cell(x, hx)
    out = out if isinstance(out, tuple) else (out,)
    if not given_states:
        states = tuple(ag.zeros(2, 4, device=device) for _ in states)
    return cell, x, states, out


def _half(t):
    return t.detach().cpu().numpy().astype(np.float16).astype(np.float64)


@pytest.mark.gpu
@pytest.mark.parametrize("kind, cls", CELLS)
@pytest.mark.parametrize("given_states", [False, True])
def test_a_cells_states_follow_cuda_autocast_as_torchs_cell_ops(cupy, kind, cls, given_states):
    # PyTorch's rnn_tanh_cell / lstm_cell / gru_cell are on CUDA autocast's float16 list: input, states and
    # weights are cast, so (h', c') come out float16 even where the states were float32 (or zeros made in it)
    cell, x, states, out = _run_cell(kind, cls, "cuda", given_states, ag.float16)
    assert [t.dtype for t in out] == [ag.float16] * len(out)
    weights = [_half(p) for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)]
    expected = _cell_reference(kind, _half(x), [_half(s) for s in states], *weights)
    for got, want in zip(out, expected):
        np.testing.assert_allclose(got.detach().float().cpu().numpy(), want, rtol=1e-2, atol=5e-3)
    sum(o.float().sum() for o in out).backward()
    assert cell.weight_hh.grad.dtype == ag.float32  # the leaf's dtype, through the cast


@pytest.mark.parametrize("kind, cls", CELLS)
def test_on_the_cpu_only_a_cells_linear_maps_cast_so_float32_states_stay_float32(kind, cls):
    # CPU autocast has no cell ops: the float16 gates meet a float32 state, which promotes the LSTM's and GRU's
    # result back to float32 (an RNN cell's tanh of the float16 gates stays float16), as PyTorch's do
    cell, x, states, out = _run_cell(kind, cls, "cpu", True, ag.float16)
    want = ag.float16 if kind == "rnn" else ag.float32
    assert [t.dtype for t in out] == [want] * len(out)
    params = [p.detach().numpy().astype(np.float64) for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih,
                                                               cell.bias_hh)]
    expected = _cell_reference(kind, x.numpy().astype(np.float64), [s.numpy() for s in states], *params)
    for got, ref in zip(out, expected):
        np.testing.assert_allclose(got.detach().float().numpy(), ref, rtol=1e-2, atol=5e-3)


def test_a_vector_of_more_than_one_element_does_not_load_into_a_0d_slot():
    # only a one-element vector stands for a scalar (old checkpoints); a longer one is a size mismatch, as PyTorch's
    norm = nn.BatchNorm1d(3)
    state = norm.state_dict()
    state["num_batches_tracked"] = ag.tensor([4, 9])
    with pytest.raises(RuntimeError, match=r"size mismatch for num_batches_tracked: copying a param with shape "
                                           r"\(2,\) from checkpoint, the shape in current model is \(\)\."):
        norm.load_state_dict(state)
    assert int(norm.num_batches_tracked) == 0
    state["num_batches_tracked"] = ag.tensor([4])
    norm.load_state_dict(state)
    assert norm.num_batches_tracked.shape == () and int(norm.num_batches_tracked) == 4


def test_trunc_normal_fills_a_0d_tensor_within_its_bounds():
    ag.manual_seed(0)
    for _ in range(20):
        value = float(nn.init.trunc_normal_(ag.zeros(()), a=1.0, b=2.0))
        assert 1.0 <= value <= 2.0
    assert float(nn.init.trunc_normal_(ag.zeros(()), a=0.5, b=0.5)) == 0.5


def test_trunc_normal_refuses_bounds_in_the_wrong_order_with_torchs_error():
    with pytest.raises(RuntimeError, match=r"^uniform_ expects to return a \[from, to\) range, but found from=1.5 "
                                           r"> to=0.5$"):
        nn.init.trunc_normal_(ag.zeros(3), a=1.5, b=0.5)


SEQUENCES = [("rnn", nn.RNN), ("lstm", nn.LSTM), ("gru", nn.GRU)]


@pytest.mark.gpu
@pytest.mark.parametrize("kind, cls", SEQUENCES)
def test_a_sequence_layers_output_and_states_follow_cuda_autocast_as_torchs_cudnn_layers(cupy, kind, cls):
    # PyTorch's cuDNN layers cast input, states and weights to float16 under CUDA autocast: an LSTM's (h, c) and a
    # GRU's h come out float16 too, not float32 where a float32 state met the float16 gates
    rng = np.random.default_rng(4)
    layer = cls(3, 4).to("cuda")
    x = ag.tensor(rng.standard_normal((5, 2, 3)), dtype=ag.float32, device="cuda")
    with ag.autocast("cuda"):
        output, final = layer(x)
    final = final if isinstance(final, tuple) else (final,)
    assert [t.dtype for t in (output, *final)] == [ag.float16] * (1 + len(final))
    weights = [_half(p) for p in (layer.weight_ih_l0, layer.weight_hh_l0, layer.bias_ih_l0, layer.bias_hh_l0)]
    states = [np.zeros((2, 4))] * len(final)
    for step in _half(x):
        states = _cell_reference(kind, step, states, *weights)
    np.testing.assert_allclose(output[-1].detach().float().cpu().numpy(), states[0], rtol=2e-2, atol=1e-2)
    for got, want in zip(final, states):
        np.testing.assert_allclose(got[0].detach().float().cpu().numpy(), want, rtol=2e-2, atol=1e-2)
    output.float().sum().backward()
    assert layer.weight_ih_l0.grad.dtype == ag.float32


@pytest.mark.parametrize("kind, cls, dtype", [("rnn", nn.RNN, ag.float16), ("gru", nn.GRU, ag.float32)])
def test_on_the_cpu_a_sequence_layer_casts_only_inside_its_linear_maps(kind, cls, dtype):
    layer = cls(3, 4)
    with ag.autocast("cpu", dtype=ag.float16):
        output, final = layer(ag.randn(5, 2, 3))
    assert output.dtype == final.dtype == dtype
