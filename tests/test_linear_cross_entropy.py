"""linear_cross_entropy and LinearCrossEntropyLoss: values against a numpy cross entropy of x @ W.T + b, both paths
(the composition, and the chunked one `options` picks) for every reduction, weights, ignore_index, smoothing,
probabilities and K-dimensional weights; gradcheck and gradgradcheck in float64; the chunked path's memory; the
options' checks and PyTorch's error texts."""

import re
import tracemalloc

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad import nn
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(11)
N, FEATURES, C = 7, 3, 5
CHUNKINGS = [None, {}, {"batch_chunk_size": 1}, {"batch_chunk_size": 3}, {"chunking_method": "aspect_ratio"}]


def _options(chunking):
    return None if chunking is None else nn.LinearCrossEntropyOptions(**chunking)


def _numpy_loss(x, w, b, t, reduction, class_weight=None, ignore_index=-100, smoothing=0.0):
    """Cross entropy of the logits x @ w.T + b: per kept row weight[t] * ((1 - s) * -logp[t] + s / C * sum_c
    -logp[c]), ignored rows 0, the mean divided by the kept rows' weights."""
    logits = x @ w.T + (0 if b is None else b)
    peak = logits.max(-1, keepdims=True)
    logp = logits - peak - np.log(np.exp(logits - peak).sum(-1, keepdims=True))
    cw = np.ones(w.shape[0]) if class_weight is None else class_weight
    kept = t != ignore_index
    safe = np.where(kept, t, 0)
    chosen = -np.take_along_axis(logp, safe[..., None], -1)[..., 0] * cw[safe]
    smooth = -(logp * cw).sum(-1)
    losses = np.where(kept, (1 - smoothing) * chosen + smoothing / w.shape[0] * smooth, 0.0)
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.sum() / np.where(kept, cw[safe], 0).sum()


def _case(batched=True, bias=True):
    x = RNG.standard_normal((N, FEATURES) if batched else FEATURES)
    w = RNG.standard_normal((C, FEATURES))
    b = RNG.standard_normal(C) if bias else None
    t = RNG.integers(0, C, N if batched else ())
    return x, w, b, t


def _leaves(*arrays):
    return [None if a is None else ag.tensor(a, requires_grad=True) for a in arrays]


@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_values_are_the_cross_entropy_of_the_linear_logits(chunking, reduction, weighted):
    x, w, b, t = _case()
    t[::3] = 2  # some ignored rows
    cw = RNG.uniform(0.5, 2.0, C) if weighted else None
    got = F.linear_cross_entropy(
        ag.tensor(x), ag.tensor(w), ag.tensor(t), linear_bias=ag.tensor(b),
        weight=None if cw is None else ag.tensor(cw), reduction=reduction, ignore_index=2, options=_options(chunking),
    )
    np.testing.assert_allclose(got.numpy(), _numpy_loss(x, w, b, t, reduction, cw, ignore_index=2), rtol=1e-12)


@pytest.mark.parametrize("chunking", [None, {"batch_chunk_size": 3}])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("batched, bias", [(True, True), (True, False), (False, True)])
def test_gradients_pass_gradcheck(chunking, reduction, batched, bias):
    """Second order too where it is cheap: the chunked rules are recorded ops under create_graph."""
    x, w, b, t = _case(batched, bias)
    cw = ag.tensor(RNG.uniform(0.5, 2.0, C))
    leaves = [leaf for leaf in _leaves(x, w, b) if leaf is not None]

    def loss(x, w, b=None):
        return F.linear_cross_entropy(x, w, ag.tensor(t), linear_bias=b, weight=cw, reduction=reduction,
                                      options=_options(chunking))

    assert gradcheck(loss, leaves)
    if reduction == "mean" or not batched:
        assert gradgradcheck(loss, leaves)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_chunked_gradients_equal_the_composed_ones(reduction):
    x, w, b, t = _case()
    t[1] = -100
    grads = []
    for options in (None, nn.LinearCrossEntropyOptions(batch_chunk_size=2)):
        leaves = _leaves(x, w, b)
        out = F.linear_cross_entropy(*leaves[:2], ag.tensor(t), linear_bias=leaves[2], reduction=reduction,
                                     options=options)
        out.backward(ag.ones_like(out))
        grads.append([leaf.grad.numpy() for leaf in leaves])
    for composed, chunked in zip(*grads):
        np.testing.assert_allclose(chunked, composed, rtol=1e-12, atol=1e-15)


def test_chunked_mean_of_only_ignored_rows_is_nan_with_zero_gradients():
    x, w, b, t = _case()
    leaves = _leaves(x, w, b)
    out = F.linear_cross_entropy(*leaves[:2], ag.full((N,), -100), linear_bias=leaves[2],
                                 options=nn.LinearCrossEntropyOptions(batch_chunk_size=2))
    out.backward()
    assert np.isnan(out.item())
    for leaf in leaves:
        assert not leaf.grad.numpy().any()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_label_smoothing_and_probabilities_take_the_composed_path(reduction):
    x, w, b, t = _case()
    got = F.linear_cross_entropy(ag.tensor(x), ag.tensor(w), ag.tensor(t), linear_bias=ag.tensor(b),
                                 reduction=reduction, label_smoothing=0.3)
    np.testing.assert_allclose(got.numpy(), _numpy_loss(x, w, b, t, reduction, smoothing=0.3), rtol=1e-12)
    p = RNG.dirichlet(np.ones(C), N)
    logits = x @ w.T + b
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    rows = -(p * logp).sum(-1)
    expected = {"none": rows, "sum": rows.sum(), "mean": rows.mean()}[reduction]
    got = F.linear_cross_entropy(ag.tensor(x), ag.tensor(w), ag.tensor(p), linear_bias=ag.tensor(b),
                                 reduction=reduction)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_options_that_the_chunked_path_cannot_take_warn_and_are_ignored():
    x, w, b, t = _case()
    with pytest.warns(UserWarning, match=re.escape("``options`` ignored; chunked path needs")):
        got = F.linear_cross_entropy(ag.tensor(x), ag.tensor(w), ag.tensor(t), label_smoothing=0.2,
                                     options=nn.LinearCrossEntropyOptions())
    np.testing.assert_allclose(got.numpy(), _numpy_loss(x, w, None, t, "mean", smoothing=0.2), rtol=1e-12)


def test_a_k_dimensional_weight_gives_a_loss_per_position():
    x = RNG.standard_normal((N, FEATURES))
    w = RNG.standard_normal((C, 2, FEATURES))
    b = RNG.standard_normal((C, 2))
    t = RNG.integers(0, C, (N, 2))
    got = F.linear_cross_entropy(ag.tensor(x), ag.tensor(w), ag.tensor(t), linear_bias=ag.tensor(b),
                                 reduction="none")
    expected = np.stack([_numpy_loss(x, w[:, d], b[:, d], t[:, d], "none") for d in range(2)], axis=1)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    assert gradcheck(lambda x, w, b: F.linear_cross_entropy(x, w, ag.tensor(t), linear_bias=b), _leaves(x, w, b))


def test_chunked_path_never_holds_all_logits():
    """1024 x 1024 float64 logits take 8 MiB; chunks of 32 rows take 256 KiB each, forward and backward."""
    rows, classes = 1024, 1024
    x = ag.tensor(RNG.standard_normal((rows, 4)), requires_grad=True)
    w = ag.tensor(RNG.standard_normal((classes, 4)), requires_grad=True)
    t = ag.tensor(RNG.integers(0, classes, rows))
    tracemalloc.start()
    try:
        F.linear_cross_entropy(x, w, t, options=nn.LinearCrossEntropyOptions(batch_chunk_size=32)).backward()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20
    assert x.grad.shape == (rows, 4) and w.grad.shape == (classes, 4)


@pytest.mark.parametrize("chunking, rows", [
    ({}, 4),  # auto: aspect_ratio:2; logits of 32 classes over 4 features: 64 / 8 = 8 rows, halved
    ({"chunking_method": "aspect_ratio"}, 8),
    ({"chunking_method": "aspect_ratio:4"}, 2),
    ({"batch_chunk_size": 5}, 5),
    ({"batch_chunk_size": 500}, 64),
    ({"batch_chunk_size": 8, "chunking_method": "aspect_ratio"}, 8),
    ({"chunking_method": None}, 64),
])
def test_chunk_sizes_follow_pytorchs_heuristics(chunking, rows):
    assert nn.LinearCrossEntropyOptions(**chunking).chunk_size(64, 4, 32) == rows


@pytest.mark.parametrize("fields, text", [
    ({"acc_policy": "fast"}, "invalid acc_policy: 'fast'"),
    ({"chunking_method": "aspect_ratio:0"}, "invalid chunking_method: 'aspect_ratio:0'"),
    ({"chunking_method": "rows"}, "invalid chunking_method: 'rows'"),
    ({"batch_chunk_size": 0}, "batch_chunk_size must be positive int or None, got 0"),
    ({"acc_dtype": ag.int32}, "acc_dtype must be one of {None, float16, float32, float64}"),
])
def test_bad_options_are_refused(fields, text):
    with pytest.raises(ValueError, match=re.escape(text)):
        nn.LinearCrossEntropyOptions(**fields)


def test_a_chunk_size_that_disagrees_with_the_method_is_refused():
    options = nn.LinearCrossEntropyOptions(batch_chunk_size=3, chunking_method="aspect_ratio")
    with pytest.raises(ValueError, match=re.escape("batch_chunk_size (=3) and chunking_method ('aspect_ratio')")):
        options.chunk_size(64, 4, 32)


@pytest.mark.parametrize("x_shape, w_shape, b_shape, t, kwargs, error, text", [
    ((2, 2, 3), (5, 3), None, [0, 1], {}, RuntimeError, "expected input with dimensionality 1 or 2, got 3"),
    ((2, 3), (5,), None, [0, 1], {}, RuntimeError, "expected linear_weight with dimensionality at least 2, got 1"),
    ((2, 3), (5, 4), None, [0, 1], {}, RuntimeError,
     "expected equal input and linear_weight last dimensions (in_features), got 3 and 4, respectively"),
    ((2, 3), (5, 3), (4,), [0, 1], {}, RuntimeError, "expected linear_bias shape (5,), got (4,)"),
    ((3,), (5, 2, 3), None, [0, 1], {}, RuntimeError,
     "K-dimensional loss defined by linear_weight shape (5, 2, 3) requires batched input, (N, 3), got unbatched "
     "input with shape (3,)"),
    ((2, 3), (5, 3), None, [0, 9], {}, IndexError, "Target 9 is out of bounds."),
    ((2, 3), (5, 3), None, [0, 9], {"options": True}, IndexError, "Target 9 is out of bounds."),
    ((2, 3), (5, 3), None, [0, 1, 2], {"options": True}, ValueError,
     "Expected input batch_size (2) to match target batch_size (3)."),
])
def test_bad_shapes_and_targets_get_pytorchs_errors(x_shape, w_shape, b_shape, t, kwargs, error, text):
    if kwargs.get("options"):
        kwargs = {"options": nn.LinearCrossEntropyOptions()}
    bias = None if b_shape is None else ag.zeros(b_shape)
    with pytest.raises(error, match=re.escape(text)):
        F.linear_cross_entropy(ag.zeros(x_shape), ag.zeros(w_shape), ag.tensor(t), linear_bias=bias, **kwargs)


@pytest.mark.parametrize("bias_dtype, weight_dtype", [(ag.float32, ag.float64), (ag.float64, ag.float32)])
def test_chunked_operands_of_two_dtypes_are_refused(bias_dtype, weight_dtype):
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        F.linear_cross_entropy(ag.zeros(2, 3), ag.zeros(5, 3, dtype=weight_dtype), ag.tensor([0, 1]),
                               linear_bias=ag.zeros(5, dtype=bias_dtype), options=nn.LinearCrossEntropyOptions())


def test_float16_chunks_compute_in_float32():
    x, w, b, t = _case()
    leaves = [ag.tensor(a, dtype=ag.float16, requires_grad=True) for a in (x, w, b)]
    out = F.linear_cross_entropy(*leaves[:2], ag.tensor(t), linear_bias=leaves[2],
                                 options=nn.LinearCrossEntropyOptions(batch_chunk_size=2))
    out.backward()
    rounded = [leaf.detach().double().numpy() for leaf in leaves]
    assert out.dtype == ag.float16 and leaves[0].grad.dtype == ag.float16
    np.testing.assert_allclose(out.item(), _numpy_loss(*rounded, t, "mean"), rtol=1e-3)


def test_ignore_index_is_refused_with_probabilities():
    with pytest.raises(RuntimeError, match="ignore_index cannot be specified when target contains probabilities"):
        F.linear_cross_entropy(ag.zeros(2, 3), ag.zeros(5, 3), ag.zeros(2, 5), ignore_index=-100)


@pytest.mark.parametrize("options", [None, nn.LinearCrossEntropyOptions(batch_chunk_size=2)])
def test_the_module_is_its_linear_layer_and_the_function(options):
    ag.manual_seed(0)
    loss = nn.LinearCrossEntropyLoss(FEATURES, C, out_features=(2,), bias=True, dtype=ag.float64) if options is None \
        else nn.LinearCrossEntropyLoss(FEATURES, C, bias=True, dtype=ag.float64, options=options)
    k = 2 if options is None else 1
    assert loss.linear.weight.shape == (C * k, FEATURES) and loss.linear.bias.shape == (C * k,)
    x = RNG.standard_normal((N, FEATURES))
    t = RNG.integers(0, C, (N, 2) if options is None else N)
    w, b = loss.linear.weight.detach().numpy(), loss.linear.bias.detach().numpy()
    got = loss(ag.tensor(x), ag.tensor(t))
    if options is None:
        w3, b2 = w.reshape(C, 2, FEATURES), b.reshape(C, 2)
        expected = np.mean([_numpy_loss(x, w3[:, d], b2[:, d], t[:, d], "none") for d in range(2)])
    else:
        expected = _numpy_loss(x, w, b, t, "mean")
    np.testing.assert_allclose(got.item(), expected, rtol=1e-12)
    got.backward()
    assert loss.linear.weight.grad.shape == (C * k, FEATURES)
    assert "num_classes=5" in repr(loss)


def test_the_module_checks_its_weight_and_smoothing():
    with pytest.raises(RuntimeError, match=re.escape("expected weight shape to be (5,), got (4,)")):
        nn.LinearCrossEntropyLoss(FEATURES, C, weight=ag.ones(4))
    with pytest.raises(RuntimeError, match=re.escape("expected label_smoothing to be in range [0, 1], got 1.5")):
        nn.LinearCrossEntropyLoss(FEATURES, C, label_smoothing=1.5)


@pytest.mark.gpu
@pytest.mark.parametrize("chunking", [None, {"batch_chunk_size": 3}])
def test_cuda_losses_and_gradients_are_the_cpus(cupy, chunking):
    x, w, b, t = _case()
    cuda = ag.device("cuda:0")
    results = []
    for device in ("cpu", cuda):
        leaves = [ag.tensor(a, requires_grad=True, device=device) for a in (x, w, b)]
        out = F.linear_cross_entropy(*leaves[:2], ag.tensor(t, device=device), linear_bias=leaves[2],
                                     options=_options(chunking))
        out.backward()
        assert out.device == leaves[0].device
        results.append([out.detach().cpu().numpy()] + [leaf.grad.cpu().numpy() for leaf in leaves])
    for cpu_value, cuda_value in zip(*results):
        np.testing.assert_allclose(cuda_value, cpu_value, rtol=1e-12, atol=1e-15)
