"""Forward-mode AD where a generated comparison with PyTorch found it wrong: a tangent cached before an in-place
change to its tensor; a stale tangent given after the primal of a dual changed in place; a tangent that did not
depend on a parameter its computation used; `unpack_dual` at a level that does not exist; `dual_level` as a
decorator; the forward-mode functional jacobian of an integer or bool output; a nested forward transform whose
result kept a graph to the inner transform's cotangents."""

import numpy as np
import pytest
import trio

import actorgrad as ag
from actorgrad.autograd import forward_ad as fwad
from actorgrad.autograd.functional import jacobian

RNG = np.random.default_rng(23)


def _t(*shape):
    return ag.tensor(RNG.uniform(0.5, 1.5, shape))


def test_a_tensor_changed_in_place_gets_a_new_tangent():
    x, t = _t(3), _t(3)
    with fwad.dual_level():
        dual = fwad.make_dual(x, t)
        y = dual * 2
        before = fwad.unpack_dual(y).tangent.numpy().copy()
        y.mul_(dual)  # y = 2x², so y' = 4x·t
        after = fwad.unpack_dual(y).tangent
    xn, tn = x.numpy(), t.numpy()
    np.testing.assert_allclose(before, 2 * tn, rtol=1e-12)
    np.testing.assert_allclose(after.numpy(), 4 * xn * tn, rtol=1e-12)


def test_a_view_of_a_tensor_changed_in_place_gets_a_new_tangent():
    x, t = _t(3), _t(3)
    with fwad.dual_level():
        dual = fwad.make_dual(x, t)
        base = dual * 1
        view = base[1:]
        fwad.unpack_dual(view)
        base.mul_(dual)
        base[0] = 5.0
        tangent = fwad.unpack_dual(view).tangent
        base_tangent = fwad.unpack_dual(base).tangent
    xn, tn = x.numpy(), t.numpy()
    np.testing.assert_allclose(tangent.numpy(), 2 * xn[1:] * tn[1:], rtol=1e-12)
    np.testing.assert_allclose(base_tangent.numpy(), np.r_[0.0, 2 * xn[1:] * tn[1:]], rtol=1e-12)


def test_a_primal_changed_in_place_after_make_dual_is_refused_rather_than_give_a_stale_tangent():
    x, t = _t(3), _t(3)
    with fwad.dual_level():
        dual = fwad.make_dual(x, t)  # shares x's memory
        y = dual.sin()
        x.mul_(3)
        for tensor in (y, dual.sin(), dual):
            with pytest.raises(RuntimeError, match="was modified in place after make_dual"):
                fwad.unpack_dual(tensor)


def _tangent_of_tanh_layer(xn, wn, tn):
    """The tangent of tanh(x @ Wᵀ) along t, by its closed form."""
    y = np.tanh(xn @ wn.T)
    return (1 - y**2) * (tn @ wn.T)


def test_a_tangent_is_differentiable_in_a_parameter_its_computation_used():
    x, t, weights = _t(2, 3), _t(2, 3), _t(2, 4)
    w = ag.tensor(RNG.uniform(-0.5, 0.5, (4, 3)), requires_grad=True)
    with fwad.dual_level():
        tangent = fwad.unpack_dual((fwad.make_dual(x, t) @ w.t()).tanh()).tangent
    assert tangent.requires_grad
    (grad,) = ag.autograd.grad((tangent * weights).sum(), w)
    xn, tn, wn, un = x.numpy(), t.numpy(), w.detach().numpy(), weights.numpy()
    expected, h = np.zeros_like(wn), 1e-6
    for i in np.ndindex(wn.shape):
        step = np.zeros_like(wn)
        step[i] = h
        expected[i] = (np.sum(un * _tangent_of_tanh_layer(xn, wn + step, tn))
                       - np.sum(un * _tangent_of_tanh_layer(xn, wn - step, tn))) / (2 * h)
    np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(tangent.detach().numpy(), _tangent_of_tanh_layer(xn, wn, tn), rtol=1e-12)


def test_a_tangent_of_constants_alone_does_not_require_grad():
    with fwad.dual_level():
        tangent = fwad.unpack_dual(fwad.make_dual(_t(3), _t(3)).sin() * _t(3)).tangent
    assert not tangent.requires_grad


def test_unpack_dual_at_a_level_that_does_not_exist():
    x = _t(2)
    assert fwad.unpack_dual(x, level=0) == (x, None)
    assert fwad.unpack_dual(3.0) == (3.0, None)  # outside a level, anything, as PyTorch's
    with fwad.dual_level():
        dual = fwad.make_dual(x, _t(2))
        primal, tangent = fwad.unpack_dual(dual, level=-1)
        assert primal is dual and tangent is None
        assert fwad.unpack_dual(x, level=1).tangent is None
        with pytest.raises(RuntimeError, match="^Invalid level given to _fw_primal$"):
            fwad.unpack_dual(dual, level=1)
        with pytest.raises(TypeError, match="must be Tensor, not float"):
            fwad.unpack_dual(3.0)
        with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
            fwad.make_dual(x, x, level=-1)


def test_dual_level_decorates_a_function_that_then_runs_in_a_level_of_its_own():
    x, t = _t(3), _t(3)

    @fwad.dual_level()
    def tangent_of_sin(primal, direction):
        dual = fwad.make_dual(primal, direction)
        return dual, fwad.unpack_dual(dual.sin()).tangent

    dual, tangent = tangent_of_sin(x, t)
    np.testing.assert_allclose(tangent.numpy(), np.cos(x.numpy()) * t.numpy(), rtol=1e-12)
    assert fwad.unpack_dual(dual).tangent is None  # the level exited with the call
    _, again = tangent_of_sin(x, t)  # a second call enters a level again: no nesting refused
    np.testing.assert_allclose(again.numpy(), tangent.numpy(), rtol=0)


@pytest.mark.parametrize("inputs_tuple", [False, True])
def test_forward_mode_jacobian_of_integer_and_bool_outputs_is_zeros_of_their_dtype(inputs_tuple):
    x = _t(3)
    inputs = (x,) if inputs_tuple else x
    sin, above, rounded = jacobian(lambda a: (a.sin(), a > 1, (a * 10).long()), inputs, vectorize=True,
                                   strategy="forward-mode")
    blocks = [b[0] for b in (sin, above, rounded)] if inputs_tuple else [sin, above, rounded]
    np.testing.assert_allclose(blocks[0].numpy(), np.diag(np.cos(x.numpy())), rtol=1e-12)
    for block, dtype in zip(blocks[1:], (ag.bool, ag.int64)):
        assert block.dtype == dtype and block.shape == (3, 3) and not block.numpy().any()
    only = jacobian(lambda a: a.argmax(), x, vectorize=True, strategy="forward-mode")
    assert only.dtype == ag.int64 and only.shape == (3,) and not only.numpy().any()


def test_the_awaitable_forward_mode_jacobian_of_a_bool_output():
    x = _t(3)

    async def main():
        return await ag.functional.jacobian(lambda a: (a.exp(), a > 1), x, vectorize=True, strategy="forward-mode")

    exp, above = trio.run(main)
    np.testing.assert_allclose(exp.numpy(), np.diag(np.exp(x.numpy())), rtol=1e-12)
    assert above.dtype == ag.bool and above.shape == (3, 3) and not above.numpy().any()


def test_nested_forward_transforms_give_results_without_a_graph():
    """A nested jvp's tangent may reach its zero cotangents through the recorded graph (matrix_exp's backward
    does), but does not depend on them: the enclosing transform's result is still cut loose."""
    a, t = _t(2, 1, 1), _t(2, 1, 1)

    def f(x):
        return ag.linalg.matrix_exp(x * 0.3)

    second = ag.func.jvp(lambda x: ag.func.jvp(f, (x,), (t,))[1], (a,), (t,))[1]
    columns = ag.func.jacfwd(ag.func.jacfwd(f))(a)
    assert not second.requires_grad and not columns.requires_grad
    an, tn = a.numpy(), t.numpy()
    np.testing.assert_allclose(second.numpy(), 0.09 * np.exp(0.3 * an) * tn**2, rtol=1e-10)
    diagonal = columns.numpy().reshape(2, 2, 2)[np.arange(2), np.arange(2), np.arange(2)]
    np.testing.assert_allclose(diagonal, 0.09 * np.exp(0.3 * an.ravel()), rtol=1e-10)


def test_nested_forward_transforms_keep_a_graph_to_a_parameter():
    a, t = _t(2, 1, 1), _t(2, 1, 1)
    w = ag.tensor(RNG.uniform(0.2, 0.5, (2, 1, 1)), requires_grad=True)
    second = ag.func.jvp(lambda x: ag.func.jvp(lambda y: ag.linalg.matrix_exp(y * w), (x,), (t,))[1], (a,), (t,))[1]
    (grad,) = ag.autograd.grad(second.sum(), w)
    an, tn, wn = a.numpy(), t.numpy(), w.detach().numpy()
    # d/dw of w² exp(w a) t² is (2w + w² a) exp(w a) t²
    np.testing.assert_allclose(grad.numpy(), (2 * wn + wn**2 * an) * np.exp(wn * an) * tn**2, rtol=1e-10)


@pytest.mark.gpu
def test_fixes_on_cuda(cupy):
    x, t = _t(3), _t(3)
    with fwad.dual_level():
        dual = fwad.make_dual(x.cuda(), t.cuda())
        y = dual * 2
        fwad.unpack_dual(y)
        y.mul_(dual)
        tangent = fwad.unpack_dual(y).tangent
    assert tangent.device.type == "cuda"
    np.testing.assert_allclose(tangent.cpu().numpy(), 4 * x.numpy() * t.numpy(), rtol=1e-12)
    sin, above = jacobian(lambda a: (a.sin(), a > 1), x.cuda(), vectorize=True, strategy="forward-mode")
    assert above.device.type == "cuda" and above.dtype == ag.bool and not above.cpu().numpy().any()
    np.testing.assert_allclose(sin.cpu().numpy(), np.diag(np.cos(x.numpy())), rtol=1e-12)
