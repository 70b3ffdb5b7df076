"""AdaptiveLogSoftmaxWithLoss as PyTorch's: its layers, each target's log-probability against the two-level
softmax written out here in numpy, log_prob as a distribution, predict, gradients against finite differences in
float64, and its error texts (read off torch 2.13, not a test dependency)."""

import re

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
from actorgrad.autograd import gradcheck

TOL = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-4}


def _raises(fn, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        fn()


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _reference_log_prob(m, x):
    """Every class's log-probability: shortlist classes from the head; cluster c's classes from its tail, plus the
    head's entry for the cluster."""
    head = _log_softmax(x @ m.head.weight.detach().numpy().T + (
        0 if m.head.bias is None else m.head.bias.detach().numpy()))
    parts = [head[:, :m.shortlist_size]]
    for c, (into, out) in enumerate(m.tail):
        hidden = x @ into.weight.detach().numpy().T
        parts.append(_log_softmax(hidden @ out.weight.detach().numpy().T) + head[:, m.shortlist_size + c, None])
    return np.concatenate(parts, 1)


def _model(head_bias=False):
    ag.manual_seed(0)
    return nn.AdaptiveLogSoftmaxWithLoss(8, 10, [2, 5], div_value=2.0, head_bias=head_bias, dtype=ag.float64)


def test_layers_follow_the_cutoffs_and_div_value():
    m = _model()
    assert (m.shortlist_size, m.n_clusters, m.head_size, m.cutoffs) == (2, 2, 4, [2, 5, 10])
    assert repr(m) == """AdaptiveLogSoftmaxWithLoss(
  (head): Linear(in_features=8, out_features=4, bias=False)
  (tail): ModuleList(
    (0): Sequential(
      (0): Linear(in_features=8, out_features=4, bias=False)
      (1): Linear(in_features=4, out_features=3, bias=False)
    )
    (1): Sequential(
      (0): Linear(in_features=8, out_features=2, bias=False)
      (1): Linear(in_features=2, out_features=5, bias=False)
    )
  )
)"""


@pytest.mark.parametrize("head_bias", [False, True])
def test_forward_gives_each_targets_log_probability_and_their_mean_loss(head_bias):
    m = _model(head_bias)
    x = np.random.default_rng(1).standard_normal((6, 8))
    target = np.array([0, 3, 9, 1, 6, 4])
    output, loss = m(ag.tensor(x), ag.tensor(target))
    expected = _reference_log_prob(m, x)[np.arange(6), target]
    np.testing.assert_allclose(output.detach().numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(loss.item(), -expected.mean(), rtol=1e-12)
    single = m(ag.tensor(x[2]), ag.tensor(9))
    assert single.output.shape == () and np.isclose(single.output.item(), expected[2])


def test_log_prob_is_a_distribution_and_predict_its_most_likely_class():
    m = _model()
    with ag.no_grad():  # make the clusters win some rows' head argmax
        m.head.weight[2:] *= 3
    x = np.random.default_rng(2).standard_normal((40, 8))
    log_prob = m.log_prob(ag.tensor(x)).detach().numpy()
    np.testing.assert_allclose(np.exp(log_prob).sum(1), np.ones(40), rtol=1e-12)
    np.testing.assert_allclose(log_prob, _reference_log_prob(m, x), rtol=1e-12)
    head = x @ m.head.weight.detach().numpy().T
    in_shortlist = head.argmax(1) < 2
    assert 0 < in_shortlist.sum() < 40
    expected = np.where(in_shortlist, head.argmax(1), log_prob.argmax(1))
    np.testing.assert_array_equal(m.predict(ag.tensor(x)).numpy(), expected)


def test_gradients_in_input_and_weights_pass_gradcheck():
    m = _model(head_bias=True)
    x = ag.tensor(np.random.default_rng(3).standard_normal((5, 8)), requires_grad=True)
    target = ag.tensor([0, 4, 9, 2, 7])
    slots = [(module, name) for module in m.modules() for name, p in module._parameters.items() if p is not None]

    def loss(t, *weights):  # the weights gradcheck perturbs, put in the layers' places
        for (module, name), w in zip(slots, weights):
            module._parameters[name] = w
        return m(t, target).loss

    weights = [ag.tensor(module._parameters[name].detach().numpy(), requires_grad=True) for module, name in slots]
    assert gradcheck(loss, [x, *weights], **TOL)


@pytest.mark.parametrize("fn, error, message", [
    (lambda m: m(ag.randn(3, 8), ag.tensor([0, 1])), RuntimeError,
     "Input and target should have the same size in the batch dimension."),
    (lambda m: m(ag.randn(3), ag.tensor([0, 1, 2])), RuntimeError,
     "1D target tensor expects 2D input tensors, but found inputs with size actorgrad.Size([3])"),
    (lambda m: m(ag.randn(3, 8), ag.tensor(1)), RuntimeError,
     "0D target tensor expects 1D input tensors, but found inputs with size actorgrad.Size([3, 8])"),
    (lambda m: m(ag.randn(3, 8), ag.zeros(3, 1, dtype=ag.int64)), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    (lambda m: m(ag.randn(3, 8), ag.tensor([0, 10, -1])), RuntimeError,
     "Target values should be in [0, 9], but values in range [-1, 10] were found. "),
    (lambda m: nn.AdaptiveLogSoftmaxWithLoss(4, 6, []), ValueError,
     "cutoffs should be a sequence of length larger than 0"),
    (lambda m: nn.AdaptiveLogSoftmaxWithLoss(4, 6, [3, 2]), ValueError,
     "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where each value is "
     "between 1 and n_classes-1"),
    (lambda m: nn.AdaptiveLogSoftmaxWithLoss(4, 6, [6]), ValueError,
     "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where each value is "
     "between 1 and n_classes-1"),
])
def test_errors_match_torch(fn, error, message):
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [2, 5], div_value=2.0)
    _raises(lambda: fn(m), error, message)


@pytest.mark.gpu
def test_adaptive_log_softmax_on_cuda_gives_the_cpu_numbers_and_gradients(cupy):
    x = np.random.default_rng(4).standard_normal((6, 8))
    target = np.array([0, 3, 9, 1, 6, 4])
    results = []
    for device in ("cpu", "cuda"):
        m = _model().to(device)
        leaf = ag.tensor(x, device=device, requires_grad=True)
        out = m(leaf, ag.tensor(target, device=device))
        out.loss.backward()
        assert out.output.device is ag.device(device)
        results.append((out.output.detach().cpu().numpy(), leaf.grad.cpu().numpy(),
                        m.head.weight.grad.cpu().numpy(), m.log_prob(leaf).detach().cpu().numpy()))
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
