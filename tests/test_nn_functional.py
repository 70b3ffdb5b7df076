"""actorgrad.nn.functional beyond convolution: linear, losses, layer_norm, batch_norm, dropout, embedding.
Values against numpy references, gradients and second derivatives against finite differences (float64),
PyTorch's node names and errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck

TOL = {"eps": 1e-6, "atol": 1e-7, "rtol": 1e-5}
FEW = settings(max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(0, 2**32 - 1)


def leaf(a: np.ndarray) -> ag.Tensor:
    return ag.tensor(a, dtype=ag.float64, requires_grad=True)


def value(t: ag.Tensor) -> np.ndarray:
    return t.detach().numpy()


def check_grads(f, arrays, second: bool = True) -> None:
    assert gradcheck(f, [leaf(a) for a in arrays], **TOL)
    if second:
        assert gradgradcheck(f, [leaf(a) for a in arrays], **TOL)


# -- linear ------------------------------------------------------------------------------------------------------
@FEW
@given(st.sampled_from([(), (3,), (2, 3)]), st.booleans(), SEEDS)
def test_linear(lead, with_bias, seed):
    rng = np.random.default_rng(seed)
    x, w, b = rng.normal(size=(*lead, 4)), rng.normal(size=(2, 4)), rng.normal(size=2)
    arrays = [x, w, b] if with_bias else [x, w]
    want = x @ w.T + (b if with_bias else 0)
    np.testing.assert_allclose(F.linear(*[ag.tensor(a) for a in arrays]).numpy(), want, rtol=1e-12)
    check_grads(F.linear, arrays)


def test_linear_node_names_and_error():
    x, w, b = leaf(np.ones((2, 3))), leaf(np.ones((4, 3))), leaf(np.ones(4))
    assert F.linear(x, w, b).grad_fn.name() == "AddmmBackward0"
    assert F.linear(x, w).grad_fn.name() == "MmBackward0"
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 5x4\)"):
        F.linear(x, leaf(np.ones((4, 5))))


# -- cross_entropy / nll_loss ------------------------------------------------------------------------------------
def reference_cross_entropy(x, t, weight, ignore_index, reduction, smoothing):
    """PyTorch's definition, with the class dim moved last and the other dims flattened."""
    classes = x.shape[1] if x.ndim > 1 else x.shape[0]
    z = np.moveaxis(x, 1, -1).reshape(-1, classes) if x.ndim > 1 else x[None]
    t = t.reshape(-1)
    logp = z - z.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    w = np.ones(classes) if weight is None else weight
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    picked = w[safe] * keep
    nll = -logp[np.arange(len(t)), safe] * picked
    smooth = -(logp * w).sum(1) * keep
    if reduction == "mean":
        nll, smooth = nll.sum() / picked.sum(), smooth.sum() / picked.sum()
    elif reduction == "sum":
        nll, smooth = nll.sum(), smooth.sum()
    else:
        shape = (x.shape[0], *x.shape[2:]) if x.ndim > 1 else ()
        nll, smooth = nll.reshape(shape), smooth.reshape(shape)
    return (1 - smoothing) * nll + smoothing / classes * smooth


@FEW
@given(st.sampled_from([(4, 3), (2, 3, 2), (2, 3, 2, 2), (3,)]), st.booleans(), st.booleans(),
       st.sampled_from(["mean", "sum", "none"]), st.sampled_from([0.0, 0.2]), SEEDS)
def test_cross_entropy_options_match_a_numpy_reference(shape, weighted, ignore, reduction, smoothing, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    classes = shape[1] if len(shape) > 1 else shape[0]
    t = rng.integers(0, classes, size=(shape[0], *shape[2:]) if len(shape) > 1 else ())
    if ignore and t.ndim:
        t.flat[0] = -100
    w = rng.uniform(0.5, 2.0, classes) if weighted else None
    kw = dict(weight=None if w is None else ag.tensor(w), reduction=reduction, label_smoothing=smoothing)
    want = reference_cross_entropy(x, t, w, -100, reduction, smoothing)
    got = F.cross_entropy(leaf(x), ag.tensor(t), **kw)
    np.testing.assert_allclose(value(got), want, rtol=1e-10, atol=1e-12)
    expected_node = "AddBackward0" if smoothing else "NllLoss2DBackward0" if len(shape) > 2 else "NllLossBackward0"
    assert got.grad_fn.name() == expected_node
    check_grads(lambda a: F.cross_entropy(a, ag.tensor(t), **kw), [x])


@pytest.mark.parametrize("reduction, smoothing", [("mean", 0.0), ("sum", 0.0), ("none", 0.1), ("mean", 0.1)])
def test_cross_entropy_with_class_probabilities(reduction, smoothing):
    rng = np.random.default_rng(4)
    x, w = rng.normal(size=(2, 3, 2)), rng.uniform(1, 2, 3)
    p = rng.dirichlet(np.ones(3), size=(2, 2)).transpose(0, 2, 1)  # (N, C, d1): a transposed array
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    per_sample = -(logp * (p * (1 - smoothing) + smoothing / 3) * w.reshape(3, 1)).sum(1)
    want = {"mean": per_sample.mean(), "sum": per_sample.sum(), "none": per_sample}[reduction]

    def f(a, b):
        return F.cross_entropy(a, b, weight=ag.tensor(w), reduction=reduction, label_smoothing=smoothing)

    np.testing.assert_allclose(value(f(leaf(x), leaf(p))), want, rtol=1e-12)
    check_grads(f, [x, p])


def test_nll_loss_with_ignore_index_and_weights():
    rng = np.random.default_rng(0)
    logp = np.log(rng.dirichlet(np.ones(4), size=5))
    t, w = np.array([0, 3, 1, 1, 2]), np.array([1.0, 2.0, 0.5, 3.0])
    got = F.nll_loss(leaf(logp), ag.tensor(t), weight=ag.tensor(w), ignore_index=1)
    keep = t != 1
    want = -(logp[np.arange(5), t] * w[t] * keep).sum() / (w[t] * keep).sum()
    np.testing.assert_allclose(value(got), want, rtol=1e-12)
    check_grads(lambda a: F.nll_loss(a, ag.tensor(t), weight=ag.tensor(w), ignore_index=1), [logp])


@pytest.mark.parametrize("t, error, match", [
    ([0, 1, 2, 7], IndexError, "Target 7 is out of bounds."),
    ([0, 1, 2, -3], IndexError, "Target -3 is out of bounds."),
    ([0, 1, 2], ValueError, r"Expected input batch_size \(4\) to match target batch_size \(3\)."),
])
def test_cross_entropy_bad_targets(t, error, match):
    with pytest.raises(error, match=match):
        F.cross_entropy(ag.tensor(np.zeros((4, 5))), ag.tensor(np.array(t)))


# -- regression losses -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_l1_and_bce_with_logits(reduction):
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    x = np.where(np.abs(x - y) < 1e-2, x + 0.1, x)  # away from l1's kink
    p, w, pw = rng.uniform(size=(3, 4)), rng.uniform(0.5, 2, 4), rng.uniform(0.5, 2, 4)
    reduce = {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction]
    bce = w * ((1 - p) * x + (1 + (pw - 1) * p) * np.log1p(np.exp(-x)))
    cases = [
        (F.mse_loss, "MseLossBackward0", reduce((x - y) ** 2), [x, y], {}),
        (F.l1_loss, "L1LossBackward0", reduce(np.abs(x - y)), [x, y], {}),
        (F.binary_cross_entropy_with_logits, "BinaryCrossEntropyWithLogitsBackward0", reduce(bce), [x, p],
         dict(weight=ag.tensor(w), pos_weight=ag.tensor(pw))),
    ]
    for f, node, want, arrays, kw in cases:
        got = f(*[leaf(a) for a in arrays], reduction=reduction, **kw)
        assert got.grad_fn.name() == node
        np.testing.assert_allclose(value(got), want, rtol=1e-12, atol=1e-14)
        check_grads(lambda *t, f=f, kw=kw: f(*t, reduction=reduction, **kw), arrays, second=f is not F.l1_loss)


def test_mse_loss_mismatched_shapes_raise():
    message = r"The size of tensor a \(4\) must match the size of tensor b \(5\) at non-singleton dimension 1"
    with pytest.warns(UserWarning, match="Using a target size"), pytest.raises(RuntimeError, match=message):
        F.mse_loss(ag.tensor(np.ones((3, 4))), ag.tensor(np.ones((3, 5))))


def test_bad_reduction_raises():
    with pytest.raises(ValueError, match="nope is not a valid value for reduction"):
        F.mse_loss(ag.tensor(np.ones(2)), ag.tensor(np.ones(2)), reduction="nope")


# -- normalization -----------------------------------------------------------------------------------------------
@FEW
@given(st.sampled_from([((3, 4), (4,)), ((2, 3, 4), (3, 4)), ((2, 3, 2), (2,))]), st.booleans(), SEEDS)
def test_layer_norm(shapes, affine, seed):
    shape, normalized = shapes
    rng = np.random.default_rng(seed)
    x, w, b = rng.normal(size=shape), rng.normal(size=normalized), rng.normal(size=normalized)
    axes = tuple(range(len(shape) - len(normalized), len(shape)))
    want = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
    arrays = [x, w, b] if affine else [x]
    if affine:
        want = want * w + b

    def f(*t):
        return F.layer_norm(t[0], normalized, *t[1:])

    got = f(*[leaf(a) for a in arrays])
    assert got.grad_fn.name() == "NativeLayerNormBackward0"
    np.testing.assert_allclose(value(got), want, rtol=1e-10, atol=1e-12)
    check_grads(f, arrays)


def test_batch_norm_training_updates_running_stats_and_eval_uses_them():
    rng = np.random.default_rng(2)
    x, w, b = rng.normal(size=(4, 3, 2, 2)), rng.normal(size=3), rng.normal(size=3)
    mean, var = ag.tensor(np.zeros(3)), ag.tensor(np.ones(3))
    got = F.batch_norm(leaf(x), mean, var, leaf(w), leaf(b), training=True, momentum=0.2)
    axes = (0, 2, 3)
    want = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
    np.testing.assert_allclose(value(got), want * w.reshape(3, 1, 1) + b.reshape(3, 1, 1), rtol=1e-10)
    assert got.grad_fn.name() == "NativeBatchNormBackward0"
    np.testing.assert_allclose(mean.numpy(), 0.2 * x.mean(axes), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), 0.8 + 0.2 * x.var(axes, ddof=1), rtol=1e-12)
    evaluated = F.batch_norm(ag.tensor(x), mean, var)
    expect = (x - mean.numpy().reshape(3, 1, 1)) / np.sqrt(var.numpy().reshape(3, 1, 1) + 1e-5)
    np.testing.assert_allclose(evaluated.numpy(), expect, rtol=1e-12)
    check_grads(lambda *t: F.batch_norm(t[0], None, None, *t[1:], training=True), [x, w, b])
    check_grads(lambda *t: F.batch_norm(t[0], mean, var, *t[1:]), [x, w, b])


# -- dropout -----------------------------------------------------------------------------------------------------
def test_dropout_repeats_under_manual_seed_and_scales_kept_elements():
    x = np.ones((50, 40))
    ag.manual_seed(7)
    first = F.dropout(leaf(x), p=0.3)
    ag.manual_seed(7)
    second = F.dropout(leaf(x), p=0.3)
    np.testing.assert_array_equal(value(first), value(second))
    kept = value(first) != 0
    np.testing.assert_allclose(value(first)[kept], 1 / 0.7)
    assert 0.6 < kept.mean() < 0.8
    assert first.grad_fn.name() == "MulBackward0"
    first.sum().backward()


def test_dropout_edge_probabilities_and_eval():
    x = leaf(np.ones((3, 3)))
    assert not value(F.dropout(x, p=1.0)).any()
    assert F.dropout(x, p=0.5, training=False) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, p=1.5)


# -- embedding ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_accumulates_duplicates_and_skips_padding(padding_idx):
    rng = np.random.default_rng(3)
    idx, w = np.array([[0, 2, 2], [4, 1, 2]]), rng.normal(size=(5, 3))
    weight = leaf(w)
    out = F.embedding(ag.tensor(idx), weight, padding_idx=padding_idx)
    assert out.grad_fn.name() == "EmbeddingBackward0"
    np.testing.assert_array_equal(value(out), w[idx])
    out.sum().backward()
    counts = np.bincount(idx.ravel(), minlength=5).astype(float)
    if padding_idx is not None:
        counts[padding_idx % 5] = 0
    np.testing.assert_array_equal(weight.grad.numpy(), np.repeat(counts[:, None], 3, 1))
    def f(t):
        return F.embedding(ag.tensor(idx), t, padding_idx=padding_idx) ** 2

    if padding_idx is None:  # with one, the gradient deliberately ignores the padding row's influence
        assert gradcheck(f, [leaf(w)], **TOL)
    assert gradgradcheck(f, [leaf(w)], **TOL)


def test_embedding_index_out_of_range():
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ag.tensor(np.array([5])), ag.tensor(np.ones((5, 2))))
