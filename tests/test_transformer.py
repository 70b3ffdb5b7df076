"""TransformerDecoderLayer, TransformerDecoder and Transformer: against PyTorch 2.13's numbers (the literals below,
computed with torch in float64 from the same numpy-seeded parameters, inputs and upstream gradients that `_run`
makes here), gradcheck, torch's state_dict keys, initialisation, causal-mask detection and errors."""

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


def _set_parameters(module, seed: int) -> np.random.Generator:
    """Every parameter from a numpy stream, in registration order (PyTorch's too); the stream goes on to give the
    inputs and the upstream gradient."""
    rng = np.random.default_rng(seed)
    with ag.no_grad():
        for parameter in module.parameters():
            parameter.copy_(ag.tensor(rng.standard_normal(parameter.shape) * 0.5))
    return rng


def _run(module, shapes, masks, seed, **kwargs):
    """The output and the input and parameter gradients of `module` in float64, flattened, by name."""
    module = module.double()
    rng = _set_parameters(module, seed)
    inputs = [ag.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    masks = {name: mask if isinstance(mask, ag.Tensor) else ag.tensor(mask) for name, mask in masks.items()}
    output = module(*inputs, **masks, **kwargs)
    (output * ag.tensor(rng.standard_normal(output.shape))).sum().backward()
    got = {"output": output} | {f"input{i}": x.grad for i, x in enumerate(inputs)}
    got |= {name: p.grad for name, p in module.named_parameters()}
    return {name: array(value).ravel() for name, value in got.items()}


def _assert_matches(got, expected):
    """Every expected array matches; the gradients torch's numbers leave out must still be there."""
    assert expected.keys() <= got.keys()
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-8, atol=1e-10, err_msg=name)


# -- values and gradients against PyTorch's -----------------------------------------------------------------------
def test_decoder_layer_post_norm_sequence_first_with_masks_matches_torch():
    masks = {
        "tgt_mask": np.triu(np.full((3, 3), NEG), 1),
        "tgt_key_padding_mask": np.array([[0.0, 0.0, -1.5], [0.3, 0.0, 0.0]]),
        "memory_mask": np.array([[False, True], [False, False], [False, False]]),
        "memory_key_padding_mask": np.array([[False, False], [False, True]]),
    }
    got = _run(TransformerDecoderLayer(4, 2, dim_feedforward=3, dropout=0.0), [(3, 2, 4), (2, 2, 4)], masks, 11)
    assert len(got) == 3 + 18  # output, tgt and memory, and every parameter
    _assert_matches(got, DECODER_POST_NORM)


def test_decoder_layer_norm_first_batch_first_gelu_without_bias_matches_torch():
    masks = {
        "tgt_mask": np.triu(np.ones((3, 3), bool), 1),
        "memory_mask": np.array([[0.0, -1.0, 0.5, 0.0], [0.2, 0.0, -0.3, 0.1], [0.0, 0.4, 0.0, -0.6]]),
        "memory_key_padding_mask": np.array([[0.0, 0.0, NEG, 0.0], [0.0, 0.0, 0.0, 0.0]]),
    }
    layer = TransformerDecoderLayer(4, 2, dim_feedforward=3, dropout=0.0, activation="gelu", norm_first=True,
                                    batch_first=True, bias=False)
    got = _run(layer, [(2, 3, 4), (2, 4, 4)], masks, 12, tgt_is_causal=True)
    assert got.keys() == DECODER_NORM_FIRST.keys()
    _assert_matches(got, DECODER_NORM_FIRST)


def test_transformer_with_a_causal_target_mask_and_key_padding_matches_torch():
    padding = np.array([[False, False, False, True], [False, True, False, False]])
    masks = {"tgt_mask": Transformer.generate_square_subsequent_mask(3), "src_key_padding_mask": padding,
             "memory_key_padding_mask": padding}
    model = Transformer(4, 2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=3, dropout=0.0)
    got = _run(model, [(4, 2, 4), (3, 2, 4)], masks, 13)
    assert len(got) == 3 + 34  # output, src and tgt, and every parameter
    _assert_matches(got, TRANSFORMER)


def _set_leaf_parameters(module, parameters) -> None:
    """Put gradcheck's perturbed copies where the module's parameters were, by their dotted names."""
    for (name, _), parameter in zip(list(module.named_parameters()), parameters, strict=True):
        owner, _, leaf_name = name.rpartition(".")
        module.get_submodule(owner)._parameters[leaf_name] = parameter


def test_decoder_layer_gradcheck_with_a_callable_activation_and_masks():
    layer = TransformerDecoderLayer(4, 2, dim_feedforward=3, dropout=0.0, activation=ag.tanh, dtype=ag.float64)
    rng = _set_parameters(layer, 21)
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
def test_a_decoder_layer_gives_the_cpus_values_and_gradients_on_cuda():
    pytest.importorskip("cupy")
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal(s) for s in ((3, 2, 4), (5, 2, 4))]
    mask = np.triu(np.full((3, 3), NEG), 1)
    padding = np.array([[False, False, True, False, False], [False, False, False, False, False]])
    results = []
    for device in (None, ag.device("cuda:0")):
        layer = TransformerDecoderLayer(4, 2, dim_feedforward=6, dropout=0.0, dtype=ag.float64, device=device)
        _set_parameters(layer, 10)
        tgt, memory = (ag.tensor(a, device=device, requires_grad=True) for a in arrays)
        output = layer(tgt, memory, tgt_mask=ag.tensor(mask, device=device),
                       memory_key_padding_mask=ag.tensor(padding, device=device))
        (output * output).sum().backward()
        assert output.device == tgt.device and layer.multihead_attn.in_proj_weight.grad.device == tgt.device
        results.append([array(output), array(tgt.grad), array(memory.grad)]
                       + [array(p.grad) for p in layer.parameters()])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


# -- PyTorch 2.13's numbers for the tests above (gradients of (output * upstream).sum()) ---------------------------
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
DECODER_POST_NORM = {
    "output": [
        -0.4732018585, 0.6537743571, -0.2373903064, -0.9437023002, -0.4286189523, 0.5945961864, -0.1566700808,
        -0.6051394985, -0.4395385242, 0.6412467794, -0.2002811903, -0.8673250766, -0.4119632527, 0.5849490989,
        -0.1627177731, -0.6825771929, -0.4241368944, 0.587060294, -0.1557592317, -0.6040446538, -0.4160526107,
        0.5939225581, -0.1644876329, -0.6921969309,
    ],
    "input0": [
        0.01176208365, -0.006058213255, 0.02779684695, 0.006149990129, 0.01128479178, -0.02727665545, 0.10368045,
        -0.05062416319, 0.01867074576, 0.01771901371, -0.02148471126, -0.02972909935, 0.005442154555, -0.007846959563,
        0.002065278889, 0.0005954850588, -0.0198781086, -0.009075410055, 0.0224242935, 0.004115288165, 0.001402282426,
        -0.005565303404, 0.008707404557, -0.004562200084,
    ],
    "input1": [
        -0.102031168, 0.02444989398, 0.008320685632, 0.09670682697, 0.01825095434, 0.07808791029, 0.004475209864,
        0.06068542999, 0.1274408416, -0.09465802171, -0.01127866231, -0.170434799, 0.0, 0.0, 0.0, 0.0,
    ],
    "self_attn.in_proj_weight": [
        -0.002183795093, -0.0007853891718, -0.001931465162, 0.0009259693562, 0.005105719369, 0.002173905065,
        0.00386285514, -0.002030534003, 0.008745904029, -0.002982042153, 0.002889635336, 0.004295072356,
        0.002151261799, -0.001321673283, 0.0005645972818, 0.001506292592, -0.007850128199, -0.00327072343,
        -0.003927738424, 0.0009155094551, 0.001064097934, 0.0004370658164, 0.0007742436068, 0.0001227071045,
        -0.004369028106, -0.002344862651, -0.002878218753, 5.365330539e-05, -0.001787167139, -0.001020189572,
        -0.001131304376, 0.000211645007, 0.01421840343, -0.001437805612, 0.002612703778, -0.00107128807,
        -0.01417029506, -0.001938754788, -0.003197336573, 0.004026513036, -0.04883594446, -0.03571605303,
        -0.0386084678, 0.001224832101, -0.05173849576, -0.03480172957, -0.03417561582, 0.006447384442,
    ],
    "self_attn.in_proj_bias": [
        -0.00113984348, 0.001368810045, -0.00330016724, -0.0006840143024, -6.505213035e-19, 1.28749008e-19,
        7.047314121e-19, 1.626303259e-19, 0.02183140486, -0.02198216141, -0.02076408172, -0.04621185638,
    ],
    "self_attn.out_proj.weight": [
        0.01346937084, 0.01428831458, 0.007094801632, -0.06330091594, -0.0002492752918, -0.01307140427, 0.06331027292,
        -0.04077682284, 0.008317502982, 0.04113021303, -0.1198469727, 0.07117900459, -0.02153759853, -0.04234712334,
        0.04944189812, 0.03289873419,
    ],
    "self_attn.out_proj.bias": [
        0.03279798931, -0.04959932593, 0.1071910053, -0.09038966866,
    ],
    "multihead_attn.in_proj_weight": [
        0.01021841554, 0.01107493909, 0.008724275709, -0.005105493268, 0.006390500156, 0.006926161857, 0.005456079275,
        -0.003192927062, -0.0270438548, -0.01210269212, -0.04095468541, 0.02624252289, -0.03926673222, -0.01757268607,
        -0.05946477219, 0.03810322628, 0.0109065262, -0.00757976675, 0.01197107468, 0.01852611793, -0.00214963875,
        0.001493945921, -0.002359457591, -0.003651434038, -0.02601344974, 0.01807870608, -0.02855253304,
        -0.04418714345, 0.008948655077, -0.006219094604, 0.009822102502, 0.01520042553, 0.2477008195, -0.1396444755,
        0.2113355907, 0.3452166747, -0.0598057368, 0.03068116779, -0.04350055771, -0.07751807555, -0.04029696459,
        0.02403570284, -0.02203117481, -0.06888601172, -0.2417575649, 0.03627519267, -0.1594125098, -0.01346837,
    ],
    "multihead_attn.in_proj_bias": [
        0.009759887773, 0.006103741237, -0.0456330291, -0.06625756375, -5.204170428e-17, 2.949029909e-17, 0.0,
        -8.67361738e-19, 0.06551000387, -0.02604842754, -0.04054616866, 0.04103767281,
    ],
    "multihead_attn.out_proj.weight": [
        0.1036885608, 0.01339915695, 0.03962628969, -0.0002048529552, 0.04650431203, -0.05467687211, 0.01657659755,
        0.04826301855, -0.07493904992, 0.1675061763, -0.08499202188, -0.09240738615, -0.07525382286, -0.1262284611,
        0.02878913465, 0.04434922055,
    ],
    "multihead_attn.out_proj.bias": [
        0.02173791874, -0.04737253347, -0.0421547852, 0.06778939993,
    ],
    "linear1.weight": [
        -0.0874417035, -0.004904515744, 0.2644922919, -0.0845872223, -0.05097448473, -0.002292015166, 0.1195508464,
        -0.01976778836, -0.06859464033, -0.001680404899, 0.2132025649, -0.07119363964,
    ],
    "linear1.bias": [
        -0.2214065207, -0.08743536224, -0.1791106082,
    ],
    "linear2.weight": [
        0.0007793788684, -0.0005201868151, 0.005174932363, -0.0705753432, -0.3399589948, -0.1141057744, -0.07212045929,
        -0.28203102, -0.1154655194, 0.1419164236, 0.6225102016, 0.2243963614,
    ],
    "linear2.bias": [
        0.002872900457, -0.3004030548, -0.2716160292, 0.5691461835,
    ],
    "norm1.weight": [
        -0.05484881363, 0.2531890926, 0.04622115459, 0.1183867348,
    ],
    "norm1.bias": [
        0.03427747912, -0.1039798614, -0.1477284288, 0.09317668014,
    ],
    "norm2.weight": [
        -0.04484060726, 0.300166287, -0.3894189176, -0.4109299649,
    ],
    "norm2.bias": [
        0.01834228207, -0.3700279498, -0.2260098661, 0.4609949826,
    ],
    "norm3.weight": [
        1.185232578, 0.8257149891, 3.663176752, -0.3707647902,
    ],
    "norm3.bias": [
        3.460647322, 0.2867408891, -3.010008231, 2.292397163,
    ],
}
DECODER_NORM_FIRST = {
    "output": [
        0.6424945462, 0.3469727962, -1.663960558, -0.7166898353, 0.9799921851, 1.479603505, 0.616534834, 0.2714852509,
        1.178649748, 0.3381394785, -1.325176743, -0.231924503, -0.617058412, -2.013377515, -1.996243451, 1.936895971,
        -1.09474582, -1.683714834, -0.5756113404, 1.40104132, 0.3001791496, 0.8289978259, -0.4857608605, -0.2961504325,
    ],
    "input0": [
        -0.3578303535, 1.773760878, -0.7340782803, 1.399164176, -1.375508277, -0.5002747317, -0.06803923665,
        1.798927236, 0.1298930211, -0.4485576591, 1.796067344, -1.144017564, 0.7245575868, 1.207063476, 0.4579279855,
        -0.1992493465, -0.119817316, -0.1881939829, 0.5068570784, -2.214543386, -0.5638412143, 0.02773466602,
        -0.8344113169, -1.387536641,
    ],
    "input1": [
        -0.5997596001, -0.05736251987, -0.3610369958, -1.036886647, -0.1819756251, 0.0996398033, -0.2447521624,
        -1.203348042, 0.0, 0.0, 0.0, 0.0, 0.1002273506, -0.1273983557, -0.1597426792, -0.2254082353, -0.1524141716,
        -0.006359814967, 0.1028784525, -0.7334755591, 0.06264872536, 0.02551300754, 0.1686953928, -0.4598764406,
        -0.2919841747, -0.08533781951, 0.05736559822, -0.745804935, -0.1912071355, 0.007442315477, 0.06007725212,
        -0.742356467,
    ],
    "self_attn.in_proj_weight": [
        0.003121681913, 0.004401000874, -0.00578190392, 0.005621786814, 0.002578450454, 0.001825056165,
        -0.004037043178, 0.004233348637, 0.005197963322, -0.01962317035, 0.0004796801044, 0.0007355196068,
        0.002492879556, -0.0406982908, 0.01252385999, -0.008077013011, 0.001991115429, 0.0001137758227,
        -0.002279317339, 0.003849480104, -0.001339290057, -0.0009057478953, 0.001755650777, -0.003104541165,
        -0.004882577058, 0.02233670157, 0.002195406518, 0.01216782734, -0.01013476913, 0.02122480482, 0.009272188545,
        0.003900300231, 0.1227972213, 0.3797435472, -0.5497625092, -0.4042765074, -0.0365302236, -0.3175128431,
        0.07911227325, -0.4003488299, 0.1464789006, 0.8511577526, -0.5838481733, 0.2701555431, 0.2528562038,
        -0.5539806964, -1.185091041, -2.824950074,
    ],
    "self_attn.out_proj.weight": [
        0.5399873632, -0.1213906071, 0.290916087, 0.06742900267, -0.1361752722, -0.6612106209, -0.3785904744,
        0.9332902464, 0.1435902304, -0.7347147816, -0.1344242677, 0.7595391467, -1.261241421, 2.323685152,
        -0.4899031988, -2.721336648,
    ],
    "multihead_attn.in_proj_weight": [
        0.3475279903, 0.1953981547, -1.755224289, 0.00132444983, 0.1010710813, 0.1369769059, -0.4792204391,
        -0.001770006137, -0.04456071403, 0.1465617144, 0.41697784, 0.002061884522, -0.03918415741, 0.1073283948,
        0.419620715, 0.005752860419, -1.046973739, -0.6150616629, 0.5172036113, -0.6751352624, -0.3153407936,
        -0.0768542886, 0.08643624629, -0.1697654431, -0.4495559063, -0.3055170778, 0.2598274551, -0.2619111202,
        0.5307590701, 0.3403715582, -0.3126610827, 0.2576584542, 0.1719759402, -0.116418189, 0.5534494345,
        -0.2568017972, 0.8604640849, -0.4977583326, 1.060011623, 1.134419003, -1.119493208, 2.533578151, -2.329133554,
        -3.620400634, -0.86936845, -0.1345495801, -0.4933963695, 0.1439443098,
    ],
    "multihead_attn.out_proj.weight": [
        0.4584848254, -1.489953069, 0.1696829337, 0.3771257275, -0.6904611753, 0.4531771252, 0.3383836847,
        0.9248985875, 0.4841051078, -2.130251184, 0.1647950352, 0.9015014726, -0.02496941378, 2.360917761,
        -1.294678296, -3.052040827,
    ],
    "linear1.weight": [
        -0.02396189056, -0.1118346139, 0.007712553019, -0.01803130757, 0.0536345433, -0.2834833615, -0.5891901491,
        -0.07680846213, 0.1987979592, -0.5757274697, -1.06562964, -0.1195800841,
    ],
    "linear2.weight": [
        -0.08978607074, -0.1041409506, 0.1496532594, -0.326112179, -0.2576449423, 0.0235015864, -0.2635626909,
        -0.2286963105, 0.1973281298, 0.5208810034, 0.3296377348, -0.248364157,
    ],
    "norm1.weight": [
        0.5831952381, -1.498553031, -0.03253723673, -4.171713353,
    ],
    "norm2.weight": [
        3.538984791, -0.3480789274, 0.4251839258, 0.04485818317,
    ],
    "norm3.weight": [
        -0.5557584254, 0.3667767506, -0.07150502235, 1.586446161,
    ],
}
TRANSFORMER = {
    "output": [
        -0.3201330529, 0.1976135173, 0.4495416194, -0.004242429124, -0.217316401, 0.2325416282, 0.714584131,
        -0.01601584935, -0.2327465816, 0.2277490808, 0.6835300356, -0.01569231631, -0.2511875672, 0.2256177748,
        0.6495101848, -0.01391005151, -0.3200493055, 0.1976186166, 0.4497807361, -0.004269487128, -0.2654273183,
        0.2217640289, 0.6180043727, -0.01274302758,
    ],
    "input0": [
        -0.001489787122, 0.0002374893459, -0.0001793772, 0.0002231702287, -0.0002220443066, -0.0003609127959,
        0.00018517975, 0.0003588557884, -0.002647146884, 0.001791935774, 0.0009695801117, 0.0003889605017, 0.0, 0.0,
        0.0, 0.0, -0.002725049934, -0.0001701856595, -0.000923798309, 0.002073044944, -0.0009264034742,
        0.0003277907123, -0.0007153919544, 0.001189207905, 0.0, 0.0, 0.0, 0.0, -0.0001714218704, -0.0002453262958,
        -5.832650798e-05, 0.000343821662,
    ],
    "input1": [
        0.003904481708, 0.0137792166, 0.03937806623, 0.09204212252, -0.01231872025, 0.05481793837, 0.008034770663,
        0.01471263241, -0.02478238807, 0.02694243673, 0.02775355473, -0.05820638122, 0.005852805915, -0.06529744872,
        0.07264960589, 0.0009505397472, 0.01893451099, -0.01187541768, 0.009033992129, 0.01809710673, -0.003359965665,
        -0.01240396213, 0.006569535575, -1.360325808e-05,
    ],
    "encoder.layers.0.self_attn.in_proj_weight": [
        0.0002605359818, -4.285250786e-05, -0.0004377201257, -0.0006205245762, 0.0005252444721, 0.0001068737155,
        -0.0005690367196, -0.0009372026681, 0.000186472082, 0.0007427140043, 0.0002378669803, -6.688554295e-05,
        0.0005666899799, -7.794406257e-05, -0.001553077362, -0.000911634645, -0.0002333636012, -9.245897871e-05,
        5.338742979e-05, 0.0002787170876, -4.820713925e-05, 9.427244723e-05, 1.639243479e-05, 5.416012153e-05,
        0.0004172636243, 0.0006478973882, -0.0001949526246, -0.0006405167762, -2.758283361e-06, 0.0002785188532,
        9.717903007e-05, 0.0001603423606, -0.0001029155216, -0.001940763758, -0.001990424589, 0.00110197214,
        -2.527922603e-05, -0.0005106197512, -0.000390640443, -0.0001196337485, 0.000218405444, -0.000747070881,
        -0.001765750901, -7.420894272e-05, -1.116048079e-05, 0.001292915077, 0.00304924998, 0.0001766668853,
    ],
    "encoder.norm.weight": [
        -0.01089164204, 0.002713991761, 0.02670774701, -0.07238643688,
    ],
    "decoder.layers.0.multihead_attn.in_proj_weight": [
        -5.184890081e-06, -4.775216964e-05, 0.0001447993099, -9.031026405e-05, 8.147095376e-06, 6.254601142e-05,
        -0.0001830171188, 0.0001158212317, 1.676421928e-05, 4.09117196e-05, -2.384787739e-05, 6.177923286e-05,
        -2.135767806e-05, -2.562548853e-05, 5.449294266e-05, -2.198739509e-05, 8.497536485e-05, -4.835259179e-05,
        -2.828115757e-05, 0.0002248090654, -2.335429977e-05, 2.027573736e-05, 1.432266956e-06, -6.843969081e-05,
        0.0001374194919, -5.134288854e-06, -0.0001058733878, 0.0002555540231, 5.78511536e-05, -9.599901218e-05,
        3.638186433e-05, 0.000223161292, -0.1974512534, -0.05156490515, -0.01397422131, 0.2025578004, -0.002616459021,
        -0.001126494228, -0.00143504957, 0.006450914786, -0.02481145196, -0.006321308323, -0.001463672492,
        0.02438602169, 0.1304818825, 0.03414379699, 0.009619004059, -0.1347833562,
    ],
    "decoder.layers.0.linear1.bias": [
        0.0, 0.0, -0.1754089646,
    ],
    "decoder.norm.bias": [
        1.034217792, -1.016489626, 0.9215638114, 2.835480456,
    ],
}
