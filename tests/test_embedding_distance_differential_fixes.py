"""Behaviours found to differ from PyTorch's by differential testing of embedding_bag, the distances and the
activations, each checked against an independent computation: threshold replaces only entries that compare
<= threshold, so a NaN stays NaN and passes its gradient on (a `>` test sent it to `value` with no gradient)."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck

X = np.array([np.nan, -1.5, 0.25, 0.5, 2.0, np.inf, -np.inf])
LIMIT, VALUE = 0.5, -3.0


def expected(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """threshold's definition, written out entry by entry: (value, d value / d x)."""
    values = [VALUE if v <= LIMIT else v for v in x]
    slopes = [0.0 if v <= LIMIT else 1.0 for v in x]
    return np.array(values), np.array(slopes)


@pytest.mark.parametrize("form", ["function", "top_level", "module", "inplace"])
def test_threshold_keeps_nan_and_its_gradient(form):
    leaf = ag.tensor(X, requires_grad=True)
    x = leaf * 1.0
    out = {
        "function": lambda: F.threshold(x, LIMIT, VALUE),
        "top_level": lambda: ag.threshold(x, LIMIT, VALUE),
        "module": lambda: ag.nn.Threshold(LIMIT, VALUE)(x),
        "inplace": lambda: F.threshold_(x, LIMIT, VALUE),
    }[form]()
    want, slopes = expected(X)
    np.testing.assert_array_equal(out.detach().numpy(), want)
    weights = np.arange(1.0, X.size + 1)
    (out * ag.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), weights * slopes)


def test_threshold_nan_float32_and_double_backward():
    x = ag.tensor(X.astype(np.float32), requires_grad=True)
    out = F.threshold(x, LIMIT, VALUE)
    assert out.dtype == ag.float32
    (g,) = ag.autograd.grad(out.sum(), x, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), expected(X)[1].astype(np.float32))
    smooth = ag.tensor(np.array([-1.3, 0.7, 2.1, 0.2]), requires_grad=True)  # away from the kink
    assert gradcheck(lambda t: F.threshold(t, LIMIT, VALUE), (smooth,))
    assert gradgradcheck(lambda t: F.threshold(t, LIMIT, VALUE) ** 2, (smooth,))


@pytest.mark.gpu
def test_threshold_nan_on_gpu(cupy):
    leaf = ag.tensor(X, device="cuda:0", requires_grad=True)
    out = F.threshold(leaf, LIMIT, VALUE)
    assert out.device == ag.device("cuda:0")
    out.sum().backward()
    want, slopes = expected(X)
    np.testing.assert_array_equal(out.detach().cpu().numpy(), want)
    np.testing.assert_array_equal(leaf.grad.cpu().numpy(), slopes)
