"""scaled_dot_product_attention, MultiheadAttention and TransformerEncoder(Layer): against a numpy reference,
finite differences, and PyTorch 2.13's numbers (the literals below, computed with torch from the same
numpy-seeded parameters, inputs and upstream gradients that `_run` makes here)."""

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck
from actorgrad.nn.attention import MultiheadAttention
from actorgrad.nn.functional import dropout, softmax
from actorgrad.nn.layers import LayerNorm
from actorgrad.nn.transformer import TransformerEncoder, TransformerEncoderLayer
from actorgrad.ops.attention import multi_head_attention_forward
from actorgrad.ops.attention import scaled_dot_product_attention as sdpa

RNG = np.random.default_rng(0)


def array(t: ag.Tensor) -> np.ndarray:
    return t.detach().numpy()


def leaf(a: np.ndarray) -> ag.Tensor:
    return ag.tensor(a, requires_grad=True)


def sdpa_reference(q, k, v, mask=None, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + mask
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) @ v


# -- scaled_dot_product_attention ------------------------------------------------------------------------------
CAUSAL_3x5 = np.tril(np.ones((3, 5), bool))  # PyTorch's is_causal: top-left aligned when L != S


@pytest.mark.parametrize(
    ("shapes", "kwargs", "reference_kwargs"),
    [
        (((2, 3, 4), (2, 5, 4), (2, 5, 6)), {}, {}),
        (((2, 3, 4), (2, 5, 4), (2, 5, 6)), {"scale": -0.3}, {"scale": -0.3}),
        (((2, 3, 4), (2, 5, 4), (2, 5, 6)), {"is_causal": True}, {"mask": CAUSAL_3x5}),
        (((2, 1, 3, 4), (3, 5, 4), (1, 5, 2)), {}, {}),  # batch dims broadcast
    ],
)
def test_sdpa_matches_numpy(shapes, kwargs, reference_kwargs):
    q, k, v = (RNG.standard_normal(s) for s in shapes)
    out = sdpa(ag.tensor(q), ag.tensor(k), ag.tensor(v), **kwargs)
    np.testing.assert_allclose(out.numpy(), sdpa_reference(q, k, v, **reference_kwargs), rtol=1e-12)


@pytest.mark.parametrize("mask", [RNG.random((3, 5)) > 0.3, RNG.standard_normal((2, 1, 5))])
def test_sdpa_masks_bool_attends_where_true_float_is_added(mask):
    mask[..., 0] = True if mask.dtype == bool else mask[..., 0]  # every query attends somewhere
    q, k, v = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 5, 4)), RNG.standard_normal((2, 5, 6))
    out = sdpa(ag.tensor(q), ag.tensor(k), ag.tensor(v), attn_mask=ag.tensor(mask))
    np.testing.assert_allclose(out.numpy(), sdpa_reference(q, k, v, mask), rtol=1e-12)


def test_sdpa_grouped_query_attention_repeats_key_and_value_heads():
    q, k, v = RNG.standard_normal((1, 4, 3, 2)), RNG.standard_normal((1, 2, 5, 2)), RNG.standard_normal((1, 2, 5, 3))
    out = sdpa(ag.tensor(q), ag.tensor(k), ag.tensor(v), enable_gqa=True)
    expected = sdpa_reference(q, k.repeat(2, axis=1), v.repeat(2, axis=1))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


def test_sdpa_gradcheck_with_float_mask():
    arrays = [RNG.standard_normal(s) for s in ((2, 2, 3), (2, 3, 3), (2, 3, 2), (2, 3))]
    assert gradcheck(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m, scale=0.7), [leaf(a) for a in arrays])
    q, k, v = (leaf(RNG.standard_normal(s)) for s in ((1, 2, 3, 2), (1, 1, 2, 2), (1, 1, 2, 2)))
    assert gradcheck(lambda q, k, v: sdpa(q, k, v, is_causal=True, enable_gqa=True), [q, k, v])


def test_sdpa_query_with_no_key_gets_zeros_and_no_gradient():
    mask = np.ones((3, 5), bool)
    mask[1] = False
    q, k, v = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 5, 4)), RNG.standard_normal((2, 5, 6))
    q_leaf, k_leaf = leaf(q), leaf(k)
    out = sdpa(q_leaf, k_leaf, ag.tensor(v), attn_mask=ag.tensor(mask))
    got = out.detach().numpy()
    assert not got[:, 1].any()
    np.testing.assert_allclose(got[:, ::2], sdpa_reference(q[:, ::2], k, v, mask[::2]), rtol=1e-12)
    out.sum().backward()
    assert np.isfinite(q_leaf.grad.numpy()).all() and np.isfinite(k_leaf.grad.numpy()).all()
    assert not q_leaf.grad.numpy()[:, 1].any()


def test_sdpa_dropout_drops_attention_weights_whenever_p_is_positive():
    q, k, v = (ag.tensor(RNG.standard_normal(s)) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 6)))
    ag.manual_seed(7)
    out = sdpa(q, k, v, dropout_p=0.4)
    ag.manual_seed(7)
    weights = dropout(softmax(q @ k.transpose(-2, -1) / 2.0, -1), 0.4)
    np.testing.assert_allclose(out.numpy(), (weights @ v).numpy(), rtol=1e-12)
    assert not sdpa(q, k, v, dropout_p=1.0).numpy().any()
    np.testing.assert_array_equal(sdpa(q, k, v, dropout_p=-0.5).numpy(), sdpa(q, k, v).numpy())  # ignored, as torch


SDPA_ERRORS = [
    ({"query": (2, 3, 4), "dtype": "float64"},
     "Expected query, key, and value to have the same dtype, but got query.dtype: double key.dtype: float and "
     "value.dtype: float instead."),
    ({"query": (4,), "key": (4,), "value": (6,)},
     "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: 1 key.dim: 1 and "
     "value.dim: 1 instead."),
    ({"attn_mask": np.ones((3, 5), np.int64)},
     "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: long int and  "
     "query.dtype: float instead."),
    ({"attn_mask": np.ones((3, 5), bool), "is_causal": True},
     "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"),
    ({"key": (2, 5, 3)}, "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 3]."),
    ({"value": (2, 4, 6)}, "Expected size for first two dimensions of batch2 tensor to be: [2, 5] but got: [2, 4]."),
    ({"attn_mask": np.zeros((2, 2, 3, 5), np.float32)},
     "output with shape [2, 3, 5] doesn't match the broadcast shape [2, 2, 3, 5]"),
    ({"query": (4, 3, 4), "key": (3, 5, 4), "value": (3, 5, 6), "enable_gqa": True},
     "Number of heads in key and value must divide the number of heads in "),
    ({"dropout_p": 1.5}, "dropout probability has to be between 0 and 1, but got 1.5"),
]


@pytest.mark.parametrize(("changes", "message"), SDPA_ERRORS)
def test_sdpa_errors_match_torch(changes, message):
    changes = dict(changes)
    dtype = changes.pop("dtype", "float32")
    shapes = {"query": (2, 3, 4), "key": (2, 5, 4), "value": (2, 5, 6)}
    tensors = {name: ag.randn(*changes.pop(name, shape)) for name, shape in shapes.items()}
    tensors["query"] = tensors["query"].to(getattr(ag, dtype))
    if "attn_mask" in changes:
        changes["attn_mask"] = ag.tensor(changes["attn_mask"])
    with pytest.raises(RuntimeError) as error:
        sdpa(**tensors, **changes)
    assert str(error.value) == message


# -- MultiheadAttention and TransformerEncoder against PyTorch's numbers --------------------------------------
def _set_parameters(module, seed: int) -> np.random.Generator:
    """Every parameter from a numpy stream, in registration order (PyTorch's too); the stream goes on to give the
    inputs and the upstream gradient."""
    rng = np.random.default_rng(seed)
    with ag.no_grad():
        for parameter in module.parameters():
            parameter.copy_(ag.tensor(rng.standard_normal(parameter.shape) * 0.5))
    return rng


def _run(module, shapes, masks, seed):
    """The output, weights, input and parameter gradients of `module` in float64, flattened, by name."""
    module = module.double()
    rng = _set_parameters(module, seed)
    inputs = [leaf(rng.standard_normal(s)) for s in shapes]
    result = module(*inputs, **{name: ag.tensor(mask) for name, mask in masks.items()})
    output, weights = result if isinstance(result, tuple) else (result, None)
    (output * ag.tensor(rng.standard_normal(output.shape))).sum().backward()
    got = {"output": output} | ({} if weights is None else {"weights": weights})
    got |= {f"input{i}": x.grad for i, x in enumerate(inputs)} | {n: p.grad for n, p in module.named_parameters()}
    return {name: value.detach().numpy().ravel() for name, value in got.items()}


def _assert_matches(got, expected):
    assert got.keys() == expected.keys()
    for name, value in got.items():
        np.testing.assert_allclose(value, expected[name], rtol=2e-7, atol=1e-9, err_msg=name)


KEY_PADDING = np.array([[False, False, True], [False, False, False]])
FLOAT_MASK = np.array([[0.0, -1.0, 0.5], [0.2, 0.0, -0.3]])


def test_multihead_attention_packed_batch_first_with_masks_matches_torch():
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask is deprecated"):
        got = _run(MultiheadAttention(4, 2, batch_first=True), [(2, 2, 4), (2, 3, 4), (2, 3, 4)],
                   {"key_padding_mask": KEY_PADDING, "attn_mask": FLOAT_MASK}, 1)
    _assert_matches(got, PACKED)


def test_multihead_attention_kdim_vdim_bias_kv_zero_attn_bool_mask_matches_torch():
    module = MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True)
    got = _run(module, [(2, 2, 4), (3, 2, 3), (3, 2, 5)], {"attn_mask": FLOAT_MASK > 0.1}, 2)
    _assert_matches(got, SEPARATE)


def test_transformer_encoder_post_norm_relu_with_masks_matches_torch():
    layer = TransformerEncoderLayer(4, 2, dim_feedforward=3, dropout=0.0)
    causal = np.triu(np.full((3, 3), -np.inf), 1)
    with pytest.warns(UserWarning, match="Support for mismatched src_key_padding_mask and mask is deprecated"):
        got = _run(TransformerEncoder(layer, 2, norm=LayerNorm(4)), [(3, 2, 4)],
                   {"mask": causal, "src_key_padding_mask": KEY_PADDING}, 3)
    _assert_matches(got, ENCODER)


def test_transformer_encoder_norm_first_gelu_batch_first_without_bias_matches_torch():
    layer = TransformerEncoderLayer(4, 2, dim_feedforward=3, dropout=0.0, activation="gelu", norm_first=True,
                                    batch_first=True, bias=False)
    got = _run(TransformerEncoder(layer, 1), [(2, 3, 4)], {"src_key_padding_mask": KEY_PADDING}, 4)
    _assert_matches(got, ENCODER_NORM_FIRST)


# -- MultiheadAttention: paths, parameters, errors -------------------------------------------------------------
def _mha(**kwargs) -> MultiheadAttention:
    module = MultiheadAttention(4, 2, **kwargs).double()
    _set_parameters(module, 5)
    return module


def test_multihead_attention_gradcheck():
    x, w, b, ow, ob = (leaf(RNG.standard_normal(s)) for s in ((2, 1, 4), (12, 4), (12,), (4, 4), (4,)))
    mask = ag.tensor(np.array([[False, True], [False, False]]))

    def attend(x, w, b, ow, ob):
        return multi_head_attention_forward(x, x, x, 4, 2, w, b, None, None, False, 0.0, ow, ob, attn_mask=mask)

    assert gradcheck(lambda *args: attend(*args)[0], [x, w, b, ow, ob])
    assert gradcheck(lambda *args: attend(*args)[1], [x, w, b, ow, ob])


def test_multihead_attention_without_weights_and_causal_hint_agree_with_the_weights_path():
    module = _mha()
    x = ag.tensor(RNG.standard_normal((3, 2, 4)))
    causal = ag.tensor(np.triu(np.ones((3, 3), bool), 1))  # True = left out, MultiheadAttention's convention
    expected, weights = module(x, x, x, attn_mask=causal)
    assert weights.shape == (2, 3, 3) and not np.triu(array(weights), 1).any()
    for kwargs in ({"need_weights": False}, {"need_weights": False, "is_causal": True}, {"is_causal": True}):
        got = module(x, x, x, attn_mask=causal, **kwargs)[0]
        np.testing.assert_allclose(array(got), array(expected), rtol=1e-12)
    assert module(x, x, x, need_weights=False)[1] is None
    per_head = module(x, x, x, attn_mask=causal, average_attn_weights=False)[1]
    np.testing.assert_allclose(array(per_head).mean(1), array(weights), rtol=1e-12)


def test_multihead_attention_fully_padded_sample_is_nan_with_weights_and_zero_attention_without():
    module = _mha()
    x = ag.tensor(RNG.standard_normal((3, 2, 4)))
    padding = ag.tensor(np.array([[False, True, False], [True, True, True]]))
    with_weights = array(module(x, x, x, key_padding_mask=padding)[0])
    without = array(module(x, x, x, key_padding_mask=padding, need_weights=False)[0])
    assert np.isnan(with_weights[:, 1]).all()  # PyTorch's plain softmax on this path
    np.testing.assert_allclose(without[:, 1], np.broadcast_to(array(module.out_proj.bias), (3, 4)))
    np.testing.assert_allclose(without[:, 0], with_weights[:, 0], rtol=1e-12)


def test_multihead_attention_unbatched_is_the_batched_sample():
    module = _mha()
    q, k = ag.tensor(RNG.standard_normal((3, 4))), ag.tensor(RNG.standard_normal((2, 4)))
    out, weights = module(q, k, k)
    batched, batched_weights = module(q.unsqueeze(1), k.unsqueeze(1), k.unsqueeze(1))
    np.testing.assert_allclose(array(out), array(batched)[:, 0], rtol=1e-12)
    np.testing.assert_allclose(array(weights), array(batched_weights)[0], rtol=1e-12)


def test_multihead_attention_dropout_only_while_training():
    module = _mha(dropout=0.5)
    x = ag.tensor(RNG.standard_normal((3, 2, 4)))
    reference = array(_mha()(x, x, x)[0])
    assert not np.allclose(array(module(x, x, x)[0]), reference)
    np.testing.assert_allclose(array(module.eval()(x, x, x)[0]), reference, rtol=1e-12)


def test_multihead_attention_parameters_state_dict_and_init():
    packed = MultiheadAttention(8, 2)
    assert list(packed.state_dict()) == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert packed.in_proj_weight.shape == (24, 8) and packed.q_proj_weight is None
    bound = math.sqrt(6 / (8 + 24))  # xavier_uniform_ on (3E, E)
    w = array(packed.in_proj_weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert not array(packed.in_proj_bias).any() and not array(packed.out_proj.bias).any()
    assert np.abs(array(packed.out_proj.weight)).max() <= 1 / math.sqrt(8)  # Linear's own init
    assert type(packed.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    separate = MultiheadAttention(8, 2, bias=False, add_bias_kv=True, kdim=3, vdim=5)
    assert {k: tuple(v.shape) for k, v in separate.state_dict().items()} == {
        "q_proj_weight": (8, 8), "k_proj_weight": (8, 3), "v_proj_weight": (8, 5), "bias_k": (1, 1, 8),
        "bias_v": (1, 1, 8), "out_proj.weight": (8, 8),
    }


def test_transformer_encoder_state_dict_and_layer_copies():
    layer = TransformerEncoderLayer(4, 2, dim_feedforward=6)
    encoder = TransformerEncoder(layer, 2)
    names = [name for name in encoder.state_dict() if name.startswith("layers.0.")]
    assert [name[len("layers.0."):] for name in names] == [
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
        "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias",
        "norm2.weight", "norm2.bias",
    ]
    assert len(encoder.state_dict()) == 24 and encoder.layers[0].linear1.weight is not layer.linear1.weight
    np.testing.assert_array_equal(array(encoder.layers[1].linear1.weight), array(layer.linear1.weight))
    assert layer.dropout.p == 0.1 and layer.activation_relu_or_gelu == 1


def _raises(error, message, fn, *args, **kwargs):
    with pytest.raises(error) as caught:
        fn(*args, **kwargs)
    assert str(caught.value) == message


def test_multihead_attention_errors_match_torch():
    _raises(ValueError, "embed_dim and num_heads must be greater than 0, got embed_dim=0 and num_heads=2 instead",
            MultiheadAttention, 0, 2)
    _raises(AssertionError, "embed_dim must be divisible by num_heads", MultiheadAttention, 5, 2)
    module, x = MultiheadAttention(4, 2), ag.randn(3, 2, 4)
    _raises(RuntimeError, "Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
            "method `generate_square_subsequent_mask` to create this mask.", module, x, x, x, is_causal=True)
    _raises(AssertionError, "only bool and floating types of attn_mask are supported", module, x, x, x,
            attn_mask=ag.zeros(3, 3, dtype=ag.int64))
    _raises(RuntimeError, "The shape of the 2D attn_mask is (3, 2), but should be (3, 3).", module, x, x, x,
            attn_mask=ag.zeros(3, 2))
    _raises(RuntimeError, "The shape of the 3D attn_mask is (2, 3, 3), but should be (4, 3, 3).", module, x, x, x,
            attn_mask=ag.zeros(2, 3, 3))
    _raises(AssertionError, "Expected key_padded_mask.shape[1] to be 3, but got 2", module, x, x, x,
            key_padding_mask=ag.zeros(2, 2, dtype=ag.bool))
    _raises(AssertionError, "query should be unbatched 2D or batched 3D tensor but received 4-D query tensor",
            module, x[None], x[None], x[None])
    _raises(AssertionError, "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found 2-D and 3-D "
            "tensors respectively", module, x, x[0], x)
    _raises(AssertionError, "was expecting embedding dimension of 4, but got 3", module, x[..., :3], x, x)
    _raises(AssertionError, "key shape (3, 2, 4) does not match value shape (2, 2, 4)", module, x, x, x[:2])
    _raises(RuntimeError, "activation should be relu/gelu, not tanh", TransformerEncoderLayer, 4, 2,
            activation="tanh")


# -- PyTorch 2.13's numbers for the tests above (gradients of (output * upstream).sum()) ---------------------
PACKED = {
    "output": [
        0.80802196, -1.3912862, 0.69784547, 0.28613277, 0.84581005, -1.3470164, 0.44703785, 0.13193555,
        -0.047399212, -0.5462519, -1.3095607, -0.93267006, -0.16206219, -0.61693736, -0.71149539, -0.56114045,
    ],
    "weights": [
        0.77057904, 0.22942096, 0, 0.56863241, 0.43136759, 0, 0.24363234, 0.088125797, 0.66824186, 0.53913491,
        0.17128514, 0.28957995,
    ],
    "input0": [
        -0.023959731, -0.0023377732, -0.00014012606, -0.0096034781, -0.015572246, 0.010191605, 0.037998883,
        -0.069613102, -0.012343482, -0.021029722, -0.032422632, 0.039178349, -0.015283598, 0.042897732,
        0.079564448, -0.15757016,
    ],
    "input1": [
        -0.0092204569, -0.03792717, 0.060246654, 0.048189103, 0.0092204569, 0.03792717, -0.060246654,
        -0.048189103, 0, 0, 0, 0, -0.013507748, -0.0053116661, 0.13887749, 0.10119288, -0.040074661,
        0.043092012, 0.55257759, 0.25493518, 0.05358241, -0.037780346, -0.69145508, -0.35612806,
    ],
    "input2": [
        0.14234751, -0.47435896, -0.064963127, 0.25053889, 0.036645946, -0.49092584, -0.090710447,
        -0.00023455304, 0, 0, 0, 0, 0.04998516, 0.91434385, 0.25838646, 0.21918028, -0.017272441, 0.37174185,
        0.10472108, 0.086574411, -0.21369536, 0.11431148, 0.11624679, -0.23278941,
    ],
    "in_proj_weight": [
        0.032349807, -0.019092458, 0.063694736, -0.40544436, -0.05303524, 0.0030685991, -0.020976001,
        0.37709988, -0.034857854, -0.037206036, -0.017692831, -0.072644406, 0.031549947, 0.022698995,
        -0.064655468, 0.07473052, -0.73818921, -0.26513997, -0.96455783, 0.54323395, 0.614191, -0.057104503,
        0.26087313, -0.35244566, 0.033056885, -0.0031506866, 0.013935702, -0.020940835, -0.019256348,
        0.013011132, 0.014179321, -0.013665758, -1.8593813, 0.97916248, 0.87894211, -1.3167797, 0.74183176,
        -0.33469205, -0.98425738, 0.33210644, -0.29914399, 0.44513987, 0.59476241, 0.23748142, -3.7677869,
        3.3119429, 2.3707191, -1.6400074,
    ],
    "in_proj_bias": [
        0.19840433, -0.20225929, -0.041749399, 0.0061730984, 3.7470027e-16, -2.4980018e-16, -5.2041704e-18,
        6.0715322e-17, 0.7232332, 0.65010808, -0.55999391, 0.85511244,
    ],
    "out_proj.weight": [
        -3.4232638, 1.1016238, -0.66697456, -0.46852761, 1.592383, -0.22172418, 2.5905754, 0.80375799,
        -2.8279274, 0.79210418, -0.58107442, -0.42665815, 2.1413816, -0.7668805, -0.23071147, 0.085407757,
    ],
    "out_proj.bias": [
        -1.4376626, -2.3205529, -1.9235625, 1.4604471,
    ],
}
SEPARATE = {
    "output": [
        -0.47048203, -0.12765781, -0.76523995, -0.39578049, -0.064530399, -0.18628325, -1.134038, -0.25716806,
        -0.37951808, -0.023393364, -0.73846123, -0.35471612, -0.97865608, 0.22646484, -0.75900862, -0.45264868,
    ],
    "weights": [
        0.34837705, 0.20330976, 0, 0.21482149, 0.2334917, 0, 0.30785408, 0.14859134, 0.27863212, 0.26492245,
        0.24659915, 0.29664643, 0, 0.21936618, 0.23738824, 0, 0.29272063, 0.21094285, 0.22041772, 0.2759188,
    ],
    "input0": [
        0.031874207, 0.11465372, -0.072449711, 0.05597179, -0.014942608, 0.013802228, -0.027060167,
        -0.028944916, 0.087925441, 0.28276651, -0.19446454, -0.012443508, 0.0089245829, -0.0052720431,
        0.015555472, 0.020205473,
    ],
    "input1": [
        -0.0096197919, -0.0077429934, 0.035319402, 0.047879101, -0.041701457, 0.0019043774, -0.001547108,
        -0.25970482, -0.031398814, -0.03655425, 0.047800987, -0.0068574315, 0.041541518, 0.17095577,
        -0.067492925, 0.026402244, 0.029815776, 0.0041924236,
    ],
    "input2": [
        0.18682508, 0.11671184, -0.035316167, -0.23055754, 0.083226312, 0.21138864, 0.13106889, -0.039174923,
        0.013559211, -0.0094531133, 0.41954502, 0.17932123, -0.0038703818, -0.71928136, 0.43348852, -0.12946046,
        -0.065830981, 0.030643605, 0.24510674, -0.08839959, 0.16702505, 0.060748941, 0.0053343575, -0.32075514,
        0.20288257, -0.25268184, -0.12754961, 0.057943447, 0.23995604, -0.084504357,
    ],
    "q_proj_weight": [
        -0.020311606, -0.013414343, -0.073745279, -0.021577621, -0.0062492833, 0.043181274, 0.047187139,
        0.041592656, -0.067714094, 0.087389425, -0.038041865, 0.080708435, 0.0089222527, 0.77960641, 0.22693318,
        0.80783436,
    ],
    "k_proj_weight": [
        0.21480725, -0.032633843, -0.092223807, -0.072157557, -0.027571516, 0.023697047, 0.74583932, -1.0798897,
        0.065809175, -0.53791658, 0.66321355, 0.019202498,
    ],
    "v_proj_weight": [
        0.095548018, 0.16096797, -0.011492093, -0.020624357, -0.17620934, -0.18067907, -0.35737951, -0.33531728,
        0.029591948, 0.32856505, -0.42040675, 0.32173041, -0.068619988, -0.30770684, -0.93240803, 0.318405,
        -0.051793966, 0.16550522, -0.064722171, 0.31213538,
    ],
    "in_proj_bias": [
        0.011332535, -0.046982663, -0.10139115, -1.0293902, 0.12784653, -0.037531863, 0.2154913, -0.048818509,
        -0.24890112, 0.37422617, -0.76106385, 0.32927531,
    ],
    "bias_k": [
        -0.1231216, -0.0099499648, -0.054255347, -0.0046789546,
    ],
    "bias_v": [
        -0.064286562, 0.094727751, -0.39254693, 0.14531264,
    ],
    "out_proj.weight": [
        -1.1431913, -0.43592895, 0.55020189, 0.18410621, -0.19946164, -0.35621645, 0.73759129, 0.20054423,
        0.53021584, -0.084848055, 0.051529657, -0.09148156, -1.6230406, -0.48297953, 0.56336298, 0.39855236,
    ],
    "out_proj.bias": [
        -1.2351239, -0.78351794, 0.23030301, -1.5780062,
    ],
}
ENCODER = {
    "output": [
        1.0080427, -0.17963775, 0.41871925, -0.38250689, 1.0125487, -0.18129701, 0.41125346, -0.40169273,
        1.0144078, -0.1819114, 0.40830798, -0.40883853, 1.0181238, -0.18332719, 0.40138677, -0.42645638,
        1.0110658, -0.18075805, 0.41373775, -0.39537894, 1.0146575, -0.18220201, 0.40706247, -0.41293414,
    ],
    "input0": [
        0.0083432886, 0.0076724291, -0.0079843233, 0.010687858, -0.0057536588, 0.00051831976, 0.0027898677,
        -0.0057244984, 0.010040287, -0.010997994, -0.008900764, 0.0053879978, -0.0016372503, -0.011516497,
        0.013563646, -0.0010537443, 0.0061382994, -0.028280704, 0.0056604471, 0.019618106, 0.0026285841,
        0.0044187584, -0.021648068, -0.00604406,
    ],
    "layers.0.self_attn.in_proj_weight": [
        6.469489e-05, -0.00010032862, -0.00052178682, 0.00068669838, -0.013015908, 0.0028033835, 0.010169175,
        -0.0074705167, 0.0050250799, -0.00098672823, -0.0034185099, 0.0019080371, 0.0046483172, -0.00092512772,
        -0.0031044404, 0.0018825769, 0.040412659, -0.00047870857, -0.013700645, 0.033209735, 0.0073995826,
        -0.0020006736, -0.0019457428, 0.0049432194, 0.0067312853, -0.0038002922, -0.0010504166, 0.011598294,
        -0.0041180755, 0.0022077585, 0.00069507896, -0.0060786893, -0.011323514, 0.010489438, 0.036322857,
        0.040524076, 0.0049869501, -0.00065091639, 0.0031325733, 0.0082067923, -0.0029301097, 0.00072199211,
        -0.013665068, -0.018501182, -0.018201929, -0.0047904293, -0.021739568, -0.051964463,
    ],
    "layers.0.self_attn.in_proj_bias": [
        0.00027451843, 0.0063424106, -0.0030491455, -0.0027244016, 6.0715322e-18, 1.9515639e-18, 8.6736174e-19,
        4.3368087e-19, 0.034872653, 0.0071585256, -0.018500466, -0.028572306,
    ],
    "layers.0.self_attn.out_proj.weight": [
        0.011893623, -0.05233747, -0.0038727893, 0.01720025, -0.025527641, 0.10709689, 0.021509319, -0.05425622,
        0.0052172291, -0.01933352, -0.006679093, 0.011177696, 0.0084167885, -0.035425895, -0.010957437,
        0.025878273,
    ],
    "layers.0.self_attn.out_proj.bias": [
        0.016877518, -0.041043106, 0.0065416032, 0.017623985,
    ],
    "layers.0.linear1.weight": [
        0.023053338, -0.091218839, 0.057402456, 0.012076646, 0.00038017116, 0.0028314709, -4.4077191e-06,
        -0.0011173387, -0.019378065, 0.0079080071, -0.013933078, 0.0035966484,
    ],
    "layers.0.linear1.bias": [
        0.068822874, -0.0003830217, -0.0097602439,
    ],
    "layers.0.linear2.weight": [
        -0.018303382, -0.018159042, -0.024273086, 0.0098500791, 0.0065621205, 0.0073673171, 0.0093361566,
        0.010731766, 0.016070969, -0.00088285416, 0.0008651557, 0.00083479958,
    ],
    "layers.0.linear2.bias": [
        -0.048912152, 0.021281292, 0.024579076, 0.0030517834,
    ],
    "layers.0.norm1.weight": [
        -0.041792889, -0.0050304104, -0.099022605, 0.067701065,
    ],
    "layers.0.norm1.bias": [
        0.0022088814, 0.054434746, 0.053573902, 0.043928869,
    ],
    "layers.0.norm2.weight": [
        0.017938915, 0.13038377, -0.029735151, 0.015861471,
    ],
    "layers.0.norm2.bias": [
        0.089202063, -0.090292099, -0.030082419, -0.0084634403,
    ],
    "layers.1.self_attn.in_proj_weight": [
        5.059387e-05, 0.00042970815, -0.00015191446, 9.3016393e-05, 1.4173176e-07, -3.3530675e-05,
        1.1662304e-05, -6.9461499e-06, 8.3986902e-05, 0.00056347121, -0.00020894607, 0.00012359877,
        7.1264938e-05, 0.0004431777, -0.00017104451, 9.7778178e-05, 0.00060261586, -0.00042056183,
        -0.00050407783, -2.5810565e-05, 6.2264811e-05, -4.9330898e-05, -6.4465506e-05, -3.5960053e-06,
        0.000208136, -0.00015245008, -0.00018826474, -9.9982679e-06, -0.00036416925, 0.00027858798,
        0.00035662085, 1.9488974e-05, -0.011092964, -0.052956886, 0.019974044, -0.011899262, -0.018989978,
        -0.11681226, 0.038860737, -0.025814579, 0.018672407, 0.14375242, -0.04728287, 0.031510447,
        -0.0069370612, -0.055506161, 0.017183415, -0.012118897,
    ],
    "layers.1.self_attn.in_proj_bias": [
        0.00024174443, -1.8304033e-05, 0.00032170139, 0.00025528973, -5.1499603e-18, -3.4050724e-19,
        -2.1684043e-19, 2.1684043e-19, -0.030819446, -0.066385932, 0.081304035, -0.031102296,
    ],
    "layers.1.self_attn.out_proj.weight": [
        0.057083341, -0.013586448, 0.014284998, 0.094399869, -0.012369382, 0.0039017228, -0.0028128588,
        -0.019631835, 0.0092478043, -0.003001377, 0.0049105588, 0.018487564, -0.053961763, 0.012686102,
        -0.016382698, -0.093255598,
    ],
    "layers.1.self_attn.out_proj.bias": [
        0.093040595, -0.020021802, 0.016772044, -0.089790837,
    ],
    "layers.1.linear1.weight": [
        0, 0, 0, 0, 0, 0, 0, 0, -0.076587711, 0.034927208, 0.038141497, 0.020452425,
    ],
    "layers.1.linear1.bias": [
        0, 0, -0.081933172,
    ],
    "layers.1.linear2.weight": [
        0, 0, -0.011297208, 0, 0, -0.010738089, 0, 0, 0.0095257441, 0, 0, 0.012509553,
    ],
    "layers.1.linear2.bias": [
        -0.10165235, -0.087293414, 0.056771478, 0.13217428,
    ],
    "layers.1.norm1.weight": [
        0.0033176285, -0.13831254, -0.059734983, -0.10549576,
    ],
    "layers.1.norm1.bias": [
        -0.10336765, -0.081781371, 0.064506063, 0.16627671,
    ],
    "layers.1.norm2.weight": [
        -1.3657087, 0.31927318, -0.015128372, 0.43870197,
    ],
    "layers.1.norm2.bias": [
        -1.1216644, -0.23030001, 0.14787721, 1.2040872,
    ],
    "norm.weight": [
        -0.89519933, -0.7960999, 1.6721097, 0.26754119,
    ],
    "norm.bias": [
        -2.4739504, 0.5424365, 1.3392233, -2.5577716,
    ],
}
ENCODER_NORM_FIRST = {
    "output": [
        -0.35368522, 1.0812933, 1.9648128, -0.38297868, -0.89902683, -0.2040586, 2.3592588, 0.65859799,
        -0.34247891, 0.77055643, -0.10869342, 0.84100738, -1.663062, 1.3830857, 0.9021483, 0.0047665169,
        0.24522641, -0.20995734, -0.45223744, 1.391302, 0.0045838146, -1.0587051, 1.0664824, -1.9472384,
    ],
    "input0": [
        4.5560891, -0.43688694, -0.19002577, -0.14111073, 5.3618478, -2.5082504, 1.6603179, -0.53132131,
        1.7159346, 0.0021209715, 0.073388694, 1.1193783, 0.063114916, 0.41793412, 1.0570493, -1.0391006,
        -1.4800557, -1.673257, -0.81737255, 1.5491221, -2.6289303, 1.2873068, 2.2512506, 0.15967369,
    ],
    "layers.0.self_attn.in_proj_weight": [
        0.14900588, 0.22516795, 1.1937526, -2.1312797, -0.034898461, 0.070007055, -0.021876028, 0.0051640436,
        -0.12179859, 0.35607783, 0.0045874053, -0.19617233, -0.053781641, 0.45852406, -0.05897785, -0.23618121,
        -0.16395818, 0.15943019, -0.041103049, 0.066452538, 0.43124522, -0.47444295, 0.071790851, -0.07466444,
        0.020912946, 0.083599391, 0.01518277, -0.10755582, -0.016276052, 0.12324193, -0.097442274, 0.063035423,
        3.6026002, -0.59900576, -1.9707315, 0.6017517, 0.22903725, -0.0796085, -0.065297166, -0.020192351,
        0.85766682, -0.43245793, -0.23010176, 0.01067705, 1.6240432, -0.66052541, -0.63073168, 0.19136629,
    ],
    "layers.0.self_attn.out_proj.weight": [
        -2.6505222, 2.5507536, 1.6051658, -0.84986007, -0.49102302, 0.46311059, 0.053057169, -0.2954746,
        -0.59640869, 0.53490415, 0.26806824, -0.28697177, -1.7489092, 1.6385084, 0.93231315, -0.68054404,
    ],
    "layers.0.linear1.weight": [
        -0.0024933958, 0.76925548, -2.1755277, 0.32638458, -0.00084981359, 0.22008557, 0.4063007, -0.038356715,
        -0.005257507, 0.29928483, -1.2705168, -0.005706415,
    ],
    "layers.0.linear2.weight": [
        -0.43451001, 1.823874, -0.61183033, -1.0530749, 1.2875698, -0.76548517, -0.33744424, 1.1330195,
        -0.17468368, 0.20375581, 1.3696976, 0.071970385,
    ],
    "layers.0.norm1.weight": [
        3.7762071, 0.090102527, -2.7957936, 1.3477722,
    ],
    "layers.0.norm2.weight": [
        -1.9432571, -0.7408354, 2.7349805, 2.5844054,
    ],
}
