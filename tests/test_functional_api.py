"""actorgrad.autograd.functional (sync) and actorgrad.functional (awaitable): vjp, jvp, jacobian, hessian, vhp and
hvp against numpy-derived and finite-difference references, PyTorch's return structures and errors."""

from __future__ import annotations

import numpy as np
import pytest
import trio

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp

RNG = np.random.default_rng(1)


def _t(*shape: int) -> ag.Tensor:
    return ag.tensor(RNG.standard_normal(shape))


def _mlp(x, w1, w2):
    return (F.linear(ag.tanh(F.linear(x, w1)), w2) ** 2).sum()


MLP_ARRAYS = [RNG.standard_normal((2, 3)), RNG.standard_normal((4, 3)), RNG.standard_normal((1, 4))]


# -- vjp and jvp -------------------------------------------------------------------------------------------------
def test_vjp_of_elementwise_matches_numpy():
    x, v = _t(3, 2), _t(3, 2)
    out, grad = vjp(lambda a: a.exp() * a, x, v)
    a = x.numpy()
    np.testing.assert_allclose(out.numpy(), np.exp(a) * a)
    np.testing.assert_allclose(grad.numpy(), v.numpy() * np.exp(a) * (a + 1))
    assert isinstance(grad, ag.Tensor) and not grad.requires_grad and not out.requires_grad


def test_vjp_of_matmul_with_tuple_inputs_gives_a_tuple():
    a, b, v = _t(2, 3), _t(3, 4), _t(2, 4)
    out, (ga, gb) = vjp(lambda x, y: x @ y, (a, b), v)
    np.testing.assert_allclose(out.numpy(), a.numpy() @ b.numpy())
    np.testing.assert_allclose(ga.numpy(), v.numpy() @ b.numpy().T)
    np.testing.assert_allclose(gb.numpy(), a.numpy().T @ v.numpy())


def test_vjp_of_a_scalar_needs_no_v_and_zero_fills_unused_inputs():
    a, b = _t(3), _t(2)
    out, (ga, gb) = vjp(lambda x, y: (x ** 2).sum(), (a, b))
    np.testing.assert_allclose(ga.numpy(), 2 * a.numpy())
    np.testing.assert_array_equal(gb.numpy(), np.zeros(2))


def test_jvp_matches_the_jacobian_times_v(central_jacobian):
    x, v = _t(4), _t(4)
    fn = lambda a: (F.softmax(a, 0), a.sum() * a)  # noqa: E731
    out, (j0, j1) = jvp(fn, x, v)
    assert isinstance(out, tuple) and len(out) == 2
    for j, index in ((j0, 0), (j1, 1)):
        numerical = central_jacobian(lambda a, i=index: fn(a)[i], [x.numpy()], 0)
        np.testing.assert_allclose(j.numpy(), numerical @ v.numpy(), rtol=1e-6, atol=1e-8)


def test_jvp_of_a_reduction_with_tuple_inputs():
    a, b, va, vb = _t(2, 3), _t(2, 3), _t(2, 3), _t(2, 3)
    out, j = jvp(lambda x, y: (x * y).sum(dim=1), (a, b), (va, vb))
    expected = (va.numpy() * b.numpy() + a.numpy() * vb.numpy()).sum(1)
    np.testing.assert_allclose(j.numpy(), expected)
    assert isinstance(j, ag.Tensor) and j.shape == (2,)


def test_create_graph_keeps_results_differentiable():
    x = ag.tensor([1.0, 2.0], dtype=ag.float64, requires_grad=True)
    _, grad = vjp(lambda a: (a ** 3).sum(), x, create_graph=True)
    assert grad.requires_grad
    (second,) = ag.autograd.grad(grad.sum(), x)
    np.testing.assert_allclose(second.numpy(), 6 * x.detach().numpy())
    _, tangent = jvp(lambda a: a ** 3, x, ag.tensor([1.0, 1.0], dtype=ag.float64), create_graph=True)
    assert tangent.requires_grad


def test_inputs_are_left_alone():
    x = ag.tensor([1.0, 2.0])
    vjp(lambda a: (a * a).sum(), x)
    jacobian(lambda a: a * a, x)
    assert not x.requires_grad and x.grad is None


# -- jacobian, hessian, vhp, hvp ---------------------------------------------------------------------------------
def test_jacobian_return_structures_follow_pytorch():
    a, b = _t(2), _t(3)
    single = jacobian(lambda x: x * 2, a)
    assert isinstance(single, ag.Tensor) and single.shape == (2, 2)
    per_input = jacobian(lambda x, y: x.sum() * y, (a, b))
    assert isinstance(per_input, tuple) and [j.shape for j in per_input] == [(3, 2), (3, 3)]
    per_output = jacobian(lambda x: (x * 2, x.sum()), a)
    assert isinstance(per_output, tuple) and [j.shape for j in per_output] == [(2, 2), (2,)]
    both = jacobian(lambda x, y: (x * 2, y.sum()), (a, b))
    assert [[j.shape for j in row] for row in both] == [[(2, 2), (2, 3)], [(2,), (3,)]]
    np.testing.assert_array_equal(both[0][1].numpy(), np.zeros((2, 3)))


@pytest.mark.parametrize("fn, shapes", [
    (lambda a: a.sin() * a.cos(), [(2, 3)]),
    (lambda a, b: a @ b, [(2, 3), (3, 2)]),
    (lambda a: ag.logsumexp(a, 1), [(3, 4)]),
    (lambda x, w1, w2: F.linear(ag.tanh(F.linear(x, w1)), w2), [(2, 3), (4, 3), (1, 4)]),
])
def test_jacobian_matches_finite_differences(fn, shapes, central_jacobian):
    arrays = [RNG.standard_normal(s) for s in shapes]
    result = jacobian(fn, tuple(ag.tensor(a) for a in arrays))
    for i, j in enumerate(result):
        np.testing.assert_allclose(j.numpy(), central_jacobian(fn, arrays, i), rtol=1e-6, atol=1e-8)


def test_forward_mode_jacobian_and_hessian_equal_reverse_mode():
    a, b = _t(3), _t(2)
    fn = lambda x, y: (x.sin() * 2, x.sum() * y, y.prod())  # noqa: E731
    reverse = jacobian(fn, (a, b))
    forward = jacobian(fn, (a, b), vectorize=True, strategy="forward-mode")
    scalar = lambda x, y: (x ** 3).sum() * y.sum()  # noqa: E731
    reverse_h = hessian(scalar, (a, b))
    forward_h = hessian(scalar, (a, b), vectorize=True, outer_jacobian_strategy="forward-mode")
    for rows, expected_rows in ((forward, reverse), (forward_h, reverse_h)):
        for row, expected_row in zip(rows, expected_rows):
            for block, expected in zip(row, expected_row):
                assert block.shape == expected.shape and not block.requires_grad
                np.testing.assert_allclose(block.numpy(), expected.numpy(), rtol=1e-13, atol=1e-15)
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        jacobian(fn, (a, b), strategy="forward-mode")
    with pytest.raises(NotImplementedError, match='`create_graph=True` and `strategy="forward-mode"` are not'):
        jacobian(fn, (a, b), create_graph=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match='`create_graph=True` and `strategy="forward-mode"` are not'):
        hessian(scalar, (a, b), create_graph=True, vectorize=True, outer_jacobian_strategy="forward-mode")
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"):
        jacobian(fn, (a, b), strict=True, vectorize=True)


def test_hessian_of_a_cubic_matches_numpy():
    x = _t(3)
    h = hessian(lambda a: (a ** 3).sum() + a[0] * a[1], x)
    expected = np.diag(6 * x.numpy())
    expected[0, 1] = expected[1, 0] = 1
    np.testing.assert_allclose(h.numpy(), expected)


def test_hessian_of_an_mlp_matches_finite_differences_of_its_gradient(central_jacobian):
    inputs = tuple(ag.tensor(a) for a in MLP_ARRAYS)
    h = hessian(_mlp, inputs)
    assert len(h) == 3 and all(len(row) == 3 for row in h)

    def gradient(i):
        return lambda *args: vjp(_mlp, args)[1][i]

    for i in range(3):
        for j in range(3):
            numerical = central_jacobian(gradient(i), MLP_ARRAYS, j)
            np.testing.assert_allclose(h[i][j].numpy(), numerical, rtol=1e-5, atol=1e-7)


def test_vhp_and_hvp_equal_the_hessian_times_v():
    x, v = _t(4), _t(4)
    fn = lambda a: (a.sin() * a.sum()).sum()  # noqa: E731
    h = hessian(fn, x).numpy()
    out, product = vhp(fn, x, v)
    np.testing.assert_allclose(out.numpy(), fn(x).numpy())
    np.testing.assert_allclose(product.numpy(), v.numpy() @ h, rtol=1e-12)
    _, product = hvp(fn, x, v)
    np.testing.assert_allclose(product.numpy(), h @ v.numpy(), rtol=1e-12)


# -- errors ------------------------------------------------------------------------------------------------------
def test_bad_arguments_raise_pytorchs_errors():
    x = _t(3)
    with pytest.raises(TypeError, match="The inputs given to vjp must be either a Tensor or a tuple of Tensors"):
        vjp(lambda a: a, [x])
    with pytest.raises(TypeError, match="outputs of the user-provided function given to jvp must be either"):
        jvp(lambda a: 3.0, x, x)
    with pytest.raises(RuntimeError, match="v can only be None if the user-provided function returns a single"):
        vjp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match="v can only be None if the input to the user-provided function"):
        jvp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be \(3,\) but got \(2,\)"):
        vjp(lambda a: a * 2, x, _t(2))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but got 1"):
        jvp(lambda a, b: a * b, (x, x), (x,))
    with pytest.raises(RuntimeError, match="The function given to hessian should return a single Tensor"):
        hessian(lambda a: (a.sum(), a.sum()), x)
    with pytest.raises(RuntimeError, match="given to vhp should contain a single element"):
        vhp(lambda a: a * 2, x, x)
    with pytest.raises(AssertionError, match="Expected strategy to be either"):
        jacobian(lambda a: a, x, strategy="sideways")


def test_strict_mode_refuses_independent_outputs_and_inputs():
    x, y = _t(2), _t(2)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients"):
        vjp(lambda a: ag.tensor([1.0, 2.0]), x, x, strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1. This is not allowed in strict mode"):
        vjp(lambda a, b: (a * 2).sum(), (x, y), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1"):
        jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0 is "
                                           "independent of the input"):
        hessian(lambda a: a.sum(), x, strict=True)
    _, grads = vjp(lambda a, b: (a * 2).sum(), (x, y))  # not strict: zeros
    np.testing.assert_array_equal(grads[1].numpy(), np.zeros(2))


# -- the awaitable twins -----------------------------------------------------------------------------------------
def test_awaitable_twins_match_the_sync_versions_inside_trio():
    arrays = MLP_ARRAYS
    inputs = tuple(ag.tensor(a) for a in arrays)
    x, v = _t(3), _t(3)
    fn = lambda a: a.sin() * a.sum()  # noqa: E731
    scalar = lambda a: fn(a).sum()  # noqa: E731
    expected = {
        "vjp": vjp(fn, x, v)[1], "jvp": jvp(fn, x, v)[1], "jacobian": jacobian(fn, x),
        "vhp": vhp(scalar, x, v)[1], "hvp": hvp(scalar, x, v)[1],
    }
    expected_hessian = hessian(_mlp, inputs)

    async def main():
        got = {
            "vjp": (await ag.functional.vjp(fn, x, v))[1], "jvp": (await ag.functional.jvp(fn, x, v))[1],
            "jacobian": await ag.functional.jacobian(fn, x),
            "vhp": (await ag.functional.vhp(scalar, x, v))[1], "hvp": (await ag.functional.hvp(scalar, x, v))[1],
        }
        for name, value in got.items():
            np.testing.assert_allclose(value.numpy(), expected[name].numpy(), rtol=1e-14, err_msg=name)
        h = await ag.functional.hessian(_mlp, inputs)
        for row, expected_row in zip(h, expected_hessian):
            for got_block, expected_block in zip(row, expected_row):
                np.testing.assert_allclose(got_block.numpy(), expected_block.numpy(), rtol=1e-14)
        with pytest.raises(RuntimeError, match=r"use `await actorgrad.functional.jacobian\(...\)` there"):
            jacobian(fn, x)

    trio.run(main)


def test_awaitable_twin_is_cancellable_and_leaves_grad_mode_alone():
    async def main():
        with trio.CancelScope() as scope:
            scope.cancel()
            await ag.functional.vjp(lambda a: a.sum(), _t(2))
        assert scope.cancelled_caught
        with ag.no_grad():
            with pytest.raises(RuntimeError, match="v can only be None"):
                await ag.functional.jvp(lambda a: a * 2, _t(3))
            assert not ag.is_grad_enabled()

    trio.run(main)
