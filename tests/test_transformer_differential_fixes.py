"""Differences from PyTorch found by running the Transformer modules side by side with it, each pinned here.

TransformerEncoder sets `use_nested_tensor` and, when `enable_nested_tensor` cannot be honoured, warns at
construction with PyTorch's reason, as PyTorch does (users read the flag and filter the warning by its text).
A whole model saves and loads: the layers hold `F.relu` / `F.gelu`, which pickle must find by name."""

import io
import pickle
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn
from actorgrad.nn import functional as F
from actorgrad.nn.transformer import Transformer, TransformerEncoder, TransformerEncoderLayer

PREFIX = "enable_nested_tensor is True, but self.use_nested_tensor is False because encoder_layer"


def _build(factory, *args, **kwargs):
    """`factory(*args, **kwargs)` and the texts of the warnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = factory(*args, **kwargs)
    return built, [str(w.message) for w in caught]


@pytest.mark.parametrize(("layer_kwargs", "reason"), [
    ({}, ".self_attn.batch_first was not True(use batch_first for better inference performance)"),
    ({"batch_first": True, "norm_first": True}, ".norm_first was True"),
    ({"batch_first": True, "bias": False}, ".self_attn was passed bias=False"),
    ({"batch_first": True, "activation": ag.tanh}, ".activation_relu_or_gelu was not True"),
    ({"batch_first": True, "nhead": 1}, ".self_attn.num_heads is odd"),
])
def test_an_encoder_that_cannot_use_nested_tensors_says_why_and_clears_the_flag(layer_kwargs, reason):
    layer_kwargs = {"nhead": 2, **layer_kwargs}
    layer = TransformerEncoderLayer(4, dim_feedforward=6, **layer_kwargs)
    encoder, messages = _build(TransformerEncoder, layer, 2)
    assert messages == [PREFIX + reason]
    assert encoder.use_nested_tensor is False
    assert encoder.enable_nested_tensor is True


def test_the_warning_names_a_different_norm_eps_and_a_layer_of_another_kind():
    layer = TransformerEncoderLayer(4, 2, 6, batch_first=True)
    layer.norm2.eps = 1e-3
    assert _build(TransformerEncoder, layer, 1)[1] == [PREFIX + ".norm1.eps was not equal to encoder_layer.norm2.eps"]
    assert _build(TransformerEncoder, nn.Linear(4, 4), 1)[1] == [PREFIX + " was not TransformerEncoderLayer"]


@pytest.mark.parametrize("activation", ["relu", "gelu", nn.ReLU(), nn.GELU()])
def test_a_batch_first_relu_or_gelu_encoder_keeps_the_flag_silently(activation):
    layer = TransformerEncoderLayer(4, 2, 6, batch_first=True, activation=activation)
    encoder, messages = _build(TransformerEncoder, layer, 2)
    assert messages == []
    assert encoder.use_nested_tensor is True


def test_turning_nested_tensors_off_is_silent():
    encoder, messages = _build(TransformerEncoder, TransformerEncoderLayer(4, 1, 6), 2, enable_nested_tensor=False)
    assert messages == []
    assert encoder.use_nested_tensor is False
    assert encoder.enable_nested_tensor is False


def test_a_default_transformer_warns_once_for_its_sequence_first_encoder():
    model, messages = _build(Transformer, 4, 2, 1, 1, 6)
    assert messages == [PREFIX + ".self_attn.batch_first was not True(use batch_first for better inference "
                                 "performance)"]
    assert model.encoder.use_nested_tensor is False
    assert _build(Transformer, 4, 2, 1, 1, 6, batch_first=True)[0].encoder.use_nested_tensor is True


def test_the_warning_points_at_the_code_that_built_the_encoder():
    with pytest.warns(UserWarning, match="use_nested_tensor is False") as caught:
        TransformerEncoder(TransformerEncoderLayer(4, 2, 6), 1)
    assert caught[0].filename == __file__


def test_the_flag_changes_no_value():
    """The flag only reports; an encoder that keeps it gives the same output as one built without it."""
    x = ag.tensor(np.random.default_rng(3).standard_normal((2, 5, 4)))
    padding = ag.tensor(np.array([[False] * 3 + [True] * 2, [False] * 5]))
    kept = TransformerEncoder(TransformerEncoderLayer(4, 2, 6, batch_first=True, dtype=ag.float64), 2).eval()
    off = TransformerEncoder(TransformerEncoderLayer(4, 2, 6, batch_first=True, dtype=ag.float64), 2,
                             enable_nested_tensor=False).eval()
    off.load_state_dict(kept.state_dict())
    assert kept.use_nested_tensor and not off.use_nested_tensor
    np.testing.assert_array_equal(kept(x, src_key_padding_mask=padding).detach().numpy(),
                                  off(x, src_key_padding_mask=padding).detach().numpy())


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_a_whole_transformer_saves_and_loads_with_its_activation(activation):
    model = Transformer(4, 2, 1, 1, 6, activation=activation, dtype=ag.float64).eval()
    buffer = io.BytesIO()
    ag.save(model, buffer)
    buffer.seek(0)
    loaded = ag.load(buffer, weights_only=False)
    assert loaded.decoder.layers[0].activation is getattr(F, activation)
    rng = np.random.default_rng(4)
    src, tgt = ag.tensor(rng.standard_normal((3, 2, 4))), ag.tensor(rng.standard_normal((2, 2, 4)))
    np.testing.assert_array_equal(loaded(src, tgt).detach().numpy(), model(src, tgt).detach().numpy())


@pytest.mark.parametrize("function", [F.relu, F.gelu, F.linear, ag.exp, ag.special.expit, ag.linalg.inv])
def test_public_functions_pickle_as_themselves(function):
    assert pickle.loads(pickle.dumps(function)) is function


@pytest.mark.gpu
def test_an_encoder_built_on_cuda_sets_the_flag_as_on_the_cpu():
    pytest.importorskip("cupy")
    device = ag.device("cuda:0")
    layer = TransformerEncoderLayer(4, 2, 6, batch_first=True, device=device)
    encoder, messages = _build(TransformerEncoder, layer, 1)
    assert messages == [] and encoder.use_nested_tensor is True
    assert _build(TransformerEncoder, TransformerEncoderLayer(4, 2, 6, device=device), 1)[0].use_nested_tensor is False
