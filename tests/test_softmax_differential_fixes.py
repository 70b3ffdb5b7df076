"""Behaviours of the softmaxes, logcumsumexp and prelu found to differ from PyTorch's by differential testing, each
checked against an independent computation: the softmaxes' `dtype` given third by position (torch.softmax(x, 1,
torch.float64), Tensor.log_softmax(1, dtype)), logcumsumexp of an input holding NaN (no numpy warning), and prelu's
dtype check coming before its shape checks (nn.PReLU's float32 weight on a float64 input)."""

import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(41)


def _softmax(x: np.ndarray, dim: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


@pytest.mark.parametrize("call", [
    lambda x, dtype: ag.softmax(x, 1, dtype),
    lambda x, dtype: x.softmax(1, dtype),
])
def test_softmax_takes_dtype_third_by_position(call):
    x32 = RNG.standard_normal((3, 5)).astype(np.float32)
    out = call(ag.tensor(x32), ag.float64)
    assert out.dtype == ag.float64
    np.testing.assert_allclose(out.numpy(), _softmax(x32.astype(np.float64), 1), rtol=1e-12)


@pytest.mark.parametrize("call", [
    lambda x, dtype: ag.log_softmax(x, 1, dtype),
    lambda x, dtype: x.log_softmax(1, dtype),
])
def test_log_softmax_takes_dtype_third_by_position(call):
    x32 = RNG.standard_normal((3, 5)).astype(np.float32)
    t = ag.tensor(x32, requires_grad=True)
    out = call(t, ag.float64)
    assert out.dtype == ag.float64
    np.testing.assert_allclose(out.detach().numpy(), np.log(_softmax(x32.astype(np.float64), 1)), rtol=1e-12)
    w = RNG.standard_normal((3, 5))
    (out * ag.tensor(w)).sum().backward()
    # d/dx of sum(w * log_softmax(x)) is w - softmax(x) * sum(w), cast back to the input's float32
    expected = w - _softmax(x32.astype(np.float64), 1) * w.sum(1, keepdims=True)
    assert t.grad.dtype == ag.float32
    np.testing.assert_allclose(t.grad.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_softmaxes_with_a_positional_dtype_pass_gradcheck_and_gradgradcheck():
    x = ag.tensor(RNG.standard_normal((2, 4)), requires_grad=True)
    for fn in (lambda t: t.softmax(1, ag.float64), lambda t: ag.log_softmax(t, 0, ag.float64)):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize("dtype", [ag.float64, ag.float32, ag.float16])
def test_logcumsumexp_runs_nan_on_without_a_warning(dtype):
    x = np.array([[0.5, -1.0, np.nan, 2.0], [1.0, 0.25, -0.5, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ag.logcumsumexp(ag.tensor(x, dtype=dtype), 1)
    assert out.dtype == dtype
    expected = np.log(np.cumsum(np.exp(x), axis=1))  # nan from the nan on, as the running sum
    tol = 1e-3 if dtype == ag.float16 else 1e-6
    np.testing.assert_allclose(out.numpy().astype(np.float64), expected, rtol=tol, equal_nan=True)


def test_prelu_checks_the_dtype_before_the_number_of_channels():
    message = "prelu: Type promoting not supported. Got Double and Float"
    with pytest.raises(RuntimeError, match=re.escape(message)):
        nn.PReLU(4)(ag.tensor(RNG.standard_normal((2, 3, 4))))
    with pytest.raises(RuntimeError, match=re.escape(message)):
        F.prelu(ag.tensor(RNG.standard_normal((2, 3))), ag.ones(1, 2, dtype=ag.float32))


def test_prelu_of_matching_dtypes_still_checks_the_channels():
    with pytest.raises(RuntimeError, match="Found parameter numbers = 4 and channel size = 3"):
        nn.PReLU(4)(ag.tensor(RNG.standard_normal((2, 3, 4)), dtype=ag.float32))
    x = RNG.standard_normal((2, 3, 4))
    out = nn.PReLU(3, 0.1, dtype=ag.float64)(ag.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), np.where(x > 0, x, 0.1 * x))


@pytest.mark.gpu
def test_positional_dtype_softmax_and_nan_logcumsumexp_on_cuda(cupy):
    x32 = RNG.standard_normal((3, 5)).astype(np.float32)
    t = ag.tensor(x32, device="cuda")
    out = t.log_softmax(1, ag.float64)
    assert out.device == t.device and out.dtype == ag.float64
    np.testing.assert_allclose(out.cpu().numpy(), np.log(_softmax(x32.astype(np.float64), 1)), rtol=1e-12)
    x = np.array([0.5, np.nan, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lc = ag.logcumsumexp(ag.tensor(x, device="cuda"), 0)
    np.testing.assert_allclose(lc.cpu().numpy(), np.log(np.cumsum(np.exp(x))), equal_nan=True)
