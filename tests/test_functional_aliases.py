"""The top-level forms of nn functions with ATen's signatures (torch.kl_div with an int reduction, torch.convolution,
torch.conv_tbc, the RNN cells, embedding_bag's four outputs ...): each table row checked to pass its arguments to
the functional form it names, the rest against formulas written out here, gradients against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck

RNG = np.random.default_rng(21)


def t(x: np.ndarray, **kw) -> ag.Tensor:
    return ag.tensor(x, dtype=ag.float64, **kw)


def close(a: ag.Tensor, b: ag.Tensor | np.ndarray) -> None:
    expected = b if isinstance(b, np.ndarray) else b.detach().numpy()
    np.testing.assert_allclose(a.detach().numpy(), expected, rtol=1e-12, atol=1e-12)


def test_losses_take_an_int_reduction_that_defaults_to_none_as_pytorchs_binding() -> None:
    a, b = t(RNG.standard_normal((4, 3))), t(RNG.random((4, 3)) + 0.1)
    y = t(np.array([1.0, -1.0, 1.0, -1.0]))
    for code, name in ((0, "none"), (1, "mean"), (2, "sum"), (5, "none")):
        close(ag.kl_div(a, b, code), F.kl_div(a, b, reduction=name) if name != "mean" else
              F.kl_div(a, b, reduction="none").mean())
        close(ag.kl_div(a, b.log(), code, log_target=True), ag.kl_div(a, b, code))
        close(ag.cosine_embedding_loss(a, b, y, 0.2, code), F.cosine_embedding_loss(a, b, y, 0.2, reduction=name))
        close(ag.hinge_embedding_loss(a, y[:, None] * b, 0.5, code),
              F.hinge_embedding_loss(a, y[:, None] * b, 0.5, reduction=name))
        close(ag.margin_ranking_loss(a[:, 0], b[:, 0], y, 0.1, code),
              F.margin_ranking_loss(a[:, 0], b[:, 0], y, 0.1, reduction=name))
        close(ag.poisson_nll_loss(a, b, True, True, 1e-8, code), F.poisson_nll_loss(a, b, True, True, eps=1e-8,
                                                                                    reduction=name))
        close(ag.triplet_margin_loss(a, b, 2 * a, 1.5, 1.0, 1e-6, True, code),
              F.triplet_margin_loss(a, b, 2 * a, 1.5, 1.0, 1e-6, True, reduction=name))
    assert ag.kl_div(a, b).shape == (4, 3) and ag.triplet_margin_loss(a, b, a).shape == (4,)
    log_probs = t(RNG.standard_normal((6, 2, 4))).log_softmax(2)
    targets = ag.tensor([[1, 2], [3, 3]])
    close(ag.ctc_loss(log_probs, targets, [6, 5], [2, 2], 0, 2),
          F.ctc_loss(log_probs, targets, [6, 5], [2, 2], reduction="sum"))
    with pytest.raises(TypeError, match="kl_div\\(\\) missing a required argument: 'target'"):
        ag.kl_div(a)


def test_dropouts_map_train_and_in_place() -> None:
    x = t(RNG.standard_normal((2, 3, 4)))
    for name in ("alpha_dropout", "feature_alpha_dropout", "feature_dropout"):
        assert getattr(ag, name)(x, 0.5, False) is x
        y = x.clone()
        assert getattr(ag, name + "_")(y, 0.5, False) is y
    ag.manual_seed(4)
    dropped = ag.feature_dropout(x, 0.25, True).numpy()
    ratio = dropped / x.numpy()
    for sample in range(2):
        for channel in range(3):
            assert np.allclose(ratio[sample, channel], 0) or np.allclose(ratio[sample, channel], 1 / 0.75)
    y = x.clone()
    ag.manual_seed(4)
    assert ag.feature_dropout_(y, 0.25, True) is y
    np.testing.assert_array_equal(y.numpy(), dropped)
    y = x.clone()
    ag.manual_seed(5)
    ag.dropout_(y, 0.5, True)
    ag.manual_seed(5)
    close(y, F.dropout(x, 0.5, True))
    y = x.clone()
    assert ag.relu_(y) is y and (y.numpy() >= 0).all()
    z = x.clone()
    ag.threshold_(z, 0.3, -1.0)
    close(z, np.where(x.numpy() > 0.3, x.numpy(), -1.0))


def test_convolution_and_conv_tbc_match_direct_sums() -> None:
    x, w, b = RNG.standard_normal((2, 3, 9)), RNG.standard_normal((4, 3, 3)), RNG.standard_normal(4)
    got = ag.convolution(t(x), t(w), t(b), [2], [1], [1], False, [0], 1).numpy()
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1)))
    expected = np.stack([[[b[o] + sum(w[o, c, k] * padded[n, c, 2 * i + k] for c in range(3) for k in range(3))
                           for i in range(got.shape[2])] for o in range(4)] for n in range(2)])
    np.testing.assert_allclose(got, expected, atol=1e-12)
    wt = t(RNG.standard_normal((3, 2, 3, 3)))
    image = t(RNG.standard_normal((1, 3, 5, 5)))
    close(ag.convolution(image, wt, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1),
          F.conv_transpose2d(image, wt, None, 2, 1, 1))
    xt, wtbc = RNG.standard_normal((9, 2, 3)), RNG.standard_normal((3, 3, 4))
    got = ag.conv_tbc(t(xt), t(wtbc), t(b), 1).numpy()
    padded = np.pad(xt, ((1, 1), (0, 0), (0, 0)))
    expected = np.stack([[b + sum(padded[i + k, n] @ wtbc[k] for k in range(3)) for n in range(2)]
                         for i in range(9)])
    np.testing.assert_allclose(got, expected, atol=1e-12)
    with pytest.raises(RuntimeError, match="Input must have 3 dims: time, batch, in_channel"):
        ag.conv_tbc(t(xt[0]), t(wtbc), t(b))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def test_rnn_cells_follow_their_formulas() -> None:
    x, h, c = RNG.standard_normal((2, 5)), RNG.standard_normal((2, 4)), RNG.standard_normal((2, 4))
    w_ih, w_hh, b_ih, b_hh = (RNG.standard_normal(s) for s in ((16, 5), (16, 4), (16,), (16,)))
    linear = x @ w_ih[:4].T + b_ih[:4] + h @ w_hh[:4].T + b_hh[:4]
    close(ag.rnn_tanh_cell(t(x), t(h), t(w_ih[:4]), t(w_hh[:4]), t(b_ih[:4]), t(b_hh[:4])), np.tanh(linear))
    close(ag.rnn_relu_cell(t(x), t(h), t(w_ih[:4]), t(w_hh[:4]), t(b_ih[:4]), t(b_hh[:4])), np.maximum(linear, 0))
    gates = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    i, f, g, o = sigmoid(gates[:, :4]), sigmoid(gates[:, 4:8]), np.tanh(gates[:, 8:12]), sigmoid(gates[:, 12:])
    c_next = f * c + i * g
    h_next, c_got = ag.lstm_cell(t(x), [t(h), t(c)], t(w_ih), t(w_hh), t(b_ih), t(b_hh))
    close(h_next, o * np.tanh(c_next))
    close(c_got, c_next)
    gx, gh = x @ w_ih[:12].T + b_ih[:12], h @ w_hh[:12].T + b_hh[:12]
    r, z = sigmoid(gx[:, :4] + gh[:, :4]), sigmoid(gx[:, 4:8] + gh[:, 4:8])
    n = np.tanh(gx[:, 8:] + r * gh[:, 8:])
    close(ag.gru_cell(t(x), t(h), t(w_ih[:12]), t(w_hh[:12]), t(b_ih[:12]), t(b_hh[:12])), (1 - z) * n + z * h)


def test_embedding_bag_returns_atens_four_outputs() -> None:
    weight = RNG.standard_normal((6, 3))
    indices, offsets = ag.tensor([0, 2, 4, 5, 1, 2]), ag.tensor([0, 2, 2])
    out, offset2bag, sizes, chosen = ag.embedding_bag(t(weight), indices, offsets, mode=2)
    np.testing.assert_allclose(out.numpy(), [weight[[0, 2]].max(0), np.zeros(3), weight[[4, 5, 1, 2]].max(0)])
    assert offset2bag.numpy().tolist() == [0, 0, 2, 2, 2, 2] and sizes.numpy().tolist() == [2, 0, 4]
    members = [[0, 2], [], [4, 5, 1, 2]]
    expected = [[m[int(np.argmax(weight[m, j]))] if m else 0 for j in range(3)] for m in members]
    assert chosen.numpy().tolist() == expected
    out, _, sizes, chosen = ag.embedding_bag(t(weight), indices, offsets, False, 1, False, None, False, 2)
    assert sizes.numpy().tolist() == [1, 0, 3] == chosen.numpy().tolist()  # padding_idx 2 is not counted
    np.testing.assert_allclose(out.numpy()[2], weight[[4, 5, 1]].mean(0))
    _, _, sizes, chosen = ag.embedding_bag(t(weight), indices, offsets)
    assert sizes.numpy().tolist() == [0, 0, 0] == chosen.numpy().tolist()


def test_the_other_rows_pass_their_arguments() -> None:
    x = t(RNG.standard_normal((2, 3, 8)))
    close(ag.constant_pad_nd(x, [1, 2], 3.0), F.pad(x, (1, 2), value=3.0))
    values, indices = ag.max_pool1d_with_indices(x, [2])
    close(values, F.max_pool1d(x, 2))
    assert indices.shape == (2, 3, 4)
    values, indices = ag.adaptive_max_pool1d(x, 3)
    close(values, F.adaptive_max_pool1d(x, 3))
    close(ag.instance_norm(x, None, None, None, None, True, 0.1, 1e-5, False), F.instance_norm(x))
    y = x.clone()
    close(ag.celu_(y, 0.5), F.celu(x, 0.5))
    weight = t(RNG.standard_normal((5, 3)) * 3)
    rows = weight.numpy().copy()
    assert ag.embedding_renorm_(weight, ag.tensor([0, 1]), 1.0, 2.0) is weight
    norms = np.linalg.norm(rows[:2], axis=1, keepdims=True)
    np.testing.assert_allclose(weight.numpy()[:2], rows[:2] * np.where(norms > 1, 1 / (norms + 1e-7), 1))
    np.testing.assert_array_equal(weight.numpy()[2:], rows[2:])


@pytest.mark.parametrize("name", ["kl_div", "convolution", "conv_tbc", "lstm_cell", "gru_cell", "instance_norm"])
def test_gradients_match_finite_differences(name: str) -> None:
    w_hh = t(RNG.standard_normal((16, 4)))
    functions = {
        "kl_div": (lambda x: ag.kl_div(x, x.exp() * 0.5, 1), [(2, 3)]),
        "convolution": (lambda x, w: ag.convolution(x, w, None, [1], [1], [1], False, [0], 1), [(2, 3, 5), (4, 3, 2)]),
        "conv_tbc": (lambda x, w, b: ag.conv_tbc(x, w, b, 1), [(5, 2, 3), (2, 3, 4), (4,)]),
        "lstm_cell": (lambda x, h, c, w: ag.lstm_cell(x, [h, c], w, w_hh, w[:, 0], None)[1],
                      [(2, 5), (2, 4), (2, 4), (16, 5)]),
        "gru_cell": (lambda x, h, w: ag.gru_cell(x, h, w, w_hh[:12], None, w[:, 1]), [(2, 5), (2, 4), (12, 5)]),
        "instance_norm": (lambda x: ag.instance_norm(x, None, None, None, None, True, 0.1, 1e-5, False), [(2, 3, 5)]),
    }
    fn, shapes = functions[name]
    assert gradcheck(fn, tuple(t(RNG.standard_normal(s), requires_grad=True) for s in shapes))


@pytest.mark.gpu
def test_on_cuda_values_and_gradients_are_the_cpus(cupy) -> None:
    x, w = RNG.standard_normal((2, 3, 6)), RNG.standard_normal((4, 3, 2))
    results = []
    for device in ("cpu", "cuda:0"):
        xs, ws = (ag.tensor(v, device=device, requires_grad=True) for v in (x, w))
        out = (ag.convolution(xs, ws, None, [1], [0], [1], False, [0], 1).sum()
               + ag.conv_tbc(xs.permute(2, 0, 1), ws.permute(2, 1, 0), ws[:, 0, 0]).sum()
               + ag.kl_div(xs, xs.exp(), 2) + ag.hinge_embedding_loss(xs, xs.sign(), 1.0, 1))
        grads = ag.autograd.grad(out, (xs, ws))
        results.append([v.detach().cpu().numpy() for v in (out, *grads)])
    for cpu, cuda in zip(*results):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-10, atol=1e-12)
