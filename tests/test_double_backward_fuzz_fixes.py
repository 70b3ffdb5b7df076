"""Differences from PyTorch that a generated (fuzzed) comparison of second- and third-order gradients found, each
fixed: nll_loss's gradient is an op on its input too, with a zero derivative (under create_graph the input's
gradient requires grad and a double backward gives zeros, as PyTorch's NllLossBackwardBackward0); cumprod along a
dim of one element and prod of a 0-d tensor pass the gradient on without depending on the input, as PyTorch's.
The second derivatives of one op per family are checked against finite differences, and the third derivatives of
the normalizations and logcumsumexp, where PyTorch's own double-backward formulas drop a dependence."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck, gradgradcheck

F = ag.nn.functional
RNG = np.random.default_rng(31)


def leaf(*shape, low=0.3, high=2.0):
    """float64 values away from zero (|x| in [low, high], random signs): off the kinks of the ops below."""
    values = RNG.uniform(low, high, shape) * RNG.choice([-1.0, 1.0], shape)
    return ag.tensor(values, requires_grad=True)


# -- nll_loss -----------------------------------------------------------------------------------------------------
NLL_CASES = [
    ((3, 4), [0, 3, 1], "NllLossBackwardBackward0"),
    ((4,), 2, "NllLossBackwardBackward0"),
    ((2, 3, 2, 2), [[[0, 1], [2, 1]], [[0, 0], [1, 2]]], "NllLoss2DBackwardBackward0"),
]


@pytest.mark.parametrize("shape, target, node", NLL_CASES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_gradient_depends_on_its_input_with_a_zero_derivative(shape, target, node, reduction):
    x = leaf(*shape)
    weight = ag.tensor([0.5, 1.0, 2.0, 1.5][:shape[1 if len(shape) > 1 else 0]], dtype=ag.float64)
    loss = F.nll_loss(x, ag.tensor(target), weight=weight, reduction=reduction)
    w = ag.tensor(RNG.uniform(0.5, 1.5, loss.shape))
    (g,) = ag.autograd.grad((loss * w).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn.name() == node
    # nll_loss is linear in its input: the second derivative is zero, and a double backward gives it
    (gg,) = ag.autograd.grad((g * g).sum(), x)
    assert gg.shape == shape and not gg.detach().numpy().any()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_nll_loss_double_backward_matches_finite_differences(reduction, ignore_index):
    target = ag.tensor([0, 1, 2, 1])
    weight = ag.tensor([0.5, 2.0, 1.5], dtype=ag.float64)

    def loss(x):  # squared, so the second derivative has a part through the gradient's adjoint
        return F.nll_loss(x, target, weight=weight, reduction=reduction, ignore_index=ignore_index) ** 2

    x = leaf(4, 3)
    assert gradcheck(loss, (x,))
    assert gradgradcheck(loss, (x,))
    spatial = leaf(2, 3, 2)
    assert gradgradcheck(lambda x: F.nll_loss(x, ag.tensor([[0, 2], [1, 1]]), reduction=reduction) ** 2, (spatial,))


def test_nll_loss_refuses_a_backward_after_its_input_changed_in_place():
    # the node saves its input, as PyTorch's NllLossBackward0 does
    x = leaf(2, 3)
    logp = x * 1.0
    loss = F.nll_loss(logp, ag.tensor([0, 2]))
    logp.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


# -- cumprod and prod of one element ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, dim", [((3, 1, 2), 1), ((1,), 0), ((2, 1), -1), ((), 0)])
def test_cumprod_of_one_element_along_dim_passes_the_gradient_on(shape, dim):
    x = ag.tensor(RNG.uniform(0.5, 2.0, shape), requires_grad=True)
    w = ag.tensor(RNG.uniform(0.5, 1.5, shape))
    (g,) = ag.autograd.grad((ag.cumprod(x, dim) * w).sum(), x, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), w.numpy())
    assert not g.requires_grad  # it does not depend on x: a double backward finds no graph, as PyTorch's
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        ag.autograd.grad(g.sum(), x)


def test_cumprod_along_a_longer_dim_still_differentiates_twice():
    x = leaf(2, 1, 3)
    assert gradgradcheck(lambda t: ag.cumprod(t, 2), (x,))
    assert gradgradcheck(lambda t: ag.cumprod(t, 1) * t, (x,))


@pytest.mark.parametrize("dim", [None, 0, -1])
def test_prod_of_a_0d_tensor_passes_the_gradient_on(dim):
    x = ag.tensor(1.75, dtype=ag.float64, requires_grad=True)
    y = x.prod() if dim is None else x.prod(dim)
    (g,) = ag.autograd.grad(y * 3.0, x, create_graph=True)
    assert g.item() == 3.0 and not g.requires_grad
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        ag.autograd.grad(g, x)
    z = ag.tensor([1.75, -0.5], dtype=ag.float64, requires_grad=True)
    assert gradgradcheck(lambda t: t.prod(), (z,))


# -- second derivatives across the op families -------------------------------------------------------------------------
def _spd(a):
    return a @ a.mT + 3 * ag.eye(a.shape[-1], dtype=a.dtype)


SECOND_ORDER = {
    "pow": (lambda a, b: a.abs() ** b, [(3,), (2, 1)]),
    "atan2": (lambda a, b: ag.atan2(a, b), [(2, 3), (3,)]),
    "where": (lambda a, b: ag.where(a > 0, a * b, b.exp()), [(3,), (3,)]),
    "clamp": (lambda a, lo, hi: ag.clamp(a, -lo.abs(), hi.abs()) * a, [(4,), (4,), (4,)]),
    "std": (lambda a: a.std(1, correction=2), [(2, 4)]),
    "norm3": (lambda a: a.norm(3, 0), [(3, 2)]),
    "logsumexp": (lambda a: ag.logsumexp(a, (0, 1)), [(2, 3)]),
    "einsum": (lambda a, b: ag.einsum("bij,jk->bik", a, b).sin(), [(2, 2, 3), (3, 2)]),
    "slogdet": (lambda a: ag.linalg.slogdet(_spd(a))[1], [(2, 3, 3)]),
    "cholesky": (lambda a: ag.linalg.cholesky(_spd(a)), [(3, 3)]),
    "solve": (lambda a, b: ag.linalg.solve(_spd(a), b), [(3, 3), (3, 2)]),
    "log_softmax": (lambda a: F.log_softmax(a, 0), [(3, 2)]),
    "mish": (lambda a: F.mish(a), [(4,)]),
    "selu": (lambda a: F.selu(a), [(4,)]),
    "cross_entropy": (lambda a, t: F.cross_entropy(a, t.softmax(1), label_smoothing=0.2), [(2, 3), (2, 3)]),
    "gaussian_nll": (lambda a, b, v: F.gaussian_nll_loss(a, b, v.abs(), full=True), [(3, 2), (3, 2), (3, 1)]),
    "group_norm": (lambda a, w, b: F.group_norm(a, 2, w, b, eps=1e-3), [(2, 4, 2), (4,), (4,)]),
    "conv1d": (lambda a, w: F.conv1d(a, w, stride=2, padding=1, groups=2).sin(), [(1, 2, 5), (4, 1, 2)]),
    "interpolate": (lambda a: F.interpolate(a, size=(3, 4), mode="bilinear", align_corners=False) ** 2,
                    [(1, 1, 2, 3)]),
    "cdist": (lambda a, b: ag.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist"), [(3, 2), (2, 2)]),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_derivatives_match_finite_differences(name):
    fn, shapes = SECOND_ORDER[name]
    assert gradgradcheck(fn, tuple(leaf(*s) for s in shapes))


# -- third derivatives ---------------------------------------------------------------------------------------------
def _first_gradient(fn, n_inputs):
    """fn's first gradients for fixed output weights, as a differentiable function of its inputs: gradgradcheck
    of it checks fn's third derivatives."""

    def gradients(*inputs):
        out = fn(*inputs)
        weights = ag.tensor(np.random.default_rng(5).uniform(0.5, 1.5, out.shape))
        return ag.autograd.grad((out * weights).sum(), inputs[:n_inputs], create_graph=True)

    return gradients


THIRD_ORDER = {
    # PyTorch's double-backward formulas of these treat saved statistics as constants: its third derivatives are
    # off, ours are the true ones
    "layer_norm": (lambda a, w: F.layer_norm(a, (3,), w, eps=1e-3), [(2, 3), (3,)]),
    "batch_norm": (lambda a, w: F.batch_norm(a, None, None, w, training=True, eps=1e-3), [(3, 2), (2,)]),
    "instance_norm": (lambda a: F.instance_norm(a, eps=1e-3), [(1, 2, 3)]),
    "logcumsumexp": (lambda a: ag.logcumsumexp(a, 1), [(2, 3)]),
    "nll_loss": (lambda a: F.nll_loss(a, ag.tensor([2, 0])) ** 3, [(2, 3)]),
}


@pytest.mark.parametrize("name", sorted(THIRD_ORDER))
def test_third_derivatives_match_finite_differences(name):
    fn, shapes = THIRD_ORDER[name]
    inputs = tuple(leaf(*s) for s in shapes)
    assert gradgradcheck(_first_gradient(fn, len(inputs)), inputs, atol=1e-4)


# -- device --------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_the_fixes_on_cuda_give_the_cpu_results(cupy):
    results = []
    values = RNG.uniform(0.5, 2.0, (3, 4))
    for device in ("cpu", "cuda"):
        x = ag.tensor(values, device=device, requires_grad=True)
        loss = F.nll_loss(x, ag.tensor([0, 3, 1], device=device), reduction="none")
        (g,) = ag.autograd.grad((loss * loss).sum(), x, create_graph=True)
        (gg,) = ag.autograd.grad((g * g).sum(), x)
        column = ag.tensor(values[:, :1], device=device, requires_grad=True)
        (gc,) = ag.autograd.grad((ag.cumprod(column, 1) * 2.0).sum(), column, create_graph=True)
        assert g.grad_fn.name() == "NllLossBackwardBackward0" and not gc.requires_grad
        results.append([t.detach().cpu().numpy() for t in (g, gg, gc)])
    for cpu, cuda in zip(*results):
        np.testing.assert_allclose(cuda, cpu, rtol=1e-12)
