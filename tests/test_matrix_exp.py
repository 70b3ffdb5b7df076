"""linalg.matrix_exp (and torch.matrix_exp, Tensor.matrix_exp): values against exponentials known in closed form
(symmetric matrices through their eigenvalues, nilpotent ones as finite sums, diagonal ones), the scaling and
squaring path (1-norms above the Padé approximant's 5.37), batches, dtypes, the one LinalgMatrixExpBackward0 node,
first and second derivatives, and PyTorch's errors."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)
NORMS = (0.5, 1.5, 3.0, 8.0, 40.0)  # the last two are scaled and squared (twice and four times)


def t(x: np.ndarray, **kw) -> ag.Tensor:
    return ag.tensor(x, dtype=kw.pop("dtype", ag.float64), **kw)


def with_norm(a: np.ndarray, norm: float) -> np.ndarray:
    """`a` scaled to the given 1-norm (the largest absolute column sum), which sets the number of squarings."""
    return a * (norm / np.abs(a).sum(-2).max(-1))[..., None, None]


def symmetric(n: int, norm: float) -> np.ndarray:
    a = RNG.standard_normal((n, n))
    return with_norm(a + a.T, norm)


def exp_by_eigh(a: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(a)
    return (v * np.exp(w)[..., None, :]) @ np.swapaxes(v, -1, -2)


@pytest.mark.parametrize("norm", NORMS)
def test_a_symmetric_matrix_exponentiates_through_its_eigenvalues(norm: float) -> None:
    a = symmetric(5, norm)
    out = ag.linalg.matrix_exp(t(a)).numpy()
    np.testing.assert_allclose(out, exp_by_eigh(a), rtol=0, atol=1e-13 * math.exp(norm))


def test_a_nilpotent_matrix_exponentiates_to_a_finite_sum() -> None:
    n = np.triu(RNG.uniform(2.0, 3.0, (4, 4)), 1)  # N^4 = 0; 1-norm 6 to 9, so it is scaled and squared
    assert np.abs(n).sum(0).max() > 5.4
    expected = np.eye(4) + n + n @ n / 2 + n @ n @ n / 6
    np.testing.assert_allclose(ag.linalg.matrix_exp(t(n)).numpy(), expected, rtol=1e-14, atol=1e-14)


def test_a_diagonal_matrix_exponentiates_elementwise() -> None:
    d = np.array([-3.0, -0.5, 0.0, 1.0, 9.0])
    out = ag.linalg.matrix_exp(t(np.diag(d))).numpy()
    np.testing.assert_allclose(np.diag(out), np.exp(d), rtol=3e-14)
    assert not (out - np.diag(np.diag(out))).any()


def test_exp_of_minus_a_inverts_exp_of_a_for_non_normal_matrices() -> None:
    a = with_norm(RNG.standard_normal((3, 6, 6)), 1.0) * np.array([0.5, 4.0, 12.0])[:, None, None]
    product = (ag.linalg.matrix_exp(t(a)) @ ag.linalg.matrix_exp(t(-a))).numpy()
    np.testing.assert_allclose(product, np.broadcast_to(np.eye(6), a.shape), atol=1e-11)


def test_a_batch_is_each_matrix_on_its_own() -> None:
    a = np.stack([symmetric(4, norm) for norm in NORMS[:4] * 3]).reshape(2, 6, 4, 4)  # mixed numbers of squarings
    out = ag.linalg.matrix_exp(t(a)).numpy()
    assert out.shape == (2, 6, 4, 4)
    np.testing.assert_allclose(out, exp_by_eigh(a), rtol=1e-12, atol=1e-12)
    for index in np.ndindex(2, 6):
        np.testing.assert_allclose(out[index], ag.linalg.matrix_exp(t(a[index])).numpy(), rtol=1e-14, atol=1e-14)


def test_one_by_one_zero_by_zero_and_empty_batches() -> None:
    x = np.array([[[-2.0]], [[0.5]], [[7.0]]])
    np.testing.assert_allclose(ag.linalg.matrix_exp(t(x)).numpy(), np.exp(x), rtol=1e-15)
    assert ag.linalg.matrix_exp(ag.zeros(0, 0, dtype=ag.float64)).shape == (0, 0)
    assert ag.linalg.matrix_exp(ag.zeros(2, 0, 0)).shape == (2, 0, 0)
    empty = ag.zeros(0, 3, 3, dtype=ag.float64, requires_grad=True)
    out = ag.linalg.matrix_exp(empty)
    assert out.shape == (0, 3, 3)
    out.sum().backward()
    assert empty.grad.shape == (0, 3, 3)


@pytest.mark.parametrize(("dtype", "rtol"), [(ag.float32, 2e-6), (ag.float16, 4e-3)])
def test_lower_precision_keeps_its_dtype(dtype, rtol: float) -> None:
    a = symmetric(4, 8.0)
    out = ag.linalg.matrix_exp(t(a, dtype=dtype))
    assert out.dtype == dtype
    expected = exp_by_eigh(a.astype(out.numpy().dtype).astype(np.float64))
    np.testing.assert_allclose(out.numpy(), expected, rtol=0, atol=rtol * np.abs(expected).max())


def test_the_aliases_record_one_linalg_matrix_exp_node() -> None:
    a = t(symmetric(3, 2.0), requires_grad=True)
    outs = [ag.linalg.matrix_exp(a), ag.matrix_exp(a), a.matrix_exp()]
    for out in outs:
        assert out.grad_fn.name() == "LinalgMatrixExpBackward0"
        ((accumulate, _),) = out.grad_fn.next_functions  # straight to the leaf: no node between
        assert accumulate.variable is a and out.grad_fn._saved_self is a
        np.testing.assert_array_equal(out.detach().numpy(), outs[0].detach().numpy())


def test_the_gradient_of_a_symmetric_matrix_is_the_divided_difference_form() -> None:
    # At A = V diag(w) V^T the adjoint derivative is V (D * (V^T G V)) V^T, D[i, j] the divided difference of exp
    # at w[i], w[j] (exp(w[i]) on the diagonal).
    a, g = symmetric(5, 8.0), RNG.standard_normal((5, 5))
    w, v = np.linalg.eigh(a)
    diff = w[:, None] - w[None, :]
    same = np.abs(diff) < 1e-12
    d = np.where(same, np.exp(w)[:, None], (np.exp(w)[:, None] - np.exp(w)[None, :]) / np.where(same, 1, diff))
    expected = v @ (d * (v.T @ g @ v)) @ v.T
    leaf = t(a, requires_grad=True)
    (grad,) = ag.autograd.grad(ag.linalg.matrix_exp(leaf), leaf, t(g))
    np.testing.assert_allclose(grad.numpy(), expected, rtol=0, atol=1e-12 * np.abs(expected).max())


@pytest.mark.parametrize("norm", [0.5, 2.0, 7.0])
def test_gradients_match_finite_differences(norm: float) -> None:
    a = with_norm(RNG.standard_normal((2, 3, 3)), norm)
    assert gradcheck(ag.linalg.matrix_exp, [t(a, requires_grad=True)])


@pytest.mark.parametrize("norm", [0.8, 7.0])
def test_second_derivatives_match_finite_differences(norm: float) -> None:
    a = with_norm(RNG.standard_normal((3, 3)), norm)
    assert gradgradcheck(ag.matrix_exp, [t(a, requires_grad=True)])


@pytest.mark.parametrize(("call", "error", "text"), [
    (lambda: ag.linalg.matrix_exp(ag.ones(2, 3)), RuntimeError,
     "linalg.matrix_exp: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda: ag.ones(3).matrix_exp(), RuntimeError,
     "linalg.matrix_exp: The input tensor A must have at least 2 dimensions."),
    (lambda: ag.matrix_exp(ag.tensor([[1, 2], [3, 4]])), RuntimeError,
     "linalg.matrix_exp: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: ag.linalg.matrix_exp(ag.tensor([[True]])), RuntimeError,
     "linalg.matrix_exp: Expected a floating point or complex tensor as input. Got Bool"),
    (lambda: ag.linalg.matrix_exp(1.0), TypeError,
     "linalg_matrix_exp(): argument 'A' (position 1) must be Tensor, not float"),
    (lambda: ag.matrix_exp([[1.0]]), TypeError, "matrix_exp(): argument 'input' (position 1) must be Tensor, not list"),
])
def test_errors_are_pytorchs(call, error, text: str) -> None:
    with pytest.raises(error, match=f"^{re.escape(text)}$"):
        call()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [ag.float64, ag.float32])
def test_on_cuda_values_and_gradients_are_the_cpus(dtype, cupy) -> None:
    a = with_norm(RNG.standard_normal((2, 4, 4)), 1.0) * np.array([1.0, 9.0])[:, None, None]
    g = RNG.standard_normal((2, 4, 4))
    results = []
    for device in ("cpu", "cuda"):
        leaf = t(a, dtype=dtype, device=device, requires_grad=True)
        out = ag.linalg.matrix_exp(leaf)
        (first,) = ag.autograd.grad(out, leaf, t(g, dtype=dtype, device=device), create_graph=True)
        (second,) = ag.autograd.grad((first * first).sum(), leaf)
        assert out.device.type == first.device.type == second.device.type == device
        assert out.dtype == first.dtype == second.dtype == dtype
        results.append([x.detach().cpu().numpy() for x in (out, first, second)])
    tolerance = 1e-10 if dtype == ag.float64 else 1e-4
    for cpu, cuda in zip(*results):
        np.testing.assert_allclose(cuda, cpu, rtol=tolerance, atol=tolerance * np.abs(cpu).max())
