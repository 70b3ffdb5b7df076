"""RNN, LSTM and GRU (layers and cells) against a numpy reference of PyTorch's documented recurrences (the
`numpy_recurrence` fixture), its central differences and gradcheck: values, gradients, parameter names and shapes,
initialisation, dropout, and PyTorch's reprs and error texts."""

import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck
from actorgrad.nn.recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell

LAYERS = {"RNN_TANH": (RNN, {}), "RNN_RELU": (RNN, {"nonlinearity": "relu"}), "LSTM": (LSTM, {}), "GRU": (GRU, {})}
CELLS = {"RNN_TANH": (RNNCell, {}), "RNN_RELU": (RNNCell, {"nonlinearity": "relu"}), "LSTM": (LSTMCell, {}),
         "GRU": (GRUCell, {})}
GRADCHECK = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}


def layer(mode: str, *args, **kwargs):
    cls, extra = LAYERS[mode]
    return cls(*args, **extra, **kwargs)


def set_parameters(module, rng) -> None:
    """Every parameter from `rng`, in order, loaded as a state dict of numpy arrays (as from PyTorch's)."""
    module.load_state_dict({name: rng.standard_normal(p.shape) for name, p in module.state_dict().items()})


def states_of(hidden) -> tuple:
    return hidden if isinstance(hidden, tuple) else (hidden,)


# -- values and gradients of one layer against the numpy recurrence and its central differences ----------------
@pytest.mark.parametrize("mode", list(LAYERS))
def test_layer_values_and_gradients_match_the_numpy_recurrence(mode, numpy_recurrence, numpy_gradient):
    """One layer of size 2 over x (2, 1, 2), the loss sum(output * w) + sum(h_n * v) (+ sum(c_n * u)): the values
    against the documented equations in numpy, the gradients of x and of every parameter against that numpy
    loss's central differences."""
    rng = np.random.default_rng(5)
    module = layer(mode, 2, 2, dtype=ag.float64)
    set_parameters(module, rng)
    x_values = rng.standard_normal((2, 1, 2))
    x = ag.tensor(x_values, requires_grad=True)
    output, hidden = module(x)
    states = states_of(hidden)
    w = rng.standard_normal(output.shape)
    v = [rng.standard_normal(state.shape) for state in states]
    loss = (output * ag.tensor(w)).sum()
    for state, weights in zip(states, v, strict=True):
        loss = loss + (state * ag.tensor(weights)).sum()
    loss.backward()

    params = {name: p.detach().numpy().copy() for name, p in module.named_parameters()}
    zeros = [np.zeros((1, 1, 2)) for _ in states]

    def forward(arrays):
        return numpy_recurrence.layers(mode, arrays, arrays["x"], zeros, 1, 1)

    def numpy_loss(arrays):
        out, finals = forward(arrays)
        return (out * w).sum() + sum((f * u).sum() for f, u in zip(finals, v, strict=True))

    arrays = params | {"x": x_values}
    out, finals = forward(arrays)
    np.testing.assert_allclose(output.detach().numpy(), out, rtol=1e-12, atol=1e-14)
    for state, final in zip(states, finals, strict=True):
        np.testing.assert_allclose(state.detach().numpy(), final, rtol=1e-12, atol=1e-14)
    got = {"x": x.grad} | {name: p.grad for name, p in module.named_parameters()}
    for name, grad in got.items():
        expected = numpy_gradient(lambda a, name=name: numpy_loss(arrays | {name: a}), arrays[name])
        np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-6, atol=1e-8, err_msg=name)


# -- every option against the numpy reference ------------------------------------------------------------------
CONFIGS = [  # mode, options, batched, hx given
    ("RNN_TANH", {"num_layers": 2, "bidirectional": True}, True, True),
    ("RNN_RELU", {"batch_first": True}, True, False),
    ("RNN_TANH", {"bias": False}, False, True),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}, True, True),
    ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True}, True, False),
    ("LSTM", {"proj_size": 1, "bias": False, "batch_first": True}, False, True),
    ("GRU", {"num_layers": 3, "bidirectional": True}, True, True),
    ("GRU", {"bias": False, "batch_first": True}, False, False),
]


@pytest.mark.parametrize(("mode", "options", "batched", "given"), CONFIGS)
def test_layers_match_numpy_reference(mode, options, batched, given, numpy_recurrence):
    rng = np.random.default_rng(1)
    module = layer(mode, 3, 4, dtype=ag.float64, **options)
    set_parameters(module, rng)
    seq, batch, batch_first = 4, 2, options.get("batch_first", False)
    x = rng.standard_normal(((batch, seq, 3) if batch_first else (seq, batch, 3)) if batched else (seq, 3))
    stacked = module.num_layers * (2 if module.bidirectional else 1)
    sizes = [options.get("proj_size") or 4] + ([4] if mode == "LSTM" else [])
    states = [rng.standard_normal((stacked, batch if batched else 1, size)) for size in sizes]
    hx = [ag.tensor(s if batched else s[:, 0]) for s in states] if given else None
    output, hidden = module(ag.tensor(x), hx if hx is None or mode == "LSTM" else hx[0])

    seq_first = (x.swapaxes(0, 1) if batch_first else x) if batched else x[:, None]
    params = {name: p.detach().numpy() for name, p in module.named_parameters()}
    start = states if given else [np.zeros_like(s) for s in states]
    out, finals = numpy_recurrence.layers(mode, params, seq_first, start, module.num_layers, 1 + module.bidirectional)
    out = (out.swapaxes(0, 1) if batch_first else out) if batched else out[:, 0]
    np.testing.assert_allclose(output.detach().numpy(), out, rtol=1e-10, atol=1e-12)
    for state, final in zip(states_of(hidden), finals, strict=True):
        np.testing.assert_allclose(state.detach().numpy(), final if batched else final[:, 0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", list(LAYERS))
def test_layer_gradients_match_finite_differences(mode):
    """Two bidirectional layers (an LSTM with a projection): the input, the initial states and every parameter."""
    rng = np.random.default_rng(2)
    module = layer(mode, 2, 2, num_layers=2, bidirectional=True, dtype=ag.float64,
                   **({"proj_size": 1} if mode == "LSTM" else {}))
    set_parameters(module, rng)
    names = [name for name, _ in module.named_parameters()]
    sizes = [1, 2] if mode == "LSTM" else [2]
    x = ag.tensor(rng.standard_normal((2, 1, 2)), requires_grad=True)
    states = [ag.tensor(rng.standard_normal((4, 1, size)), requires_grad=True) for size in sizes]

    def run(x, *tensors):
        hx, params = tensors[:len(states)], tensors[len(states):]
        module._parameters.update(zip(names, params))  # the perturbed copies gradcheck passes in
        output, hidden = module(x, hx if mode == "LSTM" else hx[0])
        return output, *states_of(hidden)

    assert gradcheck(run, [x, *states, *module.parameters()], **GRADCHECK)


# -- cells -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", list(CELLS))
@pytest.mark.parametrize(("batched", "given"), [(True, True), (True, False), (False, True)])
def test_cells_match_numpy_reference(mode, batched, given, numpy_recurrence):
    rng = np.random.default_rng(3)
    cls, extra = CELLS[mode]
    cell = cls(3, 4, dtype=ag.float64, **extra)
    set_parameters(cell, rng)
    x = rng.standard_normal((2, 3) if batched else (3,))
    states = [rng.standard_normal((2, 4) if batched else (4,)) for _ in range(2 if mode == "LSTM" else 1)]
    hx = None
    if given:
        hx = tuple(ag.tensor(s) for s in states) if mode == "LSTM" else ag.tensor(states[0])
    result = states_of(cell(ag.tensor(x), hx))
    params = {name: p.detach().numpy() for name, p in cell.named_parameters()}
    start = [np.atleast_2d(s) if given else np.zeros((len(np.atleast_2d(x)), 4)) for s in states]
    expected = numpy_recurrence.step(mode, np.atleast_2d(x), start, params)
    for got, want in zip(result, expected, strict=True):
        assert got.shape == ((2, 4) if batched else (4,))
        np.testing.assert_allclose(got.detach().numpy(), want.reshape(got.shape), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", list(CELLS))
def test_cell_gradients_match_finite_differences(mode):
    rng = np.random.default_rng(4)
    cls, extra = CELLS[mode]
    cell = cls(2, 3, dtype=ag.float64, **extra)
    set_parameters(cell, rng)
    names = [name for name, _ in cell.named_parameters()]
    x = ag.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    states = [ag.tensor(rng.standard_normal((2, 3)), requires_grad=True) for _ in range(2 if mode == "LSTM" else 1)]

    def run(x, *tensors):
        hx, params = tensors[:len(states)], tensors[len(states):]
        cell._parameters.update(zip(names, params))
        return cell(x, hx if mode == "LSTM" else hx[0])

    assert gradcheck(run, [x, *states, *cell.parameters()], **GRADCHECK)


# -- parameters, state dicts and initialisation ----------------------------------------------------------------
def test_state_dict_keys_and_shapes_are_torchs():
    module = LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    per_direction = [("weight_ih_l{}", (16, None)), ("weight_hh_l{}", (16, 2)), ("bias_ih_l{}", (16,)),
                     ("bias_hh_l{}", (16,)), ("weight_hr_l{}", (2, 4))]
    expected = [(name.format(f"{layer}{suffix}"), (16, 3 if layer == 0 else 4) if shape == (16, None) else shape)
                for layer in range(2) for suffix in ("", "_reverse") for name, shape in per_direction]
    assert [(k, v.shape) for k, v in module.state_dict().items()] == expected
    assert [(k, v.shape) for k, v in GRU(3, 4, bias=False).state_dict().items()] == [
        ("weight_ih_l0", (12, 3)), ("weight_hh_l0", (12, 4))]
    assert [(k, v.shape) for k, v in LSTMCell(3, 4).state_dict().items()] == [
        ("weight_ih", (16, 3)), ("weight_hh", (16, 4)), ("bias_ih", (16,)), ("bias_hh", (16,))]
    cell = GRUCell(3, 4, bias=False)
    assert list(cell.state_dict()) == ["weight_ih", "weight_hh"] and cell.bias_ih is None
    assert [[p.shape for p in weights] for weights in RNN(3, 4, bias=False).all_weights] == [[(4, 3), (4, 4)]]


@pytest.mark.parametrize(("make", "bound"), [(lambda: LSTM(3, 4, num_layers=2, bidirectional=True), 0.5),
                                           (lambda: GRUCell(3, 16), 0.25)])
def test_initialisation_is_uniform_within_one_over_sqrt_hidden_from_the_generator(make, bound):
    ag.manual_seed(0)
    first = make()
    ag.manual_seed(0)
    second = make()
    values = np.concatenate([p.detach().numpy().ravel() for p in first.parameters()])
    assert values.dtype == np.float32 and values.max() <= bound and values.min() >= -bound
    assert values.max() > 0.9 * bound and values.min() < -0.9 * bound and abs(values.mean()) < 0.1 * bound
    np.testing.assert_allclose(values.std(), bound / np.sqrt(3), rtol=0.1)  # the uniform's standard deviation
    for a, b in zip(first.parameters(), second.parameters(), strict=True):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_default_states_are_zeros_and_the_output_dtype_follows_the_weights():
    module = LSTM(3, 4, num_layers=2)
    x = ag.randn(5, 2, 3)
    output, (h_n, c_n) = module(x)
    zero_output, (zero_h, zero_c) = module(x, (ag.zeros(2, 2, 4), ag.zeros(2, 2, 4)))
    assert output.dtype == ag.float32 and output.shape == (5, 2, 4) and h_n.shape == c_n.shape == (2, 2, 4)
    np.testing.assert_array_equal(output.detach().numpy(), zero_output.detach().numpy())
    np.testing.assert_array_equal(c_n.detach().numpy(), zero_c.detach().numpy())


def test_dropout_drops_between_layers_only_in_training():
    rng = np.random.default_rng(6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # two layers: no warning about dropout
        dropped = GRU(2, 3, num_layers=2, dropout=1.0, dtype=ag.float64)
    set_parameters(dropped, rng)
    kept = GRU(2, 3, num_layers=2, dtype=ag.float64)
    kept.load_state_dict(dropped.state_dict())
    x = ag.tensor(rng.standard_normal((4, 2, 2)))
    np.testing.assert_array_equal(dropped.eval()(x)[0].detach().numpy(), kept(x)[0].detach().numpy())
    train_output, _ = dropped.train()(x)
    kept.weight_ih_l1.detach().zero_()  # what a second layer whose every input is dropped sees
    np.testing.assert_allclose(train_output.detach().numpy(), kept(x)[0].detach().numpy(), rtol=1e-12)
    assert not np.allclose(train_output.detach().numpy(), dropped.eval()(x)[0].detach().numpy())


def test_repr_is_torchs():
    assert repr(LSTM(3, 4, 2, batch_first=True, dropout=0.5, bidirectional=True, proj_size=2)) == (
        "LSTM(3, 4, proj_size=2, num_layers=2, batch_first=True, dropout=0.5, bidirectional=True)")
    assert repr(RNN(3, 4, nonlinearity="relu", bias=False)) == "RNN(3, 4, bias=False)"
    assert repr(RNNCell(3, 4, bias=False, nonlinearity="relu")) == "RNNCell(3, 4, bias=False, nonlinearity=relu)"
    assert repr(GRUCell(3, 4)) == "GRUCell(3, 4)"


# -- errors ----------------------------------------------------------------------------------------------------
def z(*shape, dtype=ag.float32):
    return ag.zeros(*shape, dtype=dtype)


ERRORS = [
    (lambda: LSTMCell(3, 4)(z(2, 5)), RuntimeError, "input has inconsistent input_size: got 5 expected 3"),
    (lambda: LSTMCell(3, 4)(z(2, 3), (z(3, 4), z(2, 4))), RuntimeError,
     "Input batch size 2 doesn't match hidden0 batch size 3"),
    (lambda: LSTMCell(3, 4)(z(2, 3), (z(2, 4), z(2, 5))), RuntimeError,
     "hidden1 has inconsistent hidden_size: got 5, expected 4"),
    (lambda: LSTMCell(3, 4)(z(2, 2, 3)), ValueError, "LSTMCell: Expected input to be 1D or 2D, got 3D instead"),
    (lambda: LSTMCell(3, 4)(z(2, 5), (z(2, 4), z(1, 2, 4))), ValueError,
     "LSTMCell: Expected hx[1] to be 1D or 2D, got 3D instead"),
    (lambda: GRUCell(3, 4)(z(2, 3), z(2, 5)), RuntimeError, "hidden0 has inconsistent hidden_size: got 5, expected 4"),
    (lambda: RNNCell(3, 4, nonlinearity="sig")(z(2, 5)), RuntimeError, "Unknown nonlinearity: sig"),
    (lambda: RNNCell(3, 4, nonlinearity="sig")(z(2, 2, 3)), ValueError,
     "RNNCell: Expected input to be 1D or 2D, got 3D instead"),
    (lambda: GRUCell(3, 4)(z(2, 5), z(1, 2, 3)), ValueError, "GRUCell: Expected hidden to be 1D or 2D, got 3D instead"),
    (lambda: RNN(3, 4, 1, "sig"), ValueError, "Unknown nonlinearity 'sig'. Select from 'tanh' or 'relu'."),
    (lambda: GRU(3, 4, proj_size=0), ValueError, "proj_size argument is only supported for LSTM, not RNN or GRU"),
    (lambda: LSTM(3, 4, proj_size=4), ValueError, "proj_size has to be smaller than hidden_size"),
    (lambda: LSTM(3, 4, dropout=1.5), ValueError, "dropout should be a number in range [0, 1] representing the "
     "probability of an element being zeroed"),
    (lambda: LSTM(3, 4, 0), ValueError, "num_layers must be greater than zero"),
    (lambda: GRU(3.0, 4), TypeError, "input_size should be of type int, got: float"),
    (lambda: LSTM(3, 4)(z(5, 2, 4)), RuntimeError,
     "input.size(-1) must be equal to input_size. Expected 3, got 4"),
    (lambda: LSTM(3, 4, 2, bidirectional=True)(z(5, 2, 3), (z(4, 2, 4), z(4, 3, 4))), RuntimeError,
     "Expected hidden[1] size (4, 2, 4), got [4, 3, 4]"),
    (lambda: LSTM(3, 4, proj_size=2)(z(5, 2, 3), (z(1, 2, 4), z(1, 2, 4))), RuntimeError,
     "Expected hidden[0] size (1, 2, 2), got [1, 2, 4]"),
    (lambda: LSTM(3, 4)(z(5, 2, 3), (z(1, 2, 4), z(2, 4))), RuntimeError,
     "For batched 3-D input, hx and cx should also be 3-D but got (3-D, 2-D) tensors"),
    (lambda: LSTM(3, 4)(z(5, 3, 3, 3)), ValueError, "LSTM: Expected input to be 2D or 3D, got 4D instead"),
    (lambda: RNN(3, 4)(z(5)), ValueError, "RNN: Expected input to be 2D or 3D, got 1D tensor instead"),
    (lambda: GRU(3, 4)(z(5, 3, dtype=ag.float64)), ValueError,
     "RNN input dtype (actorgrad.float64) does not match weight dtype (actorgrad.float32). Convert input: "
     "input.to(actorgrad.float32), or convert model: model.to(actorgrad.float64)"),
    (lambda: GRU(3, 4)(z(5, 2, 3), z(1, 3, 4)), RuntimeError, "Expected hidden size (1, 2, 4), got [1, 3, 4]"),
    (lambda: GRU(3, 4)(z(5, 3), z(1, 3, 4)), RuntimeError,
     "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
    (lambda: RNN(3, 4)(z(5, 3), z(3, 4)), RuntimeError, "Expected hidden size (1, 1, 4), got [3, 1, 4]"),
]


@pytest.mark.parametrize(("call", "error", "message"), ERRORS)
def test_errors_are_torchs(call, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        call()


def test_dropout_with_one_layer_warns_at_the_callers_line():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1, but got "
                                         "dropout=0.5 and num_layers=1") as record:
        GRU(3, 4, dropout=0.5)
    assert record[0].filename == __file__


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_layers_on_cuda_give_the_cpus_numbers(mode, cupy):
    rng = np.random.default_rng(8)
    results = []
    for device in ("cpu", "cuda:0"):
        module = layer(mode, 2, 3, num_layers=2, bidirectional=True, dtype=ag.float64, device=device)
        set_parameters(module, np.random.default_rng(9))
        x = ag.tensor(rng.standard_normal((3, 2, 2)) if not results else results[0][0], device=device,
                      requires_grad=True)
        output, hidden = module(x)  # zero initial states on the input's device
        (output.sum() + sum(s.sum() for s in states_of(hidden))).backward()
        assert output.device is ag.device(device) and all(s.device is ag.device(device) for s in states_of(hidden))
        results.append([x.detach().cpu().numpy(), output.detach().cpu().numpy(), x.grad.cpu().numpy(),
                        *(p.grad.cpu().numpy() for p in module.parameters())])
    for cpu_array, cuda_array in zip(*results, strict=True):
        np.testing.assert_allclose(cuda_array, cpu_array, rtol=1e-10, atol=1e-12)
