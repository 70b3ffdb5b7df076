"""RNN, LSTM and GRU (layers and cells) against PyTorch's numbers, a numpy reference of the recurrences and
finite differences: values, gradients, parameter names and shapes, initialisation, dropout and errors."""

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


# -- the numpy reference -------------------------------------------------------------------------------------
def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def reference_step(mode, x, state, p):
    """PyTorch's documented recurrences; `p` holds one (layer, direction)'s arrays, biases absent as zeros."""
    gi = x @ p["weight_ih"].T + p.get("bias_ih", 0)
    gh = state[0] @ p["weight_hh"].T + p.get("bias_hh", 0)
    if mode == "RNN_TANH":
        return (np.tanh(gi + gh),)
    if mode == "RNN_RELU":
        return (np.maximum(gi + gh, 0),)
    if mode == "GRU":
        (i_r, i_z, i_n), (h_r, h_z, h_n) = np.split(gi, 3, 1), np.split(gh, 3, 1)
        r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
        n = np.tanh(i_n + r * h_n)
        return ((1 - z) * n + z * state[0],)
    i, f, g, o = np.split(gi + gh, 4, 1)
    c = sigmoid(f) * state[1] + sigmoid(i) * np.tanh(g)
    h = sigmoid(o) * np.tanh(c)
    return (h @ p["weight_hr"].T if "weight_hr" in p else h), c


def reference_layers(mode, params, x, states, num_layers, directions):
    """The stacked layers over x of shape (seq, batch, feature) from `states` (layers * directions, batch, size)."""
    finals = []
    for layer_index in range(num_layers):
        outputs = []
        for direction in range(directions):
            suffix = f"_l{layer_index}" + ("_reverse" if direction else "")
            p = {name[:-len(suffix)]: value for name, value in params.items() if name.endswith(suffix)}
            state = tuple(s[layer_index * directions + direction] for s in states)
            out = []
            for t in reversed(range(len(x))) if direction else range(len(x)):
                state = reference_step(mode, x[t], state, p)
                out.append(state[0])
            outputs.append(np.stack(out[::-1] if direction else out))
            finals.append(state)
        x = np.concatenate(outputs, 2)
    return x, tuple(np.stack([f[k] for f in finals]) for k in range(len(states)))


# -- against PyTorch's numbers -------------------------------------------------------------------------------
# torch.nn.RNN/LSTM/GRU(2, 2) in float64, parameters then x (2, 1, 2) then the weights of the loss
# sum(output * w) + sum(h_n * v) (+ sum(c_n * u)) drawn in that order from np.random.default_rng(5).
TORCH = {
    "RNN_TANH": {
        "output": [-0.3176418573, 0.8648237288, 0.9938022456, -0.7065968359],
        "states": [[0.9938022456, -0.7065968359]],
        "x": [0.161527763, 0.0174422875, 0.0051748354, 0.0357346084],
        "weight_ih_l0": [0.1005698618, -0.1448047749, 0.294274206, -0.536960948],
        "weight_hh_l0": [0.0052698868, -0.014347993, -0.0103975143, 0.0283086655],
        "bias_ih_l0": [-0.1250531297, -0.2674268401],
        "bias_hh_l0": [-0.1250531297, -0.2674268401],
    },
    "RNN_RELU": {
        "output": [0.0, 1.3121710865, 3.2967386673, 0.0],
        "states": [[3.2967386673, 0.0]],
        "x": [0.3254823628, -0.5510010298, 1.0766743069, 1.7780863286],
        "weight_ih_l0": [-0.272390262, 2.3255667782, 1.2558237487, -2.09685373],
        "weight_hh_l0": [0.0, -1.761722824, 0.0, 0.0],
        "bias_ih_l0": [-1.3426014657, -1.310517946],
        "bias_hh_l0": [-1.3426014657, -1.310517946],
    },
    "LSTM": {
        "output": [-0.3553394386, -0.0273181154, -0.0762742533, 0.0373861209],
        "states": [[-0.0762742533, 0.0373861209], [-0.991899336, 0.09334992]],
        "x": [0.2251183048, -0.2370984668, 0.0492211599, 0.1753523586],
        "weight_ih_l0": [-0.2352014502, 0.3290689212, 0.1084597521, -0.1063298032, -0.234474621, 0.2879616834,
                         -0.0583298524, 0.0716357379, 0.0049643254, -0.0099206462, 0.0915402273, -0.1436528405,
                         -0.0427007251, 0.1245849948, -0.0115426653, 0.0009671106],
        "weight_hh_l0": [0.0932695165, 0.0071704605, -0.0357913685, -0.0027516021, 0.0866091831, 0.0066584212,
                         0.0215456191, 0.0016564041, -0.002441483, -0.0001876986, -0.038776684, -0.0029811099,
                         0.0272393786, 0.0020941343, 0.0021641529, 0.0001663778],
        "bias_ih_l0": [-0.3366138866, 0.0511886096, -0.2437364776, -0.0606339087, 0.01392001, 0.1666986279,
                       -0.2096508683, 0.0182590878],
        "bias_hh_l0": [-0.3366138866, 0.0511886096, -0.2437364776, -0.0606339087, 0.01392001, 0.1666986279,
                       -0.2096508683, 0.0182590878],
    },
    "GRU": {
        "output": [-0.9555084831, 0.1838865632, -0.9873589538, 0.3832924174],
        "states": [[-0.9873589538, 0.3832924174]],
        "x": [0.138424155, -0.0292377089, -0.0105963767, -0.0787870765],
        "weight_ih_l0": [0.0003081073, -0.0013898893, 0.0096661813, 0.017993553, -0.037193546, -0.0246744609,
                         0.1327499988, 0.2212498634, -0.0080231706, 0.0385783642, -0.1069607795, -0.1872103236],
        "weight_hh_l0": [-0.0012197691, 0.0002347432, 0.0041221889, -0.0007933108, 0.0148040501, -0.0028490233,
                         0.0388134086, -0.0074695981, 0.0278812876, -0.0053657233, -0.0169960219, 0.0032708658],
        "bias_ih_l0": [0.0012571821, -0.0140599891, 0.0153963576, -0.1706281908, -0.0348090892, 0.1452474082],
        "bias_hh_l0": [0.0012571821, -0.0140599891, 0.0153963576, -0.1706281908, -0.0290502271, 0.0850992736],
    },
}


@pytest.mark.parametrize("mode", list(TORCH))
def test_layer_values_and_gradients_match_torch(mode):
    expected = TORCH[mode]
    rng = np.random.default_rng(5)
    module = layer(mode, 2, 2, dtype=ag.float64)
    set_parameters(module, rng)
    x = ag.tensor(rng.standard_normal((2, 1, 2)), requires_grad=True)
    output, hidden = module(x)
    states = states_of(hidden)
    loss = (output * ag.tensor(rng.standard_normal(output.shape))).sum()
    for state in states:
        loss = loss + (state * ag.tensor(rng.standard_normal(state.shape))).sum()
    loss.backward()
    close = {"rtol": 1e-7, "atol": 1e-9}
    np.testing.assert_allclose(output.detach().numpy().ravel(), expected["output"], **close)
    for state, values in zip(states, expected["states"], strict=True):
        np.testing.assert_allclose(state.detach().numpy().ravel(), values, **close)
    np.testing.assert_allclose(x.grad.numpy().ravel(), expected["x"], **close)
    for name, param in module.named_parameters():
        np.testing.assert_allclose(param.grad.numpy().ravel(), expected[name], err_msg=name, **close)


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
def test_layers_match_numpy_reference(mode, options, batched, given):
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
    out, finals = reference_layers(mode, params, seq_first, start, module.num_layers, 1 + module.bidirectional)
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
def test_cells_match_numpy_reference(mode, batched, given):
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
    expected = reference_step(mode, np.atleast_2d(x), start, params)
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
def test_layers_on_cuda_give_the_cpus_numbers(mode):
    cupy = pytest.importorskip("cupy")
    if not cupy.cuda.is_available():
        pytest.skip("no CUDA device")
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
