"""TransformerDecoderLayer, TransformerDecoder and Transformer: against numpy versions of PyTorch's documented
layer formulas (gradients by central differences) on the same numpy-seeded parameters and inputs, gradcheck, torch's
state_dict keys, initialisation, causal-mask detection and errors."""

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn
from actorgrad.autograd import gradcheck
from actorgrad.nn.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
    _generate_square_subsequent_mask,
)

NEG = -np.inf


def array(t: ag.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


# -- numpy versions of PyTorch's documented formulas (running and comparing: the `numpy_check` fixture)
def _linear(x, p, prefix):
    return x @ p[prefix + "weight"].T + p.get(prefix + "bias", 0.0)


def _layer_norm(x, p, prefix, eps=1e-5):
    centred = x - x.mean(-1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(-1, keepdims=True) + eps) * p[prefix + "weight"] + p.get(
        prefix + "bias", 0.0)


def _additive(mask, shape):
    """A bool mask (True = left out) as -inf/0, a float mask as it is, no mask as zeros."""
    if mask is None:
        return np.zeros(shape)
    return np.where(mask, NEG, 0.0) if mask.dtype == bool else mask


def _attend(query, key, p, prefix, heads, attn_mask=None, key_padding_mask=None):
    """Sequence-first multi-head attention of `query` (L, N, E) over `key` (S, N, E), which is also the value:
    in-projection, softmax(q k^T / sqrt(head) + masks) v per head, out-projection."""
    length, batch, embed = query.shape
    wq, wk, wv = np.split(p[prefix + "in_proj_weight"], 3)
    bq, bk, bv = np.split(p[prefix + "in_proj_bias"], 3) if prefix + "in_proj_bias" in p else (0.0, 0.0, 0.0)
    head = embed // heads

    def split(x):  # (S, N, E) -> (N, H, S, head)
        return x.reshape(x.shape[0], batch, heads, head).transpose(1, 2, 0, 3)

    q, k, v = split(query @ wq.T + bq), split(key @ wk.T + bk), split(key @ wv.T + bv)
    scores = (q @ np.swapaxes(k, -1, -2) / math.sqrt(head) + _additive(attn_mask, (length, key.shape[0]))
              + _additive(key_padding_mask, (batch, key.shape[0]))[:, None, None, :])
    e = np.exp(scores - scores.max(-1, keepdims=True))
    out = (e / e.sum(-1, keepdims=True) @ v).transpose(2, 0, 1, 3).reshape(length, batch, embed)
    return _linear(out, p, prefix + "out_proj.")


def _relu(x):
    return np.maximum(x, 0)


def _gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _feed_forward(x, p, prefix, activation):
    return _linear(activation(_linear(x, p, prefix + "linear1.")), p, prefix + "linear2.")


def _encoder_layer(x, p, prefix, heads, activation=_relu, norm_first=False, mask=None, key_padding_mask=None):
    def attend(y):
        return _attend(y, y, p, prefix + "self_attn.", heads, mask, key_padding_mask)

    if norm_first:
        x = x + attend(_layer_norm(x, p, prefix + "norm1."))
        return x + _feed_forward(_layer_norm(x, p, prefix + "norm2."), p, prefix, activation)
    x = _layer_norm(x + attend(x), p, prefix + "norm1.")
    return _layer_norm(x + _feed_forward(x, p, prefix, activation), p, prefix + "norm2.")


def _decoder_layer(x, memory, p, prefix, heads, activation=_relu, norm_first=False, tgt_mask=None,
                   memory_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None):
    """Self-attention, attention over memory and the feed-forward block, each added to x with its LayerNorm after
    (post-norm) or before (norm_first)."""
    def self_attend(y):
        return _attend(y, y, p, prefix + "self_attn.", heads, tgt_mask, tgt_key_padding_mask)

    def cross_attend(y):
        return _attend(y, memory, p, prefix + "multihead_attn.", heads, memory_mask, memory_key_padding_mask)

    if norm_first:
        x = x + self_attend(_layer_norm(x, p, prefix + "norm1."))
        x = x + cross_attend(_layer_norm(x, p, prefix + "norm2."))
        return x + _feed_forward(_layer_norm(x, p, prefix + "norm3."), p, prefix, activation)
    x = _layer_norm(x + self_attend(x), p, prefix + "norm1.")
    x = _layer_norm(x + cross_attend(x), p, prefix + "norm2.")
    return _layer_norm(x + _feed_forward(x, p, prefix, activation), p, prefix + "norm3.")


def test_decoder_layer_post_norm_sequence_first_with_masks_matches_the_formula(numpy_check):
    masks = {
        "tgt_mask": np.triu(np.full((3, 3), NEG), 1),
        "tgt_key_padding_mask": np.array([[0.0, 0.0, -1.5], [0.3, 0.0, 0.0]]),
        "memory_mask": np.array([[False, True], [False, False], [False, False]]),
        "memory_key_padding_mask": np.array([[False, False], [False, True]]),
    }
    got, used, upstream = numpy_check.run(TransformerDecoderLayer(4, 2, dim_feedforward=3, dropout=0.0),
                                          [(3, 2, 4), (2, 2, 4)], masks, 11)
    assert len(got) == 3 + 18  # output, tgt and memory, and every parameter

    def forward(p):
        return _decoder_layer(p["input0"], p["input1"], p, "", 2, **masks)

    numpy_check.assert_matches(got, numpy_check.expected(forward, used, upstream))


def test_decoder_layer_norm_first_batch_first_gelu_without_bias_matches_the_formula(numpy_check):
    masks = {
        "tgt_mask": np.triu(np.ones((3, 3), bool), 1),
        "memory_mask": np.array([[0.0, -1.0, 0.5, 0.0], [0.2, 0.0, -0.3, 0.1], [0.0, 0.4, 0.0, -0.6]]),
        "memory_key_padding_mask": np.array([[0.0, 0.0, NEG, 0.0], [0.0, 0.0, 0.0, 0.0]]),
    }
    layer = TransformerDecoderLayer(4, 2, dim_feedforward=3, dropout=0.0, activation="gelu", norm_first=True,
                                    batch_first=True, bias=False)
    got, used, upstream = numpy_check.run(layer, [(2, 3, 4), (2, 4, 4)], masks, 12, tgt_is_causal=True)
    assert not any(name.endswith("bias") for name in got)

    def forward(p):
        tgt, memory = (np.swapaxes(p[name], 0, 1) for name in ("input0", "input1"))
        return np.swapaxes(_decoder_layer(tgt, memory, p, "", 2, _gelu, norm_first=True, **masks), 0, 1)

    numpy_check.assert_matches(got, numpy_check.expected(forward, used, upstream))


def test_transformer_with_a_causal_target_mask_and_key_padding_matches_the_formula(numpy_check):
    padding = np.array([[False, False, False, True], [False, True, False, False]])
    masks = {"tgt_mask": Transformer.generate_square_subsequent_mask(3), "src_key_padding_mask": padding,
             "memory_key_padding_mask": padding}
    model = Transformer(4, 2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=3, dropout=0.0)
    got, used, upstream = numpy_check.run(model, [(4, 2, 4), (3, 2, 4)], masks, 13)
    assert len(got) == 3 + 34  # output, src and tgt, and every parameter

    def forward(p):
        memory = _encoder_layer(p["input0"], p, "encoder.layers.0.", 2, key_padding_mask=padding)
        memory = _layer_norm(memory, p, "encoder.norm.")
        out = _decoder_layer(p["input1"], memory, p, "decoder.layers.0.", 2, tgt_mask=np.triu(np.full((3, 3), NEG), 1),
                             memory_key_padding_mask=padding)
        return _layer_norm(out, p, "decoder.norm.")

    numpy_check.assert_matches(got, numpy_check.expected(forward, used, upstream))


def _set_leaf_parameters(module, parameters) -> None:
    """Put gradcheck's perturbed copies where the module's parameters were, by their dotted names."""
    for (name, _), parameter in zip(list(module.named_parameters()), parameters, strict=True):
        owner, _, leaf_name = name.rpartition(".")
        module.get_submodule(owner)._parameters[leaf_name] = parameter


def test_decoder_layer_gradcheck_with_a_callable_activation_and_masks(numpy_check):
    layer = TransformerDecoderLayer(4, 2, dim_feedforward=3, dropout=0.0, activation=ag.tanh, dtype=ag.float64)
    rng = numpy_check.set_parameters(layer, 21)
    tgt, memory = (ag.tensor(rng.standard_normal(s), requires_grad=True) for s in ((2, 1, 4), (3, 1, 4)))
    tgt_mask = ag.tensor([[0.0, -0.7], [0.4, 0.0]])
    padding = ag.tensor([[False, False, True]])

    def decode(tgt, memory, *parameters):
        _set_leaf_parameters(layer, parameters)
        return layer(tgt, memory, tgt_mask=tgt_mask, memory_key_padding_mask=padding)

    parameters = [p.detach().requires_grad_() for p in layer.parameters()]
    (decode(tgt, memory, *parameters) ** 2).sum().backward()
    assert all(p.grad.abs().sum().item() > 0 for p in parameters)  # the copies are the ones the layer uses
    assert gradcheck(decode, [tgt, memory, *parameters], atol=1e-7, rtol=1e-5)


# -- structure: parameter names, initialisation, the causal mask ---------------------------------------------------
def test_transformer_state_dict_keys_and_shapes_are_torchs():
    model = Transformer(4, 2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=3)
    assert [(name, tuple(value.shape)) for name, value in model.state_dict().items()] == list(STATE_DICT.items())
    without_bias = Transformer(4, 2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=3, bias=False)
    assert list(without_bias.state_dict()) == STATE_DICT_WITHOUT_BIAS


def test_transformer_resets_every_matrix_xavier_uniform_and_leaves_vectors_alone():
    custom = TransformerEncoder(TransformerEncoderLayer(8, 2, dim_feedforward=16), 1)
    with ag.no_grad():
        custom.layers[0].linear1.weight.zero_()
    model = Transformer(8, 2, num_decoder_layers=2, dim_feedforward=16, custom_encoder=custom)
    assert model.encoder is custom and (model.d_model, model.nhead, model.batch_first) == (8, 2, False)
    for name, parameter in model.named_parameters():
        values = np.abs(array(parameter))
        if parameter.ndim > 1:
            fan_out, fan_in = parameter.shape
            bound = math.sqrt(6 / (fan_in + fan_out))  # above Linear's own 1 / sqrt(fan_in) for all but in_proj
            assert bound * 0.8 < values.max() <= bound, name
        elif "norm" in name:
            assert (values == (1 if name.endswith("weight") else 0)).all(), name
        elif "attn" in name:  # in_proj_bias and out_proj.bias
            assert not values.any(), name
    layers = model.decoder.layers
    assert not np.allclose(array(layers[0].linear1.weight), array(layers[1].linear1.weight))


def test_a_decoder_stack_copies_its_layer():
    layer = TransformerDecoderLayer(4, 2, dim_feedforward=6)
    decoder = TransformerDecoder(layer, 2, norm=nn.LayerNorm(4))
    assert len(decoder.state_dict()) == 2 * 18 + 2 and decoder.num_layers == 2
    assert decoder.layers[1].multihead_attn.in_proj_weight is not layer.multihead_attn.in_proj_weight
    np.testing.assert_array_equal(array(decoder.layers[1].multihead_attn.in_proj_weight),
                                  array(layer.multihead_attn.in_proj_weight))
    assert layer.dropout3.p == 0.1 and layer.activation is nn.functional.relu


def test_generate_square_subsequent_mask_is_minus_infinity_above_the_diagonal():
    mask = Transformer.generate_square_subsequent_mask(3)
    assert mask.dtype == ag.float32 and mask.device == ag.device("cpu")
    np.testing.assert_array_equal(array(mask), [[0, NEG, NEG], [0, 0, NEG], [0, 0, 0]])
    wide = nn.Transformer.generate_square_subsequent_mask(2, device="cpu", dtype=ag.float64)
    assert wide.dtype == ag.float64 and array(wide).tolist() == [[0.0, NEG], [0.0, 0.0]]
    assert _generate_square_subsequent_mask(4).tolist() == Transformer(8, 2, 1, 1, 16).generate_square_subsequent_mask(
        4).tolist()
    assert Transformer.generate_square_subsequent_mask(0).shape == (0, 0)


class _RecordingDecoderLayer(TransformerDecoderLayer):
    """A decoder layer that notes the causal hint its stack gives it (in a list its copies share)."""

    seen: list = []

    def forward(self, tgt, memory, **kwargs):
        self.seen.append(kwargs["tgt_is_causal"])
        return super().forward(tgt, memory, **kwargs)


CAUSAL_3 = np.triu(np.full((3, 3), NEG), 1)


@pytest.mark.parametrize(("mask", "hint", "batch_first", "detected"), [
    (CAUSAL_3, None, False, True),
    (CAUSAL_3, None, True, True),  # the sequence is dim 1: a size read from dim 0 (2) would miss it
    (np.triu(np.ones((3, 3), bool), 1), None, False, True),  # compared in the mask's dtype, as torch does
    (CAUSAL_3, False, False, False),
    (np.zeros((3, 3)), None, False, False),
    (CAUSAL_3, True, True, True),
    (None, None, False, False),
])
def test_the_decoder_stack_detects_a_causal_target_mask(mask, hint, batch_first, detected):
    layer = _RecordingDecoderLayer(4, 2, dim_feedforward=3, dropout=0.0, batch_first=batch_first)
    _RecordingDecoderLayer.seen = []
    decoder = TransformerDecoder(layer, 2)
    tgt, memory = (ag.randn(2, 3, 4) if batch_first else ag.randn(3, 2, 4) for _ in range(2))
    mask = None if mask is None else ag.tensor(mask, dtype=ag.bool if mask.dtype == bool else ag.float32)
    with_hint = decoder(tgt, memory, tgt_mask=mask, tgt_is_causal=hint)
    assert _RecordingDecoderLayer.seen == [detected, detected]
    np.testing.assert_allclose(array(with_hint), array(decoder(tgt, memory, tgt_mask=mask, tgt_is_causal=False)),
                               rtol=1e-6)


# -- modes and shapes ----------------------------------------------------------------------------------------------
def test_an_unbatched_transformer_is_the_batched_sample():
    model = Transformer(8, 2, 1, 2, dim_feedforward=16, dropout=0.0, dtype=ag.float64)
    rng = np.random.default_rng(3)
    src, tgt = ag.tensor(rng.standard_normal((5, 8))), ag.tensor(rng.standard_normal((3, 8)))
    mask = Transformer.generate_square_subsequent_mask(3, dtype=ag.float64)
    padding = ag.tensor([False, False, False, True, False])
    got = model(src, tgt, tgt_mask=mask, src_key_padding_mask=padding, memory_key_padding_mask=padding)
    batched = model(src.unsqueeze(1), tgt.unsqueeze(1), tgt_mask=mask, src_key_padding_mask=padding.unsqueeze(0),
                    memory_key_padding_mask=padding.unsqueeze(0))
    assert got.shape == (3, 8) and got.dtype == ag.float64
    np.testing.assert_allclose(array(got), array(batched)[:, 0], rtol=1e-12)


def test_batch_first_is_the_transposed_sequence_first_model():
    rng = np.random.default_rng(4)
    src, tgt = ag.tensor(rng.standard_normal((4, 2, 8))), ag.tensor(rng.standard_normal((3, 2, 8)))
    models = [Transformer(8, 2, 1, 1, dim_feedforward=16, dropout=0.0, batch_first=b, norm_first=True,
                          dtype=ag.float64) for b in (False, True)]
    models[1].load_state_dict(models[0].state_dict())
    expected = models[0](src, tgt)
    got = models[1](src.transpose(0, 1), tgt.transpose(0, 1))
    np.testing.assert_allclose(array(got.transpose(0, 1)), array(expected), rtol=1e-12)


def test_decoder_layer_dropout_only_while_training():
    layer = TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.5)
    plain = TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0)
    plain.load_state_dict(layer.state_dict())
    tgt, memory = ag.randn(3, 2, 4), ag.randn(5, 2, 4)
    expected = array(plain(tgt, memory))
    assert not np.allclose(array(layer(tgt, memory)), expected)
    np.testing.assert_allclose(array(layer.eval()(tgt, memory)), expected, rtol=1e-6)


# -- errors --------------------------------------------------------------------------------------------------------
def _raises(error, message, fn, *args, **kwargs):
    with pytest.raises(error) as caught:
        fn(*args, **kwargs)
    assert str(caught.value) == message


def test_transformer_errors_match_torch():
    model = Transformer(4, 2, 1, 1, dim_feedforward=3)
    batch_first = Transformer(4, 2, 1, 1, dim_feedforward=3, batch_first=True)
    batch = "the batch number of src and tgt must be equal"
    features = "the feature number of src and tgt must be equal to d_model"
    _raises(RuntimeError, batch, model, ag.randn(5, 2, 4), ag.randn(3, 3, 4))
    _raises(RuntimeError, batch, batch_first, ag.randn(2, 5, 4), ag.randn(3, 5, 4))
    _raises(RuntimeError, features, model, ag.randn(5, 2, 4), ag.randn(3, 2, 5))
    _raises(RuntimeError, features, batch_first, ag.randn(2, 5, 6), ag.randn(2, 3, 4))
    _raises(RuntimeError, features, model, ag.randn(5, 3), ag.randn(3, 4))
    assert batch_first(ag.randn(2, 5, 4), ag.randn(2, 3, 4)).shape == (2, 3, 4)  # sequence lengths may differ
    _raises(RuntimeError, "activation should be relu/gelu, not tanh", TransformerDecoderLayer, 4, 2,
            activation="tanh")
    _raises(RuntimeError, "activation should be relu/gelu, not swish", Transformer, 4, 2, activation="swish")


# -- the CUDA path -------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_a_decoder_layer_gives_the_cpus_values_and_gradients_on_cuda(numpy_check):
    pytest.importorskip("cupy")
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal(s) for s in ((3, 2, 4), (5, 2, 4))]
    mask = np.triu(np.full((3, 3), NEG), 1)
    padding = np.array([[False, False, True, False, False], [False, False, False, False, False]])
    results = []
    for device in (None, ag.device("cuda:0")):
        layer = TransformerDecoderLayer(4, 2, dim_feedforward=6, dropout=0.0, dtype=ag.float64, device=device)
        numpy_check.set_parameters(layer, 10)
        tgt, memory = (ag.tensor(a, device=device, requires_grad=True) for a in arrays)
        output = layer(tgt, memory, tgt_mask=ag.tensor(mask, device=device),
                       memory_key_padding_mask=ag.tensor(padding, device=device))
        (output * output).sum().backward()
        assert output.device == tgt.device and layer.multihead_attn.in_proj_weight.grad.device == tgt.device
        results.append([array(output), array(tgt.grad), array(memory.grad)]
                       + [array(p.grad) for p in layer.parameters()])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


# -- PyTorch 2.13's state_dict keys and shapes ----------------------------------------------------------------------
STATE_DICT = {
    "encoder.layers.0.self_attn.in_proj_weight": (12, 4), "encoder.layers.0.self_attn.in_proj_bias": (12,),
    "encoder.layers.0.self_attn.out_proj.weight": (4, 4), "encoder.layers.0.self_attn.out_proj.bias": (4,),
    "encoder.layers.0.linear1.weight": (3, 4), "encoder.layers.0.linear1.bias": (3,),
    "encoder.layers.0.linear2.weight": (4, 3), "encoder.layers.0.linear2.bias": (4,),
    "encoder.layers.0.norm1.weight": (4,), "encoder.layers.0.norm1.bias": (4,), "encoder.layers.0.norm2.weight": (4,),
    "encoder.layers.0.norm2.bias": (4,), "encoder.norm.weight": (4,), "encoder.norm.bias": (4,),
    "decoder.layers.0.self_attn.in_proj_weight": (12, 4), "decoder.layers.0.self_attn.in_proj_bias": (12,),
    "decoder.layers.0.self_attn.out_proj.weight": (4, 4), "decoder.layers.0.self_attn.out_proj.bias": (4,),
    "decoder.layers.0.multihead_attn.in_proj_weight": (12, 4), "decoder.layers.0.multihead_attn.in_proj_bias": (12,),
    "decoder.layers.0.multihead_attn.out_proj.weight": (4, 4), "decoder.layers.0.multihead_attn.out_proj.bias": (4,),
    "decoder.layers.0.linear1.weight": (3, 4), "decoder.layers.0.linear1.bias": (3,),
    "decoder.layers.0.linear2.weight": (4, 3), "decoder.layers.0.linear2.bias": (4,),
    "decoder.layers.0.norm1.weight": (4,), "decoder.layers.0.norm1.bias": (4,), "decoder.layers.0.norm2.weight": (4,),
    "decoder.layers.0.norm2.bias": (4,), "decoder.layers.0.norm3.weight": (4,), "decoder.layers.0.norm3.bias": (4,),
    "decoder.layers.1.self_attn.in_proj_weight": (12, 4), "decoder.layers.1.self_attn.in_proj_bias": (12,),
    "decoder.layers.1.self_attn.out_proj.weight": (4, 4), "decoder.layers.1.self_attn.out_proj.bias": (4,),
    "decoder.layers.1.multihead_attn.in_proj_weight": (12, 4), "decoder.layers.1.multihead_attn.in_proj_bias": (12,),
    "decoder.layers.1.multihead_attn.out_proj.weight": (4, 4), "decoder.layers.1.multihead_attn.out_proj.bias": (4,),
    "decoder.layers.1.linear1.weight": (3, 4), "decoder.layers.1.linear1.bias": (3,),
    "decoder.layers.1.linear2.weight": (4, 3), "decoder.layers.1.linear2.bias": (4,),
    "decoder.layers.1.norm1.weight": (4,), "decoder.layers.1.norm1.bias": (4,), "decoder.layers.1.norm2.weight": (4,),
    "decoder.layers.1.norm2.bias": (4,), "decoder.layers.1.norm3.weight": (4,), "decoder.layers.1.norm3.bias": (4,),
    "decoder.norm.weight": (4,), "decoder.norm.bias": (4,),
}
STATE_DICT_WITHOUT_BIAS = [
    "encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.0.self_attn.out_proj.weight",
    "encoder.layers.0.linear1.weight", "encoder.layers.0.linear2.weight", "encoder.layers.0.norm1.weight",
    "encoder.layers.0.norm2.weight", "encoder.norm.weight", "decoder.layers.0.self_attn.in_proj_weight",
    "decoder.layers.0.self_attn.out_proj.weight", "decoder.layers.0.multihead_attn.in_proj_weight",
    "decoder.layers.0.multihead_attn.out_proj.weight", "decoder.layers.0.linear1.weight",
    "decoder.layers.0.linear2.weight", "decoder.layers.0.norm1.weight", "decoder.layers.0.norm2.weight",
    "decoder.layers.0.norm3.weight", "decoder.norm.weight",
]
