"""The layers' forwards and backwards (they call nn.functional) against numpy references.

Each layer is built in float64 so the references compare tightly; gradients that are affine in a parameter are
checked exactly, the others with gradcheck.
"""

import math

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn

RNG = np.random.default_rng(0)


def array(t) -> np.ndarray:
    return t.detach().numpy()


def backward_with(out, upstream: np.ndarray) -> None:
    (out * ag.tensor(upstream)).sum().backward()


# -- Linear ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch", [(5,), (2, 3)])
def test_linear_matches_numpy(bias, batch):
    layer = nn.Linear(4, 3, bias=bias, dtype=ag.float64)
    x = RNG.standard_normal((*batch, 4))
    xt = ag.tensor(x, requires_grad=True)
    out = layer(xt)
    w = array(layer.weight)
    expected = x @ w.T + (array(layer.bias) if bias else 0)
    np.testing.assert_allclose(array(out), expected, rtol=1e-12)
    upstream = RNG.standard_normal(out.shape)
    backward_with(out, upstream)
    flat_x, flat_g = x.reshape(-1, 4), upstream.reshape(-1, 3)
    np.testing.assert_allclose(layer.weight.grad.numpy(), flat_g.T @ flat_x, rtol=1e-10)
    np.testing.assert_allclose(xt.grad.numpy(), upstream @ w, rtol=1e-10)
    if bias:
        np.testing.assert_allclose(layer.bias.grad.numpy(), flat_g.sum(0), rtol=1e-10)


def test_linear_defaults_to_float32():
    out = nn.Linear(2, 3)(ag.ones(4, 2))
    assert out.dtype == ag.float32 and out.shape == (4, 3)


# -- Conv2d ----------------------------------------------------------------------------------------------------
def conv2d_reference(x, w, b, stride, padding, dilation, groups):
    """Direct cross-correlation, one loop step per kernel offset."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xg = xp[:, g * cg:(g + 1) * cg]
        wg = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xg[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, wg[:, :, i, j])
    return out + (0 if b is None else b[None, :, None, None])


def affine_gradient(f, value: np.ndarray, upstream: np.ndarray) -> np.ndarray:
    """d sum(upstream * f(v)) / dv, exact when f is affine in v."""
    base = (upstream * f(value)).sum()
    grad = np.zeros_like(value)
    for idx in np.ndindex(value.shape):
        bumped = value.copy()
        bumped[idx] += 1
        grad[idx] = (upstream * f(bumped)).sum() - base
    return grad


@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(stride=2, padding=1),
        dict(kernel_size=(2, 3), padding=(1, 0), dilation=(2, 1)),
        dict(groups=2, bias=False),
    ],
)
def test_conv2d_matches_numpy(options):
    options = {"kernel_size": 3, **options}
    layer = nn.Conv2d(4, 6, dtype=ag.float64, **options)
    x = RNG.standard_normal((2, 4, 7, 6))
    xt = ag.tensor(x, requires_grad=True)
    out = layer(xt)
    w, b = array(layer.weight), (None if layer.bias is None else array(layer.bias))
    geometry = (layer.stride, layer.padding, layer.dilation, layer.groups)
    np.testing.assert_allclose(array(out), conv2d_reference(x, w, b, *geometry), rtol=1e-10, atol=1e-12)
    upstream = RNG.standard_normal(out.shape)
    backward_with(out, upstream)
    expected_w = affine_gradient(lambda v: conv2d_reference(x, v, None, *geometry), w, upstream)
    np.testing.assert_allclose(layer.weight.grad.numpy(), expected_w, rtol=1e-8, atol=1e-10)
    expected_x = affine_gradient(lambda v: conv2d_reference(v, w, None, *geometry), x, upstream)
    np.testing.assert_allclose(xt.grad.numpy(), expected_x, rtol=1e-8, atol=1e-10)
    if b is not None:
        np.testing.assert_allclose(layer.bias.grad.numpy(), upstream.sum((0, 2, 3)), rtol=1e-10)


# -- Embedding ---------------------------------------------------------------------------------------------------
def test_embedding_looks_up_rows_and_accumulates_their_gradients():
    layer = nn.Embedding(6, 3, padding_idx=2, dtype=ag.float64)
    idx = np.array([[0, 2, 5], [5, 1, 2]])
    out = layer(ag.tensor(idx))
    np.testing.assert_array_equal(array(out), array(layer.weight)[idx])
    upstream = RNG.standard_normal(out.shape)
    backward_with(out, upstream)
    expected = np.zeros((6, 3))
    np.add.at(expected, idx, upstream)
    expected[2] = 0  # the padding row gets no gradient
    np.testing.assert_allclose(layer.weight.grad.numpy(), expected, rtol=1e-12)


def test_embedding_max_norm_scales_the_rows_it_reads_in_place_first():
    weight = np.arange(12.0).reshape(4, 3)
    layer = nn.Embedding.from_pretrained(ag.tensor(weight), max_norm=2.0)
    out = layer(ag.tensor([0, 3, 3]))
    norms = np.linalg.norm(weight, axis=1)
    scaled = weight * np.where(norms > 2.0, 2.0 / (norms + 1e-7), 1.0)[:, None]  # PyTorch's embedding_renorm_
    np.testing.assert_allclose(out.numpy(), scaled[[0, 3, 3]], rtol=1e-12)
    np.testing.assert_allclose(layer.weight.numpy()[[0, 3]], scaled[[0, 3]], rtol=1e-12)
    np.testing.assert_array_equal(layer.weight.numpy()[[1, 2]], weight[[1, 2]])  # rows not read stay
    assert not layer.weight.requires_grad  # from_pretrained freezes by default
    unit = nn.Embedding(5, 4, max_norm=1.0, norm_type=1.0, dtype=ag.float64)
    assert np.all(np.abs(unit(ag.tensor([1, 4])).detach().numpy()).sum(axis=1) <= 1.0 + 1e-9)


def test_embedding_takes_pytorchs_arguments_and_repr():
    layer = nn.Embedding(10, 3, 2, 1.0, 1.0, True, True)
    assert repr(layer) == (
        "Embedding(10, 3, padding_idx=2, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, sparse=True)"
    )
    with pytest.raises(NotImplementedError, match="sparse gradients are not supported"):
        layer(ag.tensor([1]))
    with pytest.raises(AssertionError, match="Shape of weight does not match num_embeddings and embedding_dim"):
        nn.Embedding(3, 2, _weight=ag.ones(2, 2))
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(ag.ones(3))


# -- LayerNorm ---------------------------------------------------------------------------------------------------
def layer_norm_reference(x, shape, eps):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mean = x.mean(axes, keepdims=True)
    var = x.var(axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


@pytest.mark.parametrize("shape", [(5,), (3, 5)])
def test_layer_norm_matches_numpy(shape):
    layer = nn.LayerNorm(shape, eps=1e-3, dtype=ag.float64)
    with ag.no_grad():
        layer.weight._data[...] = RNG.standard_normal(shape)
        layer.bias._data[...] = RNG.standard_normal(shape)
    x = RNG.standard_normal((2, 3, 5))
    out = layer(ag.tensor(x))
    normalised = layer_norm_reference(x, shape, 1e-3)
    np.testing.assert_allclose(array(out), normalised * array(layer.weight) + array(layer.bias), rtol=1e-10)
    upstream = RNG.standard_normal(out.shape)
    backward_with(out, upstream)
    batch_axes = tuple(range(x.ndim - len(shape)))
    np.testing.assert_allclose(layer.weight.grad.numpy(), (upstream * normalised).sum(batch_axes), rtol=1e-10)
    np.testing.assert_allclose(layer.bias.grad.numpy(), upstream.sum(batch_axes), rtol=1e-10)
    assert ag.autograd.gradcheck(layer, [ag.tensor(x, requires_grad=True)], eps=1e-6, atol=1e-7, rtol=1e-5)


def test_layer_norm_without_affine_only_normalises():
    layer = nn.LayerNorm(4, elementwise_affine=False, dtype=ag.float64)
    x = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(array(layer(ag.tensor(x))), layer_norm_reference(x, (4,), 1e-5), rtol=1e-10)


# -- Dropout -----------------------------------------------------------------------------------------------------
def test_dropout_zeroes_and_rescales_while_training():
    layer = nn.Dropout(0.25)
    x = ag.tensor(RNG.uniform(1, 2, (200, 50)), requires_grad=True)
    ag.manual_seed(3)
    out = layer(x)
    kept = array(out) != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(array(out)[kept], array(x)[kept] / 0.75, rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.75, rtol=1e-12)
    ag.manual_seed(3)
    np.testing.assert_array_equal(array(layer(x)), array(out))


def test_dropout_is_the_identity_in_eval_mode():
    layer = nn.Dropout(0.9).eval()
    x = RNG.standard_normal((4, 5))
    np.testing.assert_array_equal(array(layer(ag.tensor(x))), x)
    assert np.all(array(nn.Dropout(1.0)(ag.ones(3, 3))) == 0)


# -- GELU --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_numpy(approximate):
    x = RNG.standard_normal((3, 4))
    if approximate == "none":
        expected = x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    else:
        expected = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    layer = nn.GELU(approximate)
    np.testing.assert_allclose(array(layer(ag.tensor(x))), expected, rtol=1e-10, atol=1e-12)
    assert ag.autograd.gradcheck(layer, [ag.tensor(x, requires_grad=True)], eps=1e-6, atol=1e-7, rtol=1e-5)


# -- Sequential --------------------------------------------------------------------------------------------------
def test_a_sequential_model_trains_end_to_end():
    ag.manual_seed(0)
    model = nn.Sequential(
        nn.Embedding(10, 8, dtype=ag.float64),
        nn.LayerNorm(8, dtype=ag.float64),
        nn.Linear(8, 16, dtype=ag.float64),
        nn.GELU(),
        nn.Dropout(0.1),
        nn.Linear(16, 1, dtype=ag.float64),
        nn.Tanh(),
    )
    idx = np.array([[1, 4, 7], [2, 3, 9]])
    model.eval()
    out = model(ag.tensor(idx))
    emb, ln_w, ln_b, w1, b1, w2, b2 = (array(p) for p in model.parameters())
    h = layer_norm_reference(emb[idx], (8,), 1e-5) * ln_w + ln_b
    h = h @ w1.T + b1
    h = h * 0.5 * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
    np.testing.assert_allclose(array(out), np.tanh(h @ w2.T + b2), rtol=1e-9, atol=1e-12)

    target = ag.tensor(np.array([[[0.5], [-0.5], [0.2]], [[0.1], [0.9], [-0.7]]]))

    def eval_loss() -> float:
        model.eval()
        with ag.no_grad():
            return ((model(ag.tensor(idx)) - target) ** 2).mean().item()

    before = eval_loss()
    model.train()
    opt = ag.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(60):
        opt.zero_grad()
        ((model(ag.tensor(idx)) - target) ** 2).mean().backward()
        opt.step()
    assert all(p.grad is not None for p in model.parameters())
    assert eval_loss() < 0.05 * before
