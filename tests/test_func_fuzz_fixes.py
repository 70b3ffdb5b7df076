"""actorgrad.func and autograd.functional behaviours found to differ from PyTorch's by a generated (fuzz)
differential review, each checked against closed forms: autograd.functional.hessian's blocks for an input the
function does not use (zeros shaped by both inputs, and in strict mode PyTorch's constant-jacobian refusal), the
strict create_graph refusal naming the jacobian as PyTorch's does, and func.vjp's vjp_fn(create_graph=True)
leaving a result that requires grad only where it reaches outside the transform."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import func
from actorgrad.autograd import functional as F

RNG = np.random.default_rng(11)
A = RNG.uniform(0.5, 1.5, 3) * np.array([1, -1, 1])
B = RNG.uniform(0.5, 1.5, (1, 2))
HESSIAN_OPTIONS = [{}, {"create_graph": True}, {"vectorize": True, "outer_jacobian_strategy": "forward-mode"}]


def _cube_sum(a, b):
    return (a ** 3).sum()


def _check_cube_hessian(h, a: np.ndarray, b: np.ndarray) -> None:
    """The Hessian of sum(a**3) in (a, b): diag(6a) for a, zero blocks of shape (input_i + input_j) elsewhere."""
    expected = ((np.diag(6 * a), np.zeros(a.shape + b.shape)),
                (np.zeros(b.shape + a.shape), np.zeros(b.shape + b.shape)))
    assert isinstance(h, tuple) and all(isinstance(row, tuple) and len(row) == 2 for row in h) and len(h) == 2
    for row, expected_row in zip(h, expected):
        for block, want in zip(row, expected_row):
            assert block.shape == want.shape
            np.testing.assert_allclose(block.detach().cpu().numpy(), want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("options", HESSIAN_OPTIONS)
def test_hessian_blocks_of_an_unused_input_are_zeros_shaped_by_both_inputs(options):
    _check_cube_hessian(F.hessian(_cube_sum, (ag.tensor(A), ag.tensor(B)), **options), A, B)


@pytest.mark.parametrize("create_graph", [False, True])
def test_strict_hessian_refuses_an_unused_input_as_a_constant_jacobian(create_graph):
    message = ("^While computing the hessian, found that the jacobian of the user-provided function with respect "
               "to input 1 is independent of the input. This is not allowed in strict mode.")
    with pytest.raises(RuntimeError, match=message):
        F.hessian(_cube_sum, (ag.tensor(A), ag.tensor(B)), strict=True, create_graph=create_graph)


def test_strict_create_graph_hessian_of_a_quadratic_names_the_jacobian():
    message = ("^The jacobian of the user-provided function is independent of input 0. This is not allowed in strict "
               "mode when create_graph=True.$")
    with pytest.raises(RuntimeError, match=message):
        F.hessian(lambda a: (a * a).sum(), ag.tensor(A), strict=True, create_graph=True)


def test_a_hessian_with_an_unused_input_still_differentiates_with_create_graph():
    """d/da sum(H_aa * W) = 6 W.diagonal(), through the create_graph Hessian, with the unused input's blocks
    zeros that do not break the outer pass."""
    a = ag.tensor(A, requires_grad=True)
    h = F.hessian(_cube_sum, (a, ag.tensor(B)), create_graph=True)
    w = RNG.standard_normal((3, 3))
    (g,) = ag.autograd.grad((h[0][0] * ag.tensor(w)).sum(), a)
    np.testing.assert_allclose(g.numpy(), 6 * np.diag(w), rtol=1e-12)


@pytest.mark.parametrize("create_graph", [None, False, True])
def test_vjp_fn_of_a_primal_without_grad_gives_a_result_without_grad(create_graph):
    x = ag.tensor(A)
    _, vjp_fn = func.vjp(lambda a: a.sin() * a, x)
    (g,) = vjp_fn(ag.ones(3, dtype=ag.float64), create_graph=create_graph)
    np.testing.assert_allclose(g.numpy(), np.cos(A) * A + np.sin(A), rtol=1e-12)
    assert not g.requires_grad and g.grad_fn is None


@pytest.mark.parametrize("create_graph", [None, True])
def test_vjp_fn_of_a_primal_with_grad_differentiates_through_the_primal(create_graph):
    """vjp of sin(a)·a with ones is cos(a)·a + sin(a), whose derivative is 2 cos(a) - a sin(a); .grad untouched."""
    x = ag.tensor(A, requires_grad=True)
    _, vjp_fn = func.vjp(lambda a: a.sin() * a, x)
    (g,) = vjp_fn(ag.ones(3, dtype=ag.float64), create_graph=create_graph)
    (gg,) = ag.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 2 * np.cos(A) - A * np.sin(A), rtol=1e-12)
    assert x.grad is None


@pytest.mark.gpu
@pytest.mark.parametrize("options", HESSIAN_OPTIONS)
def test_hessian_of_an_unused_input_on_cuda(cupy, options):
    h = F.hessian(_cube_sum, (ag.tensor(A, device="cuda"), ag.tensor(B, device="cuda")), **options)
    assert all(block.device == ag.device("cuda:0") for row in h for block in row)
    _check_cube_hessian(h, A, B)


@pytest.mark.gpu
def test_vjp_fn_with_create_graph_on_cuda(cupy):
    x = ag.tensor(A, device="cuda")
    _, vjp_fn = func.vjp(lambda a: a.sin() * a, x)
    (g,) = vjp_fn(ag.ones(3, dtype=ag.float64, device="cuda"), create_graph=True)
    assert g.device == ag.device("cuda:0") and not g.requires_grad
    np.testing.assert_allclose(g.cpu().numpy(), np.cos(A) * A + np.sin(A), rtol=1e-12)
