"""nn.utils.parametrizations.orthogonal: each map gives an orthogonal matrix (or orthonormal columns / rows), the
maps' values match their closed forms, gradients pass gradcheck, training keeps the weight orthogonal, and
registration and assignment follow PyTorch (the weight becomes the Q of its QR decomposition)."""

import math

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
from actorgrad.autograd import gradcheck
from actorgrad.nn.utils import parametrize
from actorgrad.nn.utils.parametrizations import orthogonal

MAPS = ["matrix_exp", "cayley", "householder"]
SHAPES = [(4, 4), (5, 3), (3, 5)]


def linear(shape, seed=0):
    ag.manual_seed(seed)
    return nn.Linear(shape[1], shape[0]).double()


def signed_q(w):
    """The Q of w's QR decomposition (w tall; wide: of its transpose) whose R has a non-negative diagonal."""
    wide = w.shape[0] < w.shape[1]
    a = w.T if wide else w
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    return q.T if wide else q


def assert_orthonormal(w):
    w = w.detach().numpy()
    gram = w @ w.T if w.shape[0] < w.shape[1] else w.T @ w
    np.testing.assert_allclose(gram, np.eye(gram.shape[0]), atol=1e-13)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_registering_makes_the_weight_the_q_of_its_qr_decomposition(orthogonal_map, shape):
    layer = linear(shape)
    w = layer.weight.detach().numpy().copy()
    orthogonal(layer, orthogonal_map=orthogonal_map)
    assert_orthonormal(layer.weight)
    np.testing.assert_allclose(layer.weight.detach().numpy(), signed_q(w), atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_householder_without_trivialization_keeps_reflectors_that_give_back_the_q(shape):
    layer = linear(shape, 1)
    w = layer.weight.detach().numpy().copy()
    orthogonal(layer, orthogonal_map="householder", use_trivialization=False)
    assert not hasattr(layer.parametrizations.weight[0], "base")
    np.testing.assert_allclose(layer.weight.detach().numpy(), signed_q(w), atol=1e-12)


def skew(x):
    lower = np.tril(x)
    return lower - lower.T


def exp_series(a):
    out, term = np.eye(len(a)), np.eye(len(a))
    for k in range(1, 40):
        term = term @ a / k
        out = out + term
    return out


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley"])
def test_without_trivialization_the_maps_are_their_closed_forms(orthogonal_map):
    layer = linear((4, 4), 2)
    x = layer.weight.detach().numpy().copy()
    orthogonal(layer, orthogonal_map=orthogonal_map, use_trivialization=False)
    a = skew(x)
    eye = np.eye(4)
    expected = exp_series(a) if orthogonal_map == "matrix_exp" else np.linalg.solve(eye - a / 2, eye + a / 2)
    np.testing.assert_allclose(layer.weight.detach().numpy(), expected, atol=1e-12)
    assert_orthonormal(layer.weight)


def test_a_tall_weight_keeps_the_first_columns_of_the_square_map():
    layer = linear((5, 3), 3)
    x = layer.weight.detach().numpy().copy()
    orthogonal(layer, orthogonal_map="matrix_exp", use_trivialization=False)
    square = np.concatenate([np.tril(x), np.zeros((5, 2))], axis=1)
    np.testing.assert_allclose(layer.weight.detach().numpy(), exp_series(square - square.T)[:, :3], atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_gradients_of_each_map_pass_gradcheck(orthogonal_map, shape):
    layer = linear(shape, 4)
    orthogonal(layer, orthogonal_map=orthogonal_map, use_trivialization=False)
    orth = layer.parametrizations.weight[0]
    x = ag.tensor(np.random.default_rng(5).uniform(-0.5, 0.5, shape), requires_grad=True)
    if orthogonal_map == "householder":  # the diagonal holds the signs (through int()): keep it off the integers
        with ag.no_grad():
            x.diagonal().copy_(ag.tensor([1.5, -1.5, 1.5, -1.5][: min(shape)], dtype=ag.float64))
    assert gradcheck(orth, (x,))


@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_training_steps_keep_the_weight_orthogonal_and_lower_the_loss(orthogonal_map):
    layer = linear((4, 4), 6)
    orthogonal(layer, orthogonal_map=orthogonal_map)
    target = ag.tensor(np.diag([1.0, -1.0, 1.0, 1.0]))
    opt = ag.optim.SGD(layer.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        loss = ((layer.weight - target) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert_orthonormal(layer.weight)


def test_assigning_an_orthogonal_matrix_sets_the_weight_with_trivialization():
    layer = linear((3, 3), 7)
    orthogonal(layer)
    c, s = math.cos(0.3), math.sin(0.3)
    rotation = ag.tensor([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]], dtype=ag.float64)
    layer.weight = rotation
    np.testing.assert_allclose(layer.weight.detach().numpy(), rotation.numpy(), atol=1e-14)
    np.testing.assert_allclose(layer.parametrizations.weight[0].base.numpy(), rotation.numpy(), atol=1e-14)


def test_default_map_and_errors_are_pytorchs():
    square, tall = linear((3, 3)), linear((4, 2))
    orthogonal(square)
    orthogonal(tall)
    assert square.parametrizations.weight[0].orthogonal_map == "matrix_exp"
    assert tall.parametrizations.weight[0].orthogonal_map == "householder"
    assert parametrize.is_parametrized(square, "weight")
    with pytest.raises(ValueError, match=r"^Expected a matrix or batch of matrices of shape \(3, 3\). Got a tensor"):
        square.weight = ag.ones(2, 2, dtype=ag.float64)
    layer = linear((3, 3))
    orthogonal(layer, orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="^It is not possible to assign to the matrix exponential or the"):
        layer.weight = ag.eye(3, dtype=ag.float64)
    with pytest.raises(ValueError, match='^orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                                         "Got: x$"):
        orthogonal(linear((3, 3)), orthogonal_map="x")
    with pytest.raises(ValueError, match="^Expected a matrix or batch of matrices. Got a tensor of 1 dimensions.$"):
        orthogonal(linear((3, 3)), name="bias")
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
        orthogonal(linear((3, 3)), name="kernel")


@pytest.mark.gpu
@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_orthogonal_on_cuda_matches_the_cpu(orthogonal_map):
    pytest.importorskip("cupy")
    cpu, gpu = linear((4, 3), 8), linear((4, 3), 8).to("cuda:0")
    orthogonal(cpu, orthogonal_map=orthogonal_map, use_trivialization=False)
    orthogonal(gpu, orthogonal_map=orthogonal_map, use_trivialization=False)
    np.testing.assert_allclose(gpu.weight.detach().cpu().numpy(), cpu.weight.detach().numpy(), atol=1e-12)
    gpu.weight.sum().backward()
    cpu.weight.sum().backward()
    (cpu_original,), (gpu_original,) = (m.parametrizations.weight.parameters() for m in (cpu, gpu))
    np.testing.assert_allclose(gpu_original.grad.cpu().numpy(), cpu_original.grad.numpy(), atol=1e-12)
