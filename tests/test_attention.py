"""scaled_dot_product_attention, MultiheadAttention and TransformerEncoder(Layer): against a numpy reference,
finite differences, and numpy versions of PyTorch's documented multi-head attention and encoder layer (their
gradients by central differences), run on the same numpy-seeded parameters and inputs."""

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


# -- MultiheadAttention and TransformerEncoder against numpy versions of PyTorch's documented formulas ------------
# The outputs come from the forward pass written out in numpy below; the gradients of (output * upstream).sum() from
# central differences of that numpy forward pass, so no number here comes from torch or from actorgrad.
def _linear(x, p, prefix):
    return x @ p[prefix + "weight"].T + p.get(prefix + "bias", 0.0)


def _layer_norm(x, p, prefix, eps=1e-5):
    centred = x - x.mean(-1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(-1, keepdims=True) + eps) * p[prefix + "weight"] + p.get(
        prefix + "bias", 0.0)


def _additive(mask):
    """A bool mask (True = left out, MultiheadAttention's convention) as -inf/0; a float mask as it is."""
    return np.where(mask, -np.inf, 0.0) if mask.dtype == bool else mask


def _mha_reference(query, key, value, p, prefix, heads, batch_first=False, key_padding_mask=None, attn_mask=None,
                   add_zero_attn=False):
    """PyTorch's multi_head_attention_forward: project, append bias_k/bias_v and a zero key, mask, softmax per
    head, out-project; the weights averaged over heads."""
    if batch_first:
        query, key, value = (np.swapaxes(x, 0, 1) for x in (query, key, value))
    length, batch, embed = query.shape
    if prefix + "in_proj_weight" in p:
        wq, wk, wv = np.split(p[prefix + "in_proj_weight"], 3)
    else:
        wq, wk, wv = (p[prefix + f"{c}_proj_weight"] for c in "qkv")
    bq, bk, bv = np.split(p[prefix + "in_proj_bias"], 3) if prefix + "in_proj_bias" in p else (0.0, 0.0, 0.0)
    q, k, v = query @ wq.T + bq, key @ wk.T + bk, value @ wv.T + bv
    added = np.zeros((length, key.shape[0])) if attn_mask is None else _additive(attn_mask)
    padding = np.zeros((batch, key.shape[0])) if key_padding_mask is None else _additive(key_padding_mask)
    extra = []
    if prefix + "bias_k" in p:
        extra.append((np.broadcast_to(p[prefix + "bias_k"], (1, batch, embed)),
                      np.broadcast_to(p[prefix + "bias_v"], (1, batch, embed))))
    if add_zero_attn:
        extra.append((np.zeros((1, batch, embed)), np.zeros((1, batch, embed))))
    for k_row, v_row in extra:  # a zero projection's heads are zeros too, so appending before the split is the same
        k, v = np.concatenate([k, k_row]), np.concatenate([v, v_row])
        added = np.pad(added, ((0, 0), (0, 1)))
        padding = np.pad(padding, ((0, 0), (0, 1)))
    head = embed // heads

    def split(x):  # (S, N, E) -> (N, H, S, head)
        return x.reshape(x.shape[0], batch, heads, head).transpose(1, 2, 0, 3)

    scores = split(q) @ np.swapaxes(split(k), -1, -2) / math.sqrt(head) + added + padding[:, None, None, :]
    e = np.exp(scores - scores.max(-1, keepdims=True))
    weights = e / e.sum(-1, keepdims=True)
    out = (weights @ split(v)).transpose(2, 0, 1, 3).reshape(length, batch, embed)
    out = _linear(out, p, prefix + "out_proj.")
    return (np.swapaxes(out, 0, 1) if batch_first else out), weights.mean(1)


def _gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _encoder_reference(x, p, layers, heads, norm_first=False, activation=None, batch_first=False, final_norm=False,
                       mask=None, src_key_padding_mask=None):
    """TransformerEncoderLayer: x + self_attn, then x + linear2(act(linear1(x))), each with its LayerNorm after
    (post-norm) or before (norm_first); an optional final LayerNorm."""
    activation = activation or (lambda y: np.maximum(y, 0))
    for i in range(layers):
        pre = f"layers.{i}."

        def attend(y, pre=pre):
            return _mha_reference(y, y, y, p, pre + "self_attn.", heads, batch_first, src_key_padding_mask, mask)[0]

        def feed_forward(y, pre=pre):
            return _linear(activation(_linear(y, p, pre + "linear1.")), p, pre + "linear2.")

        if norm_first:
            x = x + attend(_layer_norm(x, p, pre + "norm1."))
            x = x + feed_forward(_layer_norm(x, p, pre + "norm2."))
        else:
            x = _layer_norm(x + attend(x), p, pre + "norm1.")
            x = _layer_norm(x + feed_forward(x), p, pre + "norm2.")
    return _layer_norm(x, p, "norm.") if final_norm else x


KEY_PADDING = np.array([[False, False, True], [False, False, False]])
FLOAT_MASK = np.array([[0.0, -1.0, 0.5], [0.2, 0.0, -0.3]])


def test_multihead_attention_packed_batch_first_with_masks_matches_the_formula(numpy_check):
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask is deprecated"):
        got, used, upstream = numpy_check.run(MultiheadAttention(4, 2, batch_first=True),
                                              [(2, 2, 4), (2, 3, 4), (2, 3, 4)],
                                              {"key_padding_mask": KEY_PADDING, "attn_mask": FLOAT_MASK}, 1)

    def forward(p):
        return _mha_reference(p["input0"], p["input1"], p["input2"], p, "", 2, batch_first=True,
                              key_padding_mask=KEY_PADDING, attn_mask=FLOAT_MASK)

    numpy_check.assert_matches(got, numpy_check.expected(forward, used, upstream))


def test_multihead_attention_kdim_vdim_bias_kv_zero_attn_bool_mask_matches_the_formula(numpy_check):
    module = MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True)
    got, used, upstream = numpy_check.run(module, [(2, 2, 4), (3, 2, 3), (3, 2, 5)], {"attn_mask": FLOAT_MASK > 0.1}, 2)
    assert {"q_proj_weight", "bias_k", "bias_v"} <= used.keys()

    def forward(p):
        return _mha_reference(p["input0"], p["input1"], p["input2"], p, "", 2, attn_mask=FLOAT_MASK > 0.1,
                              add_zero_attn=True)

    numpy_check.assert_matches(got, numpy_check.expected(forward, used, upstream))


def test_transformer_encoder_post_norm_relu_with_masks_matches_the_formula(numpy_check):
    layer = TransformerEncoderLayer(4, 2, dim_feedforward=3, dropout=0.0)
    causal = np.triu(np.full((3, 3), -np.inf), 1)
    with pytest.warns(UserWarning, match="Support for mismatched src_key_padding_mask and mask is deprecated"):
        got, used, upstream = numpy_check.run(TransformerEncoder(layer, 2, norm=LayerNorm(4)), [(3, 2, 4)],
                                              {"mask": causal, "src_key_padding_mask": KEY_PADDING}, 3)

    def forward(p):
        return _encoder_reference(p["input0"], p, 2, 2, final_norm=True, mask=causal,
                                  src_key_padding_mask=KEY_PADDING), None

    numpy_check.assert_matches(got, numpy_check.expected(forward, used, upstream))


def test_transformer_encoder_norm_first_gelu_batch_first_without_bias_matches_the_formula(numpy_check):
    layer = TransformerEncoderLayer(4, 2, dim_feedforward=3, dropout=0.0, activation="gelu", norm_first=True,
                                    batch_first=True, bias=False)
    got, used, upstream = numpy_check.run(TransformerEncoder(layer, 1), [(2, 3, 4)],
                                          {"src_key_padding_mask": KEY_PADDING}, 4)
    assert not any(name.endswith("bias") for name in used)

    def forward(p):
        return _encoder_reference(p["input0"], p, 1, 2, norm_first=True, activation=_gelu, batch_first=True,
                                  src_key_padding_mask=KEY_PADDING), None

    numpy_check.assert_matches(got, numpy_check.expected(forward, used, upstream))


# -- MultiheadAttention: paths, parameters, errors -------------------------------------------------------------
def _mha(numpy_check, **kwargs) -> MultiheadAttention:
    module = MultiheadAttention(4, 2, **kwargs).double()
    numpy_check.set_parameters(module, 5)
    return module


def test_multihead_attention_gradcheck():
    x, w, b, ow, ob = (leaf(RNG.standard_normal(s)) for s in ((2, 1, 4), (12, 4), (12,), (4, 4), (4,)))
    mask = ag.tensor(np.array([[False, True], [False, False]]))

    def attend(x, w, b, ow, ob):
        return multi_head_attention_forward(x, x, x, 4, 2, w, b, None, None, False, 0.0, ow, ob, attn_mask=mask)

    assert gradcheck(lambda *args: attend(*args)[0], [x, w, b, ow, ob])
    assert gradcheck(lambda *args: attend(*args)[1], [x, w, b, ow, ob])


def test_multihead_attention_without_weights_and_causal_hint_agree_with_the_weights_path(numpy_check):
    module = _mha(numpy_check)
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


def test_multihead_attention_fully_padded_sample_is_nan_with_weights_and_zero_attention_without(numpy_check):
    module = _mha(numpy_check)
    x = ag.tensor(RNG.standard_normal((3, 2, 4)))
    padding = ag.tensor(np.array([[False, True, False], [True, True, True]]))
    with_weights = array(module(x, x, x, key_padding_mask=padding)[0])
    without = array(module(x, x, x, key_padding_mask=padding, need_weights=False)[0])
    assert np.isnan(with_weights[:, 1]).all()  # PyTorch's plain softmax on this path
    np.testing.assert_allclose(without[:, 1], np.broadcast_to(array(module.out_proj.bias), (3, 4)))
    np.testing.assert_allclose(without[:, 0], with_weights[:, 0], rtol=1e-12)


def test_multihead_attention_unbatched_is_the_batched_sample(numpy_check):
    module = _mha(numpy_check)
    q, k = ag.tensor(RNG.standard_normal((3, 4))), ag.tensor(RNG.standard_normal((2, 4)))
    out, weights = module(q, k, k)
    batched, batched_weights = module(q.unsqueeze(1), k.unsqueeze(1), k.unsqueeze(1))
    np.testing.assert_allclose(array(out), array(batched)[:, 0], rtol=1e-12)
    np.testing.assert_allclose(array(weights), array(batched_weights)[0], rtol=1e-12)


def test_multihead_attention_dropout_only_while_training(numpy_check):
    module = _mha(numpy_check, dropout=0.5)
    x = ag.tensor(RNG.standard_normal((3, 2, 4)))
    reference = array(_mha(numpy_check)(x, x, x)[0])
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
