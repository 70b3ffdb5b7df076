"""Behaviour of nn.utils that once differed from PyTorch's: pruning amounts given as numpy integers, and the
deprecation warning of `nn.utils.stateless.functional_call` (which `func.functional_call` must not give)."""

import importlib.util
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn
from actorgrad.nn.utils import prune, stateless

HAS_CUPY = importlib.util.find_spec("cupy") is not None

WEIGHT = np.array([[0.9, -0.1, 0.5], [0.05, -2.0, 0.3], [1.2, -0.7, 0.02], [0.4, 0.6, -0.25]])


def linear(device: str = "cpu") -> nn.Linear:
    lin = nn.Linear(3, 4, dtype=ag.float64).to(device)
    with ag.no_grad():
        lin.weight.copy_(ag.tensor(WEIGHT, device=device))
    return lin


def smallest_abs_mask(w: np.ndarray, count: int) -> np.ndarray:
    mask = np.ones(w.size)
    mask[np.argsort(np.abs(w), axis=None)[:count]] = 0
    return mask.reshape(w.shape)


@pytest.mark.parametrize("amount", [np.int64(4), np.int32(4), np.uint8(4)])
def test_l1_unstructured_takes_numpy_integer_amount(amount: np.integer) -> None:
    lin = prune.l1_unstructured(linear(), "weight", amount)
    expected = smallest_abs_mask(WEIGHT, 4)
    np.testing.assert_array_equal(lin.weight_mask.numpy(), expected)
    np.testing.assert_array_equal(lin.weight.detach().numpy(), WEIGHT * expected)


def test_random_and_structured_pruning_take_numpy_integer_amount() -> None:
    lin = prune.random_unstructured(linear(), "weight", np.int64(5))
    assert int((lin.weight_mask == 0).sum()) == 5
    lin = prune.ln_structured(linear(), "weight", np.int64(2), 2, dim=0)
    row_norms = np.sqrt((WEIGHT ** 2).sum(axis=1))
    expected = np.ones_like(WEIGHT)
    expected[np.argsort(row_norms)[:2]] = 0
    np.testing.assert_array_equal(lin.weight_mask.numpy(), expected)
    lin = prune.random_structured(linear(), "weight", np.int64(1), dim=1)
    assert int((lin.weight_mask.sum(dim=0) == 0).sum()) == 1


def test_numpy_integer_amount_still_bounded() -> None:
    with pytest.raises(ValueError, match="amount=13 should be smaller than the number of parameters to prune=12"):
        prune.l1_unstructured(linear(), "weight", np.int64(13))
    with pytest.raises(ValueError, match="should either be a float in the range"):
        prune.l1_unstructured(linear(), "weight", np.int64(-1))


def test_stateless_functional_call_is_deprecated() -> None:
    lin = linear()
    w = np.arange(12.0).reshape(4, 3) / 10
    x = np.array([[1.0, -2.0, 0.5]])
    with pytest.warns(FutureWarning, match=r"stateless\.functional_call` is deprecated as of PyTorch 2\.0 .*"
                                           r"Please use `actorgrad\.func\.functional_call` instead"):
        out = stateless.functional_call(lin, {"weight": ag.tensor(w)}, ag.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), x @ w.T + lin.bias.detach().numpy())
    np.testing.assert_array_equal(lin.weight.detach().numpy(), WEIGHT)


def test_func_functional_call_gives_no_warning() -> None:
    lin = linear()
    w = ag.tensor(np.arange(12.0).reshape(4, 3) / 10, requires_grad=True)
    x = np.array([[1.0, -2.0, 0.5]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ag.func.functional_call(lin, {"weight": w}, ag.tensor(x))
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.repeat(x, 4, axis=0))


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUPY, reason="needs CuPy (or its stand-in)")
def test_numpy_integer_amount_on_cuda() -> None:
    import cupy

    if not cupy.cuda.is_available():
        pytest.skip("no CUDA device")
    lin = prune.l1_unstructured(linear("cuda"), "weight", np.int64(4))
    assert isinstance(lin.weight_mask._data, cupy.ndarray)
    np.testing.assert_array_equal(lin.weight_mask.cpu().numpy(), smallest_abs_mask(WEIGHT, 4))
